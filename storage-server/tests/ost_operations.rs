//! An OST's operations, its replies and its answers to bad input.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

mod common;

use bytes::Bytes;
use common::{block, config, open};
use iopath_storage_server::ost::{Oss, OssConfig};
use iopath_storage_server::{ObjectId, StorageError, Transno};

#[tokio::test]
async fn objects_round_trip_and_every_reply_carries_transno_and_last_committed() {
    let dir = tempfile::tempdir().unwrap();
    let ost = open(config(dir.path(), true)).await;
    assert!(ost.recovery().formatted);
    let created = ost.create(ObjectId(7)).await.unwrap();
    assert_eq!(created.transno, Some(Transno(1)));
    assert_eq!(
        created.last_committed,
        Transno(1),
        "create is committed before its reply"
    );

    let data = block(1, 8192);
    let written = ost.write(ObjectId(7), 4096, data.clone()).await.unwrap();
    assert_eq!(written.transno, Some(Transno(2)));
    assert_eq!(
        written.last_committed,
        Transno(2),
        "sync mode: committed before the reply"
    );

    // An unaligned write goes through the page cache and an fdatasync.
    let tail = Bytes::from_static(b"unaligned tail");
    ost.write(ObjectId(7), 12288 + 5, tail.clone())
        .await
        .unwrap();

    let attr = ost.getattr(ObjectId(7)).await.unwrap();
    assert_eq!(attr.value.size_bytes, 12288 + 5 + tail.len() as u64);
    assert_eq!(attr.transno, None);
    let read = ost.read(ObjectId(7), 4096, 8192).await.unwrap();
    assert_eq!(read.value, data);
    assert_eq!(read.last_committed, Transno(3));
    let hole = ost.read(ObjectId(7), 0, 4096).await.unwrap();
    assert!(hole.value.iter().all(|&b| b == 0));
    let past_end = ost.read(ObjectId(7), 1 << 19, 100).await.unwrap();
    assert!(past_end.value.is_empty());

    let punched = ost.punch(ObjectId(7), 5000).await.unwrap();
    assert_eq!(punched.transno, Some(Transno(4)));
    assert_eq!(
        ost.getattr(ObjectId(7)).await.unwrap().value.size_bytes,
        5000
    );
    assert_eq!(
        ost.read(ObjectId(7), 4096, 8192).await.unwrap().value,
        data.slice(..904)
    );
    ost.punch(ObjectId(7), 20000).await.unwrap();
    assert_eq!(
        ost.read(ObjectId(7), 19990, 100).await.unwrap().value,
        Bytes::from(vec![0u8; 10])
    );

    let destroyed = ost.destroy(ObjectId(7)).await.unwrap();
    assert_eq!(destroyed.transno, Some(Transno(6)));
    assert!(matches!(
        ost.getattr(ObjectId(7)).await,
        Err(StorageError::NoSuchObject { .. })
    ));
    assert!(
        !dir.path()
            .join("ost0/O")
            .join(ObjectId(7).file_name())
            .exists()
    );
    assert_eq!(ost.stats().objects, 0);
}

