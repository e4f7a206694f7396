//! The `iopath` commands, one file per family, as mini-redis keeps its commands in `src/cmd/`.
//! Each file holds its family's clap definitions (flags, defaults, help) and the glue that
//! turns them into a library's plain configuration, runs it with `anyhow` context, and prints;
//! the libraries know nothing of flags.
//!
//! - [`stack`]: `demo`, `up`, `node` — a stack run in this process or as processes.
//! - [`selftest`]: `selftest`, and the hidden `selftest-node` its node processes run.
//! - [`topo`]: `topo analyze | routes | layout`, the torus model.
//! - [`lctl`], [`lnetctl`]: a running node's parameters and routes, over its admin service.
//! - [`journal`], [`ior`]: `bench journal` and `bench ior`.
//! - [`lfs`]: Lustre's lfs against a running stack.
//! - [`mount`]: a running stack mounted with FUSE, for unmodified programs.
//! - [`oss`]: an object storage server as a process of its own.

pub mod ior;
pub mod journal;
pub mod lctl;
pub mod lfs;
pub mod lnetctl;
pub mod mount;
pub mod oss;
pub mod selftest;
pub mod stack;
pub mod topo;

use clap::{Parser, Subcommand};

/// Emulate the HPC I/O path — clients, forwarders, routers, journaling storage servers — and
/// measure how bytes travel through it.
#[derive(Debug, Parser)]
#[command(name = "iopath", version, about)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// Every command, in the order `iopath --help` lists them.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a preset stack in this process, write and read back data through the I/O path
    /// with verification, and show what happened — the place to start.
    Demo(stack::DemoArgs),
    /// Run a whole stack (a preset or a stack file): in this process, or a process per node.
    Up(stack::UpArgs),
    /// Run one node of a stack file (what `iopath up --processes` starts for each node).
    Node(stack::NodeArgs),
    /// lnet_selftest-style bulk and ping tests between groups of fabric nodes.
    Selftest(selftest::SelftestArgs),
    /// The torus model: link loads, placement, LNET routes, router layout.
    #[command(subcommand)]
    Topo(topo::TopoCommand),
    /// Read and set parameters of a running node, as Lustre's lctl does.
    Lctl(lctl::LctlArgs),
    /// Configure a running node's LNet routes, as lnetctl does.
    Lnetctl(lnetctl::LnetctlArgs),
    /// Benchmarks beside baselines measured in the same run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Lustre's lfs against a running stack: setstripe, getstripe, ls, stat, put, get, rm.
    Lfs(lfs::LfsArgs),
    /// Mount a running stack on a directory (FUSE): any program's I/O goes through the
    /// emulated path.
    Mount(mount::MountArgs),
    /// Run an object storage server (OSS) with its targets, until stopped.
    Oss(oss::OssArgs),
    /// A node of a multi-process selftest (started by `iopath selftest --processes`).
    #[command(hide = true)]
    SelftestNode(selftest::SelftestNodeArgs),
}

/// `iopath bench`'s benchmarks.
#[derive(Debug, Subcommand)]
pub enum BenchCommand {
    /// Journal commit cost, as the Spider paper measured it: raw disk (iopath's io_uring
    /// writer, and fio), OST writes with sync commits, with async commits, and optionally an
    /// external journal.
    Journal(journal::JournalArgs),
    /// IOR on a stack: IOR's flags and output, every byte read back and checked, beside the
    /// raw disk (and loopback TCP with --processes) measured in the same run.
    Ior(ior::IorArgs),
    /// fio through an iopath mount, beside the same fio through a FUSE passthrough (bindfs)
    /// and on the raw directory, in one run.
    Mount(mount::BenchMountArgs),
}

/// Runs the command the command line names, to its end.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo(args) => stack::demo(args).await,
        Command::Up(args) => stack::up(args).await,
        Command::Node(args) => stack::node(args).await,
        Command::Selftest(args) => selftest::run(args).await,
        Command::Topo(command) => topo::run(command),
        Command::Lctl(args) => lctl::run(args).await,
        Command::Lnetctl(args) => lnetctl::run(args).await,
        Command::Bench(BenchCommand::Journal(args)) => journal::run(args).await,
        Command::Bench(BenchCommand::Ior(args)) => ior::run(args).await,
        Command::Bench(BenchCommand::Mount(args)) => mount::bench(args).await,
        Command::Lfs(args) => lfs::run(args).await,
        Command::Mount(args) => mount::run(args).await,
        Command::Oss(args) => oss::run(args).await,
        Command::SelftestNode(args) => selftest::node(args).await,
    }
}
