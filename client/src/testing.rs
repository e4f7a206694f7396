//! For tests and examples: a whole file system in one process — a metadata service, storage
//! servers with real targets on a temporary directory, and as many clients as asked for, all
//! on one in-memory network — and the means to crash and restart a storage server under
//! them.
//!
//! ```text
//! client 1000@mem0 ─┐                 (fyod 20@mem0, 21@mem0, ... when asked for)
//! client 1001@mem0 ─┼── MDS 1@mem0
//!       ...         ├── OSS 10@mem0  (OST0000, OST0002, ...)
//!                   └── OSS 11@mem0  (OST0001, OST0003, ...)
//! ```
//!
//! Targets are numbered across servers as stack files number them: the servers take turns,
//! so OST0000 is the first server's target 0, OST0001 the second server's target 0, and so
//! on. Nothing here is modeled: the bytes reach files under the temporary directory through
//! the storage server's real engine and journal.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iopath_fabric::{Interface, Limits, MemNetwork, Nid, Node, NodeConfig};
use iopath_forwarder::{FileSystem, FyodConfig, FyodService};
use iopath_mds::{MdsConfig, MdsService, MdsTarget};
use iopath_storage_server::engine::EngineConfig;
use iopath_storage_server::ost::{OssConfig, OstConfig};
use iopath_storage_server::service::{OssService, ServiceConfig};

use crate::client::Client;
use crate::config::ClientConfig;
use crate::error::ClientError;

/// The metadata service's node number on the in-memory network.
pub const MDS_NODE: u32 = 1;
/// The first storage server's node number (the others follow).
pub const FIRST_OSS_NODE: u32 = 10;
/// The first fyod's node number (the others follow).
pub const FIRST_FYOD_NODE: u32 = 20;
/// The first client's node number (the others follow).
pub const FIRST_CLIENT_NODE: u32 = 1000;

/// What to start.
#[derive(Debug, Clone)]
pub struct TestStackConfig {
    /// Storage servers.
    pub oss_count: u32,
    /// Targets on each.
    pub targets_per_oss: u32,
    /// Commit each write before replying (`sync_journal=1`); async by default, as Lustre
    /// since 1.8 — acknowledged writes are then kept by clients until committed.
    pub sync_journal: bool,
    /// Async mode: longest a write waits before its commit starts.
    pub commit_interval_ms: u64,
    /// How long a restarted server waits for known clients to replay.
    pub recovery_window: Duration,
    /// Limits of every node (clients included).
    pub limits: Limits,
    /// fyods to start (none by default: clients are direct-attached).
    pub fyods: u32,
    /// How the fyods store files.
    pub fyod_file_system: FileSystem,
}

impl Default for TestStackConfig {
    /// Two servers with two targets each, async journals committed at least every second.
    fn default() -> Self {
        TestStackConfig {
            oss_count: 2,
            targets_per_oss: 2,
            sync_journal: false,
            commit_interval_ms: 1000,
            recovery_window: Duration::from_secs(30),
            limits: Limits::default(),
            fyods: 0,
            fyod_file_system: FileSystem::Pfs,
        }
    }
}

/// One storage server of the stack.
#[derive(Debug)]
struct OssNode {
    nid: Nid,
    root: PathBuf,
    /// `None` while crashed.
    running: Option<(Node, Arc<OssService>)>,
}

/// A running in-process stack (see the module documentation). Dropping it stops nothing
/// explicitly: the nodes go with the runtime, the directory with the value.
#[derive(Debug)]
pub struct TestStack {
    config: TestStackConfig,
    network: Arc<MemNetwork>,
    dir: tempfile::TempDir,
    mds_node: Node,
    _mds: Arc<MdsService>,
    oss: Mutex<Vec<OssNode>>,
    fyods: Vec<(Node, Arc<FyodService>)>,
    next_client: AtomicU32,
}

