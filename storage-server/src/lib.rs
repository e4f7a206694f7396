//! iopath's object storage server (Lustre's OSS/OST with ldiskfs and its JBD journal).
//!
//! # Layout
//!
//! Read it bottom-up, the way a write goes down to the disk:
//!
//! - [`stop`] — [`stop::StopFlag`]: once a target cannot vouch for its data (a failed fsync),
//!   it stops for good; the journal and the target both check it.
//! - [`engine`] — disk I/O behind one trait, [`engine::DiskEngine`]: io_uring (default),
//!   pread/pwrite (fallback and teaching baseline), a modeled disk, and a fault injector.
//! - [`journal`] — checksummed records, the pure commit policy (sync and async commits, group
//!   commit, reply points), the pure recovery scanner, checkpoints, and the task that runs it.
//! - [`ost`] — [`ost::Ost`], one object storage target (object files named only from integer
//!   ids, a journal, the persisted last committed transno), its recovery at start, and
//!   [`ost::Oss`], a server hosting several targets.
//! - [`recovery`] — the pure bookkeeping of the client-replay window after a restart.
//! - [`service`] — the OSS as an RPC service on the fabric (writes pulled by descriptor,
//!   reads pushed, recovery windows with client replay) and `iopath_ost_client::OstClient`.
//! - [`error`] — [`StorageError`], the crate's one error type; [`ids`] — object ids, transnos.
//!
//! The RPC layer calls [`ost::Ost`]'s async methods; every state-changing reply carries its
//! transno and the target's `last_committed` ([`ost::OpReply`]).

pub mod engine;
pub mod error;
pub mod ids;
pub mod journal;
pub mod ost;
pub mod recovery;
pub mod service;
pub mod stop;

pub use error::{Result, StorageError};
pub use ids::{ObjectId, Transno};
