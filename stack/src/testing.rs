//! For tests and examples: a whole file system in one process — a metadata service, storage
//! servers with real targets on a temporary directory, fyods when asked for, and as many
//! clients as asked for, all on one in-memory network — and the means to crash and restart a
//! storage server under them. It is an [`EmbeddedStack`] of a stack file written from a
//! [`TestStackConfig`]: the same nodes, started the same way, as `iopath up` runs.
//!
//! ```text
//! client 1000@mem0 ─┐                 (fyod 20@mem0, 21@mem0, ... when asked for)
//! client 1001@mem0 ─┼── MDS 1@mem0
//!       ...         ├── OSS 10@mem0  (iopath-OST0000, iopath-OST0002, ...)
//!                   └── OSS 11@mem0  (iopath-OST0001, iopath-OST0003, ...)
//! ```
//!
//! Targets are numbered across servers as every stack numbers them: the servers take turns,
//! so iopath-OST0000 is on the first server, iopath-OST0001 on the second, and so on (the
//! file system's name is [`TestStackConfig::fsname`]). Nothing here is modeled: the bytes
//! reach files under the temporary directory through the storage server's real engine and
//! journal.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::Duration;

use iopath_client::{Client, ClientConfig, ClientError};
use iopath_fabric::fault::FaultHook;
use iopath_fabric::{Interface, Limits, MemNetwork, Nid, Node, NodeConfig};
use iopath_forwarder::limits::CLIENTS_PER_FYOD_DEFAULT;
use iopath_forwarder::{FileSystem, FyodClient, FyodLimits, FyodService};
use iopath_storage_server::service::OssService;
use tokio::sync::Mutex;

use crate::error::StackError;
use crate::runtime::{EmbeddedOptions, EmbeddedStack, FyodTuning, StorageDir};
use crate::schema::file::{FyodModeName, JournalName, NetworkEntry, NodeEntry};
use crate::schema::{RoleName, Stack, StackFile};

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
    /// The fyods' bounds.
    pub fyod_limits: FyodLimits,
    /// The most compute nodes each fyod serves.
    pub clients_per_fyod: u32,
    /// A fault hook per fyod (by index), on everything it sends.
    pub fyod_faults: Vec<Option<Arc<dyn FaultHook>>>,
    /// A fault hook on every storage server, restarts included.
    pub oss_fault: Option<Arc<dyn FaultHook>>,
    /// The file system's name (its targets: `iopath-OST0000`, ...).
    pub fsname: iopath_mds::FsName,
    /// The largest object every target holds, if not the default: a target that cannot take
    /// more of a file (tests of a write that fails part way).
    pub object_size_max_bytes: Option<u64>,
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
            fyod_limits: FyodLimits::default(),
            clients_per_fyod: CLIENTS_PER_FYOD_DEFAULT,
            fyod_faults: Vec::new(),
            oss_fault: None,
            fsname: iopath_mds::FsName::default(),
            object_size_max_bytes: None,
        }
    }
}

impl TestStackConfig {
    /// The stack file this configuration describes.
    pub fn stack_file(&self) -> StackFile {
        let oss = NodeEntry::new("oss", RoleName::Oss)
            .count(self.oss_count)
            .nid("o2ib0", FIRST_OSS_NODE.into())
            .targets(self.targets_per_oss)
            .journal(if self.sync_journal {
                JournalName::Sync
            } else {
                JournalName::Async
            })
            .commit_interval_ms(self.commit_interval_ms)
            .recovery_window_ms(self.recovery_window.as_millis().max(1) as u64);
        let file = StackFile::named("test-stack")
            .description(format!(
                "a test stack: {} storage servers x {} targets, {} fyods, in one process",
                self.oss_count, self.targets_per_oss, self.fyods
            ))
            .fsname(self.fsname.to_string())
            .stripe_size(1 << 20)
            .stripe_count(1)
            .network(NetworkEntry::named("o2ib0"))
            .node(NodeEntry::new("mds", RoleName::Mds).nid("o2ib0", MDS_NODE.into()))
            .node(oss);
        if self.fyods == 0 {
            return file;
        }
        file.node(
            NodeEntry::new("fyod", RoleName::Fyod)
                .count(self.fyods)
                .nid("o2ib0", FIRST_FYOD_NODE.into())
                .fyod_mode(match self.fyod_file_system {
                    FileSystem::Pfs => FyodModeName::Pfs,
                    FileSystem::Ufs => FyodModeName::Ufs,
                }),
        )
    }
}

