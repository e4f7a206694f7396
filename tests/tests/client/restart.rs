//! A storage server crashed and restarted in the middle of a run with async commits: clients
//! keep every acknowledged-but-uncommitted write, replay it to the restarted server, resend
//! what was in flight, and every acknowledged byte reads back.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use std::time::Duration;

use common::{MIB, Pattern, check, seed, stripe};
use iopath_client::{Client, ClientConfig};
use iopath_fabric::Limits;
use iopath_stack::testing::{TestStack, TestStackConfig};

const CLIENTS: usize = 4;
const CALL: u64 = MIB;
const CALLS_BEFORE: u64 = 6;
const CALLS_DURING: u64 = 10;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_acknowledged_byte_survives_a_server_restart_in_async_mode() {
    let stack = TestStack::start(TestStackConfig {
        sync_journal: false,
        // No commit by time during the test: what the crash finds uncommitted is exactly what
        // the clients have to replay.
        commit_interval_ms: 3_600_000,
        recovery_window: Duration::from_secs(20),
        limits: Limits {
            // A request the crash swallowed is resent after this, not after 10 s.
            rpc_timeout: Duration::from_secs(1),
            ..Limits::default()
        },
        ..TestStackConfig::default()
    })
    .await
    .unwrap();
    let pattern = Pattern::new(seed());
    let mut clients = Vec::new();
    let mut files = Vec::new();
    for rank in 0..CLIENTS {
        let client = stack.client().await.unwrap();
        // Every target, so every file has objects on the server that crashes.
        let file = client
            .create(&format!("/r{rank}"), stripe(MIB, -1, -1))
            .await
            .unwrap();
        clients.push(client);
        files.push(file);
    }
    let base = |rank: usize| rank as u64 * 64 * MIB;

    // Acknowledged before the crash, not committed: kept by the clients.
    for (rank, file) in files.iter().enumerate() {
        let handles: Vec<_> = (0..CALLS_BEFORE)
            .map(|c| file.iwrite(c * CALL, pattern.bytes(base(rank) + c * CALL, CALL)))
            .collect();
        for handle in handles {
            assert_eq!(file.iowait(handle).await.unwrap().bytes(), CALL);
        }
    }
    let kept: u64 = clients.iter().map(|c| c.kept_bytes()).sum();
    assert!(
        kept > 0,
        "async commits: acknowledged writes are kept for replay"
    );
    println!("kept before the crash: {kept} bytes");

    // More calls queued on every file; the server holding OST0000 and OST0002 crashes while
    // they run, and comes back.
    let mut during = Vec::new();
    for (rank, file) in files.iter().enumerate() {
        for c in CALLS_BEFORE..CALLS_BEFORE + CALLS_DURING {
            let offset = c * CALL;
            during.push((
                rank,
                file.iwrite(offset, pattern.bytes(base(rank) + offset, CALL)),
            ));
        }
    }
    // Let the first of them be acknowledged, so the crash falls in the middle of the run.
    let (first_rank, first) = during.remove(0);
    files[first_rank].iowait(first).await.unwrap();
    stack.restart_oss(0).await.unwrap();
    // The restarted targets cut their objects back to what was committed: whatever of the
    // acknowledged bytes reads back below came back through the clients' replay.
    let service = stack.oss_service(0).await.unwrap();
    let trimmed: usize = service
        .oss()
        .targets()
        .iter()
        .map(|t| t.recovery().trimmed.len())
        .sum();
    assert!(trimmed > 0, "the crash left uncommitted data to cut back");
    for (rank, handle) in during {
        // Acknowledged: after reconnecting, replaying and resending as needed.
        assert_eq!(files[rank].iowait(handle).await.unwrap().bytes(), CALL);
    }

    // Every acknowledged byte, read by the writers and by a client that never saw the crash.
    let fresh = stack.client().await.unwrap();
    let len = (CALLS_BEFORE + CALLS_DURING) * CALL;
    for (rank, file) in files.iter().enumerate() {
        let expected = pattern.bytes(base(rank), len);
        check(
            &format!("/r{rank} by its writer"),
            &file.read_at(0, len).await.unwrap(),
            &expected,
        );
        let other = fresh.open(&format!("/r{rank}")).await.unwrap();
        assert_eq!(other.size().await.unwrap(), len);
        check(
            &format!("/r{rank} by a new client"),
            &other.read_at(0, len).await.unwrap(),
            &expected,
        );
    }
    // Once committed, nothing needs keeping.
    for file in &files {
        file.fsync().await.unwrap();
    }
    let kept: u64 = clients.iter().map(|c| c.kept_bytes()).sum();
    assert_eq!(
        kept, 0,
        "fsync commits every target: nothing left to replay"
    );
}

