//! The crate's one error type: what went wrong, in the storage server's own terms.

use crate::ids::ObjectId;
use std::path::PathBuf;

/// Everything an OST, its journal, its engines or the benchmark can report.
///
/// Variants name the domain fact ("no such object", "journal corrupt at offset N") so that the RPC
/// layer can map each one to a reply status, and a reader of a log line knows what to check.
#[derive(Debug, thiserror::Error)]
pub enum StorageError {
    /// The object does not exist on this target.
    #[error("OST{target:04x}: no such object {object}")]
    NoSuchObject {
        /// Target index.
        target: u32,
        /// The object asked for.
        object: ObjectId,
    },
    /// `create` of an object that already exists.
    #[error("OST{target:04x}: object {object} already exists")]
    ObjectExists {
        /// Target index.
        target: u32,
        /// The object asked for.
        object: ObjectId,
    },
    /// A write or truncate would make the object larger than the target allows.
    #[error(
        "OST{target:04x}: object {object} would end at {end_bytes} bytes, past the maximum object size of {max_bytes} bytes"
    )]
    ObjectTooLarge {
        /// Target index.
        target: u32,
        /// The object asked for.
        object: ObjectId,
        /// Where the request would end (offset + length), saturated at `u64::MAX`.
        end_bytes: u64,
        /// The configured `object_size_max_bytes`.
        max_bytes: u64,
    },
    /// One request asks to move more bytes than the target accepts in one operation.
    #[error(
        "OST{target:04x}: request of {length_bytes} bytes exceeds the limit of {max_bytes} bytes"
    )]
    RequestTooLarge {
        /// Target index.
        target: u32,
        /// Requested length.
        length_bytes: u64,
        /// The configured limit.
        max_bytes: u64,
    },
    /// A write of zero bytes (it would change nothing and has no extent to journal).
    #[error("OST{target:04x}: empty write to object {object}")]
    EmptyWrite {
        /// Target index.
        target: u32,
        /// The object asked for.
        object: ObjectId,
    },
    /// The target holds as many objects as it is configured to.
    #[error("OST{target:04x}: object table full ({max} objects)")]
    TooManyObjects {
        /// Target index.
        target: u32,
        /// The configured `objects_max`.
        max: usize,
    },
    /// Another process serves the directory (multiple-mount protection, `ost::mmp`): two
    /// servers on one directory would recover and overwrite each other's data.
    #[error(
        "{dir} ({what}) is in use by another server: {holder}; stop that one first, or give this one another directory"
    )]
    DirectoryInUse {
        /// The directory.
        dir: PathBuf,
        /// What it is: a target's name, or a storage server's directory.
        what: String,
        /// Who holds it, as its lock file or heartbeat says.
        holder: String,
    },
    /// A new client, and the server already records its maximum of clients.
    #[error("this server already serves its maximum of {max} clients")]
    TooManyClients {
        /// The configured maximum (`ServiceConfig::clients_max`).
        max: usize,
    },
    /// A request speaks for a client that connected from another NID: a peer may not replay,
    /// end the replay of, connect or disconnect another client.
    #[error(
        "client {client} is connected from {bound}; a request from {claimed} may not act for it"
    )]
    ClientOfAnotherNid {
        /// The client id the request claimed.
        client: u64,
        /// The NID that client connected from.
        bound: iopath_fabric::Nid,
        /// The NID the request came from.
        claimed: iopath_fabric::Nid,
    },
    /// No target with this index on this server.
    #[error("no OST with index {index} on this server ({count} targets)")]
    NoSuchTarget {
        /// The index asked for.
        index: u32,
        /// How many targets the server hosts.
        count: usize,
    },
    /// A replayed request's transno is not above the last one executed.
    #[error(
        "OST{target:04x}: replay transno {transno} is not above the last executed transno {last}"
    )]
    ReplayOutOfOrder {
        /// Target index.
        target: u32,
        /// The replay's transno.
        transno: u64,
        /// The highest transno already executed.
        last: u64,
    },
    /// The target has stopped after a failure it cannot vouch past (an fsync error): every later
    /// operation gets this error instead of a pretended success.
    #[error("OST{target:04x} stopped: {reason}")]
    TargetStopped {
        /// Target index.
        target: u32,
        /// Why it stopped (the first failure).
        reason: String,
    },
    /// An operator's fail point failed the step (see `iopath_fabric::fail`).
    #[error("OST{target:04x}: fail point {site} returned errno {code}")]
    Injected {
        /// Target index.
        target: u32,
        /// The site's name.
        site: &'static str,
        /// The errno it returned.
        code: u32,
    },
    /// A configuration value is out of range.
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// The journal is damaged before its end: throwing the rest away would lose committed
    /// transactions, so the target refuses to start.
    #[error("journal {path} is corrupt at offset {offset}: {reason}; refusing to start")]
    JournalCorrupt {
        /// The journal file.
        path: PathBuf,
        /// Byte offset of the first bad record.
        offset: u64,
        /// What was wrong with it.
        reason: String,
    },
    /// The checkpoint (last committed transno and object table) cannot be trusted.
    #[error("checkpoint {path} is corrupt: {reason}; refusing to start")]
    CheckpointCorrupt {
        /// The checkpoint file.
        path: PathBuf,
        /// What was wrong with it.
        reason: String,
    },
    /// Recovery found an object whose file is shorter than its committed size: committed data is
    /// missing, which the journal cannot repair.
    #[error(
        "OST{target:04x}: object {object} is {file_bytes} bytes on disk but {committed_bytes} bytes were committed; refusing to start"
    )]
    CommittedDataMissing {
        /// Target index.
        target: u32,
        /// The object.
        object: ObjectId,
        /// Committed size from the journal.
        committed_bytes: u64,
        /// Size found on disk.
        file_bytes: u64,
    },
    /// A read or a size touched bytes that were acknowledged to a client and then dropped when
    /// the server restarted: no client replayed them (the one that held them was evicted, or
    /// came back without them). The object is marked until they are written again, the object
    /// is cut before them, or it is destroyed.
    #[error(
        "OST{target:04x}: object {object} lost {bytes} acknowledged bytes at {ranges} when the server restarted: no client replayed them (the one that held them was evicted or came back without them); rewrite or remove the file"
    )]
    DataLost {
        /// Target index.
        target: u32,
        /// The object.
        object: ObjectId,
        /// Bytes lost in the ranges below.
        bytes: u64,
        /// The lost ranges the request touched, as `[start, end)` byte offsets in the object.
        ranges: String,
    },
    /// A directory does not look like an OST (objects without a checkpoint, a journal of another
    /// target, ...).
    #[error("{path} is not a usable OST directory: {reason}")]
    NotATarget {
        /// The directory or file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
    /// An I/O call failed; `op` says which step.
    #[error("{op} {path}: {source}")]
    Io {
        /// The step that failed ("write object", "fsync journal", ...).
        op: &'static str,
        /// The file it was working on.
        path: PathBuf,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
}

impl StorageError {
    /// Wraps an I/O error with the step and the file.
    pub fn io(op: &'static str, path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        StorageError::Io {
            op,
            path: path.into(),
            source,
        }
    }
}

/// Results in this crate.
pub type Result<T, E = StorageError> = std::result::Result<T, E>;
