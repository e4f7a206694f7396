//! The OST service's wire as a client meets it: its portal and opcodes (defined with the
//! messages, in `iopath_proto::ost`, so the server takes them from there too), and which
//! failures mean "the server is not there right now" rather than "no".

use iopath_fabric::FabricError;
use iopath_fabric::frame::status::errno;
pub use iopath_proto::ost::{PORTAL as OST_PORTAL, UNANSWERED_WRITES_MAX, opcode};

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
