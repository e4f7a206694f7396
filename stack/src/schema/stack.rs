//! [`Stack`]: a stack file checked once and turned into typed values — networks numbered,
//! `count` entries expanded into nodes, names resolved to indexes, routes expanded to the
//! nodes that use them. Every refusal names the field it is about.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;

use iopath_fabric::Nid;
use iopath_fabric::link::LinkModel;
use iopath_fabric::router::RouterConfig;
use iopath_fabric::routing::RouteSpec;
use iopath_fabric::torus::{PACKET_BYTES_DEFAULT, TorusModel, TorusNode};
use iopath_forwarder::ServiceNode;
use iopath_mds::layout::{FsName, TargetName};
use iopath_storage_server::engine::modeled::DiskModel;

use super::file::{
    AddressValue, FyodModeName, HostItem, HostValue, JournalName, LayoutSection, ModelSection,
    NetworkEntry, NodeEntry, RoleName, RouteEntry, SizeValue, StackFile,
};
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
    /// Parses and checks a stack file's text; `origin` names it in messages.
    pub fn parse(text: &str, origin: &str) -> Result<Stack, StackError> {
        Stack::from_file(&StackFile::parse(text, origin)?, origin)
    }

    /// Reads, parses and checks the stack file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Stack, StackError> {
        let text = crate::schema::file::read_text(path, "read the stack file")?;
        Stack::parse(&text, &path.display().to_string())
    }

    /// Checks a parsed stack file.
    pub fn from_file(file: &StackFile, origin: &str) -> Result<Stack, StackError> {
        let bad = |field: String, why: String| StackError::invalid(origin, field, why);
        check_name(&file.name).map_err(|why| bad("name".into(), why))?;
        let fsname = match &file.fsname {
            None => FsName::default(),
            Some(name) => FsName::new(name).map_err(|e| bad("fsname".into(), e.to_string()))?,
        };
        let layout = check_layout(&file.layout).map_err(|(field, why)| bad(field, why))?;
        let networks = check_networks(&file.networks).map_err(|(field, why)| bad(field, why))?;
        let (mut nodes, forwarders) =
            expand_nodes(&file.nodes, &networks).map_err(|(field, why)| bad(field, why))?;
        assign_forwarders(&mut nodes, &forwarders).map_err(|(field, why)| bad(field, why))?;
        check_roles(&nodes).map_err(|(field, why)| bad(field, why))?;
        let time_scale = match file.model.as_ref().and_then(|m| m.time_scale) {
            None => 1,
            Some(scale) if !(1..=TIME_SCALE_MAX).contains(&scale) => {
                return Err(bad(
                    "model.time_scale".into(),
                    format!("{scale}: use 1 to {TIME_SCALE_MAX} host seconds per modeled second"),
                ));
            }
            Some(_)
                if networks.iter().all(|n| n.link.is_none())
                    && nodes.iter().all(|n| {
                        n.disk().is_none()
                            && n.nic_bandwidth_bytes_s.is_none()
                            && n.service().is_none()
                    }) =>
            {
                return Err(bad(
                    "model.time_scale".into(),
                    "scales nothing: no network has a modeled link, no node a NIC rate, no \
                     OSS a modeled disk and no fyod a modeled service node (give one a \
                     bandwidth, nic_bandwidth, disk_bandwidth or fyod_call_us)"
                        .into(),
                ));
            }
            Some(scale) => scale,
        };
        check_torus_pace(&networks, time_scale).map_err(|(field, why)| bad(field, why))?;
        let route_sets: Vec<String> = file
            .routes
            .iter()
            .filter_map(|r| r.set.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if let Some(set) = &file.route_set
            && !route_sets.contains(set)
        {
            return Err(bad(
                "route_set".into(),
                format!(
                    "no [[routes]] entry has set = {set:?} (sets named: {})",
                    list_or_none(&route_sets)
                ),
            ));
        }
        let routes = expand_routes(&file.routes, file.route_set.as_deref(), &networks, &nodes)
            .map_err(|(field, why)| bad(field, why))?;
        let stack = Stack {
            origin: origin.to_owned(),
            name: file.name.clone(),
            description: file.description.trim().to_owned(),
            fsname,
            layout,
            networks,
            nodes,
            routes,
            route_set: file.route_set.clone(),
            route_sets,
            time_scale,
        };
        super::reach::check(&stack).map_err(|(field, why)| bad(field, why))?;
        Ok(stack)
    }

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
        let most = osss.iter().map(|&(_, t)| t).max().unwrap_or(0);
        let mut out = Vec::new();
        for local in 0..most {
            for &(node, targets) in &osss {
                if local < targets {
                    out.push((node, local));
                }
            }
        }
        out
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

    /// The stack as a file again: one entry per node, addresses and forwarders explicit,
    /// routes one per node. Parsing its text gives back this stack.
    pub fn to_file(&self) -> StackFile {
        let nodes = self
            .nodes
            .iter()
            .map(|n| {
                let nids = n
                    .interfaces
                    .iter()
                    .map(|i| {
                        let value = match i.address {
                            Address::Number(a) => AddressValue::Number(u64::from(a)),
                            Address::Socket(s) => AddressValue::Socket(s.to_string()),
                        };
                        (self.networks[i.network].name.clone(), value)
                    })
                    .collect();
                let mut entry = NodeEntry {
                    name: n.name.clone(),
                    role: n.role.kind(),
                    count: None,
                    nids,
                    torus: n.torus,
                    host: n.host.as_ref().map(|h| {
                        HostValue::One(match h {
                            HostRef::Index(i) => HostItem::Index(*i as u64),
                            HostRef::Name(name) => HostItem::Name(name.clone()),
                        })
                    }),
                    admin: n.admin.map(|a| a.to_string()),
                    nic_bandwidth: n.nic_bandwidth_bytes_s.map(SizeValue::Bytes),
                    targets: None,
                    journal: None,
                    commit_interval_ms: None,
                    recovery_window_ms: None,
                    disk_bandwidth: None,
                    disk_seek_ms: None,
                    fyod_mode: None,
                    fyod_call_us: None,
                    fyod_cpus: None,
                    fyod_memory: None,
                    fyod_thread_memory: None,
                    forwarder: None,
                    tiny_router_buffers: None,
                    small_router_buffers: None,
                    large_router_buffers: None,
                    peer_buffer_credits: None,
                    check_forwarded_checksums: None,
                };
                match n.role {
                    Role::Oss(spec) => {
                        entry.targets = Some(spec.targets);
                        entry.journal = Some(if spec.sync_journal {
                            JournalName::Sync
                        } else {
                            JournalName::Async
                        });
                        entry.commit_interval_ms = Some(spec.commit_interval_ms);
                        entry.recovery_window_ms = Some(spec.recovery_window_ms);
                        if let Some(disk) = spec.disk {
                            entry.disk_bandwidth = Some(SizeValue::Bytes(disk.bandwidth_bytes_s));
                            entry.disk_seek_ms = Some(disk.seek_us as f64 / 1000.0);
                        }
                    }
                    Role::Fyod(spec) => {
                        entry.fyod_mode = Some(match spec.mode {
                            FyodMode::Pfs => FyodModeName::Pfs,
                            FyodMode::Ufs => FyodModeName::Ufs,
                        });
                        if let Some(service) = spec.service {
                            entry.fyod_call_us = Some(service.call_us);
                            entry.fyod_cpus = Some(service.cpus);
                            if let Some((memory, thread)) = service.memory {
                                entry.fyod_memory = Some(SizeValue::Bytes(memory));
                                entry.fyod_thread_memory = Some(SizeValue::Bytes(thread));
                            }
                        }
                    }
                    Role::Client(spec) => {
                        entry.forwarder = Some(match spec.forwarder {
                            Some(f) => self.nodes[f].name.clone(),
                            None => NO_FORWARDER.to_owned(),
                        });
                    }
                    Role::Router(buffers) => {
                        entry.tiny_router_buffers = Some(buffers.tiny_buffers);
                        entry.small_router_buffers = Some(buffers.small_buffers);
                        entry.large_router_buffers = Some(buffers.large_buffers);
                        entry.peer_buffer_credits = Some(buffers.peer_buffer_credits);
                        // Written only when it is not the default, as a reader would set it.
                        entry.check_forwarded_checksums =
                            (!buffers.check_checksums).then_some(false);
                    }
                    Role::Mds => {}
                }
                entry
            })
            .collect();
        let routes = self
            .routes
            .iter()
            .map(|r| RouteEntry {
                from: self.networks[r.via].name.clone(),
                net: self.networks[r.net].name.clone(),
                gateway: self.nodes[r.gateway].name.clone(),
                hops: Some(r.hops),
                priority: Some(r.priority),
                nodes: Some(vec![self.nodes[r.node].name.clone()]),
                set: None,
            })
            .collect();
        StackFile {
            name: self.name.clone(),
            description: self.description.clone(),
            fsname: Some(self.fsname.to_string()),
            layout: LayoutSection {
                stripe_size: Some(SizeValue::Bytes(self.layout.stripe_size_bytes)),
                stripe_count: Some(self.layout.stripe_count),
                stripe_offset: Some(self.layout.stripe_offset),
            },
            route_set: None,
            model: (self.time_scale != 1).then_some(ModelSection {
                time_scale: Some(self.time_scale),
            }),
            networks: self
                .networks
                .iter()
                .map(|n| NetworkEntry {
                    name: n.name.clone(),
                    torus: n.torus,
                    bandwidth: n.link.map(|l| SizeValue::Bytes(l.bandwidth_bytes_s)),
                    latency_us: n.link.map(|l| l.latency_us),
                    hop_by_hop: n.hop_by_hop.then_some(true),
                    subnet: n.subnet.map(|s| s.to_string()),
                })
                .collect(),
            nodes,
            routes,
        }
    }

    /// [`Stack::to_file`] as TOML text.
    pub fn to_toml(&self) -> String {
        let mut text = format!(
            "# Resolved from {}: every node, address and route spelled out.\n",
            self.origin
        );
        text.push_str(&toml::to_string(&self.to_file()).unwrap_or_else(|e| {
            // Every value is a plain string, number or table: this cannot fail.
            unreachable!("a stack always serialises to TOML: {e}")
        }));
        text
    }
}

