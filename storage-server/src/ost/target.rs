//! `Ost`: one object storage target — object files, a journal, and the rules that tie them.
//!
//! Every state-changing operation follows the same shape: validate (nothing touches the disk
//! for bad input), do its own I/O, then hand a record to the journal, whose answer is the reply
//! point. The order of the I/O against the record is what makes recovery work:
//!
//! | operation | order | why |
//! |---|---|---|
//! | write | data → record | ordered mode: a committed record never names missing data |
//! | create | file → record | an uncommitted file is removed at recovery |
//! | punch (shrink), destroy | record → file | a committed record is redone at recovery (cut, remove) |
//! | punch (grow) | file → record | an uncommitted growth is cut back at recovery |

use super::config::OstConfig;
use super::counters::{Op, OpCounters, Rw, Tallies, TargetCounters};
use super::mmp::DirGuard;
use super::open_files::{InUse, ObjectFiles};
use super::reply::{ObjectAttr, OpReply, OstStats};
use super::startup::{RecoveryReport, recover, write_lost};
use crate::engine::{DiskEngine, EngineFile, FileRole, OpenMode, SyncKind, blocking};
use crate::error::{Result, StorageError};
use crate::ids::{ObjectId, Transno};
use crate::journal::policy::{CommitMode, Intent, PolicyConfig};
use crate::journal::record::Operation;
use crate::journal::runtime::{Journal, JournalSetup, Stamp};
use crate::recovery::lost::{ByteRange, LostData, LostRanges, WindowOutcome};
use crate::stop::StopFlag;
use bytes::Bytes;
use iopath_fabric::fail::{FailPoints, Injected, Site};
use iopath_proto::ost::Capacity;
use std::collections::{HashMap, HashSet};
use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime};
use tokio::sync::{RwLock, Semaphore};

/// What a target runs on: an engine for its object files and one for its journal (the same
/// one unless the journal is external), and its node's fail points (the `oss.*` sites).
#[derive(Debug, Clone)]
pub struct OstEngines {
    /// Engine of the object files.
    pub data: Arc<dyn DiskEngine>,
    /// Engine of the journal.
    pub journal: Arc<dyn DiskEngine>,
    /// The fail points an operator arms on the target's node.
    pub fail: Arc<FailPoints>,
}

impl OstEngines {
    /// One engine for both, with fail points of its own (disarmed).
    pub fn shared(engine: Arc<dyn DiskEngine>) -> OstEngines {
        OstEngines {
            data: Arc::clone(&engine),
            journal: engine,
            fail: FailPoints::new(),
        }
    }

    /// The same engines, with the node's fail points.
    pub fn with_fail_points(self, fail: Arc<FailPoints>) -> OstEngines {
        OstEngines { fail, ..self }
    }
}

/// One object.
#[derive(Debug)]
struct ObjectState {
    /// Current size, including acknowledged writes not yet committed.
    size_bytes: Mutex<u64>,
    /// Writes and reads share it; punch and destroy hold it alone.
    lock: RwLock<()>,
    /// Set by destroy (under the exclusive lock) for operations that looked it up before.
    destroyed: AtomicBool,
}

