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
//! Each service's module also holds what else is its wire, as Lustre's `lustre_idl.h` holds
//! its portals and opcodes: the portal it listens on and its opcodes (and, for the OST, the
//! bound on a CONNECT's list and [`ost::Capacity`], the `STATFS` reply as a plain value), so
//! that a server and its clients take them from one place.
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

pub mod mds;

pub mod ost;

pub mod fyod;
