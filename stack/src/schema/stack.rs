//! [`Stack`]: a stack file checked once and turned into typed values — its networks, nodes,
//! roles and routes, the bounds a file is checked against, and what a stack answers (the
//! models of its links, torus, disks and service nodes; NIDs, routes and targets by node).
//! Reading a file into one is `read`'s; writing one back, `write`'s.

use std::net::SocketAddr;

use iopath_fabric::Nid;
use iopath_fabric::link::LinkModel;
use iopath_fabric::router::RouterConfig;
use iopath_fabric::routing::RouteSpec;
use iopath_fabric::torus::{PACKET_BYTES_DEFAULT, TorusModel, TorusNode};
use iopath_forwarder::ServiceNode;
use iopath_mds::layout::{FsName, TargetName};
use iopath_storage_server::engine::modeled::DiskModel;

use super::file::RoleName;
use crate::error::StackError;

/// Most networks in one stack.
pub const NETWORKS_MAX: usize = 64;
/// Most nodes in one stack, after `count` is expanded: past Jaguar's 18,688 clients.
pub const NODES_MAX: usize = 20_000;
/// The most memory one idle node of an embedded stack may hold (its fabric node, interface,
/// tables and tasks; buffers come from pools only while bytes move). Measured at about
/// 37 KB in a release build; a test holds a stack of 1,500 compute nodes to this bound, so
/// that 20,000 idle nodes fit in well under a gigabyte.
pub const IDLE_NODE_MEMORY_MAX_BYTES: u64 = 128 << 10;
/// Most targets on one OSS.
pub const TARGETS_PER_OSS_MAX: u32 = 64;
/// Longest node or network name.
pub const NAME_MAX_BYTES: usize = 64;
/// Longest torus side.
pub const TORUS_SIDE_MAX: u32 = 64;
/// The OSS's default async group-commit interval (the storage server's own default).
pub const COMMIT_INTERVAL_DEFAULT_MS: u64 = 1000;
/// Longest async group-commit interval a stack may ask for.
pub const COMMIT_INTERVAL_MAX_MS: u64 = 3_600_000;
/// An OSS's recovery window when the stack file names none (Lustre's default is longer; 30 s
/// is enough for clients on one machine or one cluster to reconnect and replay).
pub const RECOVERY_WINDOW_DEFAULT_MS: u64 = 30_000;
/// The longest recovery window a stack file may ask for.
pub const RECOVERY_WINDOW_MAX_MS: u64 = 600_000;

/// A checked stack.
#[derive(Debug, Clone, PartialEq)]
pub struct Stack {
    /// Where it came from (`preset asci-red-mini`, a path), for messages.
    pub origin: String,
    /// Its name.
    pub name: String,
    /// Its description.
    pub description: String,
    /// The file system's name: its targets are named after it (`iopath-OST0003`).
    pub fsname: FsName,
    /// The file system's default layout.
    pub layout: DefaultLayout,
    /// The networks; `networks[i].number == i`.
    pub networks: Vec<Network>,
    /// The nodes, `count` entries expanded, in file order.
    pub nodes: Vec<NodeSpec>,
    /// The routes in force, one per (node, remote network, gateway).
    pub routes: Vec<RouteRule>,
    /// The route set in force, if the file has sets.
    pub route_set: Option<String>,
    /// Every route set the file names.
    pub route_sets: Vec<String>,
    /// Host seconds per modeled second (1 unless the file's `[model]` says otherwise).
    pub time_scale: u32,
}

/// The default layout, in Lustre's conventions (see [`iopath_mds::StripeRequest`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DefaultLayout {
    /// Bytes per stripe (a positive multiple of 64 KiB).
    pub stripe_size_bytes: u64,
    /// Stripes per file; -1 for all targets.
    pub stripe_count: i64,
    /// The starting target; -1 for any.
    pub stripe_offset: i64,
}

