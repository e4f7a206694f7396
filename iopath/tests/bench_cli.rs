//! `iopath bench` as a user runs it: `bench journal` prints the JSON the issue asks for on
//! stdout and, not on a terminal, one progress line per phase on stderr.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::process::Command;

fn iopath() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iopath"))
}

/// A directory on the build's file system (target/tmp), where O_DIRECT works; /tmp may be tmpfs.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
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
