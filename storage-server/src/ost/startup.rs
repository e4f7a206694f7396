//! Starting a target: format a new one, or recover an existing one from its checkpoint and
//! journal and make the object files agree with what was committed.
//!
//! Recovery, step by step (all before the first request is served):
//!
//! 1. Read the checkpoint: the last committed transno and object table at the last
//!    checkpoint. A damaged checkpoint refuses to start (it is replaced atomically, so damage
//!    is real damage).
//! 2. Scan the journal ([`crate::journal::scan()`]): keep the valid prefix, cut a torn or
//!    uncommitted tail, refuse on corruption in the middle.
//! 3. Apply the committed records above the checkpoint to the table. `last_committed` is the
//!    last commit record's transno.
//! 4. Make the object files agree with the table. A file longer than its committed size holds
//!    acknowledged-but-uncommitted appends: it is cut back, and the clients that wrote them
//!    replay them. The data extents cut are first recorded durably as *pending* in the
//!    target's `lost` file ([`LostRanges`]): if no replay writes them again and the recovery
//!    window may have dropped acknowledged writes, they become lost, and reads of them are
//!    refused instead of served as a hole. A file with no committed object (a create that
//!    never committed, or a destroy that committed before its unlink) is removed. A file
//!    shorter than its committed size means committed data is missing: refuse to start.
//!    Overwrites inside the committed size that never committed may remain, as with ldiskfs
//!    in ordered mode (their data was on disk before they were acknowledged).

use super::config::OstConfig;
use crate::error::{Result, StorageError};
use crate::ids::{ObjectId, Transno};
use crate::journal::checkpoint::Checkpoint;
use crate::journal::record::{HEADER_LEN, JournalHeader};
use crate::journal::runtime::write_checkpoint;
use crate::journal::scan::{Discarded, scan};
use crate::journal::table::ObjectTable;
use crate::recovery::{ByteRange, LostRanges};
use serde::Serialize;
use std::fs::{self, File, OpenOptions};
use std::io::{Read, Write};
use std::os::fd::AsRawFd as _;
use std::path::Path;

/// The largest journal recovery will read into memory.
const JOURNAL_READ_MAX_BYTES: u64 = 1 << 30;

/// What starting a target found and did.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
pub struct RecoveryReport {
    /// The directory was new and has been formatted.
    pub formatted: bool,
    /// `last_committed` stored in the checkpoint.
    pub checkpoint_transno: Transno,
    /// `last_committed` after replaying the journal.
    pub last_committed: Transno,
    /// Committed journal records applied on top of the checkpoint.
    pub records_replayed: usize,
    /// The journal tail that was cut off, if any.
    pub discarded: Option<DiscardedTail>,
    /// Objects on the target after recovery.
    pub objects: usize,
    /// Objects cut back to their committed size.
    pub trimmed: Vec<TrimmedObject>,
    /// Object files removed because no committed object owns them.
    pub removed: Vec<ObjectId>,
    /// Files in the object directory that iopath did not name; left alone.
    pub foreign_files: Vec<String>,
}

/// A serialisable copy of [`Discarded`].
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DiscardedTail {
    /// Journal offset of the cut.
    pub offset: u64,
    /// Bytes cut.
    pub bytes: u64,
    /// Intact records of the uncommitted transaction.
    pub uncommitted_records: usize,
    /// Offset and defect of the torn record, if torn.
    pub torn_at: Option<(u64, String)>,
}

impl From<Discarded> for DiscardedTail {
    fn from(d: Discarded) -> Self {
        DiscardedTail {
            offset: d.offset,
            bytes: d.bytes,
            uncommitted_records: d.uncommitted_records,
            torn_at: d.torn_at,
        }
    }
}

/// An object whose uncommitted tail was cut.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TrimmedObject {
    /// The object.
    pub object: ObjectId,
    /// Size found on disk.
    pub file_bytes: u64,
    /// Committed size it was cut to.
    pub committed_bytes: u64,
    /// Bytes of data (not holes) in the cut: pending until a replay writes them again.
    pub data_bytes: u64,
}

/// A recovered target, ready to serve.
#[derive(Debug)]
pub(crate) struct Recovered {
    pub(crate) report: RecoveryReport,
    pub(crate) table: ObjectTable,
    pub(crate) journal_len: u64,
    /// Ranges cut and not yet written again, and ranges lost before.
    pub(crate) lost: LostRanges,
}

