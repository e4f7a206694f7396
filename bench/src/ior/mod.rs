//! `iopath bench ior`: IOR's options, meanings and output on an emulated stack, with every
//! byte read back and checked, and the raw disk (and, over TCP, loopback) measured in the
//! same run so the figures are ratios.
//!
//! - [`params`]: IOR's options ([`IorOptions`]) checked into [`IorParams`]; task placement.
//! - [`directives`]: IOR's `KEY=VALUE` directives, for `-O` and `-f` scripts.
//! - [`pattern`]: the data each task writes and the check of what comes back (the stack's,
//!   which the demo writes too).
//! - [`buffers`]: transfer buffers, reused once the client library lets go of them.
//! - [`phase`]: one write or read phase over every task, timed as IOR times it.
//! - [`baseline`]: the raw disk (iopath's raw writer), fio if installed, loopback TCP.
//! - [`report`]: IOR's text and JSON output, as pure functions of the results.
//! - [`mod@run`]: the whole run, its tests one after another on one stack, [`measure`].

pub mod baseline;
pub mod buffers;
pub mod directives;
pub mod params;
pub mod phase;
pub mod report;
pub mod run;

pub use iopath_stack::pattern;
pub use params::{IorOptions, IorParams};
pub use run::{IorOutcome, measure};
