//! iopath's metadata service (Lustre's MDS): a durable namespace and each file's stripe
//! layout. It is a role of its own: a node runs it beside, not inside, the storage servers.
//!
//! # Layout
//!
//! Bottom-up, from the pure core to the wire:
//!
//! - [`path`]: absolute paths, parsed once and bounded ([`limits`] names every maximum).
//! - Layouts and stripe requests are `iopath_layout`'s, the pure core the client and the fyod
//!   share (re-exported as [`layout`]): the service resolves a request against its targets
//!   there and places the objects round-robin in [`namespace`].
//! - [`namespace`]: the pure core — inodes, operations planned into mutations, mutations
//!   applied, invariants. No files, sockets or clocks.
//! - [`store`]: durability — an append-only CRC32-checked operation log, fsync'd before every
//!   reply and replayed at start, with periodic snapshots that bound restart time; each record
//!   names the request behind it, so a change resent after a restart is answered with the
//!   reply it was given instead of running again.
//! - [`orphans`]: which orphans (files unlinked while a client held them open) are abandoned
//!   by a holder that went silent — a pure core the service feeds with who it heard from.
//! - [`wire`]: between the typed values and `iopath_proto::mds`.
//! - [`service`]: [`MdsService`], the RPC service on [`MDS_PORTAL`].
//! - [`client`]: [`MdsClient`], typed calls to it.
//! - [`error`]: [`MdsError`], the crate's one error type, and the errnos it travels as.
//!
//! The MDS chooses each new file's targets (round-robin over the configured targets, or
//! from a starting index) and object ids, but does not create the objects: the caller does,
//! on the storage servers. It does not keep file sizes either: clients glimpse them from
//! the objects.

pub mod client;
pub mod error;
pub mod limits;
pub mod namespace;
pub mod orphans;
pub mod path;
pub mod service;
pub mod store;
pub mod wire;

pub use client::{MdsClient, Origin};
pub use client::{Removal, Renamed};
pub use error::{MdsError, Result};
/// The stripe layout core (`iopath_layout`).
pub use iopath_layout as layout;
pub use iopath_layout::{FsName, Layout, ObjectRef, StripeRequest};
pub use limits::MdsLimits;
pub use namespace::inode::{
    Attributes, DirEntry, DirPage, FileType, Ino, Orphan, Owner, SetAttributes, SpecialNode,
    StripeInfo,
};
pub use namespace::op::{Keep, Op, Outcome};
pub use namespace::{Namespace, NamespaceConfig};
pub use path::MdsPath;
pub use service::{MDS_PORTAL, MdsConfig, MdsService, MdsTarget};
pub use store::MdsStore;