impl ObjectState {
    fn size(&self) -> u64 {
        *self
            .size_bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Raises the size to at least `end`; returns the new size.
    fn grow_to(&self, end: u64) -> u64 {
        let mut size = self
            .size_bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *size = (*size).max(end);
        *size
    }

    fn set_size(&self, size: u64) {
        *self
            .size_bytes
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = size;
    }
}

/// An object storage target.
#[derive(Debug)]
pub struct Ost {
    config: OstConfig,
    engines: OstEngines,
    journal: Journal,
    objects: Mutex<HashMap<ObjectId, Arc<ObjectState>>>,
    /// The object files: at most `open_objects_max` open, each used under one of as many
    /// places.
    files: Arc<ObjectFiles>,
    /// Serialises punches, and the checks of creates (rare, and simpler to reason about one
    /// at a time). Creates do their I/O outside it, so that many creates share directory
    /// fsyncs and journal commits; destroys never take it (each holds its object's lock
    /// alone), for the same reason.
    meta: tokio::sync::Mutex<()>,
    /// Objects whose create is under way: reserved against a second create of the same id.
    creating: Mutex<HashSet<ObjectId>>,
    /// Wakes the creates waiting for a create of the same id to end.
    create_ended: tokio::sync::Notify,
    /// The objects directory's fsyncs, shared by the creates waiting for one.
    dir_sync: DirSync,
    /// `uncommitted_records_max` permits; a write holds one from its data step to its commit.
    uncommitted: Arc<Semaphore>,
    stop: Arc<StopFlag>,
    recovery: RecoveryReport,
    /// Bytes recovery cut (pending a replay) and bytes lost: reads and sizes that touch lost
    /// bytes are refused ([`crate::recovery::lost`]).
    lost: Mutex<LostRanges>,
    /// Held while the `lost` file is rewritten, so rewrites never interleave.
    lost_file: tokio::sync::Mutex<()>,
    /// Operation counters and I/O histograms (`obdfilter.*.stats`, `brw_stats`).
    counters: Mutex<Tallies>,
    /// Disk I/Os under way on the object files, for brw_stats' "disk I/Os in flight".
    disk_in_flight: AtomicU64,
    /// The directory's lock and heartbeat, held from before recovery until the target stops
    /// (shut down, or crashed): no second server opens it meanwhile.
    dir_guard: Mutex<Option<DirGuard>>,
}

impl Ost {
    /// Opens (formatting or recovering) the target described by `config`.
    pub async fn open(config: OstConfig, engines: OstEngines) -> Result<Ost> {
        config.validate()?;
        // Multiple-mount protection, before recovery reads anything: a second server on this
        // directory would cut this one's uncommitted tails and write over its objects.
        let name = format!("OST{:04x}", config.index);
        let stop = Arc::new(StopFlag::new());
        let mut dir_guard = DirGuard::lock(&config.dir, &name)?;
        dir_guard
            .start_heartbeat(
                &name,
                Duration::from_millis(config.mmp_interval_ms),
                Arc::clone(&engines.data),
                Arc::clone(&stop),
            )
            .await?;
        let setup_config = config.clone();
        let (recovered, journal_file) = blocking(&*engines.data, move || -> Result<_> {
            let recovered = recover(&setup_config)?;
            let journal_path = setup_config.journal_path();
            let journal_file =
                EngineFile::open(&journal_path, FileRole::Journal, OpenMode::Existing, false)
                    .map_err(|e| StorageError::io("open journal", &journal_path, e))?;
            Ok((recovered, journal_file))
        })
        .await
        .map_err(|e| StorageError::io("recover target", &config.dir, e))??;

        // Recovery made every object file agree with the table; each is opened when first
        // used (see `open_files`).
        let objects = recovered
            .table
            .iter()
            .map(|(object, size)| {
                let state = ObjectState {
                    size_bytes: Mutex::new(size),
                    lock: RwLock::new(()),
                    destroyed: AtomicBool::new(false),
                };
                (object, Arc::new(state))
            })
            .collect();
        let mode = if config.sync_journal {
            CommitMode::Sync
        } else {
            CommitMode::Async
        };
        let files = Arc::new(ObjectFiles::new(
            Arc::clone(&engines.data),
            config.objects_dir(),
            config.direct_io,
            config.open_objects_max,
        ));
        let journal = Journal::start(JournalSetup {
            target: config.index,
            journal_engine: Arc::clone(&engines.journal),
            objects: Arc::clone(&files) as _,
            fail: Arc::clone(&engines.fail),
            file: Arc::new(journal_file),
            append_offset: recovered.journal_len,
            table: recovered.table,
            last_committed: recovered.report.last_committed,
            mode,
            policy: PolicyConfig {
                group_records_max: config.group_records_max,
                commit_interval_ms: config.commit_interval_ms,
            },
            checkpoint_path: config.checkpoint_path(),
            checkpoint_bytes: config.journal_checkpoint_bytes,
            stop: Arc::clone(&stop),
        });
        Ok(Ost {
            uncommitted: Arc::new(Semaphore::new(config.uncommitted_records_max)),
            files,
            config,
            engines,
            journal,
            objects: Mutex::new(objects),
            meta: tokio::sync::Mutex::new(()),
            creating: Mutex::default(),
            create_ended: tokio::sync::Notify::new(),
            dir_sync: DirSync::default(),
            stop,
            recovery: recovered.report,
            lost: Mutex::new(recovered.lost),
            lost_file: tokio::sync::Mutex::new(()),
            counters: Mutex::new(Tallies::new(SystemTime::now())),
            disk_in_flight: AtomicU64::new(0),
            dir_guard: Mutex::new(Some(dir_guard)),
        })
    }

    /// The target's index.
    pub fn index(&self) -> u32 {
        self.config.index
    }