/// The most data extents looked up in one cut tail; past it the rest of the tail counts as
/// data (which can only make more bytes pending, never fewer).
const CUT_EXTENTS_MAX: usize = 1024;

/// The data extents of `file` in `[from, to)`, skipping holes (`SEEK_DATA`/`SEEK_HOLE`); the
/// whole range where the file system cannot tell.
fn data_extents(file: &File, from: u64, to: u64) -> std::io::Result<Vec<ByteRange>> {
    let fd = file.as_raw_fd();
    let seek = |offset: u64, whence: i32| -> std::io::Result<Option<u64>> {
        let offset = i64::try_from(offset).map_err(std::io::Error::other)?;
        // SAFETY: lseek on a descriptor this function borrows for its whole run; it moves only
        // the file offset, which nothing else here uses.
        let at = unsafe { libc::lseek(fd, offset, whence) };
        if at >= 0 {
            return Ok(Some(at as u64));
        }
        let error = std::io::Error::last_os_error();
        // ENXIO: no data at or after `offset`.
        match error.raw_os_error() {
            Some(libc::ENXIO) => Ok(None),
            _ => Err(error),
        }
    };
    let mut extents = Vec::new();
    let mut at = from;
    while at < to {
        if extents.len() >= CUT_EXTENTS_MAX {
            extents.push(ByteRange::new(at, to));
            break;
        }
        let data = match seek(at, libc::SEEK_DATA) {
            Ok(Some(data)) => data,
            Ok(None) => break,
            // A file system without SEEK_DATA: count it all as data.
            Err(e) if e.raw_os_error() == Some(libc::EINVAL) => {
                return Ok(vec![ByteRange::new(from, to)]);
            }
            Err(e) => return Err(e),
        };
        if data >= to {
            break;
        }
        let hole = seek(data, libc::SEEK_HOLE)?.unwrap_or(to).min(to);
        extents.push(ByteRange::new(data, hole));
        at = hole.max(data + 1);
    }
    Ok(extents)
}

