//! `iopath bench journal` with tiny workloads: its options, its report and JSON, the progress
//! line, the disk model, and the fio baseline (parser on a captured report; a real fio run).
//! No test here asserts a speed: only that each figure is measured, reported and consistent.
//! (How its flags parse is tested beside them, in the binary's `cmd/journal.rs`.)
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use std::path::{Path, PathBuf};
use std::sync::Mutex;

use iopath_bench::BenchError;
use iopath_bench::fio::{self, parse_fio_json};
use iopath_bench::journal::{
    self, FioChoice, JournalOptions, JournalReport, ProgressEvent, ProgressLine, Shown, measure,
};
use iopath_bench::writers::BenchProgress;
use iopath_storage_server::engine::EngineKind;
use iopath_storage_server::engine::modeled::DiskModel;

/// `fio --output-format=json` from fio 3.33, 2 jobs x 16 MiB, group reporting, captured on the
/// project's build machine with the command `fio_write` runs.
const FIO_SAMPLE: &str = include_str!("data/fio-3.33-write-2jobs.json");

/// A directory on the build's file system (target/tmp), where O_DIRECT works; /tmp may be tmpfs.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// A tiny workload in `dir`: 2 threads × 2 objects × 64 KiB requests, 1 MiB per object.
fn tiny(dir: &Path) -> JournalOptions {
    JournalOptions {
        dir: Some(dir.to_path_buf()),
        threads: 2,
        objects: 2,
        request_size_bytes: 64 << 10,
        mib_per_object: 1,
        ..JournalOptions::default()
    }
}

/// A disk model of `bandwidth_mib_s` and `seek_ms`, on psync: its blocking calls hold tokio's
/// paused clock while they run, so modeled time is exactly the model's.
fn modeled(dir: &Path, bandwidth_mib_s: f64, seek_ms: f64) -> JournalOptions {
    JournalOptions {
        dir: Some(dir.to_path_buf()),
        engine: EngineKind::Psync,
        disk_model: Some(DiskModel {
            bandwidth_mib_s,
            seek_ms,
            commit_ms: 0.0,
        }),
        fio: FioChoice::Off,
        ..JournalOptions::default()
    }
}

/// Runs `measure`, collecting every progress event as text.
async fn measure_collecting(
    args: &JournalOptions,
) -> (Result<JournalReport, BenchError>, Vec<String>) {
    let events = Mutex::new(Vec::new());
    let result = measure(args, &|event: ProgressEvent<'_>| {
        let text = match event {
            ProgressEvent::Note(note) => format!("note: {note}"),
            ProgressEvent::Phase(p) => format!(
                "phase: {}|{}|{}|{}",
                p.phase, p.run, p.bytes_done, p.bytes_total
            ),
        };
        events.lock().unwrap().push(text);
    })
    .await;
    (result, events.into_inner().unwrap())
}

/// Fails loudly when fio is missing: a test that needs fio must not pass without running it.
fn require_fio() -> String {
    fio::fio_version().unwrap_or_else(|| {
        panic!(
            "fio is not installed, so the fio baseline cannot be tested: run scripts/test, which installs it"
        )
    })
}