    /// Its configuration.
    pub fn config(&self) -> &OstConfig {
        &self.config
    }

    /// What startup found and did.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Bytes cut at startup that wait for a replay, and bytes lost (a copy).
    pub fn lost_ranges(&self) -> LostRanges {
        self.lock_lost().clone()
    }

    /// The lost ranges of `object` inside `range`, if any.
    pub fn lost_in(&self, object: ObjectId, range: ByteRange) -> Option<LostData> {
        self.lock_lost().lost_in(object, range)
    }

    /// The client-replay window closed. If it may have dropped acknowledged writes, every
    /// range startup cut that no replay wrote again is lost from now on: reads and sizes that
    /// touch it are refused. Otherwise those ranges were never acknowledged and are forgotten.
    /// The change is made at once (before any new request is served) and recorded durably
    /// after.
    pub async fn recovery_closed(&self, writes_may_be_lost: bool) -> Result<WindowOutcome> {
        let outcome = self.lock_lost().window_closed(writes_may_be_lost);
        self.persist_lost().await?;
        Ok(outcome)
    }

    /// [`Ost::recovery_closed`]'s first half: the in-memory change alone, for a caller that
    /// must make it under its own lock; [`Ost::persist_lost`] records it.
    pub fn close_recovery_now(&self, writes_may_be_lost: bool) -> WindowOutcome {
        self.lock_lost().window_closed(writes_may_be_lost)
    }

    /// The recovery window, still open, dropped an acknowledged write: everything pending is
    /// lost now, and so is `failed` — the range of a replay that could not run, if that was
    /// it. The caller records the ranges ([`Ost::persist_lost`]).
    pub fn writes_dropped(&self, failed: Option<(ObjectId, ByteRange)>) -> WindowOutcome {
        let mut lost = self.lock_lost();
        if let Some((object, range)) = failed {
            lost.replay_failed(object, range);
        }
        lost.writes_dropped()
    }

    /// Records the lost ranges in the target's `lost` file (atomic replace, durable). A
    /// stopped target records nothing: after a crash the file belongs to the next life, which
    /// recovers from it.
    pub async fn persist_lost(&self) -> Result<()> {
        let _one_at_a_time = self.lost_file.lock().await;
        self.stop.check(self.config.index)?;
        // Taken under the file lock: the last rewrite carries the latest state.
        let snapshot = self.lost_ranges();
        let config = self.config.clone();
        blocking(&*self.engines.data, move || write_lost(&config, &snapshot))
            .await
            .map_err(|e| StorageError::io("record lost ranges", &self.config.dir, e))?
    }

    /// A client back in the recovery window sent a write over `range` of `object` and had no
    /// answer: what startup cut there was never acknowledged and is forgotten
    /// ([`LostRanges::unanswered`]). Returns whether anything was; the caller records the
    /// ranges ([`Ost::persist_lost`]).
    pub fn unanswered(&self, object: ObjectId, range: ByteRange) -> bool {
        self.lock_lost().unanswered(object, range)
    }

    fn lock_lost(&self) -> std::sync::MutexGuard<'_, LostRanges> {
        self.lost.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Notes that `range` of `object` holds new bytes; records the ranges again if that took
    /// any pending or lost bytes out: a replay that commits and then meets a crash must not
    /// be found pending again by the next start.
    async fn note_written(&self, object: ObjectId, range: ByteRange) -> Result<()> {
        let written = self.lock_lost().written(object, range);
        if written.lost {
            tracing::info!(target_index = self.config.index, %object, %range, "lost bytes written again");
        }
        if written.changed() {
            self.persist_lost().await?;
        }
        Ok(())
    }

    fn data_lost(&self, lost: LostData) -> StorageError {
        StorageError::DataLost {
            target: self.config.index,
            object: lost.object,
            bytes: lost.bytes(),
            ranges: lost
                .ranges
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(", "),
        }
    }

    /// Highest committed transno.
    pub fn last_committed(&self) -> Transno {
        self.journal.last_committed()
    }

    /// Waits until `transno` is committed; the `last_committed` that covered it, or `None` if
    /// the target stopped first.
    pub async fn committed(&self, transno: Transno) -> Option<Transno> {
        self.journal.committed(transno).await
    }

    /// True in sync mode (`obdfilter.*.sync_journal`).
    pub fn sync_journal(&self) -> bool {
        self.journal.mode() == CommitMode::Sync
    }

