//! [`RunningNode`]: one node of a stack, with its role, running in this process — the same
//! code whether the whole stack shares the process (embedded) or this node has a process of
//! its own (`iopath node`).

use std::path::Path;
use std::sync::Arc;

use iopath_admin::{NodeInfo, ParamTree};
use iopath_fabric::fault::FaultHook;
use iopath_fabric::router::RouterConfig;
use iopath_fabric::torus::TorusNetwork;
use iopath_fabric::{Interface, Limits, MemNetwork, Node, NodeConfig};
use iopath_mds::{MdsConfig, MdsService, MdsTarget, StripeRequest};
use iopath_storage_server::engine::EngineConfig;
use iopath_storage_server::ost::{Oss, OssConfig, OstConfig};
use iopath_storage_server::service::{OssService, ServiceConfig};
use tracing::info;

use super::fyod::{self, FyodRunning, FyodTuning};
use crate::error::StackError;
use crate::schema::{Address, Role, RoleName, Stack};

/// What the nodes of one process share: an in-memory network per stack network, and the
/// modeled torus of each network crossed hop by hop (its model here, or a handle on its
/// switch in the process that runs it). Node processes of a stack with no torus share
/// nothing ([`SharedNetworks::none`]).
#[derive(Debug, Default)]
pub struct SharedNetworks {
    mem: Vec<Arc<MemNetwork>>,
    tori: Vec<Option<TorusNetwork>>,
}

impl SharedNetworks {
    /// A whole stack's, in this process (inside a Tokio runtime: each torus's model is a
    /// task).
    pub fn embedded(stack: &Stack) -> SharedNetworks {
        SharedNetworks {
            mem: stack.networks.iter().map(|_| MemNetwork::new()).collect(),
            ..SharedNetworks::modeled(stack)
        }
    }

    /// The models of `stack`'s tori crossed hop by hop, run in this process (a stack spread
    /// over processes: its launcher runs them and serves them to the others).
    pub fn modeled(stack: &Stack) -> SharedNetworks {
        SharedNetworks {
            mem: Vec::new(),
            tori: (0..stack.networks.len())
                .map(|k| stack.torus_model(k).map(TorusNetwork::start))
                .collect(),
        }
    }

    /// Handles on the tori crossed hop by hop that node `index` of `stack` is on, each
    /// connected to the switch `switches` names for its network (`NETWORK=ADDR`, as `iopath
    /// node --torus-switch` takes them).
    pub async fn switched(
        stack: &Stack,
        index: usize,
        switches: &[(String, std::net::SocketAddr)],
    ) -> Result<SharedNetworks, StackError> {
        for (n, (name, _)) in switches.iter().enumerate() {
            if !stack
                .networks
                .iter()
                .any(|net| net.hop_by_hop && net.name == *name)
            {
                return Err(StackError::BadOption {
                    option: "--torus-switch".into(),
                    why: format!(
                        "{} has no network {name:?} crossed hop by hop",
                        stack.origin
                    ),
                });
            }
            if switches[..n].iter().any(|(other, _)| other == name) {
                return Err(StackError::BadOption {
                    option: "--torus-switch".into(),
                    why: format!("{name} is given twice"),
                });
            }
        }
        let mut tori = Vec::new();
        for (k, network) in stack.networks.iter().enumerate() {
            let on_it = stack
                .nodes
                .get(index)
                .is_some_and(|n| n.interfaces.iter().any(|i| i.network == k));
            let Some(model) = stack.torus_model(k).filter(|_| on_it) else {
                tori.push(None);
                continue;
            };
            let Some(&(_, addr)) = switches.iter().find(|(name, _)| *name == network.name) else {
                tori.push(None);
                continue;
            };
            let torus =
                TorusNetwork::connect(model, addr)
                    .await
                    .map_err(|e| StackError::BadOption {
                        option: "--torus-switch".into(),
                        why: format!("{}={addr}: {e}", network.name),
                    })?;
            tori.push(Some(torus));
        }
        Ok(SharedNetworks {
            mem: Vec::new(),
            tori,
        })
    }

    /// Nothing shared: a node with a process of its own.
    pub fn none() -> SharedNetworks {
        SharedNetworks::default()
    }

