//! pjdfstest — the POSIX file-system test suite, vendored at `third_party/pjdfstest` (see its
//! `README.iopath`) — run as root against a stack mounted with `iopath up --mount`: every
//! file of the suite, every one of its assertions. Each test it fails must be named, with
//! its reason, in docs/mount.md's pjdfstest section; there are none now, so a failure here
//! is a regression (or a new kind of file system call the mount does not answer).
//!
//! Needs /dev/fuse and fusermount3 (fuse3), a C compiler (`cc`) and `prove` (perl):
//! scripts/test installs them; a machine without them fails this test, saying which.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::io::{BufRead, BufReader};
use std::path::Path;
use std::process::{Command, Stdio};

mod common;
use common::iopath;

/// How many files and assertions the vendored suite holds: all of them must run (a file that
/// stops early, or a suite that finds fewer, shows here).
const SUITE_FILES: usize = 238;
const SUITE_ASSERTIONS: usize = 8798;

#[test]
fn pjdfstest_passes_on_the_mount() {
    for tool in ["cc", "prove", "fusermount3"] {
        common::require_tool(tool, "gcc perl fuse3");
    }
    assert!(
        Path::new("/dev/fuse").exists(),
        "/dev/fuse is missing: this machine cannot mount FUSE file systems"
    );
    let root = Command::new("id").arg("-u").output().unwrap();
    assert_eq!(
        String::from_utf8_lossy(&root.stdout).trim(),
        "0",
        "pjdfstest runs as root (it changes owners and switches users): run scripts/test as root"
    );
    // The suite, built where its scripts look for it: `pjdfstest` beside `tests/`.
    let scratch = tempfile::tempdir().unwrap();
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("../third_party/pjdfstest");
    let suite = scratch.path().join("pjdfstest");
    std::fs::create_dir(&suite).unwrap();
    let copied = Command::new("cp")
        .arg("-r")
        .arg(source.join("tests"))
        .arg(&suite)
        .status()
        .unwrap();
    assert!(copied.success());
    let built = Command::new("cc")
        .args(["-Wall", "-Werror", "-O2", "-o"])
        .arg(suite.join("pjdfstest"))
        .arg(source.join("pjdfstest.c"))
        .output()
        .unwrap();
    assert!(
        built.status.success(),
        "building pjdfstest: {}",
        String::from_utf8_lossy(&built.stderr)
    );
    // A stack in one process, mounted.
    let mnt = scratch.path().join("mnt");
    std::fs::create_dir(&mnt).unwrap();
    let mut up = iopath()
        .args(["up", "--preset", "spider-mini", "--dir"])
        .arg(scratch.path().join("stack"))
        .arg("--mount")
        .arg(&mnt)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut lines = BufReader::new(up.stdout.take().unwrap()).lines();
    let said: Vec<String> = lines
        .by_ref()
        .map(|l| l.unwrap())
        .take_while(|l| !l.starts_with("ready"))
        .collect();
    assert!(
        said.iter().any(|l| l.starts_with("mounted")),
        "up did not mount: {said:?}"
    );
    // Four files at a time: each uses names of its own, as upstream's parallel runs do.
    let prove = Command::new("prove")
        .args(["-r", "-j", "4"])
        .arg(suite.join("tests"))
        .current_dir(&mnt)
        .output()
        .unwrap();
    let report = String::from_utf8_lossy(&prove.stdout).into_owned()
        + &String::from_utf8_lossy(&prove.stderr);
    drop(up.stdin.take());
    let rest: Vec<String> = lines.map(|l| l.unwrap()).collect();
    assert!(
        up.wait().unwrap().success(),
        "the stack stopped badly: {rest:?}"
    );
    let failing: Vec<&str> = report
        .lines()
        .filter(|l| l.contains("Failed") || l.contains("Wstat") || l.starts_with("not ok"))
        .collect();
    assert!(
        prove.status.success() && report.contains("All tests successful."),
        "pjdfstest failed on the mount (name each failure in docs/mount.md, with its reason, only if it is not a bug):\n{}\n\n{report}",
        failing.join("\n")
    );
    let counted = format!("Files={SUITE_FILES}, Tests={SUITE_ASSERTIONS},");
    assert!(report.contains(&counted), "the whole suite ran: {report}");
}
