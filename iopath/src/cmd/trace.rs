//! `iopath trace`: one write and one read followed hop by hop, on an idle stack or the Nth
//! write of a load (`--load`). The progress lines go to
//! standard error, the steps (or `--json`) to standard output, and with `--svg` each request
//! as a sequence diagram.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use iopath_bench::trace::{self, JournalChoice, LoadConfig, TraceConfig};
use iopath_fabric::units::parse_size;
use iopath_stack::schema::FyodMode;

use super::stack::StackArgs;

/// The write traced in a load, by default: late enough that every writer is running.
const DEFAULT_NTH: u64 = 16;

/// `iopath trace`'s options.
#[derive(clap::Args, Debug, Clone)]
#[command(mut_arg("preset", |a| a.help(super::stack::preset_help(iopath_stack::ROUTED_PRESET))))]
pub struct TraceArgs {
    /// The stack (default spider-mini-routed: client, router, storage servers).
    #[command(flatten)]
    choice: StackArgs,
    /// A process per server node on loopback TCP (their logs are read over their admin
    /// service).
    #[arg(long)]
    processes: bool,
    /// Trace on a stack `iopath launch` started, given the file it wrote: the requests go from
    /// a guest client node of this command's own, here, made as the stack's first client node
    /// is (its network, routes and fyod), so it runs beside a program holding the stack's
    /// client nodes (`bench ior --attach`); every server node's log is read over its admin
    /// service on its host.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["processes", "preset", "stack"])]
    attach: Option<std::path::PathBuf>,
    /// Trace a write inside a load: WRITERS writers (at most 64), spread over the client nodes
    /// in turn (all on the guest with --attach), each streaming --size writes to a file of its
    /// own, one in flight each; the write traced is the --nth the first client node issues. The
    /// load stops once it returns (each writer writes at most 2 x --nth requests, for at most
    /// 120 s), and its files are removed.
    #[arg(long, value_name = "WRITERS")]
    load: Option<usize>,
    /// With --load: which of the first client node's writes to trace, counted from 1 (at most
    /// 1024).
    #[arg(long, value_name = "N", default_value_t = DEFAULT_NTH, requires = "load")]
    nth: u64,
    /// Bytes of the write, and of the read of them back (k, m suffixes; at most 64m).
    #[arg(long, default_value = "1m", value_parser = parse_size)]
    size: u64,
    /// The file's stripe count (-1: every target). Default: the stack's layout.
    #[arg(long, allow_hyphen_values = true)]
    stripe_count: Option<i64>,
    /// The file's stripe size (a multiple of 64k). Default: the stack's layout.
    #[arg(long, value_parser = parse_size)]
    stripe_size: Option<u64>,
    /// Run every storage server's journal in this mode: sync (commit, then reply) or async
    /// (reply, commit in groups). Default: the stack file's.
    #[arg(long, value_parser = ["sync", "async"])]
    journal: Option<String>,
    /// Run every fyod in this mode: pfs (the storage servers pull from the compute node) or
    /// ufs (the fyod pulls into its own buffers). Default: the stack file's.
    #[arg(long, value_parser = ["pfs", "ufs"])]
    fyod_mode: Option<String>,
    /// Print the report as JSON instead of the steps.
    #[arg(long)]
    json: bool,
    /// Also draw each request as an SVG sequence diagram: FILE gets the write, and FILE with
    /// `-read` before its extension the read.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Directory for the stack's storage (a temporary directory inside it, removed at the end).
    #[arg(long)]
    dir: Option<PathBuf>,
}

/// Runs `iopath trace`.
pub async fn run(args: TraceArgs) -> anyhow::Result<()> {
    let config = TraceConfig {
        choice: args.choice.or_preset(iopath_stack::ROUTED_PRESET),
        processes: args.processes,
        attach: args.attach,
        load: args.load.map(|writers| LoadConfig {
            writers,
            nth: args.nth,
        }),
        size: args.size,
        stripe_count: args.stripe_count,
        stripe_size: args.stripe_size,
        journal: args.journal.as_deref().map(|j| match j {
            "sync" => JournalChoice::Sync,
            _ => JournalChoice::Async,
        }),
        fyod_mode: args.fyod_mode.as_deref().map(|m| match m {
            "ufs" => FyodMode::Ufs,
            _ => FyodMode::Pfs,
        }),
        dir: args.dir,
    };
    let report = trace::run(&config, &mut std::io::stderr()).await?;
    if let Some(path) = &args.svg {
        for request in &report.requests {
            let file = svg_path(path, &request.op);
            std::fs::write(&file, trace::sequence(&report, request).svg())
                .with_context(|| format!("write the sequence diagram {}", file.display()))?;
            eprintln!("{} drawn in {}", request.op, file.display());
        }
    }
    let mut out = std::io::stdout();
    if args.json {
        let json = serde_json::to_string_pretty(&report).context("encode the report as JSON")?;
        writeln!(out, "{json}").context("write the report")?;
    } else {
        write!(out, "{}", trace::render(&report)).context("write the report")?;
    }
    Ok(())
}

/// `trace.svg` for the write, `trace-read.svg` for the read.
fn svg_path(path: &Path, op: &str) -> PathBuf {
    if op == "write" {
        return path.to_owned();
    }
    let stem = path
        .file_stem()
        .map_or_else(|| "trace".into(), |s| s.to_string_lossy().into_owned());
    let name = match path.extension() {
        Some(ext) => format!("{stem}-{op}.{}", ext.to_string_lossy()),
        None => format!("{stem}-{op}"),
    };
    path.with_file_name(name)
}
