//! The crate's one error type, and the errno each variant travels as.

use iopath_fabric::rpc::ServiceError;
use iopath_fabric::{FabricError, Nid};
use iopath_mds::MdsError;

/// The errno values the fyod answers with (Linux's numbers).
pub mod errno {
    pub use iopath_fabric::frame::status::errno::{
        EAGAIN, EBADF, EBADMSG, EEXIST, EFBIG, EINVAL, EIO, ENOENT, ENOTCONN, EOPNOTSUPP, EPROTO,
        ESHUTDOWN, EUSERS,
    };
}

/// Everything the fyod and its clients report.
#[derive(Debug, thiserror::Error)]
pub enum ForwarderError {
    /// The fabric failed, or a peer answered with an error (`FabricError::Remote` carries its
    /// errno and sentence).
    #[error(transparent)]
    Fabric(#[from] FabricError),
    /// The metadata service refused or failed.
    #[error("metadata service: {0}")]
    Mds(#[from] MdsError),
    /// A layout or an extent the stripe arithmetic refuses.
    #[error("layout: {0}")]
    Layout(#[from] iopath_layout::LayoutError),
    /// A handle this fyod did not give this client, or one already closed.
    #[error("no open file with handle {handle} for {client}")]
    NoSuchHandle {
        /// The handle named.
        handle: u64,
        /// The node that named it.
        client: Nid,
    },
    /// A handle of a compute node's earlier connection: the node connected again under its id
    /// (it restarted without disconnecting), and the fyod closed what the earlier one had open.
    #[error(
        "handle {handle} was closed when compute node {client} connected again (it restarted \
         without disconnecting); open the file again"
    )]
    HandleOfEarlierConnection {
        /// The handle named.
        handle: u64,
        /// The compute node's id.
        client: u64,
    },
    /// A request with a value the fyod cannot act on.
    #[error("invalid {what}: {why}")]
    Invalid {
        /// Which value.
        what: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// A message that does not decode, or lacks a field it needs.
    #[error("malformed {what}: {why}")]
    Malformed {
        /// Which message.
        what: &'static str,
        /// What is wrong with it.
        why: String,
    },
    /// A compute node the fyod does not know (it never connected, or the fyod restarted since).
    #[error(
        "client {client} at {source_nid} has not connected to this fyod (connect again: the fyod may have restarted)"
    )]
    NotConnected {
        /// The client id the request named.
        client: u64,
        /// Where it came from.
        source_nid: iopath_fabric::Nid,
    },
    /// The fyod already serves its maximum of compute nodes.
    #[error("this fyod serves at most {max} compute nodes; start another fyod")]
    TooManyClients {
        /// The configured maximum.
        max: u32,
    },
    /// A bounded queue or table of the fyod is full.
    #[error("limit reached: {what} (maximum {max})")]
    LimitReached {
        /// Which limit.
        what: &'static str,
        /// Its value.
        max: u64,
    },
    /// Bytes that did not match the checksum their owner gave.
    #[error("checksum mismatch on {what}: expected {expected:#010x}, got {actual:#010x}")]
    ChecksumMismatch {
        /// What was checked.
        what: &'static str,
        /// What the owner said.
        expected: u32,
        /// What the bytes hash to.
        actual: u32,
    },
    /// A call on a handle whose earlier call may or may not have reached the fyod: the
    /// handle's call order can no longer be kept, so it refuses further calls.
    #[error(
        "handle {handle} is unusable: an earlier call failed in transit ({why}); reopen the file"
    )]
    HandleBroken {
        /// The handle.
        handle: u64,
        /// The earlier failure.
        why: String,
    },
    /// Acknowledged writes to one of the file's objects are gone: a storage server that
    /// restarted would not take them back (it evicted this fyod in its recovery, or a piece's
    /// memory was let go before its replay), as the fyod's pinger found.
    #[error(
        "{count} acknowledged writes to object {object:#x} on OST{target:04x} were lost when \
         {server} restarted (it evicted this fyod, or a piece's memory was let go before its \
         replay); rewrite the file"
    )]
    WritesLost {
        /// The storage server.
        server: Nid,
        /// The target.
        target: u32,
        /// The object.
        object: u64,
        /// How many of its writes.
        count: usize,
    },
}

impl From<iopath_ost_client::OstClientError> for ForwarderError {
    /// The fabric's or the server's own error, which names the server; an unknown target is
    /// a layout error.
    fn from(error: iopath_ost_client::OstClientError) -> ForwarderError {
        use iopath_ost_client::OstClientError as E;
        match error {
            E::UnknownTarget(layout) => ForwarderError::Layout(layout),
            E::Connect { source, .. } | E::Disconnect { source, .. } => {
                ForwarderError::Fabric(source)
            }
        }
    }
}

impl ForwarderError {
    /// The errno a reply carries for this error (or carried, for a remote error).
    pub fn errno(&self) -> u32 {
        use errno::*;
        match self {
            ForwarderError::Fabric(error) => error.errno(),
            ForwarderError::Mds(error) => error.errno(),
            ForwarderError::Layout(_) | ForwarderError::Invalid { .. } => EINVAL,
            ForwarderError::NoSuchHandle { .. }
            | ForwarderError::HandleOfEarlierConnection { .. }
            | ForwarderError::HandleBroken { .. } => EBADF,
            ForwarderError::Malformed { .. } => EPROTO,
            ForwarderError::TooManyClients { .. } => EUSERS,
            ForwarderError::NotConnected { .. } => ENOTCONN,
            ForwarderError::LimitReached { .. } => EAGAIN,
            ForwarderError::ChecksumMismatch { .. } => EBADMSG,
            // As Lustre's fsync after an eviction: the data did not make it.
            ForwarderError::WritesLost { .. } => EIO,
        }
    }

    pub(crate) fn invalid(what: &'static str, why: impl Into<String>) -> ForwarderError {
        ForwarderError::Invalid {
            what,
            why: why.into(),
        }
    }

    pub(crate) fn malformed(what: &'static str, why: impl Into<String>) -> ForwarderError {
        ForwarderError::Malformed {
            what,
            why: why.into(),
        }
    }
}

impl From<ForwarderError> for ServiceError {
    fn from(error: ForwarderError) -> Self {
        // A remote error is passed on with its own sentence, not wrapped twice.
        let message = match &error {
            ForwarderError::Fabric(FabricError::Remote { peer, message, .. }) => {
                format!("{peer}: {message}")
            }
            other => other.to_string(),
        };
        ServiceError::new(error.errno(), message)
    }
}

/// The crate's result type.
pub type Result<T, E = ForwarderError> = std::result::Result<T, E>;
