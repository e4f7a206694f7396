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
//! - [`counters`]: [`OscCounters`], the pure core of what a node asked of one target, and
//!   the text of `osc.*.stats` and `osc.*.rpc_stats`.
//! - [`stats`]: [`OscStats`], a client node's table of those counters, a row per target,
//!   shared by every OST client on the node and counted into on the I/O path.
//! - [`params`]: the table on the node's admin tree (`osc.iopath-OST0003-osc-c0.stats`).
//! - [`metrics`]: the table's gauges on the node's `/metrics` (writes kept for replay, RPCs
//!   in flight).
//! - [`import`]: [`import::Import`], one connection's state as a pure core — the start replayed
//!   to, the session, the replay under way, leaving — with every decision a reconnect, a
//!   replay, an acknowledgement or a failed call makes.
//! - [`client`]: [`OstClient`], one connection — typed calls, reconnect, replay, disconnect —
//!   carrying out its import's decisions.
//! - [`mod@ping`]: Lustre's pinger, which replays promptly after a server restart.
//! - [`connections`]: [`OstConnections`], one connection per server of a file system.
//! - [`error`] — [`OstClientError`], the crate's one error type.

pub mod client;
pub mod connections;
pub mod counters;
pub mod error;
pub mod id;
pub mod import;
pub mod metrics;
pub mod params;
pub mod ping;
pub mod replay;
pub mod stats;
pub mod unanswered;
pub mod wire;

pub use client::{DescriptorReply, OstClient, ReplayReport, UNREACHABLE_FOR_MAX};
pub use connections::{LossesTold, LostWrites, OstConnections};
pub use counters::{OscCounters, OstOp, UnderWay};
pub use error::OstClientError;
pub use id::ClientId;
pub use import::{LostWrite, Stamp};
pub use iopath_proto::ost::Capacity;
pub use ping::ping;
pub use replay::{Kept, KeptData, Noted, ReplayList};
pub use stats::{OscStats, TargetStats};
pub use wire::{OST_PORTAL, UNANSWERED_WRITES_MAX, is_connection_error, opcode};