#[tokio::test]
async fn bad_input_gets_a_clear_error_and_leaves_data_intact() {
    let dir = tempfile::tempdir().unwrap();
    let ost = open(config(dir.path(), false)).await;
    ost.create(ObjectId(1)).await.unwrap();
    let data = block(9, 4096);
    ost.write(ObjectId(1), 0, data.clone()).await.unwrap();
    let max = ost.config().object_size_max_bytes;

    let cases: Vec<(StorageError, &str)> = vec![
        (
            ost.write(ObjectId(2), 0, data.clone()).await.unwrap_err(),
            "OST0000: no such object 0x2",
        ),
        (
            ost.read(ObjectId(2), 0, 10).await.unwrap_err(),
            "OST0000: no such object 0x2",
        ),
        (
            ost.getattr(ObjectId(2)).await.unwrap_err(),
            "OST0000: no such object 0x2",
        ),
        (
            ost.punch(ObjectId(2), 0).await.unwrap_err(),
            "OST0000: no such object 0x2",
        ),
        (
            ost.destroy(ObjectId(2)).await.unwrap_err(),
            "OST0000: no such object 0x2",
        ),
        (
            ost.create(ObjectId(1)).await.unwrap_err(),
            "OST0000: object 0x1 already exists",
        ),
        (
            ost.write(ObjectId(1), max - 100, data.clone())
                .await
                .unwrap_err(),
            "OST0000: object 0x1 would end at 1052572 bytes, past the maximum object size of 1048576 bytes",
        ),
        (
            ost.write(ObjectId(1), u64::MAX - 10, data.clone())
                .await
                .unwrap_err(),
            "OST0000: object 0x1 would end at 18446744073709551615 bytes, past the maximum object size of 1048576 bytes",
        ),
        (
            ost.punch(ObjectId(1), max + 1).await.unwrap_err(),
            "OST0000: object 0x1 would end at 1048577 bytes, past the maximum object size of 1048576 bytes",
        ),
        (
            ost.write(ObjectId(1), 0, Bytes::new()).await.unwrap_err(),
            "OST0000: empty write to object 0x1",
        ),
        (
            ost.write(ObjectId(1), 0, Bytes::from(vec![0u8; (256 << 10) + 1]))
                .await
                .unwrap_err(),
            "OST0000: request of 262145 bytes exceeds the limit of 262144 bytes",
        ),
        (
            ost.read(ObjectId(1), 0, 1 << 30).await.unwrap_err(),
            "OST0000: request of 1073741824 bytes exceeds the limit of 262144 bytes",
        ),
    ];
    for (error, message) in cases {
        assert_eq!(error.to_string(), message);
    }
    for id in 2..=16 {
        ost.create(ObjectId(id)).await.unwrap();
    }
    let full = ost.create(ObjectId(100)).await.unwrap_err();
    assert_eq!(full.to_string(), "OST0000: object table full (16 objects)");

    // Nothing above touched the stored bytes or the target.
    assert_eq!(ost.read(ObjectId(1), 0, 4096).await.unwrap().value, data);
    assert_eq!(
        ost.getattr(ObjectId(1)).await.unwrap().value.size_bytes,
        4096
    );
    assert_eq!(ost.stopped(), None);
    ost.shutdown().await.unwrap();
    let reopened = open(config(dir.path(), false)).await;
    assert_eq!(
        reopened.read(ObjectId(1), 0, 4096).await.unwrap().value,
        data
    );
}