impl TestStack {
    /// Starts the metadata service and the storage servers on a new temporary directory.
    pub async fn start(config: TestStackConfig) -> Result<TestStack, ClientError> {
        if config.oss_count == 0 || config.targets_per_oss == 0 {
            return Err(setup(
                "configuration",
                "a stack needs at least one server with one target",
            ));
        }
        let network = MemNetwork::new();
        let dir = tempfile::tempdir().map_err(|e| setup("temporary directory", e))?;
        let mut oss = Vec::new();
        for i in 0..config.oss_count {
            let nid = Nid::mem(FIRST_OSS_NODE + i, 0);
            let root = dir.path().join(format!("oss{i}"));
            let running = start_oss(&network, &config, i, nid, &root).await?;
            oss.push(OssNode {
                nid,
                root,
                running: Some(running),
            });
        }
        // Servers take turns: OST(local * servers + server) is server's target `local`.
        let mut targets = Vec::new();
        for local in 0..config.targets_per_oss {
            for (server, node) in oss.iter().enumerate() {
                targets.push(MdsTarget {
                    index: local * config.oss_count + server as u32,
                    nid: node.nid,
                });
            }
        }
        let mds_node = mem_node(&network, Nid::mem(MDS_NODE, 0), &config.limits).await?;
        let mds = MdsService::start(&mds_node, MdsConfig::new(dir.path().join("mds"), targets))
            .await
            .map_err(|e| setup("start the metadata service", e))?;
        // The first fyod keeps the MUNIX tokens for all of them.
        let mut fyods = Vec::new();
        for i in 0..config.fyods {
            let nid = Nid::mem(FIRST_FYOD_NODE + i, 0);
            let node = mem_node(&network, nid, &config.limits).await?;
            let fyod_config = FyodConfig {
                token_home: Some(Nid::mem(FIRST_FYOD_NODE, 0)),
                ..FyodConfig::new(mds_node.nid(), config.fyod_file_system)
            };
            let service = FyodService::start(&node, fyod_config)
                .await
                .map_err(|e| setup("start a fyod", e))?;
            fyods.push((node, service));
        }
        Ok(TestStack {
            config,
            network,
            dir,
            mds_node,
            _mds: mds,
            oss: Mutex::new(oss),
            fyods,
            next_client: AtomicU32::new(0),
        })
    }

    /// The metadata service's NID.
    pub fn mds_nid(&self) -> Nid {
        self.mds_node.nid()
    }

    /// The storage servers' NIDs.
    pub fn oss_nids(&self) -> Vec<Nid> {
        self.servers().iter().map(|o| o.nid).collect()
    }

    /// The fyods' NIDs.
    pub fn fyod_nids(&self) -> Vec<Nid> {
        self.fyods.iter().map(|(node, _)| node.nid()).collect()
    }

    /// Fyod `index`'s service (its counters).
    pub fn fyod(&self, index: usize) -> Option<&Arc<FyodService>> {
        self.fyods.get(index).map(|(_, service)| service)
    }

    /// Server `index`'s service, while it runs (its targets, their recovery reports).
    pub fn oss_service(&self, index: usize) -> Option<Arc<OssService>> {
        self.servers()
            .get(index)
            .and_then(|s| s.running.as_ref())
            .map(|(_, service)| Arc::clone(service))
    }

    /// Targets in all.
    pub fn targets_count(&self) -> u32 {
        self.config.oss_count * self.config.targets_per_oss
    }

    /// The network every node is on.
    pub fn network(&self) -> &Arc<MemNetwork> {
        &self.network
    }

    /// The directory holding every server's storage.
    pub fn dir(&self) -> &Path {
        self.dir.path()
    }

    /// A fabric node for a new client (numbered from [`FIRST_CLIENT_NODE`]) and the client id
    /// that goes with it (the node's number).
    pub async fn client_node(&self) -> Result<(Node, u64), ClientError> {
        let n = FIRST_CLIENT_NODE + self.next_client.fetch_add(1, Ordering::Relaxed);
        let node = mem_node(&self.network, Nid::mem(n, 0), &self.config.limits).await?;
        Ok((node, u64::from(n)))
    }

