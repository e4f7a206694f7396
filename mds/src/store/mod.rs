//! The durable namespace: the pure core made persistent by an append-only, checksummed
//! operation log and periodic snapshots.
//!
//! - [`log`]: the log's format and the crash-recovery scan.
//! - [`snapshot`]: the snapshot's format.
//! - [`replies`]: [`ReplyTable`], each client's last changes' outcomes, so a change resent
//!   after a restart is answered as it was, not run again (Lustre's `last_rcvd`).
//! - [`disk`]: [`StoreDisk`], where the appends and fsyncs land — the file system, or
//!   [`simulated`]'s crash model for the seeded simulation.
//! - [`MdsStore`]: the runtime — plan, log, fsync, apply, reply; replay at start; compaction.
//!
//! The directory holds two files: `mds.snapshot` (the namespace and the reply table as of
//! sequence S) and `mds.log` (records from some base ≤ S+1 on). A change is acknowledged only
//! once its record is on disk, so after any crash the snapshot plus the log's intact records
//! rebuild every acknowledged change — and, from the request each record names, the reply
//! each change was given.

pub mod disk;
pub mod log;
pub mod replies;
pub mod simulated;
pub mod snapshot;

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock};

use serde::{Deserialize, Serialize};
use tracing::{debug, error, info, warn};

use crate::error::{MdsError, Result};
use crate::limits::LOG_RECORD_MAX_BYTES;
use crate::namespace::op::{Mutation, Op, Outcome, Planned};
use crate::namespace::{Namespace, NamespaceConfig, NamespaceState};
pub use disk::{RealDisk, StoreDisk};
pub use replies::{ReplyTable, RequestRef};

/// A log record of a change some client's request asked for: the change, and the request
/// (`{"change": .., "request": ..}`). A change with no request behind it (a local tool's) is
/// logged as the bare mutation, as every record was before requests were logged.
#[derive(Debug, Serialize)]
struct Requested<'a> {
    change: &'a Mutation,
    request: &'a RequestRef,
}

/// [`Requested`], read back.
#[derive(Debug, Deserialize)]
struct RequestedRecord {
    change: Mutation,
    request: RequestRef,
}

/// The reply table's part of a snapshot: a `replies` field beside the namespace's own (a
/// snapshot written before replies were kept has none: an empty table).
#[derive(Debug, Default, Deserialize)]
struct SnapshotReplies {
    #[serde(default)]
    replies: ReplyTable,
}

/// A snapshot's payload: the namespace's fields and `replies`.
#[derive(Serialize)]
struct SnapshotPayload<'a> {
    #[serde(flatten)]
    namespace: &'a NamespaceState,
    replies: &'a ReplyTable,
}

/// A record's change, and the request behind it if it names one.
fn decode_record(payload: &[u8]) -> std::result::Result<(Mutation, Option<RequestRef>), String> {
    if let Ok(requested) = serde_json::from_slice::<RequestedRecord>(payload) {
        return Ok((requested.change, Some(requested.request)));
    }
    serde_json::from_slice::<Mutation>(payload)
        .map(|mutation| (mutation, None))
        .map_err(|e| e.to_string())
}

/// The operation log's file name.
pub const LOG_FILE: &str = "mds.log";
/// The snapshot's file name.
pub const SNAPSHOT_FILE: &str = "mds.snapshot";
/// Suffix of a file being written before it is renamed into place.
const TMP_SUFFIX: &str = ".tmp";

/// What the store found and did when it opened.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RecoveryReport {
    /// Nothing was on disk: a new, empty namespace was made.
    pub fresh: bool,
    /// The sequence number the snapshot covers (0: no snapshot).
    pub snapshot_seq: u64,
    /// Records replayed from the log after the snapshot.
    pub records_replayed: u64,
    /// Bytes of a torn last record cut off the log.
    pub torn_tail_bytes: u64,
    /// The log's length as found.
    pub log_bytes: u64,
    /// Whether the store compacted at start (the log was long or held covered records).
    pub compacted: bool,
}

/// Counters of the store's work since it opened.
#[derive(Debug, Default)]
pub struct StoreCounters {
    /// Records appended and made durable.
    pub records_appended: AtomicU64,
    /// Snapshots written (each followed by a fresh log).
    pub snapshots_written: AtomicU64,
    /// Compactions that failed before replacing anything (the old log stays in use).
    pub compactions_failed: AtomicU64,
    /// Resent changes answered from the reply table instead of run again.
    pub replies_reconstructed: AtomicU64,
}

