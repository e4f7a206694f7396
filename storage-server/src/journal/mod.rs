//! The journal: what changed, in transno order, made durable in groups.
//!
//! - [`record`] — the on-disk header and 56-byte records, CRC32 each.
//! - [`policy`] — the pure commit policy: sync and async modes, group commit, reply points.
//! - [`mod@scan`] — the pure recovery reader: valid prefix, torn tail, or corruption.
//! - [`table`] — the committed object table that records build.
//! - [`checkpoint`] — the persisted last committed transno and object table.
//! - [`runtime`] — the task that runs the policy against real files.

pub mod checkpoint;
pub mod policy;
pub mod record;
pub mod runtime;
pub mod scan;
pub mod table;

pub use policy::{CommitMode, CommitPolicy, Decision, Intent, PolicyConfig};
pub use record::{CommitRecord, JournalEntry, JournalHeader, OpRecord, Operation};
pub use runtime::JournalCounters;
pub use scan::{Discarded, ScanReport, scan};
