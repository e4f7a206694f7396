//! [`ClientError`], the crate's one error type: what the namespace, the layout, the storage
//! servers and the caller's own arguments can say no with.

use iopath_fabric::FabricError;
use iopath_fabric::frame::status::errno;
use iopath_forwarder::ForwarderError;
use iopath_mds::MdsError;

use crate::layout::LayoutError;

/// Everything a client call can fail with. A variant that wraps another error says it in its
/// own message (callers often keep only the message) and also offers it as its
/// [`std::error::Error::source`]; the `iopath` binary prints a chain without repeating a cause
/// a message already says.
#[derive(Debug, thiserror::Error)]
pub enum ClientError {
    /// Stripe values or an extent the layout cannot take (checked before any round trip).
    #[error(transparent)]
    Layout(#[from] LayoutError),
    /// A path, or one of its parent directories, does not exist.
    #[error("{path}: no such file or directory")]
    NotFound {
        /// The path as asked.
        path: String,
    },
    /// The name is already taken.
    #[error("{path}: file exists")]
    Exists {
        /// The path as asked.
        path: String,
    },
    /// A directory where the call needs a regular file.
    #[error("{path}: is a directory")]
    IsADirectory {
        /// The path as asked.
        path: String,
    },
    /// A path component used as a directory is a file.
    #[error("{path}: not a directory")]
    NotADirectory {
        /// The path as asked.
        path: String,
    },
    /// A directory that must be empty is not.
    #[error("{path}: directory not empty")]
    NotEmpty {
        /// The path as asked.
        path: String,
    },
    /// The metadata service refused the arguments (a path that does not parse, stripe values
    /// it cannot honour, a rename into itself); `why` is its sentence.
    #[error("{path}: invalid argument: {why}")]
    Invalid {
        /// The path as asked.
        path: String,
        /// What the service said.
        why: String,
    },
    /// Any other failure of a metadata call (limits, a failed log, an unreachable service).
    #[error("metadata service, {path}: {source}")]
    Metadata {
        /// The path as asked.
        path: String,
        /// What the metadata client said.
        #[source]
        source: MdsError,
    },
    /// A call through the fyod failed (the fyod's own sentence, or the storage's it passes
    /// on).
    #[error("through the fyod, {path}: {source}")]
    Forwarder {
        /// The file's path.
        path: String,
        /// What the fyod client said.
        #[source]
        source: ForwarderError,
    },
    /// A storage-server call for one object failed (after the OST client's own reconnect and
    /// replay attempts).
    #[error("{op} of object {object} on OST{target:04x}: {source}")]
    Storage {
        /// Which call ("write", "read", "create", ...).
        op: &'static str,
        /// The target index.
        target: u32,
        /// The object id on it.
        object: u64,
        /// What the fabric or the server said.
        #[source]
        source: FabricError,
    },
    /// A storage server restarted and would not take back writes it had acknowledged to this
    /// client (the client was evicted from its recovery): their bytes are lost.
    #[error(
        "the OSS at {server} evicted this client: {count} acknowledged but uncommitted writes were lost"
    )]
    WritesLost {
        /// The server's NID, as text.
        server: String,
        /// How many writes.
        count: usize,
    },
    /// Ending the session with a storage server failed: writes it acknowledged may not be
    /// committed (after a restart of the server, they may be lost).
    #[error(
        "disconnect from the OSS at {server}: acknowledged writes may not be committed: {source}"
    )]
    Disconnect {
        /// The server's NID, as text.
        server: String,
        /// What the fabric or the server said.
        #[source]
        source: FabricError,
    },
    /// Connecting to a storage server failed.
    #[error("connect to the OSS at {nid}: {source}")]
    Connect {
        /// The server's NID, as text.
        nid: String,
        /// What the fabric said.
        #[source]
        source: FabricError,
    },
    /// A layout names a target this client has no connection for (the metadata service's
    /// target list changed since the client connected).
    #[error("the layout names OST{target:04x}, which this client does not know")]
    UnknownTarget {
        /// The target index.
        target: u32,
    },
    /// A request larger than this client sends in one call.
    #[error("{what} of {bytes} bytes exceeds the maximum of {max_bytes}")]
    TooLarge {
        /// Which length.
        what: &'static str,
        /// The length asked for.
        bytes: u64,
        /// The limit.
        max_bytes: u64,
    },
    /// An asynchronous-call handle this file did not issue.
    #[error(
        "handle {handle} was not issued by this file (file {file}; the handle is for file {handle_file})"
    )]
    UnknownHandle {
        /// The handle's sequence number.
        handle: u64,
        /// The file it belongs to.
        handle_file: u64,
        /// The file it was presented to.
        file: u64,
    },
    /// Too many asynchronous calls outstanding on one file; `iowait` some first.
    #[error("{pending} asynchronous calls are already outstanding on this file (maximum {max})")]
    TooManyPending {
        /// How many are outstanding.
        pending: usize,
        /// The limit.
        max: usize,
    },
    /// The task running a file's asynchronous calls stopped before answering (a panic in it,
    /// or the runtime shutting down).
    #[error("the asynchronous I/O worker of file {file} stopped before answering")]
    WorkerStopped {
        /// The file's number.
        file: u64,
    },
    /// A task sending one request's RPCs stopped without an answer (a panic in it, or the
    /// runtime shutting down).
    #[error("the task sending a {what} stopped: {why}")]
    TaskStopped {
        /// Which call.
        what: &'static str,
        /// What the runtime said.
        why: String,
    },
    /// A reply that could not have been sent by a correct server.
    #[error("malformed {what}: {why}")]
    Malformed {
        /// Which reply.
        what: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// Starting or restarting a piece of an in-process stack (`iopath_stack::testing`) failed.
    #[error("test stack: {what}: {why}")]
    Setup {
        /// Which step.
        what: &'static str,
        /// What failed.
        why: String,
    },
    /// Something this build or configuration cannot do.
    #[error("unsupported: {0}")]
    Unsupported(String),
}

