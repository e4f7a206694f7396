//! iopath's fyod: the ASCI Red I/O forwarder. Compute nodes cannot reach the file system
//! themselves; every read and write is an RPC to the fyod serving them (one fyod per 256
//! compute nodes by default), which carries only a buffer descriptor naming the compute
//! node's memory — never the data.
//!
//! - **PFS mode**: the fyod splits each request by the file's stripe layout and hands each
//!   storage server a *sub-descriptor* of the compute node's buffer; the storage servers pull
//!   (write) or push (read) straight from or into the compute node. The fyod never touches
//!   the data.
//! - **UFS mode**: the fyod pulls the data into its own buffers (at most 128 KiB each, from a
//!   bounded pool) and writes the file's single target, with a small write-behind and read
//!   cache.
//! - **Synchronous calls** (`read`/`write`) are served one at a time per fyod: while one runs
//!   the fyod dispatches nothing else. **Asynchronous calls** (`iread`/`iwrite`/`cread`/
//!   `cwrite`) go to the open file's worker and run concurrently with other files' workers,
//!   in order within a file — the property behind the paper's Tables 2 and 3.
//! - **MUNIX** makes every read and write of a file atomic across fyods with a per-file token;
//!   **MASYNC** drops the token.
//!
//! The LNET router personality lives in `iopath-fabric` (`NodeConfig::router`).
//!
//! # Layout
//!
//! Pure cores first (no sockets, files or clocks), then the runtime around them:
//!
//! - [`policy`]: the pure cores — [`policy::pfs`] (the PFS split into sub-descriptors),
//!   [`policy::ufs`] (128 KiB chunks), [`policy::cache`] (the UFS write-behind/read cache),
//!   [`policy::scheduler`] (sync calls one at a time, async calls one worker per open file),
//!   [`policy::token`] (the MUNIX token table), [`policy::pins`] (client memory pinned until
//!   commit).
//! - [`modes`]: the file system (PFS/UFS), I/O mode (MUNIX/MASYNC) and call kind (sync/async).
//! - [`service`]: [`FyodService`] on the fabric — its backends (metadata service, storage
//!   connections with replay), the dispatcher, the PFS and UFS paths, MUNIX tokens, counters.
//! - [`client`]: [`FyodClient`] and [`FyodFile`], what the client library calls.
//! - [`limits`]: every maximum in one place; [`error`]: [`ForwarderError`].
//!
//! The stripe arithmetic, the packet planner and the target list are `iopath_layout`'s, the
//! pure core the metadata service and the client library use too.

pub mod client;
pub mod error;
pub mod limits;
pub mod modes;
pub mod policy;
pub mod service;

pub use client::{FyodClient, FyodFile, OpenOptions};
pub use error::ForwarderError;
pub use limits::{FyodLimits, ServiceNode};
pub use modes::{CallKind, FileSystem, IoMode};
pub use service::{FYOD_PORTAL, FyodConfig, FyodService, FyodStats, ServiceNodeStats};
