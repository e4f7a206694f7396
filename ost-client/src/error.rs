//! [`OstClientError`], the crate's one error type: what reaching a file system's storage
//! servers can fail with beyond a single call's [`FabricError`].

use iopath_fabric::{FabricError, Nid};
use iopath_layout::LayoutError;

/// Why a target's server could not be reached.
#[derive(Debug, thiserror::Error)]
pub enum OstClientError {
    /// The file system has no such target (a layout naming one is malformed).
    #[error(transparent)]
    UnknownTarget(#[from] LayoutError),
    /// Connecting to the server failed.
    #[error("connect to the OSS at {server}: {source}")]
    Connect {
        /// The server.
        server: Nid,
        /// What the fabric or the server said.
        #[source]
        source: FabricError,
    },
    /// Ending the session with a server failed: writes it acknowledged may not be committed.
    #[error(
        "disconnect from the OSS at {server}: acknowledged writes may not be committed: {source}"
    )]
    Disconnect {
        /// The server.
        server: Nid,
        /// What the fabric or the server said.
        #[source]
        source: FabricError,
    },
}
