//! iopath's admin service: every node's tunables and counters in an lctl-style parameter tree,
//! served over gRPC, with node status and a clean shutdown.
//!
//! # Layout
//!
//! - [`glob`]: lctl-style globs over dotted names (`fabric.*.credits`); a pure matcher.
//! - [`param`]: one parameter — a getter and an optional setter — with ready-made counters,
//!   tunables and flags.
//! - [`tree`]: [`ParamTree`], the node's registry of parameters by name: get, set and list by glob.
//! - [`lprocfs`]: Lustre's counter files — counters, histograms, the `stats` layout and the
//!   read/write histogram rows of `brw_stats` and `rpc_stats` — shared by every component that
//!   shows one; a pure core.
//! - [`shutdown`]: [`Shutdown`], the node's one-shot stop signal.
//! - [`secret`]: [`Secret`], the stack's admin secret: made, written and read back from a
//!   private file, compared in constant time; `set_param` and shutdown need it.
//! - [`process`]: the life of a node process: READY line, serve, stop on stdin EOF,
//!   SIGTERM or an admin's Shutdown.
//! - [`service`]: the tonic `Admin` service over a tree, and [`serve`] to run it on a port.
//! - [`http`]: a small bounded HTTP/1.1 server: one handler answers every request.
//! - [`families`]: helpers that write one metric family each, called by every collector.
//! - [`metrics`]: `/metrics` over HTTP/1.1: the Prometheus text of the node's collectors.
//! - [`proc_metrics`]: the process's own families (`process_*`) and `iopath_build_info`,
//!   in every scrape.
//! - [`client`]: [`Client`], a connection to a node's admin service.
//! - [`lctl`]: the `iopath lctl get_param|set_param|list_param|dl` command line, and the
//!   `devices` list `dl` reads.
//! - [`error`]: [`AdminError`], the crate's one error type.
//!
//! A component hangs its parameters on the tree when it starts and removes them when it stops:
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::AtomicU64;
//! use iopath_admin::{Param, ParamTree};
//!
//! let tree = ParamTree::new();
//! let credits = Arc::new(AtomicU64::new(8));
//! tree.register("fabric.tcp0.credits", Param::u64(credits, 1..=1024))?;
//! tree.set("fabric.*.credits", "16")?;
//! assert_eq!(tree.get("fabric.tcp0.credits")?[0].value, "16");
//! tree.unregister_prefix("fabric.tcp0");
//! # Ok::<(), iopath_admin::AdminError>(())
//! ```

pub mod client;
pub mod error;
pub mod families;
pub mod glob;
pub mod http;
pub mod lctl;
pub mod lprocfs;
pub mod metrics;
pub mod param;
pub mod proc_metrics;
pub mod process;
pub mod secret;
pub mod service;
pub mod shutdown;
pub mod tree;

pub use client::Client;
pub use error::AdminError;
pub use glob::{Glob, NamePattern};
pub use lctl::{DEVICES_PARAM, Device, LctlCommand, devices_text, register_devices};
pub use param::Param;
pub use secret::Secret;
pub use service::{AdminHandle, AdminService, NodeInfo, serve};
pub use shutdown::Shutdown;
pub use tree::{ParamInfo, ParamTree, ParamValue};
