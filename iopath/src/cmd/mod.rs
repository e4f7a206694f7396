//! The `iopath` commands, one file per family, as mini-redis keeps its commands in `src/cmd/`.
//! Each file holds its family's clap definitions (flags, defaults, help) and the glue that
//! turns them into a library's plain configuration, runs it with `anyhow` context, and prints;
//! the libraries know nothing of flags.
//!
//! - [`stack`]: `demo`, `up`, `node` — a stack run in this process or as processes.
//! - [`launch`]: `launch` — a stack across the hosts of a Slurm job or a hostfile.
//! - [`selftest`]: `selftest`, and the hidden `selftest-node` its node processes run.
//! - [`topo`]: `topo analyze | routes | layout`, the torus model.
//! - [`lctl`], [`lnetctl`]: a running node's parameters and routes, over its admin service.
//! - [`iorcd`]: IORCD's congestion records from routers, and the paper's analyses of them.
//! - [`journal`], [`ior`]: `bench journal` and `bench ior`.
//! - [`lfs`]: Lustre's lfs against a running stack.
//! - [`mount`]: a running stack mounted with FUSE, for unmodified programs.
//! - [`trace`]: one write and one read followed hop by hop.
//! - [`oss`]: an object storage server as a process of its own.
//! - [`sim`]: the seeded whole-stack simulation over many seeds.
//! - [`output`]: what every command writes to standard output, and how a write fails.
//! - [`soak`]: a stack of processes under a verified workload, its nodes killed on a schedule.

/// `print!` for a command's results: the text to standard output, flushed, or the write's error
/// (`> /dev/full`; a reader that went away, which `main` ends quietly with 141) instead of
/// `print!`'s panic.
macro_rules! out {
    ($($arg:tt)*) => {
        $crate::cmd::output::write_out(&format!($($arg)*))
    };
}

/// [`out!`] with a newline.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::cmd::output::write_out(&format!("{}\n", format_args!($($arg)*)))
    };
}

pub mod fyods;
pub mod ior;
pub mod iorcd;
pub mod journal;
pub mod lab;
pub mod launch;
pub mod lctl;
pub mod lfs;
pub mod lnetctl;
pub mod man;
pub mod mount;
pub mod oss;
pub mod output;
pub mod placement;
pub mod routing;
pub mod selftest;
pub mod sim;
pub mod soak;
pub mod stack;
pub mod topo;
pub mod trace;

use anyhow::Context as _;
use clap::{Parser, Subcommand};

/// Emulate the HPC I/O path — clients, forwarders, routers, journaling storage servers — and
/// measure how bytes travel through it.
#[derive(Debug, Parser)]
#[command(name = "iopath", version, about, after_help = LOGGING_HELP)]
pub struct Cli {
    #[command(subcommand)]
    command: Command,
}

/// What `iopath --help` says of the log, after the commands.
pub const LOGGING_HELP: &str = "\
Logging: messages go to standard error, warnings and errors only by default. Set IOPATH_LOG (or,
if it is unset, RUST_LOG) to error, warn, info, debug or trace, or to a tracing filter such as
`iopath_storage_server=debug,info`; a value that is neither is an error. Colour only when
standard error is a terminal.";

impl Cli {
    /// How the command takes SIGINT and SIGTERM: those that run until stopped stop
    /// themselves (`up`, `launch`, `mount` when told, and `sim`, which finishes the seeds under
    /// way; `node`, `oss` in the libraries they run); `main` ends every other at the first
    /// signal.
    pub fn signal_handling(&self) -> crate::signals::Handling {
        use crate::signals::Handling;
        match self.command {
            Command::Up(_) | Command::Launch(_) | Command::Mount(_) | Command::Sim(_) => {
                Handling::Tells
            }
            Command::Node(_) | Command::Oss(_) => Handling::Own,
            _ => Handling::Ends,
        }
    }
}