    /// Switches between sync (`true`) and async (`false`) journal commits while running.
    /// Operations handed to the journal from now on follow the new mode.
    pub fn set_sync_journal(&self, sync: bool) {
        self.journal.set_mode(if sync {
            CommitMode::Sync
        } else {
            CommitMode::Async
        });
    }

    /// Counters.
    pub fn stats(&self) -> OstStats {
        OstStats {
            last_committed: self.last_committed(),
            objects: self.lock_objects().len(),
            journal: self.journal.counters(),
        }
    }

    /// How long its journal's commits took so far, start to durable.
    pub fn commit_latency(&self) -> iopath_admin::metrics::HistogramSample {
        self.journal.commit_latency()
    }

    /// The operation counters and I/O histograms since the start or the last clear (what
    /// `obdfilter.*.stats` shows).
    pub fn counters(&self) -> TargetCounters {
        self.lock_counters().since_clear.clone()
    }

    /// The operation counters since the target started, never cleared (what `/metrics`
    /// exports).
    pub fn counters_since_start(&self) -> OpCounters {
        self.lock_counters().since_start
    }

    /// Starts the counters [`Ost::counters`] returns again from zero (`lctl set_param
    /// obdfilter.*.stats=clear`); those since the start go on.
    pub fn clear_counters(&self) {
        self.lock_counters().clear(SystemTime::now());
    }

    fn lock_counters(&self) -> std::sync::MutexGuard<'_, Tallies> {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Counts one `op` (its value in bytes or microseconds).
    fn count(&self, op: Op, value: u64) {
        self.lock_counters().count(op, value);
    }

    /// Runs one disk I/O of `bytes` on an object file, tallying its size, time and the I/Os
    /// under way with it.
    async fn disk_io<T>(&self, rw: Rw, bytes: u64, io: impl Future<Output = T>) -> T {
        let in_flight = self.disk_in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        let started = Instant::now();
        let outcome = io.await;
        let time = started.elapsed();
        self.disk_in_flight.fetch_sub(1, Ordering::AcqRel);
        self.lock_counters().disk_io(rw, bytes, time, in_flight);
        outcome
    }

    /// Why the target stopped, if it did.
    pub fn stopped(&self) -> Option<String> {
        self.stop.reason()
    }

    fn lock_objects(&self) -> std::sync::MutexGuard<'_, HashMap<ObjectId, Arc<ObjectState>>> {
        self.objects.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// `object`'s file ([`ObjectFiles::file`]). Call with the object's lock held (shared or
    /// exclusive), so that a destroy cannot unlink the file meanwhile.
    async fn file(&self, object: ObjectId) -> Result<InUse> {
        self.files
            .file(object)
            .await
            .map_err(|e| StorageError::io("open object", self.files.path(object), e))
    }

    fn lock_creating(&self) -> std::sync::MutexGuard<'_, HashSet<ObjectId>> {
        self.creating.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn lookup(&self, object: ObjectId) -> Result<Arc<ObjectState>> {
        self.lock_objects()
            .get(&object)
            .cloned()
            .ok_or(StorageError::NoSuchObject {
                target: self.config.index,
                object,
            })
    }

    /// The error a fail point's errno makes of the step at `site`.
    fn injected(&self, site: Site, injected: Injected) -> StorageError {
        StorageError::Injected {
            target: self.config.index,
            site: site.name(),
            code: injected.errno(),
        }
    }

    fn no_such(&self, object: ObjectId) -> StorageError {
        StorageError::NoSuchObject {
            target: self.config.index,
            object,
        }
    }

    /// Stops the target after a failure it cannot vouch past, and says so to the caller.
    fn fail_stop(&self, what: String) -> StorageError {
        self.stop.stop(what);
        match self.stop.check(self.config.index) {
            Err(error) => error,
            Ok(()) => StorageError::TargetStopped {
                target: self.config.index,
                reason: "stopped".to_string(),
            },
        }
    }

    fn reply<T>(&self, value: T, stamp: Stamp) -> OpReply<T> {
        OpReply {
            value,
            transno: Some(stamp.transno),
            last_committed: stamp.last_committed,
        }
    }

    fn check_end(&self, object: ObjectId, offset: u64, length: u64) -> Result<u64> {
        let end = offset.checked_add(length);
        match end {
            Some(end) if end <= self.config.object_size_max_bytes => Ok(end),
            _ => Err(StorageError::ObjectTooLarge {
                target: self.config.index,
                object,
                end_bytes: end.unwrap_or(u64::MAX),
                max_bytes: self.config.object_size_max_bytes,
            }),
        }
    }

