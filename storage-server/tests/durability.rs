//! What survives a crash: sync and async commits, torn and corrupt journals, failed fsyncs,
//! checkpoints, and client replay after an async crash.
#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

mod common;

use bytes::Bytes;
use common::{Rng, block, config, open, open_faulty, psync, seed, uring};
use iopath_storage_server::journal::scan;
use iopath_storage_server::ost::{Ost, OstEngines};
use iopath_storage_server::recovery::{
    ClientId, ReplayDecision, ReplayRequest, ReplayWindow, WindowEvent, Xid,
};
use iopath_storage_server::{ObjectId, StorageError, Transno};
use std::collections::BTreeMap;
use std::path::Path;

fn journal_committed(dir: &Path) -> Transno {
    let path = dir.join("ost0/journal");
    scan(&std::fs::read(&path).unwrap(), &path)
        .unwrap()
        .last_committed
}

#[tokio::test]
async fn sync_mode_acknowledges_nothing_before_it_is_durable() {
    let dir = tempfile::tempdir().unwrap();
    let (ost, faulty) = open_faulty(config(dir.path(), true)).await;
    ost.create(ObjectId(1)).await.unwrap();
    let mut written = Vec::new();
    for i in 0..10u64 {
        let fsyncs_before = faulty.fsyncs();
        let data = block(i as u8, 4096);
        let reply = ost
            .write(ObjectId(1), i * 4096, data.clone())
            .await
            .unwrap();
        let transno = reply.transno.unwrap();
        // At the reply: the object was fdatasync'd and the journal fdatasync'd...
        assert!(faulty.fsyncs() >= fsyncs_before + 2, "write {i}");
        // ...and the journal on disk holds the commit of this write.
        assert!(journal_committed(dir.path()) >= transno, "write {i}");
        assert!(reply.last_committed >= transno);
        written.push(data);
    }
    ost.crash();
    drop(ost);
    let reopened = open(config(dir.path(), true)).await;
    assert_eq!(reopened.recovery().trimmed, vec![]);
    for (i, data) in written.iter().enumerate() {
        assert_eq!(
            &reopened
                .read(ObjectId(1), i as u64 * 4096, 4096)
                .await
                .unwrap()
                .value,
            data
        );
    }
}

/// A write a client holds for replay: acknowledged above last_committed.
#[derive(Debug, Clone)]
struct Kept {
    client: ClientId,
    xid: Xid,
    transno: Transno,
    object: ObjectId,
    offset: u64,
    data: Bytes,
}