    /// A new client on a node of its own.
    pub async fn client(&self) -> Result<Client, ClientError> {
        let (node, id) = self.client_node().await?;
        Client::connect(ClientConfig::new(node, self.mds_nid(), id)).await
    }

    /// A new client on a node of its own whose reads and writes go through fyod `index`.
    pub async fn client_through_fyod(&self, index: usize) -> Result<Client, ClientError> {
        let fyod = self
            .fyods
            .get(index)
            .map(|(node, _)| node.nid())
            .ok_or_else(|| setup("client", format!("no fyod {index}")))?;
        let (node, id) = self.client_node().await?;
        Client::connect(ClientConfig {
            forwarder: Some(fyod),
            ..ClientConfig::new(node, self.mds_nid(), id)
        })
        .await
    }

    /// Crashes server `index`: its targets stop without committing anything more (what the
    /// disk sees is a crash) and its node leaves the network. Acknowledged writes not yet
    /// committed survive only in the clients that keep them.
    pub fn crash_oss(&self, index: usize) -> Result<(), ClientError> {
        let mut servers = self.servers();
        let server = servers
            .get_mut(index)
            .ok_or_else(|| setup("crash", format!("no server {index}")))?;
        let (node, service) = server
            .running
            .take()
            .ok_or_else(|| setup("crash", format!("server {index} is not running")))?;
        service.crash();
        node.shutdown();
        Ok(())
    }

    /// Starts server `index` again on its directory and NID: its targets recover from their
    /// journals and open a recovery window for the clients they knew.
    pub async fn start_oss_again(&self, index: usize) -> Result<(), ClientError> {
        let (nid, root) = {
            let servers = self.servers();
            let server = servers
                .get(index)
                .ok_or_else(|| setup("restart", format!("no server {index}")))?;
            if server.running.is_some() {
                return Err(setup("restart", format!("server {index} is running")));
            }
            (server.nid, server.root.clone())
        };
        let running = start_oss(&self.network, &self.config, index as u32, nid, &root).await?;
        self.servers()[index].running = Some(running);
        Ok(())
    }

    /// [`TestStack::crash_oss`] then [`TestStack::start_oss_again`].
    pub async fn restart_oss(&self, index: usize) -> Result<(), ClientError> {
        self.crash_oss(index)?;
        self.start_oss_again(index).await
    }

    fn servers(&self) -> std::sync::MutexGuard<'_, Vec<OssNode>> {
        self.oss.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Serves server `server`'s targets: in turn with the other servers, as stacks deal them
/// (`OST0000` on server 0, `OST0001` on server 1, ...).
async fn start_oss(
    network: &Arc<MemNetwork>,
    config: &TestStackConfig,
    server: u32,
    nid: Nid,
    root: &Path,
) -> Result<(Node, Arc<OssService>), ClientError> {
    let mut template = OstConfig::new(0, root);
    template.sync_journal = config.sync_journal;
    template.commit_interval_ms = config.commit_interval_ms;
    let targets = OssConfig {
        root: root.to_path_buf(),
        targets: (0..config.targets_per_oss)
            .map(|local| local * config.oss_count + server)
            .collect(),
        template,
        engine: EngineConfig::default(),
        disk_model: None,
        external_journal_dir: None,
    };
    let node = mem_node(network, nid, &config.limits).await?;
    let service_config = ServiceConfig {
        recovery_window: config.recovery_window,
        ..ServiceConfig::default()
    };
    let service = OssService::open(&node, targets, service_config)
        .await
        .map_err(|e| setup("start the storage server", e))?;
    Ok((node, service))
}

async fn mem_node(
    network: &Arc<MemNetwork>,
    nid: Nid,
    limits: &Limits,
) -> Result<Node, ClientError> {
    Node::start(NodeConfig {
        interfaces: vec![Interface::Mem {
            nid,
            network: Arc::clone(network),
        }],
        limits: limits.clone(),
        ..NodeConfig::default()
    })
    .await
    .map_err(|e| setup("start a node", e))
}

fn setup(what: &'static str, why: impl std::fmt::Display) -> ClientError {
    ClientError::Setup {
        what,
        why: why.to_string(),
    }
}
