//! Object storage targets and the server that hosts them.
//!
//! - [`target`] — [`Ost`]: object files, journal, operations.
//! - [`startup`] — formatting and recovery at start, [`RecoveryReport`].
//! - [`config`] — [`OstConfig`]: paths and limits.
//! - [`counters`] — operation counters and I/O histograms, in Lustre's `stats` and
//!   `brw_stats` layouts.
//! - [`reply`] — [`OpReply`]: value, transno, last_committed.
//! - [`oss`] — [`Oss`]: several targets on one server.
//! - `open_files` — the object files a target holds open, least recently used closed first.
//! - [`mmp`] — multiple-mount protection: the lock and heartbeat that keep a second server
//!   off a directory one serves.
//!
//! A stopped target stays stopped: [`crate::stop::StopFlag`], which the journal below checks
//! too.

pub mod config;
pub mod counters;
pub mod mmp;
mod open_files;
pub mod oss;
pub mod reply;
pub mod startup;
pub mod target;

pub use config::OstConfig;
pub use oss::{Oss, OssConfig};
pub use reply::{ObjectAttr, OpReply, OstStats};
pub use startup::{RecoveryReport, TrimmedObject};
pub use target::{Ost, OstEngines};
