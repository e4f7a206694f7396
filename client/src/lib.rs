//! iopath's client library: files, layouts, and the asynchronous calls of ASCI Red's I/O library.
//!
//! # Layout
//!
//! - [`layout`]: the stripe layout as a pure core — mapping file extents to per-object
//!   extents and back, a file's size from its objects' sizes (Lustre's glimpse), and the
//!   checks `setstripe` values get.
//!
//! The rest of the client arrives with the end-to-end write and read path: it will register
//! each write's buffer as a bulk region with `iopath-fabric` and send an RPC that carries only
//! the buffer descriptor, keeping uncommitted requests for replay.

pub mod layout;
