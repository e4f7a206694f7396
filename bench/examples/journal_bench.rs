//! The journal benchmark by hand: what a synchronous journal commit per write costs, and how
//! much of it asynchronous commits win back (the Spider paper's table, on this machine) — the
//! in-process phases of `iopath bench journal`, without fio or sizing.
//!
//! ```text
//! cargo run --release -p iopath-bench --example journal_bench -- --dir /tmp
//! cargo run --release -p iopath-bench --example journal_bench -- --dir /tmp --disk-model --mib-per-object 32
//! ```
//!
//! Options: `--dir DIR`, `--external-journal-dir DIR`, `--threads N`, `--objects N`,
//! `--request-kib N`, `--mib-per-object N`, `--commit-interval-ms N`, `--group-records-max N`,
//! `--runs N`, `--psync`, `--disk-model` (a SATA RAID tier: 190 MiB/s, 8 ms seeks),
//! `--model-bandwidth-mib-s X`, `--model-seek-ms X`, and `--json` to print the result as JSON
//! instead of the table. Run by the test suite with a tiny workload (see `tests/examples.rs`).

use std::error::Error;
use std::str::FromStr;

use iopath_bench::journal::{JournalBenchConfig, run_journal_bench};
use iopath_bench::writers::BenchProgress;
use iopath_storage_server::engine::modeled::DiskModel;
use iopath_storage_server::engine::{EngineConfig, EngineKind};

#[tokio::main]
async fn main() -> Result<(), Box<dyn Error>> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let mut config = JournalBenchConfig::new("/tmp");
    let mut model = DiskModel::sata_tier();
    let (mut disk_model, mut json) = (false, false);
    let mut args = std::env::args().skip(1);
    // Bounded by the arguments: each pass takes one flag, and its value if it has one.
    while let Some(flag) = args.next() {
        let mut value = || args.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--dir" => config.dir = value()?.into(),
            "--external-journal-dir" => config.external_journal_dir = Some(value()?.into()),
            "--threads" => config.threads = number(&value()?)?,
            "--objects" => config.objects = number(&value()?)?,
            "--request-kib" => config.request_size_bytes = number::<usize>(&value()?)? * 1024,
            "--mib-per-object" => config.bytes_per_object = number::<u64>(&value()?)? << 20,
            "--commit-interval-ms" => config.commit_interval_ms = number(&value()?)?,
            "--group-records-max" => config.group_records_max = number(&value()?)?,
            "--runs" => config.runs = number(&value()?)?,
            "--model-bandwidth-mib-s" => model.bandwidth_mib_s = number(&value()?)?,
            "--model-seek-ms" => model.seek_ms = number(&value()?)?,
            "--psync" => {
                config.engine = EngineConfig {
                    kind: EngineKind::Psync,
                    ..EngineConfig::default()
                }
            }
            "--disk-model" => disk_model = true,
            "--json" => json = true,
            other => return Err(format!("unknown option {other}").into()),
        }
    }
    config.disk_model = disk_model.then_some(model);
    // The progress line rewrites itself on stderr.
    let status = iopath_bench::status_line::StatusLine::new();
    let progress = |p: &BenchProgress| status.set(&p.line());
    let result = run_journal_bench(&config, &progress).await?;
    status.clear();
    if json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", result.render_table());
        println!(
            "sync/baseline {:.3}, async/baseline {:.3} (disk {})",
            result.sync_ratio, result.async_ratio, result.disk
        );
    }
    Ok(())
}

/// A flag's value as a number.
fn number<T: FromStr>(text: &str) -> Result<T, String> {
    text.parse()
        .map_err(|_| format!("{text:?} is not a number"))
}