    fn check_io_size(&self, length: u64) -> Result<()> {
        if length > self.config.io_size_max_bytes {
            return Err(StorageError::RequestTooLarge {
                target: self.config.index,
                length_bytes: length,
                max_bytes: self.config.io_size_max_bytes,
            });
        }
        Ok(())
    }

    /// Creates an empty object. Committed before the reply in both modes. Creates of
    /// different objects run at once and share the directory fsync and the journal commit; a
    /// create of an id whose create is still under way waits for that one to end, and is then
    /// refused as existing (so a client that sent it again can tell its first attempt did it).
    pub async fn create(&self, object: ObjectId) -> Result<OpReply<()>> {
        self.stop.check(self.config.index)?;
        let _reserved = loop {
            // Registered before the check, so a create that ends in between still wakes us.
            let ended = self.create_ended.notified();
            tokio::pin!(ended);
            ended.as_mut().enable();
            {
                let _meta = self.meta.lock().await;
                let objects = self.lock_objects();
                let mut creating = self.lock_creating();
                if objects.contains_key(&object) {
                    return Err(StorageError::ObjectExists {
                        target: self.config.index,
                        object,
                    });
                }
                if !creating.contains(&object) {
                    if objects.len() + creating.len() >= self.config.objects_max {
                        return Err(StorageError::TooManyObjects {
                            target: self.config.index,
                            max: self.config.objects_max,
                        });
                    }
                    creating.insert(object);
                    break Reserved { ost: self, object };
                }
            }
            // The same id's create is under way (most likely this very create, sent again
            // while its first execution still runs): wait for it to end, then answer as it
            // left things — the object there, or free to create if that create failed.
            ended.await;
        };
        // The file first, with its directory entry made durable; the record second. The file
        // is closed again before the commit is waited for (the first write opens it), so a
        // create holds a place for a file in use only while it makes the file.
        self.files
            .create(object)
            .await
            .map_err(|e| StorageError::io("create object", self.files.path(object), e))?;
        let dir = self.config.objects_dir();
        self.dir_sync
            .sync(&*self.engines.data, &dir)
            .await
            .map_err(|e| self.fail_stop(format!("fsync directory {}: {e}", dir.display())))?;
        let intent = Intent {
            operation: Operation::Create,
            object,
            offset_bytes: 0,
            length_bytes: 0,
            size_after_bytes: 0,
            data_on_disk: true,
            needs_data_sync: false,
            commit_before_reply: true,
        };
        let stamp = self.journal.submit(intent, None, None).await?;
        let state = ObjectState {
            size_bytes: Mutex::new(0),
            lock: RwLock::new(()),
            destroyed: AtomicBool::new(false),
        };
        self.lock_objects().insert(object, Arc::new(state));
        tracing::debug!(target_index = self.config.index, %object, transno = %stamp.transno, "created");
        self.count(Op::Create, 0);
        Ok(self.reply((), stamp))
    }

    /// Writes `data` at `offset`. The reply comes at the journal's reply point: after the
    /// commit in sync mode, as soon as the data is on disk in async mode.
    pub async fn write(
        &self,
        object: ObjectId,
        offset_bytes: u64,
        data: Bytes,
    ) -> Result<OpReply<()>> {
        self.write_inner(object, offset_bytes, data, None).await
    }

