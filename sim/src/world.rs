//! The simulated machine: its networks, routers, storage servers on simulated disks, the
//! metadata server on its own simulated disk, fyods, and client nodes; every server and
//! router can crash and start again.
//!
//! ```text
//! direct:  client 100@mem0 ... ──────────────────── OSS 10@mem0, 11@mem0, MDS 5@mem0
//!          fyod client 120@mem0 ── fyod 20@mem0 ──┘
//! routed:  client 100@mem0 ... ── router 1, 2 ──── OSS 10@mem1, 11@mem1, MDS 5@mem1
//!          fyod client 120@mem0 ── fyod 20@mem0 ──┘
//!                                 (@mem0 and @mem1)
//! ```
//!
//! A fyod sits on the compute network beside its clients, as a service node does, and
//! reaches the servers as they do; in PFS mode the storage servers pull from and push into
//! the fyod's clients themselves.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use iopath_fabric::fault::{FaultHook, SplitMix64};
use iopath_fabric::router::RouterConfig;
use iopath_fabric::routing::RouteSpec;
use iopath_fabric::{FabricError, Interface, Limits, MemNetwork, Nid, Node, NodeConfig, Service};
use iopath_forwarder::{FileSystem, FyodConfig, FyodService};
use iopath_mds::store::StoreDisk;
use iopath_mds::store::simulated::SimulatedDisk as SimulatedMdsDisk;
use iopath_mds::{MDS_PORTAL, MdsConfig, MdsLimits, MdsService, MdsTarget, StripeRequest};
use iopath_storage_server::engine::DiskEngine;
use iopath_storage_server::engine::simulated::{CrashOutcome, SimulatedDisk};
use iopath_storage_server::ost::{OssConfig, OstConfig};
use iopath_storage_server::service::{OssService, ServiceConfig};

use crate::SimError;
use crate::executions::{Counted, CountedService, ExecutionLog, Role};

/// The first router's node number.
pub const FIRST_ROUTER: u32 = 1;
/// The metadata server's node number.
pub const MDS_NODE: u32 = 5;
/// The first storage server's node number.
pub const FIRST_SERVER: u32 = 10;
/// The first fyod's node number.
pub const FIRST_FYOD: u32 = 20;
/// The first client's node number (and client id).
pub const FIRST_CLIENT: u32 = 100;
/// The first fyod client's node number (and client id at its fyod).
pub const FIRST_FYOD_CLIENT: u32 = 120;

/// How long a restart keeps trying for its address, which the in-memory network frees once
/// every task of the crashed node has let go of it.
const RESTART_WAIT: Duration = Duration::from_secs(30);

/// Wraps each simulated server's engine (a planted bug, in the simulation's own tests).
pub type EngineWrap = fn(Arc<dyn DiskEngine>) -> Arc<dyn DiskEngine>;

/// Wraps the metadata server's disk (a planted bug, in the simulation's own tests).
pub type MdsDiskWrap = fn(Arc<dyn StoreDisk>) -> Arc<dyn StoreDisk>;

/// How the world is put together.
#[derive(Debug, Clone)]
pub struct WorldConfig {
    /// Clients on the compute network.
    pub clients: u32,
    /// Storage servers.
    pub servers: u32,
    /// Targets on each server.
    pub targets_per_server: u32,
    /// Routers between the compute and storage networks; 0 puts everyone on one network.
    pub routers: u32,
    /// Per server: commit every write before its reply.
    pub sync_journal: Vec<bool>,
    /// Async journals: the longest a write waits for its commit to start.
    pub commit_interval_ms: u64,
    /// How long a restarted server waits for its clients to replay.
    pub recovery_window: Duration,
    /// Every node's limits.
    pub limits: Limits,
    /// A planted bug around each server's engine.
    pub engine_wrap: Option<EngineWrap>,
    /// A planted bug around the metadata server's disk.
    pub mds_disk_wrap: Option<MdsDiskWrap>,
    /// Whether a metadata server runs.
    pub mds: bool,
    /// The metadata server's log records between snapshots (small, so runs cross compaction).
    pub mds_snapshot_every_records: u64,
    /// Fyods (they need the metadata server).
    pub fyods: u32,
    /// How the fyods store files.
    pub fyod_mode: FileSystem,
}