/// Every command, in the order `iopath --help` lists them.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Start a preset stack in this process, write and read back data through the I/O path
    /// with verification, and show what happened — the place to start.
    Demo(stack::DemoArgs),
    /// Run a whole stack (a preset or a stack file): in this process, or a process per node.
    Up(stack::UpArgs),
    /// Run one node of a stack file (what `iopath up --processes` and `iopath launch` start
    /// for each node).
    Node(stack::NodeArgs),
    /// Run a stack across hosts: inside a Slurm job (srun), or on a hostfile's hosts through
    /// a command template (ssh, pdsh); writes a stack file the tools take.
    Launch(launch::LaunchArgs),
    /// lnet_selftest-style bulk and ping tests between groups of fabric nodes.
    Selftest(selftest::SelftestArgs),
    /// The torus model: link loads, placement, LNET routes, router layout.
    #[command(subcommand)]
    Topo(topo::TopoCommand),
    /// Read and set parameters of a running node, and list its devices, as Lustre's lctl does.
    Lctl(lctl::LctlArgs),
    /// Configure a running node's LNet routes, as lnetctl does.
    Lnetctl(lnetctl::LnetctlArgs),
    /// IORCD: collect routers' congestion records, and analyse them as the Titan paper did.
    #[command(subcommand)]
    Iorcd(iorcd::IorcdCommand),
    /// Follow one write and one read hop by hop: every frame, the credits each hop saw, the
    /// bulk pulls and their checksums, the journal record, the commit, the reply.
    Trace(trace::TraceArgs),
    /// Benchmarks beside baselines measured in the same run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Lustre's lfs against a running stack: setstripe, getstripe, mkdir, find, df, ls, stat,
    /// put, get, rm.
    Lfs(lfs::LfsArgs),
    /// Mount a running stack on a directory (FUSE): any program's I/O goes through the
    /// emulated path.
    Mount(mount::MountArgs),
    /// Run an object storage server (OSS) with its targets, until stopped.
    Oss(oss::OssArgs),
    /// The seeded whole-stack simulation: clients, routers and storage servers on one thread
    /// and a simulated clock, under drops, delays, partitions, bit flips and crashes, each seed
    /// checked by an oracle; a failing seed replays exactly.
    Sim(sim::SimArgs),
    /// A stack of processes under a verified workload for a given time, its storage servers,
    /// routers, fyods and metadata service killed and started again on a schedule and fail
    /// points flipped: faults injected, bytes lost (must be 0), recovery times, memory.
    Soak(soak::SoakArgs),
    /// Print a shell completion script for iopath (bash, zsh, fish, elvish, powershell).
    Completions {
        /// The shell.
        shell: clap_complete::Shell,
    },
    /// Print iopath's man page (roff) to standard output, or with --dir write one page per
    /// command there (iopath.1, iopath-lfs.1, ...).
    Man {
        /// Write a page per command into this directory instead.
        #[arg(long)]
        dir: Option<std::path::PathBuf>,
    },
    /// A node of a multi-process selftest (started by `iopath selftest --processes`).
    #[command(hide = true)]
    SelftestNode(selftest::SelftestNodeArgs),
    /// This host's name and interface addresses with their prefixes, one line (what `iopath
    /// launch` asks each host before placing a stack).
    #[command(hide = true)]
    Interfaces,
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
    /// IORCD's findings (Titan paper 002) on a routed stack: router congestion against IOR
    /// bandwidth at rising load, and the degraded rule over healthy runs, runs with the
    /// storage impeded and runs with starved router buffers.
    Iorcd(iorcd::ExperimentArgs),
    /// What watching costs: IOR with IORCD sampling every router and fyod each second and
    /// every server node's /metrics scraped each second, against IOR without them, in one run.
    Monitoring(iorcd::MonitoringArgs),
    /// Compute nodes against fyods (ASCI Red paper 004, Tables 2 and 3): aggregate write and
    /// read on a modeled Janus whose fyods stand on modeled service nodes, beside the paper's.
    Fyods(fyods::FyodsArgs),
    /// Placement (Spider paper 000): writers where the launcher put them against each
    /// server's nearest free nodes, on an emulated torus crossed hop by hop, over server
    /// counts, beside the flow model's prediction and the paper's figures.
    Placement(placement::PlacementArgs),
    /// Routing (Spider paper 000, Fig. 10; Titan paper 001): baseline, nearest, round-robin,
    /// projection and fine-grained routing with real LNET routers on an emulated torus, each
    /// with launcher order and placed writers, beside the flow model and the paper's figures.
    Routing(routing::RoutingArgs),
    /// IOR on the spider-cluster preset across five hosts made of network namespaces (root),
    /// beside the same stack as processes on loopback and iperf3 over the hosts' links.
    Cluster(launch::BenchClusterArgs),
}

