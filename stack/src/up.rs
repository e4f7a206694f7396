//! `iopath up` and `iopath node`: a whole stack, or one node of a resolved stack file as a
//! process of its own, run until told to stop.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::choice::StackChoice;
use crate::describe;
use crate::error::StackError;
use crate::live;
use crate::runtime::{
    EmbeddedOptions, EmbeddedStack, Launcher, Mode, ProcessStack, RunningNode, StorageDir,
    client_config,
};
use crate::schema::{RoleName, Stack};
use iopath_admin::Secret;

/// What `iopath up` runs.
#[derive(Debug, Clone, Default)]
pub struct UpConfig {
    /// The stack.
    pub choice: StackChoice,
    /// A process per server node on loopback TCP (default: every node in this process, on
    /// in-memory networks).
    pub processes: bool,
    /// Keep the nodes' state in this directory (created if absent, kept afterwards; a
    /// restart with the same directory recovers it). Default: a temporary directory.
    pub dir: Option<PathBuf>,
    /// Every node serves Prometheus's `/metrics` on a loopback port of its own, printed
    /// after the node table.
    pub metrics: bool,
    /// Serve the live view — a page that draws the stack and follows its counters every
    /// second — on this address.
    pub web: Option<SocketAddr>,
}

/// What `iopath node` runs: one node of a stack file, as a process of its own.
#[derive(Debug, Clone)]
pub struct NodeProcessConfig {
    /// The stack file, `-` for standard input; every address in it must be `host:port`
    /// (`iopath up --processes` and `iopath launch` write such files).
    pub stack: PathBuf,
    /// The node to run.
    pub name: String,
    /// Where the node keeps its state (created if absent).
    pub dir: PathBuf,
    /// The admin service's address (port 0 picks one; printed on the READY line).
    pub admin: SocketAddr,
    /// Where to serve `/metrics`, if anywhere (port 0 picks one; printed on the READY line
    /// after the admin address).
    pub metrics: Option<SocketAddr>,
    /// The stack's admin secret file, which `set_param` and shutdown callers must match;
    /// [`SECRET_FROM_STDIN`] reads the secret from the first line of standard input, before
    /// the stack file (`iopath launch` sends both that way). Without one, the node writes a
    /// secret of its own into `dir` and says where on standard error.
    pub secret_file: Option<PathBuf>,
    /// Stop when standard input closes: a parent that started the node holds it open for as
    /// long as it wants the node. Without, the node runs until a signal or an admin's shutdown.
    pub watch_stdin: bool,
    /// Where each torus crossed hop by hop that the node is on has its model served: the
    /// network's name and its switch's address (`iopath up --processes` gives them).
    pub torus_switches: Vec<(String, SocketAddr)>,
}

/// `NETWORK=ADDR`, as `iopath node --torus-switch` takes it: where the model of the torus
/// crossed hop by hop on that network is served.
pub fn parse_torus_switch(text: &str) -> Result<(String, SocketAddr), String> {
    let (network, addr) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: give NETWORK=ADDR, as in torus0=127.0.0.1:7000"))?;
    let addr = addr
        .parse()
        .map_err(|e| format!("{text:?}: {addr:?} is not an address ({e})"))?;
    Ok((network.to_owned(), addr))
}

/// The most of a stack file read from standard input (a resolved file takes about half a
/// kilobyte a node: some 10 MB at the most nodes a stack may have, 20,000).
const STACK_TEXT_MAX_BYTES: u64 = 16 << 20;

/// The `--stack` value that reads the stack file from standard input.
pub const STACK_FROM_STDIN: &str = "-";

/// The `--secret-file` value that reads the admin secret from standard input's first line.
pub const SECRET_FROM_STDIN: &str = "-";

/// What `iopath up --mount` does with the client it connects on the stack's first client
/// node: mounts it, returning what unmounts when dropped (the stack crate knows nothing of
/// FUSE; the binary brings it).
pub type Mounter =
    Box<dyn FnOnce(iopath_client::Client) -> Result<Box<dyn std::any::Any + Send>, String> + Send>;

