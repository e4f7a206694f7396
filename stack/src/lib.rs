//! iopath's stacks: a whole emulated I/O path — compute-node clients, fyod forwarders, LNET
//! routers, storage servers and the metadata service — described in one TOML file, started
//! in one process or as a process per node; `iopath_bench` measures them with IOR.
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
//! - [`cluster`]: a stack across hosts — a hostfile or the Slurm job's nodes, each node placed
//!   on a host with its addresses there, the server nodes launched by `srun` or a command
//!   template (`iopath launch`).
//! - [`guest`]: a command outside a launched stack (`lfs --stack`, `trace --attach`) joins it
//!   as a client node of its own, with a client id of its own, beside the stack's clients.
//! - [`choice`]: [`StackChoice`], a preset or a stack file and the route set in force.
//! - [`up`]: `iopath up` and `iopath node` — a whole stack, or one node of it as a process,
//!   run until told to stop.
//! - [`demo`]: `iopath demo`: phases, verification, the path hop by hop.
//! - [`soak`]: `iopath soak`: a stack of processes under a verified workload for a given
//!   time, its server nodes killed and started again and fail points flipped on a schedule.
//! - [`describe`]: a stack in words — the node table, each node's part, torus hops, sizes.
//! - [`journal`]: what the targets' journals committed, embedded or over admin services.
//! - [`live`]: the live view of a running stack (`--web`): what the page draws, and where
//!   each node's counters are read.
//! - [`pattern`]: the data every writer on a stack writes (IOR's words: which task, which
//!   repetition, where) and the check of what comes back.
//! - [`scratch`]: [`scratch::ScratchDir`], a temporary directory a command makes, removed when
//!   dropped or, if a signal ends the command first, as the command ends.
//! - [`testing`]: [`testing::TestStack`], a whole file system in this process for every
//!   crate's integration tests and examples, with storage servers to crash and restart.
//! - [`error`]: [`StackError`], the crate's one error type.

pub mod choice;
pub mod cluster;
pub mod demo;
pub mod describe;
pub mod error;
pub mod guest;
pub mod journal;
pub mod live;
pub mod pattern;
pub mod presets;
pub mod runtime;
pub mod schema;
pub mod scratch;
pub mod soak;
pub mod testing;
pub mod up;

pub use choice::StackChoice;
pub use error::StackError;
pub use presets::{CLUSTER_PRESET, DEFAULT_PRESET, PRESETS, Preset, ROUTED_PRESET, preset};
pub use schema::{Stack, StackFile};