    /// Re-executes a client's write from before a crash under its original `transno`.
    /// Replays must come in increasing transno order, above `last_committed` (the recovery
    /// window, [`crate::recovery::ReplayWindow`], puts them in that order).
    pub async fn replay_write(
        &self,
        transno: Transno,
        object: ObjectId,
        offset_bytes: u64,
        data: Bytes,
    ) -> Result<OpReply<()>> {
        self.write_inner(object, offset_bytes, data, Some(transno))
            .await
    }

    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "Ost::write_inner",
        skip_all
    )]
    async fn write_inner(
        &self,
        object: ObjectId,
        offset: u64,
        data: Bytes,
        replay: Option<Transno>,
    ) -> Result<OpReply<()>> {
        let arrived = Instant::now();
        self.stop.check(self.config.index)?;
        let length = data.len() as u64;
        if length == 0 {
            return Err(StorageError::EmptyWrite {
                target: self.config.index,
                object,
            });
        }
        self.check_io_size(length)?;
        let end = self.check_end(object, offset, length)?;
        let state = self.lookup(object)?;
        let _shared = state.lock.read().await;
        if state.destroyed.load(Ordering::Acquire) {
            return Err(self.no_such(object));
        }
        // Back-pressure: at most `uncommitted_records_max` writes between here and their commit.
        let permit = Arc::clone(&self.uncommitted)
            .acquire_owned()
            .await
            .map_err(|_| self.fail_stop("uncommitted-record pool closed".to_string()))?;

        // Durability step 1: the data reaches the object file — straight to the device when
        // the request is aligned (O_DIRECT), else into the page cache.
        let file = self.file(object).await?;
        let done = self
            .disk_io(
                Rw::Write,
                length,
                self.engines.data.write_at(&file, offset, data),
            )
            .await
            .map_err(|e| StorageError::io("write object", file.path(), e))?;
        // Durability step 2: data that only reached the page cache is fdatasync'd, so that in
        // either mode nothing is acknowledged before its data is on disk. An fsync error stops
        // the target: the kernel may have dropped the pages, and a retry would lie.
        if !done.direct {
            self.engines
                .data
                .fsync(&file, SyncKind::Data)
                .await
                .map_err(|e| self.fail_stop(format!("fdatasync object {object}: {e}")))?;
        }
        // The file and its place are given back as soon as its I/O is done, before the
        // bookkeeping, a fail point's stall and the journal's wait (in sync mode, a commit):
        // the commit that fdatasyncs an O_DIRECT write takes them again.
        drop(file);
        // The range now holds this write's bytes: if recovery had cut or lost it, it is
        // neither any more (recorded before the reply, so a restart still knows).
        self.note_written(object, ByteRange::new(offset, end))
            .await?;
        let size_after = state.grow_to(end);
        let intent = Intent {
            operation: Operation::Write,
            object,
            offset_bytes: offset,
            length_bytes: length,
            size_after_bytes: size_after,
            data_on_disk: true,
            // An O_DIRECT write may have changed the file's size or block map with no fsync
            // yet: the commit fdatasyncs the object before writing the record.
            needs_data_sync: done.direct,
            commit_before_reply: false,
        };
        if let Err(injected) = self.engines.fail.pass(Site::OssAfterWrite).await {
            return Err(self.injected(Site::OssAfterWrite, injected));
        }
        // Durability steps 3–5 (record written, made durable, reply) happen in the journal:
        // this returns at the reply point of the current mode. Only an O_DIRECT write leaves
        // its object for the commit to fdatasync; a buffered one was synced just above.
        let stamp = self.journal.submit(intent, replay, Some(permit)).await?;
        {
            let mut counters = self.lock_counters();
            counters.bulk(Rw::Write, length);
            counters.count(Op::WriteBytes, length);
            counters.count(Op::Write, arrived.elapsed().as_micros() as u64);
        }
        Ok(self.reply((), stamp))
    }

    /// Reads up to `length` bytes at `offset` (fewer at the end of the object).
    pub async fn read(
        &self,
        object: ObjectId,
        offset_bytes: u64,
        length_bytes: u64,
    ) -> Result<OpReply<Bytes>> {
        let arrived = Instant::now();
        self.stop.check(self.config.index)?;
        self.check_io_size(length_bytes)?;
        let state = self.lookup(object)?;
        let _shared = state.lock.read().await;
        if state.destroyed.load(Ordering::Acquire) {
            return Err(self.no_such(object));
        }
        // Bytes acknowledged and then dropped at recovery are never served as a hole.
        let asked = ByteRange::new(offset_bytes, offset_bytes.saturating_add(length_bytes));
        if let Some(lost) = self.lock_lost().lost_in(object, asked) {
            return Err(self.data_lost(lost));
        }
        let available = state.size().saturating_sub(offset_bytes).min(length_bytes);
        let bytes = if available == 0 {
            Bytes::new()
        } else {
            let file = self.file(object).await?;
            self.disk_io(
                Rw::Read,
                available,
                self.engines
                    .data
                    .read_at(&file, offset_bytes, available as usize),
            )
            .await
            .map_err(|e| StorageError::io("read object", file.path(), e))?
        };
        {
            let mut counters = self.lock_counters();
            counters.bulk(Rw::Read, bytes.len() as u64);
            counters.count(Op::ReadBytes, bytes.len() as u64);
            counters.count(Op::Read, arrived.elapsed().as_micros() as u64);
        }
        Ok(OpReply {
            value: bytes,
            transno: None,
            last_committed: self.last_committed(),
        })
    }

    /// The object's attributes.
    pub async fn getattr(&self, object: ObjectId) -> Result<OpReply<ObjectAttr>> {
        self.stop.check(self.config.index)?;
        let state = self.lookup(object)?;
        if state.destroyed.load(Ordering::Acquire) {
            return Err(self.no_such(object));
        }
        // A size that lost bytes made shorter is not the size anyone was told.
        if let Some(lost) = self.lock_lost().lost_of(object) {
            return Err(self.data_lost(lost));
        }
        self.count(Op::Getattr, 0);
        Ok(OpReply {
            value: ObjectAttr {
                size_bytes: state.size(),
            },
            transno: None,
            last_committed: self.last_committed(),
        })
    }

    /// Sets the object's size to `size_bytes` (Lustre's OST_PUNCH to the end of the object).
    /// Committed before the reply in both modes.
    pub async fn punch(&self, object: ObjectId, size_bytes: u64) -> Result<OpReply<()>> {
        self.stop.check(self.config.index)?;
        self.check_end(object, size_bytes, 0)?;
        let _meta = self.meta.lock().await;
        let state = self.lookup(object)?;
        let _exclusive = state.lock.write().await;
        if state.destroyed.load(Ordering::Acquire) {
            return Err(self.no_such(object));
        }
        let intent = Intent {
            operation: Operation::Punch,
            object,
            offset_bytes: 0,
            length_bytes: 0,
            size_after_bytes: size_bytes,
            data_on_disk: true,
            needs_data_sync: false,
            commit_before_reply: true,
        };
        let shrink = size_bytes < state.size();
        let stamp = if shrink {
            // Record first: once committed, recovery cuts the file even if we crash before.
            let stamp = self.journal.submit(intent, None, None).await?;
            self.resize(object, size_bytes).await?;
            stamp
        } else {
            // File first: until the record commits, recovery cuts the growth back.
            self.resize(object, size_bytes).await?;
            self.journal.submit(intent, None, None).await?
        };
        state.set_size(size_bytes);
        if self.lock_lost().punched(object, size_bytes).changed() {
            self.persist_lost().await?;
        }
        self.count(Op::Punch, 0);
        Ok(self.reply((), stamp))
    }

    /// Sets the file's size and makes it durable. Call with the object's lock held alone.
    async fn resize(&self, object: ObjectId, size_bytes: u64) -> Result<()> {
        let file = self.file(object).await?;
        self.engines
            .data
            .truncate(&file, size_bytes)
            .await
            .map_err(|e| self.fail_stop(format!("truncate object {object}: {e}")))?;
        self.engines
            .data
            .fsync(&file, SyncKind::Data)
            .await
            .map_err(|e| self.fail_stop(format!("fdatasync object {object}: {e}")))
    }

    /// Destroys the object. Committed before the reply in both modes. Destroys of different
    /// objects run at once and share journal commits and directory fsyncs, as creates do: a
    /// file system of thousands of files is removed at the rate of commits, not one commit
    /// and one directory fsync per object.
    pub async fn destroy(&self, object: ObjectId) -> Result<OpReply<()>> {
        self.stop.check(self.config.index)?;
        let state = self.lookup(object)?;
        let _exclusive = state.lock.write().await;
        if state.destroyed.load(Ordering::Acquire) {
            return Err(self.no_such(object));
        }
        let intent = Intent {
            operation: Operation::Destroy,
            object,
            offset_bytes: 0,
            length_bytes: 0,
            size_after_bytes: 0,
            data_on_disk: true,
            needs_data_sync: false,
            commit_before_reply: true,
        };
        // Record first; the unlink after it is redone by recovery if we crash in between.
        let stamp = self.journal.submit(intent, None, None).await?;
        state.destroyed.store(true, Ordering::Release);
        self.files.forget(object);
        let path = self.files.path(object);
        let dir = self.config.objects_dir();
        let engine = &*self.engines.data;
        let unlinked = match blocking(engine, move || std::fs::remove_file(&path)).await {
            Ok(Ok(())) => self.dir_sync.sync(engine, &dir).await,
            Ok(Err(error)) | Err(error) => Err(error),
        };
        if let Err(error) = unlinked {
            tracing::warn!(%object, %error, "destroy committed but unlink failed; recovery will remove the file");
        }
        // Out of the table only once its file is gone: until then a create of the same id
        // is refused as existing, and never meets the old file.
        self.lock_objects().remove(&object);
        if self.lock_lost().destroyed(object).changed() {
            self.persist_lost().await?;
        }
        self.count(Op::Destroy, 0);
        Ok(self.reply((), stamp))
    }

    /// Commits everything acknowledged so far (OST_SYNC). On return, `last_committed` covers
    /// every write this target has answered.
    pub async fn sync(&self) -> Result<OpReply<()>> {
        self.stop.check(self.config.index)?;
        let stamp = self.journal.flush().await?;
        self.count(Op::Sync, 0);
        Ok(OpReply {
            value: (),
            transno: None,
            last_committed: stamp.last_committed,
        })
    }

    /// Commits everything and stops the target cleanly. Later operations get `TargetStopped`.
    pub async fn shutdown(&self) -> Result<Transno> {
        let committed = self.journal.shutdown().await?;
        // Everything committed: the directory is let go, its heartbeat marked clean.
        let guard = self.take_dir_guard();
        if let Some(mut guard) = guard {
            guard.release_clean(&*self.engines.data).await?;
        }
        Ok(committed)
    }

    fn take_dir_guard(&self) -> Option<DirGuard> {
        self.dir_guard
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    /// Stops the target at once without committing anything more: to the disk this looks like
    /// a crash (a test of recovery and replay; a real crash is SIGKILL).
    pub fn crash(&self) {
        self.journal.abort();
        self.stop.stop("crashed (simulated)".to_string());
        // As a dead process's would be: the lock let go, the heartbeat left as it was.
        if let Some(mut guard) = self.take_dir_guard() {
            guard.release();
        }
    }

    /// The directory of the target.
    pub fn dir(&self) -> &Path {
        &self.config.dir
    }

    /// The capacity of the file system under the target, as statvfs(3) reports it.
    pub async fn statfs(&self) -> std::io::Result<Capacity> {
        self.count(Op::Statfs, 0);
        let dir = self.config.dir.clone();
        blocking(&*self.engines.data, move || capacity_of(&dir)).await?
    }
}

