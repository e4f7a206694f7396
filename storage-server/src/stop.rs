//! `StopFlag`: once a target cannot vouch for its data, it stops for good.

use crate::error::{Result, StorageError};
use std::sync::OnceLock;

/// Set once, by the first failure a target cannot recover from (an fsync error, a failed
/// commit) or by shutdown; checked by every operation.
#[derive(Debug, Default)]
pub struct StopFlag {
    reason: OnceLock<String>,
}

impl StopFlag {
    /// A running target.
    pub fn new() -> StopFlag {
        StopFlag::default()
    }

    /// Stops the target because it can no longer vouch for its data; the first reason wins.
    pub fn stop(&self, reason: String) {
        if self.reason.set(reason).is_ok() {
            tracing::error!(reason = %self.reason.get().map_or("", String::as_str), "target stopped");
        }
    }

    /// Stops the target at a clean shutdown: everything was committed, nothing is wrong.
    pub fn shut_down(&self) {
        if self.reason.set("target shut down".to_string()).is_ok() {
            tracing::debug!("target shut down cleanly");
        }
    }

    /// Why the target stopped, if it did.
    pub fn reason(&self) -> Option<String> {
        self.reason.get().cloned()
    }

    /// `Ok` while running, `TargetStopped` after.
    pub fn check(&self, target: u32) -> Result<()> {
        match self.reason.get() {
            None => Ok(()),
            Some(reason) => Err(StorageError::TargetStopped {
                target,
                reason: reason.clone(),
            }),
        }
    }
}
