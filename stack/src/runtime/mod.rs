//! Running a stack: one node ([`node`]), every node in this process ([`embedded`]), or a
//! process per server node on loopback TCP ([`processes`]); [`RunningStack`] is either, as
//! the demo and IOR see it.
//!
//! - [`node`]: [`RunningNode`], one node and its role (MDS, OSS, fyod, router, client).
//! - [`fyod`]: the fyod role, on `iopath-forwarder`.
//! - [`embedded`]: [`EmbeddedStack`], in-memory networks, an admin service per node.
//! - [`processes`]: [`ProcessStack`], `iopath node` children, READY lines, clean stops.
//! - [`storage`]: [`StorageDir`], temporary or kept.

pub mod embedded;
pub mod fyod;
pub mod node;
pub mod open_files;
pub mod processes;
pub mod storage;

pub use embedded::{EmbeddedOptions, EmbeddedStack};
pub use fyod::FyodTuning;
pub use node::{NodeTuning, RunningNode, SharedNetworks};
pub use processes::{ChildNode, Launcher, ProcessStack};
pub use storage::StorageDir;

use std::sync::Arc;
use std::time::SystemTime;

use iopath_admin::{AdminError, ParamTree};
use iopath_client::{Client, ClientConfig};
use iopath_fabric::ChecksumKind;
use iopath_ost_client::OscStats;

use crate::error::StackError;
use crate::schema::{Role, RoleName, Stack};

/// How a stack runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Every node in this process, in-memory networks.
    Embedded,
    /// A process per server node, loopback TCP; clients in this process.
    Processes,
    /// Server nodes launched on their hosts (`iopath launch`); clients in this process.
    Attached,
}

impl Mode {
    /// The mode a command's flags ask for: attached to a launched stack (`--attach FILE`), a
    /// process per server node (`--processes`), or every node in this process.
    pub fn of(attach: bool, processes: bool) -> Mode {
        if attach {
            Mode::Attached
        } else if processes {
            Mode::Processes
        } else {
            Mode::Embedded
        }
    }

    /// The mode in words, for output.
    pub fn describe(self) -> &'static str {
        match self {
            Mode::Embedded => "embedded: every node in this process, in-memory networks",
            Mode::Processes => {
                "processes: a process per server node on loopback TCP, clients in this process"
            }
            Mode::Attached => {
                "attached: server nodes launched on their hosts (iopath launch), clients in \
                 this process"
            }
        }
    }

    /// `embedded` or `processes`.
    pub fn name(self) -> &'static str {
        match self {
            Mode::Embedded => "embedded",
            Mode::Processes => "processes",
            Mode::Attached => "attached",
        }
    }
}

/// A server node whose admin service does not answer ([`RunningStack::gone`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GoneNode {
    /// Its name.
    pub name: String,
    /// Its admin service's address.
    pub addr: std::net::SocketAddr,
    /// What asking it gave.
    pub why: String,
}

/// How long [`RunningStack::gone`] waits for each node's admin service.
pub const GONE_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(3);

/// A running stack, whichever way it runs.
#[derive(Debug)]
#[allow(clippy::large_enum_variant)] // one per run, never moved in a loop: its size is moot
pub enum RunningStack {
    /// In this process.
    Embedded(EmbeddedStack),
    /// In node processes, with the client nodes here.
    Processes {
        /// The node processes.
        servers: ProcessStack,
        /// The client nodes, in this process.
        clients: Vec<RunningNode>,
    },
    /// Server nodes running on their hosts, started by `iopath launch`; the client nodes
    /// here.
    Attached {
        /// The stack `iopath launch` wrote: every address a socket, every server node's admin
        /// address.
        stack: Stack,
        /// The client nodes, in this process.
        clients: Vec<RunningNode>,
        /// Where the client nodes keep their state.
        storage: StorageDir,
    },
}

