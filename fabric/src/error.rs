//! The fabric's one error type, and the wire form of an error that answers an RPC.
//!
//! It sits just above names, checksums and status codes, whose own small errors it takes in,
//! and below everything that can fail.

use bytes::Bytes;
use prost::Message as _;

use crate::checksum::ChecksumKind;
use crate::nid::{Nid, NidError};
use crate::status::errno;

/// Everything that can go wrong below the RPC bodies: malformed input, missing peers,
/// checksums, limits, timeouts.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FabricError {
    /// A NID or network name that does not parse.
    #[error("bad NID {text:?}: {why}")]
    BadNid {
        /// What was given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// A frame that does not decode; the connection it came on is closed.
    #[error("malformed frame: {why}")]
    MalformedFrame {
        /// What is wrong with it.
        why: &'static str,
    },
    /// A length larger than its configured maximum, refused before anything was allocated.
    #[error("{what} of {bytes} bytes exceeds the maximum of {max_bytes}")]
    TooLarge {
        /// Which length.
        what: &'static str,
        /// The length asked for.
        bytes: u64,
        /// The configured maximum.
        max_bytes: u64,
    },
    /// A checksum code this build does not know.
    #[error("unsupported checksum code {code}")]
    UnsupportedChecksum {
        /// The code received.
        code: u32,
    },
    /// A checksum kind this node was configured not to accept.
    #[error("checksum {kind} is not accepted by this node")]
    ChecksumRefused {
        /// The kind offered.
        kind: ChecksumKind,
    },
    /// Bulk data whose checksum did not match, after every allowed resend.
    #[error(
        "checksum mismatch on bulk from {peer} region {region}: expected {expected:#010x}, \
         got {actual:#010x} after {attempts} attempts"
    )]
    ChecksumMismatch {
        /// Where the bytes came from.
        peer: Nid,
        /// The region they belong to.
        region: u64,
        /// What the sender said.
        expected: u32,
        /// What arrived.
        actual: u32,
        /// How many times the data was asked for.
        attempts: u32,
    },
    /// No interface of this node is on the target's network, and no live route leads there.
    #[error("no route to {target}: {why}")]
    NoRoute {
        /// The destination.
        target: Nid,
        /// Why: no interface and no route to its network, or every route is down.
        why: String,
    },
    /// The peer could not be reached (connection refused, not registered, closed).
    #[error("peer {peer} unreachable: {why}")]
    Unreachable {
        /// The peer.
        peer: Nid,
        /// What the transport said.
        why: String,
    },
    /// A region id the owner does not have (never registered, or already released).
    #[error("no region {region} on {owner}")]
    NoSuchRegion {
        /// The owner asked.
        owner: Nid,
        /// The region asked for.
        region: u64,
    },
    /// A descriptor or chunk outside its region, or the wrong direction for the region.
    #[error("bad bulk access to region {region}: {why}")]
    BadBulkAccess {
        /// The region.
        region: u64,
        /// What is wrong.
        why: String,
    },
    /// A configured limit on a count (regions, peers, requests) was reached.
    #[error("limit reached: {what} (maximum {max})")]
    LimitReached {
        /// Which limit.
        what: &'static str,
        /// Its value.
        max: u64,
    },
    /// No answer within the deadline, after every allowed resend.
    #[error("timed out waiting for {what} from {peer} after {attempts} attempts")]
    Timeout {
        /// What was awaited.
        what: &'static str,
        /// From whom.
        peer: Nid,
        /// How many times it was sent.
        attempts: u32,
    },
    /// A route that cannot be added or parsed.
    #[error("bad route: {why}")]
    BadRoute {
        /// What is wrong.
        why: String,
    },
    /// The remote end executed the RPC and answered with an error.
    #[error("{peer} answered error {code}: {message}")]
    Remote {
        /// Who answered.
        peer: Nid,
        /// An errno value.
        code: u32,
        /// Its explanation.
        message: String,
    },
    /// An operator's fail point failed the step (see [`crate::fail`]).
    #[error("fail point {site} returned errno {code}")]
    Injected {
        /// The site's name.
        site: &'static str,
        /// The errno it returned.
        code: u32,
    },
    /// The node is shutting down.
    #[error("node is shutting down")]
    ShuttingDown,
    /// An I/O error from a transport's socket.
    #[error("transport I/O error: {0}")]
    Io(String),
}

impl From<std::io::Error> for FabricError {
    fn from(e: std::io::Error) -> Self {
        FabricError::Io(e.to_string())
    }
}

impl From<NidError> for FabricError {
    fn from(e: NidError) -> Self {
        match e {
            NidError::Text { text, why } => FabricError::BadNid { text, why },
            NidError::Wire { why } => FabricError::MalformedFrame { why },
        }
    }
}

/// How a node answers a request for a portal no service is registered on (`EOPNOTSUPP`).
pub(crate) const NO_SERVICE: &str = "no service on portal";

impl FabricError {
    /// True when the peer answered that no service listens on the portal asked for: the peer
    /// is up but its service is not (yet, or any more) — a server starting or stopping, which
    /// a client may wait out as it waits out a refused connection.
    pub fn is_no_service(&self) -> bool {
        matches!(self, FabricError::Remote { code, message, .. }
            if *code == errno::EOPNOTSUPP && message.contains(NO_SERVICE))
    }

    /// The errno an RPC reply carries for this error.
    pub fn errno(&self) -> u32 {
        use errno::*;
        match self {
            FabricError::BadNid { .. } | FabricError::MalformedFrame { .. } => EPROTO,
            FabricError::BadRoute { .. } => EINVAL,
            FabricError::TooLarge { .. } => EFBIG,
            FabricError::UnsupportedChecksum { .. } | FabricError::ChecksumRefused { .. } => {
                EOPNOTSUPP
            }
            FabricError::ChecksumMismatch { .. } => EBADMSG,
            FabricError::NoRoute { .. } | FabricError::Unreachable { .. } => EHOSTUNREACH,
            FabricError::NoSuchRegion { .. } => ENOENT,
            FabricError::BadBulkAccess { .. } => ERANGE,
            FabricError::LimitReached { .. } => EBUSY,
            FabricError::Timeout { .. } => ETIMEDOUT,
            FabricError::ShuttingDown => ESHUTDOWN,
            FabricError::Io(_) => EIO,
            FabricError::Remote { code, .. } | FabricError::Injected { code, .. } => *code,
        }
    }
}

/// Encodes the body of an error reply: an errno and a sentence (`proto/fabric.proto`'s
/// `RpcError`). Both the node (answering for a portal with no service) and the RPC server
/// send these.
pub(crate) fn encode_error_body(code: u32, message: &str) -> Bytes {
    iopath_proto::fabric::RpcError {
        code,
        message: message.to_owned(),
    }
    .encode_to_vec()
    .into()
}

/// Decodes the body of an error reply from `peer`; a body that does not decode still yields
/// the code.
pub(crate) fn decode_error_body(peer: Nid, code: u32, body: &[u8]) -> FabricError {
    let message = iopath_proto::fabric::RpcError::decode(body)
        .map(|e| e.message)
        .unwrap_or_else(|_| "(undecodable error body)".into());
    FabricError::Remote {
        peer,
        code,
        message,
    }
}
