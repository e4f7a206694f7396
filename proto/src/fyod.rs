//! The fyod I/O forwarder: its messages (opens, reads and writes by descriptor, MUNIX
//! tokens), generated from `fyod.proto`, with its portal and opcodes.

tonic::include_proto!("iopath.fyod");

/// The portal fyod requests go to.
pub const PORTAL: u32 = 50;

/// Opcodes of the fyod service.
pub mod opcode {
    /// A compute node introduces itself.
    pub const CONNECT: u32 = 1;
    /// A compute node leaves.
    pub const DISCONNECT: u32 = 2;
    /// Open (or create) a file.
    pub const OPEN: u32 = 3;
    /// Write by descriptor.
    pub const WRITE: u32 = 4;
    /// Read by descriptor.
    pub const READ: u32 = 5;
    /// Commit a file's data.
    pub const FSYNC: u32 = 6;
    /// Close a handle.
    pub const CLOSE: u32 = 7;
    /// A file's size.
    pub const SIZE: u32 = 8;
    /// Commit targets' journals (a client over its pinned-memory bound).
    pub const COMMIT: u32 = 9;
    /// The fyod's counters.
    pub const STATS: u32 = 10;
    /// Another fyod asks for a MUNIX token (this fyod is the token home).
    pub const TOKEN_ACQUIRE: u32 = 11;
    /// Another fyod gives a MUNIX token back.
    pub const TOKEN_RELEASE: u32 = 12;
    /// Cut or extend a file.
    pub const TRUNCATE: u32 = 13;
    /// The storage targets' capacity.
    pub const STATFS: u32 = 14;

    /// The opcode's name, lower case (`write`), for per-operation counters.
    pub fn name(opcode: u32) -> Option<&'static str> {
        Some(match opcode {
            CONNECT => "connect",
            DISCONNECT => "disconnect",
            OPEN => "open",
            WRITE => "write",
            READ => "read",
            FSYNC => "fsync",
            CLOSE => "close",
            SIZE => "size",
            COMMIT => "commit",
            STATS => "stats",
            TOKEN_ACQUIRE => "token_acquire",
            TOKEN_RELEASE => "token_release",
            TRUNCATE => "truncate",
            STATFS => "statfs",
            _ => return None,
        })
    }
}