impl RunningStack {
    /// Starts `stack` in `mode` with its state in `storage` (processes are started with
    /// `launcher`, by default this program's `node` subcommand).
    pub async fn start(
        stack: Stack,
        mode: Mode,
        storage: StorageDir,
        launcher: Option<&Launcher>,
    ) -> Result<RunningStack, StackError> {
        match mode {
            Mode::Attached => RunningStack::attach(stack, storage).await,
            Mode::Embedded => Ok(RunningStack::Embedded(
                EmbeddedStack::start(stack, storage, false).await?,
            )),
            Mode::Processes => {
                let default;
                let launcher = match launcher {
                    Some(l) => l,
                    None => {
                        default = Launcher::this_program()?;
                        &default
                    }
                };
                let servers = ProcessStack::start(&stack, storage, launcher).await?;
                match servers.start_clients().await {
                    Ok(clients) => Ok(RunningStack::Processes { servers, clients }),
                    Err(e) => {
                        let _ = servers.stop().await;
                        Err(e)
                    }
                }
            }
        }
    }

    /// Joins a stack `iopath launch` started (the file it wrote): its client nodes start in
    /// this process, on their placed addresses, which must be this host's.
    pub async fn attach(stack: Stack, storage: StorageDir) -> Result<RunningStack, StackError> {
        if !stack.is_tcp() {
            return Err(StackError::BadOption {
                option: "--attach".into(),
                why: format!(
                    "{} gives numbered addresses: attach to the file `iopath launch` wrote",
                    stack.origin
                ),
            });
        }
        if let Some(server) = stack
            .nodes
            .iter()
            .find(|n| n.role.kind() != RoleName::Client && n.admin.is_none())
        {
            return Err(StackError::BadOption {
                option: "--attach".into(),
                why: format!(
                    "{} gives {} no admin address: attach to the file `iopath launch` wrote \
                     once the stack is up",
                    stack.origin, server.name
                ),
            });
        }
        let mut clients = Vec::new();
        for index in stack.nodes_of(RoleName::Client) {
            let spec = &stack.nodes[index];
            let dir = storage.node(&spec.name);
            match RunningNode::start(&stack, index, &SharedNetworks::none(), &dir).await {
                Ok(node) => clients.push(node),
                Err(e) => {
                    for c in clients {
                        let _ = c.stop().await;
                    }
                    let host = spec
                        .host
                        .as_ref()
                        .map_or_else(|| "its host".to_owned(), ToString::to_string);
                    let why = format!(
                        "{e} (it is placed on {host}: attach there; one program attached at a \
                         time holds the stack's client nodes)"
                    );
                    return Err(StackError::Process {
                        node: spec.name.clone(),
                        why,
                    });
                }
            }
        }
        Ok(RunningStack::Attached {
            stack,
            clients,
            storage,
        })
    }

    /// The stack (resolved to loopback sockets in processes mode).
    pub fn stack(&self) -> &Stack {
        match self {
            RunningStack::Embedded(e) => e.stack(),
            RunningStack::Processes { servers, .. } => servers.stack(),
            RunningStack::Attached { stack, .. } => stack,
        }
    }

    /// The admin service of node `index`, where it has one (every node process does; an
    /// embedded stack's nodes only when started with admin services).
    pub fn admin_addr(&self, index: usize) -> Option<std::net::SocketAddr> {
        match self {
            RunningStack::Embedded(e) => e.admin_addr(index),
            RunningStack::Processes { servers, .. } => servers.child(index).map(|c| c.admin),
            RunningStack::Attached { stack, .. } => stack.nodes[index].admin,
        }
    }

    /// The secret the stack's admin services ask of `set_param` and shutdown callers, where
    /// this program knows it: the one it made for its embedded nodes or node processes. An
    /// attached stack's secret stays in the file `iopath launch` wrote beside its stack file;
    /// attaching changes nothing on the servers, so it is not read.
    pub fn admin_secret(&self) -> Option<&iopath_admin::Secret> {
        match self {
            RunningStack::Embedded(e) => e.admin_secret(),
            RunningStack::Processes { servers, .. } => Some(servers.admin_secret()),
            RunningStack::Attached { .. } => None,
        }
    }

