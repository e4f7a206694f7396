//! `iopath bench journal`, in the spirit of obdfilter-survey (`case=disk`) and of the Spider
//! paper's table: in one run, on one file system, the raw block baseline (iopath's own
//! io_uring writer, XDD-style, and fio when it can be had), OST writes with synchronous
//! journal commits, OST writes with asynchronous commits, and optionally the journal on a
//! separate path (the paper's external journal).
//!
//! The measuring is done by `iopath_storage_server::bench::run_journal_bench`; this module is
//! its front end: options, sizing, the fio baseline, the progress line, the table and JSON.
//! Every ratio is against iopath's raw writer measured in the same run; fio is reported beside
//! it (and `async_ratio_vs_fio`) so a reader can check that our baseline is an honest one.

use std::io::{IsTerminal, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use iopath_storage_server::bench::{
    BenchProgress, JournalBenchConfig, JournalBenchResult, run_journal_bench,
};
use iopath_storage_server::engine::aligned::AlignedBuf;
use iopath_storage_server::engine::modeled::DiskModel;
use iopath_storage_server::engine::{
    EngineConfig, EngineFile, EngineKind, FileRole, OpenMode, SyncKind, open_engine,
};
use tokio::task::JoinSet;

use crate::error::BenchError;
use crate::fio::{self, FIO_ALIGN_BYTES, FioResult};
use crate::report::{Table, rate};
use crate::units::parse_size;

/// Longest `--seconds`.
pub const SECONDS_MAX: u32 = 3600;

/// Longest calibration write (used to size `--seconds` runs on a real disk without fio).
const CALIBRATION_SECONDS_MAX: f64 = 1.0;

/// Most bytes a calibration writes, over all writers.
const CALIBRATION_BYTES_MAX: u64 = 4 << 30;

/// A rate no disk of this kind reaches: fio's file size in `--seconds` runs, per second, so
/// that its runtime, not its size, ends the run. Nothing is allocated beyond what is written.
const FIO_TIMED_RATE_CEILING_BYTES_S: u64 = 8 << 30;

/// Which real engine does the I/O.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
pub enum EngineArg {
    /// io_uring on dedicated threads (falls back to psync, with a warning, if refused).
    Uring,
    /// pread/pwrite on blocking threads.
    Psync,
}

/// Options of `iopath bench journal`.
#[derive(clap::Args, Debug, Clone)]
pub struct JournalArgs {
    /// Directory on the file system to measure; each phase writes into a fresh temporary
    /// directory inside it. Default: a temporary directory `iopath-bench-journal-*` in the
    /// current directory (so on its file system, not on /tmp, which may be tmpfs), removed
    /// afterwards.
    #[arg(long)]
    pub dir: Option<PathBuf>,
    /// Also measure with the journal in a temporary directory here (the external journal, on
    /// another file system or device), with sync commits as in the paper.
    #[arg(long)]
    pub external_journal_dir: Option<PathBuf>,
    /// Concurrent writers, one request in flight each (obdfilter-survey's `thr`).
    #[arg(long, default_value_t = 4)]
    pub threads: usize,
    /// Objects (files) written (obdfilter-survey's `nobj`).
    #[arg(long, default_value_t = 4)]
    pub objects: usize,
    /// Bytes per write request, with k/m/g suffixes (obdfilter-survey's `rsz`).
    #[arg(long = "request-size", value_name = "SIZE", default_value = "1m", value_parser = parse_size)]
    pub request_size_bytes: u64,
    /// MiB written to each object in each phase.
    #[arg(long, default_value_t = 256, conflicts_with = "seconds")]
    pub mib_per_object: u64,
    /// Instead of --mib-per-object: size each phase so the raw baseline takes about this many
    /// seconds (the rate comes from fio, the disk model, or a one-second calibration write).
    #[arg(long)]
    pub seconds: Option<u32>,
    /// Repetitions; each figure is the best of them (the paper took the best of 5).
    #[arg(long, default_value_t = 1)]
    pub runs: u32,
    /// Async mode: commit the journal at least this often.
    #[arg(long, default_value_t = 1000)]
    pub commit_interval_ms: u64,
    /// Async mode: commit once this many records are waiting (the group size).
    #[arg(long, default_value_t = 64)]
    pub group_records_max: usize,
    /// The real engine under the OSTs and the raw writer.
    #[arg(long, value_enum, default_value = "uring")]
    pub engine: EngineArg,
    /// Model the data disk (one head, a seek between data and journal, no write-back cache)
    /// instead of measuring the real one; the I/O still happens for real.
    #[arg(long)]
    pub disk_model: bool,
    /// Modeled bandwidth, MiB/s (with --disk-model; default: one Spider SATA tier).
    #[arg(long, default_value_t = DiskModel::sata_tier().bandwidth_mib_s)]
    pub model_bandwidth_mib_s: f64,
    /// Modeled head move between data and journal, ms (with --disk-model).
    #[arg(long, default_value_t = DiskModel::sata_tier().seek_ms)]
    pub model_seek_ms: f64,
    /// Modeled external journal device bandwidth, MiB/s (with --disk-model and
    /// --external-journal-dir; default: a solid-state device, no seeks).
    #[arg(long, default_value_t = DiskModel::ssd().bandwidth_mib_s)]
    pub model_journal_bandwidth_mib_s: f64,
    /// Require fio as a second raw baseline (installing it with apt-get when root); fail if it
    /// cannot be had. Without --fio or --no-fio, fio runs when it can be had.
    #[arg(long, overrides_with = "no_fio")]
    pub fio: bool,
    /// Do not run fio.
    #[arg(long, overrides_with = "fio")]
    pub no_fio: bool,
    /// fio's requests in flight per writer (1 matches the in-process writers).
    #[arg(long, default_value_t = 1)]
    pub fio_iodepth: u32,
    /// Print JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// Whether fio runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum FioChoice {
    Off,
    IfAvailable,
    Required,
}

impl JournalArgs {
    fn fio_choice(&self) -> FioChoice {
        match (self.fio, self.no_fio) {
            (_, true) => FioChoice::Off,
            (true, false) => FioChoice::Required,
            (false, false) => FioChoice::IfAvailable,
        }
    }

    fn disk_model(&self) -> Option<DiskModel> {
        self.disk_model.then_some(DiskModel {
            bandwidth_mib_s: self.model_bandwidth_mib_s,
            seek_ms: self.model_seek_ms,
        })
    }

    fn engine_config(&self) -> EngineConfig {
        EngineConfig {
            kind: match self.engine {
                EngineArg::Uring => EngineKind::Uring,
                EngineArg::Psync => EngineKind::Psync,
            },
            ..EngineConfig::default()
        }
    }
}

/// What the benchmark tells its progress line.
#[derive(Debug, Clone, Copy)]
pub enum ProgressEvent<'a> {
    /// A step worth a line of its own (where it runs, fio starting, sizing).
    Note(&'a str),
    /// A phase's progress: about twice a second, and once at its end.
    Phase(&'a BenchProgress),
}

/// The progress line on stderr, as a pure state machine: events in, text to write out. On a
/// terminal one line is rewritten in place; elsewhere (a log, CI) each phase gets one line,
/// when it ends, so logs stay short.
#[derive(Debug)]
pub struct ProgressLine {
    terminal: bool,
    /// The last phase and run given a line (non-terminal mode).
    last_printed: Option<(String, u32)>,
    /// Something is on the current terminal line.
    dirty: bool,
}

/// Clears the terminal line and returns the cursor to its start.
const CLEAR_LINE: &str = "\r\x1b[2K";

impl ProgressLine {
    /// A progress line for a terminal (`terminal`) or for a log.
    pub fn new(terminal: bool) -> ProgressLine {
        ProgressLine {
            terminal,
            last_printed: None,
            dirty: false,
        }
    }

    /// The text to write for `event`, if any.
    pub fn render(&mut self, event: ProgressEvent<'_>) -> Option<String> {
        match event {
            ProgressEvent::Note(text) if self.terminal => {
                self.dirty = false;
                Some(format!("{CLEAR_LINE}{text}\n"))
            }
            ProgressEvent::Note(text) => Some(format!("{text}\n")),
            ProgressEvent::Phase(p) if self.terminal => {
                self.dirty = true;
                Some(format!("{CLEAR_LINE}{}", p.line()))
            }
            ProgressEvent::Phase(p) => {
                let key = (p.phase.clone(), p.run);
                if p.bytes_done < p.bytes_total || self.last_printed.as_ref() == Some(&key) {
                    return None;
                }
                self.last_printed = Some(key);
                Some(format!("{}\n", p.line()))
            }
        }
    }

    /// The text that leaves the terminal clean at the end.
    pub fn finish(&mut self) -> Option<String> {
        let dirty = std::mem::replace(&mut self.dirty, false);
        (self.terminal && dirty).then(|| CLEAR_LINE.to_owned())
    }
}

/// Everything one run measured: the in-process benchmark's result (its fields at the top
/// level of the JSON) and the fio baseline beside it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JournalReport {
    /// The in-process phases: `baseline_mib_s` (iopath's raw writer), `sync_mib_s`,
    /// `async_mib_s`, `sync_ratio`, `async_ratio`, `disk`, the rows, ...
    #[serde(flatten)]
    pub bench: JournalBenchResult,
    /// Which parts of this run were modeled rather than real, in words.
    pub modeled: String,
    /// How the phases were sized.
    pub sizing: String,
    /// True when `dir` was a temporary directory made in the current directory.
    pub dir_is_default: bool,
    /// fio's best write rate over the runs, MiB/s (real disk, even with a disk model).
    pub fio_mib_s: Option<f64>,
    /// The fio command line that was run.
    pub fio_command: Option<String>,
    /// fio's version.
    pub fio_version: Option<String>,
    /// Why there is no fio figure, when fio was wanted but could not run.
    pub fio_error: Option<String>,
    /// `baseline_mib_s / fio_mib_s`: how iopath's raw writer compares with fio (real disk only).
    pub baseline_ratio_vs_fio: Option<f64>,
    /// `sync_mib_s / fio_mib_s` (real disk only).
    pub sync_ratio_vs_fio: Option<f64>,
    /// `async_mib_s / fio_mib_s` (real disk only).
    pub async_ratio_vs_fio: Option<f64>,
}

/// Runs `iopath bench journal`: the progress line on stderr, then the table (or `--json`) on
/// stdout.
pub async fn run(args: JournalArgs) -> Result<(), BenchError> {
    let line = Mutex::new(ProgressLine::new(std::io::stderr().is_terminal()));
    let write = |text: Option<String>| {
        if let Some(text) = text {
            let mut stderr = std::io::stderr().lock();
            let _ = stderr.write_all(text.as_bytes());
            let _ = stderr.flush();
        }
    };
    let progress = |event: ProgressEvent<'_>| {
        write(
            line.lock()
                .unwrap_or_else(PoisonError::into_inner)
                .render(event),
        );
    };
    let measured = measure(&args, &progress).await;
    write(line.lock().unwrap_or_else(PoisonError::into_inner).finish());
    let report = measured?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&report)
                .map_err(|e| BenchError::json("encode the report as JSON", e))?
        );
    } else {
        print!("{}", render(&report));
    }
    Ok(())
}