    /// Serves each torus modeled here to nodes in other processes, on a loopback port of its
    /// own: the network's name and its switch, for `iopath node --torus-switch`.
    pub fn serve_tori(
        &self,
        stack: &Stack,
    ) -> Result<Vec<(String, iopath_fabric::torus::switch::Switch)>, StackError> {
        let mut switches = Vec::new();
        for (k, torus) in self.tori.iter().enumerate() {
            let Some(torus) = torus else { continue };
            let name = &stack.networks[k].name;
            let listener = std::net::TcpListener::bind("127.0.0.1:0")
                .and_then(|l| l.set_nonblocking(true).map(|()| l))
                .and_then(tokio::net::TcpListener::from_std)
                .map_err(|e| StackError::system(format!("open {name}'s torus switch"), e))?;
            let switch = torus.serve(listener).map_err(|e| {
                StackError::system(
                    format!("serve {name}'s torus"),
                    std::io::Error::other(e.to_string()),
                )
            })?;
            switches.push((name.clone(), switch));
        }
        Ok(switches)
    }

    /// The in-memory network of stack network `index`.
    pub fn mem(&self, index: usize) -> Option<&Arc<MemNetwork>> {
        self.mem.get(index)
    }

    /// The modeled torus of stack network `index`, if it is crossed hop by hop.
    pub fn torus(&self, index: usize) -> Option<&TorusNetwork> {
        self.tori.get(index).and_then(Option::as_ref)
    }
}

/// What a running node serves.
#[derive(Debug)]
enum Served {
    /// A client or a router: the fabric node is all there is.
    Nothing,
    /// The metadata service.
    Mds(Arc<MdsService>),
    /// A storage server.
    Oss { service: Arc<OssService> },
    /// A fyod.
    Fyod(FyodRunning),
}

/// IORCD's sampling interval unless set otherwise: the paper's 30 s.
pub const IORCD_INTERVAL: std::time::Duration = std::time::Duration::from_secs(30);

/// One node of a stack, running here.
#[derive(Debug)]
pub struct RunningNode {
    /// Its index in [`Stack::nodes`].
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its role.
    pub role: RoleName,
    /// Its fabric node.
    pub node: Node,
    /// Its parameters (fabric views, and its role's), for its admin service.
    pub tree: ParamTree,
    /// IORCD's sampler, on routers and fyods (`iorcd.interval_ms`, `iorcd.samples`).
    pub iorcd: Option<Arc<iopath_fabric::iorcd::Sampler>>,
    /// A client node's osc counters (`osc.*.stats`, `osc.*.rpc_stats`), which every client
    /// library connected on it counts into.
    pub osc: Option<Arc<iopath_ost_client::OscStats>>,
    /// The file system's name: the osc families on `/metrics` name targets after it.
    fsname: iopath_mds::layout::FsName,
    served: Served,
}

impl RunningNode {
    /// Starts node `index` of `stack`: its interfaces (numbered addresses on `networks[k]`,
    /// one in-memory network per stack network; sockets on TCP), its routes, and its role,
    /// with its storage (MDS, OSS) in `storage`.
    pub async fn start(
        stack: &Stack,
        index: usize,
        networks: &SharedNetworks,
        storage: &Path,
    ) -> Result<RunningNode, StackError> {
        RunningNode::start_tuned(stack, index, networks, storage, &NodeTuning::default()).await
    }