/// One network.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Network {
    /// Its name in the stack file.
    pub name: String,
    /// Its number: the `K` of `memK` / `tcpK`.
    pub number: u16,
    /// Torus dimensions, when it models one.
    pub torus: Option<[u32; 3]>,
    /// Its modeled link, if it has one.
    pub link: Option<NetworkLink>,
    /// Whether messages cross its torus hop by hop (then `link` is each directed link's, its
    /// latency each hop's); needs `torus` and `link`.
    pub hop_by_hop: bool,
    /// Its IP subnet on a cluster: a node's address on it is its host's address inside.
    pub subnet: Option<Subnet>,
}

/// An IP subnet, `10.77.1.0/24`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Subnet {
    /// Its first address (host bits zero).
    pub addr: std::net::IpAddr,
    /// Its prefix length.
    pub prefix: u8,
}

impl Subnet {
    /// Parses `addr/prefix`; host bits must be zero, as `ip route` wants them.
    pub fn parse(text: &str) -> Result<Subnet, String> {
        let bad = || format!("{text:?} is not a subnet (as in \"10.77.1.0/24\")");
        let (addr, prefix) = text.split_once('/').ok_or_else(bad)?;
        let addr: std::net::IpAddr = addr.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        if prefix > bits {
            return Err(format!(
                "{text:?}: a prefix of {prefix} bits is longer than the address"
            ));
        }
        let subnet = Subnet { addr, prefix };
        if !subnet.contains(addr) || subnet.bits(addr) & !subnet.mask() != 0 {
            return Err(format!(
                "{text:?} has host bits set: the subnet is {}",
                Subnet {
                    addr: subnet.first(),
                    prefix,
                }
            ));
        }
        Ok(subnet)
    }

    /// The subnet an interface with address `addr` and a netmask of `prefix` bits is on
    /// (`10.1.0.3` and 16: `10.1.0.0/16`); a prefix past the address's bits is cut to them.
    pub fn of(addr: std::net::IpAddr, prefix: u8) -> Subnet {
        let bits = if addr.is_ipv4() { 32 } else { 128 };
        let subnet = Subnet {
            addr,
            prefix: prefix.min(bits),
        };
        Subnet {
            addr: subnet.first(),
            prefix: subnet.prefix,
        }
    }

    /// True if `ip` lies inside.
    pub fn contains(&self, ip: std::net::IpAddr) -> bool {
        ip.is_ipv4() == self.addr.is_ipv4()
            && self.bits(ip) & self.mask() == self.bits(self.addr) & self.mask()
    }

    fn bits(&self, ip: std::net::IpAddr) -> u128 {
        match ip {
            std::net::IpAddr::V4(v4) => u128::from(u32::from(v4)),
            std::net::IpAddr::V6(v6) => u128::from(v6),
        }
    }

    fn mask(&self) -> u128 {
        let bits = if self.addr.is_ipv4() { 32 } else { 128 };
        let host_bits = bits - u32::from(self.prefix);
        let all = if bits == 32 {
            u128::from(u32::MAX)
        } else {
            u128::MAX
        };
        if host_bits >= 128 {
            0
        } else {
            all & !((1u128 << host_bits) - 1)
        }
    }

    fn first(&self) -> std::net::IpAddr {
        let bits = self.bits(self.addr) & self.mask();
        match self.addr {
            std::net::IpAddr::V4(_) => std::net::IpAddr::V4((bits as u32).into()),
            std::net::IpAddr::V6(_) => std::net::IpAddr::V6(bits.into()),
        }
    }
}

impl std::fmt::Display for Subnet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}/{}", self.addr, self.prefix)
    }
}

/// A network's modeled link, as the stack file gives it (modeled time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NetworkLink {
    /// Bytes per modeled second each interface sends.
    pub bandwidth_bytes_s: u64,
    /// Modeled latency, microseconds.
    pub latency_us: u64,
}

