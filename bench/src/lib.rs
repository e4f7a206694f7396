//! iopath's benchmarks, above the stacks they measure (the papers' experiments are
//! `iopath_labs`'s, above this crate). Every figure printed is
//! measured in the run that prints it, beside a baseline measured in the same run; JSON for
//! machines, a table for people.
//!
//! # Layout
//!
//! - [`ior`]: `iopath bench ior`, IOR's options, meanings and output on an emulated stack,
//!   every byte read back and checked, beside the raw disk (and loopback TCP) measured in the
//!   same run.
//! - [`selftest`]: `iopath selftest`, in the spirit of `lnet_selftest`: `brw` bulk read/write
//!   and `ping` between a group of clients and a group of servers, in one process or in many,
//!   with `iperf3` on loopback as the baseline.
//! - [`journal`]: `iopath bench journal`, in the spirit of obdfilter-survey and the Spider
//!   paper: the raw block baseline, OST writes with sync and async journal commits, and an
//!   external journal, in one run on one file system, with fio beside the baseline; the
//!   phases run in this process, on the storage server's targets and engines.
//! - [`iorcd`]: IORCD's analyses of routers' congestion records: write and read series,
//!   correlation with bandwidth, the paper's rule for a degraded run; and `iopath bench
//!   iorcd`, the paper's experiment.
//! - [`cluster`]: `iopath bench cluster`, IOR on a stack across hosts made of network
//!   namespaces beside the same stack on loopback and iperf3 over the hosts' links.
//! - [`monitoring`]: `iopath bench monitoring`, what IORCD and `/metrics` scrapes cost IOR.
//! - [`trace`]: `iopath trace`, one write and one read followed hop by hop through a stack:
//!   every node's log of the traced frames gathered, paired and put in time order, as text,
//!   JSON and an SVG sequence diagram.
//! - [`prediction`]: the flow model's prediction for an emulated run on a torus crossed hop
//!   by hop (the same machine the stack file describes), to print beside what was measured.
//! - [`netns`]: a cluster of five hosts made of network namespaces (compute, two routers, two
//!   servers; a switch namespace between them), for `bench cluster` and the cluster tests.
//! - [`raw`]: iopath's raw-disk writer, every benchmark's disk baseline: a buffer per
//!   writer, one request in flight each, O_DIRECT, an fdatasync per file at the end.
//! - [`writers`]: requests split over writers, the loop that drives them, their progress.
//! - [`baseline`]: running the baseline tools (iperf3); one that is absent is an error saying
//!   how to install it (this crate installs nothing).
//! - [`bare`]: bare loopback TCP between threads, direct or through a relay thread: the
//!   round trip and the byte stream under every hop, with the CPU they cost.
//! - [`cpu`]: the whole machine's busy cores during a measurement, and core-seconds per GiB.
//! - [`fio`]: fio as the raw-disk baseline (O_DIRECT io_uring writes).
//! - [`report`]: the table and JSON printers shared by the benchmarks.
//! - [`status_line`]: [`status_line::StatusLine`], the progress line every benchmark shows on
//!   standard error (indicatif's, in place on a terminal).
//! - [`units`]: sizes with IOR-style suffixes (the fabric's, which every crate shares).
//! - [`error`]: [`BenchError`], the crate's one error type.

pub mod bare;
pub mod baseline;
pub mod cluster;
pub mod cpu;
pub mod error;
pub mod fio;
pub mod ior;
pub mod iorcd;
pub mod journal;
pub mod monitoring;
pub mod mount;
pub mod netns;
pub mod prediction;
pub mod raw;
pub mod report;
pub mod selftest;
pub mod status_line;
pub mod trace;
pub mod writers;
pub use iopath_fabric::units;

pub use error::BenchError;