/// A running in-process stack (see the module documentation). Dropping it stops nothing
/// explicitly: the nodes go with the runtime, the directory with the value.
#[derive(Debug)]
pub struct TestStack {
    config: TestStackConfig,
    stack: Stack,
    network: Arc<MemNetwork>,
    dir: PathBuf,
    running: Mutex<EmbeddedStack>,
    next_client: AtomicU32,
}

impl TestStack {
    /// Starts the metadata service, the storage servers and the fyods on a new temporary
    /// directory.
    pub async fn start(config: TestStackConfig) -> Result<TestStack, StackError> {
        let stack = config.stack_file().check("a test stack")?;
        let storage = StorageDir::temporary("test-stack", None)?;
        let dir = storage.path().to_path_buf();
        let mut faults = std::collections::BTreeMap::new();
        for oss in stack.nodes_of(RoleName::Oss) {
            if let Some(fault) = &config.oss_fault {
                faults.insert(stack.nodes[oss].name.clone(), Arc::clone(fault));
            }
        }
        for (i, fyod) in stack.nodes_of(RoleName::Fyod).into_iter().enumerate() {
            if let Some(Some(fault)) = config.fyod_faults.get(i) {
                faults.insert(stack.nodes[fyod].name.clone(), Arc::clone(fault));
            }
        }
        let options = EmbeddedOptions {
            admin: false,
            admin_secret: None,
            metrics: false,
            limits: config.limits.clone(),
            faults,
            fyod: Some(FyodTuning {
                limits: config.fyod_limits.clone(),
                clients_per_fyod: config.clients_per_fyod,
            }),
            object_size_max_bytes: config.object_size_max_bytes,
        };
        let running = EmbeddedStack::start_with(stack.clone(), storage, options).await?;
        let network = Arc::clone(running.network(0).expect("a test stack has one network"));
        Ok(TestStack {
            config,
            stack,
            network,
            dir,
            running: Mutex::new(running),
            next_client: AtomicU32::new(0),
        })
    }

    /// The stack it runs.
    pub fn stack(&self) -> &Stack {
        &self.stack
    }

    /// The metadata service's NID.
    pub fn mds_nid(&self) -> Nid {
        self.stack.primary_nid(self.stack.mds())
    }

    /// The storage servers' NIDs.
    pub fn oss_nids(&self) -> Vec<Nid> {
        self.nids_of(RoleName::Oss)
    }

    /// The fyods' NIDs.
    pub fn fyod_nids(&self) -> Vec<Nid> {
        self.nids_of(RoleName::Fyod)
    }

    fn nids_of(&self, role: RoleName) -> Vec<Nid> {
        self.stack
            .nodes_of(role)
            .into_iter()
            .map(|i| self.stack.primary_nid(i))
            .collect()
    }

    /// Fyod `index`'s service (for its counters).
    pub async fn fyod(&self, index: usize) -> Option<Arc<FyodService>> {
        let node = *self.stack.nodes_of(RoleName::Fyod).get(index)?;
        let running = self.running.lock().await;
        Some(Arc::clone(running.node(node)?.fyod()?.service()))
    }

    /// Fyod `index`'s fabric node (to take it down, or read its counters).
    pub async fn fyod_node(&self, index: usize) -> Option<Node> {
        let node = *self.stack.nodes_of(RoleName::Fyod).get(index)?;
        let running = self.running.lock().await;
        Some(running.node(node)?.node.clone())
    }

    /// A compute node numbered `number` on the network (NID `number@mem0`), connected to fyod
    /// `fyod` as client `client_id`; and its fabric node.
    pub async fn fyod_client(
        &self,
        fyod: usize,
        number: u32,
        client_id: u64,
    ) -> Result<(FyodClient, Node), StackError> {
        let server = *self
            .fyod_nids()
            .get(fyod)
            .ok_or_else(|| StackError::Process {
                node: format!("fyod{fyod}"),
                why: format!("the test stack has {} fyods", self.config.fyods),
            })?;
        let node = self.node_numbered(number).await?;
        let client = FyodClient::connect(node.clone(), server, client_id)
            .await
            .map_err(|e| StackError::io(format!("connect compute node {number} to {server}"), e))?;
        Ok((client, node))
    }

