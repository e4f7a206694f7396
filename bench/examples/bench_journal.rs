//! `iopath bench journal` as a stand-alone program: what a synchronous journal commit per write
//! costs, and how much asynchronous commits win back, beside the raw disk (iopath's own
//! io_uring writer and fio) measured in the same run.
//!
//! ```text
//! cargo run --release -p iopath-bench --example bench_journal -- --json
//! cargo run --release -p iopath-bench --example bench_journal -- --disk-model --threads 1 --objects 1 --mib-per-object 32
//! ```

use clap::Parser;
use iopath_bench::journal::{self, JournalArgs};

/// Journal benchmark: raw baseline vs OST writes with sync and async journal commits.
#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    args: JournalArgs,
}

#[tokio::main]
async fn main() -> Result<(), iopath_bench::BenchError> {
    // Warnings (an io_uring fallback, say) go to stderr with the progress line.
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_default_env()
                .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn")),
        )
        .with_writer(std::io::stderr)
        .init();
    journal::run(Cli::parse().args).await
}