/// Measures everything `args` asks for, reporting progress through `progress`.
pub async fn measure(
    args: &JournalArgs,
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
    let model = args.disk_model();
    let mut config = JournalBenchConfig::new(PathBuf::new());
    config.external_journal_dir = args.external_journal_dir.clone();
    config.threads = args.threads;
    config.objects = args.objects;
    config.request_size_bytes = request_size_bytes;
    config.bytes_per_object = args.mib_per_object.saturating_mul(1 << 20);
    config.runs = args.runs;
    config.commit_interval_ms = args.commit_interval_ms;
    config.group_records_max = args.group_records_max;
    config.engine = args.engine_config();
    config.disk_model = model;
    config.external_journal_model = DiskModel {
        bandwidth_mib_s: args.model_journal_bandwidth_mib_s,
        ..DiskModel::ssd()
    };
    // Bad options are reported before anything is written.
    config
        .validate()
        .map_err(|e| BenchError::step("check the benchmark's options", e))?;

    // Where it runs: the given directory, or a temporary one on the current directory's file
    // system (kept alive by `_default_dir` until the end).
    let (dir, _default_dir) = match &args.dir {
        Some(dir) => (dir.clone(), None),
        None => {
            let temp = tempfile::Builder::new()
                .prefix("iopath-bench-journal-")
                .tempdir_in(".")
                .map_err(|e| {
                    BenchError::system("create a temporary directory in the current directory", e)
                })?;
            let dir = std::path::absolute(temp.path()).unwrap_or_else(|_| temp.path().into());
            (dir, Some(temp))
        }
    };
    progress(ProgressEvent::Note(&format!(
        "measuring in {}{}",
        dir.display(),
        if args.dir.is_none() {
            " (a temporary directory in the current directory, on its file system; --dir to choose)"
        } else {
            ""
        }
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
    args: &JournalArgs,
    config: &JournalBenchConfig,
    dir: &Path,
    progress: &(dyn Fn(ProgressEvent<'_>) + Send + Sync),
) -> Result<FioOutcome, BenchError> {
    let choice = args.fio_choice();
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
    let notes: Arc<Mutex<Vec<String>>> = Arc::default();
    let installed = {
        let notes = Arc::clone(&notes);
        tokio::task::spawn_blocking(move || {
            fio::ensure_fio(&mut |text: &str| {
                notes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .push(text.to_owned());
            })
        })
        .await
        .map_err(|e| BenchError::tool(format!("wait for the fio installer: {e}")))?
    };
    for note in notes.lock().unwrap_or_else(PoisonError::into_inner).iter() {
        progress(ProgressEvent::Note(note));
    }
    if let Err(error) = installed {
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

/// Estimates the raw write rate of `config`'s disk with iopath's engine: `threads` writers,
/// each into its own file, for at most [`CALIBRATION_SECONDS_MAX`], then an fdatasync each.
async fn calibrate_mib_s(config: &JournalBenchConfig, seconds: u32) -> Result<f64, BenchError> {
    let engine = open_engine(&config.engine);
    let work = tempfile::Builder::new()
        .prefix("iopath-bench-calibrate-")
        .tempdir_in(&config.dir)
        .map_err(|e| {
            BenchError::system(
                format!("create a calibration directory in {}", config.dir.display()),
                e,
            )
        })?;
    let size = config.request_size_bytes;
    let mut buffer = AlignedBuf::zeroed(size);
    for (i, byte) in buffer.as_mut_slice().iter_mut().enumerate() {
        *byte = (i % 251) as u8;
    }
    let payload = buffer.into_bytes();
    let threads = config.threads as u64;
    let requests_max = (CALIBRATION_BYTES_MAX / size as u64 / threads).max(1);
    let limit = Duration::from_secs_f64(f64::from(seconds).min(CALIBRATION_SECONDS_MAX));
    let started = Instant::now();
    let mut writers = JoinSet::new();
    for thread in 0..config.threads {
        let path = work.path().join(format!("calibrate{thread}"));
        let file = EngineFile::open_async(path.clone(), FileRole::Data, OpenMode::CreateNew, true)
            .await
            .map_err(|e| {
                BenchError::system(format!("create calibration file {}", path.display()), e)
            })?;
        let engine = Arc::clone(&engine);
        let payload = payload.clone();
        writers.spawn(async move {
            let mut written = 0u64;
            // Bounded twice: by time and by a count of requests.
            for i in 0..requests_max {
                if started.elapsed() >= limit {
                    break;
                }
                engine
                    .write_at(&file, i * size as u64, payload.clone())
                    .await?;
                written += size as u64;
            }
            engine.fsync(&file, SyncKind::Data).await?;
            Ok::<u64, std::io::Error>(written)
        });
    }
    let mut written = 0u64;
    while let Some(joined) = writers.join_next().await {
        written += joined
            .map_err(|e| BenchError::tool(format!("join a calibration writer: {e}")))?
            .map_err(|e| BenchError::system("write the calibration files", e))?;
    }
    let elapsed = started.elapsed().as_secs_f64().max(1e-9);
    work.close()
        .map_err(|e| BenchError::system("remove the calibration directory", e))?;
    Ok(written as f64 / (1u64 << 20) as f64 / elapsed)
}

/// Which parts of a run were modeled, in words, for the table and the JSON.
fn modeled_statement(config: &JournalBenchConfig, fio_ran: bool) -> String {
    let Some(model) = config.disk_model else {
        return "nothing: real files, real writes (O_DIRECT where aligned; the baseline row says \
                which) and fsyncs on the file system under test"
            .to_owned();
    };
    let mut text = format!(
        "the data disk: {} MiB/s, {} ms per head move between data and journal, no write-back cache \
         (the I/O still happens for real; each completes no earlier than the model says)",
        rate(model.bandwidth_mib_s),
        model.seek_ms
    );
    if config.external_journal_dir.is_some() {
        text.push_str(&format!(
            "; the external journal device: {} MiB/s, {} ms seeks",
            rate(config.external_journal_model.bandwidth_mib_s),
            config.external_journal_model.seek_ms
        ));
    }
    if fio_ran {
        text.push_str("; fio measured the real disk underneath (no ratio is taken against it)");
    }
    text
}

/// The paper-style table: configuration, MiB/s, % of baseline, with the run's facts above it
/// and the ratios below.
pub fn render(report: &JournalReport) -> String {
    let bench = &report.bench;
    let mut out = format!(
        "journal benchmark on {} (disk {}, engine {}): {} threads x {} objects x {} KiB requests, {} MiB per phase, best of {}\n",
        bench.dir,
        bench.disk,
        bench.engine,
        bench.threads,
        bench.objects,
        bench.request_size_bytes / 1024,
        bench.total_bytes >> 20,
        bench.runs
    );
    out.push_str(&format!("modeled: {}\n", report.modeled));
    out.push_str(&format!(
        "async commits: every {} ms or {} records\n",
        bench.commit_interval_ms, bench.group_records_max
    ));
    match (&report.fio_command, &report.fio_version, &report.fio_error) {
        (Some(command), Some(version), _) => {
            out.push_str(&format!("fio ({version}): {command}\n"));
        }
        (_, _, Some(error)) => out.push_str(&format!("fio: not run: {error}\n")),
        _ => out.push_str("fio: not run (--no-fio)\n"),
    }
    out.push('\n');
    let mut table = Table::new(&[
        "configuration",
        "MiB/s",
        "% of baseline",
        "commits",
        "seeks",
    ]);
    let dash = || "-".to_owned();
    for (i, row) in bench.rows.iter().enumerate() {
        table.row(vec![
            row.configuration.clone(),
            rate(row.mib_s),
            format!("{:.1}%", row.percent_of_baseline),
            if row.commits == 0 {
                dash()
            } else {
                row.commits.to_string()
            },
            row.seeks.map_or_else(dash, |s| s.to_string()),
        ]);
        // fio's row sits beside the baseline it checks.
        if i == 0
            && let Some(fio_mib_s) = report.fio_mib_s
        {
            let real = bench.disk == "real";
            table.row(vec![
                if real {
                    "block level (fio io_uring, O_DIRECT)".to_owned()
                } else {
                    "block level (fio io_uring, O_DIRECT), real disk".to_owned()
                },
                rate(fio_mib_s),
                if real && bench.baseline_mib_s > 0.0 {
                    format!("{:.1}%", 100.0 * fio_mib_s / bench.baseline_mib_s)
                } else {
                    dash()
                },
                dash(),
                dash(),
            ]);
        }
    }
    out.push_str(&table.render());
    out.push('\n');
    out.push_str(&format!(
        "sync/baseline {:.3}, async/baseline {:.3}",
        bench.sync_ratio, bench.async_ratio
    ));
    if let Some(external) = bench.external_ratio {
        out.push_str(&format!(", external/baseline {external:.3}"));
    }
    if let Some(vs_fio) = report.async_ratio_vs_fio {
        out.push_str(&format!(", async/fio {vs_fio:.3}"));
    }
    out.push_str(&format!(
        " (baseline: iopath's raw {} writer, measured in this run; disk {})\n",
        bench.engine, bench.disk
    ));
    out
}
