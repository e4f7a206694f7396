//! iopath's topology model: what the papers' machines do with I/O traffic, computed rather
//! than run — a 3D torus with dimension-order routing, the load each client–target pair puts
//! on each link, where clients should be placed, how LNET routes are configured, and how much
//! bandwidth each writer gets when routers arbitrate locally fairly but globally unfairly.
//!
//! # Layout
//!
//! Geometry, bottom up:
//! - [`coord`]: [`Coord`], a router's position, and the [`Axis`] it is measured along;
//!   parses `X,Y,Z`.
//! - [`direction`]: [`Direction`] in dimension order, and directed [`Link`]s.
//! - [`torus`]: [`Torus`]: dimensions, hop distance (shortest way round each axis) and the
//!   dimension-order path link by link; Gemini's half-width Y links as an option.
//!
//! Analyses, each a pure function of its inputs:
//! - [`link_loads`]: [`LinkLoads`] (pairs per link, histogram) and [`Saturation`] (the
//!   pair count at which a link saturates, from link bandwidth and per-target rate).
//! - [`placement`]: [`Placement`]: launcher order, and the Spider paper's "N nearest free
//!   clients per server", unconfined or confined to a job's nodes.
//! - [`route`]: [`Route`], one LNET route as data and as `lnetctl route add` text.
//! - [`spider_routing`]: the Spider paper's four LNET routing configurations.
//! - [`router_layout`]: Titan's router modules, groups, sub-groups and swizzle (Figure 3).
//! - [`fgr`]: the Titan paper's Algorithm 1 and the 36 + 72 routes it gives each client.
//! - [`flow_model`]: [`FlowModel`], bandwidth per flow under locally fair arbitration,
//!   aggregate bandwidth and completion times.
//!
//! Machines and studies:
//! - [`presets`]: `jaguar-spider` and `titan-spider2` at full scale, every number sourced.
//! - [`study`]: the `analyze` experiment (default vs placed, runs, confined, routed).
//! - [`render`]: what `iopath topo analyze | routes | layout` prints — tables, CSV, and the
//!   plots (link-load histogram, completion-time CDF, drawn by `iopath-plot`) — as pure
//!   functions of the model's results.
//! - [`error`]: [`TopologyError`], the crate's one error type.

pub mod allocation;
pub mod coord;
pub mod direction;
pub mod error;
pub mod fgr;
pub mod flow_model;
pub mod link_loads;
pub mod placement;
pub mod presets;
pub mod random;
pub mod render;
pub mod route;
pub mod router_layout;
pub mod spider_routing;
pub mod study;
pub mod torus;

pub use coord::{Axis, Coord};
pub use direction::{Direction, Link};
pub use error::{Result, TopologyError};
pub use flow_model::{Flow, FlowModel, FlowNetwork};
pub use link_loads::{LinkLoads, Saturation};
pub use placement::{Pair, Placement, PlacementKind, Target};
pub use route::Route;
pub use torus::Torus;