/// The appending side: held while a change is planned, logged and applied, so changes are
/// decided in log order.
#[derive(Debug)]
struct Writer {
    log: File,
    /// Sequence number of the next record.
    next_seq: u64,
    /// Records since the last snapshot (or since the log began).
    records_since_snapshot: u64,
    /// Set when an append or fsync failed: what is on disk is unknown, so no more changes.
    failed: Option<String>,
    /// The outcomes of each client's last changes, as of the last durable record.
    replies: ReplyTable,
}

/// The durable namespace in one directory.
#[derive(Debug)]
pub struct MdsStore {
    dir: PathBuf,
    /// Where appends and fsyncs land.
    disk: Arc<dyn StoreDisk>,
    writer: Mutex<Writer>,
    /// The namespace as of the last durable record. Readers take it shared; a writer takes
    /// it exclusively only to apply a change that is already on disk.
    namespace: RwLock<Namespace>,
    snapshot_every_records: u64,
    recovery: RecoveryReport,
    counters: StoreCounters,
}

impl MdsStore {
    /// Opens the namespace in `dir` (creating it if the directory holds none), replaying the
    /// log after the snapshot. Refuses a corrupt log or snapshot with the reason and offset.
    pub fn open(dir: &Path, config: NamespaceConfig) -> Result<MdsStore> {
        MdsStore::open_on(dir, config, Arc::new(RealDisk))
    }

