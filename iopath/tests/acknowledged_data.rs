//! The promise the project is about, tried as a user would try it with short-lived programs:
//! every `iopath lfs put` that says "copied" and exits 0 has its bytes back from
//! `iopath lfs get`, whatever a storage server's crash does around it — and where a writer
//! really did take acknowledged writes with it, every reader is told, never served a hole.
//!
//! A direct-attached stack of processes (spider-mini's shape, with commits only when forced,
//! so whatever the crash finds uncommitted is exactly what a client had to keep) runs under
//! `iopath up --processes`; one storage server is killed with SIGKILL before, during or after
//! a run of puts, with async and with sync journals, and started again on the same disk.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::io::Write;
use std::sync::mpsc;
use std::time::Duration;

use bytes::Bytes;
use iopath_client::{Client, ClientConfig, StripeRequest};
use iopath_fabric::{Interface, Nid, Node, NodeConfig};

mod common;
use common::{JournalName, Stack, crash_stack as stack_file, iopath};

/// Files each run puts, and their size (not a multiple of the stripe, as in the issue).
const FILES: usize = 6;
const FILE_BYTES: usize = 3_000_000;
/// File `i`'s bytes: distinct per file, and never zeros, so a hole is never taken for data.
fn content(i: usize) -> Vec<u8> {
    let mut x = 0x9e37_79b9_7f4a_7c15u64 ^ (i as u64 + 1);
    (0..FILE_BYTES)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            (x as u8) | 1
        })
        .collect()
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum KillPoint {
    /// Killed and restarted before the first put.
    Before,
    /// Killed once the second put has exited, restarted a second later: the rest of the puts
    /// run into the crash and the recovery.
    During,
    /// Killed after every put has exited, then restarted.
    After,
}

