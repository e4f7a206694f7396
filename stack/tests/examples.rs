//! The examples are lessons; the suite runs each with a tiny workload so they keep working.
#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::process::Command;

#[test]
fn striped_io_example_writes_reads_and_reports() {
    let output = Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "-p",
            "iopath-stack",
            "--example",
            "striped_io",
            "--",
        ])
        .args(["--mib", "4", "--transfer", "300k", "--stripe-size", "64k"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(
        stdout.contains("stripe_count: 4 stripe_size: 65536"),
        "{stdout}"
    );
    assert!(stdout.contains("every byte checked"), "{stdout}");
}

#[test]
fn striped_io_example_runs_through_a_fyod() {
    let output = Command::new(env!("CARGO"))
        .args([
            "run",
            "--quiet",
            "-p",
            "iopath-stack",
            "--example",
            "striped_io",
            "--",
        ])
        .args(["--mib", "3", "--transfer", "1m", "--fyod"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    assert!(
        output.status.success(),
        "{}\n{stdout}",
        String::from_utf8_lossy(&output.stderr)
    );
    assert!(stdout.contains("every byte checked"), "{stdout}");
}