    /// [`RunningNode::start`] with `tuning`: the fabric's limits, a fault hook (tests), a
    /// fyod's bounds.
    pub async fn start_tuned(
        stack: &Stack,
        index: usize,
        networks: &SharedNetworks,
        storage: &Path,
        tuning: &NodeTuning,
    ) -> Result<RunningNode, StackError> {
        let spec = &stack.nodes[index];
        let failed = |why: String| StackError::Start {
            node: spec.name.clone(),
            role: spec.role.name(),
            why,
        };
        let mut interfaces = Vec::new();
        for (k, interface) in spec.interfaces.iter().enumerate() {
            let nid = stack.nid_of(index, k);
            interfaces.push(match interface.address {
                Address::Number(_) => {
                    let network = networks.mem(interface.network).ok_or_else(|| {
                        failed(format!(
                            "{nid} is an in-memory address, and in-memory networks exist only \
                             when the whole stack runs in one process"
                        ))
                    })?;
                    Interface::Mem {
                        nid,
                        network: Arc::clone(network),
                    }
                }
                Address::Socket(_) => Interface::Tcp { nid },
            });
        }
        let mut tori = Vec::new();
        for (k, interface) in spec.interfaces.iter().enumerate() {
            let network = &stack.networks[interface.network];
            if !network.hop_by_hop {
                continue;
            }
            let torus = networks.torus(interface.network).ok_or_else(|| {
                failed(format!(
                    "{} is crossed hop by hop, and its modeled torus runs in the process that \
                     started the stack: run the stack embedded or with --processes (whose \
                     nodes are given its switch, --torus-switch), not with iopath launch",
                    network.name
                ))
            })?;
            tori.push((stack.nid_of(index, k).net, torus.clone()));
        }
        let peers = peers_of(stack);
        let router = match spec.role {
            Role::Router(buffers) => Some(RouterConfig {
                peers_max: buffers.peers_max.max(peers),
                ..buffers
            }),
            _ => None,
        };
        let node = Node::start(NodeConfig {
            interfaces,
            routes: stack.routes_of(index),
            router,
            links: spec
                .interfaces
                .iter()
                .enumerate()
                .filter_map(|(k, i)| {
                    Some((
                        stack.nid_of(index, k).net,
                        stack.interface_link(index, i.network)?,
                    ))
                })
                .collect(),
            tori,
            limits: for_the_stack(&tuning.limits, stack.time_scale, peers),
            fault: tuning.fault.clone(),
        })
        .await
        .map_err(|e| failed(format!("bring up its interfaces: {e}")))?;
        let tree = ParamTree::new();
        iopath_fabric::params::register(&node, &tree, "")
            .map_err(|e| failed(format!("register its parameters: {e}")))?;
        // Routers and fyods sample their congestion as IORCD did on Titan's routers, every
        // 30 s unless `iorcd.interval_ms` says otherwise.
        let iorcd = matches!(spec.role.kind(), RoleName::Router | RoleName::Fyod)
            .then(|| {
                iopath_fabric::iorcd::Sampler::start(&node, Some(IORCD_INTERVAL), &tree)
                    .map_err(|e| failed(format!("start its IORCD sampler: {e}")))
            })
            .transpose()?;
        let osc = (spec.role.kind() == RoleName::Client)
            .then(|| super::client_osc_stats(stack, index, &tree))
            .transpose()
            .map_err(|e| failed(format!("register its osc parameters: {e}")))?;
        let served = match start_role(stack, index, &node, &tree, storage, tuning).await {
            Ok(served) => served,
            Err(e) => {
                node.shutdown();
                return Err(failed(e));
            }
        };
        info!(node = %spec.name, nid = %node.nid(), role = spec.role.name(), "node started");
        Ok(RunningNode {
            index,
            name: spec.name.clone(),
            role: spec.role.kind(),
            node,
            tree,
            iorcd,
            osc,
            fsname: stack.fsname.clone(),
            served,
        })
    }

    /// Who it is, for its admin service's `Status`.
    pub fn info(&self) -> NodeInfo {
        NodeInfo::new(
            self.node.nids().iter().map(ToString::to_string).collect(),
            vec![self.role.as_str().to_owned()],
        )
    }

