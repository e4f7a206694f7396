//! After a restart: the client-replay window.
//!
//! - [`window`] — [`ReplayWindow`], the pure bookkeeping: who must replay, in what order, each
//!   xid once, and who is evicted when the window closes.

pub mod window;

pub use window::{ClientId, ReplayDecision, ReplayRequest, ReplayWindow, WindowEvent, Xid};
