//! iopath's stripe layout, as a pure core shared by the metadata service (which chooses a
//! file's layout), the client library and the fyod (which split reads and writes by it): no
//! sockets, files or clocks.
//!
//! # Layout
//!
//! - [`layout`]: [`Layout`] — Lustre's RAID-0 layout and ASCI Red's PFS stripe files: which
//!   object holds each byte of a file and back, a file's size from its objects' sizes, and the
//!   limits of stripe sizes and counts; [`LayoutError`], the crate's one error type.
//! - [`request`]: [`StripeRequest`] — the values `setstripe` gives, checked, inherited from a
//!   default and resolved against the file system's targets.
//! - [`targets`]: [`TargetMap`] — the file system's targets by their one index, and the server
//!   holding each.
//! - [`names`]: [`FsName`] and [`TargetName`] — the file system's name and its targets'
//!   names as Lustre spells them (`iopath-OST0003`, `iopath-OST0003_UUID`).
//! - [`mod@plan`]: the packet planner — one read or write cut into object RPCs of at most 4 MiB,
//!   over what names the caller's bytes: a slice of its buffer (gathered when small stripes
//!   make that worth a copy) or a sub-descriptor of it (never gathered).

pub mod layout;
pub mod names;
pub mod plan;
pub mod request;
pub mod targets;

pub use layout::{
    Extents, FIRST_OBJECT_ID, Layout, LayoutError, ObjectExtent, ObjectRef, STRIPE_COUNT_ALL,
    STRIPE_COUNT_DEFAULT, STRIPE_COUNT_MAX, STRIPE_OFFSET_ANY, STRIPE_SIZE_DEFAULT_BYTES,
    STRIPE_SIZE_MAX_BYTES, STRIPE_SIZE_UNIT_BYTES,
};
pub use names::{FSNAME_MAX_CHARS, FsName, TargetKind, TargetName};
pub use plan::{ObjectIo, PACKET_BYTES_MAX, Packing, Segment, plan, scatter, visible_len};
pub use request::{StripeRequest, StripeSettings};
pub use targets::{TargetMap, deal, dealt_index};
