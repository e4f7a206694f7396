//! iopath's wire formats, generated from the `.proto` files in `proto/` by prost and tonic.
//!
//! # Layout
//!
//! - [`fabric`]: the buffer descriptor and the RPC error body — what the fabric's RPC layer
//!   itself reads.
//! - [`selftest`]: lnet_selftest-style `brw` and `ping` requests.
//! - [`ost`]: the object storage service (create, write by descriptor, read, replay).
//! - [`admin`]: the admin gRPC service every node runs (`lctl get_param`/`set_param`, status,
//!   shutdown).
//! - [`mds`]: the metadata service — namespace operations and file layouts.
//! - [`fyod`]: the fyod I/O forwarder — opens, reads and writes by descriptor, MUNIX tokens.
//!
//! Messages are decoded once, at the edge, into the typed values of the crates above this one;
//! nothing here checks more than protobuf's own framing.

#![allow(missing_debug_implementations)] // generated tonic clients and servers lack Debug
#![allow(clippy::unwrap_used)] // generated code

/// The buffer descriptor and RPC error body.
pub mod fabric {
    tonic::include_proto!("iopath.fabric");
}

/// lnet_selftest-style test RPCs.
pub mod selftest {
    tonic::include_proto!("iopath.selftest");
}

/// The admin service: parameter tree, status, shutdown.
pub mod admin {
    tonic::include_proto!("iopath.admin");
}

/// The metadata service.
pub mod mds {
    tonic::include_proto!("iopath.mds");
}

/// The object storage service: connect, object operations, replay.
pub mod ost {
    tonic::include_proto!("iopath.ost");
}

/// The fyod I/O forwarder: what compute nodes ask of their fyod, and MUNIX tokens.
pub mod fyod {
    tonic::include_proto!("iopath.fyod");
}
