//! `OstConfig`: where a target lives and the limits it enforces.

use crate::error::{Result, StorageError};
use crate::journal::record::RECORD_LEN;
use serde::{Deserialize, Serialize};
use std::path::PathBuf;

/// Object files a target holds open unless configured otherwise: 512 descriptors a target,
/// so that a process serving a few dozen targets stays well inside a usual descriptor limit.
pub const OPEN_OBJECTS_MAX_DEFAULT: usize = 256;

fn open_objects_max_default() -> usize {
    OPEN_OBJECTS_MAX_DEFAULT
}

fn mmp_interval_ms_default() -> u64 {
    super::mmp::MMP_INTERVAL_DEFAULT.as_millis() as u64
}

/// One object storage target's settings.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct OstConfig {
    /// The target's index in the file system (`iopath-OST0003` is index 3): one name for it
    /// everywhere — in layouts, on the wire, in `lctl` and in every table — as Lustre has.
    pub index: u32,
    /// The target's directory: `O/` (objects), `journal`, `checkpoint`.
    pub dir: PathBuf,
    /// Journal file on another device (the paper's external journal); `None` keeps it in `dir`.
    pub external_journal: Option<PathBuf>,
    /// Start in sync mode (`obdfilter.*.sync_journal=1`). Lustre ≥ 1.8 defaults to async, the
    /// Spider change; so does iopath.
    pub sync_journal: bool,
    /// Async mode: longest a record waits before its commit starts.
    pub commit_interval_ms: u64,
    /// Most records per commit; in async mode also the count that triggers one.
    pub group_records_max: usize,
    /// Acknowledged-but-uncommitted records allowed at once. Bounds what clients must keep
    /// for replay; writers wait for a commit beyond it.
    pub uncommitted_records_max: usize,
    /// Largest object size.
    pub object_size_max_bytes: u64,
    /// Largest single read or write.
    pub io_size_max_bytes: u64,
    /// Most objects on the target.
    pub objects_max: usize,
    /// Most object files held open at once (each with two descriptors, buffered and
    /// O_DIRECT); the least recently used idle one is closed first and reopened when next
    /// used. Also the operations (and commit syncs) that use a file at once: more wait.
    #[serde(default = "open_objects_max_default")]
    pub open_objects_max: usize,
    /// Journal size that triggers a checkpoint (and an emptied journal).
    pub journal_checkpoint_bytes: u64,
    /// Open object files with an O_DIRECT descriptor too (used for aligned requests).
    pub direct_io: bool,
    /// How often the target's heartbeat is written (multiple-mount protection,
    /// [`crate::ost::mmp`]); a server from another host waits twice this and a second
    /// before it takes a directory whose heartbeat was never marked clean.
    #[serde(default = "mmp_interval_ms_default")]
    pub mmp_interval_ms: u64,
}

impl OstConfig {
    /// Defaults for target `index` in `dir`.
    pub fn new(index: u32, dir: impl Into<PathBuf>) -> OstConfig {
        OstConfig {
            index,
            dir: dir.into(),
            external_journal: None,
            sync_journal: false,
            commit_interval_ms: 1000,
            group_records_max: 64,
            uncommitted_records_max: 1024,
            object_size_max_bytes: 1 << 40,
            io_size_max_bytes: 64 << 20,
            objects_max: 1 << 20,
            open_objects_max: OPEN_OBJECTS_MAX_DEFAULT,
            journal_checkpoint_bytes: 16 << 20,
            direct_io: true,
            mmp_interval_ms: mmp_interval_ms_default(),
        }
    }

    /// Checks that the limits fit together.
    pub fn validate(&self) -> Result<()> {
        let problem = if self.group_records_max == 0 {
            Some("group_records_max must be at least 1".to_string())
        } else if self.uncommitted_records_max < self.group_records_max {
            Some(format!(
                "uncommitted_records_max ({}) must be at least group_records_max ({})",
                self.uncommitted_records_max, self.group_records_max
            ))
        } else if self.io_size_max_bytes == 0
            || self.io_size_max_bytes > crate::engine::TRANSFER_MAX_BYTES as u64
        {
            Some(format!(
                "io_size_max_bytes must be in 1..={}",
                crate::engine::TRANSFER_MAX_BYTES
            ))
        } else if self.journal_checkpoint_bytes < (RECORD_LEN * 2) as u64 {
            Some("journal_checkpoint_bytes is smaller than one transaction".to_string())
        } else if self.objects_max == 0 {
            Some("objects_max must be at least 1".to_string())
        } else if self.open_objects_max == 0 {
            Some("open_objects_max must be at least 1".to_string())
        } else if self.mmp_interval_ms < 100 {
            Some(format!(
                "mmp_interval_ms must be at least 100 (it is {})",
                self.mmp_interval_ms
            ))
        } else {
            None
        };
        match problem {
            None => Ok(()),
            Some(reason) => Err(StorageError::InvalidConfig { reason }),
        }
    }

    /// The journal file.
    pub fn journal_path(&self) -> PathBuf {
        self.external_journal
            .clone()
            .unwrap_or_else(|| self.dir.join("journal"))
    }

    /// The checkpoint file.
    pub fn checkpoint_path(&self) -> PathBuf {
        self.dir.join("checkpoint")
    }

    /// Where the bytes recovery cut and no replay wrote again are recorded
    /// ([`crate::recovery::LostRanges`]).
    pub fn lost_path(&self) -> PathBuf {
        self.dir.join("lost")
    }

    /// The object directory.
    pub fn objects_dir(&self) -> PathBuf {
        self.dir.join("O")
    }
}