    /// Node `index`'s `/metrics`, where it serves one (node processes started with
    /// `--metrics`; an embedded stack's nodes started with [`EmbeddedOptions::metrics`]).
    pub fn metrics_addr(&self, index: usize) -> Option<std::net::SocketAddr> {
        match self {
            RunningStack::Embedded(e) => e.metrics_addr(index),
            RunningStack::Processes { servers, .. } => servers.child(index).and_then(|c| c.metrics),
            RunningStack::Attached { .. } => None,
        }
    }

    /// The server nodes whose admin service does not answer now (within [`GONE_TIMEOUT`]
    /// each, asked together), in stack order: a node process that died, or a launched stack
    /// that was stopped. An embedded stack's nodes live in this process: never gone.
    pub async fn gone(&self) -> Vec<GoneNode> {
        let stack = self.stack();
        let mut asked = tokio::task::JoinSet::new();
        for index in 0..stack.nodes.len() {
            let name = stack.nodes[index].name.clone();
            let Some(addr) = self.admin_addr(index) else {
                continue;
            };
            if stack.nodes[index].role.kind() == RoleName::Client {
                continue;
            }
            asked.spawn(async move {
                let answer = tokio::time::timeout(GONE_TIMEOUT, async {
                    iopath_admin::Client::connect(addr).await?.status().await
                })
                .await;
                let why = match answer {
                    Ok(Ok(_)) => return None,
                    Ok(Err(e)) => e.to_string(),
                    Err(_) => format!("no answer within {} s", GONE_TIMEOUT.as_secs()),
                };
                Some((index, GoneNode { name, addr, why }))
            });
        }
        let mut gone: Vec<(usize, GoneNode)> =
            asked.join_all().await.into_iter().flatten().collect();
        gone.sort_by_key(|(index, _)| *index);
        gone.into_iter().map(|(_, node)| node).collect()
    }

    /// How it runs.
    pub fn mode(&self) -> Mode {
        match self {
            RunningStack::Embedded(_) => Mode::Embedded,
            RunningStack::Processes { .. } => Mode::Processes,
            RunningStack::Attached { .. } => Mode::Attached,
        }
    }

    /// The nodes running in this process: all of them embedded, the clients otherwise.
    pub fn local_nodes(&self) -> Vec<&RunningNode> {
        match self {
            RunningStack::Embedded(e) => e.nodes(),
            RunningStack::Processes { clients, .. } | RunningStack::Attached { clients, .. } => {
                clients.iter().collect()
            }
        }
    }

    /// The client nodes, in stack order.
    pub fn clients(&self) -> Vec<&RunningNode> {
        self.local_nodes()
            .into_iter()
            .filter(|n| n.role == RoleName::Client)
            .collect()
    }

    /// The modeled torus of stack network `index`, where it runs in this process (embedded,
    /// and with `--processes`, whose launcher runs it for every node): its link counters.
    pub fn torus(&self, index: usize) -> Option<&iopath_fabric::torus::TorusNetwork> {
        match self {
            RunningStack::Embedded(e) => e.torus(index),
            RunningStack::Processes { servers, .. } => servers.torus(index),
            RunningStack::Attached { .. } => None,
        }
    }

    /// Where the nodes keep their state.
    pub fn storage(&self) -> &StorageDir {
        match self {
            RunningStack::Embedded(e) => e.storage(),
            RunningStack::Processes { servers, .. } => servers.storage(),
            RunningStack::Attached { storage, .. } => storage,
        }
    }

    /// Connects the client library on client node `node`.
    pub async fn connect(&self, node: &RunningNode) -> Result<Client, StackError> {
        let config = client_config(self.stack(), node);
        let what = format!("connect the client on {} ({})", node.name, node.node.nid());
        Client::connect(config)
            .await
            .map_err(|e| StackError::io(what, e))
    }

