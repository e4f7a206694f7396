//! iopath's fabric: how nodes name each other, move messages under credits, and pull or push
//! bulk data named by a buffer descriptor — LNet and ptlrpc in miniature.
//!
//! # Layout
//!
//! Bottom to top, as a message travels down and back up:
//!
//! - [`nid`]: NIDs (`17@mem0`, `127.0.0.1:7001@tcp0`), parsed once into typed values.
//! - [`frame`]: the fixed wire header and its four message kinds (PUT, ACK, GET, REPLY).
//! - [`lnd`]: transports behind one trait — in-memory and TCP.
//! - [`credits`]: the pure credit-accounting core (negative counts, `min`).
//! - [`ni`]: a network interface: credit gates over the core, the send path, counters.
//! - [`fault`]: the seeded fault hook (drop, delay, corrupt) tests install.
//! - [`checksum`]: CRC32 / CRC32C, including combining chunk checksums.
//! - [`region`] and [`descriptor`]: memory registered for bulk and the descriptors naming it.
//! - [`bulk`]: GET (pull) and PUT (push) of descriptor-named bytes, in verified chunks.
//! - [`router`]: router buffers in size classes and per-peer router credits.
//! - [`routing`]: the pure routing-table core: best alive class, round-robin among equals.
//! - [`rpc`]: requests and replies by xid, timeouts, resends, execute-once.
//! - [`units`]: sizes as people and IOR write them (`64k`, `1MiB`), for every command line.
//! - [`node`]: a node with its interfaces, tying the above together and dispatching frames.
//! - [`params`]: the `nis`, `peers`, `stats`, `routes`, `routers` and `buffers` views on the
//!   node's admin tree (writing `routes` adds or deletes a route).
//! - [`limits`]: every maximum in one place.
//! - [`error`]: the crate's one error type.

pub mod aligned;
pub mod bulk;
pub mod checksum;
pub mod credits;
pub mod descriptor;
pub mod error;
pub mod fault;
pub mod frame;
mod health;
pub mod limits;
pub mod lnd;
pub mod ni;
pub mod nid;
pub mod node;
pub mod params;
pub mod region;
pub mod router;
pub mod routing;
pub mod rpc;
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
