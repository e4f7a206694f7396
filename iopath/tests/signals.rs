//! Signals as a user sends them: Ctrl-C (SIGINT) or a scheduler's SIGTERM to a benchmark
//! that has started writing leaves none of its data behind, and a stack run on a terminal
//! gives the prompt back at Ctrl-C even with its standard input still open.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::io::{BufRead, BufReader};
use std::os::unix::process::ExitStatusExt as _;
use std::path::Path;
use std::process::{Child, Stdio};
use std::time::{Duration, Instant};

mod common;
use common::iopath;

/// How long a process may take to end after a signal before the test calls it hung: far more
/// than removing a few hundred MiB takes, far less than the run would take to finish.
const END_WAIT: Duration = Duration::from_secs(60);

/// Bytes the benchmark must have written into its directory before it is signalled.
const WRITTEN_BEFORE_SIGNAL_BYTES: u64 = 32 << 20;

/// A directory on the build's file system (target/tmp), where O_DIRECT works; /tmp may be tmpfs.
fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

/// Bytes in the files under `dir`, however deep; files that vanish meanwhile count nothing.
fn bytes_under(dir: &Path) -> u64 {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return 0;
    };
    entries
        .flatten()
        .map(|entry| match entry.file_type() {
            Ok(t) if t.is_dir() => bytes_under(&entry.path()),
            Ok(_) => entry.metadata().map_or(0, |m| m.len()),
            Err(_) => 0,
        })
        .sum()
}

/// What is left in `dir`, by name.
fn names_in(dir: &Path) -> Vec<String> {
    std::fs::read_dir(dir)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .collect()
}

fn signal(child: &Child, signal: libc::c_int) {
    // SAFETY: kill(2) on our own child's pid touches no memory.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, signal) }, 0);
}

/// Waits for `child` to end, killing it and failing if it has not within `END_WAIT`.
fn ended(child: &mut Child, what: &str) -> std::process::ExitStatus {
    let start = Instant::now();
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if start.elapsed() > END_WAIT {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{what} was still running {END_WAIT:?} after the signal");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// `iopath bench ior -N 2 -w -b 512m -t 1m` (with `more`) in a fresh directory, signalled
/// with `sig` once its IOR write phase has written `WRITTEN_BEFORE_SIGNAL_BYTES`: it must end
/// by that signal, with nothing of its own left in the directory. Two tasks keep what the run
/// and its disk baselines put on the disk near 2 GiB, so two of these side by side fit a small
/// CI disk.
fn a_signalled_benchmark_leaves_nothing(sig: libc::c_int, more: &[&str]) {
    let parent = scratch();
    let mut bench = iopath()
        .args([
            "bench", "ior", "-N", "2", "-w", "-b", "512m", "-t", "1m", "-v", "--dir",
        ])
        .arg(parent.path())
        .args(more)
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Standard error is gathered from the start, so a failure can say what the benchmark said.
    let mut stderr_pipe = bench.stderr.take().unwrap();
    let stderr = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = std::io::Read::read_to_string(&mut stderr_pipe, &mut text);
        text
    });
    // -v says when the write phase starts (the disk baselines before it write too).
    let stdout = bench.stdout.take().unwrap();
    let mut lines = BufReader::new(stdout).lines();
    let started = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.starts_with("Commencing write performance test"));
    if !started {
        let status = ended(&mut bench, "bench ior");
        panic!(
            "bench ior ended before its write phase ({status}); stderr:\n{}",
            stderr.join().unwrap()
        );
    }
    // Standard output is drained from here on, so the benchmark never blocks on it.
    let drain = std::thread::spawn(move || lines.count());
    let start = Instant::now();
    while bytes_under(parent.path()) < WRITTEN_BEFORE_SIGNAL_BYTES {
        assert!(
            start.elapsed() < END_WAIT,
            "the write phase wrote under {WRITTEN_BEFORE_SIGNAL_BYTES} bytes in {END_WAIT:?}"
        );
        assert!(
            bench.try_wait().unwrap().is_none(),
            "bench ior ended before it was signalled"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    signal(&bench, sig);
    let status = ended(&mut bench, "bench ior");
    drain.join().unwrap();
    let stderr = stderr.join().unwrap();
    assert_eq!(
        status.signal(),
        Some(sig),
        "ends by the signal, as a shell expects ({status}); stderr:\n{stderr}"
    );
    assert_eq!(
        names_in(parent.path()),
        Vec::<String>::new(),
        "its directory is removed; stderr:\n{stderr}"
    );
}

#[test]
fn ctrl_c_while_bench_ior_writes_removes_its_directory() {
    a_signalled_benchmark_leaves_nothing(libc::SIGINT, &[]);
}

#[test]
fn sigterm_while_bench_ior_writes_with_node_processes_removes_its_directory() {
    // SIGTERM to the benchmark alone, as a scheduler sends it: its node processes, writing
    // into the same directory, are not signalled by anyone else.
    a_signalled_benchmark_leaves_nothing(libc::SIGTERM, &["--processes"]);
}

#[test]
fn up_returns_at_ctrl_c_with_its_standard_input_held_open() {
    // At once, as a user may: a signal before `up` begins to wait for one counts too.
    up_returns_at_ctrl_c(Duration::ZERO);
}

#[test]
fn up_returns_at_a_later_ctrl_c_with_its_standard_input_held_open() {
    // Once `up` sits waiting, as on a terminal: the read of standard input it waits on too
    // must not hold the process after it has stopped.
    up_returns_at_ctrl_c(UP_SETTLE);
}

/// Long enough for `up` to be waiting on its signals and its standard input.
const UP_SETTLE: Duration = Duration::from_secs(1);

/// `iopath up` with its standard input held open, SIGINT `after` it said it was ready: it
/// must stop, say so, and exit 0.
fn up_returns_at_ctrl_c(after: Duration) {
    let mut up = iopath()
        .args(["up", "--preset", "spider-mini"])
        // Held open for the whole test, as a terminal's is: `up` also stops at its end, which
        // must not be what it waits for after Ctrl-C.
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let _stdin = up.stdin.take().unwrap();
    let mut lines = BufReader::new(up.stdout.take().unwrap()).lines();
    let ready = lines
        .by_ref()
        .map_while(Result::ok)
        .any(|line| line.starts_with("ready"));
    assert!(ready, "up never said it was ready");
    std::thread::sleep(after);
    signal(&up, libc::SIGINT);
    let rest = std::thread::spawn(move || lines.map_while(Result::ok).collect::<Vec<_>>());
    let status = ended(&mut up, "iopath up");
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut up.stderr.take().unwrap(), &mut stderr).unwrap();
    assert!(status.success(), "{status}: {stderr}");
    assert!(stderr.contains("SIGINT: stopping"), "{stderr}");
    assert_eq!(rest.join().unwrap(), ["stopped"], "{stderr}");
}
