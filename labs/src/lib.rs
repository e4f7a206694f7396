//! iopath's paper experiments: each builds a miniature of the paper's machine as a stack,
//! writes through it, and prints what it measured beside the paper's figures and the flow
//! model's prediction for the same machine, saying what was modeled. The benchmarks with
//! baselines (IOR, selftest, the journal) are `iopath_bench`'s; these are the papers' tables.
//!
//! # Layout
//!
//! - [`lab`]: [`lab::Lab`], the skeleton every experiment here is written on: configuration
//!   and quick form, run, report, table, plot.
//! - [`fyods`]: `iopath bench fyods`, the ASCI Red paper's sweep of compute nodes against
//!   fyods (Tables 2 and 3) on a modeled Janus whose fyods stand on modeled service nodes.
//! - [`placement`]: `iopath bench placement`, the Spider paper's placement experiment on an
//!   emulated torus crossed hop by hop: launcher order against the nearest free nodes per
//!   server, over server counts, beside the flow model's prediction and the paper's figures.
//! - [`routing`]: `iopath bench routing`, the Spider paper's routing configurations (and
//!   Titan's fine-grained routing) with real LNET routers on an emulated torus, both
//!   placements, beside the flow model and the paper's figures.
//!
//! Their errors are the benchmarks' ([`iopath_bench::BenchError`]): a lab fails as a
//! benchmark does, on a bad option, a stack that will not start, a write that fails.

pub mod fyods;
pub mod lab;
pub mod placement;
pub mod routing;

pub use lab::Lab;