/// Runs the command the command line names, to its end.
pub async fn run(cli: Cli) -> anyhow::Result<()> {
    match cli.command {
        Command::Demo(args) => stack::demo(args).await,
        Command::Up(args) => stack::up(args).await,
        Command::Node(args) => stack::node(args).await,
        Command::Launch(args) => launch::run(args).await,
        Command::Selftest(args) => selftest::run(args).await,
        Command::Topo(command) => topo::run(command),
        Command::Lctl(args) => lctl::run(args).await,
        Command::Lnetctl(args) => lnetctl::run(args).await,
        Command::Iorcd(command) => iorcd::run(command).await,
        Command::Trace(args) => trace::run(args).await,
        Command::Bench(BenchCommand::Journal(args)) => journal::run(args).await,
        Command::Bench(BenchCommand::Ior(args)) => ior::run(args).await,
        Command::Bench(BenchCommand::Mount(args)) => mount::bench(args).await,
        Command::Bench(BenchCommand::Iorcd(args)) => iorcd::experiment(args).await,
        Command::Bench(BenchCommand::Monitoring(args)) => iorcd::monitoring(args).await,
        Command::Bench(BenchCommand::Cluster(args)) => launch::bench(args).await,
        Command::Bench(BenchCommand::Placement(args)) => placement::run(args).await,
        Command::Bench(BenchCommand::Fyods(args)) => fyods::run(args).await,
        Command::Bench(BenchCommand::Routing(args)) => routing::run(args).await,
        Command::Lfs(args) => lfs::run(args).await,
        Command::Mount(args) => mount::run(args).await,
        Command::Oss(args) => oss::run(args).await,
        Command::Sim(args) => sim::run(args).await,
        Command::Soak(args) => soak::run(args).await,
        Command::SelftestNode(args) => selftest::node(args).await,
        Command::Interfaces => launch::interfaces(),
        Command::Completions { shell } => {
            let mut command = <Cli as clap::CommandFactory>::command();
            // Into memory first: the generator panics on a failed write (a closed pipe).
            let mut script = Vec::new();
            clap_complete::generate(shell, &mut command, "iopath", &mut script);
            std::io::Write::write_all(&mut std::io::stdout(), &script)
                .context("write the completion script")
        }
        Command::Man { dir } => man(dir),
    }
}

/// `iopath man`: the top page to standard output, or every command's page into `dir`.
fn man(dir: Option<std::path::PathBuf>) -> anyhow::Result<()> {
    let command = <Cli as clap::CommandFactory>::command();
    match dir {
        None => {
            let page = man::top_page(command).context("render the man page")?;
            std::io::Write::write_all(&mut std::io::stdout(), &page).context("write the man page")
        }
        Some(dir) => {
            std::fs::create_dir_all(&dir).with_context(|| format!("create {}", dir.display()))?;
            man::write_pages(command, &dir)
                .with_context(|| format!("write the man pages into {}", dir.display()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every command, by its words (`bench iorcd`), under `command`.
    fn commands(command: &clap::Command, words: &str, out: &mut Vec<(String, clap::Command)>) {
        for sub in command.get_subcommands() {
            let path = format!("{words} {}", sub.get_name()).trim().to_owned();
            out.push((path.clone(), sub.clone()));
            commands(sub, &path, out);
        }
    }

    /// A help text without clap's own `[default: ...]` and `[possible values: ...]` notes.
    fn prose(help: &str) -> String {
        let mut text = help.to_owned();
        for marker in ["[default: ", "[possible values: "] {
            while let Some(start) = text.find(marker) {
                let end = text[start..]
                    .find(']')
                    .map_or(text.len(), |e| start + e + 1);
                text.replace_range(start..end, "");
            }
        }
        text
    }

    /// A help text that names a preset as a default names the one the command takes: its
    /// `--preset` default, which is the value the command runs with (three help texts once
    /// said asci-red-mini where the command ran spider-mini or spider-mini-routed).
    #[test]
    fn every_preset_a_help_text_names_as_a_default_is_the_one_the_command_takes() {
        let mut all = Vec::new();
        commands(&<Cli as clap::CommandFactory>::command(), "", &mut all);
        let mut checked = 0;
        for (words, mut command) in all {
            // `--preset` as the stacks' presets (`topo` has machines of its own).
            let stack_preset = command
                .get_arguments()
                .find(|a| {
                    a.get_id() == "preset"
                        && a.get_possible_values()
                            .iter()
                            .any(|v| v.get_name() == iopath_stack::DEFAULT_PRESET)
                })
                .cloned();
            let default = stack_preset
                .as_ref()
                .and_then(|a| a.get_default_values().first())
                .map(|v| v.to_string_lossy().into_owned());
            let help = prose(&command.render_long_help().to_string());
            for sentence in help.split(['.', ';', '\n']) {
                if !sentence.contains("default") {
                    continue;
                }
                for preset in iopath_stack::PRESETS {
                    let named = sentence.match_indices(preset.name).any(|(at, name)| {
                        // The whole name, not the start of a longer one.
                        !sentence[at + name.len()..].starts_with('-')
                    });
                    if named {
                        checked += 1;
                        assert_eq!(
                            default.as_deref(),
                            Some(preset.name),
                            "`iopath {words} --help` names {} as a default: {sentence:?}",
                            preset.name
                        );
                    }
                }
            }
            // Where the command takes a preset, it has a default, and one there is.
            if stack_preset.is_some() {
                let default = default.unwrap_or_default();
                assert!(
                    iopath_stack::preset(&default).is_ok(),
                    "iopath {words}: --preset defaults to {default:?}, which is no preset"
                );
                checked += 1;
            }
        }
        assert!(checked >= 8, "the stack commands were found: {checked}");
    }
}
