//! After a restart: the client-replay window.
//!
//! - [`window`] — [`ReplayWindow`], the pure bookkeeping: who must replay, in what order, each
//!   xid once, who is evicted when the window closes, and whether acknowledged writes may
//!   have been dropped.
//! - [`lost`] — [`LostRanges`], the bytes startup cut from objects: pending until a replay
//!   writes them again, lost if none does and writes may have been dropped; reads and sizes
//!   that touch lost bytes are refused.

pub mod lost;
pub mod window;

pub use lost::{ByteRange, LostData, LostRanges, Written};

pub use window::{ClientId, ReplayDecision, ReplayRequest, ReplayWindow, WindowEvent, Xid};
