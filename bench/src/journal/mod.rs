//! `iopath bench journal`, in the spirit of obdfilter-survey (`case=disk`) and of the Spider
//! paper's table: in one run, on one file system, the raw block baseline (iopath's own
//! io_uring writer, XDD-style, and fio when it can be had), OST writes with synchronous
//! journal commits, OST writes with asynchronous commits, and optionally the journal on a
//! separate path (the paper's external journal).
//!
//! Every ratio is against iopath's raw writer ([`crate::raw`]) measured in the same run; fio
//! is reported beside it (and `async_ratio_vs_fio`) so a reader can check that our baseline
//! is an honest one.
//!
//! # Layout
//!
//! - this module: [`JournalOptions`] and [`measure`], the whole run — options checked, the
//!   fio baseline, the phases sized (`seconds`: from fio, the disk model, or a calibration
//!   write), the phases run.
//! - [`mod@run`]: [`run_journal_bench`], the in-process phases (obdfilter-survey `case=disk`
//!   style), best of `runs`.
//! - [`config`]: [`JournalBenchConfig`], threads × objects × request size, disk real or
//!   modeled.
//! - [`result`]: [`JournalBenchResult`], the phases' figures and their own table.
//! - [`report`]: [`JournalReport`], the phases and fio together, as JSON and the table.
//! - [`plot`]: the runs as a plot, each configuration's bandwidth run by run.
//! - [`progress`]: [`ProgressLine`], the progress line as a pure state machine.

pub mod config;
pub mod plot;
pub mod progress;
pub mod report;
pub mod result;
pub mod run;

pub use config::{JournalBenchConfig, JournalDevice};
pub use progress::{ProgressEvent, ProgressLine, Shown};
pub use report::{JournalReport, render};
pub use result::{BenchRow, JournalBenchResult};
pub use run::run_journal_bench;

use std::path::{Path, PathBuf};
use std::time::Duration;

use iopath_storage_server::engine::modeled::DiskModel;
use iopath_storage_server::engine::{EngineConfig, EngineKind, open_engine};

use crate::error::BenchError;
use crate::fio::{self, FIO_ALIGN_BYTES, FioResult};
use crate::raw::RawFiles;
use crate::report::rate;
use crate::writers::{BenchProgress, Phase, Requests};
use report::modeled_statement;

/// Longest `--seconds`.
pub const SECONDS_MAX: u32 = 3600;

/// Longest calibration write (used to size `--seconds` runs on a real disk without fio).
const CALIBRATION_SECONDS_MAX: f64 = 1.0;

/// Most bytes a calibration writes, over all writers.
const CALIBRATION_BYTES_MAX: u64 = 4 << 30;

/// A rate no disk of this kind reaches: fio's file size in `--seconds` runs, per second, so
/// that its runtime, not its size, ends the run. Nothing is allocated beyond what is written.
const FIO_TIMED_RATE_CEILING_BYTES_S: u64 = 8 << 30;

/// Options of `iopath bench journal`, as given; [`measure`] checks them.
#[derive(Debug, Clone, PartialEq)]
pub struct JournalOptions {
    /// Directory on the file system to measure; each phase writes into a fresh temporary
    /// directory inside it. `None`: a temporary directory `iopath-bench-journal-*` in the
    /// current directory (so on its file system, not on /tmp, which may be tmpfs), removed
    /// afterwards; with --disk-model, in /dev/shm when it has room, so that the host's disk
    /// adds nothing to the model.
    pub dir: Option<PathBuf>,
    /// Also measure with the journal in a temporary directory here (the external journal, on
    /// another file system or device), with sync commits as in the paper.
    pub external_journal_dir: Option<PathBuf>,
    /// Concurrent writers, one request in flight each (obdfilter-survey's `thr`).
    pub threads: usize,
    /// Objects (files) written (obdfilter-survey's `nobj`).
    pub objects: usize,
    /// Bytes per write request (obdfilter-survey's `rsz`).
    pub request_size_bytes: u64,
    /// MiB written to each object in each phase (unless `seconds` sizes the phases).
    pub mib_per_object: u64,
    /// Instead of `mib_per_object`: size each phase so the raw baseline takes about this many
    /// seconds (the rate comes from fio, the disk model, or a one-second calibration write).
    pub seconds: Option<u32>,
    /// Repetitions; each figure is the best of them (the paper took the best of 5).
    pub runs: u32,
    /// Async mode: commit the journal at least this often.
    pub commit_interval_ms: u64,
    /// Async mode: commit once this many records are waiting (the group size).
    pub group_records_max: usize,
    /// The real engine under the OSTs and the raw writer.
    pub engine: EngineKind,
    /// Model the data disk (one head, a seek between data and journal, no write-back cache)
    /// instead of measuring the real one; the I/O still happens for real.
    pub disk_model: Option<DiskModel>,
    /// The modeled external journal devices, a sync phase each (with `disk_model`).
    pub journal_devices: Vec<JournalDevice>,
    /// Whether fio runs as a second raw baseline.
    pub fio: FioChoice,
    /// fio's requests in flight per writer (1 matches the in-process writers).
    pub fio_iodepth: u32,
}