/// Largest modeled bandwidth a stack file may give a network, bytes per second (1 TB/s).
pub const LINK_BANDWIDTH_MAX_BYTES_S: u64 = 1_000_000_000_000;
/// Longest modeled latency, microseconds (one second).
pub const LINK_LATENCY_MAX_US: u64 = 1_000_000;
/// Largest time scale.
pub const TIME_SCALE_MAX: u32 = 100_000;
/// Fastest a link of a torus crossed hop by hop may run in host time, bytes per second: one
/// task serves every port of the torus, a packet at a time (about 6,000 packets of 64 KiB a
/// second per busy link at this rate).
pub const HOP_BY_HOP_HOST_BYTES_S_MAX: u64 = 400_000_000;

/// A node's address on one network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Address {
    /// A number: `n@memK` embedded, a loopback port chosen at start under `--processes`.
    Number(u32),
    /// A TCP listener.
    Socket(SocketAddr),
}

/// One interface of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeInterface {
    /// Index into [`Stack::networks`].
    pub network: usize,
    /// Its address there.
    pub address: Address,
}

/// What a node does, with its role's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// The metadata service.
    Mds,
    /// An object storage server.
    Oss(OssSpec),
    /// An I/O forwarder.
    Fyod(FyodSpec),
    /// An LNET router, with its buffers (the stack file names them as LNet's module
    /// parameters; absent, the fabric's defaults).
    Router(RouterConfig),
    /// A compute node.
    Client(ClientSpec),
}

impl Role {
    /// The role's name as in the file.
    pub fn name(&self) -> &'static str {
        self.kind().as_str()
    }

    /// The role without its settings.
    pub fn kind(&self) -> RoleName {
        match self {
            Role::Mds => RoleName::Mds,
            Role::Oss(_) => RoleName::Oss,
            Role::Fyod(_) => RoleName::Fyod,
            Role::Router(_) => RoleName::Router,
            Role::Client(_) => RoleName::Client,
        }
    }
}

/// An OSS's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OssSpec {
    /// Object storage targets on it.
    pub targets: u32,
    /// Sync journal commits (reply after commit) rather than async.
    pub sync_journal: bool,
    /// Async group-commit interval.
    pub commit_interval_ms: u64,
    /// After an unclean restart, how long known clients have to replay before eviction.
    pub recovery_window_ms: u64,
    /// A modeled disk under each target, if the file gives one.
    pub disk: Option<OstDisk>,
}

/// A modeled disk under each of an OSS's targets, as the stack file gives it (modeled time).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OstDisk {
    /// Bytes per modeled second it transfers.
    pub bandwidth_bytes_s: u64,
    /// Modeled microseconds to move the head between the data and the journal.
    pub seek_us: u64,
}

/// Largest modeled disk bandwidth, bytes per second (100 GB/s).
pub const DISK_BANDWIDTH_MAX_BYTES_S: u64 = 100_000_000_000;
/// Longest modeled seek, milliseconds (one second).
pub const DISK_SEEK_MAX_MS: f64 = 1000.0;

/// How a fyod writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FyodMode {
    /// Split by the layout; the storage servers pull straight from the client.
    Pfs,
    /// Pull into the fyod's buffers, write one target.
    Ufs,
}

/// A fyod's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FyodSpec {
    /// PFS or UFS.
    pub mode: FyodMode,
    /// Its modeled service node, if modeled.
    pub service: Option<FyodServiceNode>,
}

/// A fyod's modeled service node: what ASCI Red's fyods ran on (the 004 paper: one process
/// per fyod, a thread per open file for the asynchronous calls, on a service node of a few
/// CPUs and its own memory). Each call takes `call_us` of one of `cpus` CPUs before its I/O
/// starts; while the open files' threads need more than `memory_bytes`, the node pages and
/// each call's CPU time grows by the overcommit (threads' memory over the node's).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FyodServiceNode {
    /// Modeled microseconds of CPU per call.
    pub call_us: u64,
    /// CPUs: calls worked on at once.
    pub cpus: u32,
    /// Memory for the worker threads, bytes, and what each holds; `None`: never pages.
    pub memory: Option<(u64, u64)>,
}

impl FyodServiceNode {
    /// Worker threads its memory holds before it pages; `None`: it never pages. The schema
    /// refuses a thread larger than the memory, so at least one fits.
    pub fn threads_fit(&self) -> Option<u64> {
        self.memory.map(|(memory, thread)| memory / thread.max(1))
    }

