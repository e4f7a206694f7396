//! The examples are lessons; the suite runs each with a tiny workload so they keep working.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use std::process::Command;

#[test]
fn journal_bench_example_runs_and_prints_json() {
    let dir = tempfile::tempdir().unwrap();
    let output = Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "-p",
            "iopath-bench",
            "--example",
            "journal_bench",
            "--",
        ])
        .args([
            "--threads",
            "2",
            "--objects",
            "2",
            "--request-kib",
            "64",
            "--mib-per-object",
            "1",
            "--json",
        ])
        .arg("--dir")
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
    for key in [
        "baseline_mib_s",
        "sync_mib_s",
        "async_mib_s",
        "sync_ratio",
        "async_ratio",
    ] {
        assert!(json[key].as_f64().unwrap() > 0.0, "{key}: {json}");
    }
}