/// The `forwarder` value for "no fyod: talk to the storage servers directly".
pub const NO_FORWARDER: &str = "none";

type FieldError = (String, String);

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > NAME_MAX_BYTES {
        return Err(format!("{name:?} is longer than {NAME_MAX_BYTES} bytes"));
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Err(format!("{name:?} must not start with '.' or '-'"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "{name:?} has {c:?}: use letters, digits, '-', '_' and '.'"
        ));
    }
    Ok(())
}

fn check_layout(layout: &LayoutSection) -> Result<DefaultLayout, FieldError> {
    let stripe_size_bytes = match &layout.stripe_size {
        None => iopath_mds::layout::STRIPE_SIZE_DEFAULT_BYTES,
        Some(SizeValue::Bytes(b)) => *b,
        Some(SizeValue::Text(t)) => iopath_fabric::units::parse_size(t)
            .map_err(|why| ("layout.stripe_size".to_owned(), why))?,
    };
    let unit = iopath_mds::layout::STRIPE_SIZE_UNIT_BYTES;
    if stripe_size_bytes == 0 || !stripe_size_bytes.is_multiple_of(unit) {
        return Err((
            "layout.stripe_size".into(),
            format!("{stripe_size_bytes} bytes is not a positive multiple of 64 KiB"),
        ));
    }
    if stripe_size_bytes > iopath_mds::layout::STRIPE_SIZE_MAX_BYTES {
        return Err((
            "layout.stripe_size".into(),
            format!(
                "{stripe_size_bytes} bytes exceeds Lustre's largest stripe ({} bytes)",
                iopath_mds::layout::STRIPE_SIZE_MAX_BYTES
            ),
        ));
    }
    let stripe_count = layout.stripe_count.unwrap_or(1);
    if stripe_count == 0 || stripe_count < -1 {
        return Err((
            "layout.stripe_count".into(),
            format!("{stripe_count}: use a positive count, or -1 for all targets"),
        ));
    }
    let stripe_offset = layout.stripe_offset.unwrap_or(-1);
    if stripe_offset < -1 {
        return Err((
            "layout.stripe_offset".into(),
            format!("{stripe_offset}: use a target index, or -1 for any"),
        ));
    }
    Ok(DefaultLayout {
        stripe_size_bytes,
        stripe_count,
        stripe_offset,
    })
}