fn entries(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

// ---- fio's report -------------------------------------------------------------------------

#[test]
fn fio_json_sample_parses_to_the_write_figures() {
    let write = parse_fio_json(FIO_SAMPLE).unwrap();
    assert_eq!(write.version, "fio-3.33");
    assert_eq!(write.io_bytes, 32 << 20);
    assert_eq!(write.bw_bytes_s, 1_864_135_111);
    assert_eq!(write.runtime_ms, 18);
    // fio sometimes prints notes on stdout before the JSON.
    let noisy =
        format!("note: both iodepth >= 1 and synchronous I/O engine are selected\n{FIO_SAMPLE}");
    assert_eq!(parse_fio_json(&noisy).unwrap(), write);
}

#[test]
fn fio_json_without_a_clean_write_is_an_error() {
    let sample: serde_json::Value = serde_json::from_str(FIO_SAMPLE).unwrap();
    let mut failed = sample.clone();
    failed["jobs"][0]["error"] = 5.into();
    let mut no_write = sample.clone();
    no_write["jobs"][0].as_object_mut().unwrap().remove("write");
    let mut nothing_written = sample.clone();
    nothing_written["jobs"][0]["write"]["io_bytes"] = 0.into();
    nothing_written["jobs"][0]["write"]["bw_bytes"] = 0.into();
    let mut no_jobs = sample.clone();
    no_jobs["jobs"] = serde_json::json!([]);
    for (name, text, expected) in [
        ("empty", String::new(), "no JSON"),
        (
            "truncated",
            FIO_SAMPLE[..FIO_SAMPLE.len() / 2].to_owned(),
            "parse",
        ),
        ("job error", failed.to_string(), "error 5"),
        ("no write", no_write.to_string(), "write.io_bytes"),
        ("nothing written", nothing_written.to_string(), "no bytes"),
        ("no jobs", no_jobs.to_string(), "no jobs"),
    ] {
        let error = format!("{:#}", parse_fio_json(&text).unwrap_err());
        assert!(error.contains(expected), "{name}: {error}");
    }
}

#[test]
fn fio_refuses_bad_parameters_before_running() {
    let dir = scratch();
    for (size, bs, depth, jobs, seconds, expected) in [
        (1 << 20, 6 << 10, 1, 1, None, "multiple of 4096"),
        (4096, 1 << 20, 1, 1, None, "smaller than one"),
        (1 << 20, 1 << 20, 0, 1, None, "iodepth"),
        (1 << 20, 1 << 20, 1, 0, None, "numjobs"),
        (1 << 20, 1 << 20, 1, 1, Some(0), "runtime"),
    ] {
        let error = format!(
            "{:#}",
            fio::fio_write(dir.path(), size, bs, depth, jobs, seconds).unwrap_err()
        );
        assert!(error.contains(expected), "{error}");
    }
    let error =
        fio::fio_write(&dir.path().join("missing"), 1 << 20, 1 << 20, 1, 1, None).unwrap_err();
    assert!(format!("{error:#}").contains("missing"), "{error:#}");
    assert!(entries(dir.path()).is_empty());
}

#[test]
fn fio_runs_for_real_on_a_tiny_size_and_cleans_up() {
    let version = require_fio();
    let dir = scratch();
    let result = fio::fio_write(dir.path(), 4 << 20, 1 << 20, 1, 2, None).unwrap();
    assert_eq!(result.version, version);
    assert_eq!(result.written_bytes, 8 << 20);
    assert!(result.mib_s > 0.0, "{result:?}");
    for flag in [
        "--ioengine=io_uring",
        "--direct=1",
        "--rw=write",
        "--bs=1048576",
        "--numjobs=2",
        "--output-format=json",
    ] {
        assert!(result.command.contains(flag), "{}", result.command);
    }
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

// ---- the benchmark ------------------------------------------------------------------------

#[tokio::test]
async fn real_disk_run_reports_every_figure_and_cleans_up() {
    let dir = scratch();
    let args = JournalOptions {
        fio: FioChoice::Off,
        ..tiny(dir.path())
    };
    let (report, events) = measure_collecting(&args).await;
    let report = report.unwrap();
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(json["disk"], "real");
    for key in [
        "baseline_mib_s",
        "sync_mib_s",
        "async_mib_s",
        "sync_ratio",
        "async_ratio",
    ] {
        assert!(json[key].as_f64().unwrap() > 0.0, "{key}: {json}");
    }
    let ratio = report.bench.async_mib_s / report.bench.baseline_mib_s;
    assert!((report.bench.async_ratio - ratio).abs() < 1e-9);
    assert!(json["fio_mib_s"].is_null() && json["async_ratio_vs_fio"].is_null());
    assert!(report.modeled.starts_with("nothing"), "{}", report.modeled);
    assert_eq!(report.bench.total_bytes, 2 << 20);
    // Each of the three phases reached its end in the progress events.
    for phase in ["block level", "sync commits", "async commits"] {
        assert!(
            events.iter().any(|e| e.starts_with("phase: ")
                && e.contains(phase)
                && e.ends_with("|2097152|2097152")),
            "{phase}: {events:?}"
        );
    }
    let table = journal::render(&report);
    for text in [
        "configuration",
        "% of baseline",
        "100.0%",
        "OST, internal journal, sync commits",
        "OST, internal journal, async commits",
        "modeled: nothing",
        "fio: not run (--no-fio)",
        "async/baseline",
    ] {
        assert!(table.contains(text), "{text}:\n{table}");
    }
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

#[tokio::test]
async fn fio_row_and_ratio_vs_fio_when_fio_runs() {
    require_fio();
    let dir = scratch();
    let args = JournalOptions {
        fio: FioChoice::Required,
        ..tiny(dir.path())
    };
    let (report, events) = measure_collecting(&args).await;
    let report = report.unwrap();
    let fio_mib_s = report.fio_mib_s.unwrap();
    assert!(fio_mib_s > 0.0);
    let command = report.fio_command.as_deref().unwrap();
    assert!(
        command.starts_with("fio --name=") && command.contains("--bs=65536"),
        "{command}"
    );
    assert!(report.fio_version.as_deref().unwrap().starts_with("fio-"));
    let vs_fio = report.async_ratio_vs_fio.unwrap();
    assert!((vs_fio - report.bench.async_mib_s / fio_mib_s).abs() < 1e-9);
    assert!(report.fio_error.is_none());
    let json = serde_json::to_value(&report).unwrap();
    for key in ["fio_mib_s", "async_ratio_vs_fio", "baseline_ratio_vs_fio"] {
        assert!(json[key].as_f64().unwrap() > 0.0, "{key}: {json}");
    }
    assert!(json["fio_command"].is_string());
    assert!(
        events.iter().any(|e| e.contains("fio baseline (run 1)")),
        "{events:?}"
    );
    let table = journal::render(&report);
    assert!(
        table.contains("block level (fio io_uring, O_DIRECT)"),
        "{table}"
    );
    assert!(table.contains("async/fio"), "{table}");
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

/// Modeled time is tokio time: paused, the figures are the model's, exactly enough to check
/// the paper's shape. psync, because its blocking calls hold tokio's clock while they run.
#[tokio::test(start_paused = true)]
async fn modeled_disk_shows_the_gap_and_says_what_was_modeled() {
    let dir = scratch();
    let args = JournalOptions {
        threads: 1,
        objects: 1,
        request_size_bytes: 64 << 10,
        mib_per_object: 4,
        group_records_max: 32,
        commit_interval_ms: 60_000,
        ..modeled(dir.path(), 64.0, 4.0)
    };
    let (report, _) = measure_collecting(&args).await;
    let report = report.unwrap();
    let table = journal::render(&report);
    assert_eq!(report.bench.disk, "modeled");
    // 64 writes of 64 KiB at 64 MiB/s: the baseline is the model's bandwidth.
    assert!((report.bench.baseline_mib_s - 64.0).abs() < 1.0, "{table}");
    // Sync: a commit and two head moves (8 ms) per 1 ms write; async: one per 32 writes.
    assert!(report.bench.sync_ratio < 0.2, "{table}");
    assert!(report.bench.async_ratio > 0.75, "{table}");
    assert!(
        report.modeled.contains("64.00 MiB/s") && report.modeled.contains("4 ms"),
        "{}",
        report.modeled
    );
    assert!(table.contains("disk modeled"), "{table}");
    assert!(table.contains("modeled: the data disk"), "{table}");
}

#[tokio::test(start_paused = true)]
async fn seconds_size_the_phases_from_the_model() {
    let dir = scratch();
    let args = JournalOptions {
        threads: 1,
        objects: 2,
        request_size_bytes: 64 << 10,
        seconds: Some(1),
        // The seek time left at its default, as without --model-seek-ms: a SATA tier's.
        ..modeled(dir.path(), 8.0, DiskModel::sata_tier().seek_ms)
    };
    let (report, _) = measure_collecting(&args).await;
    let report = report.unwrap();
    // 8 MiB/s for 1 s over 2 objects.
    assert_eq!(report.bench.bytes_per_object, 4 << 20);
    assert_eq!(report.bench.total_bytes, 8 << 20);
    assert!(report.sizing.contains("disk model"), "{}", report.sizing);
}

#[tokio::test]
async fn default_dir_is_a_temporary_directory_in_the_current_directory() {
    let args = JournalOptions {
        threads: 1,
        objects: 1,
        request_size_bytes: 64 << 10,
        mib_per_object: 1,
        fio: FioChoice::Off,
        ..JournalOptions::default()
    };
    let (report, events) = measure_collecting(&args).await;
    let report = report.unwrap();
    assert!(report.dir_is_default);
    let dir = Path::new(&report.bench.dir);
    let cwd = std::env::current_dir().unwrap();
    assert_eq!(dir.parent(), Some(cwd.as_path()), "{}", dir.display());
    assert!(!dir.exists(), "{} was not removed", dir.display());
    assert!(
        events
            .iter()
            .any(|e| e.contains("in the current directory")),
        "{events:?}"
    );
}

#[tokio::test]
async fn unaligned_requests_skip_fio_with_a_reason_unless_it_is_required() {
    let dir = scratch();
    let args = JournalOptions {
        request_size_bytes: 6 << 10,
        mib_per_object: 1,
        ..tiny(dir.path())
    };
    let (report, _) = measure_collecting(&args).await;
    let report = report.unwrap();
    assert!(report.fio_mib_s.is_none());
    assert!(
        report
            .fio_error
            .as_deref()
            .unwrap()
            .contains("multiple of 4096")
    );
    assert!(journal::render(&report).contains("fio: not run: "));

    let required = JournalOptions {
        request_size_bytes: 6 << 10,
        fio: FioChoice::Required,
        ..tiny(dir.path())
    };
    let error = format!("{:#}", measure_collecting(&required).await.0.unwrap_err());
    assert!(
        error.contains("--fio") && error.contains("multiple of 4096"),
        "{error}"
    );
}

#[tokio::test]
async fn bad_options_are_clear_errors() {
    let dir = scratch();
    let quiet = || JournalOptions {
        fio: FioChoice::Off,
        ..tiny(dir.path())
    };
    let bad_model = DiskModel {
        bandwidth_mib_s: 0.0,
        ..DiskModel::sata_tier()
    };
    for (args, expected) in [
        (
            JournalOptions {
                threads: 0,
                ..quiet()
            },
            "threads must be in",
        ),
        (
            JournalOptions {
                request_size_bytes: 2 << 20,
                ..quiet()
            },
            "at least one request",
        ),
        (
            JournalOptions {
                request_size_bytes: 0,
                ..quiet()
            },
            "at least 1 byte",
        ),
        (JournalOptions { runs: 0, ..quiet() }, "runs must be in"),
        (
            JournalOptions {
                disk_model: Some(bad_model),
                ..quiet()
            },
            "bandwidth",
        ),
    ] {
        let error = format!("{:#}", measure_collecting(&args).await.0.unwrap_err());
        assert!(error.contains(expected), "{args:?}: {error}");
    }
    let args = JournalOptions {
        fio: FioChoice::Off,
        seconds: Some(0),
        dir: Some(PathBuf::from(".")),
        ..JournalOptions::default()
    };
    let error = format!("{:#}", measure_collecting(&args).await.0.unwrap_err());
    assert!(error.contains("--seconds"), "{error}");
    // Nothing was written for any of them.
    assert!(entries(dir.path()).is_empty(), "{:?}", entries(dir.path()));
}

// ---- the progress line --------------------------------------------------------------------

fn progress(phase: &str, run: u32, done: u64) -> BenchProgress {
    BenchProgress {
        phase: phase.to_owned(),
        run,
        bytes_done: done << 20,
        bytes_total: 8 << 20,
        elapsed_s: 1.0,
    }
}

#[test]
fn on_a_terminal_the_progress_line_is_rewritten_in_place() {
    let mut line = ProgressLine::new(true);
    let half = line
        .render(ProgressEvent::Phase(&progress("sync", 1, 4)))
        .unwrap();
    assert_eq!(
        half,
        Shown::InPlace("sync (run 1): 4/8 MiB, 4.0 MiB/s".into())
    );
    let note = line.render(ProgressEvent::Note("fio baseline")).unwrap();
    assert_eq!(note, Shown::Kept("fio baseline".into()));
}

/// A kept line's text, with its newline, as a log gets it.
fn kept(shown: Option<Shown>) -> Option<String> {
    match shown {
        Some(Shown::Kept(text)) => Some(format!("{text}\n")),
        Some(Shown::InPlace(text)) => panic!("drawn in place in a log: {text}"),
        None => None,
    }
}

#[test]
fn in_a_log_each_phase_gets_one_line_when_it_ends() {
    let mut line = ProgressLine::new(false);
    let mut out = String::new();
    for event in [
        progress("sync", 1, 2),
        progress("sync", 1, 8),
        progress("sync", 1, 8),
        progress("async", 1, 3),
        progress("async", 1, 8),
        progress("sync", 2, 8),
    ] {
        out.extend(kept(line.render(ProgressEvent::Phase(&event))));
    }
    out.extend(kept(line.render(ProgressEvent::Note("done"))));
    assert_eq!(
        out,
        "sync (run 1): 8/8 MiB, 8.0 MiB/s\nasync (run 1): 8/8 MiB, 8.0 MiB/s\nsync (run 2): 8/8 MiB, 8.0 MiB/s\ndone\n"
    );
}
