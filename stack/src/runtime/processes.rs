//! [`ProcessStack`]: a process per server node (`iopath node --stack FILE --name NODE`) on
//! loopback TCP. Numbered addresses become free loopback ports, chosen here and written into
//! a resolved stack file every child reads, so each child knows every other's NID before any
//! starts. The stack's admin secret is written beside it (mode 0600) and each child is given
//! its path, never the secret itself, which `ps` would show. Each child prints `READY <nids>
//! <admin address> [<metrics address>]` when it serves, and stops cleanly when its standard
//! input closes — so none outlives the parent.
//!
//! Client nodes get no process: they are where the application (the demo, IOR's tasks)
//! runs, so the application starts them in its own process ([`ProcessStack::start_clients`]).
//!
//! A torus crossed hop by hop is modeled in this process, once, for every node on it: the
//! clients here use the model directly, and each node process is given the address of its
//! switch (`--torus-switch NETWORK=ADDR`, [`iopath_fabric::torus::switch`]), so that every
//! message on the torus, from any process, queues for the same modeled links.

use std::net::{SocketAddr, TcpListener};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use iopath_admin::Secret;
use iopath_fabric::torus::switch::Switch;
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, ChildStdin, Command};

use super::embedded::START_ORDER;
use super::node::{RunningNode, SharedNetworks};
use super::storage::StorageDir;
use crate::error::StackError;
use crate::schema::{RoleName, Stack};

/// How long a node process may take to say READY.
pub const START_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a node process may take to stop once its standard input closes (a storage server
/// commits its journals first).
pub const STOP_TIMEOUT: Duration = Duration::from_secs(20);

/// The file name of the resolved stack file in the storage directory.
pub const RESOLVED_STACK_FILE: &str = "stack.toml";

/// How to start a node process: a program and the arguments before `--stack FILE --name
/// NODE --dir DIR`.
#[derive(Debug, Clone)]
pub struct Launcher {
    /// The program.
    pub program: PathBuf,
    /// Its first arguments.
    pub args: Vec<String>,
}

impl Launcher {
    /// The same launcher, each node process also serving `/metrics` on a loopback port of
    /// its own (listed on its READY line).
    pub fn with_metrics(mut self) -> Launcher {
        self.args
            .extend(["--metrics".to_owned(), "127.0.0.1:0".to_owned()]);
        self
    }

    /// This program's `node` subcommand (`iopath node`).
    pub fn this_program() -> Result<Launcher, StackError> {
        let program = std::env::current_exe()
            .map_err(|e| StackError::system("find this program to start node processes from", e))?;
        Ok(Launcher {
            program,
            args: vec!["node".to_owned()],
        })
    }
}

/// One node process.
#[derive(Debug)]
pub struct ChildNode {
    /// Its index in the stack.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its role.
    pub role: RoleName,
    /// Its NIDs, as it announced them.
    pub nids: String,
    /// Its admin service.
    pub admin: SocketAddr,
    /// Its `/metrics`, if it serves one (started with `--metrics`).
    pub metrics: Option<SocketAddr>,
    pub(crate) child: Child,
    /// Closing it tells the child to stop.
    stdin: Option<ChildStdin>,
}

impl ChildNode {
    /// Its operating-system process id, while it runs.
    pub fn pid(&self) -> Option<u32> {
        self.child.id()
    }
}

/// A stack with a process per server node.
#[derive(Debug)]
pub struct ProcessStack {
    stack: Stack,
    stack_file: PathBuf,
    /// The stack's admin secret, which every node process checks changes against.
    admin_secret: Secret,
    /// The file it is in, which each node process is given.
    admin_secret_file: PathBuf,
    children: Vec<ChildNode>,
    storage: StorageDir,
    /// The ports of nodes not started yet.
    held: std::sync::Mutex<HeldPorts>,
    /// The models of the stack's tori crossed hop by hop, run here for every node on them:
    /// the client nodes here use them directly.
    networks: SharedNetworks,
    /// Each torus's switch, serving its model to the node processes (`--torus-switch`).
    switches: Vec<(String, Switch)>,
}

/// The lowest port `free_port` picks from.
const PICKED_PORT_MIN: u16 = 20_000;

/// A loopback listener on a free port, picked at random *below* the kernel's ephemeral range
/// where there is room: the kernel never hands those to another socket (a connect, a bind to
/// port 0), so between the moment a port is let go and the moment its node binds it, only
/// another caller of this function could take it, and it picks at random among thousands.
/// Falls back to an ephemeral port where the range leaves no room.
fn free_port() -> std::io::Result<TcpListener> {
    let ephemeral_min = std::fs::read_to_string("/proc/sys/net/ipv4/ip_local_port_range")
        .ok()
        .and_then(|range| range.split_whitespace().next()?.parse::<u16>().ok());
    if let Some(min) = ephemeral_min.filter(|&min| min > PICKED_PORT_MIN + 1000) {
        let span = u64::from(min - PICKED_PORT_MIN);
        // Bounded: a few hundred tries among thousands of mostly free ports.
        for _ in 0..256 {
            let port = PICKED_PORT_MIN + (random_u64() % span) as u16;
            if let Ok(listener) = TcpListener::bind(("127.0.0.1", port)) {
                return Ok(listener);
            }
        }
    }
    TcpListener::bind("127.0.0.1:0")
}

/// A random number from the standard library's per-process random hash keys.
fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut hasher = std::collections::hash_map::RandomState::new().build_hasher();
    hasher.write_u64(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    );
    hasher.finish()
}