fn check_networks(entries: &[NetworkEntry]) -> Result<Vec<Network>, FieldError> {
    if entries.is_empty() {
        return Err((
            "networks".into(),
            "a stack needs at least one [[networks]] entry".into(),
        ));
    }
    if entries.len() > NETWORKS_MAX {
        return Err((
            "networks".into(),
            format!("{} networks; at most {NETWORKS_MAX}", entries.len()),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let field = |leaf: &str| format!("networks[{i}] ({}).{leaf}", entry.name);
        check_name(&entry.name).map_err(|why| (format!("networks[{i}].name"), why))?;
        if !seen.insert(entry.name.clone()) {
            return Err((
                format!("networks[{i}].name"),
                format!("{:?} is named twice", entry.name),
            ));
        }
        if let Some(dims) = entry.torus
            && dims.iter().any(|&d| d == 0 || d > TORUS_SIDE_MAX)
        {
            return Err((
                field("torus"),
                format!("{dims:?}: each side must be 1 to {TORUS_SIDE_MAX}"),
            ));
        }
        let bandwidth = rate(
            entry.bandwidth.as_ref(),
            "bandwidth",
            LINK_BANDWIDTH_MAX_BYTES_S,
        )
        .map_err(|(leaf, why)| (field(&leaf), why))?;
        let link = match (bandwidth, entry.latency_us) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err((
                    field("latency_us"),
                    "a modeled latency needs a modeled bandwidth too".into(),
                ));
            }
            (Some(_), Some(l)) if l > LINK_LATENCY_MAX_US => {
                return Err((
                    field("latency_us"),
                    format!("{l}: use 0 to {LINK_LATENCY_MAX_US} microseconds"),
                ));
            }
            (Some(b), l) => Some(NetworkLink {
                bandwidth_bytes_s: b,
                latency_us: l.unwrap_or(0),
            }),
        };
        let subnet = match &entry.subnet {
            None => None,
            Some(text) => Some(Subnet::parse(text).map_err(|why| (field("subnet"), why))?),
        };
        let hop_by_hop = entry.hop_by_hop.unwrap_or(false);
        if hop_by_hop && (entry.torus.is_none() || link.is_none()) {
            return Err((
                field("hop_by_hop"),
                "crossing a torus hop by hop needs its dimensions (torus) and its links' \
                 bandwidth"
                    .into(),
            ));
        }
        out.push(Network {
            name: entry.name.clone(),
            number: i as u16,
            torus: entry.torus,
            link,
            hop_by_hop,
            subnet,
        });
    }
    Ok(out)
}

/// A client entry's forwarder as written: `None` when absent (share the fyods in blocks).
type ForwarderAsked = Option<String>;

