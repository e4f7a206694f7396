//! Files written and read back through a fyod, in PFS and UFS mode: sizes from 0 bytes up,
//! stripe counts 1, 2 and all, stripe sizes 64 KiB to 4 MiB, unaligned offsets, holes and
//! reads past the end — and what each mode does with the data on the way.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use bytes::Bytes;
use common::{KIB, MIB, Options, Stack, pattern};
use iopath_forwarder::{CallKind, FileSystem, IoMode, OpenOptions};
use iopath_mds::StripeRequest;

fn stripe(size: u64, count: i64) -> Option<StripeRequest> {
    Some(StripeRequest {
        stripe_size_bytes: size,
        stripe_count: count,
        stripe_offset: -1,
    })
}

fn create(stripe: Option<StripeRequest>, call: CallKind, io_mode: IoMode) -> OpenOptions {
    OpenOptions {
        create: true,
        stripe,
        call,
        io_mode,
        ..OpenOptions::default()
    }
}

/// Writes `data` at `offset` of a fresh file, reads back the file in one call and in pieces,
/// and checks the bytes, the hole before `offset`, the size, and a read past the end.
async fn round_trip(
    client: &iopath_forwarder::FyodClient,
    path: &str,
    options: OpenOptions,
    offset: u64,
    data: Bytes,
) {
    let file = client.open(path, options).await.unwrap();
    assert_eq!(
        file.write_at(offset, data.clone()).await.unwrap(),
        data.len() as u64
    );
    let end = offset + data.len() as u64;
    let size = if data.is_empty() { 0 } else { end };
    assert_eq!(file.size().await.unwrap(), size, "{path}: size");
    let all = file.read_at(0, end + 1000).await.unwrap();
    assert_eq!(
        all.len() as u64,
        size,
        "{path}: a read past the end is short"
    );
    if !data.is_empty() {
        assert!(
            all[..offset as usize].iter().all(|&b| b == 0),
            "{path}: the hole reads as zeros"
        );
        assert_eq!(&all[offset as usize..], &data[..], "{path}: the bytes");
    }
    // The same bytes through another open, in unaligned pieces.
    file.close().await.unwrap();
    let again = client
        .open(
            path,
            OpenOptions {
                call: options.call,
                ..OpenOptions::default()
            },
        )
        .await
        .unwrap();
    let piece = 300 * KIB + 7;
    let mut at = offset;
    while at < end {
        let got = again.read_at(at, piece).await.unwrap();
        let want = (end - at).min(piece);
        assert_eq!(
            got.len() as u64,
            want,
            "{path}: piece at {at} of a file ending at {end}"
        );
        assert_eq!(
            &got[..],
            &data[(at - offset) as usize..(at - offset + want) as usize]
        );
        at += want;
    }
    assert!(
        again.read_at(end + 5 * MIB, 100).await.unwrap().is_empty(),
        "past the end: nothing"
    );
    again.fsync().await.unwrap();
    again.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pfs_round_trips_across_layouts_and_the_fyod_never_touches_the_data() {
    let stack = Stack::start(Options {
        oss_count: 2,
        targets_per_oss: 2,
        ..Options::default()
    })
    .await;
    let client = stack.client(0, 1).await;
    let cases: [(u64, i64, u64, u64); 8] = [
        (MIB, 1, 0, 0),
        (MIB, 1, 0, 3 * MIB),
        (64 * KIB, 2, 4095, 5 * MIB + 17),
        (64 * KIB, -1, 100 * KIB, 2 * MIB),
        (128 * KIB, 2, 7, 1),
        (MIB, -1, 3 * MIB + 5, 9 * MIB),
        (4 * MIB, 2, 2 * MIB, 11 * MIB),
        (4 * MIB, -1, 0, 17 * MIB + 3),
    ];
    for (i, (size, count, offset, len)) in cases.into_iter().enumerate() {
        for call in [CallKind::Sync, CallKind::Async] {
            let path = format!("/f{i}-{call}");
            round_trip(
                &client,
                &path,
                create(stripe(size, count), call, IoMode::Munix),
                offset,
                pattern(i as u64, len),
            )
            .await;
        }
    }
    let stats = stack.fyods[0].stats();
    assert_eq!(stats.file_system, FileSystem::Pfs);
    assert_eq!(
        stats.bytes_through_fyod, 0,
        "PFS: the fyod moved no data itself"
    );
    assert_eq!(
        stack.fyod_nodes[0]
            .counters()
            .bulk_get_bytes
            .load(std::sync::atomic::Ordering::Relaxed)
            + stack.fyod_nodes[0]
                .counters()
                .bulk_put_bytes
                .load(std::sync::atomic::Ordering::Relaxed),
        0,
        "PFS: no bulk transfer involved the fyod's node"
    );
    assert!(stats.ost_requests > 0);
    assert_eq!(client.kept_bytes(), 0, "fsync committed everything pinned");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ufs_round_trips_through_the_fyods_own_bounded_buffers() {
    let stack = Stack::start(Options {
        mode: FileSystem::Ufs,
        ..Options::default()
    })
    .await;
    let client = stack.client(0, 1).await;
    let cases: [(u64, u64); 6] = [
        (0, 0),
        (0, 128 * KIB),
        (5, 1),
        (100 * KIB, 3 * MIB + 11),
        (128 * KIB, 256 * KIB),
        (7 * MIB + 3, 2 * MIB),
    ];
    for (i, (offset, len)) in cases.into_iter().enumerate() {
        round_trip(
            &client,
            &format!("/u{i}"),
            create(stripe(0, 1), CallKind::Sync, IoMode::Masync),
            offset,
            pattern(100 + i as u64, len),
        )
        .await;
    }
    let stats = stack.fyods[0].stats();
    assert_eq!(stats.file_system, FileSystem::Ufs);
    assert!(
        stats.bytes_through_fyod > 0,
        "UFS: the fyod pulled and pushed the data"
    );
    assert!(stats.ufs_buffers_in_use_peak >= 1);
    assert!(
        stats.ufs_buffers_in_use_peak <= stats.ufs_buffers_max,
        "the pool bounds the buffers"
    );
    assert_eq!(client.kept_bytes(), 0, "UFS: the client pins nothing");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ufs_small_writes_are_held_back_reread_from_cache_and_reach_storage() {
    let stack = Stack::start(Options {
        mode: FileSystem::Ufs,
        ..Options::default()
    })
    .await;
    let client = stack.client(0, 1).await;
    let options = create(None, CallKind::Sync, IoMode::Masync);
    let file = client.open("/small", options).await.unwrap();
    // 64 records of 1000 bytes: unaligned, smaller than a block.
    let mut expected = Vec::new();
    for record in 0..64u64 {
        let data = pattern(record, 1000);
        file.write_at(record * 1000, data.clone()).await.unwrap();
        expected.extend_from_slice(&data);
    }
    let stats = stack.fyods[0].stats();
    assert!(stats.ufs_writes_absorbed > 0, "small writes were held back");
    let misses_before = stats.ufs_cache_misses;
    // Read back while some bytes are still held back: the newest bytes, from the cache.
    let got = file.read_at(0, 64_000).await.unwrap();
    assert_eq!(&got[..], &expected[..]);
    let got = file.read_at(500, 1000).await.unwrap();
    assert_eq!(&got[..], &expected[500..1500]);
    let stats = stack.fyods[0].stats();
    assert!(stats.ufs_cache_hits > 0, "rereads hit the cache");
    assert!(stats.ufs_cache_misses >= misses_before);
    // Close flushes; a fresh open (which drops the fyod's cache) reads storage.
    file.close().await.unwrap();
    let file = client.open("/small", OpenOptions::default()).await.unwrap();
    assert_eq!(file.size().await.unwrap(), 64_000);
    assert_eq!(&file.read_at(0, 70_000).await.unwrap()[..], &expected[..]);
    assert!(stack.fyods[0].stats().ufs_flushes > 0);
    file.close().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pfs_writes_stay_pinned_until_commit_and_a_bound_asks_for_commits() {
    let stack = Stack::start(Options {
        commit_interval_ms: 3_600_000, // commits only when asked
        ..Options::default()
    })
    .await;
    let client = stack.client(0, 1).await;
    let file = client
        .open(
            "/pinned",
            create(stripe(MIB, -1), CallKind::Sync, IoMode::Masync),
        )
        .await
        .unwrap();
    file.write_at(0, pattern(1, 3 * MIB)).await.unwrap();
    assert_eq!(
        client.kept_bytes(),
        3 * MIB,
        "the region is kept for replay"
    );
    file.fsync().await.unwrap();
    assert_eq!(client.kept_bytes(), 0, "committed: released");
    // A bound on pinned memory makes the client ask for commits itself.
    client.set_pinned_bytes_max(2 * MIB);
    file.write_at(0, pattern(2, MIB)).await.unwrap();
    file.write_at(MIB, pattern(3, MIB)).await.unwrap();
    assert_eq!(client.kept_bytes(), 2 * MIB);
    file.write_at(2 * MIB, pattern(4, MIB)).await.unwrap();
    assert_eq!(
        client.kept_bytes(),
        MIB,
        "the earlier writes were committed first"
    );
    file.close().await.unwrap();
}