    /// A fabric node numbered `number` on the stack's network, with the stack's limits.
    pub async fn node_numbered(&self, number: u32) -> Result<Node, StackError> {
        Node::start(NodeConfig {
            interfaces: vec![Interface::Mem {
                nid: Nid::mem(number, 0),
                network: Arc::clone(&self.network),
            }],
            limits: self.config.limits.clone(),
            ..NodeConfig::default()
        })
        .await
        .map_err(|e| StackError::io(format!("start node {number}"), e))
    }

    /// Storage server `index`'s service, while it runs.
    pub async fn oss_service(&self, index: usize) -> Option<Arc<OssService>> {
        let node = *self.stack.nodes_of(RoleName::Oss).get(index)?;
        let running = self.running.lock().await;
        running.node(node)?.oss_service().cloned()
    }

    /// How many targets the file system has.
    pub fn targets_count(&self) -> u32 {
        self.config.oss_count * self.config.targets_per_oss
    }

    /// The in-memory network every node is on.
    pub fn network(&self) -> &Arc<MemNetwork> {
        &self.network
    }

    /// The directory holding every server's storage.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// A fabric node for a new client (numbered from [`FIRST_CLIENT_NODE`]) and the client id
    /// that goes with it (the node's number).
    pub async fn client_node(&self) -> Result<(Node, u64), StackError> {
        let n = FIRST_CLIENT_NODE + self.next_client.fetch_add(1, Ordering::Relaxed);
        Ok((self.node_numbered(n).await?, u64::from(n)))
    }

    /// A new client on a node of its own.
    pub async fn client(&self) -> Result<Client, ClientError> {
        let (node, id) = self.client_node().await.map_err(setup)?;
        Client::connect(ClientConfig::new(node, self.mds_nid(), id)).await
    }

    /// A new client on a node of its own whose reads and writes go through fyod `index`.
    pub async fn client_through_fyod(&self, index: usize) -> Result<Client, ClientError> {
        let fyod = *self
            .fyod_nids()
            .get(index)
            .ok_or_else(|| setup(format!("no fyod {index}")))?;
        let (node, id) = self.client_node().await.map_err(setup)?;
        Client::connect(ClientConfig {
            forwarder: Some(fyod),
            ..ClientConfig::new(node, self.mds_nid(), id)
        })
        .await
    }

    /// Crashes storage server `index`: its targets stop without committing anything more
    /// (what the disk sees is a crash) and its node leaves the network. Acknowledged writes
    /// not yet committed survive only in the clients that keep them.
    pub async fn crash_oss(&self, index: usize) -> Result<(), StackError> {
        let node = self.oss_node(index)?;
        self.running.lock().await.crash_node(node)
    }

    /// Starts storage server `index` again on its directory and NID: its targets recover
    /// from their journals and open a recovery window for the clients they knew.
    pub async fn start_oss_again(&self, index: usize) -> Result<(), StackError> {
        let node = self.oss_node(index)?;
        self.running.lock().await.restart_node(node).await
    }

    /// [`TestStack::crash_oss`] then [`TestStack::start_oss_again`].
    pub async fn restart_oss(&self, index: usize) -> Result<(), StackError> {
        self.crash_oss(index).await?;
        self.start_oss_again(index).await
    }

    /// Crashes fyod `index` (everything it held is gone; its node leaves the network) and
    /// starts it again, with nothing, on its NID.
    pub async fn restart_fyod(&self, index: usize) -> Result<(), StackError> {
        let node = *self
            .stack
            .nodes_of(RoleName::Fyod)
            .get(index)
            .ok_or_else(|| StackError::Process {
                node: format!("fyod{index}"),
                why: format!("the test stack has {} fyods", self.config.fyods),
            })?;
        let mut running = self.running.lock().await;
        running.crash_node(node)?;
        running.restart_node(node).await
    }

    fn oss_node(&self, index: usize) -> Result<usize, StackError> {
        self.stack
            .nodes_of(RoleName::Oss)
            .get(index)
            .copied()
            .ok_or_else(|| StackError::Process {
                node: format!("oss{index}"),
                why: format!(
                    "the test stack has {} storage servers",
                    self.config.oss_count
                ),
            })
    }
}

fn setup(why: impl std::fmt::Display) -> ClientError {
    ClientError::Setup {
        what: "test stack",
        why: why.to_string(),
    }
}

