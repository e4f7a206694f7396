//! The examples are lessons; the suite runs each with a tiny workload so they keep working.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::process::Command;

#[test]
fn fyod_calls_example_runs_every_mode() {
    let output = Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "-p",
            "iopath-forwarder",
            "--example",
            "fyod_calls",
            "--",
            "2",
            "1",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    for line in ["pfs  sync", "pfs async", "ufs  sync", "ufs async"] {
        assert!(stdout.contains(line), "{line} missing from:\n{stdout}");
    }
}