    /// The node as the fyod runs it, each call's CPU time `time_scale` times its modeled one
    /// (1: modeled time).
    pub fn model(&self, time_scale: u32) -> ServiceNode {
        ServiceNode {
            cpus: self.cpus,
            call: std::time::Duration::from_micros(self.call_us) * time_scale,
            threads_fit: self.threads_fit(),
        }
    }
}

/// Most modeled CPU time one fyod call may take, microseconds.
pub const FYOD_CALL_MAX_US: u64 = 1_000_000;
/// Most CPUs a modeled service node may have.
pub const FYOD_CPUS_MAX: u32 = 64;
/// Most memory a modeled service node may have, bytes (1 TiB).
pub const FYOD_MEMORY_MAX_BYTES: u64 = 1 << 40;

/// Most buffers of one class a router may be given (LNet's own defaults are in the thousands).
pub const ROUTER_BUFFERS_MAX: u32 = 65_536;

/// A client's settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ClientSpec {
    /// The fyod its I/O goes through (index into [`Stack::nodes`]), or none.
    pub forwarder: Option<usize>,
}

/// One node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeSpec {
    /// Its name.
    pub name: String,
    /// Its role.
    pub role: Role,
    /// Its interfaces; the first gives its primary NID.
    pub interfaces: Vec<NodeInterface>,
    /// Its torus coordinates.
    pub torus: Option<[u32; 3]>,
    /// Its own NIC rate, bytes per modeled second, over its networks' `bandwidth`.
    pub nic_bandwidth_bytes_s: Option<u64>,
    /// The host it runs on, on a cluster, if the file says.
    pub host: Option<HostRef>,
    /// Where its admin service answers, in a stack file `iopath launch` wrote.
    pub admin: Option<SocketAddr>,
}

/// A host a node is placed on: the allocation's `Index`th, or one by name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum HostRef {
    /// The allocation's host at this index, from 0.
    Index(usize),
    /// A host name or address.
    Name(String),
}

impl std::fmt::Display for HostRef {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            HostRef::Index(i) => write!(f, "host #{i}"),
            HostRef::Name(name) => f.write_str(name),
        }
    }
}

/// Most hosts an index may name (a hostfile or an allocation of more is fine; an index past
/// this is a typo).
pub const HOST_INDEX_MAX: u64 = 65_535;
/// Longest host name (DNS's limit).
pub const HOST_NAME_MAX_BYTES: usize = 253;

impl NodeSpec {
    /// Its modeled disk, if it is an OSS with one.
    pub fn disk(&self) -> Option<OstDisk> {
        match &self.role {
            Role::Oss(spec) => spec.disk,
            _ => None,
        }
    }

    /// Its modeled service node, if it is a fyod with one.
    pub fn service(&self) -> Option<FyodServiceNode> {
        match &self.role {
            Role::Fyod(spec) => spec.service,
            _ => None,
        }
    }
}

/// One route of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteRule {
    /// The node that uses it (index into [`Stack::nodes`]).
    pub node: usize,
    /// The remote network.
    pub net: usize,
    /// The router (index into [`Stack::nodes`]).
    pub gateway: usize,
    /// The network the node reaches the router on.
    pub via: usize,
    /// LNet's hop count.
    pub hops: u32,
    /// LNet's priority.
    pub priority: u32,
}

impl Stack {
    /// Network `index`'s modeled link, in host time, if it has one.
    pub fn link_model(&self, index: usize) -> Option<LinkModel> {
        let link = self.networks.get(index)?.link?;
        Some(LinkModel {
            bandwidth_bytes_s: link.bandwidth_bytes_s as f64,
            latency: std::time::Duration::from_micros(link.latency_us),
            time_scale: f64::from(self.time_scale),
        })
    }

