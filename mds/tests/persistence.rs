//! Durability: every acknowledged change survives a crash (the store dropped without any
//! clean shutdown, then reopened); a torn last record is cut off at every possible length;
//! damage before the end of the log, or in the snapshot, is refused with the offset and
//! reason, and the files are left as they were; snapshots keep replay short.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use std::path::Path;

use iopath_mds::namespace::NamespaceState;
use iopath_mds::namespace::op::Mutation;
use iopath_mds::store::{LOG_FILE, SNAPSHOT_FILE, log, snapshot};
use iopath_mds::{
    MdsError, MdsLimits, MdsPath, MdsStore, NamespaceConfig, Op, Owner, StripeRequest,
};

fn config(snapshot_every_records: u64) -> NamespaceConfig {
    let mut config = NamespaceConfig::new(vec![0, 1, 2, 3]);
    config.limits = MdsLimits {
        snapshot_every_records,
        ..MdsLimits::default()
    };
    config
}

fn p(text: &str) -> MdsPath {
    MdsPath::parse(text).unwrap()
}

/// A mixed workload of `n` operations: directories, files with several layouts, renames
/// (replacing files too), unlinks, rmdirs, setstripes, and a few that fail.
fn workload(n: usize) -> Vec<Op> {
    let mut ops = vec![
        Op::Mkdir {
            path: p("/d"),
            mode: 0o755,
            owner: Owner::UNRECORDED,
        },
        Op::SetStripe {
            path: p("/d"),
            stripe: Some(StripeRequest {
                stripe_size_bytes: 4 << 20,
                stripe_count: 2,
                stripe_offset: -1,
            }),
        },
    ];
    for i in 0.. {
        if ops.len() >= n {
            break;
        }
        let op = match i % 8 {
            0 => Op::Mkdir {
                path: p(&format!("/d/sub{i}")),
                mode: 0o700,
                owner: Owner::UNRECORDED,
            },
            1 => Op::Create {
                path: p(&format!("/d/f{i}")),
                mode: 0o644,
                owner: Owner::UNRECORDED,
                stripe: StripeRequest::INHERIT,
            },
            2 => Op::Create {
                path: p(&format!("/g{i}")),
                mode: 0o600,
                owner: Owner::UNRECORDED,
                stripe: StripeRequest {
                    stripe_size_bytes: 0,
                    stripe_count: -1,
                    stripe_offset: 2,
                },
            },
            3 => Op::Rename {
                source: p(&format!("/d/f{}", i - 2)),
                target: p(&format!("/d/sub{}/moved", i - 3)),
                keep: None,
            },
            4 => Op::Rename {
                source: p(&format!("/g{}", i - 2)),
                target: p("/d/replaced"),
                keep: None,
            },
            5 => Op::Mkdir {
                path: p("/d"),
                mode: 0o755,
                owner: Owner::UNRECORDED,
            }, // fails: exists
            6 => Op::Unlink {
                path: p(&format!("/d/sub{}/moved", i - 6)),
                keep: None,
            },
            _ => Op::Rmdir {
                path: p(&format!("/d/sub{}", i - 7)),
            },
        };
        ops.push(op);
    }
    ops
}

/// Runs `ops`; returns the namespace state after each *successful* change, indexed by its
/// log sequence number (index 0: before any).
fn run(store: &MdsStore, ops: &[Op]) -> Vec<NamespaceState> {
    let mut states = vec![store.read(|ns| ns.state().clone())];
    for (i, op) in ops.iter().enumerate() {
        let seq_before = store.last_seq();
        match store.execute(op, 1_000 + i as u64) {
            Ok(_) => {
                assert_eq!(store.last_seq(), seq_before + 1, "{op:?} logged once");
                states.push(store.read(|ns| ns.state().clone()));
            }
            Err(e) => {
                assert_ne!(e.errno(), iopath_mds::error::errno::EIO, "{op:?}: {e}");
                assert_eq!(
                    store.last_seq(),
                    seq_before,
                    "a refused {op:?} is not logged"
                );
            }
        }
    }
    states
}

fn state(store: &MdsStore) -> NamespaceState {
    store.read(|ns| ns.state().clone())
}

fn corrupt_reason(result: Result<MdsStore, MdsError>) -> (u64, String) {
    match result.unwrap_err() {
        MdsError::LogCorrupt { offset, reason, .. } => (offset, reason),
        other => panic!("expected LogCorrupt, got {other}"),
    }
}