/// The metadata server: its disk outlives its crashes.
#[derive(Debug)]
struct Mds {
    nid: Nid,
    dir: PathBuf,
    disk: Arc<SimulatedMdsDisk>,
    life: u32,
    running: Option<(Node, Arc<MdsService>)>,
}

/// A fyod: it keeps nothing across a crash.
#[derive(Debug)]
struct Fyod {
    nid: Nid,
    life: u32,
    running: Option<(Node, Arc<FyodService>)>,
}

/// One storage server: its disk outlives its crashes.
#[derive(Debug)]
struct Server {
    nid: Nid,
    root: PathBuf,
    disk: Arc<SimulatedDisk>,
    sync_journal: bool,
    targets: Vec<u32>,
    life: u32,
    running: Option<(Node, Arc<OssService>)>,
}

/// Every node of the simulated machine.
#[derive(Debug)]
pub struct World {
    config: WorldConfig,
    compute: Arc<MemNetwork>,
    storage: Arc<MemNetwork>,
    faults: Arc<dyn FaultHook>,
    executions: Arc<ExecutionLog>,
    servers: Vec<Server>,
    routers: Vec<Option<Node>>,
    mds: Option<Mds>,
    fyods: Vec<Fyod>,
    /// Holds the servers' files; removed with the world.
    _dir: tempfile::TempDir,
}

impl World {
    /// Starts the routers and the storage servers (clients start with [`World::client_node`]).
    pub async fn start(
        config: WorldConfig,
        faults: Arc<dyn FaultHook>,
        executions: Arc<ExecutionLog>,
    ) -> Result<World, SimError> {
        let dir = tempfile::Builder::new()
            .prefix("iopath-sim")
            .tempdir()
            .map_err(|e| SimError::Setup(format!("make the servers' directory: {e}")))?;
        let compute = MemNetwork::new();
        let storage = if config.routers == 0 {
            Arc::clone(&compute)
        } else {
            MemNetwork::new()
        };
        let counts = vec![config.targets_per_server; config.servers as usize];
        let servers = (0..config.servers)
            .map(|s| Server {
                nid: Nid::mem(FIRST_SERVER + s, storage_net(&config)),
                root: dir.path().join(format!("oss{s}")),
                disk: SimulatedDisk::new(),
                sync_journal: config
                    .sync_journal
                    .get(s as usize)
                    .copied()
                    .unwrap_or(false),
                // Targets are dealt out in turn, as every stack deals them.
                targets: (0..config.targets_per_server)
                    .filter_map(|t| iopath_layout::dealt_index(&counts, s as usize, t))
                    .collect(),
                life: 0,
                running: None,
            })
            .collect();
        let mds = config.mds.then(|| Mds {
            nid: Nid::mem(MDS_NODE, storage_net(&config)),
            dir: dir.path().join("mds"),
            disk: SimulatedMdsDisk::new(),
            life: 0,
            running: None,
        });
        let fyods = (0..config.fyods)
            .map(|f| Fyod {
                nid: Nid::mem(FIRST_FYOD + f, 0),
                life: 0,
                running: None,
            })
            .collect();
        let mut world = World {
            routers: (0..config.routers).map(|_| None).collect(),
            mds,
            fyods,
            config,
            compute,
            storage,
            faults,
            executions,
            servers,
            _dir: dir,
        };
        for r in 0..world.routers.len() {
            world.start_router(r).await?;
        }
        for s in 0..world.servers.len() {
            world.start_server(s).await?;
        }
        if world.mds.is_some() {
            world.start_mds().await?;
        }
        for f in 0..world.fyods.len() {
            world.start_fyod(f).await?;
        }
        Ok(world)
    }

    /// The servers' NIDs.
    pub fn server_nids(&self) -> Vec<Nid> {
        self.servers.iter().map(|s| s.nid).collect()
    }

    /// The targets of every server, by server.
    pub fn targets(&self) -> Vec<Vec<u32>> {
        self.servers.iter().map(|s| s.targets.clone()).collect()
    }

    /// Whether server `s` runs.
    pub fn server_up(&self, s: usize) -> bool {
        self.servers[s].running.is_some()
    }

    /// Whether router `r` runs.
    pub fn router_up(&self, r: usize) -> bool {
        self.routers[r].is_some()
    }

    /// How many routers there are.
    pub fn routers(&self) -> usize {
        self.routers.len()
    }

    /// The metadata server's NID, if there is one.
    pub fn mds_nid(&self) -> Option<Nid> {
        self.mds.as_ref().map(|m| m.nid)
    }

