//! The crate's one error type, and the errno each variant travels as.

use std::path::PathBuf;

use iopath_fabric::FabricError;

/// The errno values the metadata service answers with, Linux's numbers. The fabric defines
/// the ones its own layer uses; the namespace adds its own.
pub mod errno {
    pub use iopath_fabric::frame::status::errno::{
        EEXIST, EINVAL, EIO, EISDIR, ENAMETOOLONG, ENOENT, ENOSPC, ENOTDIR, ENOTEMPTY, EOPNOTSUPP,
        EPERM, EPROTO,
    };
    /// Too many links (Linux's number).
    pub const EMLINK: u32 = 31;
}

/// Everything the metadata service can report: namespace outcomes a caller acts on, refused
/// input, and what its log, snapshot and disk do.
#[derive(Debug, thiserror::Error)]
pub enum MdsError {
    /// A path, or one of its parent directories, does not exist.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path as asked.
        path: String,
    },
    /// No inode has this number (it was removed; numbers are never used again).
    #[error("no inode numbered {ino}: it was removed")]
    NoSuchInode {
        /// The number asked for.
        ino: u64,
    },
    /// An operation POSIX does not permit on this kind of inode (a hard link to a
    /// directory).
    #[error("not permitted: {why}")]
    NotPermitted {
        /// What was refused.
        why: String,
    },
    /// An inode has as many names as it may.
    #[error("too many links: an inode may have at most {max} names")]
    TooManyLinks {
        /// The maximum.
        max: u32,
    },
    /// The name is already taken.
    #[error("{path}: already exists")]
    Exists {
        /// The path as asked.
        path: String,
    },
    /// A component used as a directory is a file.
    #[error("{path}: not a directory")]
    NotADirectory {
        /// The path (or the prefix of it) that is not a directory.
        path: String,
    },
    /// A directory where the operation needs a file.
    #[error("{path}: is a directory")]
    IsADirectory {
        /// The path as asked.
        path: String,
    },
    /// A directory that must be empty is not.
    #[error("{path}: directory not empty")]
    NotEmpty {
        /// The path as asked.
        path: String,
    },
    /// A path that does not parse: not absolute, an empty component, `.` or `..`, a NUL.
    #[error("invalid path {path:?}: {why}")]
    InvalidPath {
        /// The path as given (cut to its first 128 bytes).
        path: String,
        /// What is wrong with it.
        why: &'static str,
    },
    /// A path, name or depth over its limit.
    #[error("path {path:?} is too long: {what} is {actual}, the maximum is {max}")]
    NameTooLong {
        /// The path as given (cut to its first 128 bytes).
        path: String,
        /// Which limit.
        what: &'static str,
        /// The value found.
        actual: usize,
        /// The limit.
        max: usize,
    },
    /// Stripe values that cannot be honoured.
    #[error("invalid stripe: {why}")]
    InvalidStripe {
        /// What is wrong, in `lfs setstripe`'s terms.
        why: String,
    },
    /// Any other argument the operation cannot take (a mode, a rename into itself, the root).
    #[error("invalid argument: {why}")]
    InvalidArgument {
        /// What is wrong.
        why: String,
    },
    /// A configured maximum (inodes, entries in a directory, object ids) was reached.
    #[error("limit reached: {what} (maximum {max})")]
    LimitReached {
        /// Which limit.
        what: &'static str,
        /// Its value.
        max: u64,
    },
    /// An opcode the service does not have.
    #[error("the metadata service has no opcode {opcode}")]
    UnknownOpcode {
        /// The opcode sent.
        opcode: u32,
    },
    /// A request or reply body that does not decode, or decodes to something impossible.
    #[error("malformed {what}: {why}")]
    Malformed {
        /// Which message.
        what: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// The operation log is damaged before its end: acknowledged operations lie beyond the
    /// damage, so the service refuses to start rather than lose them.
    #[error("operation log {path} is corrupt at byte {offset}: {reason}")]
    LogCorrupt {
        /// The log file.
        path: PathBuf,
        /// Where the damage starts.
        offset: u64,
        /// What was found there.
        reason: String,
    },
    /// The snapshot does not verify or does not describe a consistent namespace.
    #[error("snapshot {path} is unusable: {reason}")]
    SnapshotCorrupt {
        /// The snapshot file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A file operation on the service's directory failed.
    #[error("{action} {path}: {source}")]
    Io {
        /// What was being done ("append to", "fsync", "rename").
        action: &'static str,
        /// On which file.
        path: PathBuf,
        /// What the OS said.
        #[source]
        source: std::io::Error,
    },
    /// A write to the log failed earlier; the log's state on disk is unknown, so no more
    /// changes are accepted until the service restarts and replays it.
    #[error("the metadata log failed earlier ({why}); restart the service to recover")]
    Failed {
        /// The first failure.
        why: String,
    },
    /// The fabric could not deliver a request, or the service answered with an error
    /// (`FabricError::Remote` carries its errno and message).
    #[error(transparent)]
    Fabric(#[from] FabricError),
}

impl From<iopath_layout::LayoutError> for MdsError {
    /// Stripe values or a layout the rules refuse: an invalid argument, in `lfs`'s words.
    fn from(error: iopath_layout::LayoutError) -> MdsError {
        MdsError::InvalidStripe {
            why: error.to_string(),
        }
    }
}

impl MdsError {
    /// The errno a reply carries for this error.
    pub fn errno(&self) -> u32 {
        use errno::*;
        match self {
            MdsError::NotFound { .. } | MdsError::NoSuchInode { .. } => ENOENT,
            MdsError::NotPermitted { .. } => EPERM,
            MdsError::TooManyLinks { .. } => EMLINK,
            MdsError::Exists { .. } => EEXIST,
            MdsError::NotADirectory { .. } => ENOTDIR,
            MdsError::IsADirectory { .. } => EISDIR,
            MdsError::NotEmpty { .. } => ENOTEMPTY,
            MdsError::InvalidPath { .. }
            | MdsError::InvalidStripe { .. }
            | MdsError::InvalidArgument { .. } => EINVAL,
            MdsError::NameTooLong { .. } => ENAMETOOLONG,
            MdsError::LimitReached { .. } => ENOSPC,
            MdsError::Malformed { .. } => EPROTO,
            MdsError::UnknownOpcode { .. } => EOPNOTSUPP,
            MdsError::LogCorrupt { .. }
            | MdsError::SnapshotCorrupt { .. }
            | MdsError::Io { .. }
            | MdsError::Failed { .. } => EIO,
            MdsError::Fabric(error) => error.errno(),
        }
    }

    pub(crate) fn io(action: &'static str, path: &std::path::Path, source: std::io::Error) -> Self {
        MdsError::Io {
            action,
            path: path.to_path_buf(),
            source,
        }
    }
}

/// The crate's result type.
pub type Result<T, E = MdsError> = std::result::Result<T, E>;