    /// Node `node`'s modeled link on network `network`, in host time: its own NIC rate if it
    /// has one (with the network's latency, if any), else the network's link, if modeled.
    pub fn interface_link(&self, node: usize, network: usize) -> Option<LinkModel> {
        let network_link = self.link_model(network);
        match self.nodes.get(node)?.nic_bandwidth_bytes_s {
            Some(rate) => Some(LinkModel {
                bandwidth_bytes_s: rate as f64,
                latency: network_link.map_or(std::time::Duration::ZERO, |l| l.latency),
                time_scale: f64::from(self.time_scale),
            }),
            None => network_link,
        }
    }

    /// Network `index`'s modeled torus, if it is crossed hop by hop: its nodes at their
    /// coordinates, each injecting and ejecting at its NIC rate (else the links' rate).
    pub fn torus_model(&self, index: usize) -> Option<TorusModel> {
        let network = self.networks.get(index)?;
        let (true, Some(link), Some([x, y, z])) = (network.hop_by_hop, network.link, network.torus)
        else {
            return None;
        };
        let nodes = self
            .nodes
            .iter()
            .enumerate()
            .flat_map(|(n, node)| {
                node.interfaces
                    .iter()
                    .enumerate()
                    .filter(move |(_, i)| i.network == index)
                    .filter_map(move |(k, _)| {
                        let [cx, cy, cz] = node.torus?;
                        Some(TorusNode {
                            nid: self.nid_of(n, k),
                            coord: iopath_topology::Coord::new(cx, cy, cz),
                            nic_bandwidth_bytes_s: node
                                .nic_bandwidth_bytes_s
                                .unwrap_or(link.bandwidth_bytes_s)
                                as f64,
                        })
                    })
            })
            .collect();
        Some(TorusModel {
            // Checked: each side 1 to TORUS_SIDE_MAX.
            torus: iopath_topology::Torus::new(x, y, z).ok()?,
            link_bandwidth_bytes_s: link.bandwidth_bytes_s as f64,
            hop_latency: std::time::Duration::from_micros(link.latency_us),
            time_scale: f64::from(self.time_scale),
            packet_bytes: PACKET_BYTES_DEFAULT,
            nodes,
        })
    }

    /// Refuses to spread the stack over hosts (`how`: `iopath launch`) when a network of it
    /// is crossed hop by hop: its torus is modeled in the process that starts the stack, and
    /// served from there to node processes on the same host (`--processes`) only.
    pub fn check_spread(&self, how: &str) -> Result<(), StackError> {
        match self.networks.iter().find(|n| n.hop_by_hop) {
            None => Ok(()),
            Some(network) => Err(StackError::BadOption {
                option: how.into(),
                why: format!(
                    "{} is crossed hop by hop, and its modeled torus runs in the process that \
                     starts the stack, serving node processes on this host: run {} embedded or \
                     with --processes (not with {how})",
                    network.name, self.origin
                ),
            }),
        }
    }

    /// Node `index`'s modeled disk, in host time, if it is an OSS with one.
    pub fn disk_model(&self, index: usize) -> Option<DiskModel> {
        let disk = self.nodes.get(index)?.disk()?;
        let scale = f64::from(self.time_scale);
        Some(DiskModel {
            bandwidth_mib_s: disk.bandwidth_bytes_s as f64 / (1024.0 * 1024.0) / scale,
            seek_ms: disk.seek_us as f64 / 1000.0 * scale,
            commit_ms: 0.0,
        })
    }

    /// Whether any network, NIC or disk is modeled.
    pub fn is_modeled(&self) -> bool {
        self.networks.iter().any(|n| n.link.is_some())
            || self.nodes.iter().any(|n| {
                n.disk().is_some() || n.nic_bandwidth_bytes_s.is_some() || n.service().is_some()
            })
    }

    /// Node `index`'s modeled service node as its fyod runs it, in host time, if it is a fyod
    /// with one.
    pub fn fyod_service(&self, index: usize) -> Option<ServiceNode> {
        Some(self.nodes.get(index)?.service()?.model(self.time_scale))
    }