/// Ports chosen for a stack's nodes, still bound: a node's listening sockets are handed to it
/// as they are (inherited by its process, or adopted by the fabric in this one), so nothing
/// else on the machine can take a port between its choice and its node's start.
#[derive(Debug, Default)]
pub struct HeldPorts(Vec<(String, TcpListener)>);

impl HeldPorts {
    /// Takes `node`'s sockets, for it to listen on.
    pub fn take(&mut self, node: &str) -> Vec<TcpListener> {
        let (mine, others) = std::mem::take(&mut self.0)
            .into_iter()
            .partition(|(name, _)| name == node);
        self.0 = others;
        mine.into_iter().map(|(_, listener)| listener).collect()
    }
}

/// Picks a free loopback port for each numbered address of `stack` and keeps each bound
/// (every listener stays bound until all are chosen, so no two interfaces get the same port).
pub fn resolve_ports(stack: &Stack) -> Result<(Stack, HeldPorts), StackError> {
    let mut held = Vec::new();
    let resolved = stack.with_sockets(|node, network| {
        let listener = free_port().map_err(|e| {
            StackError::system(
                format!("find a free loopback port for {node} on {network}"),
                e,
            )
        })?;
        let addr = listener
            .local_addr()
            .map_err(|e| StackError::system("read a loopback port", e))?;
        held.push((node.to_owned(), listener));
        Ok(addr)
    })?;
    Ok((resolved, HeldPorts(held)))
}

