//! iopath's client library: files, layouts, and the asynchronous calls of ASCI Red's I/O library.
//!
//! # Layout
//!
//! Nothing is built here yet. The client arrives with the end-to-end write and read path; it
//! will register each write's buffer as a bulk region with [`iopath-fabric`] and send an RPC
//! that carries only the buffer descriptor, keeping uncommitted requests for replay.