    /// What is modeled, in words, for every result: `the links of mem0 (net0): 5000 MB/s,
    /// 2 us (...); the disks of oss0, oss1 (200 MiB/s, seek 8 ms) at time scale 20 (...)`,
    /// or `nothing`. Networks are named as their NIDs name them, the stack file's name beside.
    pub fn modeled(&self) -> String {
        let tori: Vec<String> = self
            .networks
            .iter()
            .enumerate()
            .filter(|(_, n)| n.hop_by_hop)
            .filter_map(|(k, n)| {
                let (l, [x, y, z]) = (n.link?, n.torus?);
                Some(format!(
                    "{}: {x}x{y}x{z}, {:.0} MB/s per directed link, {} us per hop",
                    self.network_name(k),
                    l.bandwidth_bytes_s as f64 / 1e6,
                    l.latency_us
                ))
            })
            .collect();
        let links: Vec<String> = self
            .networks
            .iter()
            .enumerate()
            .filter(|(_, n)| !n.hop_by_hop)
            .filter_map(|(k, n)| {
                let l = n.link?;
                Some(format!(
                    "{}: {:.0} MB/s, {} us",
                    self.network_name(k),
                    l.bandwidth_bytes_s as f64 / 1e6,
                    l.latency_us
                ))
            })
            .collect();
        // Nodes modeled alike are named together: `oss0, oss1 (190 MiB/s, seek 8 ms)`.
        let disks = alike(
            self.nodes
                .iter()
                .filter_map(|n| Some((n.disk()?, n.name.as_str()))),
        );
        let nics = alike(
            self.nodes
                .iter()
                .filter_map(|n| Some((n.nic_bandwidth_bytes_s?, n.name.as_str()))),
        );
        let mut parts = Vec::new();
        if !tori.is_empty() {
            parts.push(format!(
                "the torus of {} (messages cross their dimension-order route link by link, each \
                 link serving its input ports in turn; the nodes' injection and ejection)",
                tori.join("; ")
            ));
        }
        if !links.is_empty() {
            parts.push(format!(
                "the links of {} (each interface's sending side; switches and receive sides are not modeled)",
                links.join("; ")
            ));
        }
        if !nics.is_empty() {
            let nics: Vec<String> = nics
                .iter()
                .map(|(rate, names)| {
                    format!("{} ({:.0} MB/s)", names.join(", "), *rate as f64 / 1e6)
                })
                .collect();
            parts.push(format!(
                "the NICs of {} (each interface's sending side, over its network's rate)",
                nics.join("; ")
            ));
        }
        if !disks.is_empty() {
            let disks: Vec<String> = disks
                .iter()
                .map(|(d, names)| {
                    format!(
                        "{} ({:.0} MiB/s, seek {} ms)",
                        names.join(", "),
                        d.bandwidth_bytes_s as f64 / (1u64 << 20) as f64,
                        d.seek_us as f64 / 1000.0
                    )
                })
                .collect();
            parts.push(format!(
                "a disk under each target of {} (one head, data and journal on it)",
                disks.join("; ")
            ));
        }
        let services = alike(
            self.nodes
                .iter()
                .filter_map(|n| Some((n.service()?, n.name.as_str()))),
        );
        if !services.is_empty() {
            let services: Vec<String> = services
                .iter()
                .map(|(s, names)| {
                    let memory =
                        s.memory
                            .zip(s.threads_fit())
                            .map_or(String::new(), |((m, t), fit)| {
                                format!(
                                    ", {} MiB for threads of {} KiB each (paging past {fit} open \
                                 files)",
                                    m >> 20,
                                    t >> 10
                                )
                            });
                    format!(
                        "{} ({} us a call on {} CPU{}{memory})",
                        names.join(", "),
                        s.call_us,
                        s.cpus,
                        if s.cpus == 1 { "" } else { "s" }
                    )
                })
                .collect();
            parts.push(format!(
                "the service nodes of {} (each call's CPU time before its I/O; a thread per open \
                 file)",
                services.join("; ")
            ));
        }
        if parts.is_empty() {
            return "nothing".into();
        }
        format!(
            "{}, at time scale {} (host seconds per modeled second)",
            parts.join("; "),
            self.time_scale
        )
    }

