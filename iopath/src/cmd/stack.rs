//! `iopath demo`, `iopath up`, `iopath node`: a stack run in this process or as a process per
//! node — the flags, and the stdout and signals around `iopath_stack::demo` and
//! `iopath_stack::up`.

use std::net::SocketAddr;
use std::path::PathBuf;

use iopath_fabric::units::parse_size;
use iopath_stack::StackChoice;
use iopath_stack::demo::DemoConfig;
use iopath_stack::up::{NodeProcessConfig, UpConfig};
use tokio::io::AsyncReadExt;

/// `--preset`'s help for a command whose default preset is `default`: a command that
/// defaults to another preset than asci-red-mini says so with
/// `#[command(mut_arg("preset", |a| a.help(preset_help(PRESET))))]`.
pub fn preset_help(default: &str) -> String {
    let names = ["asci-red-mini", "spider-mini", "spider-mini-routed"]
        .map(|name| {
            if name == default {
                format!("{name} (the default)")
            } else {
                name.to_owned()
            }
        })
        .join(", ");
    format!("A preset: {names}")
}

/// Where a stack comes from: `--preset NAME` or `--stack FILE`, and `--route-set`.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct StackArgs {
    /// A preset: asci-red-mini (the default), spider-mini, spider-mini-routed.
    #[arg(long, conflicts_with = "stack")]
    preset: Option<String>,
    /// A stack file (TOML).
    #[arg(long)]
    stack: Option<PathBuf>,
    /// The route set in force, for stacks that have several (spider-mini-routed:
    /// round-robin, fine-grained).
    #[arg(long)]
    route_set: Option<String>,
}

impl StackArgs {
    /// The stack asked for, or preset `default` when neither `--preset` nor `--stack` is.
    pub fn or_preset(self, default: &str) -> StackChoice {
        let mut choice = StackChoice::from(self);
        if choice.preset.is_none() && choice.stack.is_none() {
            choice.preset = Some(default.to_owned());
        }
        choice
    }
}

impl From<StackArgs> for StackChoice {
    fn from(args: StackArgs) -> StackChoice {
        StackChoice {
            preset: args.preset,
            stack: args.stack,
            route_set: args.route_set,
        }
    }
}

/// `iopath up`: run a stack until Ctrl-C or the end of standard input.
#[derive(clap::Args, Debug, Clone, Default)]
pub struct UpArgs {
    /// The stack.
    #[command(flatten)]
    choice: StackArgs,
    /// A process per server node on loopback TCP (default: every node in this process, on
    /// in-memory networks).
    #[arg(long)]
    processes: bool,
    /// Keep the nodes' state in this directory (created if absent, kept afterwards; a
    /// restart with the same directory recovers it). Default: a temporary directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Mount the stack on this (existing, empty) directory once it is up, from its first
    /// client node, as `iopath mount` does; unmounted when the stack stops.
    #[arg(long, value_name = "DIR")]
    mount: Option<PathBuf>,
    /// Every node serves Prometheus's `/metrics` on a loopback port of its own, listed after
    /// the node table (embedded or with --processes).
    #[arg(long)]
    metrics: bool,
    /// Serve the live view on this address (`127.0.0.1:8080`; port 0 picks one): a page
    /// that draws the stack and follows bandwidth, credits, router buffers, journal commits
    /// and recovery every second. Printed once the stack is up.
    #[arg(long, value_name = "ADDR")]
    web: Option<SocketAddr>,
}