    /// The fyods' NIDs.
    pub fn fyod_nids(&self) -> Vec<Nid> {
        self.fyods.iter().map(|f| f.nid).collect()
    }

    /// A client node numbered `FIRST_CLIENT + c`, routed to the servers.
    pub async fn client_node(&self, c: u32) -> Result<Node, SimError> {
        self.compute_node(FIRST_CLIENT + c).await
    }

    /// A node numbered `number` on the compute network, routed to the servers.
    async fn compute_node(&self, number: u32) -> Result<Node, SimError> {
        let nid = Nid::mem(number, 0);
        let routes = self.routes_to(storage_net(&self.config));
        self.node(vec![self.mem(nid, &self.compute)], routes, None)
            .await
            .map_err(|e| SimError::Setup(format!("start client node {nid}: {e}")))
    }

    /// Fyod client `c`'s node, numbered `FIRST_FYOD_CLIENT + c`. Its calls resend for twice
    /// the storage servers' recovery window: a fyod holds a call while a server it needs
    /// waits out its window, as a real compute node's longer timeouts allow for.
    pub async fn fyod_client_node(&self, c: u32) -> Result<Node, SimError> {
        let nid = Nid::mem(FIRST_FYOD_CLIENT + c, 0);
        let routes = self.routes_to(storage_net(&self.config));
        let limits = &self.config.limits;
        let patience = 2 * self.config.recovery_window.as_millis();
        let limits = Limits {
            rpc_resends_max: (patience / limits.rpc_timeout.as_millis().max(1)) as u32,
            ..limits.clone()
        };
        Node::start(NodeConfig {
            interfaces: vec![self.mem(nid, &self.compute)],
            limits,
            fault: Some(Arc::clone(&self.faults)),
            routes,
            ..NodeConfig::default()
        })
        .await
        .map_err(|e| SimError::Setup(format!("start fyod client node {nid}: {e}")))
    }

    fn mem(&self, nid: Nid, network: &Arc<MemNetwork>) -> Interface {
        Interface::Mem {
            nid,
            network: Arc::clone(network),
        }
    }

    fn routes_to(&self, net: u16) -> Vec<RouteSpec> {
        (0..self.config.routers)
            .map(|r| RouteSpec {
                net: Nid::mem(0, net).net,
                gateway: Nid::mem(FIRST_ROUTER + r, 1 - net),
                hops: 1,
                priority: 0,
            })
            .collect()
    }

    async fn node(
        &self,
        interfaces: Vec<Interface>,
        routes: Vec<RouteSpec>,
        router: Option<RouterConfig>,
    ) -> Result<Node, FabricError> {
        Node::start(NodeConfig {
            interfaces,
            limits: self.config.limits.clone(),
            fault: Some(Arc::clone(&self.faults)),
            routes,
            router,
            ..NodeConfig::default()
        })
        .await
    }

    /// Starts node-building `start` again until the in-memory network has freed the address.
    async fn retrying<T, F, Fut>(what: String, mut start: F) -> Result<T, SimError>
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = Result<T, SimError>>,
    {
        let deadline = tokio::time::Instant::now() + RESTART_WAIT;
        loop {
            match start().await {
                Ok(value) => return Ok(value),
                Err(error) if tokio::time::Instant::now() >= deadline => {
                    return Err(SimError::Setup(format!("{what}: {error}")));
                }
                Err(_) => tokio::time::sleep(Duration::from_millis(50)).await,
            }
        }
    }

    /// Starts router `r` (again).
    pub async fn start_router(&mut self, r: usize) -> Result<(), SimError> {
        let n = FIRST_ROUTER + r as u32;
        let interfaces = vec![
            self.mem(Nid::mem(n, 0), &self.compute),
            self.mem(Nid::mem(n, 1), &self.storage),
        ];
        let (world, interfaces) = (&*self, &interfaces);
        let node = World::retrying(format!("start router {n}"), || async move {
            world
                .node(
                    interfaces.clone(),
                    Vec::new(),
                    Some(RouterConfig::default()),
                )
                .await
                .map_err(|e| SimError::Setup(e.to_string()))
        })
        .await?;
        self.routers[r] = Some(node);
        Ok(())
    }

    /// Crashes router `r`: its node leaves both networks, dropping what it held.
    pub fn crash_router(&mut self, r: usize) {
        if let Some(node) = self.routers[r].take() {
            node.shutdown();
        }
    }

