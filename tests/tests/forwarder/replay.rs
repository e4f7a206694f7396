//! A storage server crashes with acknowledged but uncommitted writes (async journal) and
//! restarts: every acknowledged byte reads back. In PFS mode the fyod replays each kept piece
//! by its descriptor and the server pulls it again from the compute node, whose region was
//! kept pinned for exactly this; in UFS mode the fyod replays its own copies.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use common::{MIB, Options, Stack, pattern};
use iopath_forwarder::{FileSystem, IoMode, OpenOptions};
use iopath_mds::StripeRequest;

fn options(mode: FileSystem) -> Options {
    Options {
        mode,
        commit_interval_ms: 3_600_000, // nothing commits unless asked
        ..Options::default()
    }
}

fn create(mode: FileSystem) -> OpenOptions {
    OpenOptions {
        create: true,
        stripe: Some(StripeRequest {
            stripe_size_bytes: MIB,
            stripe_count: if mode == FileSystem::Pfs { -1 } else { 1 },
            stripe_offset: 0,
        }),
        io_mode: IoMode::Munix,
        ..OpenOptions::default()
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pfs_pieces_are_replayed_from_the_compute_nodes_memory() {
    let mut stack = Stack::start(options(FileSystem::Pfs)).await;
    let client = stack.client(0, 1).await;
    let file = client.open("/kept", create(FileSystem::Pfs)).await.unwrap();
    let data = pattern(7, 4 * MIB);
    file.write_at(0, data.clone()).await.unwrap();
    assert_eq!(
        client.kept_bytes(),
        4 * MIB,
        "acknowledged, uncommitted: pinned"
    );

    stack.crash_and_restart_oss(0).await;

    // The fyod finds the server restarted, replays its two pieces on OSS 0 (the server pulls
    // them from the client again), and the read goes on.
    let back = file.read_at(0, 4 * MIB).await.unwrap();
    assert_eq!(back, data, "every acknowledged byte reads back");
    let stats = stack.fyods[0].stats();
    println!("replayed {} PFS writes", stats.pfs_writes_replayed);
    assert!(
        stats.pfs_writes_replayed >= 2,
        "OSS 0's pieces were replayed"
    );
    assert_eq!(
        stats.bytes_through_fyod, 0,
        "even the replay bypassed the fyod"
    );

    // Writes go on after the restart; fsync commits and releases the pinned memory.
    file.write_at(4 * MIB, pattern(8, MIB)).await.unwrap();
    file.fsync().await.unwrap();
    assert_eq!(client.kept_bytes(), 0);
    assert_eq!(file.size().await.unwrap(), 5 * MIB);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ufs_writes_are_replayed_from_the_fyods_own_copies() {
    let mut stack = Stack::start(options(FileSystem::Ufs)).await;
    let client = stack.client(0, 1).await;
    let file = client.open("/kept", create(FileSystem::Ufs)).await.unwrap();
    let data = pattern(9, 3 * MIB);
    file.write_at(0, data.clone()).await.unwrap();
    assert_eq!(client.kept_bytes(), 0, "UFS: the client is free at once");
    let kept = stack.fyods[0].stats().kept_bytes;
    assert_eq!(kept, 3 * MIB, "the fyod keeps its copies for replay");

    stack.crash_and_restart_oss(0).await;

    // Read past the fyod's cache: a fresh open drops it.
    let again = client.open("/kept", OpenOptions::default()).await.unwrap();
    assert_eq!(again.read_at(0, 3 * MIB).await.unwrap(), data);
    again.fsync().await.unwrap();
    assert_eq!(
        stack.fyods[0].stats().kept_bytes,
        0,
        "committed: nothing kept"
    );
}

/// A compute node that let go of its memory before the server came back cannot have its
/// pieces pulled again: the fyod says the acknowledged writes were lost, never answers as if
/// they were there.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_piece_whose_compute_node_let_go_is_reported_lost() {
    let mut stack = Stack::start(options(FileSystem::Pfs)).await;
    let (writer, writer_node) = stack.client_with_node(0, 1).await;
    let file = writer.open("/gone", create(FileSystem::Pfs)).await.unwrap();
    file.write_at(0, pattern(5, 4 * MIB)).await.unwrap();
    assert_eq!(
        writer.kept_bytes(),
        4 * MIB,
        "acknowledged, uncommitted: pinned"
    );
    // The compute node drops its client, and with it the regions it kept pinned; the node
    // itself stays up, so the server reaches it and finds no region.
    drop(file);
    drop(writer);

    stack.crash_and_restart_oss(0).await;

    let reader = stack.client(0, 2).await;
    let file = reader.open("/gone", OpenOptions::default()).await.unwrap();
    let error = file.read_at(0, 4 * MIB).await.unwrap_err().to_string();
    println!("{error}");
    assert!(error.contains("lost"), "the loss is reported: {error}");
    // Not once: the storage server marked the bytes no replay brought back, so every reader,
    // now and later, is told, until the file is written again.
    let again = file.read_at(0, 4 * MIB).await.unwrap_err().to_string();
    assert!(again.contains("lost"), "still reported: {again}");
    let other = stack.client(0, 3).await;
    let other_file = other.open("/gone", OpenOptions::default()).await.unwrap();
    let error = other_file
        .read_at(0, 4 * MIB)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("lost"),
        "another reader is told too: {error}"
    );
    // Written again, the file is served again.
    file.write_at(0, pattern(6, 4 * MIB)).await.unwrap();
    let back = file.read_at(0, 4 * MIB).await.unwrap();
    assert!(back == pattern(6, 4 * MIB), "the rewrite reads back");
    drop(writer_node);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loss_the_fyods_pinger_finds_fails_the_files_next_fsync() {
    // The fyod's pinger replays what it kept as soon as a restarted server answers, with no
    // call of anyone's waiting: a write it finds lost there was reported to nobody, and an
    // application's fsync of the file then said all was well.
    let mut stack = Stack::start(options(FileSystem::Pfs)).await;
    let (writer, writer_node) = stack.client_with_node(0, 1).await;
    let file = writer.open("/gone", create(FileSystem::Pfs)).await.unwrap();
    file.write_at(0, pattern(5, 4 * MIB)).await.unwrap();
    // The writer lets go of the pinned pieces; its node stays up, so the replay finds none.
    drop(file);
    drop(writer);

    stack.crash_and_restart_oss(0).await;
    // Nobody calls: the fyod's pinger (every second) meets the restart first.
    tokio::time::sleep(std::time::Duration::from_secs(3)).await;
    let other = stack.client(0, 2).await;
    let file = other.open("/gone", OpenOptions::default()).await.unwrap();
    let error = file.fsync().await.unwrap_err().to_string();
    println!("{error}");
    assert!(
        error.contains("acknowledged writes to object") && error.contains("were lost"),
        "the fsync says the file lost acknowledged writes: {error}"
    );
    // Once per handle, as Linux reports a write-back error: the next fsync succeeds.
    file.fsync().await.unwrap();
    drop(writer_node);
}