impl ProcessStack {
    /// Resolves `stack`'s addresses to loopback ports, writes the resolved stack file into
    /// `storage`, and starts a process per server node with `launcher`, in start order
    /// (routers, storage servers, the metadata service, fyods), each group waiting for the
    /// previous one's READY lines.
    pub async fn start(
        stack: &Stack,
        storage: StorageDir,
        launcher: &Launcher,
    ) -> Result<ProcessStack, StackError> {
        let (resolved, held) = if stack.is_tcp() {
            (stack.clone(), HeldPorts::default())
        } else {
            resolve_ports(stack)?
        };
        // A torus crossed hop by hop is modeled here, once, and served to the node processes
        // on it: their messages queue with the clients' for the same links.
        let networks = SharedNetworks::modeled(&resolved);
        let switches = networks.serve_tori(&resolved)?;
        let stack_file = storage.path().join(RESOLVED_STACK_FILE);
        std::fs::write(&stack_file, resolved.to_toml()).map_err(|source| StackError::File {
            what: "write the resolved stack file",
            path: stack_file.clone(),
            source,
        })?;
        let admin_secret_file = storage.path().join(iopath_admin::secret::SECRET_FILE_NAME);
        let admin_secret = Secret::create(&admin_secret_file)
            .map_err(|e| StackError::io("make the stack's admin secret", e))?;
        let mut running = ProcessStack {
            stack: resolved,
            stack_file,
            admin_secret,
            admin_secret_file,
            children: Vec::new(),
            storage,
            held: std::sync::Mutex::new(held),
            networks,
            switches,
        };
        for kind in START_ORDER {
            if kind == RoleName::Client {
                continue;
            }
            let mut group = Vec::new();
            for index in running.stack.nodes_of(kind) {
                match running.spawn(index, launcher) {
                    Ok(child) => group.push(child),
                    Err(e) => {
                        running.stop_children(group).await;
                        let _ = running.stop().await;
                        return Err(e);
                    }
                }
            }
            let mut ready = Vec::new();
            let mut failure = None;
            for pending in group {
                match wait_ready(pending).await {
                    Ok(child) => ready.push(child),
                    Err((e, child)) => {
                        failure.get_or_insert(e);
                        if let Some(child) = child {
                            ready.push(child);
                        }
                    }
                }
            }
            running.children.extend(ready);
            if let Some(e) = failure {
                let _ = running.stop().await;
                return Err(e);
            }
        }
        if let Err(e) = running.write_stack_file() {
            let _ = running.stop().await;
            return Err(e);
        }
        Ok(running)
    }

    /// Writes the resolved stack file again with each running node's admin address, which
    /// the node picked as it started: the file is the one tools are given (`iopath lctl
    /// --stack FILE --node oss0`, `lnetctl`, `lfs`), as `iopath launch`'s is. Whole or not at
    /// all (beside it, then renamed), since a node started again reads it.
    fn write_stack_file(&self) -> Result<(), StackError> {
        let mut stack = self.stack.clone();
        for child in &self.children {
            stack.nodes[child.index].admin = Some(child.admin);
        }
        let partial = self.stack_file.with_extension("toml.partial");
        std::fs::write(&partial, stack.to_toml())
            .and_then(|()| std::fs::rename(&partial, &self.stack_file))
            .map_err(|source| StackError::File {
                what: "write the resolved stack file",
                path: self.stack_file.clone(),
                source,
            })
    }