/// Runs `iopath up`: starts the stack, prints its nodes to `out`, and runs until `stop`
/// completes (it is awaited only once the stack is up and printed). With `mount`, a client
/// on the stack's first client node is handed to it once the stack is up, and is closed
/// (every acknowledged write committed) after the mount goes, before the stack stops.
pub async fn up_until(
    args: &UpConfig,
    out: &mut dyn Write,
    stop: impl Future<Output = ()>,
    mount: Option<Mounter>,
) -> Result<(), StackError> {
    let stack = args.choice.load()?;
    let storage = match &args.dir {
        Some(dir) => StorageDir::kept(dir)?,
        None => StorageDir::temporary("up", None)?,
    };
    let mode = if args.processes {
        Mode::Processes
    } else {
        Mode::Embedded
    };
    // A stack runs until it is told to stop, as a daemon does: output that cannot be written
    // (a closed terminal, `> /dev/full`) does not stop it, but is said once, on standard error.
    let mut unwritten = false;
    let mut say = |text: String| {
        if let Err(e) = writeln!(out, "{text}").and_then(|()| out.flush())
            && !std::mem::replace(&mut unwritten, true)
        {
            let _ = writeln!(
                std::io::stderr(),
                "iopath up: standard output: {e}: the stack's table is not shown; it keeps running"
            );
        }
    };
    say(format!("iopath up: {} ({})", stack.name, stack.origin));
    if !stack.description.is_empty() {
        say(stack.description.clone());
    }
    say(format!("mode: {}", mode.describe()));
    say(format!("modeled: {}", stack.modeled()));
    say(format!("networks: {}", stack.network_names(args.processes)));
    say(format!(
        "storage: {}{}",
        storage.path().display(),
        if storage.is_temporary() {
            " (removed when the stack stops)"
        } else {
            " (kept)"
        }
    ));
    match mode {
        Mode::Attached => unreachable!("iopath up starts every node itself"),
        Mode::Embedded => {
            let secret_file = storage.path().join(iopath_admin::secret::SECRET_FILE_NAME);
            let secret = Secret::create(&secret_file)
                .map_err(|e| StackError::io("make the stack's admin secret", e))?;
            let options = EmbeddedOptions {
                admin: true,
                admin_secret: Some(secret),
                metrics: args.metrics,
                ..EmbeddedOptions::default()
            };
            let running = EmbeddedStack::start_with(stack, storage, options).await?;
            say(secret_line(&secret_file));
            let admin = |i: usize| running.admin_addr(i).map(|a| a.to_string());
            say(format!(
                "\n{}",
                describe::node_table(running.stack(), &admin)
            ));
            for node in running.nodes() {
                if let Some(metrics) = running.metrics_addr(node.index) {
                    say(format!("metrics {} http://{metrics}/metrics", node.name));
                }
            }
            let client_node = running
                .nodes()
                .into_iter()
                .find(|n| n.role == RoleName::Client);
            let mounted = match (mount, client_node) {
                (Some(mounter), Some(node)) => {
                    Some(mount_on(running.stack(), node, mounter, &mut say).await?)
                }
                (Some(_), None) => return Err(no_client_to_mount(running.stack())),
                (None, _) => None,
            };
            let live = match args.web {
                Some(addr) => {
                    let view = live::view(
                        running.stack(),
                        mode.describe(),
                        "",
                        &running.nodes(),
                        &[],
                        &|i| running.admin_addr(i),
                    );
                    Some(open_live(addr, view, &mut say).await?)
                }
                None => None,
            };
            say("ready: Ctrl-C or the end of standard input stops the stack".into());
            stop.await;
            if let Some(live) = live {
                live.end("the stack stopped").await;
            }
            unmount(mounted).await;
            running.stop().await?;
        }
        Mode::Processes => {
            let mut launcher = Launcher::this_program()?;
            // The live view reads each node process's /metrics.
            if args.metrics || args.web.is_some() {
                launcher = launcher.with_metrics();
            }
            let running = ProcessStack::start(&stack, storage, &launcher).await?;
            say(format!(
                "stack file: {0} (every address resolved, each node's admin service \
                 included; each node process reads it; `iopath lfs --stack {0} ...` reaches \
                 the stack as its clients do, routers included, and `iopath lctl --stack {0} \
                 --node NAME ...` a node's parameters)",
                running.stack_file().display()
            ));
            say(secret_line(running.admin_secret_file()));
            for (network, addr) in running.torus_switches() {
                say(format!(
                    "torus switch: {network}'s model runs in this process and serves the node \
                     processes on {addr} (iopath node --torus-switch {network}={addr}); \
                     `iopath lfs --stack` cannot start a client on {network}: the stack's own \
                     clients run here"
                ));
            }
            let admins: Vec<(usize, String)> = running
                .children()
                .iter()
                .map(|c| (c.index, c.admin.to_string()))
                .collect();
            let admin = |i: usize| {
                admins
                    .iter()
                    .find(|(index, _)| *index == i)
                    .map(|(_, a)| a.clone())
            };
            say(format!(
                "\n{}",
                describe::node_table(running.stack(), &admin)
            ));
            for child in running.children() {
                if let Some(metrics) = child.metrics {
                    say(format!("metrics {} http://{metrics}/metrics", child.name));
                }
            }
            say(
                "client nodes have no process of their own: they run where the application \
                 runs (iopath demo, iopath bench ior), on the addresses above"
                    .into(),
            );
            let mut clients = Vec::new();
            let mounted = match mount {
                Some(mounter) => {
                    clients = running.start_clients().await?;
                    let Some(node) = clients.first() else {
                        return Err(no_client_to_mount(running.stack()));
                    };
                    Some(mount_on(running.stack(), node, mounter, &mut say).await?)
                }
                None => None,
            };
            let live = match args.web {
                Some(addr) => {
                    let local: Vec<&RunningNode> = clients.iter().collect();
                    let view = live::view(
                        running.stack(),
                        mode.describe(),
                        "",
                        &local,
                        running.children(),
                        &|i| running.child(i).map(|c| c.admin),
                    );
                    Some(open_live(addr, view, &mut say).await?)
                }
                None => None,
            };
            say("ready: Ctrl-C or the end of standard input stops the stack".into());
            stop.await;
            if let Some(live) = live {
                live.end("the stack stopped").await;
            }
            unmount(mounted).await;
            for client in clients {
                client.stop().await?;
            }
            running.stop().await?;
        }
    }
    say("stopped".into());
    Ok(())
}

