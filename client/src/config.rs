//! [`ClientConfig`], and every maximum the client enforces, in one place.

use std::sync::Arc;

use iopath_fabric::{ChecksumKind, Nid, Node};
use iopath_ost_client::{ClientId, OscStats};

/// RPCs in flight to one target at once (Lustre's `osc.*.max_rpcs_in_flight` default): a
/// large request's packets queue behind these, so a client never floods one server.
pub const RPCS_IN_FLIGHT_PER_TARGET_MAX: usize = 8;

/// The most bytes one `read_at` or `write_at` moves: a read allocates its whole buffer, so
/// a bad length is refused rather than allocated.
pub const REQUEST_BYTES_MAX: u64 = 2 << 30;

/// Asynchronous calls (`iwrite`, `iread`, `cwrite`, `cread`) outstanding on one file at once;
/// beyond it a call fails at once with `TooManyPending` (ASCI Red's I/O nodes bounded their
/// outstanding requests too).
pub const ASYNC_CALLS_PER_FILE_MAX: usize = 64;

/// stdio's default stream buffer (8 KiB, as on ASCI Red's Cougar).
pub const STREAM_BUFFER_DEFAULT_BYTES: usize = 8 << 10;

/// The largest stream buffer `setvbuf` accepts.
pub const STREAM_BUFFER_MAX_BYTES: usize = 256 << 20;

/// Permission bits of files and directories the client creates.
pub const CREATE_MODE: u32 = 0o644;
/// Permission bits of directories the client makes.
pub const MKDIR_MODE: u32 = 0o755;

/// How to connect a client.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    /// The fabric node the client sends from (its memory is where bulk is pulled from).
    pub node: Node,
    /// The metadata service's NID.
    pub mds: Nid,
    /// This client's id at the storage servers (and its fyod): the key of its replay state,
    /// so it must be unique among clients. A restart under the same id tells the servers that
    /// whatever it had not seen committed is gone.
    pub client_id: ClientId,
    /// The checksum its buffer descriptors carry when the client builds them itself (through
    /// a forwarder). Direct-attached writes and reads use the OST client's CRC32.
    pub checksum: ChecksumKind,
    /// Send reads and writes through the fyod at this NID instead of straight to the storage
    /// servers.
    pub forwarder: Option<Nid>,
    /// The node's osc counters (`osc.*.stats`, `osc.*.rpc_stats`), which every client on the
    /// node shares: what this client asks of each storage target is counted there. `None`
    /// counts nothing.
    pub osc_stats: Option<Arc<OscStats>>,
}

impl ClientConfig {
    /// Direct-attached, CRC32, on `node`, with the metadata service at `mds`.
    pub fn new(node: Node, mds: Nid, client_id: impl Into<ClientId>) -> ClientConfig {
        ClientConfig {
            node,
            mds,
            client_id: client_id.into(),
            checksum: ChecksumKind::Crc32,
            forwarder: None,
            osc_stats: None,
        }
    }
}