/// The target's lost ranges as its `lost` file last recorded them (none if there is none).
fn read_lost(config: &OstConfig) -> Result<LostRanges> {
    let path = config.lost_path();
    match fs::read_to_string(&path) {
        Ok(text) => LostRanges::decode(&text).map_err(|reason| StorageError::NotATarget {
            path,
            reason: format!("the record of lost ranges is damaged: {reason}"),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(LostRanges::new()),
        Err(source) => Err(StorageError::io("read", &path, source)),
    }
}

/// Records `lost` in the target's `lost` file, atomically and durably (temp file, fsync,
/// rename, directory fsync); removes the file when nothing is pending or lost.
pub(crate) fn write_lost(config: &OstConfig, lost: &LostRanges) -> Result<()> {
    let path = config.lost_path();
    if lost.is_empty() {
        return match fs::remove_file(&path) {
            Ok(()) => sync_dir(&config.dir),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
            Err(source) => Err(StorageError::io("remove", &path, source)),
        };
    }
    write_checkpoint(&path, lost.encode().as_bytes()).map_err(io("write", &path))
}

fn io<'a>(op: &'static str, path: &'a Path) -> impl FnOnce(std::io::Error) -> StorageError + 'a {
    move |source| StorageError::io(op, path, source)
}

fn sync_dir(path: &Path) -> Result<()> {
    File::open(path)
        .and_then(|dir| dir.sync_all())
        .map_err(io("fsync directory", path))
}

/// Formats or recovers the target described by `config`. Blocking.
pub(crate) fn recover(config: &OstConfig) -> Result<Recovered> {
    let objects_dir = config.objects_dir();
    let journal_path = config.journal_path();
    let checkpoint_path = config.checkpoint_path();
    fs::create_dir_all(&objects_dir).map_err(io("create object directory", &objects_dir))?;

    if !checkpoint_path.exists() {
        return format(config);
    }

    // Step 1: the checkpoint.
    let checkpoint_bytes =
        fs::read(&checkpoint_path).map_err(io("read checkpoint", &checkpoint_path))?;
    let checkpoint =
        Checkpoint::decode(&checkpoint_bytes, config.objects_max).map_err(|reason| {
            StorageError::CheckpointCorrupt {
                path: checkpoint_path.clone(),
                reason,
            }
        })?;
    if checkpoint.target != config.index {
        return Err(StorageError::NotATarget {
            path: checkpoint_path,
            reason: format!(
                "checkpoint belongs to OST{:04x}, not OST{:04x}",
                checkpoint.target, config.index
            ),
        });
    }

    // Step 2: the journal.
    let mut journal = OpenOptions::new()
        .read(true)
        .write(true)
        .open(&journal_path)
        .map_err(io("open journal", &journal_path))?;
    let journal_len = journal
        .metadata()
        .map_err(io("stat journal", &journal_path))?
        .len();
    if journal_len > JOURNAL_READ_MAX_BYTES {
        return Err(StorageError::NotATarget {
            path: journal_path,
            reason: format!(
                "journal of {journal_len} bytes exceeds the {JOURNAL_READ_MAX_BYTES}-byte recovery limit"
            ),
        });
    }
    let mut bytes = Vec::with_capacity(journal_len as usize);
    journal
        .read_to_end(&mut bytes)
        .map_err(io("read journal", &journal_path))?;
    let report = scan(&bytes, &journal_path)?;
    let journal_len = report.valid_len;
    if report.header.target != config.index {
        return Err(StorageError::NotATarget {
            path: journal_path,
            reason: format!(
                "journal belongs to OST{:04x}, not OST{:04x}",
                report.header.target, config.index
            ),
        });
    }
    if let Some(discarded) = &report.discarded {
        tracing::warn!(
            journal = %journal_path.display(),
            offset = discarded.offset,
            bytes = discarded.bytes,
            uncommitted_records = discarded.uncommitted_records,
            torn = ?discarded.torn_at,
            "cutting the journal's uncommitted tail; clients replay what it held"
        );
        journal
            .set_len(report.valid_len)
            .map_err(io("truncate journal", &journal_path))?;
        journal
            .sync_data()
            .map_err(io("fdatasync journal", &journal_path))?;
    }

    // Step 3: committed records above the checkpoint.
    let mut table = checkpoint.table;
    let mut records_replayed = 0;
    for record in report
        .committed
        .iter()
        .filter(|r| r.transno > checkpoint.last_committed)
    {
        table
            .apply(record)
            .map_err(|reason| StorageError::NotATarget {
                path: journal_path.clone(),
                reason: format!("journal does not fit the checkpoint: {reason}"),
            })?;
        records_replayed += 1;
    }
    let last_committed = checkpoint.last_committed.max(report.last_committed);

    // Step 4: object files against the table. What is to be cut is found first, and its
    // data extents recorded as pending before anything is cut: a crash in the middle leaves
    // the record, never a cut nobody knows of.
    let mut lost = read_lost(config)?;
    // The objects to cut, reopened when cut: holding each open until then would need a
    // descriptor per object a crash left longer than committed.
    let mut cuts: Vec<TrimmedObject> = Vec::new();
    let mut trimmed = Vec::new();
    let mut removed = Vec::new();
    let mut foreign_files = Vec::new();
    let mut seen = 0usize;
    let entries = fs::read_dir(&objects_dir).map_err(io("list object directory", &objects_dir))?;
    for entry in entries {
        let entry = entry.map_err(io("list object directory", &objects_dir))?;
        let name = entry.file_name().to_string_lossy().into_owned();
        let path = entry.path();
        let Some(object) = ObjectId::parse_file_name(&name) else {
            tracing::warn!(file = %path.display(), "ignoring a file iopath did not name");
            foreign_files.push(name);
            continue;
        };
        let Some(committed_bytes) = table.size(object) else {
            tracing::info!(%object, "removing object file with no committed object (uncommitted create or committed destroy)");
            fs::remove_file(&path).map_err(io("remove object", &path))?;
            removed.push(object);
            continue;
        };
        seen += 1;
        let file_bytes = entry.metadata().map_err(io("stat object", &path))?.len();
        if file_bytes < committed_bytes {
            return Err(StorageError::CommittedDataMissing {
                target: config.index,
                object,
                committed_bytes,
                file_bytes,
            });
        }
        if file_bytes > committed_bytes {
            let file = OpenOptions::new()
                .write(true)
                .open(&path)
                .map_err(io("open object", &path))?;
            let extents = data_extents(&file, committed_bytes, file_bytes)
                .map_err(io("find the data of object", &path))?;
            for &extent in &extents {
                lost.cut(object, extent);
            }
            let data_bytes = extents.iter().map(ByteRange::len).sum();
            cuts.push(TrimmedObject {
                object,
                file_bytes,
                committed_bytes,
                data_bytes,
            });
        }
    }
    if seen != table.len() {
        let missing: Vec<String> = table
            .iter()
            .filter(|(object, _)| !objects_dir.join(object.file_name()).exists())
            .map(|(object, _)| object.to_string())
            .collect();
        return Err(StorageError::NotATarget {
            path: objects_dir,
            reason: format!("committed objects have no file: {}", missing.join(", ")),
        });
    }
    if !removed.is_empty() {
        sync_dir(&objects_dir)?;
    }
    // Ranges of objects that no longer exist mean nothing.
    for object in lost.objects() {
        if table.size(object).is_none() {
            lost.destroyed(object);
        }
    }
    if !cuts.is_empty() || config.lost_path().exists() {
        write_lost(config, &lost)?;
    }
    for cut in cuts {
        let path = objects_dir.join(cut.object.file_name());
        let file = OpenOptions::new()
            .write(true)
            .open(&path)
            .map_err(io("open object", &path))?;
        tracing::info!(object = %cut.object, cut.file_bytes, cut.committed_bytes, cut.data_bytes, "cutting uncommitted bytes; clients replay them");
        file.set_len(cut.committed_bytes)
            .map_err(io("truncate object", &path))?;
        file.sync_data().map_err(io("fdatasync object", &path))?;
        trimmed.push(cut);
    }

    let report = RecoveryReport {
        formatted: false,
        checkpoint_transno: checkpoint.last_committed,
        last_committed,
        records_replayed,
        discarded: report.discarded.map(DiscardedTail::from),
        objects: table.len(),
        trimmed,
        removed,
        foreign_files,
    };
    tracing::info!(
        target_index = config.index,
        last_committed = %report.last_committed,
        records_replayed = report.records_replayed,
        objects = report.objects,
        "target recovered"
    );
    Ok(Recovered {
        report,
        table,
        journal_len,
        lost,
    })
}

/// Makes a new target: a journal with just its header, then an empty checkpoint. The
/// checkpoint is written last, so its presence means "formatted".
fn format(config: &OstConfig) -> Result<Recovered> {
    let objects_dir = config.objects_dir();
    let has_objects = fs::read_dir(&objects_dir)
        .map_err(io("list object directory", &objects_dir))?
        .filter_map(|e| e.ok())
        .any(|e| ObjectId::parse_file_name(&e.file_name().to_string_lossy()).is_some());
    if has_objects {
        return Err(StorageError::NotATarget {
            path: config.dir.clone(),
            reason: "object files but no checkpoint".to_string(),
        });
    }
    let journal_path = config.journal_path();
    if let Ok(meta) = fs::metadata(&journal_path)
        && meta.len() > HEADER_LEN as u64
    {
        return Err(StorageError::NotATarget {
            path: journal_path,
            reason: "a journal with records but no checkpoint".to_string(),
        });
    }
    let mut journal = File::create(&journal_path).map_err(io("create journal", &journal_path))?;
    journal
        .write_all(
            &JournalHeader {
                target: config.index,
            }
            .encode(),
        )
        .map_err(io("write journal", &journal_path))?;
    journal
        .sync_all()
        .map_err(io("fsync journal", &journal_path))?;
    if let Some(parent) = journal_path.parent() {
        sync_dir(parent)?;
    }
    let checkpoint = Checkpoint {
        target: config.index,
        last_committed: Transno::ZERO,
        table: ObjectTable::new(),
    };
    let checkpoint_path = config.checkpoint_path();
    write_checkpoint(&checkpoint_path, &checkpoint.encode())
        .map_err(io("write checkpoint", &checkpoint_path))?;
    tracing::info!(target_index = config.index, dir = %config.dir.display(), "formatted new target");
    Ok(Recovered {
        report: RecoveryReport {
            formatted: true,
            ..RecoveryReport::default()
        },
        table: ObjectTable::new(),
        journal_len: HEADER_LEN as u64,
        lost: LostRanges::new(),
    })
}