#[tokio::test]
async fn an_async_crash_loses_only_uncommitted_writes_and_replay_restores_them() {
    let mut rng = Rng::new(seed());
    let dir = tempfile::tempdir().unwrap();
    let ost = open(config(dir.path(), false)).await;
    let clients = [ClientId(1), ClientId(2)];
    let objects = 3u64;
    for object in 0..objects {
        ost.create(ObjectId(object)).await.unwrap();
    }
    let mut ends = vec![0u64; objects as usize];
    let mut committed: Vec<(ObjectId, u64, Bytes)> = Vec::new();
    let mut kept: Vec<Kept> = Vec::new();
    let total = 40;
    let sync_at = 5 + rng.below(20);
    for i in 0..total {
        if i == sync_at {
            ost.sync().await.unwrap();
        }
        let client = clients[rng.below(2) as usize];
        let object = ObjectId(rng.below(objects));
        let offset = ends[object.0 as usize];
        let data = block(rng.next() as u8, 4096 * (1 + rng.below(3) as usize));
        ends[object.0 as usize] += data.len() as u64;
        let reply = ost.write(object, offset, data.clone()).await.unwrap();
        kept.push(Kept {
            client,
            xid: Xid(i),
            transno: reply.transno.unwrap(),
            object,
            offset,
            data,
        });
        // The client drops what the reply says is committed.
        let (done, still): (Vec<Kept>, Vec<Kept>) = kept
            .into_iter()
            .partition(|k| k.transno <= reply.last_committed);
        committed.extend(done.into_iter().map(|k| (k.object, k.offset, k.data)));
        kept = still;
    }
    let last_committed = ost.last_committed();
    println!(
        "sync at write {sync_at}: last_committed {last_committed}, {} writes kept for replay",
        kept.len()
    );
    assert!(!kept.is_empty());
    ost.crash();
    drop(ost);

    // Restart: the journal says last_committed; uncommitted appends are cut.
    let ost = open(config(dir.path(), false)).await;
    assert_eq!(ost.recovery().last_committed, last_committed);
    assert_eq!(ost.last_committed(), last_committed);
    // Reads stop at the committed size whatever is on disk, so the cut itself is checked:
    // every kept write's object was found longer than committed and cut back.
    let trimmed = &ost.recovery().trimmed;
    for k in &kept {
        let cut = trimmed.iter().find(|t| t.object == k.object);
        assert!(
            cut.is_some_and(|t| t.file_bytes > t.committed_bytes && t.committed_bytes <= k.offset),
            "object {} of uncommitted write {} was not cut back: {trimmed:?}",
            k.object,
            k.transno
        );
    }
    for k in &kept {
        let back = ost
            .read(k.object, k.offset, k.data.len() as u64)
            .await
            .unwrap()
            .value;
        assert!(
            back.iter().all(|&b| b == 0),
            "uncommitted write {} survived the crash",
            k.transno
        );
    }
    for (object, offset, data) in &committed {
        assert_eq!(
            &ost.read(*object, *offset, data.len() as u64)
                .await
                .unwrap()
                .value,
            data
        );
    }

    // Recovery window: client 1 returns and replays; client 2 never does.
    let mut window = ReplayWindow::new(last_committed, clients, 0, 1000);
    for k in kept.iter().filter(|k| k.client == clients[0]) {
        let request = ReplayRequest {
            client: k.client,
            xid: k.xid,
            transno: k.transno,
            payload: k.clone(),
        };
        assert_eq!(window.replay(request), ReplayDecision::Queued);
    }
    window.client_done(clients[0]);
    let mut events = window.tick(1000);
    // Bounded: each pass executes one queued replay.
    for _ in 0..kept.len() + 1 {
        let Some(ready) = window.next_ready() else {
            break;
        };
        let k = ready.payload;
        let reply = ost
            .replay_write(k.transno, k.object, k.offset, k.data.clone())
            .await
            .unwrap();
        assert_eq!(reply.transno, Some(k.transno), "replays keep their transno");
        window.finished(k.transno, true, k.client);
    }
    events.extend(window.tick(1000));
    assert!(window.is_closed());
    let evicted: Vec<&WindowEvent> = events
        .iter()
        .filter(|e| matches!(e, WindowEvent::Evicted { .. }))
        .collect();
    let client_two_kept = kept.iter().any(|k| k.client == clients[1]);
    assert_eq!(evicted.len(), 1);
    if let WindowEvent::Evicted {
        client, message, ..
    } = evicted[0]
    {
        assert_eq!(*client, clients[1]);
        assert!(message.contains("uncommitted writes"), "{message}");
    }
    ost.sync().await.unwrap();

    // The oracle: everything committed, and everything client 1 replayed, reads back; client
    // 2's uncommitted writes are gone.
    for (object, offset, data) in &committed {
        assert_eq!(
            &ost.read(*object, *offset, data.len() as u64)
                .await
                .unwrap()
                .value,
            data
        );
    }
    for k in &kept {
        let back = ost
            .read(k.object, k.offset, k.data.len() as u64)
            .await
            .unwrap()
            .value;
        if k.client == clients[0] {
            assert_eq!(back, k.data, "replayed write {}", k.transno);
        } else {
            assert!(
                back.iter().all(|&b| b == 0),
                "evicted client's write {} is gone",
                k.transno
            );
        }
    }
    println!("client 2 had uncommitted writes: {client_two_kept}");
    // New operations continue above every replayed transno.
    let next = ost
        .write(ObjectId(0), 1 << 19, block(1, 4096))
        .await
        .unwrap();
    let last_replayed = kept
        .iter()
        .filter(|k| k.client == clients[0])
        .map(|k| k.transno)
        .max()
        .unwrap_or(last_committed);
    assert!(next.transno.unwrap() > last_replayed);
    assert!(next.transno.unwrap() > last_committed);
}