    /// A registry of the node's collectors for `/metrics`: the fabric's (credits, traffic,
    /// bulk, RPCs by operation) on every node, a storage server's own, and a client node's
    /// osc gauges (writes kept for replay, RPCs in flight).
    pub fn metrics_registry(&self) -> prometheus_client::registry::Registry {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(iopath_fabric::metrics::FabricCollector::new(
            &self.node,
        )));
        if let Served::Oss { service } = &self.served {
            registry.register_collector(Box::new(
                iopath_storage_server::service::metrics::OssCollector::new(service),
            ));
        }
        if let Some(osc) = &self.osc {
            registry.register_collector(Box::new(iopath_ost_client::metrics::OscCollector::new(
                osc,
                self.fsname.clone(),
            )));
        }
        registry
    }

    /// The storage server's targets, if this is an OSS.
    pub fn oss(&self) -> Option<&Arc<Oss>> {
        match &self.served {
            Served::Oss { service } => Some(service.oss()),
            _ => None,
        }
    }

    /// The storage server's service, if this is an OSS.
    pub fn oss_service(&self) -> Option<&Arc<OssService>> {
        match &self.served {
            Served::Oss { service } => Some(service),
            _ => None,
        }
    }

    /// Stops it at once, committing nothing more: a storage server's disks see a crash; the
    /// node leaves its networks.
    pub fn crash(self) {
        if let Served::Oss { service } = &self.served {
            service.crash();
        }
        self.node.shutdown();
    }

    /// The metadata service, if this is the MDS.
    pub fn mds(&self) -> Option<&Arc<MdsService>> {
        match &self.served {
            Served::Mds(m) => Some(m),
            _ => None,
        }
    }

    /// The fyod, if this is one.
    pub fn fyod(&self) -> Option<&FyodRunning> {
        match &self.served {
            Served::Fyod(f) => Some(f),
            _ => None,
        }
    }

    /// Stops it: a fyod first ends its sessions with the storage servers (they commit what
    /// they acknowledged to it, and forget it) while its node can still reach them; then the
    /// fabric node (no new requests); then the role — a storage server commits every target
    /// and leaves the marker that says no recovery is needed.
    pub async fn stop(self) -> Result<(), StackError> {
        if let Served::Fyod(f) = &self.served {
            match tokio::time::timeout(FYOD_DISCONNECT_MAX, f.service().shutdown()).await {
                Ok(Ok(())) => {}
                Ok(Err(error)) => {
                    tracing::warn!(node = %self.name, %error, "the fyod could not end its storage sessions: a later server restart will wait for it")
                }
                Err(_) => tracing::warn!(
                    node = %self.name,
                    "the fyod's storage servers did not answer within {} s: a later server restart will wait for it",
                    FYOD_DISCONNECT_MAX.as_secs()
                ),
            }
        }
        self.node.shutdown();
        let failed = |why: String| StackError::Start {
            node: self.name.clone(),
            role: self.role.as_str(),
            why,
        };
        match self.served {
            Served::Oss { service } => service
                .shutdown()
                .await
                .map_err(|e| failed(format!("stop cleanly: {e}")))?,
            Served::Fyod(f) => f.stop().await,
            Served::Mds(_) | Served::Nothing => {}
        }
        Ok(())
    }
}

/// The longest a stopping fyod waits for its storage servers to commit and forget it.
const FYOD_DISCONNECT_MAX: std::time::Duration = std::time::Duration::from_secs(10);

/// The share of this process's open-file limit the targets' object files may use together;
/// the rest is for journals, directories, sockets and the benchmarks' own files.
const OBJECT_FILES_SHARE: u64 = 2;

/// Object files one target keeps open, when `targets` targets may share this process (every
/// target of an embedded stack does): the storage server's default, or less, so that two
/// descriptors per open object over every target stay within half the open-file limit. A
/// stack of 672 targets under a limit of 20,000 keeps 7 open per target; the others are
/// reopened when used.
fn open_objects_per_target(targets: usize) -> usize {
    let soft = super::open_files::open_file_limit().unwrap_or(1024);
    let budget = soft / OBJECT_FILES_SHARE / 2 / targets.max(1) as u64;
    (budget as usize).clamp(
        1,
        iopath_storage_server::ost::config::OPEN_OBJECTS_MAX_DEFAULT,
    )
}

/// Peers beyond the stack's own nodes that a node makes room for: guests (`iopath mount`, a
/// benchmark's tasks on an attached stack) join as client nodes of their own.
const GUEST_PEERS_MAX: usize = 1024;

/// The most peers one node of `stack` may talk to: every other node of it, and the guests.
fn peers_of(stack: &Stack) -> usize {
    stack.nodes.len() + GUEST_PEERS_MAX
}

/// `limits` for a node of a stack of `peers` possible peers whose modeled time runs
/// `time_scale` times slower than the host's.
///
/// - The tables kept per peer (credit gates, saved replies, TCP connections) hold every node
///   of the stack: a storage server pulls from each of thousands of compute nodes, and a
///   peer refused a place would only time out.
/// - The router checker pings and judges a router silent in modeled time, as every other
///   pace there is kept (else a ping queued behind a miniature's modeled bulk would mark a
///   busy router down), but never more slowly than LNet's own defaults: a ping a minute, a
///   router dead after three.
fn for_the_stack(limits: &Limits, time_scale: u32, peers: usize) -> Limits {
    let peers = u32::try_from(peers).unwrap_or(u32::MAX);
    const PING_INTERVAL_MAX: std::time::Duration = std::time::Duration::from_secs(60);
    const DEAD_TIMEOUT_MAX: std::time::Duration = std::time::Duration::from_secs(180);
    let stretch =
        |d: std::time::Duration, most: std::time::Duration| (d * time_scale).min(most.max(d));
    Limits {
        router_ping_interval: stretch(limits.router_ping_interval, PING_INTERVAL_MAX),
        router_dead_timeout: stretch(limits.router_dead_timeout, DEAD_TIMEOUT_MAX),
        peers_max: limits.peers_max.max(peers),
        reply_clients_max: limits.reply_clients_max.max(peers),
        connections_max: limits.connections_max.max(peers),
        ..limits.clone()
    }
}