/// `iopath node`: run one node of a stack file as a process of its own, until SIGTERM,
/// Ctrl-C or an admin's shutdown (`--watch-stdin`: or the end of standard input).
#[derive(clap::Args, Debug, Clone)]
pub struct NodeArgs {
    /// The stack file, `-` to read it from standard input; every address in it must be
    /// `host:port` (`iopath up --processes` and `iopath launch` write such files).
    #[arg(long)]
    stack: PathBuf,
    /// The node to run.
    #[arg(long)]
    name: String,
    /// Where the node keeps its state (created if absent).
    #[arg(long)]
    dir: PathBuf,
    /// The admin service's address (port 0 picks one; printed on the READY line).
    #[arg(long, default_value = "127.0.0.1:0")]
    admin: SocketAddr,
    /// Serve Prometheus's `/metrics` on this address (port 0 picks one; printed on the READY
    /// line after the admin address).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// Also stop when standard input closes: for a parent that starts the node and holds its
    /// input open for as long as it wants it (`iopath up --processes` does).
    #[arg(long)]
    watch_stdin: bool,
    /// The stack's admin secret file (mode 0600), which set_param and shutdown callers must
    /// match; `-` reads the secret from standard input's first line, before the stack file
    /// (`iopath launch` does). Without it, a new secret is written to DIR/admin.secret and its
    /// path printed on standard error.
    #[arg(long, value_name = "FILE")]
    secret_file: Option<PathBuf>,
    /// Where the model of a torus crossed hop by hop runs, NETWORK=ADDR (repeatable): the
    /// process that started the stack serves it (`iopath up --processes` gives this).
    #[arg(long, value_name = "NETWORK=ADDR", value_parser = iopath_stack::up::parse_torus_switch)]
    torus_switch: Vec<(String, SocketAddr)>,
}

/// `iopath demo`: one write and read through a preset stack, explained.
#[derive(clap::Args, Debug, Clone)]
pub struct DemoArgs {
    /// The preset or stack file (default asci-red-mini).
    #[command(flatten)]
    choice: StackArgs,
    /// Bytes per phase (k, m, g suffixes): one striped file of this size, then this much
    /// again split over every client's own file.
    #[arg(long, default_value = "128m", value_parser = parse_size)]
    size: u64,
    /// A process per server node on loopback TCP.
    #[arg(long)]
    processes: bool,
    /// Run on a stack `iopath launch` started, given the file it wrote: the demo's clients
    /// run here on the stack's client nodes, the servers where launch put them.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["processes", "preset", "stack"])]
    attach: Option<PathBuf>,
    /// Crash this storage server after the striped write, before its journal commits (with
    /// --processes: SIGKILL), and start it again on its disk: the writer replays what it kept,
    /// and the read back shows nothing was lost.
    #[arg(long, value_name = "OSS", conflicts_with = "attach")]
    crash: Option<String>,
    /// Directory for the stack's storage (a temporary directory inside it, removed at the
    /// end). Default: the system's temporary directory.
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Runs `iopath up`: starts the stack, prints its nodes, and runs until Ctrl-C or the end of
/// standard input.
pub async fn up(args: UpArgs) -> anyhow::Result<()> {
    let config = UpConfig {
        choice: args.choice.into(),
        processes: args.processes,
        dir: args.dir,
        metrics: args.metrics,
        web: args.web,
    };
    let mounter = args.mount.map(|dir| -> iopath_stack::up::Mounter {
        let runtime = tokio::runtime::Handle::current();
        Box::new(move |client| {
            iopath_mount::Mount::new(client, runtime, &dir)
                .map(|m| Box::new(m) as Box<dyn std::any::Any + Send>)
                .map_err(|e| e.to_string())
        })
    });
    iopath_stack::up::up_until(&config, &mut std::io::stdout(), wait_for_stop(), mounter).await?;
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
pub async fn node(args: NodeArgs) -> anyhow::Result<()> {
    let config = NodeProcessConfig {
        stack: args.stack,
        name: args.name,
        dir: args.dir,
        admin: args.admin,
        metrics: args.metrics,
        secret_file: args.secret_file,
        watch_stdin: args.watch_stdin,
        torus_switches: args.torus_switch,
    };
    iopath_stack::up::run_node(&config).await?;
    Ok(())
}

/// Runs `iopath demo`, printing as it goes.
pub async fn demo(args: DemoArgs) -> anyhow::Result<()> {
    let config = DemoConfig {
        choice: args.choice.into(),
        size: args.size,
        processes: args.processes,
        attach: args.attach,
        crash: args.crash,
        dir: args.dir,
    };
    iopath_stack::demo::run(&config, &mut std::io::stdout()).await?;
    Ok(())
}