#[tokio::test]
async fn an_fsync_failure_stops_the_target_instead_of_pretending() {
    for sync in [true, false] {
        let dir = tempfile::tempdir().unwrap();
        let (ost, faulty) = open_faulty(config(dir.path(), sync)).await;
        ost.create(ObjectId(1)).await.unwrap();
        let good = block(1, 4096);
        ost.write(ObjectId(1), 0, good.clone()).await.unwrap();
        ost.sync().await.unwrap();
        faulty.fail_fsyncs_after(0);
        let outcome = match sync {
            // Sync mode: the write's own commit fails.
            true => ost
                .write(ObjectId(1), 4096, block(2, 4096))
                .await
                .map(|_| ()),
            // Async mode: the write is answered; the commit that follows fails.
            false => {
                ost.write(ObjectId(1), 4096, block(2, 4096)).await.unwrap();
                ost.sync().await.map(|_| ())
            }
        };
        let error = outcome.unwrap_err();
        assert!(
            matches!(error, StorageError::TargetStopped { .. }),
            "{error}"
        );
        assert!(error.to_string().contains("Input/output error"), "{error}");
        // Every later operation is refused, reads included: the target cannot vouch for them.
        assert!(matches!(
            ost.read(ObjectId(1), 0, 4096).await,
            Err(StorageError::TargetStopped { .. })
        ));
        assert!(matches!(
            ost.create(ObjectId(2)).await,
            Err(StorageError::TargetStopped { .. })
        ));
        assert!(ost.stopped().is_some());
        drop(ost);
        // A restart on a healthy disk finds the committed data.
        let reopened = open(config(dir.path(), sync)).await;
        assert_eq!(
            reopened.read(ObjectId(1), 0, 4096).await.unwrap().value,
            good
        );
        assert_eq!(
            reopened
                .getattr(ObjectId(1))
                .await
                .unwrap()
                .value
                .size_bytes,
            4096
        );
    }
}

#[tokio::test]
async fn an_fsync_failure_on_an_unaligned_write_stops_the_target() {
    let dir = tempfile::tempdir().unwrap();
    let (ost, faulty) = open_faulty(config(dir.path(), false)).await;
    ost.create(ObjectId(1)).await.unwrap();
    faulty.fail_fsyncs_after(0);
    let error = ost
        .write(ObjectId(1), 3, Bytes::from_static(b"abc"))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("OST0000 stopped: fdatasync object 0x1"),
        "{error}"
    );
    assert!(matches!(
        ost.getattr(ObjectId(1)).await,
        Err(StorageError::TargetStopped { .. })
    ));
}

fn copy_dir(from: &Path, to: &Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        let target = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_dir(&entry.path(), &target);
        } else {
            std::fs::copy(entry.path(), target).unwrap();
        }
    }
}

/// The torn-tail sweep on a real target: the journal cut at every offset of its last record.
#[tokio::test]
async fn a_journal_cut_anywhere_in_its_last_record_recovers_the_valid_prefix() {
    let dir = tempfile::tempdir().unwrap();
    let ost = open(config(dir.path(), true)).await;
    ost.create(ObjectId(1)).await.unwrap();
    let first = block(1, 8192);
    let second = block(2, 4096);
    ost.write(ObjectId(1), 0, first.clone()).await.unwrap();
    ost.write(ObjectId(1), 8192, second).await.unwrap();
    ost.shutdown().await.unwrap();
    drop(ost);
    let journal = std::fs::read(dir.path().join("ost0/journal")).unwrap();
    let record_len = 56;
    let engine = psync();
    for cut in journal.len() - record_len..journal.len() {
        let copy = dir.path().join(format!("cut{cut}"));
        copy_dir(&dir.path().join("ost0"), &copy.join("ost0"));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .open(copy.join("ost0/journal"))
            .unwrap();
        file.set_len(cut as u64).unwrap();
        drop(file);
        let ost = Ost::open(config(&copy, true), OstEngines::shared(engine.clone()))
            .await
            .unwrap();
        let report = ost.recovery();
        assert_eq!(report.last_committed, Transno(2), "cut at {cut}");
        let discarded = report.discarded.as_ref().unwrap();
        assert_eq!(discarded.uncommitted_records, 1, "cut at {cut}");
        // The second write's data was on disk, but its commit was not: it is cut back.
        assert_eq!(report.trimmed.len(), 1);
        assert_eq!(
            ost.getattr(ObjectId(1)).await.unwrap().value.size_bytes,
            8192
        );
        assert_eq!(ost.read(ObjectId(1), 0, 8192).await.unwrap().value, first);
        // The journal was cut back to its valid prefix, and new commits follow it.
        let reply = ost.write(ObjectId(1), 8192, block(3, 4096)).await.unwrap();
        assert_eq!(reply.transno, Some(Transno(3)));
        ost.shutdown().await.unwrap();
        std::fs::remove_dir_all(&copy).unwrap();
    }
}