    /// Starts server `s` (again) on its disk: its targets recover, and after a crash open a
    /// recovery window.
    pub async fn start_server(&mut self, s: usize) -> Result<(), SimError> {
        let routes = self.routes_to(0);
        let server = &self.servers[s];
        let interfaces = vec![self.mem(server.nid, &self.storage)];
        let mut template = OstConfig::new(0, &server.root);
        template.sync_journal = server.sync_journal;
        template.commit_interval_ms = self.config.commit_interval_ms;
        template.direct_io = false;
        // Small checkpoints, so runs cross the checkpoint path too.
        template.journal_checkpoint_bytes = 64 << 10;
        let targets = OssConfig {
            root: server.root.clone(),
            targets: server.targets.clone(),
            template,
            engine: Default::default(),
            disk_model: None,
            external_journal_dir: None,
            fsname: Default::default(),
        };
        let service_config = ServiceConfig {
            recovery_window: self.config.recovery_window,
            ..ServiceConfig::default()
        };
        let (life, disk, wrap) = (
            server.life,
            Arc::clone(&server.disk),
            self.config.engine_wrap,
        );
        let log = Arc::clone(&self.executions);
        let what = format!("start server {} (life {life})", server.nid);
        let (world, interfaces, routes) = (&*self, &interfaces, &routes);
        let (targets, service_config, log, disk) = (&targets, &service_config, &log, &disk);
        let running = World::retrying(what, || async move {
            let node = world
                .node(interfaces.clone(), routes.clone(), None)
                .await
                .map_err(|e| SimError::Setup(e.to_string()))?;
            let engine = disk.engine();
            let engine = wrap.map_or(Arc::clone(&engine), |wrap| wrap(engine));
            let log = Arc::clone(log);
            let front = move |inner| {
                Arc::new(Counted {
                    inner,
                    log,
                    server: s,
                    life,
                }) as Arc<dyn Service>
            };
            match OssService::open_on_engine(
                &node,
                targets.clone(),
                engine,
                service_config.clone(),
                front,
            )
            .await
            {
                Ok(service) => Ok((node, service)),
                Err(error) => {
                    node.shutdown();
                    Err(SimError::Setup(error.to_string()))
                }
            }
        })
        .await?;
        self.servers[s].running = Some(running);
        Ok(())
    }

    /// Crashes server `s`: its targets stop committing, its node leaves the network, and its
    /// disk keeps (or tears, or drops) what was not synced, as `rng` decides.
    pub fn crash_server(
        &mut self,
        s: usize,
        rng: &mut SplitMix64,
    ) -> Result<CrashOutcome, SimError> {
        let server = &mut self.servers[s];
        let Some((node, service)) = server.running.take() else {
            return Ok(CrashOutcome::default());
        };
        service.crash();
        node.shutdown();
        server.life += 1;
        server
            .disk
            .crash(rng)
            .map_err(|e| SimError::Setup(format!("crash server {}'s disk: {e}", server.nid)))
    }

    /// Starts the metadata server (again) on its disk: its store replays its log, and answers
    /// resent changes from the replies it logged with them.
    pub async fn start_mds(&mut self) -> Result<(), SimError> {
        let Some(mds) = &self.mds else {
            return Ok(());
        };
        let routes = self.routes_to(0);
        let interfaces = vec![self.mem(mds.nid, &self.storage)];
        let targets = self
            .servers
            .iter()
            .flat_map(|s| {
                s.targets.iter().map(|t| MdsTarget {
                    index: *t,
                    nid: s.nid,
                })
            })
            .collect();
        let mut config = MdsConfig::new(&mds.dir, targets);
        config.default_stripe = StripeRequest {
            stripe_size_bytes: iopath_mds::layout::STRIPE_SIZE_UNIT_BYTES,
            stripe_count: 1,
            stripe_offset: iopath_mds::layout::STRIPE_OFFSET_ANY,
        };
        config.limits = MdsLimits {
            snapshot_every_records: self.config.mds_snapshot_every_records,
            ..MdsLimits::default()
        };
        config.disk = mds.disk.handle();
        if let Some(wrap) = self.config.mds_disk_wrap {
            config.disk = wrap(config.disk);
        }
        let life = mds.life;
        let what = format!("start the metadata server {} (life {life})", mds.nid);
        let log = Arc::clone(&self.executions);
        let (world, interfaces, routes, config, log) =
            (&*self, &interfaces, &routes, &config, &log);
        let running = World::retrying(what, || async move {
            let node = world
                .node(interfaces.clone(), routes.clone(), None)
                .await
                .map_err(|e| SimError::Setup(e.to_string()))?;
            let started = async {
                let service = Arc::new(MdsService::open(config.clone()).await?);
                let front = Arc::new(CountedService {
                    inner: Arc::clone(&service) as Arc<dyn Service>,
                    log: Arc::clone(log),
                    role: Role::Mds,
                    server: 0,
                    life,
                });
                node.register_service(MDS_PORTAL, front)?;
                Ok::<_, iopath_mds::MdsError>(service)
            };
            match started.await {
                Ok(service) => Ok((node, service)),
                Err(error) => {
                    node.shutdown();
                    Err(SimError::Setup(error.to_string()))
                }
            }
        })
        .await?;
        if let Some(mds) = &mut self.mds {
            mds.running = Some(running);
        }
        Ok(())
    }