    /// [`MdsStore::open`], its appends and fsyncs landing on `disk`.
    pub fn open_on(
        dir: &Path,
        config: NamespaceConfig,
        disk: Arc<dyn StoreDisk>,
    ) -> Result<MdsStore> {
        config.check()?;
        disk.alive().map_err(|e| MdsError::io("open", dir, e))?;
        let snapshot_every_records = config.limits.snapshot_every_records;
        if !dir.exists() {
            std::fs::create_dir_all(dir).map_err(|e| MdsError::io("create", dir, e))?;
            if let Some(parent) = dir.parent() {
                // The new directory's entry in its parent is durable too.
                sync_dir(&*disk, parent)?;
            }
        }
        // A crash during compaction can leave a half-written temporary file. It was never
        // renamed into place, so nothing depends on it.
        for name in [LOG_FILE, SNAPSHOT_FILE] {
            let tmp = dir.join(format!("{name}{TMP_SUFFIX}"));
            if tmp.exists() {
                std::fs::remove_file(&tmp).map_err(|e| MdsError::io("remove", &tmp, e))?;
            }
        }
        let log_path = dir.join(LOG_FILE);
        let snapshot_path = dir.join(SNAPSHOT_FILE);
        let mut report = RecoveryReport::default();

        // 1. The snapshot, if there is one: the namespace and the reply table as of
        //    `snapshot_seq`.
        let mut replies = ReplyTable::new();
        let mut namespace = if snapshot_path.exists() {
            let bytes = std::fs::read(&snapshot_path)
                .map_err(|e| MdsError::io("read", &snapshot_path, e))?;
            let corrupt = |reason: String| MdsError::SnapshotCorrupt {
                path: snapshot_path.clone(),
                reason,
            };
            let (seq, payload) = snapshot::decode(&bytes).map_err(corrupt)?;
            let state: NamespaceState = serde_json::from_slice(payload)
                .map_err(|e| corrupt(format!("payload does not decode: {e}")))?;
            let kept: SnapshotReplies = serde_json::from_slice(payload)
                .map_err(|e| corrupt(format!("payload's replies do not decode: {e}")))?;
            replies = kept.replies;
            report.snapshot_seq = seq;
            Namespace::from_state(state, config).map_err(|e| corrupt(e.to_string()))?
        } else {
            Namespace::new(config)?
        };

        // 2. The log. Missing only on a fresh directory: the log is always replaced by rename,
        //    never deleted, so a snapshot without a log means records were lost.
        if !log_path.exists() {
            if snapshot_path.exists() {
                return Err(MdsError::LogCorrupt {
                    path: log_path,
                    offset: 0,
                    reason: "the log is missing but a snapshot exists; changes after the snapshot would be lost".into(),
                });
            }
            write_atomically(&*disk, dir, LOG_FILE, &log::encode_header(1))?;
            report.fresh = true;
            info!(dir = %dir.display(), "new metadata namespace");
        }
        let bytes = std::fs::read(&log_path).map_err(|e| MdsError::io("read", &log_path, e))?;
        report.log_bytes = bytes.len() as u64;
        let corrupt = |offset: u64, reason: String| MdsError::LogCorrupt {
            path: log_path.clone(),
            offset,
            reason,
        };
        let scan = log::scan(&bytes).map_err(|c| corrupt(c.offset, c.reason))?;
        if scan.base_seq > report.snapshot_seq + 1 {
            return Err(corrupt(
                0,
                format!(
                    "the log starts at record {} but the snapshot ends at {}: records in between are missing",
                    scan.base_seq, report.snapshot_seq
                ),
            ));
        }

        // 3. Replay every intact record the snapshot does not cover, in order.
        let mut last_seq = report.snapshot_seq;
        for record in &scan.records {
            if record.seq <= report.snapshot_seq {
                continue; // covered by the snapshot (a crash came between its two renames)
            }
            let (mutation, request) =
                decode_record(&bytes[record.payload.clone()]).map_err(|e| {
                    corrupt(
                        record.offset,
                        format!("record {} does not decode: {e}", record.seq),
                    )
                })?;
            let outcome = namespace.apply(&mutation).map_err(|why| {
                corrupt(
                    record.offset,
                    format!("record {} does not apply: {why}", record.seq),
                )
            })?;
            // Applying gives the outcome the change's reply carried: kept for its resend.
            if let Some(request) = &request {
                replies.keep(request, record.seq, outcome);
            }
            last_seq = record.seq;
            report.records_replayed += 1;
        }

        // 4. Cut off a torn tail. Its record's fsync never returned, so it was never
        //    acknowledged; the cut is made durable before anything is appended after it.
        if let Some(torn) = &scan.torn {
            warn!(
                offset = torn.offset,
                bytes = torn.bytes,
                defect = %torn.defect,
                "cutting a torn record off the metadata log"
            );
            let file = OpenOptions::new()
                .write(true)
                .open(&log_path)
                .map_err(|e| MdsError::io("open", &log_path, e))?;
            file.set_len(scan.valid_len)
                .map_err(|e| MdsError::io("truncate", &log_path, e))?;
            disk.sync_all(&file, &log_path)
                .map_err(|e| MdsError::io("fsync", &log_path, e))?;
            report.torn_tail_bytes = torn.bytes;
        }

        let log = OpenOptions::new()
            .append(true)
            .open(&log_path)
            .map_err(|e| MdsError::io("open", &log_path, e))?;
        let mut store = MdsStore {
            dir: dir.to_path_buf(),
            disk,
            writer: Mutex::new(Writer {
                log,
                next_seq: last_seq + 1,
                records_since_snapshot: report.records_replayed,
                failed: None,
                replies,
            }),
            namespace: RwLock::new(namespace),
            snapshot_every_records,
            recovery: report,
            counters: StoreCounters::default(),
        };

        // 5. Compact now if the log begins at or before the snapshot's last record (a crash came
        //    between the snapshot's rename and the fresh log's: appending after covered records
        //    would break the log's consecutive sequence), or if a snapshot is due anyway.
        if scan.base_seq <= store.recovery.snapshot_seq
            || store.recovery.records_replayed >= snapshot_every_records
        {
            let mut writer = store.writer.lock().unwrap_or_else(PoisonError::into_inner);
            store.compact_locked(&mut writer)?;
            drop(writer);
            store.recovery.compacted = true;
        }
        info!(
            dir = %dir.display(),
            snapshot_seq = store.recovery.snapshot_seq,
            replayed = store.recovery.records_replayed,
            torn_tail_bytes = store.recovery.torn_tail_bytes,
            "metadata namespace recovered"
        );
        Ok(store)
    }

    /// Executes one change: plans it, makes its record durable, applies it, and returns what
    /// the caller is to be told. Blocks on the fsync: call it off the async runtime.
    pub fn execute(&self, op: &Op, time_ns: u64) -> Result<Outcome> {
        self.execute_for(op, time_ns, None)
    }