impl Default for JournalOptions {
    /// `iopath bench journal` with no options: 4 threads × 4 objects × 1 MiB requests, 256 MiB
    /// per object, io_uring, the real disk, fio when it can be had.
    fn default() -> Self {
        JournalOptions {
            dir: None,
            external_journal_dir: None,
            threads: 4,
            objects: 4,
            request_size_bytes: 1 << 20,
            mib_per_object: 256,
            seconds: None,
            runs: 1,
            commit_interval_ms: 1000,
            group_records_max: 64,
            engine: EngineKind::Uring,
            disk_model: None,
            journal_devices: JournalDevice::paper(),
            fio: FioChoice::IfAvailable,
            fio_iodepth: 1,
        }
    }
}

/// Whether fio runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FioChoice {
    /// Not at all (`--no-fio`).
    Off,
    /// When it is installed; otherwise the report says why not.
    IfAvailable,
    /// Required (`--fio`): a run without it fails.
    Required,
}

/// Measures everything `args` asks for, reporting progress through `progress`.
pub async fn measure(
    args: &JournalOptions,
    progress: &(dyn Fn(ProgressEvent<'_>) + Send + Sync),
) -> Result<JournalReport, BenchError> {
    let request_size_bytes = usize::try_from(args.request_size_bytes)
        .ok()
        .filter(|&r| r > 0)
        .ok_or_else(|| {
            BenchError::refused("--request-size must be at least 1 byte and fit in memory")
        })?;
    if let Some(s) = args.seconds
        && !(1..=SECONDS_MAX).contains(&s)
    {
        return Err(BenchError::refused(format!(
            "--seconds must be in 1..={SECONDS_MAX}"
        )));
    }
    let model = args.disk_model;
    let mut config = JournalBenchConfig::new(PathBuf::new());
    config.external_journal_dir = args.external_journal_dir.clone();
    config.threads = args.threads;
    config.objects = args.objects;
    config.request_size_bytes = request_size_bytes;
    config.bytes_per_object = args.mib_per_object.saturating_mul(1 << 20);
    config.runs = args.runs;
    config.commit_interval_ms = args.commit_interval_ms;
    config.group_records_max = args.group_records_max;
    config.engine = EngineConfig {
        kind: args.engine,
        ..EngineConfig::default()
    };
    config.disk_model = model;
    config.journal_devices = args.journal_devices.clone();
    // Bad options are reported before anything is written.
    config
        .validate()
        .map_err(|e| BenchError::step("check the benchmark's options", e))?;

    // Where it runs: the given directory, or a temporary one (kept alive by `_default_dir`
    // until the end) on the current directory's file system — or, when the disk is modeled,
    // in memory, so that the host's own disk adds nothing to what the model says.
    let (dir, _default_dir, where_) = match &args.dir {
        Some(dir) => (dir.clone(), None, String::new()),
        None => {
            let bytes_per_phase = match (args.seconds, model) {
                (Some(s), Some(m)) => (m.bandwidth_mib_s * s as f64) as u64 * (1 << 20),
                _ => config.total_bytes(),
            };
            let (parent, where_) = default_parent(model.is_some(), bytes_per_phase);
            let temp = iopath_stack::scratch::ScratchDir::new_in(&parent, "iopath-bench-journal-")
                .map_err(|e| {
                    BenchError::system(
                        format!("create a temporary directory in {}", parent.display()),
                        e,
                    )
                })?;
            let dir = std::path::absolute(temp.path()).unwrap_or_else(|_| temp.path().into());
            (dir, Some(temp), where_)
        }
    };
    progress(ProgressEvent::Note(&format!(
        "measuring in {}{where_}",
        dir.display()
    )));
    config.dir = dir.clone();

    // fio first, so that it and our writers never compete for the disk.
    let fio = fio_baseline(args, &config, &dir, progress).await?;
    let fio_best = match &fio {
        FioOutcome::Measured(best) => Some(best),
        FioOutcome::NotWanted | FioOutcome::Unavailable(_) => None,
    };

    let sizing = match args.seconds {
        None => format!(
            "{} MiB per object (--mib-per-object), {} MiB per phase",
            args.mib_per_object,
            config.total_bytes() >> 20
        ),
        Some(seconds) => {
            let (mib_s, source) = match (model, fio_best) {
                (Some(m), _) => (m.bandwidth_mib_s, "the disk model's bandwidth".to_owned()),
                (None, Some(f)) => (f.mib_s, "fio's rate in this run".to_owned()),
                (None, None) => {
                    progress(ProgressEvent::Note(
                        "sizing --seconds: a calibration write with iopath's raw writer",
                    ));
                    let rate = calibrate_mib_s(&config, seconds).await?;
                    (
                        rate,
                        "a calibration write with iopath's raw writer".to_owned(),
                    )
                }
            };
            let bytes = mib_s * f64::from(seconds) * (1u64 << 20) as f64 / config.objects as f64;
            let request = request_size_bytes as u64;
            config.bytes_per_object = ((bytes / request as f64) as u64).max(1) * request;
            format!(
                "{} MiB per object for about {seconds} s of the raw baseline at {} MiB/s ({source}), {} MiB per phase",
                config.bytes_per_object >> 20,
                rate(mib_s),
                config.total_bytes() >> 20
            )
        }
    };
    progress(ProgressEvent::Note(&format!("sizing: {sizing}")));

    let forward = |p: &BenchProgress| progress(ProgressEvent::Phase(p));
    let bench = run_journal_bench(&config, &forward)
        .await
        .map_err(|e| BenchError::step("run the journal benchmark", e))?;

    let real = model.is_none();
    let vs_fio = |mib_s: f64| {
        fio_best
            .filter(|f| real && f.mib_s > 0.0)
            .map(|f| mib_s / f.mib_s)
    };
    Ok(JournalReport {
        modeled: modeled_statement(&config, fio_best.is_some()),
        sizing,
        dir_is_default: args.dir.is_none(),
        fio_mib_s: fio_best.map(|f| f.mib_s),
        fio_command: fio_best.map(|f| f.command.clone()),
        fio_version: fio_best.map(|f| f.version.clone()),
        fio_error: match &fio {
            FioOutcome::Unavailable(reason) => Some(reason.clone()),
            FioOutcome::NotWanted | FioOutcome::Measured(_) => None,
        },
        baseline_ratio_vs_fio: vs_fio(bench.baseline_mib_s),
        sync_ratio_vs_fio: vs_fio(bench.sync_mib_s),
        async_ratio_vs_fio: vs_fio(bench.async_mib_s),
        bench,
    })
}

/// What became of the fio baseline.
#[derive(Debug)]
enum FioOutcome {
    /// `--no-fio`.
    NotWanted,
    /// Wanted, not required, and it could not run: why.
    Unavailable(String),
    /// The best of the runs.
    Measured(FioResult),
}

/// Runs fio `runs` times as the raw-disk baseline and keeps the best. An error only when fio
/// was required (`--fio`) and could not run.
async fn fio_baseline(
    args: &JournalOptions,
    config: &JournalBenchConfig,
    dir: &Path,
    progress: &(dyn Fn(ProgressEvent<'_>) + Send + Sync),
) -> Result<FioOutcome, BenchError> {
    let choice = args.fio;
    if choice == FioChoice::Off {
        return Ok(FioOutcome::NotWanted);
    }
    let unavailable = |reason: String| -> Result<FioOutcome, BenchError> {
        if choice == FioChoice::Required {
            return Err(BenchError::refused(format!(
                "the fio baseline was asked for (--fio) but cannot run: {reason}"
            )));
        }
        progress(ProgressEvent::Note(&format!(
            "no fio baseline: {reason} (--no-fio to skip it quietly)"
        )));
        Ok(FioOutcome::Unavailable(reason))
    };
    if !args.request_size_bytes.is_multiple_of(FIO_ALIGN_BYTES) {
        return unavailable(format!(
            "fio's O_DIRECT writes need a request size that is a multiple of {FIO_ALIGN_BYTES} bytes"
        ));
    }
    let Ok(numjobs) = u32::try_from(config.threads) else {
        return unavailable("too many threads for fio".to_owned());
    };
    if let Err(error) = fio::require_fio() {
        return unavailable(error.to_string());
    }
    let request = args.request_size_bytes;
    let (job_size_bytes, seconds) = match args.seconds {
        // Time-based: a file larger than any disk of this kind fills in that time, so fio's
        // runtime ends the run; fio allocates only what it writes.
        Some(s) => (
            (FIO_TIMED_RATE_CEILING_BYTES_S * u64::from(s) / u64::from(numjobs)).max(request),
            Some(s),
        ),
        // The same bytes as one in-process phase, split over the same number of writers.
        None => (
            (config.total_bytes() / u64::from(numjobs)).max(request),
            None,
        ),
    };
    let mut best: Option<FioResult> = None;
    for run in 1..=config.runs {
        progress(ProgressEvent::Note(&format!(
            "fio baseline (run {run}): {numjobs} jobs x {} MiB, {} KiB requests, iodepth {}",
            job_size_bytes >> 20,
            request >> 10,
            args.fio_iodepth
        )));
        let dir = dir.to_path_buf();
        let iodepth = args.fio_iodepth;
        let measured = tokio::task::spawn_blocking(move || {
            fio::fio_write(&dir, job_size_bytes, request, iodepth, numjobs, seconds)
        })
        .await
        .map_err(|e| BenchError::tool(format!("wait for fio: {e}")))?;
        match measured {
            Ok(result) => {
                progress(ProgressEvent::Note(&format!(
                    "fio baseline (run {run}): {} MiB/s",
                    rate(result.mib_s)
                )));
                if best.as_ref().is_none_or(|b| result.mib_s > b.mib_s) {
                    best = Some(result);
                }
            }
            Err(error) => return unavailable(error.to_string()),
        }
    }
    match best {
        Some(best) => Ok(FioOutcome::Measured(best)),
        None => unavailable("fio did not run".to_owned()),
    }
}

/// Estimates the raw write rate of `config`'s disk with iopath's raw writer: `threads`
/// writers, each into its own file, for at most [`CALIBRATION_SECONDS_MAX`], then an
/// fdatasync each.
async fn calibrate_mib_s(config: &JournalBenchConfig, seconds: u32) -> Result<f64, BenchError> {
    let size = config.request_size_bytes as u64;
    let threads = config.threads as u64;
    let requests = Requests {
        files: config.threads,
        writers: config.threads,
        request_bytes: size,
        // Bounded twice: by time and by a count of requests.
        requests_per_file: (CALIBRATION_BYTES_MAX / size / threads).max(1),
    };
    let raw = RawFiles::create(
        open_engine(&config.engine),
        &config.dir,
        "iopath-bench-calibrate-",
        requests,
        &run::fill,
    )
    .await?;
    let limit = Duration::from_secs_f64(f64::from(seconds).min(CALIBRATION_SECONDS_MAX));
    let phase = Phase {
        name: "calibration",
        run: 1,
    };
    let written = raw.write(phase, Some(limit), &|_| {}).await?;
    raw.remove()?;
    Ok(written.mib_s())
}

/// In-memory file system a modeled disk's bytes go to by default.
const MEMORY_DIR: &str = "/dev/shm";

/// Where a run without `--dir` makes its temporary directory, and how the run says so. A
/// modeled disk writes to memory when [`MEMORY_DIR`] has room for twice a phase: a real
/// disk's fsyncs under the model would add to every synchronous commit what the model already
/// charges (the lab's sync share read 15.9% instead of 24.6% on a loaded host's disk).
/// A real disk is measured where the user stands: the current directory's file system, not
/// /tmp, which may be memory.
fn default_parent(modeled: bool, bytes_per_phase: u64) -> (PathBuf, String) {
    let here = (
        PathBuf::from("."),
        " (a temporary directory in the current directory, on its file system; --dir to choose)"
            .to_string(),
    );
    if !modeled {
        return here;
    }
    let memory = std::path::Path::new(MEMORY_DIR);
    match iopath_storage_server::ost::target::capacity_of(memory) {
        Ok(capacity) if capacity.available_bytes >= bytes_per_phase.saturating_mul(2) => (
            memory.to_path_buf(),
            " (in memory: the disk is modeled, so the host's own disk must add nothing; \
             --dir to choose)"
                .to_string(),
        ),
        Ok(capacity) => (
            here.0,
            format!(
                " (the current directory: {MEMORY_DIR} has {} MiB free, less than twice a \
                 phase's {} MiB; the host's disk adds its fsyncs to the model's commits)",
                capacity.available_bytes >> 20,
                bytes_per_phase >> 20
            ),
        ),
        Err(_) => (
            here.0,
            format!(
                " (the current directory: no {MEMORY_DIR} here; the host's disk adds its fsyncs \
                 to the model's commits)"
            ),
        ),
    }
}
