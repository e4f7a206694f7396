//! The real engine a server runs, chosen by its configuration: io_uring, or psync where the
//! kernel refuses io_uring.

use serde::{Deserialize, Serialize};
use std::sync::Arc;

use super::DiskEngine;
use super::psync::PsyncEngine;
use super::uring::UringEngine;

/// Which real engine to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum EngineKind {
    /// io_uring, falling back to psync if the kernel refuses.
    Uring,
    /// pread/pwrite on blocking threads.
    Psync,
}

/// Settings for [`open_engine`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EngineConfig {
    /// Which engine.
    pub kind: EngineKind,
    /// io_uring submission queue entries per ring (also the ring's in-flight limit).
    pub ring_entries: u32,
    /// Dedicated ring threads (io_uring) or concurrent blocking calls (psync).
    pub threads: usize,
}

impl Default for EngineConfig {
    fn default() -> Self {
        EngineConfig {
            kind: EngineKind::Uring,
            ring_entries: 64,
            threads: 1,
        }
    }
}

/// Starts the configured engine. When io_uring setup is refused (seccomp, `io_uring_disabled`,
/// old kernel) this logs a warning and returns the psync engine instead, so a server always
/// starts.
pub fn open_engine(config: &EngineConfig) -> Arc<dyn DiskEngine> {
    match config.kind {
        EngineKind::Psync => Arc::new(PsyncEngine::new(config.threads)),
        EngineKind::Uring => match UringEngine::new(config.ring_entries, config.threads) {
            Ok(engine) => Arc::new(engine),
            Err(error) => {
                tracing::warn!(%error, "io_uring setup refused; falling back to the pread/pwrite engine");
                Arc::new(PsyncEngine::new(config.threads))
            }
        },
    }
}