/// Where the stack's admin secret is, and what needs it.
fn secret_line(file: &std::path::Path) -> String {
    format!(
        "admin secret: {0} (mode 0600; set_param and shutdown need it: `iopath lctl --admin \
         ADDR --secret-file {0} set_param ...`; reads need nothing)",
        file.display()
    )
}

/// Serves the live view of `view` on `addr` and says where.
async fn open_live(
    addr: SocketAddr,
    view: iopath_live::View,
    say: &mut dyn FnMut(String),
) -> Result<iopath_live::LiveHandle, StackError> {
    let live = live::serve(addr, view).await?;
    say(format!(
        "live view: {} (the stack drawn, its counters read every {} ms)",
        live.url(),
        live::LIVE_INTERVAL.as_millis()
    ));
    Ok(live)
}

/// A mount and the client behind it.
type Mounted = (Box<dyn std::any::Any + Send>, iopath_client::Client);

/// Connects the client library on `node` and hands it to `mounter`.
async fn mount_on(
    stack: &Stack,
    node: &RunningNode,
    mounter: Mounter,
    say: &mut dyn FnMut(String),
) -> Result<Mounted, StackError> {
    let what = format!("connect the client on {} ({})", node.name, node.node.nid());
    let client = iopath_client::Client::connect(client_config(stack, node))
        .await
        .map_err(|e| StackError::io(what, e))?;
    let guard = mounter(client.clone()).map_err(|why| StackError::Io {
        what: format!("mount the stack from {}", node.name),
        why,
    })?;
    say(format!(
        "mounted: the client on {} answers the mount (its programs' I/O takes that node's path)",
        node.name
    ));
    Ok((guard, client))
}

/// Unmounts (off the runtime: it waits for the calls in progress), then closes the client.
async fn unmount(mounted: Option<Mounted>) {
    let Some((guard, client)) = mounted else {
        return;
    };
    let _ = tokio::task::spawn_blocking(move || drop(guard)).await;
    if let Err(e) = client.close().await {
        tracing::warn!("close the mount's client: {e}");
    }
}

fn no_client_to_mount(stack: &Stack) -> StackError {
    StackError::Io {
        what: "mount the stack".into(),
        why: format!("{} has no client node to mount from", stack.origin),
    }
}