    /// Every node's name, comma-separated: what a message about a name not found lists.
    pub fn node_names(&self) -> String {
        self.nodes
            .iter()
            .map(|n| n.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// The index of the node called `name`.
    pub fn node_index(&self, name: &str) -> Option<usize> {
        self.nodes.iter().position(|n| n.name == name)
    }

    /// Indexes of the nodes with role `kind`, in file order.
    pub fn nodes_of(&self, kind: RoleName) -> Vec<usize> {
        (0..self.nodes.len())
            .filter(|&i| self.nodes[i].role.kind() == kind)
            .collect()
    }

    /// The metadata service's node index (a checked stack has exactly one).
    pub fn mds(&self) -> usize {
        let mds = self.nodes_of(RoleName::Mds);
        assert_eq!(mds.len(), 1, "a checked stack has one MDS");
        mds[0]
    }

    /// The NID of `node`'s interface `interface`.
    pub fn nid_of(&self, node: usize, interface: usize) -> Nid {
        let i = self.nodes[node].interfaces[interface];
        let number = self.networks[i.network].number;
        match i.address {
            Address::Number(n) => Nid::mem(n, number),
            Address::Socket(addr) => Nid::tcp(addr, number),
        }
    }

    /// `node`'s primary NID (its first interface), as others address it.
    pub fn primary_nid(&self, node: usize) -> Nid {
        self.nid_of(node, 0)
    }

    /// `node`'s NIDs, one per interface.
    pub fn nids(&self, node: usize) -> Vec<Nid> {
        (0..self.nodes[node].interfaces.len())
            .map(|i| self.nid_of(node, i))
            .collect()
    }

    /// `node`'s interface on `network`, if it has one.
    pub fn interface_on(&self, node: usize, network: usize) -> Option<usize> {
        self.nodes[node]
            .interfaces
            .iter()
            .position(|i| i.network == network)
    }

    /// The routes `node` starts with, as the fabric takes them.
    pub fn routes_of(&self, node: usize) -> Vec<RouteSpec> {
        self.routes
            .iter()
            .filter(|r| r.node == node)
            .map(|r| {
                let gateway_interface = self
                    .interface_on(r.gateway, r.via)
                    .expect("a checked route's gateway is on the network it is reached by");
                RouteSpec {
                    net: self.net_id(r.net),
                    gateway: self.nid_of(r.gateway, gateway_interface),
                    hops: r.hops,
                    priority: r.priority,
                }
            })
            .collect()
    }

    /// The fabric type of `network`: in-memory for numbered addresses, TCP for sockets (a
    /// checked stack does not mix them on one network; an empty network counts as memory).
    pub fn net_type(&self, network: usize) -> iopath_fabric::NetType {
        let tcp = self
            .nodes
            .iter()
            .flat_map(|n| &n.interfaces)
            .any(|i| i.network == network && matches!(i.address, Address::Socket(_)));
        if tcp {
            iopath_fabric::NetType::Tcp
        } else {
            iopath_fabric::NetType::Mem
        }
    }

    /// `network` as every tool names it — in NIDs, lnetctl, lctl, `/metrics`, the node
    /// table and the live view: its fabric type and number (`mem1`, `tcp1`). The stack file's
    /// name for it (`o2ib201`) is the file's alone; [`Stack::network_names`] pairs the two.
    pub fn net_id(&self, network: usize) -> iopath_fabric::NetId {
        iopath_fabric::NetId {
            net_type: self.net_type(network),
            number: self.networks[network].number,
        }
    }

    /// Each network as the tools name it, with the stack file's name where that differs:
    /// `mem0 (torus0), mem1 (o2ib201)`; with `sockets`, as node processes run it, where every
    /// network is TCP (`tcp1 (o2ib201)`).
    pub fn network_names(&self, sockets: bool) -> String {
        (0..self.networks.len())
            .map(|k| self.named_as(k, sockets))
            .collect::<Vec<_>>()
            .join(", ")
    }

    /// `network` as the tools name it in this stack as it is (`tcp1` once its addresses are
    /// sockets), with the stack file's name where that differs: `mem1 (o2ib201)`. What a
    /// result says is modeled names networks so.
    pub fn network_name(&self, network: usize) -> String {
        self.named_as(network, false)
    }

    fn named_as(&self, network: usize, sockets: bool) -> String {
        let mut id = self.net_id(network);
        if sockets {
            id.net_type = iopath_fabric::NetType::Tcp;
        }
        let id = id.to_string();
        let named = &self.networks[network].name;
        if *named == id {
            id
        } else {
            format!("{id} ({named})")
        }
    }

    /// True when every address is a TCP socket: what a node process needs.
    pub fn is_tcp(&self) -> bool {
        self.nodes
            .iter()
            .flat_map(|n| &n.interfaces)
            .all(|i| matches!(i.address, Address::Socket(_)))
    }

    /// The storage targets in the metadata service's order: `(oss node, local index)`,
    /// numbered globally from 0 in this order. Lustre numbers OSTs across servers; the
    /// servers take turns (`iopath-OST0000` on the first, `iopath-OST0001` on the second,
    /// ...) so that round-robin placement spreads files over servers before it doubles up on
    /// one.
    pub fn targets(&self) -> Vec<(usize, u32)> {
        let osss: Vec<(usize, u32)> = self
            .nodes_of(RoleName::Oss)
            .into_iter()
            .map(|i| match self.nodes[i].role {
                Role::Oss(spec) => (i, spec.targets),
                _ => unreachable!("nodes_of(Oss) returns OSS nodes"),
            })
            .collect();
        let counts: Vec<u32> = osss.iter().map(|&(_, targets)| targets).collect();
        iopath_layout::deal(&counts)
            .into_iter()
            .map(|(server, local)| (osss[server].0, local))
            .collect()
    }

    /// The name of the target with file-system index `global` (see [`Stack::targets`]):
    /// `iopath-OST0003`.
    pub fn target_name(&self, global: usize) -> TargetName {
        // At most NODES_MAX servers of TARGETS_PER_OSS_MAX targets: within a name's 0xffff.
        let index = u32::try_from(global).expect("a checked stack has fewer than 2^32 targets");
        self.fsname.ost(index)
    }

    /// The file-system indices of the targets OSS node `oss` serves (`iopath-OST0000`, ...),
    /// in increasing order: see [`Stack::targets`].
    pub fn target_indices(&self, oss: usize) -> Vec<u32> {
        self.targets()
            .iter()
            .enumerate()
            .filter(|(_, (node, _))| *node == oss)
            .map(|(index, _)| index as u32)
            .collect()
    }

    /// The same stack with every numbered address replaced by `host:port` from `port` (one
    /// call per interface, in node order): the stack a process per node runs on loopback TCP.
    pub fn with_sockets(
        &self,
        mut port: impl FnMut(&str, &str) -> Result<SocketAddr, StackError>,
    ) -> Result<Stack, StackError> {
        let mut out = self.clone();
        for node in &mut out.nodes {
            for interface in &mut node.interfaces {
                if let Address::Number(_) = interface.address {
                    let network = &self.networks[interface.network].name;
                    interface.address = Address::Socket(port(&node.name, network)?);
                }
            }
        }
        Ok(out)
    }
}

/// The `forwarder` value for "no fyod: talk to the storage servers directly".
pub const NO_FORWARDER: &str = "none";

/// `(value, name)` pairs grouped by value, in first-seen order: the names modeled alike.
pub(super) fn alike<'a, T: PartialEq>(
    items: impl Iterator<Item = (T, &'a str)>,
) -> Vec<(T, Vec<&'a str>)> {
    let mut groups: Vec<(T, Vec<&str>)> = Vec::new();
    for (value, name) in items {
        match groups.iter_mut().find(|(v, _)| *v == value) {
            Some((_, names)) => names.push(name),
            None => groups.push((value, vec![name])),
        }
    }
    groups
}
