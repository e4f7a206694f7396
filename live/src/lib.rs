//! The live view: a page, served by iopath itself, that draws a running stack — its nodes,
//! networks, routes and targets — and updates every second while a workload runs: bandwidth
//! per node and per link, credits and queues (negative credits in red), router buffers,
//! journal commits, the writes each client keeps uncommitted, recovery.
//!
//! Nothing is counted here. Every node already keeps its counters and serves them as
//! Prometheus text (`/metrics`: the fabric's, a storage server's, a client node's osc gauges);
//! a sampler reads each node's text once per interval — a node process's over HTTP, a node in
//! this process straight from its registry — and turns two readings into rates. The page asks
//! for the latest state once per interval and redraws.
//!
//! # Layout
//!
//! - [`view`]: [`View`], what is drawn and where each node's counters come from; fixed for
//!   the run.
//! - [`reading`]: one node's counters from one Prometheus text ([`reading::Reading`]).
//! - [`state`]: the page's state: readings and the rates between two of them, as JSON.
//! - [`server`]: [`serve`]: the sampler and the HTTP server (`/`, `/view.json`,
//!   `/state.json`).
//!
//! Every asset is in the binary: the page draws with inline SVG and script, no external
//! network is asked for anything.

pub mod reading;
pub mod server;
pub mod state;
pub mod view;

pub use server::{LiveHandle, serve};
pub use view::{Source, View, ViewInterface, ViewNode};