    fn spawn(&self, index: usize, launcher: &Launcher) -> Result<Pending, StackError> {
        let spec = &self.stack.nodes[index];
        let dir = self.storage.node(&spec.name);
        let sockets = self.take_ports(&spec.name);
        let mut command = Command::new(&launcher.program);
        iopath_fabric::lnd::tcp::hand_over(&mut command, &sockets);
        // This parent holds the child's standard input open for as long as it wants the node.
        let child = command
            .args(&launcher.args)
            .arg("--watch-stdin")
            .arg("--stack")
            .arg(&self.stack_file)
            .arg("--secret-file")
            .arg(&self.admin_secret_file)
            .arg("--name")
            .arg(&spec.name)
            .arg("--dir")
            .arg(&dir)
            .args(self.switches.iter().flat_map(|(network, switch)| {
                [
                    "--torus-switch".to_owned(),
                    format!("{network}={}", switch.addr()),
                ]
            }))
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true)
            .spawn()
            .map_err(|e| StackError::Process {
                node: spec.name.clone(),
                why: format!("start {}: {e}", launcher.program.display()),
            })?;
        Ok(Pending {
            index,
            name: spec.name.clone(),
            role: spec.role.kind(),
            child,
        })
    }

    /// The resolved stack (every address a loopback socket).
    pub fn stack(&self) -> &Stack {
        &self.stack
    }

    /// The resolved stack file the children read.
    pub fn stack_file(&self) -> &Path {
        &self.stack_file
    }

    /// The stack's admin secret: what `set_param` and shutdown callers must send its nodes.
    pub fn admin_secret(&self) -> &Secret {
        &self.admin_secret
    }

    /// The file holding the stack's admin secret (mode 0600), in the storage directory.
    pub fn admin_secret_file(&self) -> &Path {
        &self.admin_secret_file
    }

    /// The node processes, in start order.
    pub fn children(&self) -> &[ChildNode] {
        &self.children
    }

    /// The process of stack node `index`, if it has one running.
    pub fn child(&self, index: usize) -> Option<&ChildNode> {
        self.children.iter().find(|c| c.index == index)
    }

    /// Where the nodes keep their state.
    pub fn storage(&self) -> &StorageDir {
        &self.storage
    }

    /// Each torus crossed hop by hop, by network name, and the address of the switch that
    /// serves its model (in this process) to the node processes.
    pub fn torus_switches(&self) -> Vec<(String, SocketAddr)> {
        self.switches
            .iter()
            .map(|(network, switch)| (network.clone(), switch.addr()))
            .collect()
    }

    /// The modeled torus of stack network `index`, if it is crossed hop by hop: its model runs
    /// in this process, so its link counters are here.
    pub fn torus(&self, index: usize) -> Option<&iopath_fabric::torus::TorusNetwork> {
        self.networks.torus(index)
    }

    /// Kills node process `name` at once (SIGKILL): to its peers and to its disk, a crash.
    /// [`ProcessStack::restart`] starts it again.
    pub async fn crash(&mut self, name: &str) -> Result<(), StackError> {
        let position = self
            .children
            .iter()
            .position(|c| c.name == name)
            .ok_or_else(|| StackError::Process {
                node: name.to_owned(),
                why: "no such node process is running".into(),
            })?;
        let mut child = self.children.remove(position);
        child.child.start_kill().map_err(|e| StackError::Process {
            node: name.to_owned(),
            why: format!("kill: {e}"),
        })?;
        let _ = child.child.wait().await;
        Ok(())
    }

    /// Starts node `name` again (after [`ProcessStack::crash`]) on the same addresses and
    /// state, and waits for its READY.
    pub async fn restart(&mut self, name: &str, launcher: &Launcher) -> Result<(), StackError> {
        if self.children.iter().any(|c| c.name == name) {
            return Err(StackError::Process {
                node: name.to_owned(),
                why: "it is running already".into(),
            });
        }
        let index = self
            .stack
            .nodes
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| StackError::Process {
                node: name.to_owned(),
                why: "no such node in the stack".into(),
            })?;
        let pending = self.spawn(index, launcher)?;
        match wait_ready(pending).await {
            Ok(child) => {
                self.children.push(child);
                // Its admin service has a port of its own again.
                self.write_stack_file()
            }
            Err((e, child)) => {
                if let Some(mut child) = child {
                    let _ = child.child.start_kill();
                    let _ = child.child.wait().await;
                }
                Err(e)
            }
        }
    }

    fn take_ports(&self, node: &str) -> Vec<TcpListener> {
        self.held
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take(node)
    }

    /// Starts the stack's client nodes in this process, on their resolved loopback ports.
    pub async fn start_clients(&self) -> Result<Vec<RunningNode>, StackError> {
        let mut clients = Vec::new();
        for index in self.stack.nodes_of(RoleName::Client) {
            let name = &self.stack.nodes[index].name;
            let dir = self.storage.node(name);
            for socket in self.take_ports(name) {
                iopath_fabric::lnd::tcp::adopt(socket)
                    .map_err(|e| StackError::system(format!("keep {name}'s port"), e))?;
            }
            match RunningNode::start(&self.stack, index, &self.networks, &dir).await {
                Ok(node) => clients.push(node),
                Err(e) => {
                    for c in clients {
                        let _ = c.stop().await;
                    }
                    return Err(e);
                }
            }
        }
        Ok(clients)
    }

    /// Stops every node process, fyods first and storage servers last: each is told by its
    /// standard input closing, and killed if it has not stopped within [`STOP_TIMEOUT`].
    pub async fn stop(mut self) -> Result<(), StackError> {
        let children = std::mem::take(&mut self.children);
        let result = self.stop_children_checked(children).await;
        drop(self.storage);
        result
    }

    async fn stop_children(&self, pending: Vec<Pending>) {
        for mut p in pending {
            let _ = p.child.start_kill();
            let _ = p.child.wait().await;
        }
    }

    async fn stop_children_checked(&self, children: Vec<ChildNode>) -> Result<(), StackError> {
        let mut first_error = None;
        for mut child in children.into_iter().rev() {
            // A node process that ended before the stop (killed or crashed by hand, a test's
            // fault) is no failure of the stop — but someone may have started the node again
            // by hand on its addresses, which this stack then stops as well.
            if let Ok(Some(status)) = child.child.try_wait() {
                tracing::info!(node = %child.name, "had already stopped ({status}) before the stack was stopped");
                if let Err(why) = self.stop_restarted_by_hand(&child).await {
                    tracing::warn!(node = %child.name, "{why}");
                    first_error.get_or_insert(StackError::Process {
                        node: child.name.clone(),
                        why,
                    });
                }
                continue;
            }
            // Closing standard input is the stop signal.
            drop(child.stdin.take());
            if let Err(why) = wait_stopped(&mut child.child, "and was killed").await {
                tracing::warn!(node = %child.name, "{why}");
                first_error.get_or_insert(StackError::Process {
                    node: child.name.clone(),
                    why,
                });
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

impl ProcessStack {
    /// `child`'s process is gone; if node `child.name` was started again by hand on this
    /// stack's directory for it (`iopath node --name NAME --dir DIR`, as an operator restarts
    /// a crashed server), that process is stopped as its parent would stop it — SIGTERM,
    /// which a node takes as its stop — and waited for, at most [`STOP_TIMEOUT`].
    async fn stop_restarted_by_hand(&self, child: &ChildNode) -> Result<(), String> {
        let dir = self.storage.node(&child.name);
        let Some(pid) = node_process(&child.name, &dir) else {
            // Nothing serves it: the node stays down, as it was left.
            return Ok(());
        };
        tracing::info!(node = %child.name, pid, "was started again by hand: stopping it with the stack");
        let Ok(raw_pid) = libc::pid_t::try_from(pid) else {
            return Err(format!("was started again as pid {pid}, which is no pid"));
        };
        // SAFETY: kill(2) with a pid and a signal number touches no memory.
        if unsafe { libc::kill(raw_pid, libc::SIGTERM) } != 0 {
            let e = std::io::Error::last_os_error();
            return Err(format!(
                "was started again (pid {pid}) and could not be told to stop: {e}"
            ));
        }
        let deadline = tokio::time::Instant::now() + STOP_TIMEOUT;
        while tokio::time::Instant::now() < deadline {
            if !process_runs(pid) {
                return Ok(());
            }
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        Err(format!(
            "was started again (pid {pid}) and still runs {} s after SIGTERM",
            STOP_TIMEOUT.as_secs()
        ))
    }
}

/// The pid of a running `iopath node --name NAME --dir DIR` process serving `dir` (its
/// `--dir` resolved against its working directory), if there is one: found in `/proc`.
fn node_process(name: &str, dir: &Path) -> Option<u32> {
    let dir = dir.canonicalize().ok()?;
    let own = std::process::id();
    for entry in std::fs::read_dir("/proc").ok()?.flatten() {
        let Ok(pid) = entry.file_name().to_string_lossy().parse::<u32>() else {
            continue;
        };
        if pid == own {
            continue;
        }
        let Ok(cmdline) = std::fs::read(entry.path().join("cmdline")) else {
            continue;
        };
        let args: Vec<&[u8]> = cmdline.split(|&b| b == 0).collect();
        let value = |flag: &str| {
            args.windows(2)
                .find(|w| w[0] == flag.as_bytes())
                .map(|w| String::from_utf8_lossy(w[1]).into_owned())
        };
        if !args.iter().any(|a| *a == b"node") || value("--name").as_deref() != Some(name) {
            continue;
        }
        let Some(node_dir) = value("--dir") else {
            continue;
        };
        let node_dir = match std::fs::read_link(entry.path().join("cwd")) {
            Ok(cwd) => cwd.join(node_dir),
            Err(_) => PathBuf::from(node_dir),
        };
        if node_dir.canonicalize().is_ok_and(|d| d == dir) && process_runs(pid) {
            return Some(pid);
        }
    }
    None
}

/// Whether process `pid` exists and has not ended (a zombie has ended: its parent has not
/// yet waited for it).
fn process_runs(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|stat| {
        // The state follows the command name, which is in parentheses and may hold spaces.
        stat.rsplit_once(')')
            .and_then(|(_, rest)| rest.split_whitespace().next())
            .is_some_and(|state| state != "Z" && state != "X")
    })
}

/// Waits up to [`STOP_TIMEOUT`] for a node process told to stop; one that has not stopped by
/// then is killed, and the error says so, `killed` saying what was killed.
pub(crate) async fn wait_stopped(child: &mut Child, killed: &str) -> Result<(), String> {
    match tokio::time::timeout(STOP_TIMEOUT, child.wait()).await {
        Ok(Ok(status)) if status.success() => Ok(()),
        Ok(Ok(status)) => Err(format!("stopped with {status}")),
        Ok(Err(e)) => Err(format!("could not be waited for: {e}")),
        Err(_) => {
            let _ = child.start_kill();
            let _ = child.wait().await;
            Err(format!(
                "did not stop within {} s {killed}",
                STOP_TIMEOUT.as_secs()
            ))
        }
    }
}

/// Lines a starting node (or what starts it) may print before its READY line.
const LINES_BEFORE_READY_MAX: usize = 100;

/// A node process that has not said READY yet.
#[derive(Debug)]
pub(crate) struct Pending {
    pub(crate) index: usize,
    pub(crate) name: String,
    pub(crate) role: RoleName,
    pub(crate) child: Child,
}

/// Waits for `pending`'s READY line. On failure, returns the error and the child if it is
/// still worth stopping.
pub(crate) async fn wait_ready(
    mut pending: Pending,
) -> Result<ChildNode, (StackError, Option<ChildNode>)> {
    let failed = |why: String| StackError::Process {
        node: pending.name.clone(),
        why,
    };
    let Some(stdout) = pending.child.stdout.take() else {
        return Err((failed("its standard output was not captured".into()), None));
    };
    let stdin = pending.child.stdin.take();
    let mut lines = BufReader::new(stdout).lines();
    // Its first line is READY; a remote starter (ssh, srun) may print a few of its own first,
    // which are passed on.
    let deadline = tokio::time::Instant::now() + START_TIMEOUT;
    let mut line = None;
    for _ in 0..LINES_BEFORE_READY_MAX {
        match tokio::time::timeout_at(deadline, lines.next_line()).await {
            Ok(Ok(Some(said))) if said.starts_with("READY ") => {
                line = Some(said);
                break;
            }
            Ok(Ok(Some(said))) => eprintln!("{}: {said}", pending.name),
            Ok(Ok(None)) | Ok(Err(_)) => {
                let status = pending.child.wait().await;
                let how = match status {
                    Ok(s) => s.to_string(),
                    Err(e) => e.to_string(),
                };
                return Err((
                    failed(format!(
                        "exited before it was ready ({how}); its error is above"
                    )),
                    None,
                ));
            }
            Err(_) => break,
        }
    }
    let Some(line) = line else {
        let _ = pending.child.start_kill();
        let _ = pending.child.wait().await;
        let why = if tokio::time::Instant::now() < deadline {
            format!("printed {LINES_BEFORE_READY_MAX} lines without READY and was killed")
        } else {
            format!(
                "did not say READY within {} s and was killed",
                START_TIMEOUT.as_secs()
            )
        };
        return Err((failed(why), None));
    };
    let ready = match line.parse::<iopath_admin::process::Ready>() {
        Ok(ready) => ready,
        Err(why) => {
            let _ = pending.child.start_kill();
            return Err((failed(why.to_string()), None));
        }
    };
    // Whatever else it prints is drained, so it never blocks on a full pipe.
    let name = pending.name.clone();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            tracing::debug!(node = %name, "{line}");
        }
    });
    Ok(ChildNode {
        index: pending.index,
        name: pending.name.clone(),
        role: pending.role,
        nids: ready.nids.join(","),
        admin: ready.admin,
        metrics: ready.metrics,
        child: pending.child,
        stdin,
    })
}