/// A client that misses a restarted server's recovery window is evicted and its kept writes
/// are lost: the file they belonged to says so on fsync, and a file written afterwards on the
/// same target does not.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loss_after_eviction_is_reported_once_per_handle_by_the_file_it_hit_and_no_other() {
    let stack = TestStack::start(TestStackConfig {
        sync_journal: false,
        commit_interval_ms: 3_600_000,
        recovery_window: Duration::from_millis(50),
        ..TestStackConfig::default()
    })
    .await
    .unwrap();
    let client = stack.client().await.unwrap();
    let hit = client.create("/hit", stripe(MIB, 1, 0)).await.unwrap();
    hit.write_at(0, Pattern::new(seed()).bytes(0, MIB))
        .await
        .unwrap();
    assert!(client.kept_bytes() > 0, "acknowledged, uncommitted: kept");

    stack.restart_oss(0).await.unwrap();
    // The window closes before this client's pinger comes back (every second): evicted.
    // Bounded wait for the pinger to find its kept write lost.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while client.lost_writes().is_empty() {
        assert!(
            std::time::Instant::now() < deadline,
            "the loss was never found"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }

    let error = hit.fsync().await.unwrap_err();
    assert!(
        matches!(
            error,
            iopath_client::ClientError::WritesLost { count: 1, .. }
        ),
        "{error}"
    );
    // Told once, as Linux tells each open file of a write-back error once: the handle's
    // next fsync succeeds (it used to fail forever), and a handle opened since is told too.
    hit.fsync().await.unwrap();
    let reopened = client.open("/hit").await.unwrap();
    assert!(
        matches!(
            reopened.fsync().await,
            Err(iopath_client::ClientError::WritesLost { count: 1, .. })
        ),
        "a handle opened after the loss is told of it once"
    );
    reopened.fsync().await.unwrap();
    let later = client.create("/later", stripe(MIB, 1, 0)).await.unwrap();
    later
        .write_at(0, Pattern::new(seed()).bytes(0, MIB))
        .await
        .unwrap();
    later.fsync().await.unwrap();
}

/// A client that closes has committed everything it wrote and is forgotten by the servers: a
/// server that crashes right after has nothing of it to wait for, opens no recovery window
/// for it, and serves every byte to a reader at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_closed_client_has_committed_everything_and_is_not_waited_for() {
    let stack = TestStack::start(TestStackConfig {
        sync_journal: false,
        commit_interval_ms: 3_600_000,
        recovery_window: Duration::from_secs(20),
        ..TestStackConfig::default()
    })
    .await
    .unwrap();
    let pattern = Pattern::new(seed());
    let writer = stack.client().await.unwrap();
    let file = writer.create("/closed", stripe(MIB, -1, -1)).await.unwrap();
    file.write_at(0, pattern.bytes(0, 4 * MIB)).await.unwrap();
    assert!(writer.kept_bytes() > 0, "acknowledged, uncommitted: kept");
    file.close().await.unwrap();
    writer.close().await.unwrap();
    assert_eq!(writer.kept_bytes(), 0, "close committed every write");
    writer.close().await.unwrap(); // twice is once

    stack.restart_oss(0).await.unwrap();
    let service = stack.oss_service(0).await.unwrap();
    for target in service.oss().targets() {
        assert!(
            !service.recovering(target.index()),
            "nobody to wait for: the only client disconnected"
        );
        assert!(target.lost_ranges().is_empty());
    }
    let reader = stack.client().await.unwrap();
    let back = reader.open("/closed").await.unwrap();
    check(
        "/closed after the crash",
        &back.read_at(0, 4 * MIB).await.unwrap(),
        &pattern.bytes(0, 4 * MIB),
    );
    reader.close().await.unwrap();
}

/// A writer whose process restarts under the same client id has forgotten what it was told
/// was written. The restarted server does not wait out its window for replays that cannot
/// come, and counts those writes as lost: a reader is refused the bytes, with EIO naming
/// them, instead of being served a hole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_writer_back_under_its_id_with_nothing_kept_has_lost_its_writes_and_readers_are_told() {
    let stack = TestStack::start(TestStackConfig {
        sync_journal: false,
        commit_interval_ms: 3_600_000,
        recovery_window: Duration::from_secs(20),
        ..TestStackConfig::default()
    })
    .await
    .unwrap();
    let pattern = Pattern::new(seed());
    let (node, id) = stack.client_node().await.unwrap();
    let writer = Client::connect(ClientConfig::new(node.clone(), stack.mds_nid(), id))
        .await
        .unwrap();
    let file = writer
        .create("/forgotten", stripe(MIB, 1, 0))
        .await
        .unwrap();
    file.write_at(0, pattern.bytes(0, MIB)).await.unwrap();
    assert!(writer.kept_bytes() > 0);
    // The writer's process dies without closing.
    drop(file);
    drop(writer);

    stack.restart_oss(0).await.unwrap();
    let service = stack.oss_service(0).await.unwrap();
    assert!(
        service.recovering(0),
        "the restarted server waits for its client"
    );
    // Back under the same id on the same node (the server binds a client id to the NID it
    // connected from), with nothing kept.
    let again = Client::connect(ClientConfig::new(node, stack.mds_nid(), id))
        .await
        .unwrap();
    // Bounded wait for the window to close: far less than its 20 s, since the one client it
    // waited for has answered.
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while service.recovering(0) {
        assert!(
            std::time::Instant::now() < deadline,
            "the window waited for replays that cannot come"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let lost = service.oss().targets()[0].lost_ranges();
    assert_eq!(lost.lost_bytes(), MIB, "the forgotten write is marked lost");
    let reader = again.open("/forgotten").await.unwrap();
    let error = reader.read_at(0, MIB).await.unwrap_err();
    let chain = format!("{:?}", error);
    assert!(
        chain.contains("lost 1048576 acknowledged bytes at [0, 1048576)")
            && chain.contains("code: 5"),
        "the reader is told, with EIO: {chain}"
    );
    let size = reader.size().await.unwrap_err();
    assert!(format!("{size:?}").contains("lost"), "{size:?}");
    again.close().await.unwrap();
}