impl From<iopath_ost_client::OstClientError> for ClientError {
    fn from(error: iopath_ost_client::OstClientError) -> ClientError {
        use iopath_ost_client::OstClientError as E;
        match error {
            E::UnknownTarget(layout) => ClientError::Layout(layout),
            E::Connect { server, source } => ClientError::Connect {
                nid: server.to_string(),
                source,
            },
            E::Disconnect { server, source } => ClientError::Disconnect {
                server: server.to_string(),
                source,
            },
        }
    }
}

impl ClientError {
    /// The errno a POSIX call that met this error returns (what a mount answers the kernel):
    /// the path errors as their names say; a server's or a fyod's refusal with the errno it
    /// sent (EIO for bytes a recovery lost, ENOSPC, ...); writes a server dropped after
    /// evicting this client ESTALE, as Lustre's evicted clients see; a server that cannot be
    /// reached ETIMEDOUT or EHOSTUNREACH as the fabric says; anything else EIO.
    pub fn errno(&self) -> u32 {
        match self {
            ClientError::NotFound { .. } => errno::ENOENT,
            ClientError::Exists { .. } => errno::EEXIST,
            ClientError::IsADirectory { .. } => errno::EISDIR,
            ClientError::NotADirectory { .. } => errno::ENOTDIR,
            ClientError::NotEmpty { .. } => errno::ENOTEMPTY,
            ClientError::Invalid { .. } | ClientError::Layout(_) => errno::EINVAL,
            ClientError::TooLarge { .. } => errno::EFBIG,
            ClientError::WritesLost { .. } => errno::ESTALE,
            ClientError::Unsupported(_) => errno::EOPNOTSUPP,
            ClientError::Metadata { source, .. } => nonzero(source.errno()),
            ClientError::Forwarder { source, .. } => nonzero(source.errno()),
            ClientError::Storage { source, .. }
            | ClientError::Connect { source, .. }
            | ClientError::Disconnect { source, .. } => nonzero(source.errno()),
            _ => errno::EIO,
        }
    }

    /// A fyod error for `path`, turned into the variant a caller acts on when it carries an
    /// errno that has one (the fyod passes the metadata service's on).
    pub(crate) fn from_fyod(path: &str, source: ForwarderError) -> ClientError {
        let path = path.to_owned();
        match source.errno() {
            errno::ENOENT => ClientError::NotFound { path },
            errno::EEXIST => ClientError::Exists { path },
            iopath_mds::error::errno::EISDIR => ClientError::IsADirectory { path },
            iopath_mds::error::errno::ENOTDIR => ClientError::NotADirectory { path },
            _ => ClientError::Forwarder { path, source },
        }
    }

    /// A metadata error for `path`, turned into the variant a caller acts on when the service
    /// answered with an errno that has one.
    pub(crate) fn from_mds(path: &str, source: MdsError) -> ClientError {
        let path = path.to_owned();
        let message = match &source {
            MdsError::Fabric(FabricError::Remote { message, .. }) => message.clone(),
            other => other.to_string(),
        };
        match source.errno() {
            errno::ENOENT => ClientError::NotFound { path },
            errno::EEXIST => ClientError::Exists { path },
            iopath_mds::error::errno::EISDIR => ClientError::IsADirectory { path },
            iopath_mds::error::errno::ENOTDIR => ClientError::NotADirectory { path },
            iopath_mds::error::errno::ENOTEMPTY => ClientError::NotEmpty { path },
            errno::EINVAL => ClientError::Invalid { path, why: message },
            _ => ClientError::Metadata { path, source },
        }
    }
}

/// An errno to hand on: EIO where the source had none to give.
fn nonzero(code: u32) -> u32 {
    if code == 0 { errno::EIO } else { code }
}