fn expand_nodes(
    entries: &[NodeEntry],
    networks: &[Network],
) -> Result<(Vec<NodeSpec>, Vec<ForwarderAsked>), FieldError> {
    let by_name: HashMap<&str, usize> = networks
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut nodes = Vec::new();
    let mut forwarders = Vec::new();
    for (e, entry) in entries.iter().enumerate() {
        let field = |leaf: &str| format!("nodes[{e}] ({}).{leaf}", entry.name);
        check_name(&entry.name).map_err(|why| (format!("nodes[{e}].name"), why))?;
        let count = entry.count.unwrap_or(1);
        if count == 0 {
            return Err((field("count"), "must be at least 1".into()));
        }
        if nodes.len() + count as usize > NODES_MAX {
            // Named by its count where it has one; an entry of one node is named itself.
            let at = if entry.count.is_some() {
                field("count")
            } else {
                format!("nodes[{e}] ({})", entry.name)
            };
            return Err((
                at,
                format!(
                    "the stack would have more than {NODES_MAX} nodes ({} before this entry)",
                    nodes.len()
                ),
            ));
        }
        let role = role_of(entry).map_err(|(leaf, why)| (field(&leaf), why))?;
        let nic_bandwidth_bytes_s = rate(
            entry.nic_bandwidth.as_ref(),
            "nic_bandwidth",
            LINK_BANDWIDTH_MAX_BYTES_S,
        )
        .map_err(|(leaf, why)| (field(&leaf), why))?;
        if entry.nids.is_empty() {
            return Err((
                field("nids"),
                "a node needs an address on at least one network, as in nids = { net0 = 1 }".into(),
            ));
        }
        // Interfaces in network order, so the primary NID is on the first network listed in
        // [[networks]] that the node is on.
        let mut interfaces = Vec::new();
        for (net_name, value) in &entry.nids {
            let network = *by_name.get(net_name.as_str()).ok_or_else(|| {
                (
                    field(&format!("nids.{net_name}")),
                    format!(
                        "no network named {net_name:?} (networks: {})",
                        networks
                            .iter()
                            .map(|n| n.name.as_str())
                            .collect::<Vec<_>>()
                            .join(", ")
                    ),
                )
            })?;
            let address = match value {
                AddressValue::Number(n) => {
                    let last = n.checked_add(u64::from(count) - 1);
                    match last {
                        Some(last) if last <= u64::from(u32::MAX) => Address::Number(*n as u32),
                        _ => {
                            return Err((
                                field(&format!("nids.{net_name}")),
                                format!("address {n} (with count {count}) exceeds {}", u32::MAX),
                            ));
                        }
                    }
                }
                AddressValue::Socket(text) => {
                    let addr: SocketAddr = text.parse().map_err(|_| {
                        (
                            field(&format!("nids.{net_name}")),
                            format!("{text:?} is not host:port (as in \"127.0.0.1:7001\"); or give a number"),
                        )
                    })?;
                    if count > 1 {
                        return Err((
                            field("count"),
                            "a TCP address names one node: give each its own entry, or a numbered address".into(),
                        ));
                    }
                    Address::Socket(addr)
                }
            };
            interfaces.push(NodeInterface { network, address });
        }
        interfaces.sort_by_key(|i| i.network);
        let hosts = hosts_of(entry.host.as_ref()).map_err(|why| (field("host"), why))?;
        let admin = match &entry.admin {
            None => None,
            Some(_) if count > 1 => {
                return Err((
                    field("admin"),
                    "an admin address names one node: give each its own entry".into(),
                ));
            }
            Some(text) => Some(text.parse::<SocketAddr>().map_err(|_| {
                (
                    field("admin"),
                    format!("{text:?} is not host:port (as in \"10.77.2.3:40211\")"),
                )
            })?),
        };
        let torus_network = interfaces
            .iter()
            .find_map(|i| networks[i.network].torus.map(|dims| (i.network, dims)));
        if let Some(coords) = entry.torus {
            let Some((network, dims)) = torus_network else {
                return Err((
                    field("torus"),
                    "none of the node's networks has torus dimensions".into(),
                ));
            };
            if coords.iter().zip(dims).any(|(&c, d)| c >= d) {
                return Err((
                    field("torus"),
                    format!(
                        "{coords:?} is outside {}'s torus {dims:?}",
                        networks[network].name
                    ),
                ));
            }
        }
        for k in 0..count {
            let name = if entry.count.is_some() {
                format!("{}{k}", entry.name)
            } else {
                entry.name.clone()
            };
            check_name(&name).map_err(|why| (format!("nodes[{e}].name"), why))?;
            let interfaces = interfaces
                .iter()
                .map(|i| NodeInterface {
                    network: i.network,
                    address: match i.address {
                        Address::Number(n) => Address::Number(n + k),
                        socket => socket,
                    },
                })
                .collect();
            let torus = match (entry.torus, torus_network) {
                (Some(start), Some((_, dims))) => Some(advance(start, dims, k)),
                _ => None,
            };
            nodes.push(NodeSpec {
                name,
                role,
                interfaces,
                torus,
                nic_bandwidth_bytes_s,
                host: (!hosts.is_empty()).then(|| hosts[k as usize % hosts.len()].clone()),
                admin,
            });
            forwarders.push(entry.forwarder.clone());
        }
    }
    check_unique(&nodes, networks)?;
    check_hop_by_hop(&nodes, networks)?;
    Ok((nodes, forwarders))
}

/// A torus crossed hop by hop runs slow enough, in host time, for its model to keep pace.
fn check_torus_pace(networks: &[Network], time_scale: u32) -> Result<(), FieldError> {
    for network in networks.iter().filter(|n| n.hop_by_hop) {
        let Some(link) = network.link else { continue };
        let host = link.bandwidth_bytes_s / u64::from(time_scale);
        if host > HOP_BY_HOP_HOST_BYTES_S_MAX {
            let least = link.bandwidth_bytes_s.div_ceil(HOP_BY_HOP_HOST_BYTES_S_MAX);
            return Err((
                "model.time_scale".into(),
                format!(
                    "{}'s links ({:.0} MB/s each) are crossed hop by hop, a packet at a time: at \
                     time scale {time_scale} that is {:.0} MB/s per link in host time, more than \
                     the model keeps pace with ({:.0} MB/s); use a time_scale of at least {least}",
                    network.name,
                    link.bandwidth_bytes_s as f64 / 1e6,
                    host as f64 / 1e6,
                    HOP_BY_HOP_HOST_BYTES_S_MAX as f64 / 1e6
                ),
            ));
        }
    }
    Ok(())
}

