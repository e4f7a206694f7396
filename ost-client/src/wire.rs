//! The OST service's wire: its portal and opcodes (the messages are `iopath_proto::ost`), and
//! which failures mean "the server is not there right now" rather than "no".

use iopath_fabric::FabricError;
use iopath_fabric::frame::status::errno;

/// The portal OSS requests go to.
pub const OST_PORTAL: u32 = 46;

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

/// Whether `error` means the server could not be reached (gone, restarting, shutting down),
/// or could not reach this client (an answer of `EHOSTUNREACH`: the server's routes to our
/// network were marked down when it pulled or pushed the bulk), so a client should reconnect,
/// replay and send again rather than give up. A path that went silent for a while is marked
/// down and comes back up at its next answered ping, as LNet's router health does; a call
/// that met it in between waits for it as long as a client waits for an unreachable server.
pub fn is_connection_error(error: &FabricError) -> bool {
    matches!(
        error,
        FabricError::Unreachable { .. }
            | FabricError::Timeout { .. }
            | FabricError::NoRoute { .. }
            | FabricError::ShuttingDown
    ) || matches!(error, FabricError::Remote { code, .. }
        if *code == errno::ESHUTDOWN || *code == errno::EHOSTUNREACH)
        // A restarting server's node answers before its OST service is registered.
        || error.is_no_service()
}