#[tokio::test]
async fn corruption_in_the_middle_of_the_journal_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    let ost = open(config(dir.path(), true)).await;
    ost.create(ObjectId(1)).await.unwrap();
    ost.write(ObjectId(1), 0, block(1, 4096)).await.unwrap();
    ost.shutdown().await.unwrap();
    drop(ost);
    let path = dir.path().join("ost0/journal");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[24 + 30] ^= 0x01; // inside the first record (the create)
    std::fs::write(&path, &bytes).unwrap();
    let error = Ost::open(config(dir.path(), true), OstEngines::shared(uring()))
        .await
        .unwrap_err();
    let message = error.to_string();
    assert!(
        matches!(error, StorageError::JournalCorrupt { offset: 24, .. }),
        "{message}"
    );
    assert!(
        message.contains("is corrupt at offset 24: checksum mismatch"),
        "{message}"
    );
    assert!(message.contains("refusing to start"), "{message}");
    // Refusing touched nothing.
    assert_eq!(std::fs::read(&path).unwrap(), bytes);
}

#[tokio::test]
async fn recovery_removes_uncommitted_files_keeps_foreign_ones_and_refuses_missing_data() {
    let dir = tempfile::tempdir().unwrap();
    let ost = open(config(dir.path(), true)).await;
    ost.create(ObjectId(1)).await.unwrap();
    ost.write(ObjectId(1), 0, block(1, 4096)).await.unwrap();
    ost.shutdown().await.unwrap();
    drop(ost);
    let objects = dir.path().join("ost0/O");
    // A create that never committed, and a file iopath did not make.
    std::fs::write(objects.join(ObjectId(5).file_name()), b"x").unwrap();
    std::fs::write(objects.join("notes.txt"), b"hello").unwrap();
    let ost = open(config(dir.path(), true)).await;
    assert_eq!(ost.recovery().removed, vec![ObjectId(5)]);
    assert_eq!(ost.recovery().foreign_files, vec!["notes.txt".to_string()]);
    assert!(objects.join("notes.txt").exists());
    ost.shutdown().await.unwrap();
    drop(ost);
    // Committed data cut away behind the target's back.
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(objects.join(ObjectId(1).file_name()))
        .unwrap();
    file.set_len(100).unwrap();
    let error = Ost::open(config(dir.path(), true), OstEngines::shared(uring()))
        .await
        .unwrap_err();
    assert_eq!(
        error.to_string(),
        "OST0000: object 0x1 is 100 bytes on disk but 4096 bytes were committed; refusing to start"
    );
}

#[tokio::test]
async fn checkpoints_bound_the_journal_and_recovery_uses_them() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), true);
    config.journal_checkpoint_bytes = 1024;
    let ost = open(config.clone()).await;
    let mut expected = BTreeMap::new();
    for object in 0..4u64 {
        ost.create(ObjectId(object)).await.unwrap();
    }
    for i in 0..40u64 {
        let object = ObjectId(i % 4);
        let data = block(i as u8, 4096);
        ost.write(object, (i / 4) * 4096, data.clone())
            .await
            .unwrap();
        expected.insert((object, (i / 4) * 4096), data);
    }
    ost.destroy(ObjectId(3)).await.unwrap();
    let stats = ost.stats();
    assert!(stats.journal.checkpoints >= 3, "{stats:?}");
    let journal_len = std::fs::metadata(dir.path().join("ost0/journal"))
        .unwrap()
        .len();
    assert!(
        journal_len <= 1024 + 2 * 56,
        "journal stays bounded: {journal_len}"
    );
    let last = ost.last_committed();
    ost.crash();
    drop(ost);
    let ost = open(config).await;
    assert_eq!(ost.last_committed(), last);
    assert!(ost.recovery().checkpoint_transno > Transno::ZERO);
    assert_eq!(ost.stats().objects, 3);
    for ((object, offset), data) in expected.iter().filter(|((o, _), _)| *o != ObjectId(3)) {
        assert_eq!(&ost.read(*object, *offset, 4096).await.unwrap().value, data);
    }
}