/// The sequence: six `lfs put`s, one storage server killed at `point` and started
/// again, then every file read back with `lfs get` by a new process.
fn puts_survive_a_crash(journal: JournalName, point: KillPoint) {
    let mut stack = Stack::start(&stack_file(journal));
    let local = stack.dir.path().join("local");
    std::fs::create_dir(&local).unwrap();
    for i in 0..FILES {
        std::fs::File::create(local.join(format!("d{i}")))
            .unwrap()
            .write_all(&content(i))
            .unwrap();
    }
    if point == KillPoint::Before {
        stack.kill("oss1");
        let _ = stack.restart("oss1");
    }
    let (done, exited) = mpsc::channel();
    let (mds, paths) = (stack.mds.clone(), local.clone());
    let puts = std::thread::spawn(move || {
        for i in 0..FILES {
            let out = iopath()
                .args(["lfs", "--mds", &mds, "put"])
                .arg(paths.join(format!("d{i}")))
                .arg(format!("/d{i}"))
                .output()
                .unwrap();
            done.send(()).unwrap();
            let stdout = String::from_utf8_lossy(&out.stdout);
            assert!(
                out.status.success() && stdout.contains(&format!("{FILE_BYTES} bytes copied")),
                "put d{i}: {stdout}{}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
    });
    if point == KillPoint::During {
        exited.recv().unwrap();
        exited.recv().unwrap();
        stack.kill("oss1");
        std::thread::sleep(Duration::from_secs(1));
        let _ = stack.restart("oss1");
    }
    puts.join().unwrap();
    if point == KillPoint::After {
        stack.kill("oss1");
        let _ = stack.restart("oss1");
    }
    // Every acknowledged byte reads back, from a process that never wrote it.
    for i in 0..FILES {
        let back = local.join(format!("r{i}"));
        let out = stack.lfs(&["get", &format!("/d{i}"), back.to_str().unwrap()]);
        assert!(
            out.status.success(),
            "{journal:?}, killed {point:?}: get /d{i} failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let data = std::fs::read(&back).unwrap();
        assert_eq!(
            data.len(),
            FILE_BYTES,
            "{journal:?}, killed {point:?}: /d{i} came back with the wrong size"
        );
        assert!(
            data == content(i),
            "{journal:?}, killed {point:?}: /d{i} came back with other bytes"
        );
    }
    let logs = stack.stop();
    assert!(
        !logs.contains("evicting"),
        "a client that exits commits first and disconnects: nobody is left to evict\n{logs}"
    );
}

#[test]
fn async_puts_survive_a_storage_server_killed_before_them() {
    puts_survive_a_crash(JournalName::Async, KillPoint::Before);
}

#[test]
fn async_puts_survive_a_storage_server_killed_during_them() {
    puts_survive_a_crash(JournalName::Async, KillPoint::During);
}

#[test]
fn async_puts_survive_a_storage_server_killed_after_them() {
    puts_survive_a_crash(JournalName::Async, KillPoint::After);
}

#[test]
fn sync_puts_survive_a_storage_server_killed_before_them() {
    puts_survive_a_crash(JournalName::Sync, KillPoint::Before);
}

#[test]
fn sync_puts_survive_a_storage_server_killed_during_them() {
    puts_survive_a_crash(JournalName::Sync, KillPoint::During);
}

#[test]
fn sync_puts_survive_a_storage_server_killed_after_them() {
    puts_survive_a_crash(JournalName::Sync, KillPoint::After);
}

/// A writer that dies holding acknowledged, uncommitted writes (here: a client library
/// dropped without `close`, as a process that is killed drops it) cannot have them replayed.
/// After the crash every reader is told — `lfs get` and `lfs stat` fail naming the lost bytes,
/// and leave no partial copy — and a rewrite makes the file whole again.
#[test]
fn a_reader_is_told_when_a_dead_writers_acknowledged_bytes_were_dropped() {
    let mut stack = Stack::start(&stack_file(JournalName::Async));
    let mds: Nid = stack.mds.parse().unwrap();
    let runtime = tokio::runtime::Runtime::new().unwrap();
    runtime.block_on(async {
        let node = Node::start(NodeConfig {
            interfaces: vec![Interface::Tcp {
                nid: "127.0.0.1:0@tcp0".parse().unwrap(),
            }],
            ..NodeConfig::default()
        })
        .await
        .unwrap();
        let client = Client::connect(ClientConfig::new(node.clone(), mds, 4242))
            .await
            .unwrap();
        let file = client
            .create("/dead", StripeRequest::INHERIT)
            .await
            .unwrap();
        file.write_at(0, Bytes::from(content(0))).await.unwrap();
        assert!(
            client.kept_bytes() > 0,
            "acknowledged and uncommitted: the writer holds the only replayable copy"
        );
        // The writer dies: no close, no commit.
        drop(file);
        drop(client);
        node.shutdown();
    });
    stack.kill("oss1");
    let admin = stack.restart("oss1");
    // The restarted server waits its window for the dead writer, evicts it, and marks what it
    // cannot get back. A reader that comes during the window waits for it.
    let back = stack.dir.path().join("back");
    let out = stack.lfs(&["get", "/dead", back.to_str().unwrap()]);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "a get of lost bytes must fail");
    assert!(
        stderr.contains("lost") && stderr.contains("acknowledged bytes at ["),
        "the reader is told what was lost: {stderr}"
    );
    assert!(
        !stderr.contains('\u{1b}'),
        "no terminal colour escapes in a log written to a pipe: {stderr:?}"
    );
    assert!(
        !back.exists(),
        "no partial copy is left to be taken for the file"
    );
    let out = stack.lfs(&["stat", "/dead"]);
    assert!(!out.status.success());
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("lost"),
        "stat says so too: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    // The operator sees it too.
    let out = iopath()
        .args(["lctl", "--admin", &admin, "get_param", "obdfilter.*.lost"])
        .output()
        .unwrap();
    let lost = String::from_utf8_lossy(&out.stdout);
    assert!(
        lost.lines()
            .filter_map(|l| l.strip_prefix("lost_bytes: "))
            .any(|n| n.trim().parse::<u64>().unwrap() > 0),
        "lctl shows the lost bytes: {lost}"
    );
    // Written again (the file is removed and put anew), it reads back.
    let local = stack.dir.path().join("again");
    std::fs::write(&local, content(1)).unwrap();
    assert!(stack.lfs(&["rm", "/dead"]).status.success());
    let put = stack.lfs(&["put", local.to_str().unwrap(), "/dead"]);
    assert!(
        put.status.success(),
        "{}",
        String::from_utf8_lossy(&put.stderr)
    );
    let get = stack.lfs(&["get", "/dead", back.to_str().unwrap()]);
    assert!(
        get.status.success(),
        "{}",
        String::from_utf8_lossy(&get.stderr)
    );
    assert!(std::fs::read(&back).unwrap() == content(1));
    let logs = stack.stop();
    assert!(logs.contains("evicting client 4242"), "{logs}");
    assert!(logs.contains("no client replayed them"), "{logs}");
}
