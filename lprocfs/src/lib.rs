//! iopath's `/proc`, as Lustre's `lprocfs`: what every component shows of itself and lets an
//! administrator change, with nothing of how it is served. Everything that counts or tunes
//! (the fabric, the client, the servers) hangs its parameters here; the admin service
//! (`iopath_admin`, above the fabric) serves them over gRPC and `/metrics` over HTTP.
//!
//! # Layout
//!
//! - [`glob`]: lctl-style globs over dotted names (`fabric.*.credits`), and the same
//!   fnmatch over one whole name (`lfs find -name`); a pure matcher.
//! - [`param`]: one parameter — a getter and an optional setter — with ready-made counters,
//!   tunables and flags.
//! - [`tree`]: [`ParamTree`], the node's registry of parameters by name: get, set and list by
//!   glob.
//! - [`stats`]: Lustre's counter files — counters, histograms, the `stats` layout and the
//!   read/write histogram rows of `brw_stats` and `rpc_stats`; a pure core.
//! - [`families`]: helpers that write one Prometheus metric family each, called by every
//!   collector.
//! - [`scrape`]: [`scrape::render`], a registry's text as a scrape gets it.
//! - [`proc_metrics`]: the process's own families (`process_*`) and `iopath_build_info`, in
//!   every scrape.
//! - [`error`]: [`ParamError`], the crate's one error type.
//!
//! A component hangs its parameters on the tree when it starts and removes them when it stops:
//!
//! ```
//! use std::sync::Arc;
//! use std::sync::atomic::AtomicU64;
//! use iopath_lprocfs::{Param, ParamTree};
//!
//! let tree = ParamTree::new();
//! let credits = Arc::new(AtomicU64::new(8));
//! tree.register("fabric.tcp0.credits", Param::u64(credits, 1..=1024))?;
//! tree.set("fabric.*.credits", "16")?;
//! assert_eq!(tree.get("fabric.tcp0.credits")?[0].value, "16");
//! tree.unregister_prefix("fabric.tcp0");
//! # Ok::<(), iopath_lprocfs::ParamError>(())
//! ```

pub mod error;
pub mod families;
pub mod glob;
pub mod param;
pub mod proc_metrics;
pub mod scrape;
pub mod stats;
pub mod tree;

pub use error::ParamError;
pub use glob::{Glob, NamePattern};
pub use param::Param;
pub use tree::{ParamInfo, ParamTree, ParamValue};