    /// Crashes server node `name`: SIGKILL for its process, or, embedded, its targets stop
    /// committing and its node leaves the network.
    pub async fn crash_node(&mut self, name: &str) -> Result<(), StackError> {
        match self {
            RunningStack::Processes { servers, .. } => servers.crash(name).await,
            RunningStack::Attached { .. } => Err(not_here(name)),
            RunningStack::Embedded(e) => {
                let index = index_of(e.stack(), name)?;
                e.crash_node(index)
            }
        }
    }

    /// Starts server node `name` again after [`RunningStack::crash_node`].
    pub async fn restart_node(
        &mut self,
        name: &str,
        launcher: &Launcher,
    ) -> Result<(), StackError> {
        match self {
            RunningStack::Processes { servers, .. } => servers.restart(name, launcher).await,
            RunningStack::Attached { .. } => Err(not_here(name)),
            RunningStack::Embedded(e) => {
                let index = index_of(e.stack(), name)?;
                e.restart_node(index).await
            }
        }
    }

    /// Stops everything: clients, then servers.
    pub async fn stop(self) -> Result<(), StackError> {
        match self {
            RunningStack::Embedded(e) => e.stop().await,
            RunningStack::Processes { servers, clients } => {
                for c in clients {
                    c.stop().await?;
                }
                servers.stop().await
            }
            RunningStack::Attached { clients, .. } => {
                // Every client is stopped, whatever the first said.
                let mut first_error = None;
                for c in clients {
                    if let Err(e) = c.stop().await {
                        first_error.get_or_insert(e);
                    }
                }
                first_error.map_or(Ok(()), Err)
            }
        }
    }
}

/// Why an attached stack's server node cannot be crashed or restarted from here.
fn not_here(name: &str) -> StackError {
    StackError::Process {
        node: name.to_owned(),
        why: "runs on its host under iopath launch: stop or start it there".into(),
    }
}

/// The client library's configuration for client node `node`: the stack's metadata service,
/// its fyod if it has one, a client id from its place in the stack (unique in the stack, the
/// same every time the stack runs), and the node's osc counters, which every client on the
/// node shares.
pub fn client_config(stack: &Stack, node: &RunningNode) -> ClientConfig {
    let forwarder = match stack.nodes[node.index].role {
        Role::Client(spec) => spec.forwarder.map(|f| stack.primary_nid(f)),
        _ => None,
    };
    ClientConfig {
        node: node.node.clone(),
        mds: stack.primary_nid(stack.mds()),
        client_id: iopath_ost_client::ClientId::new(1 + node.index as u64),
        checksum: ChecksumKind::Crc32,
        forwarder,
        osc_stats: node.osc.clone(),
    }
}

/// The osc counters of node `index` — a client node, or a fyod, which reaches the storage
/// servers for its compute nodes — a row per target of the stack's file system, hung on its
/// admin tree: `osc.iopath-OST0000-osc-c0.stats` and `rpc_stats`, and the osc devices `lctl
/// dl` lists.
pub(crate) fn client_osc_stats(
    stack: &Stack,
    index: usize,
    tree: &ParamTree,
) -> Result<Arc<OscStats>, AdminError> {
    let targets = 0..stack.targets().len() as u32;
    let stats = Arc::new(OscStats::new(targets, SystemTime::now()));
    let node = &stack.nodes[index].name;
    iopath_ost_client::params::register(&stats, tree, &stack.fsname, node)?;
    Ok(stats)
}

/// The index of node `name` in `stack`.
fn index_of(stack: &Stack, name: &str) -> Result<usize, StackError> {
    stack
        .nodes
        .iter()
        .position(|n| n.name == name)
        .ok_or_else(|| StackError::Process {
            node: name.to_owned(),
            why: format!("{} has no node of that name", stack.name),
        })
}