    /// Crashes the metadata server: its node leaves the network, and its disk keeps (or
    /// tears, or drops) what was not synced, as `rng` decides.
    pub fn crash_mds(
        &mut self,
        rng: &mut SplitMix64,
    ) -> Result<iopath_mds::store::simulated::CrashOutcome, SimError> {
        let Some(mds) = &mut self.mds else {
            return Ok(Default::default());
        };
        let Some((node, _service)) = mds.running.take() else {
            return Ok(Default::default());
        };
        node.shutdown();
        mds.life += 1;
        mds.disk
            .crash(rng)
            .map_err(|e| SimError::Setup(format!("crash the metadata server's disk: {e}")))
    }

    /// Starts fyod `f` (again): it knows no compute node and no handle; its storage
    /// connections, made again at first use, replay nothing.
    pub async fn start_fyod(&mut self, f: usize) -> Result<(), SimError> {
        let Some(mds) = self.mds_nid() else {
            return Err(SimError::Setup("a fyod needs the metadata server".into()));
        };
        let routes = self.routes_to(storage_net(&self.config));
        let fyod = &self.fyods[f];
        let interfaces = vec![self.mem(fyod.nid, &self.compute)];
        let config = FyodConfig::new(mds, self.config.fyod_mode);
        let life = fyod.life;
        let what = format!("start fyod {} (life {life})", fyod.nid);
        let log = Arc::clone(&self.executions);
        let (world, interfaces, routes, config, log) =
            (&*self, &interfaces, &routes, &config, &log);
        let running = World::retrying(what, || async move {
            let node = world
                .node(interfaces.clone(), routes.clone(), None)
                .await
                .map_err(|e| SimError::Setup(e.to_string()))?;
            let front = |inner: Arc<FyodService>| {
                Arc::new(CountedService {
                    inner,
                    log: Arc::clone(log),
                    role: Role::Fyod,
                    server: f,
                    life,
                }) as Arc<dyn Service>
            };
            match FyodService::start_behind(&node, config.clone(), front).await {
                Ok(service) => Ok((node, service)),
                Err(error) => {
                    node.shutdown();
                    Err(SimError::Setup(error.to_string()))
                }
            }
        })
        .await?;
        self.fyods[f].running = Some(running);
        Ok(())
    }

    /// Crashes fyod `f`: its node leaves the network, and with it every handle, every
    /// write-behind block and every write it kept for replay.
    pub fn crash_fyod(&mut self, f: usize) {
        let fyod = &mut self.fyods[f];
        if let Some((node, _service)) = fyod.running.take() {
            node.shutdown();
            fyod.life += 1;
        }
    }

    /// Stops every node.
    pub fn shutdown(&mut self) {
        for server in &mut self.servers {
            if let Some((node, service)) = server.running.take() {
                service.crash();
                node.shutdown();
            }
        }
        for router in self.routers.iter_mut().filter_map(Option::take) {
            router.shutdown();
        }
        if let Some((node, _)) = self.mds.as_mut().and_then(|m| m.running.take()) {
            node.shutdown();
        }
        for fyod in &mut self.fyods {
            if let Some((node, _)) = fyod.running.take() {
                node.shutdown();
            }
        }
    }
}

/// The network the servers are on: the compute network itself when there are no routers.
fn storage_net(config: &WorldConfig) -> u16 {
    if config.routers == 0 { 0 } else { 1 }
}
