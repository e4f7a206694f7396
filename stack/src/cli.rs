//! The command lines: `iopath up`, `iopath node` and `iopath demo` (argument structs for the
//! binary to flatten, and the functions that run them).

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use tokio::io::AsyncReadExt;

use crate::describe;
use crate::error::StackError;
use crate::presets::{self, DEFAULT_PRESET};
use crate::runtime::{EmbeddedStack, Launcher, Mode, ProcessStack, RunningNode, StorageDir};
use crate::schema::{RoleName, Stack, StackFile};

/// Where a stack comes from: `--preset NAME` or `--stack FILE`, and `--route-set`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StackChoice {
    /// A preset: asci-red-mini (the default), spider-mini, spider-mini-routed.
    #[arg(long, conflicts_with = "stack")]
    pub preset: Option<String>,
    /// A stack file (TOML).
    #[arg(long)]
    pub stack: Option<PathBuf>,
    /// The route set in force, for stacks that have several (spider-mini-routed:
    /// round-robin, fine-grained).
    #[arg(long)]
    pub route_set: Option<String>,
}

impl StackChoice {
    /// Reads and checks the chosen stack.
    pub fn load(&self) -> Result<Stack, StackError> {
        let (mut file, origin) = match (&self.preset, &self.stack) {
            (_, Some(path)) => {
                let text = std::fs::read_to_string(path).map_err(|source| StackError::File {
                    what: "read the stack file",
                    path: path.clone(),
                    source,
                })?;
                let origin = path.display().to_string();
                (StackFile::parse(&text, &origin)?, origin)
            }
            (preset, None) => {
                let p = presets::preset(preset.as_deref().unwrap_or(DEFAULT_PRESET))?;
                (p.file()?, p.origin())
            }
        };
        if let Some(set) = &self.route_set {
            file.route_set = Some(set.clone());
        }
        Stack::from_file(&file, &origin)
    }

    /// Whether the user named no stack at all.
    pub fn is_default(&self) -> bool {
        self.preset.is_none() && self.stack.is_none()
    }
}

/// `iopath up`: run a stack until Ctrl-C or the end of standard input.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct UpArgs {
    /// The stack.
    #[command(flatten)]
    pub choice: StackChoice,
    /// A process per server node on loopback TCP (default: every node in this process, on
    /// in-memory networks).
    #[arg(long)]
    pub processes: bool,
    /// Keep the nodes' state in this directory (created if absent, kept afterwards; a
    /// restart with the same directory recovers it). Default: a temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

/// `iopath node`: run one node of a stack file as a process of its own.
#[derive(clap::Args, Debug, Clone)]
pub struct NodeArgs {
    /// The stack file; every address in it must be `host:port` (`iopath up --processes`
    /// writes such a file).
    #[arg(long)]
    pub stack: PathBuf,
    /// The node to run.
    #[arg(long)]
    pub name: String,
    /// Where the node keeps its state (created if absent).
    #[arg(long)]
    pub dir: PathBuf,
    /// The admin service's address (port 0 picks one; printed on the READY line).
    #[arg(long, default_value = "127.0.0.1:0")]
    pub admin: SocketAddr,
}

/// `iopath demo`: one write and read through a preset stack, explained.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// The preset or stack file (default asci-red-mini).
    #[command(flatten)]
    pub choice: StackChoice,
    /// Bytes per phase (k, m, g suffixes): one striped file of this size, then this much
    /// again split over every client's own file.
    #[arg(long, default_value = "128m", value_parser = iopath_fabric::units::parse_size)]
    pub size: u64,
    /// A process per server node on loopback TCP.
    #[arg(long)]
    pub processes: bool,
    /// Directory for the stack's storage (a temporary directory inside it, removed at the
    /// end). Default: the system's temporary directory.
    #[arg(long)]
    pub dir: Option<PathBuf>,
}

impl Default for DemoArgs {
    fn default() -> Self {
        DemoArgs {
            choice: StackChoice::default(),
            size: 128 << 20,
            processes: false,
            dir: None,
        }
    }
}

/// Runs `iopath up`: starts the stack, prints its nodes, and runs until Ctrl-C or the end of
/// standard input.
pub async fn up(args: UpArgs) -> Result<(), StackError> {
    up_until(&args, &mut std::io::stdout(), wait_for_stop()).await
}

/// [`up`], writing to `out` and stopping when `stop` completes (it is awaited only once the
/// stack is up and printed).
pub async fn up_until(
    args: &UpArgs,
    out: &mut dyn Write,
    stop: impl Future<Output = ()>,
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
    let mut say = |text: String| {
        // Output to a closed terminal is not worth failing the stack over.
        let _ = writeln!(out, "{text}");
        let _ = out.flush();
    };
    say(format!("iopath up: {} ({})", stack.name, stack.origin));
    if !stack.description.is_empty() {
        say(stack.description.clone());
    }
    say(format!("mode: {}", mode.describe()));
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
        Mode::Embedded => {
            let running = EmbeddedStack::start(stack, storage, true).await?;
            let admin = |i: usize| running.admin_addr(i).map(|a| a.to_string());
            say(format!(
                "\n{}",
                describe::node_table(running.stack(), &admin)
            ));
            say("ready: Ctrl-C or the end of standard input stops the stack".into());
            stop.await;
            running.stop().await?;
        }
        Mode::Processes => {
            let launcher = Launcher::this_program()?;
            let running = ProcessStack::start(&stack, storage, &launcher).await?;
            say(format!(
                "stack file: {} (every address resolved; each node process reads it)",
                running.stack_file().display()
            ));
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
            say(
                "client nodes have no process of their own: they run where the application \
                 runs (iopath demo, iopath bench ior), on the addresses above"
                    .into(),
            );
            say("ready: Ctrl-C or the end of standard input stops the stack".into());
            stop.await;
            running.stop().await?;
        }
    }
    say("stopped".into());
    Ok(())
}

/// Waits for Ctrl-C or the end of standard input.
async fn wait_for_stop() {
    let mut stdin = tokio::io::stdin();
    let mut buffer = [0u8; 256];
    let stdin_closed = async {
        // Bounded by the input: each read returns data, or 0 at its end.
        while stdin.read(&mut buffer).await.is_ok_and(|n| n > 0) {}
    };
    tokio::select! {
        _ = tokio::signal::ctrl_c() => eprintln!("Ctrl-C: stopping"),
        _ = stdin_closed => eprintln!("end of standard input: stopping"),
    }
}

/// Runs `iopath node`: one node of a resolved stack file, until its standard input closes,
/// SIGTERM, or an admin's shutdown.
pub async fn node(args: NodeArgs) -> Result<(), StackError> {
    let stack = Stack::load(&args.stack)?;
    let index = stack
        .node_index(&args.name)
        .ok_or_else(|| StackError::BadOption {
            option: "--name".into(),
            why: format!(
                "{} has no node called {:?} (nodes: {})",
                args.stack.display(),
                args.name,
                stack
                    .nodes
                    .iter()
                    .map(|n| n.name.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
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
    let running = RunningNode::start(&stack, index, &[], &args.dir).await?;
    let reason = iopath_admin::process::serve_until_stopped(
        args.admin,
        running.tree.clone(),
        running.info(),
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

/// Runs `iopath demo`, printing as it goes.
pub async fn demo(args: DemoArgs) -> Result<(), StackError> {
    let mut out = std::io::stdout();
    crate::demo::run(&args, &mut out).await.map(drop)
}