/// Runs `iopath node`: one node of a resolved stack file, until its standard input closes,
/// SIGTERM, or an admin's shutdown.
pub async fn run_node(args: &NodeProcessConfig) -> Result<(), StackError> {
    // The listening sockets the launcher picked and kept for this node, if it handed any over.
    iopath_fabric::lnd::tcp::adopt_handed_over().map_err(|e| StackError::Process {
        node: args.name.clone(),
        why: format!("take the listening sockets handed over: {e}"),
    })?;
    let secret_from_stdin = args
        .secret_file
        .as_ref()
        .is_some_and(|f| f.as_os_str() == SECRET_FROM_STDIN);
    let stack_from_stdin = args.stack.as_os_str() == STACK_FROM_STDIN;
    if secret_from_stdin && !stack_from_stdin {
        return Err(StackError::BadOption {
            option: "--secret-file".into(),
            why: "- reads the secret from the first line of standard input, before the stack \
                  file: give --stack - too (or the secret file's path)"
                .into(),
        });
    }
    let (stack, stdin_secret) = if stack_from_stdin {
        if args.watch_stdin {
            return Err(StackError::BadOption {
                option: "--watch-stdin".into(),
                why: "the stack file comes on standard input (--stack -), so its end cannot \
                      also be the signal to stop"
                    .into(),
            });
        }
        let mut text = String::new();
        std::io::Read::read_to_string(
            &mut std::io::Read::take(std::io::stdin(), STACK_TEXT_MAX_BYTES),
            &mut text,
        )
        .map_err(|e| StackError::system("read the stack file from standard input", e))?;
        let (secret, stack_text) = if secret_from_stdin {
            let (line, rest) = text.split_once('\n').unwrap_or((&text, ""));
            let secret = Secret::from_hex(line.trim(), "the first line of standard input")
                .map_err(|e| StackError::BadOption {
                    option: "--secret-file -".into(),
                    why: e.to_string(),
                })?;
            (Some(secret), rest)
        } else {
            (None, text.as_str())
        };
        (
            Stack::parse(stack_text, "the stack file on standard input")?,
            secret,
        )
    } else {
        (Stack::load(&args.stack)?, None)
    };
    let index = stack
        .node_index(&args.name)
        .ok_or_else(|| StackError::BadOption {
            option: "--name".into(),
            why: format!(
                "{} has no node called {:?} (nodes: {})",
                args.stack.display(),
                args.name,
                stack.node_names()
            ),
        })?;
    if !stack.is_tcp() {
        return Err(StackError::BadOption {
            option: "--stack".into(),
            why: format!(
                "{} gives numbered (in-memory) addresses; a node process needs host:port \
                 addresses for every node (`iopath up --processes` writes such a file)",
                args.stack.display()
            ),
        });
    }
    if stack.nodes[index].role.kind() == RoleName::Client {
        return Err(StackError::BadOption {
            option: "--name".into(),
            why: format!(
                "{} is a client node: clients run inside the application (iopath demo, \
                 iopath bench ior), not as a node process",
                args.name
            ),
        });
    }
    let secret = match stdin_secret {
        Some(secret) => secret,
        None => node_secret(args)?,
    };
    let networks =
        crate::runtime::SharedNetworks::switched(&stack, index, &args.torus_switches).await?;
    let running = RunningNode::start(&stack, index, &networks, &args.dir).await?;
    let metrics = args
        .metrics
        .map(|addr| (addr, std::sync::Arc::new(running.metrics_registry())));
    let reason = iopath_admin::process::serve_until_stopped(
        args.admin,
        running.tree.clone(),
        running.info(),
        secret,
        metrics,
        args.watch_stdin,
    )
    .await
    .map_err(|e| StackError::Start {
        node: args.name.clone(),
        role: running.role.as_str(),
        why: format!("serve its admin service: {e}"),
    })?;
    tracing::info!(node = %args.name, "stopping: {reason}");
    running.stop().await
}

/// The secret node `args` checks admin changes against: its stack's, from `--secret-file`, or
/// else one of its own written into its directory, whose path it says on standard error
/// (standard output is for the READY line).
fn node_secret(args: &NodeProcessConfig) -> Result<Secret, StackError> {
    let failed = |why: String| StackError::Process {
        node: args.name.clone(),
        why,
    };
    std::fs::create_dir_all(&args.dir)
        .map_err(|e| failed(format!("create {}: {e}", args.dir.display())))?;
    let (secret, own) = iopath_admin::secret::for_node(args.secret_file.as_deref(), &args.dir)
        .map_err(|e| failed(e.to_string()))?;
    if let Some(own) = own {
        eprintln!(
            "{}: admin secret: {} (no --secret-file given: set_param and shutdown need this one)",
            args.name,
            own.display()
        );
    }
    Ok(secret)
}
