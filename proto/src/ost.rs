//! The object storage service: its messages (connect, object operations, replay), generated
//! from `ost.proto`, and what else is its wire — its portal, its opcodes, the bound on a
//! CONNECT's list and a target's capacity — here with them, so that the server and its clients
//! (the client library, the fyod) take them from one place and neither links the other.

tonic::include_proto!("iopath.ost");

/// The portal OSS requests go to.
pub const PORTAL: u32 = 46;

/// Most unanswered writes one CONNECT names (`ConnectRequest.unanswered`): a server refuses
/// more, so that what a peer asks it to look through stays bounded, and a client with more in
/// flight names its oldest this many — the rest are left for the server to count lost if it
/// must, which only ever says more is lost, never less.
pub const UNANSWERED_WRITES_MAX: usize = 4096;

/// Opcodes of the OST service.
pub mod opcode {
    /// Open a connection (and learn whether the server is recovering).
    pub const CONNECT: u32 = 1;
    /// Create an object.
    pub const CREATE: u32 = 2;
    /// Write by descriptor (the server pulls).
    pub const WRITE: u32 = 3;
    /// Read by descriptor (the server pushes).
    pub const READ: u32 = 4;
    /// An object's size.
    pub const GETATTR: u32 = 5;
    /// Truncate or extend.
    pub const PUNCH: u32 = 6;
    /// Remove an object.
    pub const DESTROY: u32 = 7;
    /// Commit the target's journal.
    pub const SYNC: u32 = 8;
    /// A client has replayed everything it kept.
    pub const REPLAY_DONE: u32 = 9;
    /// A client is done: commit every target, forget the client.
    pub const DISCONNECT: u32 = 10;
    /// A target's capacity (the file system under it).
    pub const STATFS: u32 = 11;

    /// The opcode's name, lower case (`write`), for per-operation counters.
    pub fn name(opcode: u32) -> Option<&'static str> {
        Some(match opcode {
            CONNECT => "connect",
            CREATE => "create",
            WRITE => "write",
            READ => "read",
            GETATTR => "getattr",
            PUNCH => "punch",
            DESTROY => "destroy",
            SYNC => "sync",
            REPLAY_DONE => "replay_done",
            DISCONNECT => "disconnect",
            STATFS => "statfs",
            _ => return None,
        })
    }
}

/// A storage target's space and inodes, as statvfs(3) reports the file system under it — what
/// the `STATFS` call carries, and what `lfs df` and a mount's `statfs` show: one type for the
/// server that measures it, the fyod that passes it on and the client that sums it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capacity {
    /// Its size.
    pub total_bytes: u64,
    /// Free.
    pub free_bytes: u64,
    /// Free to an unprivileged writer.
    pub available_bytes: u64,
    /// Inodes.
    pub files: u64,
    /// Free inodes.
    pub files_free: u64,
    /// The fragment size its block counts are in.
    pub block_bytes: u32,
    /// The longest file name.
    pub name_max: u32,
}

impl Capacity {
    /// As the wire carries it.
    pub fn to_wire(&self) -> StatfsReply {
        StatfsReply {
            total_bytes: self.total_bytes,
            free_bytes: self.free_bytes,
            available_bytes: self.available_bytes,
            files: self.files,
            files_free: self.files_free,
            block_bytes: self.block_bytes,
            name_max: self.name_max,
        }
    }

    /// From the wire.
    pub fn from_wire(reply: &StatfsReply) -> Capacity {
        Capacity {
            total_bytes: reply.total_bytes,
            free_bytes: reply.free_bytes,
            available_bytes: reply.available_bytes,
            files: reply.files,
            files_free: reply.files_free,
            block_bytes: reply.block_bytes,
            name_max: reply.name_max,
        }
    }
}