/// Every node on a network crossed hop by hop has a place on its torus: coordinates, given
/// for that network (a node's coordinates are on the first of its networks with a torus).
fn check_hop_by_hop(nodes: &[NodeSpec], networks: &[Network]) -> Result<(), FieldError> {
    for (k, network) in networks.iter().enumerate().filter(|(_, n)| n.hop_by_hop) {
        for node in nodes {
            let mut tori = node
                .interfaces
                .iter()
                .filter(|i| networks[i.network].torus.is_some());
            if !node.interfaces.iter().any(|i| i.network == k) {
                continue;
            }
            let first = tori.next().map(|i| i.network);
            if node.torus.is_none() || first != Some(k) {
                return Err((
                    format!("nodes ({}).torus", node.name),
                    format!(
                        "{} is crossed hop by hop, so every node on it needs its coordinates \
                         there (torus = [x, y, z], on the first of its networks with a torus)",
                        network.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A node entry's `host`, as the hosts its nodes take in turn (empty when absent).
fn hosts_of(value: Option<&HostValue>) -> Result<Vec<HostRef>, String> {
    let items: Vec<&HostItem> = match value {
        None => return Ok(Vec::new()),
        Some(HostValue::One(item)) => vec![item],
        Some(HostValue::Each(items)) if items.is_empty() => {
            return Err("an empty list: name a host, or leave host out".into());
        }
        Some(HostValue::Each(items)) => items.iter().collect(),
    };
    items
        .into_iter()
        .map(|item| match item {
            HostItem::Index(i) if *i > HOST_INDEX_MAX => Err(format!(
                "host index {i}: the allocation's hosts are numbered from 0 (at most {HOST_INDEX_MAX})"
            )),
            HostItem::Index(i) => Ok(HostRef::Index(*i as usize)),
            HostItem::Name(name)
                if name.is_empty()
                    || name.len() > HOST_NAME_MAX_BYTES
                    || name.chars().any(|c| c.is_whitespace() || c.is_control() || c == '/') =>
            {
                Err(format!(
                    "{name:?} is not a host name or address (1 to {HOST_NAME_MAX_BYTES} bytes, no spaces or '/')"
                ))
            }
            HostItem::Name(name) => Ok(HostRef::Name(name.clone())),
        })
        .collect()
}

/// `start` moved on by `steps` nodes through the torus, x fastest, wrapping.
fn advance(start: [u32; 3], dims: [u32; 3], steps: u32) -> [u32; 3] {
    let index = |c: [u32; 3]| -> u64 {
        u64::from(c[0])
            + u64::from(dims[0]) * (u64::from(c[1]) + u64::from(dims[1]) * u64::from(c[2]))
    };
    let total = u64::from(dims[0]) * u64::from(dims[1]) * u64::from(dims[2]);
    let i = (index(start) + u64::from(steps)) % total;
    let x = i % u64::from(dims[0]);
    let y = (i / u64::from(dims[0])) % u64::from(dims[1]);
    let z = i / (u64::from(dims[0]) * u64::from(dims[1]));
    [x as u32, y as u32, z as u32]
}

fn role_of(entry: &NodeEntry) -> Result<Role, (String, String)> {
    let only = |leaf: &str, role: &str| {
        (
            leaf.to_owned(),
            format!(
                "applies to {role} nodes only, and this is a {} node",
                entry.role.as_str()
            ),
        )
    };
    if entry.role != RoleName::Oss {
        if entry.targets.is_some() {
            return Err(only("targets", "oss"));
        }
        if entry.journal.is_some() {
            return Err(only("journal", "oss"));
        }
        if entry.commit_interval_ms.is_some() {
            return Err(only("commit_interval_ms", "oss"));
        }
        if entry.recovery_window_ms.is_some() {
            return Err(only("recovery_window_ms", "oss"));
        }
        if entry.disk_bandwidth.is_some() {
            return Err(only("disk_bandwidth", "oss"));
        }
        if entry.disk_seek_ms.is_some() {
            return Err(only("disk_seek_ms", "oss"));
        }
    }
    if entry.role != RoleName::Fyod {
        for (leaf, given) in [
            ("fyod_mode", entry.fyod_mode.is_some()),
            ("fyod_call_us", entry.fyod_call_us.is_some()),
            ("fyod_cpus", entry.fyod_cpus.is_some()),
            ("fyod_memory", entry.fyod_memory.is_some()),
            ("fyod_thread_memory", entry.fyod_thread_memory.is_some()),
        ] {
            if given {
                return Err(only(leaf, "fyod"));
            }
        }
    }
    if entry.role != RoleName::Client && entry.forwarder.is_some() {
        return Err(only("forwarder", "client"));
    }
    let buffers = [
        ("tiny_router_buffers", entry.tiny_router_buffers),
        ("small_router_buffers", entry.small_router_buffers),
        ("large_router_buffers", entry.large_router_buffers),
        ("peer_buffer_credits", entry.peer_buffer_credits),
    ];
    if entry.role != RoleName::Router && entry.check_forwarded_checksums.is_some() {
        return Err(only("check_forwarded_checksums", "router"));
    }
    for (leaf, value) in buffers {
        match value {
            Some(_) if entry.role != RoleName::Router => return Err(only(leaf, "router")),
            Some(n) if !(1..=ROUTER_BUFFERS_MAX).contains(&n) => {
                return Err((leaf.into(), format!("{n}: use 1 to {ROUTER_BUFFERS_MAX}")));
            }
            _ => {}
        }
    }
    Ok(match entry.role {
        RoleName::Mds => Role::Mds,
        RoleName::Router => {
            let d = RouterConfig::default();
            Role::Router(RouterConfig {
                tiny_buffers: entry.tiny_router_buffers.unwrap_or(d.tiny_buffers),
                small_buffers: entry.small_router_buffers.unwrap_or(d.small_buffers),
                large_buffers: entry.large_router_buffers.unwrap_or(d.large_buffers),
                peer_buffer_credits: entry.peer_buffer_credits.unwrap_or(d.peer_buffer_credits),
                check_checksums: entry.check_forwarded_checksums.unwrap_or(d.check_checksums),
                ..d
            })
        }
        RoleName::Client => Role::Client(ClientSpec { forwarder: None }),
        RoleName::Fyod => Role::Fyod(FyodSpec {
            mode: match entry.fyod_mode.unwrap_or_default() {
                FyodModeName::Pfs => FyodMode::Pfs,
                FyodModeName::Ufs => FyodMode::Ufs,
            },
            service: fyod_service_node(entry)?,
        }),
        RoleName::Oss => {
            let targets = entry.targets.unwrap_or(1);
            if !(1..=TARGETS_PER_OSS_MAX).contains(&targets) {
                return Err((
                    "targets".into(),
                    format!("{targets}: an OSS has 1 to {TARGETS_PER_OSS_MAX} targets"),
                ));
            }
            let commit_interval_ms = entry
                .commit_interval_ms
                .unwrap_or(COMMIT_INTERVAL_DEFAULT_MS);
            if !(1..=COMMIT_INTERVAL_MAX_MS).contains(&commit_interval_ms) {
                return Err((
                    "commit_interval_ms".into(),
                    format!("{commit_interval_ms}: use 1 to {COMMIT_INTERVAL_MAX_MS} ms"),
                ));
            }
            let recovery_window_ms = entry
                .recovery_window_ms
                .unwrap_or(RECOVERY_WINDOW_DEFAULT_MS);
            if !(1..=RECOVERY_WINDOW_MAX_MS).contains(&recovery_window_ms) {
                return Err((
                    "recovery_window_ms".into(),
                    format!("{recovery_window_ms}: use 1 to {RECOVERY_WINDOW_MAX_MS} ms"),
                ));
            }
            Role::Oss(OssSpec {
                targets,
                sync_journal: entry.journal.unwrap_or_default() == JournalName::Sync,
                commit_interval_ms,
                recovery_window_ms,
                disk: ost_disk(entry)?,
            })
        }
    })
}

/// `(value, name)` pairs grouped by value, in first-seen order: the names modeled alike.
fn alike<'a, T: PartialEq>(items: impl Iterator<Item = (T, &'a str)>) -> Vec<(T, Vec<&'a str>)> {
    let mut groups: Vec<(T, Vec<&str>)> = Vec::new();
    for (value, name) in items {
        match groups.iter_mut().find(|(v, _)| *v == value) {
            Some((_, names)) => names.push(name),
            None => groups.push((value, vec![name])),
        }
    }
    groups
}

/// A rate field, `leaf`: bytes per second as a number or as text with a suffix (`"3200m"`,
/// binary), 1 to `max`.
fn rate(value: Option<&SizeValue>, leaf: &str, max: u64) -> Result<Option<u64>, (String, String)> {
    let bytes_s = match value {
        None => return Ok(None),
        Some(SizeValue::Bytes(b)) => *b,
        Some(SizeValue::Text(t)) => {
            iopath_fabric::units::parse_size(t).map_err(|why| (leaf.to_owned(), why))?
        }
    };
    if !(1..=max).contains(&bytes_s) {
        return Err((
            leaf.to_owned(),
            format!("{bytes_s} bytes per second: use 1 to {max}"),
        ));
    }
    Ok(Some(bytes_s))
}

/// A fyod entry's modeled service node: `fyod_call_us`, and the rest only beside it.
fn fyod_service_node(entry: &NodeEntry) -> Result<Option<FyodServiceNode>, (String, String)> {
    let Some(call_us) = entry.fyod_call_us else {
        for (leaf, given) in [
            ("fyod_cpus", entry.fyod_cpus.is_some()),
            ("fyod_memory", entry.fyod_memory.is_some()),
            ("fyod_thread_memory", entry.fyod_thread_memory.is_some()),
        ] {
            if given {
                return Err((
                    leaf.into(),
                    "a modeled service node needs its CPU time per call: give fyod_call_us too"
                        .into(),
                ));
            }
        }
        return Ok(None);
    };
    if !(1..=FYOD_CALL_MAX_US).contains(&call_us) {
        return Err((
            "fyod_call_us".into(),
            format!("{call_us}: use 1 to {FYOD_CALL_MAX_US} microseconds"),
        ));
    }
    let cpus = entry.fyod_cpus.unwrap_or(1);
    if !(1..=FYOD_CPUS_MAX).contains(&cpus) {
        return Err((
            "fyod_cpus".into(),
            format!("{cpus}: use 1 to {FYOD_CPUS_MAX}"),
        ));
    }
    let memory = rate(
        entry.fyod_memory.as_ref(),
        "fyod_memory",
        FYOD_MEMORY_MAX_BYTES,
    )?;
    let thread = rate(
        entry.fyod_thread_memory.as_ref(),
        "fyod_thread_memory",
        FYOD_MEMORY_MAX_BYTES,
    )?;
    let memory = match (memory, thread) {
        (None, None) => None,
        (Some(_), None) => {
            return Err((
                "fyod_memory".into(),
                "the node pages when its threads outgrow it: give fyod_thread_memory too".into(),
            ));
        }
        (None, Some(_)) => {
            return Err((
                "fyod_thread_memory".into(),
                "threads page only on a node of bounded memory: give fyod_memory too".into(),
            ));
        }
        (Some(m), Some(t)) if t > m => {
            return Err((
                "fyod_thread_memory".into(),
                format!("{t} bytes: more than fyod_memory ({m}), so not one thread fits"),
            ));
        }
        (Some(m), Some(t)) => Some((m, t)),
    };
    Ok(Some(FyodServiceNode {
        call_us,
        cpus,
        memory,
    }))
}

/// An OSS entry's modeled disk: `disk_bandwidth`, and `disk_seek_ms` only beside it.
fn ost_disk(entry: &NodeEntry) -> Result<Option<OstDisk>, (String, String)> {
    let bandwidth = rate(
        entry.disk_bandwidth.as_ref(),
        "disk_bandwidth",
        DISK_BANDWIDTH_MAX_BYTES_S,
    )?;
    match (bandwidth, entry.disk_seek_ms) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err((
            "disk_seek_ms".into(),
            "a modeled seek needs a modeled disk: give disk_bandwidth too".into(),
        )),
        (Some(_), Some(ms)) if !(0.0..=DISK_SEEK_MAX_MS).contains(&ms) => Err((
            "disk_seek_ms".into(),
            format!("{ms}: use 0 to {DISK_SEEK_MAX_MS} milliseconds"),
        )),
        (Some(b), ms) => Ok(Some(OstDisk {
            bandwidth_bytes_s: b,
            seek_us: (ms.unwrap_or(0.0) * 1000.0).round() as u64,
        })),
    }
}

fn check_unique(nodes: &[NodeSpec], networks: &[Network]) -> Result<(), FieldError> {
    let mut names = BTreeSet::new();
    let mut addresses: BTreeMap<(usize, Address), &str> = BTreeMap::new();
    let mut kinds: BTreeMap<usize, (bool, &str)> = BTreeMap::new();
    for node in nodes {
        if !names.insert(node.name.as_str()) {
            return Err((
                format!("nodes ({})", node.name),
                format!("two nodes are called {:?}", node.name),
            ));
        }
        for i in &node.interfaces {
            if let Some(other) = addresses.insert((i.network, i.address), &node.name) {
                return Err((
                    format!("nodes ({}).nids.{}", node.name, networks[i.network].name),
                    format!("{other} has the same address on this network"),
                ));
            }
            let tcp = matches!(i.address, Address::Socket(_));
            match kinds.get(&i.network) {
                Some(&(was_tcp, first)) if was_tcp != tcp => {
                    return Err((
                        format!("nodes ({}).nids.{}", node.name, networks[i.network].name),
                        format!(
                            "{} has a {} address on this network and {} a {} one: one network, one kind of address",
                            first,
                            if was_tcp { "host:port" } else { "numbered" },
                            node.name,
                            if tcp { "host:port" } else { "numbered" },
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    kinds.insert(i.network, (tcp, &node.name));
                }
            }
        }
    }
    Ok(())
}

fn assign_forwarders(nodes: &mut [NodeSpec], asked: &[ForwarderAsked]) -> Result<(), FieldError> {
    let fyods: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].role.kind() == RoleName::Fyod)
        .collect();
    let automatic: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].role.kind() == RoleName::Client && asked[i].is_none())
        .collect();
    for i in 0..nodes.len() {
        let Role::Client(_) = nodes[i].role else {
            continue;
        };
        let forwarder = match asked[i].as_deref() {
            Some(NO_FORWARDER) => None,
            Some(name) => {
                let f = nodes.iter().position(|n| n.name == name).ok_or_else(|| {
                    (
                        format!("nodes ({}).forwarder", nodes[i].name),
                        format!("no node named {name:?}; name a fyod node or \"{NO_FORWARDER}\""),
                    )
                })?;
                if nodes[f].role.kind() != RoleName::Fyod {
                    return Err((
                        format!("nodes ({}).forwarder", nodes[i].name),
                        format!("{name:?} is a {} node, not a fyod", nodes[f].role.name()),
                    ));
                }
                Some(f)
            }
            // ASCI Red gave each fyod a block of compute nodes: the clients without a
            // forwarder of their own are shared out in contiguous blocks.
            None if fyods.is_empty() => None,
            None => {
                let rank = automatic
                    .iter()
                    .position(|&c| c == i)
                    .expect("an automatic client is in the automatic list");
                Some(fyods[rank * fyods.len() / automatic.len()])
            }
        };
        nodes[i].role = Role::Client(ClientSpec { forwarder });
    }
    Ok(())
}

fn check_roles(nodes: &[NodeSpec]) -> Result<(), FieldError> {
    let count = |kind: RoleName| nodes.iter().filter(|n| n.role.kind() == kind).count();
    match count(RoleName::Mds) {
        1 => {}
        0 => return Err(("nodes".into(), "the stack has no mds node".into())),
        n => {
            return Err((
                "nodes".into(),
                format!("the stack has {n} mds nodes; it needs exactly one"),
            ));
        }
    }
    if count(RoleName::Oss) == 0 {
        return Err(("nodes".into(), "the stack has no oss node".into()));
    }
    let targets: u64 = nodes
        .iter()
        .map(|n| match n.role {
            Role::Oss(spec) => u64::from(spec.targets),
            _ => 0,
        })
        .sum();
    if targets > iopath_mds::limits::TARGETS_MAX as u64 {
        return Err((
            "nodes".into(),
            format!(
                "{targets} targets in all; the metadata service places over at most {}",
                iopath_mds::limits::TARGETS_MAX
            ),
        ));
    }
    for node in nodes {
        if node.role.kind() == RoleName::Router && node.interfaces.len() < 2 {
            return Err((
                format!("nodes ({}).nids", node.name),
                "a router needs addresses on at least two networks".into(),
            ));
        }
    }
    Ok(())
}

fn expand_routes(
    entries: &[RouteEntry],
    set: Option<&str>,
    networks: &[Network],
    nodes: &[NodeSpec],
) -> Result<Vec<RouteRule>, FieldError> {
    let network = |name: &str, field: String| {
        networks
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| (field, format!("no network named {name:?}")))
    };
    let on = |node: usize, net: usize| nodes[node].interfaces.iter().any(|i| i.network == net);
    let mut out: Vec<RouteRule> = Vec::new();
    for (e, entry) in entries.iter().enumerate() {
        let field = |leaf: &str| format!("routes[{e}].{leaf}");
        let from = network(&entry.from, field("from"))?;
        let net = network(&entry.net, field("net"))?;
        if from == net {
            return Err((
                field("net"),
                "a route leads to another network than `from`".into(),
            ));
        }
        let gateway = nodes
            .iter()
            .position(|n| n.name == entry.gateway)
            .ok_or_else(|| {
                (
                    field("gateway"),
                    format!("no node named {:?}", entry.gateway),
                )
            })?;
        if nodes[gateway].role.kind() != RoleName::Router {
            return Err((
                field("gateway"),
                format!(
                    "{:?} is a {} node; a gateway must be a router",
                    entry.gateway,
                    nodes[gateway].role.name()
                ),
            ));
        }
        if !on(gateway, from) {
            return Err((
                field("gateway"),
                format!(
                    "router {:?} has no address on {:?}",
                    entry.gateway, entry.from
                ),
            ));
        }
        let hops = entry.hops.unwrap_or(1);
        if !(1..=iopath_fabric::routing::HOPS_MAX).contains(&hops) {
            return Err((
                field("hops"),
                format!("{hops}: use 1 to {}", iopath_fabric::routing::HOPS_MAX),
            ));
        }
        if let Some(s) = &entry.set
            && s.is_empty()
        {
            return Err((field("set"), "must not be empty".into()));
        }
        let users: Vec<usize> = match &entry.nodes {
            Some(names) => {
                let mut users = Vec::new();
                for (k, name) in names.iter().enumerate() {
                    let node = nodes.iter().position(|n| &n.name == name).ok_or_else(|| {
                        (
                            field(&format!("nodes[{k}]")),
                            format!("no node named {name:?}"),
                        )
                    })?;
                    if !on(node, from) || on(node, net) {
                        return Err((
                            field(&format!("nodes[{k}]")),
                            format!(
                                "{name:?} must be on {:?} and not on {:?} to use this route",
                                entry.from, entry.net
                            ),
                        ));
                    }
                    users.push(node);
                }
                users
            }
            None => (0..nodes.len())
                .filter(|&n| n != gateway && on(n, from) && !on(n, net))
                .collect(),
        };
        let in_force = match (&entry.set, set) {
            (None, _) => true,
            (Some(s), Some(chosen)) => s == chosen,
            (Some(_), None) => false,
        };
        if !in_force {
            continue;
        }
        for node in users {
            if out
                .iter()
                .any(|r| r.node == node && r.net == net && r.gateway == gateway)
            {
                return Err((
                    field("gateway"),
                    format!(
                        "{} already has a route to {:?} through {:?}",
                        nodes[node].name, entry.net, entry.gateway
                    ),
                ));
            }
            out.push(RouteRule {
                node,
                net,
                gateway,
                via: from,
                hops,
                priority: entry.priority.unwrap_or(0),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::advance;

    #[test]
    fn advance_walks_x_fastest_and_wraps() {
        let dims = [2, 2, 2];
        assert_eq!(advance([0, 0, 0], dims, 0), [0, 0, 0]);
        assert_eq!(advance([0, 0, 0], dims, 1), [1, 0, 0]);
        assert_eq!(advance([0, 0, 0], dims, 2), [0, 1, 0]);
        assert_eq!(advance([0, 0, 0], dims, 4), [0, 0, 1]);
        assert_eq!(advance([1, 1, 1], dims, 1), [0, 0, 0]);
    }
}
