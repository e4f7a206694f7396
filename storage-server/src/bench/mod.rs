//! The journal benchmark, in the spirit of obdfilter-survey `case=disk` and of the Spider
//! paper's table: in one run, on one file system, the raw block baseline (our own io_uring
//! writer, XDD-style), OST writes with sync journal commits, OST writes with async commits,
//! and optionally the journal on a separate path (the paper's external journal).
//!
//! - [`config`] — [`JournalBenchConfig`]: threads × objects × request size, disk real or modeled.
//! - [`workload`] — the writers: how requests are split over threads, and progress.
//! - [`run`] — [`run_journal_bench`]: the phases, best of `runs`.
//! - [`result`] — [`JournalBenchResult`]: serialisable figures and the paper-style table.

pub mod config;
pub mod result;
pub mod run;
pub mod workload;

pub use config::JournalBenchConfig;
pub use result::{BenchRow, JournalBenchResult};
pub use run::run_journal_bench;
pub use workload::BenchProgress;
