//! Every maximum the metadata service keeps, in one place.
//!
//! The path limits are constants (they are part of what a valid path *is*); the sizes of the
//! namespace are [`MdsLimits`], configurable so tests can reach them.

/// Longest path accepted, in bytes (Linux's `PATH_MAX`).
pub const PATH_LEN_MAX_BYTES: usize = 4096;
/// Longest name of one entry, in bytes (Linux's `NAME_MAX`).
pub const NAME_LEN_MAX_BYTES: usize = 255;
/// Most components in a path, and the deepest a directory may sit below the root.
pub const PATH_DEPTH_MAX: usize = 64;
/// Largest encoded operation-log record. A create over the widest layout (2000 objects) is
/// about 100 KiB of JSON; anything near this limit is a bug or damage.
pub const LOG_RECORD_MAX_BYTES: u32 = 1 << 20;
/// Most entries one readdir reply carries: 1024 entries of at most 255-byte names stay well
/// under the fabric's 1 MiB frame.
pub const READDIR_PAGE_ENTRIES_MAX: u32 = 1024;
/// Most targets the service can be configured with (and the widest layout, Lustre's
/// `LOV_MAX_STRIPE_COUNT`).
pub const TARGETS_MAX: usize = 2000;

/// The sizes of the namespace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MdsLimits {
    /// Most inodes (files and directories, the root included).
    pub inodes_max: u64,
    /// Most entries in one directory.
    pub entries_per_directory_max: u64,
    /// Operation-log records between snapshots: restart replays at most this many records
    /// after loading the snapshot, so restart time stays bounded.
    pub snapshot_every_records: u64,
}

impl Default for MdsLimits {
    fn default() -> Self {
        MdsLimits {
            inodes_max: 1 << 20,
            entries_per_directory_max: 1 << 16,
            snapshot_every_records: 4096,
        }
    }
}