/// statvfs(3) of `dir`: the capacity a target under it reports.
pub fn capacity_of(dir: &Path) -> std::io::Result<Capacity> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from(std::io::ErrorKind::InvalidInput))?;
    let mut st = std::mem::MaybeUninit::<libc::statvfs>::zeroed();
    // SAFETY: `path` is a NUL-terminated string and `st` a buffer of the right type;
    // statvfs writes only into it.
    let rc = unsafe { libc::statvfs(path.as_ptr(), st.as_mut_ptr()) };
    if rc != 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: statvfs succeeded, so it filled the buffer.
    let st = unsafe { st.assume_init() };
    let frag = st.f_frsize;
    Ok(Capacity {
        total_bytes: st.f_blocks * frag,
        free_bytes: st.f_bfree * frag,
        available_bytes: st.f_bavail * frag,
        files: st.f_files,
        files_free: st.f_ffree,
        block_bytes: frag as u32,
        name_max: st.f_namemax as u32,
    })
}

/// An object id reserved by a create under way; released when the create ends, done or not.
struct Reserved<'a> {
    ost: &'a Ost,
    object: ObjectId,
}

impl Drop for Reserved<'_> {
    fn drop(&mut self) {
        self.ost.lock_creating().remove(&self.object);
        self.ost.create_ended.notify_waiters();
    }
}

/// Directory fsyncs shared by whoever waits for one: a caller whose entry was made before a
/// running fsync started waits for that one, or for the next, never for one of its own.
#[derive(Debug, Default)]
struct DirSync {
    /// Tickets handed out, each after its caller's entry was made (create) or removed
    /// (destroy).
    requested: AtomicU64,
    /// The highest ticket a finished fsync covers; held while an fsync runs.
    covered: tokio::sync::Mutex<u64>,
}

impl DirSync {
    /// Returns once an fsync of `dir` that started after this call did has finished.
    async fn sync(&self, engine: &dyn DiskEngine, dir: &Path) -> std::io::Result<()> {
        let ticket = self.requested.fetch_add(1, Ordering::SeqCst) + 1;
        let mut covered = self.covered.lock().await;
        if *covered >= ticket {
            return Ok(());
        }
        // Every ticket handed out so far belongs to an entry already made or removed.
        let covers = self.requested.load(Ordering::SeqCst);
        let dir = dir.to_path_buf();
        blocking(engine, move || std::fs::File::open(&dir)?.sync_all()).await??;
        *covered = covers;
        Ok(())
    }
}
