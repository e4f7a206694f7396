//! iopath's client library (liblustre and ASCI Red's Cougar I/O library in miniature): files
//! striped over storage targets, their reads and writes, the asynchronous calls of ASCI Red,
//! stdio-like buffered streams, and layouts.
//!
//! # Layout
//!
//! Bottom-up, from the pure cores to the calls an application makes:
//!
//! - [`layout`]: the stripe layout's pure core (`iopath_layout`, shared with the metadata
//!   service and the fyod) — file extents to per-object extents and back, a file's size from
//!   its objects' sizes (Lustre's glimpse), the checks `setstripe` values get, and the packet
//!   planner that turns one read or write into object RPCs of at most 4 MiB.
//! - [`targets`]: connections to the storage servers and the direct-attached data path: each
//!   packet one OST RPC carrying a buffer descriptor, every object in parallel, bounded RPCs
//!   in flight per target; replay of uncommitted writes is the OST client's.
//! - [`client`]: [`Client`] — the namespace at the metadata service, creating and destroying
//!   objects, opening files.
//! - [`mod@file`]: [`File`] — `write_at`, `read_at`, `size`, `fsync`, `close`, the file pointer.
//! - [`aio`]: `iwrite`/`iread`/`iodone`/`iowait` and `cwrite`/`cread`: one worker per open
//!   file, in order per file, concurrent across files.
//! - [`stream`]: [`BufferedStream`], stdio buffering with `setvbuf`.
//! - [`writeback`]: [`writeback::Dirty`], a file's small writes not yet sent (a mount's
//!   write-back), a pure core.
//! - [`stat`]: what `stat` and `getstripe` report.
//! - [`config`]: [`ClientConfig`] and every limit; [`error`]: [`ClientError`].
//!
//! A write, direct-attached: the client plans the file extent into per-object packets, and for
//! each one the OST client registers the bytes as a bulk region and sends an RPC that carries
//! only the buffer descriptor; the storage server pulls the bytes, writes them, and replies
//! with the write's transno and its `last_committed`. Until `last_committed` covers the write
//! the client keeps its bytes ([`Client::kept_bytes`]) to replay after a server restart — so a
//! program ends with [`Client::close`], which has the servers commit everything and forget
//! the client, rather than exiting with the only replayable copy.

pub mod aio;
pub mod client;
pub mod config;
pub mod error;
pub mod file;
/// The stripe layout, shared with the MDS and the fyod (`iopath_layout`).
pub use iopath_layout as layout;
pub mod stat;
pub mod stream;
pub mod targets;
pub mod writeback;

pub use aio::{AsyncStats, IoHandle, IoResult};
pub use client::Client;
pub use config::ClientConfig;
pub use error::ClientError;
pub use file::File;
pub use iopath_fabric::{ChecksumKind, Checksummed};
pub use iopath_forwarder::{CallKind, FileSystem, IoMode};
pub use iopath_mds::{DirEntry, FileType, Owner, SetAttributes, SpecialNode};
pub use iopath_ost_client::Capacity;
pub use iopath_ost_client::UNREACHABLE_FOR_MAX;
pub use layout::{FsName, Layout, LayoutError, ObjectRef, StripeRequest, TargetName};
pub use stat::{FileStat, StripeInfo};
pub use stream::BufferedStream;
