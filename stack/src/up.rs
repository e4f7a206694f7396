//! `iopath up` and `iopath node`: a whole stack, or one node of a resolved stack file as a
//! process of its own, run until told to stop.

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;

use crate::choice::StackChoice;
use crate::describe;
use crate::error::StackError;
use crate::runtime::{EmbeddedStack, Launcher, Mode, ProcessStack, RunningNode, StorageDir};
use crate::schema::{RoleName, Stack};

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
}

/// What `iopath node` runs: one node of a stack file, as a process of its own.
#[derive(Debug, Clone)]
pub struct NodeProcessConfig {
    /// The stack file; every address in it must be `host:port` (`iopath up --processes`
    /// writes such a file).
    pub stack: PathBuf,
    /// The node to run.
    pub name: String,
    /// Where the node keeps its state (created if absent).
    pub dir: PathBuf,
    /// The admin service's address (port 0 picks one; printed on the READY line).
    pub admin: SocketAddr,
}

/// Runs `iopath up`: starts the stack, prints its nodes to `out`, and runs until `stop`
/// completes (it is awaited only once the stack is up and printed).
pub async fn up_until(
    args: &UpConfig,
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

/// Runs `iopath node`: one node of a resolved stack file, until its standard input closes,
/// SIGTERM, or an admin's shutdown.
pub async fn run_node(args: &NodeProcessConfig) -> Result<(), StackError> {
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
