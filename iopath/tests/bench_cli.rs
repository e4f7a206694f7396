//! `iopath bench` as a user runs it: `bench journal` prints the JSON the issue asks for on
//! stdout and, not on a terminal, one progress line per phase on stderr; with `--svg` it draws
//! its runs.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::process::Command;

use iopath_plot::check::Drawing;

fn iopath() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iopath"))
}

/// A directory on the build's file system (target/tmp), where O_DIRECT works; /tmp may be tmpfs.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

#[test]
fn bench_journal_draws_its_runs_as_an_svg_plot() {
    let dir = scratch();
    let svg = dir.path().join("runs.svg");
    let output = iopath()
        .args(["bench", "journal"])
        .args(["--threads", "1", "--objects", "1", "--request-size", "64k"])
        .args(["--mib-per-object", "1", "--no-fio", "--runs", "2", "--svg"])
        .arg(&svg)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let drawing = Drawing::read(&std::fs::read_to_string(&svg).unwrap()).unwrap();
    assert_eq!(drawing.problems(), []);
    // The baseline, sync and async: a point per run each.
    assert_eq!(drawing.series.len(), 3);
    assert!(drawing.series.iter().all(|s| s.points.len() == 2));
}

#[test]
fn bench_journal_prints_json_and_a_progress_line_per_phase() {
    let dir = scratch();
    let output = iopath()
        .args(["bench", "journal"])
        .args(["--threads", "1", "--objects", "1", "--request-size", "64k"])
        .args(["--mib-per-object", "1", "--no-fio", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["disk"], "real");
    assert!(json["async_ratio"].as_f64().unwrap() > 0.0, "{json}");
    // Not a terminal: one progress line per phase on stderr.
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        stderr.contains("OST, internal journal, async commits (run 1): 1/1 MiB"),
        "{stderr}"
    );
}