/// Settings a node starts with beyond its stack file's.
#[derive(Debug, Clone, Default)]
pub struct NodeTuning {
    /// The fabric's limits (RPC timeouts, credits, ...).
    pub limits: Limits,
    /// A fault hook on everything the node sends (tests of drops, delays and corruption).
    pub fault: Option<Arc<dyn FaultHook>>,
    /// A fyod's bounds and how many compute nodes it takes, if not the defaults.
    pub fyod: Option<FyodTuning>,
    /// The largest object an OSS's targets hold, if not the default (tests of a target that
    /// cannot take more of a file).
    pub object_size_max_bytes: Option<u64>,
}

/// Starts what `node` serves.
async fn start_role(
    stack: &Stack,
    index: usize,
    node: &Node,
    tree: &ParamTree,
    storage: &Path,
    tuning: &NodeTuning,
) -> Result<Served, String> {
    let spec = &stack.nodes[index];
    match spec.role {
        Role::Client(_) | Role::Router(_) => Ok(Served::Nothing),
        Role::Mds => {
            let targets = stack
                .targets()
                .into_iter()
                .enumerate()
                .map(|(global, (oss, _))| MdsTarget {
                    index: global as u32,
                    nid: stack.primary_nid(oss),
                })
                .collect();
            let mut config = MdsConfig::new(storage.to_path_buf(), targets);
            config.fsname = stack.fsname.clone();
            config.default_stripe = StripeRequest {
                stripe_size_bytes: stack.layout.stripe_size_bytes,
                stripe_count: stack.layout.stripe_count,
                stripe_offset: stack.layout.stripe_offset,
            };
            let service = MdsService::start(node, config)
                .await
                .map_err(|e| format!("open the namespace in {}: {e}", storage.display()))?;
            // `lctl dl` on the MDS: its one metadata target.
            iopath_admin::register_devices(
                tree,
                &[iopath_admin::Device {
                    kind: "mdt",
                    name: stack.fsname.mdt(0).to_string(),
                }],
            )
            .map_err(|e| format!("register its parameters: {e}"))?;
            Ok(Served::Mds(service))
        }
        Role::Oss(oss) => {
            std::fs::create_dir_all(storage)
                .map_err(|e| format!("create {}: {e}", storage.display()))?;
            let mut template = OstConfig::new(0, storage);
            template.sync_journal = oss.sync_journal;
            template.commit_interval_ms = oss.commit_interval_ms;
            template.open_objects_max = open_objects_per_target(stack.targets().len());
            if let Some(max) = tuning.object_size_max_bytes {
                template.object_size_max_bytes = max;
            }
            let targets = OssConfig {
                root: storage.to_path_buf(),
                targets: stack.target_indices(index),
                template,
                engine: EngineConfig::default(),
                disk_model: stack.disk_model(index),
                external_journal_dir: None,
                fsname: stack.fsname.clone(),
            };
            let service = OssService::open(
                node,
                targets,
                ServiceConfig {
                    recovery_window: std::time::Duration::from_millis(oss.recovery_window_ms),
                    // Every compute node may write here (a striped file touches every
                    // target), besides the fyods and the guests.
                    clients_max: ServiceConfig::default().clients_max.max(peers_of(stack)),
                    ..ServiceConfig::default()
                },
            )
            .await
            .map_err(|e| format!("serve the targets in {}: {e}", storage.display()))?;
            let targets = Arc::clone(service.oss());
            iopath_storage_server::service::params::register(&targets, tree)
                .map_err(|e| format!("register its parameters: {e}"))?;
            Ok(Served::Oss { service })
        }
        Role::Fyod(spec) => Ok(Served::Fyod(
            fyod::start(stack, index, node, tree, spec, tuning.fyod.as_ref()).await?,
        )),
    }
}