#[tokio::test(start_paused = true)]
async fn async_mode_commits_when_the_interval_runs_out() {
    let dir = tempfile::tempdir().unwrap();
    let mut config = config(dir.path(), false);
    config.commit_interval_ms = 200;
    let ost = Ost::open(config, OstEngines::shared(psync()))
        .await
        .unwrap();
    ost.create(ObjectId(1)).await.unwrap();
    let reply = ost.write(ObjectId(1), 0, block(1, 4096)).await.unwrap();
    let transno = reply.transno.unwrap();
    assert!(reply.last_committed < transno);
    // Paused time: sleeping 10 ms at a time costs nothing real. Bounded at 1000 steps.
    let mut waited_ms = 0;
    for _ in 0..1000 {
        if ost.last_committed() >= transno {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        waited_ms += 10;
    }
    assert!(ost.last_committed() >= transno, "committed by the timer");
    assert!(
        (190..=400).contains(&waited_ms),
        "after about the interval: {waited_ms} ms"
    );
    assert_eq!(
        ost.stats().journal.commits,
        2,
        "the create's commit and the timer's"
    );
}

#[tokio::test]
async fn an_external_journal_belongs_to_its_target() {
    let dir = tempfile::tempdir().unwrap();
    let journals = tempfile::tempdir().unwrap();
    let mut config0 = config(dir.path(), true);
    config0.external_journal = Some(journals.path().join("ost0.journal"));
    let ost = open(config0.clone()).await;
    ost.create(ObjectId(1)).await.unwrap();
    ost.write(ObjectId(1), 0, block(1, 4096)).await.unwrap();
    ost.shutdown().await.unwrap();
    drop(ost);
    assert!(!dir.path().join("ost0/journal").exists());
    let reopened = open(config0.clone()).await;
    assert_eq!(reopened.recovery().last_committed, Transno(2));
    reopened.shutdown().await.unwrap();
    drop(reopened);

    // Another target's journal in its place is refused.
    let mut config1 = config(dir.path(), true);
    config1.index = 1;
    config1.dir = dir.path().join("ost1");
    config1.external_journal = Some(journals.path().join("ost1.journal"));
    open(config1).await.shutdown().await.unwrap();
    std::fs::copy(
        journals.path().join("ost1.journal"),
        journals.path().join("ost0.journal"),
    )
    .unwrap();
    let error = Ost::open(config0, OstEngines::shared(uring()))
        .await
        .unwrap_err();
    assert!(
        error
            .to_string()
            .contains("journal belongs to OST0001, not OST0000"),
        "{error}"
    );
}

#[tokio::test]
async fn a_replay_committed_before_the_next_crash_is_not_pending_after_it() {
    // Found by the seeded simulation (seed 103): a replay took its range out of the pending
    // ranges in memory only. When the replay committed and the target crashed again before
    // its window closed, the next start read the old record, found the replayed bytes still
    // pending, and marked them lost when that window evicted a client — bytes the client had
    // replayed and the target had committed.
    let dir = tempfile::tempdir().unwrap();
    let object = ObjectId(1);
    let data = block(7, 4096);
    let ost = open(config(dir.path(), false)).await;
    ost.create(object).await.unwrap();
    let reply = ost.write(object, 0, data.clone()).await.unwrap();
    let transno = reply.transno.unwrap();
    assert!(
        reply.last_committed < transno,
        "acknowledged, not committed"
    );
    ost.crash();
    drop(ost);

    // The second life cuts the write back and records its range as pending; the client
    // replays it, and it commits.
    let ost = open(config(dir.path(), false)).await;
    assert_eq!(ost.recovery().trimmed.len(), 1, "the write was cut");
    assert!(ost.lost_ranges().has_pending());
    ost.replay_write(transno, object, 0, data.clone())
        .await
        .unwrap();
    ost.sync().await.unwrap();
    assert!(!ost.lost_ranges().has_pending(), "the replay wrote it");
    ost.crash();
    drop(ost);

    // The third life: nothing was cut, and the record says nothing is pending.
    let ost = open(config(dir.path(), false)).await;
    assert!(ost.recovery().trimmed.is_empty());
    assert!(
        ost.lost_ranges().is_empty(),
        "a committed replay is not pending: {:?}",
        ost.lost_ranges()
    );
    // So a window that evicted someone marks nothing of it lost.
    let outcome = ost.recovery_closed(true).await.unwrap();
    assert!(outcome.lost.is_empty(), "{outcome:?}");
    assert_eq!(ost.read(object, 0, 4096).await.unwrap().value, data);
}
