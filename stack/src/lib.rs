//! iopath's stacks: a whole emulated I/O path — compute-node clients, fyod forwarders, LNET
//! routers, storage servers and the metadata service — described in one TOML file, started
//! in one process or as a process per node, and measured with IOR.
//!
//! # Layout
//!
//! - [`schema`]: stack files — the TOML as written ([`schema::StackFile`]), checked once into
//!   a [`schema::Stack`] (networks numbered, `count` expanded, routes per node, every node
//!   able to reach its peers), with errors that name the field.
//! - [`presets`]: the stack files shipped in the binary: `asci-red-mini`, `spider-mini`,
//!   `spider-mini-routed`.
//! - [`runtime`]: running a stack — one node ([`runtime::RunningNode`]), all in this process
//!   ([`runtime::EmbeddedStack`]), or a process per server node on loopback TCP
//!   ([`runtime::ProcessStack`]).
//! - [`describe`]: a stack in words — the node table, each node's part, torus hops.
//! - [`journal`]: what the targets' journals committed, embedded or over admin services.
//! - [`cli`]: `iopath up`, `iopath node`, `iopath demo` — argument structs and run functions.
//! - [`demo`]: the demo itself: phases, verification, the path hop by hop.
//! - [`ior`]: `iopath bench ior`: IOR's options and output on a stack, verified read-back,
//!   and the raw disk and loopback TCP baselines measured in the same run.
//! - [`testing`]: [`testing::TestStack`], a whole file system in this process for every
//!   crate's integration tests and examples, with storage servers to crash and restart.
//! - [`error`]: [`StackError`], the crate's one error type.

pub mod cli;
pub mod demo;
pub mod describe;
pub mod error;
pub mod ior;
pub mod journal;
pub mod presets;
pub mod runtime;
pub mod schema;
pub mod testing;

pub use error::StackError;
pub use presets::{DEFAULT_PRESET, PRESETS, Preset, preset};
pub use schema::{Stack, StackFile};