    /// [`MdsStore::execute`] for `request`, a client's: its record names the request, so a
    /// resend of it — after a restart too — is answered with the outcome it was given, and
    /// does not run again.
    pub fn execute_for(
        &self,
        op: &Op,
        time_ns: u64,
        request: Option<&RequestRef>,
    ) -> Result<Outcome> {
        // Held until the change is applied: changes are planned against the namespace as it
        // will be when their record lands, and land in the order they were planned.
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(why) = &writer.failed {
            return Err(MdsError::Failed { why: why.clone() });
        }
        // A crashed server's store changes nothing more (in the simulation, a task of the
        // ended life may still be running).
        self.disk
            .alive()
            .map_err(|e| MdsError::io("change", &self.dir, e))?;
        // 0. A change that ran already (its reply was lost, and the client sent it again,
        //    perhaps to this restarted service) is answered as it was the first time.
        if let Some(request) = request
            && let Some(outcome) = writer.replies.find(request)
        {
            self.counters
                .replies_reconstructed
                .fetch_add(1, Ordering::Relaxed);
            debug!(client = %request.client, xid = request.xid, "a resent change: answered from the reply table");
            return Ok(outcome.clone());
        }
        let planned = self
            .namespace
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .plan(op, time_ns)?;
        let mutation = match planned {
            Planned::Unchanged(outcome) => return Ok(outcome),
            Planned::Change(mutation) => mutation,
        };

        // 1. Encode the record: the decided mutation as JSON (with the request that asked for
        //    it, if any), framed with its sequence number and a CRC32 over all of it.
        let encoded = match request {
            Some(request) => serde_json::to_vec(&Requested {
                change: &mutation,
                request,
            }),
            None => serde_json::to_vec(&mutation),
        };
        let payload = encoded.map_err(|e| MdsError::InvalidArgument {
            why: format!("the change does not encode: {e}"),
        })?;
        if payload.len() > LOG_RECORD_MAX_BYTES as usize {
            return Err(MdsError::LimitReached {
                what: "bytes in one log record",
                max: u64::from(LOG_RECORD_MAX_BYTES),
            });
        }
        let seq = writer.next_seq;
        let record = log::encode_record(seq, &payload);

        // 2. Append it to the log (the file is opened O_APPEND): the record reaches the page
        //    cache. A crash now may leave all, part or none of it on disk; nobody has been told.
        // 3. fdatasync: the record and the log's new length are on disk. From here on the
        //    change survives any crash.
        let log_path = self.dir.join(LOG_FILE);
        let writer = &mut *writer;
        let durable = self
            .disk
            .append(&mut writer.log, &log_path, &record)
            .map_err(|e| ("append to", e))
            .and_then(|()| {
                self.disk
                    .sync_data(&writer.log, &log_path)
                    .map_err(|e| ("fsync", e))
            });
        if let Err((action, e)) = durable {
            // What reached the disk is unknown (a failed fsync may have dropped dirty pages),
            // so stop accepting changes; a restart replays whatever is intact.
            error!(seq, error = %e, "metadata log {action} failed; refusing further changes");
            writer.failed = Some(format!("{action} {}: {e}", log_path.display()));
            return Err(MdsError::io(action, &log_path, e));
        }
        writer.next_seq += 1;
        writer.records_since_snapshot += 1;
        self.counters
            .records_appended
            .fetch_add(1, Ordering::Relaxed);

        // 4. Apply it to the in-memory namespace: readers see the change only now that it is
        //    durable.
        let applied = self
            .namespace
            .write()
            .unwrap_or_else(PoisonError::into_inner)
            .apply(&mutation);
        let outcome = match applied {
            Ok(outcome) => outcome,
            Err(why) => {
                // Planning and applying disagree: a bug. The record is durable but does not
                // apply, so a restart will refuse this log with the same reason.
                debug_assert!(false, "planned mutation did not apply: {why}");
                error!(seq, why = %why, "planned mutation did not apply");
                writer.failed = Some(format!("record {seq} did not apply: {why}"));
                return Err(MdsError::Failed {
                    why: format!("record {seq} did not apply: {why}"),
                });
            }
        };

        // The outcome is kept for the request's resend, as a restart rebuilds it from the log.
        if let Some(request) = request {
            writer.replies.keep(request, seq, outcome.clone());
        }

        // 5. Compact if due. A compaction that fails before replacing the log leaves the old
        //    log in use and tries again after the next change; the change itself is done.
        if writer.records_since_snapshot >= self.snapshot_every_records
            && let Err(e) = self.compact_locked(writer)
        {
            warn!(error = %e, "metadata compaction failed");
        }

        // 6. The caller replies: the change is durable and visible.
        Ok(outcome)
    }

    /// Runs `read` against the namespace as of the last durable change.
    pub fn read<R>(&self, read: impl FnOnce(&Namespace) -> R) -> R {
        read(
            &self
                .namespace
                .read()
                .unwrap_or_else(PoisonError::into_inner),
        )
    }

    /// Writes a snapshot and starts a fresh log now, whatever the record count.
    pub fn compact(&self) -> Result<()> {
        let mut writer = self.writer.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(why) = &writer.failed {
            return Err(MdsError::Failed { why: why.clone() });
        }
        self.disk
            .alive()
            .map_err(|e| MdsError::io("compact", &self.dir, e))?;
        self.compact_locked(&mut writer)
    }

    /// What the store found when it opened.
    pub fn recovery(&self) -> &RecoveryReport {
        &self.recovery
    }