#[tokio::test]
async fn sync_mode_groups_concurrent_writers_into_shared_commits() {
    let dir = tempfile::tempdir().unwrap();
    let ost = std::sync::Arc::new(open(config(dir.path(), true)).await);
    for object in 0..8 {
        ost.create(ObjectId(object)).await.unwrap();
    }
    let before = ost.stats().journal.commits;
    let mut writers = tokio::task::JoinSet::new();
    for object in 0..8u64 {
        let ost = ost.clone();
        writers.spawn(async move {
            for i in 0..8u64 {
                let reply = ost
                    .write(ObjectId(object), i * 4096, block(i as u8, 4096))
                    .await
                    .unwrap();
                let transno = reply.transno.unwrap();
                assert!(
                    reply.last_committed >= transno,
                    "sync: {transno} answered at {}",
                    reply.last_committed
                );
            }
        });
    }
    while let Some(joined) = writers.join_next().await {
        joined.unwrap();
    }
    let stats = ost.stats();
    assert_eq!(stats.journal.records_committed, 8 + 64);
    // Each commit holds every record that arrived while the previous one ran.
    assert!(stats.journal.commits - before <= 64, "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_creates_each_commit_and_a_duplicate_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ost = std::sync::Arc::new(open(config(dir.path(), false)).await);
    let mut creates = tokio::task::JoinSet::new();
    // Objects 0..12 once each, and object 5 three more times, all at once (the test
    // config holds at most 16 objects).
    for object in (0..12u64).chain([5, 5, 5]) {
        let ost = ost.clone();
        creates.spawn(async move { (object, ost.create(ObjectId(object)).await) });
    }
    let mut created = Vec::new();
    let mut refused = 0;
    while let Some(joined) = creates.join_next().await {
        match joined.unwrap() {
            (object, Ok(reply)) => {
                let transno = reply.transno.unwrap();
                assert!(
                    reply.last_committed >= transno,
                    "create committed before its reply"
                );
                created.push(object);
            }
            (5, Err(StorageError::ObjectExists { .. })) => refused += 1,
            (object, Err(e)) => panic!("create {object}: {e}"),
        }
    }
    created.sort_unstable();
    assert_eq!(created, (0..12).collect::<Vec<_>>());
    assert_eq!(refused, 3, "object 5 is created once");
    ost.shutdown().await.unwrap();
    drop(ost);
    let reopened = open(config(dir.path(), false)).await;
    for object in 0..12 {
        assert_eq!(
            reopened
                .getattr(ObjectId(object))
                .await
                .unwrap()
                .value
                .size_bytes,
            0
        );
    }
}

#[tokio::test]
async fn the_mode_switches_at_runtime() {
    let dir = tempfile::tempdir().unwrap();
    let ost = open(config(dir.path(), false)).await;
    assert!(!ost.sync_journal());
    ost.create(ObjectId(1)).await.unwrap();
    let reply = ost.write(ObjectId(1), 0, block(1, 4096)).await.unwrap();
    assert!(
        reply.last_committed < reply.transno.unwrap(),
        "async: answered before its commit"
    );

    ost.set_sync_journal(true);
    assert!(ost.sync_journal());
    let reply = ost.write(ObjectId(1), 4096, block(2, 4096)).await.unwrap();
    assert!(
        reply.last_committed >= reply.transno.unwrap(),
        "sync: answered after its commit"
    );

    ost.set_sync_journal(false);
    let reply = ost.write(ObjectId(1), 8192, block(3, 4096)).await.unwrap();
    assert!(reply.last_committed < reply.transno.unwrap());
    let synced = ost.sync().await.unwrap();
    assert_eq!(synced.last_committed, reply.transno.unwrap());
}

#[tokio::test]
async fn a_server_hosts_several_targets_by_index() {
    let dir = tempfile::tempdir().unwrap();
    let oss = Oss::open(OssConfig {
        root: dir.path().to_path_buf(),
        targets: OssConfig::indices(3),
        template: config(dir.path(), false),
        engine: Default::default(),
        disk_model: None,
        external_journal_dir: Some(dir.path().join("journals")),
        fsname: Default::default(),
    })
    .await;
    // The external journal directory must exist first.
    assert!(oss.is_err());
    std::fs::create_dir(dir.path().join("journals")).unwrap();
    let oss = Oss::open(OssConfig {
        root: dir.path().to_path_buf(),
        targets: OssConfig::indices(3),
        template: config(dir.path(), false),
        engine: Default::default(),
        disk_model: None,
        external_journal_dir: Some(dir.path().join("journals")),
        fsname: Default::default(),
    })
    .await
    .unwrap();
    for target in oss.targets() {
        target
            .create(ObjectId(u64::from(target.index())))
            .await
            .unwrap();
    }
    assert_eq!(
        oss.target(2)
            .unwrap()
            .getattr(ObjectId(2))
            .await
            .unwrap()
            .value
            .size_bytes,
        0
    );
    assert!(
        oss.target(1).unwrap().getattr(ObjectId(2)).await.is_err(),
        "targets are separate"
    );
    assert_eq!(
        oss.target(3).unwrap_err().to_string(),
        "no OST with index 3 on this server (3 targets)"
    );
    oss.set_sync_journal(true);
    assert!(oss.targets().iter().all(|t| t.sync_journal()));
    assert!(dir.path().join("journals/ost1.journal").exists());
    oss.shutdown().await.unwrap();
    assert!(matches!(
        oss.target(0).unwrap().create(ObjectId(9)).await,
        Err(StorageError::TargetStopped { .. })
    ));
}

/// A server hosts the targets the file system numbers for it, under their file-system
/// indices (one name everywhere, as Lustre's `OST0003`): not 0, 1, ... of its own.
#[tokio::test]
async fn a_server_answers_to_its_targets_file_system_indices() {
    let dir = tempfile::tempdir().unwrap();
    let open = |targets: Vec<u32>| {
        Oss::open(OssConfig {
            root: dir.path().to_path_buf(),
            targets,
            template: config(dir.path(), false),
            engine: Default::default(),
            disk_model: None,
            external_journal_dir: None,
            fsname: Default::default(),
        })
    };
    assert!(open(vec![]).await.is_err(), "a server hosts a target");
    assert!(open(vec![3, 3]).await.is_err(), "each index once");
    assert!(
        open(vec![0x1_0000]).await.is_err(),
        "an index a target's name (OSTffff at most) can carry"
    );
    let oss = open(vec![3, 1]).await.unwrap();
    assert_eq!(oss.indices(), [1, 3]);
    assert!(dir.path().join("ost1").is_dir() && dir.path().join("ost3").is_dir());
    oss.target(3).unwrap().create(ObjectId(9)).await.unwrap();
    let error = oss.target(0).unwrap_err().to_string();
    assert_eq!(error, "no OST with index 0 on this server (2 targets)");
    let error = oss
        .target(1)
        .unwrap()
        .getattr(ObjectId(9))
        .await
        .unwrap_err()
        .to_string();
    assert_eq!(
        error, "OST0001: no such object 0x9",
        "named by its one index"
    );
}

/// `obdfilter.*.stats` and `brw_stats` count what the target did: bytes per write and read,
/// requests, and histograms of bulk pages and disk I/O sizes that add up to the bytes moved.
#[tokio::test]
async fn stats_and_brw_stats_count_what_the_target_did() {
    use iopath_storage_server::ost::counters::{self, Op, Rw};
    let dir = tempfile::tempdir().unwrap();
    let ost = open(config(dir.path(), false)).await;
    ost.create(ObjectId(1)).await.unwrap();
    for k in 0..3 {
        ost.write(ObjectId(1), k * (256 << 10), block(2, 256 << 10))
            .await
            .unwrap();
    }
    ost.write(ObjectId(1), 768 << 10, block(3, 4096))
        .await
        .unwrap();
    let read = ost.read(ObjectId(1), 0, 64 << 10).await.unwrap();
    assert_eq!(read.value.len(), 64 << 10);
    ost.getattr(ObjectId(1)).await.unwrap();
    ost.sync().await.unwrap();
    ost.statfs().await.unwrap();

    let c = ost.counters();
    let writes = c.counter(Op::WriteBytes);
    assert_eq!(writes.samples, 4);
    assert_eq!((writes.min, writes.max), (4096, 256 << 10));
    assert_eq!(writes.sum, 3 * (256 << 10) + 4096);
    assert_eq!(c.counter(Op::ReadBytes).sum, 64 << 10);
    assert_eq!(c.counter(Op::Write).samples, 4, "a latency per write");
    for op in [Op::Create, Op::Getattr, Op::Sync, Op::Statfs] {
        assert_eq!(c.counter(op).samples, 1, "{op:?}");
    }
    assert_eq!(c.counter(Op::Destroy).samples, 0);
    // The histograms add up to the bytes moved.
    let bytes = |h: &counters::Histogram, unit: u64| -> u64 {
        h.buckets
            .iter()
            .enumerate()
            .map(|(i, n)| n * (unit << i))
            .sum()
    };
    let w = Rw::Write as usize;
    assert_eq!(bytes(&c.brw.io_size[w], 1), writes.sum);
    assert_eq!(bytes(&c.brw.pages_per_bulk[w], 4096), writes.sum);
    assert_eq!(c.brw.io_time_ms[w].total(), 4);
    assert_eq!(c.brw.in_flight[w].total(), 4);
    assert_eq!(bytes(&c.brw.io_size[Rw::Read as usize], 1), 64 << 10);

    let stats = counters::stats_text(&c, std::time::SystemTime::now());
    assert!(
        stats.contains("write_bytes               4 samples [bytes] 4096 262144 790528 "),
        "{stats}"
    );
    assert!(
        stats.contains("statfs                    1 samples [reqs]\n"),
        "{stats}"
    );
    assert!(
        !stats.contains("destroy"),
        "a counter with no samples is left out: {stats}"
    );
    let brw = counters::brw_stats_text(&c, std::time::SystemTime::now());
    assert!(
        brw.contains("64:\t\t         0   0 100   |    3  75 100\n"),
        "{brw}"
    );
    ost.clear_counters();
    assert_eq!(ost.counters().counter(Op::WriteBytes).samples, 0);
    // What /metrics exports only grows: a clear does not reach it.
    assert_eq!(ost.counters_since_start().counter(Op::WriteBytes), writes);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_destroys_each_commit_and_a_second_destroy_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let ost = std::sync::Arc::new(open(config(dir.path(), false)).await);
    for object in 0..12u64 {
        ost.create(ObjectId(object)).await.unwrap();
        ost.write(ObjectId(object), 0, block(object as u8, 4096))
            .await
            .unwrap();
    }
    // Every object at once, and object 5 three more times.
    let mut destroys = tokio::task::JoinSet::new();
    for object in (0..12u64).chain([5, 5, 5]) {
        let ost = ost.clone();
        destroys.spawn(async move { (object, ost.destroy(ObjectId(object)).await) });
    }
    let (mut destroyed, mut refused) = (Vec::new(), 0);
    while let Some(joined) = destroys.join_next().await {
        match joined.unwrap() {
            (object, Ok(reply)) => {
                assert!(
                    reply.last_committed >= reply.transno.unwrap(),
                    "destroy committed before its reply"
                );
                destroyed.push(object);
            }
            (5, Err(StorageError::NoSuchObject { .. })) => refused += 1,
            (object, Err(e)) => panic!("destroy {object}: {e}"),
        }
    }
    destroyed.sort_unstable();
    assert_eq!(destroyed, (0..12).collect::<Vec<_>>());
    assert_eq!(refused, 3, "object 5 is destroyed once");
    let objects_dir = dir.path().join("ost0").join("O");
    assert_eq!(std::fs::read_dir(&objects_dir).unwrap().count(), 0);
    // An id can be used again once its destroy has answered.
    ost.create(ObjectId(5)).await.unwrap();
    ost.shutdown().await.unwrap();
    drop(ost);
    let reopened = open(config(dir.path(), false)).await;
    assert_eq!(
        reopened
            .getattr(ObjectId(5))
            .await
            .unwrap()
            .value
            .size_bytes,
        0
    );
    assert!(matches!(
        reopened.getattr(ObjectId(4)).await,
        Err(StorageError::NoSuchObject { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_target_holding_two_files_open_serves_every_object() {
    let dir = tempfile::tempdir().unwrap();
    let mut small = config(dir.path(), false);
    small.open_objects_max = 2;
    let ost = std::sync::Arc::new(open(small.clone()).await);
    let objects = 10u64;
    for object in 0..objects {
        ost.create(ObjectId(object)).await.unwrap();
    }
    // Four rounds of writes to every object at once: each round reopens files the cache
    // closed in the one before.
    for round in 0..4u64 {
        let mut writes = tokio::task::JoinSet::new();
        for object in 0..objects {
            let ost = ost.clone();
            writes.spawn(async move {
                let seed = (object * 4 + round) as u8;
                ost.write(ObjectId(object), round * 4096, block(seed, 4096))
                    .await
            });
        }
        while let Some(joined) = writes.join_next().await {
            joined.unwrap().unwrap();
        }
    }
    ost.punch(ObjectId(3), 2 * 4096).await.unwrap();
    let check = |ost: std::sync::Arc<iopath_storage_server::ost::Ost>| async move {
        for object in 0..objects {
            let rounds = if object == 3 { 2 } else { 4 };
            let read = ost.read(ObjectId(object), 0, 4 * 4096).await.unwrap().value;
            assert_eq!(read.len() as u64, rounds * 4096, "object {object}");
            for round in 0..rounds {
                let at = (round * 4096) as usize;
                assert_eq!(
                    &read[at..at + 4096],
                    &block((object * 4 + round) as u8, 4096)[..],
                    "object {object}, round {round}"
                );
            }
        }
    };
    check(ost.clone()).await;
    ost.shutdown().await.unwrap();
    drop(ost);
    check(std::sync::Arc::new(open(small).await)).await;
}

/// Descriptors this process holds on files under `dir`.
fn descriptors_under(dir: &std::path::Path) -> usize {
    std::fs::read_dir("/proc/self/fd")
        .unwrap()
        .filter_map(|entry| std::fs::read_link(entry.ok()?.path()).ok())
        .filter(|target| target.starts_with(dir))
        .count()
}

/// Reads of more objects at once than a target may hold open wait for a place, rather than
/// each opening its file (18,688 tasks reading from 672 targets ran out of descriptors so).
/// Nothing holds a written file until its commit either: 32 O_DIRECT writes under a limit of
/// two files, with their commit an hour away, leave two files open, and the commit opens each
/// again to fdatasync it.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_of_many_objects_at_once_hold_no_more_files_open_than_the_limit() {
    use iopath_storage_server::engine::modeled::{DiskModel, ModeledEngine};
    use iopath_storage_server::ost::{Ost, OstEngines};
    use std::sync::Arc;
    const OBJECTS: u64 = 32;
    const LIMIT: usize = 2;
    const SIZE: usize = 64 << 10;
    // A slow disk, so that the reads are under way together: 32 × 64 KiB at 8 MiB/s, 250 ms.
    let model = DiskModel {
        bandwidth_mib_s: 8.0,
        seek_ms: 0.0,
        commit_ms: 0.0,
    };
    let engine = Arc::new(ModeledEngine::new(common::psync(), model).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let mut small = config(dir.path(), false);
    small.open_objects_max = LIMIT;
    small.objects_max = OBJECTS as usize;
    let ost = Arc::new(Ost::open(small, OstEngines::shared(engine)).await.unwrap());
    let objects_dir = dir.path().join("ost0/O");
    let mut writes = tokio::task::JoinSet::new();
    for object in 0..OBJECTS {
        let ost = Arc::clone(&ost);
        writes.spawn(async move {
            ost.create(ObjectId(object)).await?;
            ost.write(ObjectId(object), 0, block(object as u8, SIZE))
                .await
        });
    }
    while let Some(joined) = writes.join_next().await {
        joined.unwrap().unwrap();
    }
    let waiting_for_their_commit = descriptors_under(&objects_dir);
    assert!(
        waiting_for_their_commit <= 2 * LIMIT,
        "{waiting_for_their_commit} descriptors open on object files before the commit, over {}",
        2 * LIMIT
    );
    ost.sync().await.unwrap();

    let mut reads = tokio::task::JoinSet::new();
    for object in 0..OBJECTS {
        let ost = Arc::clone(&ost);
        reads.spawn(async move {
            let read = ost.read(ObjectId(object), 0, SIZE as u64).await?;
            Ok::<_, StorageError>((object, read.value))
        });
    }
    // Watch the descriptors until every read is done (bounded: the reads take 250 ms).
    let (mut most, mut samples) = (0, 0);
    while !reads.is_empty() && samples < 2_000 {
        most = most.max(descriptors_under(&objects_dir));
        samples += 1;
        while let Some(joined) = reads.try_join_next() {
            let (object, value) = joined.unwrap().unwrap();
            assert_eq!(value, block(object as u8, SIZE), "object {object}");
        }
        tokio::time::sleep(std::time::Duration::from_millis(2)).await;
    }
    assert!(reads.is_empty(), "the reads did not end");
    assert!(most > 0, "no read was seen under way ({samples} samples)");
    // Two descriptors a file (buffered and O_DIRECT).
    assert!(
        most <= 2 * LIMIT,
        "{most} descriptors open on object files, over {} for {LIMIT} files",
        2 * LIMIT
    );
}

#[tokio::test(start_paused = true)]
async fn a_create_of_an_object_still_being_created_waits_for_that_create() {
    use iopath_storage_server::engine::modeled::{DiskModel, ModeledEngine};
    use iopath_storage_server::ost::{Ost, OstEngines};
    use std::sync::Arc;
    use std::time::Duration;
    // Every commit costs a modeled second: a create (committed before its reply) is slow.
    let model = DiskModel {
        bandwidth_mib_s: 1000.0,
        seek_ms: 0.0,
        commit_ms: 1000.0,
    };
    let engine = Arc::new(ModeledEngine::new(common::psync(), model).unwrap());
    let dir = tempfile::tempdir().unwrap();
    let ost = Arc::new(
        Ost::open(config(dir.path(), false), OstEngines::shared(engine))
            .await
            .unwrap(),
    );
    let first = {
        let ost = Arc::clone(&ost);
        tokio::spawn(async move { ost.create(ObjectId(7)).await })
    };
    // The same create sent again (its first reply was late), while the first still runs.
    tokio::time::sleep(Duration::from_millis(100)).await;
    assert!(!first.is_finished(), "the first create is still committing");
    let again = ost.create(ObjectId(7)).await;
    assert!(
        first.is_finished(),
        "the second create answered ({again:?}) while the first was still under way"
    );
    assert!(
        matches!(again, Err(StorageError::ObjectExists { .. })),
        "{again:?}"
    );
    first.await.unwrap().unwrap();
    assert_eq!(ost.getattr(ObjectId(7)).await.unwrap().value.size_bytes, 0);
}
