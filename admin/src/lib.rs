//! iopath's admin service: every node's parameter tree (`iopath_lprocfs`) served over gRPC,
//! its counters over `/metrics`, with node status and a clean shutdown, and the `lctl`
//! command that talks to it. It sits above the fabric: the fabric and everything below hang
//! their parameters on the tree in `iopath_lprocfs`, which knows nothing of how it is served.
//!
//! # Layout
//!
//! - [`shutdown`]: [`Shutdown`], the node's one-shot stop signal.
//! - [`secret`]: [`Secret`], the stack's admin secret: made, written and read back from a
//!   private file, compared in constant time; `set_param` and shutdown need it.
//! - [`process`]: the life of a node process: READY line, serve, stop on stdin EOF,
//!   SIGTERM or an admin's Shutdown.
//! - [`service`]: the tonic `Admin` service over a tree, and [`serve`] to run it on a port.
//! - [`http`]: a small bounded HTTP/1.1 server: one handler answers every request.
//! - [`metrics`]: `/metrics` over HTTP/1.1: the Prometheus text of the node's collectors.
//! - [`client`]: [`Client`], a connection to a node's admin service.
//! - [`lctl`]: the `iopath lctl get_param|set_param|list_param|dl` command line, and the
//!   `devices` list `dl` reads.
//! - [`error`]: [`AdminError`], the crate's one error type.
//!
//! The parameter tree's modules are re-exported under their old names (`glob`, `param`,
//! `tree`, `lprocfs`, `families`, `proc_metrics`), so the crates above read them as before.
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
//! # Ok::<(), iopath_admin::ParamError>(())
//! ```

pub mod client;
pub mod error;
pub mod http;
pub mod lctl;
pub mod metrics;
pub mod process;
pub mod secret;
pub mod service;
pub mod shutdown;

pub use iopath_lprocfs::stats as lprocfs;
pub use iopath_lprocfs::{ParamError, families, glob, param, proc_metrics, tree};

pub use client::Client;
pub use error::AdminError;
pub use iopath_lprocfs::Param;
pub use iopath_lprocfs::{Glob, NamePattern};
pub use iopath_lprocfs::{ParamInfo, ParamTree, ParamValue};
pub use lctl::{DEVICES_PARAM, Device, LctlCommand, devices_text, register_devices};
pub use secret::Secret;
pub use service::{AdminHandle, AdminService, NodeInfo, serve};
pub use shutdown::Shutdown;