    /// Its counters.
    pub fn counters(&self) -> &StoreCounters {
        &self.counters
    }

    /// Sequence number of the last durable change (0 if none ever).
    pub fn last_seq(&self) -> u64 {
        self.writer
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .next_seq
            - 1
    }

    /// Its directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// Where its appends and fsyncs land.
    pub fn disk(&self) -> &dyn StoreDisk {
        &*self.disk
    }

    /// Snapshot, then a fresh log. Holding the writer lock: no change is planned or logged
    /// meanwhile; readers carry on.
    fn compact_locked(&self, writer: &mut Writer) -> Result<()> {
        let result = self.compact_steps(writer);
        if result.is_err() && writer.failed.is_none() {
            self.counters
                .compactions_failed
                .fetch_add(1, Ordering::Relaxed);
        }
        result
    }

    fn compact_steps(&self, writer: &mut Writer) -> Result<()> {
        let last_seq = writer.next_seq - 1;
        let payload = {
            let namespace = self
                .namespace
                .read()
                .unwrap_or_else(PoisonError::into_inner);
            let payload = SnapshotPayload {
                namespace: namespace.state(),
                replies: &writer.replies,
            };
            serde_json::to_vec(&payload).map_err(|e| MdsError::InvalidArgument {
                why: format!("the namespace does not encode: {e}"),
            })?
        };
        // 1. Snapshot to a temporary file, fsync'd, renamed over the old snapshot, directory
        //    fsync'd. A crash before the rename leaves the old snapshot and the whole log; after
        //    it, the new snapshot covers every record to `last_seq` and replay skips those
        //    records in the old log.
        write_atomically(
            &*self.disk,
            &self.dir,
            SNAPSHOT_FILE,
            &snapshot::encode(last_seq, &payload),
        )?;
        // 2. A fresh log starting at `last_seq + 1`, written the same way. Until its rename the
        //    old log stays correct; after it, the records the snapshot covers are gone.
        let log_path = self.dir.join(LOG_FILE);
        let tmp = write_tmp(
            &*self.disk,
            &self.dir,
            LOG_FILE,
            &log::encode_header(last_seq + 1),
        )?;
        if let Err(e) = std::fs::rename(&tmp, &log_path) {
            return Err(MdsError::io("rename", &tmp, e));
        }
        // From the rename on, the open handle points at the old, unlinked log: any failure
        // before the new one is open stops further changes.
        let reopened = sync_dir(&*self.disk, &self.dir).and_then(|()| {
            OpenOptions::new()
                .append(true)
                .open(&log_path)
                .map_err(|e| MdsError::io("open", &log_path, e))
        });
        match reopened {
            Ok(log) => writer.log = log,
            Err(e) => {
                writer.failed = Some(format!("switching to the compacted log failed: {e}"));
                return Err(e);
            }
        }
        writer.records_since_snapshot = 0;
        self.counters
            .snapshots_written
            .fetch_add(1, Ordering::Relaxed);
        info!(
            last_seq,
            snapshot_bytes = payload.len(),
            "metadata snapshot written"
        );
        Ok(())
    }
}

/// Writes `bytes` to `name` in `dir` so that a crash leaves either the old file or the new,
/// never a mix: temporary file, fsync, rename, directory fsync.
fn write_atomically(disk: &dyn StoreDisk, dir: &Path, name: &str, bytes: &[u8]) -> Result<()> {
    let tmp = write_tmp(disk, dir, name, bytes)?;
    let path = dir.join(name);
    std::fs::rename(&tmp, &path).map_err(|e| MdsError::io("rename", &tmp, e))?;
    sync_dir(disk, dir)
}

/// Writes `bytes` to `name.tmp` in `dir` and fsyncs it; returns its path.
fn write_tmp(disk: &dyn StoreDisk, dir: &Path, name: &str, bytes: &[u8]) -> Result<PathBuf> {
    let tmp = dir.join(format!("{name}{TMP_SUFFIX}"));
    let mut file = File::create(&tmp).map_err(|e| MdsError::io("create", &tmp, e))?;
    file.write_all(bytes)
        .map_err(|e| MdsError::io("write", &tmp, e))?;
    disk.sync_all(&file, &tmp)
        .map_err(|e| MdsError::io("fsync", &tmp, e))?;
    Ok(tmp)
}

/// Makes renames and creations in `dir` durable.
fn sync_dir(disk: &dyn StoreDisk, dir: &Path) -> Result<()> {
    disk.sync_dir(dir)
        .map_err(|e| MdsError::io("fsync directory", dir, e))
}