/// For test programs that are their own node processes (a harness of their own, run as
/// `PROGRAM node --stack FILE --name NODE --dir DIR` by the stack's launcher, as `iopath
/// node` is): the node mode, and starting a stack whose server nodes are such processes.
pub mod processes {
    use std::process::ExitCode;

    use iopath_client::Client;

    use crate::runtime::{Launcher, Mode, RunningStack, StorageDir};
    use crate::schema::StackFile;
    use crate::up::NodeProcessConfig;

    /// If this program was started as a node process (its first argument is `node`), runs
    /// that node to its end and returns the exit code; otherwise `None`, and the program
    /// runs its tests.
    pub fn run_node_if_asked() -> Option<ExitCode> {
        if std::env::args().nth(1).as_deref() != Some("node") {
            return None;
        }
        let config = match node_config(std::env::args().skip(2)) {
            Ok(config) => config,
            Err(e) => {
                eprintln!("node: {e}");
                return Some(ExitCode::FAILURE);
            }
        };
        let runtime = tokio::runtime::Runtime::new().expect("a tokio runtime");
        Some(match runtime.block_on(crate::up::run_node(&config)) {
            Ok(()) => ExitCode::SUCCESS,
            Err(e) => {
                eprintln!("node: {e}");
                ExitCode::FAILURE
            }
        })
    }

    /// `--stack FILE --name NODE --dir DIR [--secret-file FILE] [--metrics ADDR]
    /// [--watch-stdin] [--torus-switch NETWORK=ADDR ...]`: the flags `iopath node` takes.
    fn node_config(mut args: impl Iterator<Item = String>) -> Result<NodeProcessConfig, String> {
        let mut flags = std::collections::HashMap::new();
        let mut watch_stdin = false;
        let mut torus_switches = Vec::new();
        // Bounded by the arguments: each pass takes a flag and its value.
        while let Some(flag) = args.next() {
            if flag == "--watch-stdin" {
                watch_stdin = true;
                continue;
            }
            let value = args.next().ok_or(format!("{flag} needs a value"))?;
            if flag == "--torus-switch" {
                torus_switches.push(crate::up::parse_torus_switch(&value)?);
                continue;
            }
            flags.insert(flag, value);
        }
        let mut take = |flag: &str| flags.remove(flag).ok_or(format!("no {flag}"));
        let config = NodeProcessConfig {
            stack: take("--stack")?.into(),
            name: take("--name")?,
            dir: take("--dir")?.into(),
            admin: ([127, 0, 0, 1], 0).into(),
            metrics: flags
                .remove("--metrics")
                .map(|addr| addr.parse().map_err(|e| format!("--metrics {addr}: {e}")))
                .transpose()?,
            secret_file: flags.remove("--secret-file").map(Into::into),
            watch_stdin,
            torus_switches,
        };
        match flags.keys().next() {
            Some(flag) => Err(format!("unknown flag {flag}")),
            None => Ok(config),
        }
    }

    /// This program as the node launcher.
    pub fn launcher() -> Result<Launcher, String> {
        Launcher::this_program().map_err(|e| e.to_string())
    }

    /// Starts `file` with every server node a process of this program.
    pub async fn start(file: &StackFile, what: &str) -> Result<RunningStack, String> {
        let stack = file.check(what).map_err(|e| e.to_string())?;
        let storage = StorageDir::temporary(what, None).map_err(|e| e.to_string())?;
        RunningStack::start(stack, Mode::Processes, storage, Some(&launcher()?))
            .await
            .map_err(|e| e.to_string())
    }

    /// Preset `name` as a value, to start as it is or changed first.
    pub fn preset(name: &str) -> Result<StackFile, String> {
        let preset = crate::preset(name).map_err(|e| e.to_string())?;
        StackFile::parse(preset.text, name).map_err(|e| e.to_string())
    }

    /// spider-mini with commits that wait a minute: what a kill finds uncommitted is what the
    /// clients must replay.
    pub fn commits_only_when_forced() -> Result<StackFile, String> {
        let mut file = preset("spider-mini")?;
        file.node_mut("oss")
            .ok_or("spider-mini has no node oss any more")?
            .commit_interval_ms = Some(60_000);
        Ok(file)
    }

    /// The client library on client node `index` of `running`.
    pub async fn client(running: &RunningStack, index: usize) -> Result<Client, String> {
        let clients = running.clients();
        let node = clients
            .get(index)
            .ok_or_else(|| format!("no client node {index}"))?;
        running.connect(node).await.map_err(|e| e.to_string())
    }
}
