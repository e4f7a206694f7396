//! The example is a lesson; the suite runs it with a tiny workload so it keeps working (its
//! own check fails it if any acknowledged file is missing after the crash).

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::process::Command;

#[test]
fn namespace_crash_example_finds_every_acknowledged_file() {
    let output = Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "-p",
            "iopath-mds",
            "--example",
            "namespace_crash",
            "--",
            "50",
        ])
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        stdout.contains("after the crash /run holds 50 of the 50 files acknowledged"),
        "{stdout}"
    );
}
