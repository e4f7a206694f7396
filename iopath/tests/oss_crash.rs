//! The OSS as a real process, killed with SIGKILL at a seeded point under load and restarted:
//! no acknowledged write may be lost — in sync mode directly, in async mode through the
//! clients' replay — and a client that does not come back is evicted, losing only its own
//! uncommitted writes. Every test prints its seed; `IOPATH_SEED=n` repeats one.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::path::Path;
use std::process::{Child, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_fabric::{Interface, Nid, Node, NodeConfig};
use iopath_ost_client::OstClient;

const BLOCK: usize = 64 * 1024;

fn seed(default: u64) -> u64 {
    let _ = tracing_subscriber::fmt()
        .with_test_writer()
        .with_env_filter("info")
        .try_init();
    let seed = std::env::var("IOPATH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default);
    println!("seed {seed} (IOPATH_SEED={seed} repeats this run)");
    seed
}

/// Starts `iopath oss` on `dir`; returns the child, its NID, and its stderr collected so far.
fn start_oss(dir: &Path, nid: &str, journal: &str, window_ms: u64, commit_ms: u64) -> (Child, Nid) {
    let mut child = common::iopath()
        .args(["oss", "--dir"])
        .arg(dir)
        .args(["--nid", nid, "--targets", "2", "--journal", journal])
        .args([
            "--recovery-window-ms",
            &window_ms.to_string(),
            "--commit-interval-ms",
            &commit_ms.to_string(),
        ])
        .env("IOPATH_LOG", "info")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let words = common::ready_words(child.stdout.take().unwrap())
        .unwrap_or_else(|line| panic!("oss said {line:?}"));
    let nid = words[0].parse().unwrap();
    (child, nid)
}

fn kill(mut child: Child) -> String {
    child.kill().unwrap(); // SIGKILL: no clean shutdown, no marker, no commit
    let output = child.wait_with_output().unwrap();
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn stop(mut child: Child) -> String {
    drop(child.stdin.take());
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "oss exit {}", output.status);
    String::from_utf8_lossy(&output.stderr).into_owned()
}

async fn client_node() -> Node {
    let interfaces = vec![Interface::Tcp {
        nid: "127.0.0.1:0@tcp0".parse().unwrap(),
    }];
    // A short RPC timeout: a request in flight when the server died is resent soon after.
    let limits = iopath_fabric::Limits {
        rpc_timeout: Duration::from_secs(1),
        rpc_resends_max: 30,
        ..Default::default()
    };
    Node::start(NodeConfig {
        interfaces,
        limits,
        ..NodeConfig::default()
    })
    .await
    .unwrap()
}

/// The content of block `index` of object `object` in run `seed`.
fn block(seed: u64, object: u64, index: u64) -> Bytes {
    let mut state = seed ^ (object << 32) ^ index.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    (0..BLOCK)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

/// Writers append blocks to their own objects; the server is killed once `kill_after` writes
/// are acknowledged and restarted; writers carry on (their client reconnects and replays);
/// finally every acknowledged block must read back.
async fn crash_under_load(journal: &str, seed: u64) {
    let dir = tempfile::tempdir().unwrap();
    let (server, nid) = start_oss(dir.path(), "127.0.0.1:0@tcp0", journal, 10_000, 50);
    let node = client_node().await;
    let client = Arc::new(
        OstClient::connect(node.clone(), nid, 1000 + seed % 1000)
            .await
            .unwrap(),
    );
    let writers = 4u64;
    for w in 0..writers {
        client.create((w % 2) as u32, w).await.unwrap();
    }
    let acked: Arc<Mutex<Vec<(u64, u64)>>> = Arc::default();
    let kill_after = 20 + (seed % 40) as usize;
    let per_writer = 40u64;
    let mut tasks = Vec::new();
    for w in 0..writers {
        let (client, acked) = (Arc::clone(&client), Arc::clone(&acked));
        tasks.push(tokio::spawn(async move {
            for index in 0..per_writer {
                let data = block(seed, w, index);
                client
                    .write((w % 2) as u32, w, index * BLOCK as u64, data)
                    .await
                    .unwrap_or_else(|e| panic!("writer {w} block {index}: {e}"));
                acked.lock().unwrap().push((w, index));
            }
        }));
    }
    let deadline = Instant::now() + Duration::from_secs(30);
    while acked.lock().unwrap().len() < kill_after {
        assert!(Instant::now() < deadline, "writes did not start");
        tokio::time::sleep(Duration::from_millis(2)).await;
    }
    let killed_at = acked.lock().unwrap().len();
    let kept_at_kill = client.kept_writes();
    let log = kill(server);
    println!(
        "killed after {killed_at} acknowledged writes, {kept_at_kill} kept for replay; server log:\n{log}"
    );
    let (server, _) = start_oss(dir.path(), &nid.to_string(), journal, 10_000, 50);
    for task in tasks {
        task.await.unwrap();
    }
    // Every acknowledged block, before and after the crash, reads back intact.
    let acked = acked.lock().unwrap().clone();
    assert_eq!(acked.len() as u64, writers * per_writer);
    for (w, index) in acked {
        let back = client
            .read((w % 2) as u32, w, index * BLOCK as u64, BLOCK as u64)
            .await
            .unwrap();
        assert!(
            back == block(seed, w, index),
            "{journal}: object {w} block {index} differs after the crash (seed {seed})"
        );
    }
    if journal == "sync" {
        assert_eq!(
            kept_at_kill, 0,
            "sync mode keeps nothing: every reply came after its commit"
        );
    } else {
        assert!(
            kept_at_kill > 0,
            "async mode: the kill found acknowledged writes uncommitted, so replay was needed"
        );
    }
    stop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_mode_every_acknowledged_write_survives_sigkill() {
    crash_under_load("sync", seed(11)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_mode_every_acknowledged_write_survives_sigkill_through_replay() {
    crash_under_load("async", seed(12)).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_return_is_evicted_and_only_its_uncommitted_writes_are_gone() {
    let seed = seed(13);
    let dir = tempfile::tempdir().unwrap();
    // Commits only when forced, so both clients' writes are acknowledged but uncommitted.
    let (server, nid) = start_oss(dir.path(), "127.0.0.1:0@tcp0", "async", 1500, 600_000);
    let (node_a, node_b) = (client_node().await, client_node().await);
    let a = OstClient::connect(node_a, nid, 1).await.unwrap();
    let b = OstClient::connect(node_b, nid, 2).await.unwrap();
    a.create(0, 10).await.unwrap();
    b.create(0, 20).await.unwrap(); // creates commit, and with them everything before
    for index in 0..4 {
        a.write(0, 10, index * BLOCK as u64, block(seed, 10, index))
            .await
            .unwrap();
        b.write(0, 20, index * BLOCK as u64, block(seed, 20, index))
            .await
            .unwrap();
    }
    assert_eq!(
        (a.kept_writes(), b.kept_writes()),
        (4, 4),
        "all eight acknowledged and uncommitted"
    );
    kill(server);
    let (server, _) = start_oss(dir.path(), &nid.to_string(), "async", 1500, 600_000);
    // A comes back and replays; B stays away past the window.
    let report = a.reconnect_and_replay().await.unwrap();
    if !(report.restarted && report.lost.is_empty()) {
        panic!("{report:?}\nRESTART LOG {}", kill(server));
    }
    assert_eq!(report.replayed, 4);
    for index in 0..4 {
        let back = a
            .read(0, 10, index * BLOCK as u64, BLOCK as u64)
            .await
            .unwrap();
        assert!(back == block(seed, 10, index), "A's block {index} lost");
    }
    // B's uncommitted writes are gone, and nothing else — and a reader is told, never served
    // the shorter object or a hole as if nothing happened: the size and every read that
    // touches the lost bytes fail with EIO naming them.
    let lost = |error: iopath_fabric::FabricError| match error {
        iopath_fabric::FabricError::Remote {
            code: 5, message, ..
        } => message,
        other => panic!("expected EIO naming the lost bytes, got {other}"),
    };
    let size = lost(a.getattr(0, 20).await.unwrap_err());
    assert!(
        size.contains("lost 262144 acknowledged bytes at [0, 262144)"),
        "{size}"
    );
    let read = lost(a.read(0, 20, BLOCK as u64, BLOCK as u64).await.unwrap_err());
    assert!(
        read.contains(&format!("[{BLOCK}, {})", 2 * BLOCK)),
        "{read}"
    );
    // B returns late: told its kept writes were lost.
    let report = b.reconnect_and_replay().await.unwrap();
    assert_eq!(report.lost.len(), 4, "{report:?}");
    let log = stop(server);
    assert!(
        log.contains("evict"),
        "the server says it evicted the client:\n{log}"
    );
    // A came back: no window evicts it — not even that of target 1, to which it had nothing
    // to replay while its replays to target 0 waited at B's deadline.
    assert!(
        !log.contains("evicting client 1"),
        "A, which reconnected, was evicted:\n{log}"
    );
    assert!(
        log.contains("no client replayed them"),
        "the server says what was lost:\n{log}"
    );

    // The mark is durable: after another start, still refused; a rewrite clears it.
    // (A new client: A is still on the list, bound to its node, and was never evicted.)
    let (server, _) = start_oss(dir.path(), &nid.to_string(), "async", 1500, 600_000);
    let a = OstClient::connect(client_node().await, nid, 3)
        .await
        .unwrap();
    lost(a.getattr(0, 20).await.unwrap_err());
    for index in 0..4 {
        a.write(0, 20, index * BLOCK as u64, block(seed, 21, index))
            .await
            .unwrap();
    }
    assert_eq!(a.getattr(0, 20).await.unwrap(), 4 * BLOCK as u64);
    let back = a.read(0, 20, 0, BLOCK as u64).await.unwrap();
    assert!(back == block(seed, 21, 0), "the rewrite reads back");
    a.disconnect().await.unwrap();
    stop(server);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_journal_mode_switches_while_running_through_lctl() {
    let dir = tempfile::tempdir().unwrap();
    let mut server = common::iopath()
        .args(["oss", "--dir"])
        .arg(dir.path())
        .args([
            "--targets",
            "2",
            "--journal",
            "async",
            "--commit-interval-ms",
            "600000",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let words = common::ready_words(server.stdout.take().unwrap())
        .unwrap_or_else(|line| panic!("oss said {line:?}"));
    let nid: Nid = words[0].parse().unwrap();
    let admin = words[1].clone();
    // Started without --secret-file, the OSS wrote a secret of its own into its directory.
    let secret = dir.path().join("admin.secret");
    let lctl = |args: &[&str]| {
        let out = common::iopath()
            .args(["lctl", "--admin", &admin, "--secret-file"])
            .arg(&secret)
            .args(args)
            .output()
            .unwrap();
        (
            out.status.success(),
            String::from_utf8_lossy(&out.stdout).into_owned(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let (ok, out, _) = lctl(&["get_param", "obdfilter.*.sync_journal"]);
    assert!(ok);
    assert_eq!(
        out.lines().collect::<Vec<_>>(),
        [
            "obdfilter.iopath-OST0000.sync_journal=0",
            "obdfilter.iopath-OST0001.sync_journal=0"
        ]
    );

    let client = OstClient::connect(client_node().await, nid, 9)
        .await
        .unwrap();
    client.create(0, 1).await.unwrap();
    let stamp = client.write(0, 1, 0, block(1, 1, 0)).await.unwrap();
    assert!(
        stamp.transno > stamp.last_committed,
        "async: the reply came before the commit"
    );

    assert!(lctl(&["set_param", "obdfilter.*.sync_journal=1"]).0);
    let (_, out, _) = lctl(&["get_param", "-n", "obdfilter.iopath-OST0000.sync_journal"]);
    assert_eq!(out.trim(), "1");
    let stamp = client
        .write(0, 1, BLOCK as u64, block(1, 1, 1))
        .await
        .unwrap();
    assert!(
        stamp.last_committed >= stamp.transno,
        "sync: the reply came after the commit"
    );
    assert_eq!(
        client.kept_writes(),
        0,
        "the sync commit covered the earlier async write too"
    );

    let (ok, _, err) = lctl(&["set_param", "obdfilter.iopath-OST0000.sync_journal=maybe"]);
    assert!(!ok && err.contains("sync_journal takes 0"), "{err}");
    let (_, out, _) = lctl(&["get_param", "-n", "obdfilter.iopath-OST0000.last_committed"]);
    assert!(out.trim().parse::<u64>().unwrap() >= stamp.transno);
    stop(server);
}

/// Two servers on one directory (the red team's case: a second server started on another port
/// recovered the live directory under the first, cutting its uncommitted tails, and a put read
/// back 82 MB of zeros). The second is refused before it reads anything, and names the first;
/// the first's acknowledged writes all read back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_second_oss_on_a_live_directory_is_refused_naming_the_first() {
    let dir = tempfile::tempdir().unwrap();
    let (first, nid) = start_oss(dir.path(), "127.0.0.1:0@tcp0", "async", 10_000, 3_600_000);
    let node = client_node().await;
    let client = OstClient::connect(node.clone(), nid, 4242).await.unwrap();
    client.create(0, 1).await.unwrap();
    let data = block(7, 1, 0);
    let stamp = client.write(0, 1, 0, data.clone()).await.unwrap();
    assert!(stamp.transno > stamp.last_committed, "kept uncommitted");

    let mut second = common::iopath()
        .args(["oss", "--dir"])
        .arg(dir.path())
        .args(["--targets", "2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    let status = loop {
        if let Some(status) = second.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            second.kill().unwrap();
            panic!("a second oss on a live directory kept running");
        }
        tokio::time::sleep(Duration::from_millis(20)).await;
    };
    let said = second.wait_with_output().unwrap();
    let said = String::from_utf8_lossy(&said.stderr);
    assert!(!status.success(), "{said}");
    assert!(
        said.contains("in use by another server") && said.contains(&format!("pid {}", first.id())),
        "names the first: {said}"
    );
    let back = client.read(0, 1, 0, BLOCK as u64).await.unwrap();
    assert!(back == data, "the live server's write reads back");
    stop(first);
}
