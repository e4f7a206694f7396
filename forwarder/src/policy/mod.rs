//! The fyod's pure cores: plain structs that take events and return decisions, with no
//! sockets, files or clocks inside, so each can be tested exhaustively and read in one
//! sitting. The runtime in [`crate::service`] and [`crate::client`] does the I/O around them.
//!
//! - [`pfs`]: a PFS call cut by the file's layout into per-object sub-descriptors (with the
//!   packet planner of `iopath_layout`).
//! - [`ufs`]: a UFS call cut into 128 KiB chunks.
//! - [`cache`]: the UFS cache — blocks read back, and small writes held back (write-behind).
//! - [`scheduler`]: which call runs next — synchronous calls one at a time per fyod,
//!   asynchronous calls one worker per open file, in order within a file.
//! - [`token`]: the MUNIX token table — one holder per file, waiters in order, leases.
//! - [`pins`]: the client's memory kept registered until the storage commits it.

pub mod cache;
pub mod pfs;
pub mod pins;
pub mod scheduler;
pub mod token;
pub mod ufs;