#[test]
fn every_acknowledged_change_survives_a_crash() {
    let dir = tempfile::tempdir().unwrap();
    let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
    assert!(store.recovery().fresh);
    let states = run(&store, &workload(40));
    let changes = states.len() as u64 - 1;
    assert!(changes >= 30, "the workload changes things: {changes}");
    let before = state(&store);
    drop(store); // a crash: no shutdown, nothing flushed beyond what each change fsync'd

    let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
    let recovery = store.recovery().clone();
    assert!(!recovery.fresh);
    assert_eq!(
        (recovery.records_replayed, recovery.torn_tail_bytes),
        (changes, 0)
    );
    assert_eq!(state(&store), before);
    store.read(|ns| ns.check_invariants()).unwrap();
    // The files moved by renames are where the renames put them, with their layouts.
    let replaced = store.read(|ns| ns.open(&p("/d/replaced"))).unwrap();
    assert_eq!(replaced.layout.unwrap().stripe_count(), 4);

    // It carries on from where it was, and a second crash loses nothing either.
    store
        .execute(
            &Op::Mkdir {
                path: p("/after"),
                mode: 0o755,
                owner: Owner::UNRECORDED,
            },
            9,
        )
        .unwrap();
    let before = state(&store);
    drop(store);
    let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
    assert_eq!(state(&store), before);
    assert_eq!(store.last_seq(), changes + 1);
}

#[test]
fn snapshots_keep_replay_short() {
    let dir = tempfile::tempdir().unwrap();
    let store = MdsStore::open(dir.path(), config(8)).unwrap();
    let states = run(&store, &workload(120));
    let changes = states.len() as u64 - 1;
    assert!(
        store
            .counters()
            .snapshots_written
            .load(std::sync::atomic::Ordering::Relaxed)
            >= changes / 8
    );
    let before = state(&store);
    drop(store);

    let store = MdsStore::open(dir.path(), config(8)).unwrap();
    let recovery = store.recovery();
    assert_eq!(recovery.snapshot_seq + recovery.records_replayed, changes);
    assert!(recovery.records_replayed < 8, "{recovery:?}");
    assert!(recovery.log_bytes < 8 * 4096, "{recovery:?}");
    assert_eq!(state(&store), before);
}

