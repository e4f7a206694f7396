//! iopath's fabric: how nodes name each other, move messages under credits, and pull or push
//! bulk data named by a buffer descriptor — LNet and ptlrpc in miniature.
//!
//! # Layout
//!
//! Bottom to top, as LNet reads: names, checksums and errors, then frames, transports (LNDs)
//! and interfaces, routing, the node, and bulk transfers and RPC on top. Every module imports
//! only modules listed before it, so the list is also the order to read them in.
//!
//! - [`status`]: the errno values frames, errors and replies carry.
//! - [`nid`]: NIDs (`17@mem0`, `127.0.0.1:7001@tcp0`), parsed once into typed values.
//! - [`checksum`]: CRC32 / CRC32C, including combining chunk checksums.
//! - [`units`]: sizes as people and IOR write them (`64k`, `1MiB`), for every command line.
//! - [`aligned`]: page-aligned buffers and their pools, for bytes that go to disk O_DIRECT.
//! - [`landing`]: where a multi-chunk pull lands — one aligned buffer, lent chunk by chunk to
//!   the LNDs that receive each REPLY straight into its place.
//! - [`credits`]: the pure credit-accounting core (negative counts, `min`).
//! - [`error`]: the crate's one error type (it takes in the NID parser's own).
//! - [`limits`]: every maximum in one place.
//! - [`histogram`]: latency histograms in atomics, read as Prometheus's buckets.
//! - [`rpc_stats`]: what the node's services executed, by portal and opcode (bounded).
//! - [`gate`]: credit pools that tasks wait on, and the credits they hold.
//! - [`peer_table`]: the per-peer credit gates of an interface or a router, each peer
//!   forgotten once idle, as LNet ages its peers.
//! - [`reply_cache`]: the pure core that makes a resent request execute once.
//! - [`frame`]: the fixed wire header and its four message kinds (PUT, ACK, GET, REPLY).
//! - [`trace`]: following one request: the trace id its frames carry, and each node's log of
//!   what it did with them.
//! - [`descriptor`]: the buffer descriptor an RPC carries instead of data.
//! - [`routing`]: the pure routing-table core: best alive class, then the gateway with the
//!   fewest bytes outstanding, then round-robin, as LNet chooses.
//! - [`fault`]: the seeded fault hook (drop, delay, corrupt) tests install.
//! - [`fail`]: fail points an operator arms at run time (`fail_loc`), and LNet-style drop
//!   and delay rules by source and destination NID.
//! - [`lnd`]: transports behind one trait — in-memory and TCP — and what the node grants a
//!   message before its payload is read.
//! - [`region`]: memory registered for bulk, which descriptors name.
//! - [`link`]: a modeled link: an interface's wire as a server of modeled bandwidth and
//!   latency, at a time scale.
//! - [`torus`]: a modeled torus crossed hop by hop: every directed link a server, serving
//!   its input ports in turn, with back-pressure.
//! - `health`: the router checker, pinging gateways through a trait the node implements.
//! - [`ni`]: a network interface: credit gates, the send path, counters.
//! - [`router`]: router buffers in size classes and per-peer router credits.
//! - [`node`]: a node with its interfaces, tying the above together and dispatching frames;
//!   RPC requests go to the handler attached to their portal.
//! - [`bulk`]: GET (pull) and PUT (push) of descriptor-named bytes, in verified chunks.
//! - [`rpc`]: requests and replies by xid, timeouts, resends, execute-once; services.
//! - [`restarts`]: watching a peer for restarts (its ping names its start), and sending the
//!   calls waiting on it again at once when it restarted.
//! - [`params`]: the `nis`, `peers`, `stats`, `routes`, `routers` and `buffers` views on the
//!   node's admin tree (writing `routes` adds or deletes a route), and `congestion`.
//! - [`metrics`]: the same counters and snapshots as Prometheus families, for `/metrics`.
//! - [`iorcd`]: IORCD's sampler: per network, each interval's congestion (time queued for
//!   credits, egress and ingress) and traffic, as JSON Lines on the admin tree.

pub mod aligned;
pub mod bulk;
pub mod checksum;
pub mod credits;
pub mod descriptor;
pub mod error;
pub mod fail;
pub mod fault;
pub mod frame;
pub mod gate;
mod health;
pub mod histogram;
pub mod iorcd;
pub mod landing;
pub mod limits;
pub mod link;
pub mod lnd;
pub mod metrics;
pub mod ni;
pub mod nid;
pub mod node;
pub mod params;
pub mod peer_table;
pub mod region;
pub mod reply_cache;
pub mod restarts;
pub mod router;
pub mod routing;
pub mod rpc;
pub mod rpc_stats;
pub mod status;
pub mod torus;
pub mod trace;
pub mod units;

pub use checksum::{ChecksumKind, Checksummed};
pub use descriptor::BufferDescriptor;
pub use error::FabricError;
pub use limits::Limits;
pub use lnd::mem::MemNetwork;
pub use nid::{NetId, NetType, Nid};
pub use node::{Interface, Node, NodeConfig};
pub use region::{Regions, SinkRegion, SourceRegion};
pub use rpc::{Request, Service, ServiceError};
