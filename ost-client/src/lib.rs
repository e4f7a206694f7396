//! iopath's client of the object storage service (Lustre's OSC): what the client library and
//! the fyod use to reach the storage servers. It depends on the fabric and the wire formats,
//! not on the storage server's engines or journal.
//!
//! # Layout
//!
//! - [`wire`]: the OST service's portal and opcodes, and which failures mean "not there right
//!   now".
//! - [`id`]: [`ClientId`], who a server knows a client as across restarts.
//! - [`replay`]: [`ReplayList`], the pure core of acknowledged-but-uncommitted writes kept for
//!   replay.
//! - [`capacity`]: [`Capacity`], a target's space as the `STATFS` call carries it.
//! - [`client`]: [`OstClient`], one connection — typed calls, reconnect, replay, disconnect.
//! - [`mod@ping`]: Lustre's pinger, which replays promptly after a server restart.
//! - [`connections`]: [`OstConnections`], one connection per server of a file system.
//! - [`error`] — [`OstClientError`], the crate's one error type.

pub mod capacity;
pub mod client;
pub mod connections;
pub mod error;
pub mod id;
pub mod ping;
pub mod replay;
pub mod wire;

pub use capacity::Capacity;
pub use client::{DescriptorReply, LostWrite, OstClient, ReplayReport, Stamp, UNREACHABLE_FOR_MAX};
pub use connections::{LostWrites, OstConnections};
pub use error::OstClientError;
pub use id::ClientId;
pub use ping::ping;
pub use replay::{Kept, KeptData, ReplayList};
pub use wire::{OST_PORTAL, is_connection_error, opcode};