#[test]
fn a_torn_last_record_is_cut_off_at_every_length() {
    let source = tempfile::tempdir().unwrap();
    let store = MdsStore::open(source.path(), config(10_000)).unwrap();
    let states = run(&store, &workload(14));
    drop(store);
    let bytes = std::fs::read(source.path().join(LOG_FILE)).unwrap();
    let scan = log::scan(&bytes).unwrap();
    assert_eq!(scan.records.len(), states.len() - 1);
    let ends: Vec<u64> = scan.records.iter().map(|r| r.payload.end as u64).collect();

    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join(LOG_FILE);
    let mut cuts_checked = 0;
    // Every length from an empty log to the whole of it.
    for cut in log::HEADER_LEN..=bytes.len() {
        std::fs::write(&log_path, &bytes[..cut]).unwrap();
        let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
        let whole = ends.iter().filter(|&&end| end <= cut as u64).count();
        let boundary = if whole == 0 {
            log::HEADER_LEN as u64
        } else {
            ends[whole - 1]
        };
        assert_eq!(state(&store), states[whole], "cut at {cut}");
        assert_eq!(
            store.recovery().records_replayed,
            whole as u64,
            "cut at {cut}"
        );
        assert_eq!(
            store.recovery().torn_tail_bytes,
            cut as u64 - boundary,
            "cut at {cut}"
        );
        // The cut was made durable, and appending after it gives a log that replays.
        if cut % 13 == 0 || cut == bytes.len() {
            store
                .execute(
                    &Op::Mkdir {
                        path: p("/after-crash"),
                        mode: 0o755,
                        owner: Owner::UNRECORDED,
                    },
                    7,
                )
                .unwrap();
            let expected = state(&store);
            drop(store);
            let reopened = MdsStore::open(dir.path(), config(10_000)).unwrap();
            assert_eq!(state(&reopened), expected, "cut at {cut}, then a change");
            assert_eq!(reopened.recovery().torn_tail_bytes, 0);
        }
        cuts_checked += 1;
    }
    assert_eq!(cuts_checked, bytes.len() - log::HEADER_LEN + 1);

    // Shorter than its header: a log is created whole (by rename), so this is damage.
    for cut in [0, 1, log::HEADER_LEN - 1] {
        std::fs::write(&log_path, &bytes[..cut]).unwrap();
        let (offset, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
        assert_eq!(offset, 0);
        assert!(reason.contains("log header is"), "{reason}");
    }
}

#[test]
fn damage_before_the_end_of_the_log_is_refused_and_left_alone() {
    let source = tempfile::tempdir().unwrap();
    let store = MdsStore::open(source.path(), config(10_000)).unwrap();
    let states = run(&store, &workload(10));
    drop(store);
    let bytes = std::fs::read(source.path().join(LOG_FILE)).unwrap();
    let scan = log::scan(&bytes).unwrap();
    let records = scan.records.clone();

    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join(LOG_FILE);
    // A flipped byte in each part of every record but the last: its fixed header and its payload.
    for (i, record) in records.iter().enumerate().take(records.len() - 1) {
        for at in [
            record.offset as usize,
            record.offset as usize + 5,
            record.offset as usize + 17,
            record.payload.start + 3,
        ] {
            let mut damaged = bytes.clone();
            damaged[at] ^= 0x40;
            std::fs::write(&log_path, &damaged).unwrap();
            let (offset, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
            assert_eq!(offset, record.offset, "record {i}, byte {at}: {reason}");
            assert!(reason.contains("an intact record follows"), "{reason}");
            // Refusing does not touch the log.
            assert_eq!(std::fs::read(&log_path).unwrap(), damaged);
        }
    }
    // A zeroed block in the middle.
    let mut zeroed = bytes.clone();
    let middle = records[records.len() / 2].offset as usize;
    zeroed[middle..middle + 64].fill(0);
    std::fs::write(&log_path, &zeroed).unwrap();
    let (offset, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
    assert_eq!(offset, middle as u64);
    assert!(reason.contains("record magic missing"), "{reason}");
    // The header.
    let mut header = bytes.clone();
    header[20] ^= 1;
    std::fs::write(&log_path, &header).unwrap();
    let (offset, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
    assert_eq!(offset, 0);
    assert!(reason.contains("log header checksum mismatch"), "{reason}");
    // A flip in the last record looks like a torn write: that record alone is cut off.
    let mut last = bytes.clone();
    let at = records.last().unwrap().payload.start + 1;
    last[at] ^= 0x40;
    std::fs::write(&log_path, &last).unwrap();
    let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
    assert_eq!(state(&store), states[records.len() - 1]);
}

#[test]
fn intact_records_that_cannot_be_right_are_refused() {
    let source = tempfile::tempdir().unwrap();
    let store = MdsStore::open(source.path(), config(10_000)).unwrap();
    run(&store, &workload(6));
    drop(store);
    let bytes = std::fs::read(source.path().join(LOG_FILE)).unwrap();
    let scan = log::scan(&bytes).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join(LOG_FILE);

    // A record repeated: its sequence number is out of order.
    let first = &scan.records[0];
    let mut repeated = bytes.clone();
    repeated.extend_from_slice(&bytes[first.offset as usize..first.payload.end]);
    std::fs::write(&log_path, &repeated).unwrap();
    let (offset, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
    assert_eq!(offset, bytes.len() as u64);
    assert!(
        reason.contains("record has sequence 1, 7 expected"),
        "{reason}"
    );

    // A well-formed record whose change does not fit the namespace.
    let next_seq = scan.records.last().unwrap().seq + 1;
    let misfit = Mutation::Mkdir {
        parent: 999,
        name: "x".into(),
        ino: 50,
        mode: 0,
        uid: None,
        gid: None,
        time_ns: 0,
        default_stripe: None,
    };
    let mut bad = bytes.clone();
    bad.extend_from_slice(&log::encode_record(
        next_seq,
        &serde_json::to_vec(&misfit).unwrap(),
    ));
    std::fs::write(&log_path, &bad).unwrap();
    let (offset, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
    assert_eq!(offset, bytes.len() as u64);
    assert!(reason.contains("does not apply: no inode 999"), "{reason}");

    // A well-formed record that is not a change at all.
    let mut junk = bytes.clone();
    junk.extend_from_slice(&log::encode_record(next_seq, b"{\"Nonsense\":1}"));
    std::fs::write(&log_path, &junk).unwrap();
    let (_, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
    assert!(reason.contains("does not decode"), "{reason}");

    // A log that starts after the records a missing snapshot would have held.
    std::fs::write(&log_path, log::encode_header(100)).unwrap();
    let (_, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
    assert!(
        reason.contains("records in between are missing"),
        "{reason}"
    );
}

#[test]
fn a_snapshot_that_does_not_verify_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
    run(&store, &workload(12));
    store.compact().unwrap();
    drop(store);
    let path = dir.path().join(SNAPSHOT_FILE);
    let good = std::fs::read(&path).unwrap();
    let (seq, payload) = snapshot::decode(&good).unwrap();

    let mut inconsistent: NamespaceState = serde_json::from_slice(payload).unwrap();
    inconsistent.next_ino = 2; // below inodes in use
    let cases: Vec<(Vec<u8>, &str)> = vec![
        (
            {
                let mut b = good.clone();
                b[good.len() - 3] ^= 1;
                b
            },
            "payload checksum mismatch",
        ),
        (
            {
                let mut b = good.clone();
                b[17] ^= 1;
                b
            },
            "header checksum mismatch",
        ),
        (good[..good.len() - 1].to_vec(), "the header says"),
        ([good.as_slice(), b"x"].concat(), "the header says"),
        (good[..10].to_vec(), "shorter than the 40-byte header"),
        (snapshot::encode(seq, b"{}"), "payload does not decode"),
        (
            snapshot::encode(seq, &serde_json::to_vec(&inconsistent).unwrap()),
            "is not below next_ino",
        ),
    ];
    for (bytes, message) in cases {
        std::fs::write(&path, &bytes).unwrap();
        match MdsStore::open(dir.path(), config(10_000)).unwrap_err() {
            MdsError::SnapshotCorrupt { reason, .. } => {
                assert!(reason.contains(message), "{reason}")
            }
            other => panic!("expected SnapshotCorrupt, got {other}"),
        }
        assert_eq!(std::fs::read(&path).unwrap(), bytes, "left as it was");
    }

    // A snapshot without its log: the changes after it would be lost.
    std::fs::write(&path, &good).unwrap();
    std::fs::remove_file(dir.path().join(LOG_FILE)).unwrap();
    let (_, reason) = corrupt_reason(MdsStore::open(dir.path(), config(10_000)));
    assert!(
        reason.contains("the log is missing but a snapshot exists"),
        "{reason}"
    );
}

#[test]
fn a_crash_inside_compaction_recovers() {
    let dir = tempfile::tempdir().unwrap();
    let log_path = dir.path().join(LOG_FILE);
    let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
    run(&store, &workload(15));
    let old_log = std::fs::read(&log_path).unwrap();
    store.compact().unwrap();
    let before = state(&store);
    drop(store);

    // The crash came after the snapshot's rename, before the fresh log's: the old log, whose
    // records the snapshot covers, is still in place; and a half-written temporary is left.
    std::fs::write(&log_path, &old_log).unwrap();
    std::fs::write(dir.path().join("mds.log.tmp"), b"half").unwrap();
    std::fs::write(dir.path().join("mds.snapshot.tmp"), b"half a snapshot").unwrap();
    let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
    assert_eq!(store.recovery().records_replayed, 0);
    assert!(store.recovery().compacted, "{:?}", store.recovery());
    assert_eq!(state(&store), before);
    assert!(!dir.path().join("mds.log.tmp").exists());
    // It carries on, and the next restart is clean.
    store
        .execute(
            &Op::Mkdir {
                path: p("/later"),
                mode: 0o755,
                owner: Owner::UNRECORDED,
            },
            5,
        )
        .unwrap();
    let before = state(&store);
    drop(store);
    let store = MdsStore::open(dir.path(), config(10_000)).unwrap();
    assert_eq!(state(&store), before);
    assert_eq!(store.recovery().records_replayed, 1);
}

#[test]
fn a_directory_that_does_not_exist_yet_is_created() {
    let base = tempfile::tempdir().unwrap();
    let dir = base.path().join("a/b/mds");
    let store = MdsStore::open(&dir, config(10_000)).unwrap();
    assert!(store.recovery().fresh);
    assert!(Path::new(&dir.join(LOG_FILE)).exists());
    assert_eq!(store.dir(), dir);
}
