//! The journal benchmark by hand: what a synchronous journal commit per write costs, and how
//! much of it asynchronous commits win back (the Spider paper's table, on this machine).
//!
//! ```text
//! cargo run --release -p iopath-storage-server --example journal_bench -- --dir /tmp
//! cargo run --release -p iopath-storage-server --example journal_bench -- --dir /tmp --disk-model --mib-per-object 32
//! ```
//!
//! `--json` prints the result as JSON instead of the table. Run by the test suite with a tiny
//! workload (see `tests/examples.rs`).

use anyhow::Context;
use clap::Parser;
use iopath_storage_server::bench::{BenchProgress, JournalBenchConfig, run_journal_bench};
use iopath_storage_server::engine::modeled::DiskModel;
use iopath_storage_server::engine::{EngineConfig, EngineKind};
use std::io::Write;
use std::path::PathBuf;

/// Journal benchmark: raw baseline vs OST writes with sync and async journal commits.
#[derive(Debug, Parser)]
struct Args {
    /// Directory on the file system to measure (each phase uses a fresh temporary directory in it).
    #[arg(long, default_value = "/tmp")]
    dir: PathBuf,
    /// Also measure with the journal in a temporary directory here (external journal).
    #[arg(long)]
    external_journal_dir: Option<PathBuf>,
    /// Concurrent writers.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Objects written.
    #[arg(long, default_value_t = 4)]
    objects: usize,
    /// Request size, KiB.
    #[arg(long, default_value_t = 1024)]
    request_kib: usize,
    /// MiB written to each object.
    #[arg(long, default_value_t = 256)]
    mib_per_object: u64,
    /// Async commit interval, ms.
    #[arg(long, default_value_t = 1000)]
    commit_interval_ms: u64,
    /// Records per commit (async count trigger).
    #[arg(long, default_value_t = 64)]
    group_records_max: usize,
    /// Repetitions; figures are the best.
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// Use the pread/pwrite engine instead of io_uring.
    #[arg(long)]
    psync: bool,
    /// Model the disk (a SATA RAID tier: 190 MiB/s, 8 ms seeks) instead of measuring it raw.
    #[arg(long)]
    disk_model: bool,
    /// Modeled bandwidth, MiB/s (with --disk-model).
    #[arg(long, default_value_t = DiskModel::sata_tier().bandwidth_mib_s)]
    model_bandwidth_mib_s: f64,
    /// Modeled seek between data and journal, ms (with --disk-model).
    #[arg(long, default_value_t = DiskModel::sata_tier().seek_ms)]
    model_seek_ms: f64,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args = Args::parse();
    let mut config = JournalBenchConfig::new(&args.dir);
    config.external_journal_dir = args.external_journal_dir;
    config.threads = args.threads;
    config.objects = args.objects;
    config.request_size_bytes = args.request_kib * 1024;
    config.bytes_per_object = args.mib_per_object << 20;
    config.commit_interval_ms = args.commit_interval_ms;
    config.group_records_max = args.group_records_max;
    config.runs = args.runs;
    config.engine = EngineConfig {
        kind: if args.psync {
            EngineKind::Psync
        } else {
            EngineKind::Uring
        },
        ..EngineConfig::default()
    };
    if args.disk_model {
        config.disk_model = Some(DiskModel {
            bandwidth_mib_s: args.model_bandwidth_mib_s,
            seek_ms: args.model_seek_ms,
        });
    }
    // The progress line rewrites itself on stderr.
    let progress = |p: &BenchProgress| {
        let mut stderr = std::io::stderr();
        let _ = write!(stderr, "\r\x1b[2K{}", p.line());
        let _ = stderr.flush();
    };
    let result = run_journal_bench(&config, &progress)
        .await
        .context("run the journal benchmark")?;
    eprintln!();
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&result).context("encode the result")?
        );
    } else {
        print!("{}", result.render_table());
        println!(
            "sync/baseline {:.3}, async/baseline {:.3} (disk {})",
            result.sync_ratio, result.async_ratio, result.disk
        );
    }
    Ok(())
}
