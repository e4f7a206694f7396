//! The one error type of the topology crate.
//!
//! Everything here is pure computation, so errors only come from input: a coordinate outside
//! the torus, a preset name nobody knows, more targets than clients to place them on.

use thiserror::Error;

/// Why a topology computation refused its input.
#[derive(Debug, Error, Clone, PartialEq)]
pub enum TopologyError {
    /// A torus needs every axis at least one node long and no more than [`crate::torus::AXIS_LENGTH_MAX`].
    #[error("invalid torus dimensions {x}x{y}x{z}: every axis must be 1..={max} long")]
    InvalidDimensions {
        /// Length of the X axis asked for.
        x: u32,
        /// Length of the Y axis asked for.
        y: u32,
        /// Length of the Z axis asked for.
        z: u32,
        /// The longest axis allowed.
        max: u32,
    },
    /// A coordinate lies outside the torus it was used with.
    #[error("coordinate {coord} is outside the {dims} torus")]
    CoordOutOfRange {
        /// The coordinate, as `X,Y,Z`.
        coord: String,
        /// The torus dimensions, as `XxYxZ`.
        dims: String,
    },
    /// Text that should have been `X,Y,Z` was not.
    #[error("cannot parse {text:?} as a coordinate: expected three integers as X,Y,Z")]
    ParseCoord {
        /// The text given.
        text: String,
    },
    /// A preset name that is not one of [`crate::presets::PresetName`].
    #[error("unknown preset {name:?}: known presets are jaguar-spider and titan-spider2")]
    UnknownPreset {
        /// The name given.
        name: String,
    },
    /// A routing-configuration name that is not one of [`crate::spider_routing::SpiderRoutingConfig`].
    #[error(
        "unknown routing configuration {name:?}: known are baseline, nearest-neighbour, leaf-round-robin, projection"
    )]
    UnknownRoutingConfig {
        /// The name given.
        name: String,
    },
    /// Placement needs at least one free client per target.
    #[error("not enough clients: {needed} targets need clients but only {available} are free")]
    NotEnoughClients {
        /// Clients needed.
        needed: usize,
        /// Clients that were free.
        available: usize,
    },
    /// The same client was offered twice, so it could be given two targets.
    #[error("client {coord} is listed twice in the available set")]
    DuplicateClient {
        /// The client's coordinate, as `X,Y,Z`.
        coord: String,
    },
    /// A number that must be finite and positive (a bandwidth, an amount of data) was not.
    #[error("{what} must be a finite positive number, got {value}")]
    NotPositive {
        /// What the number was for.
        what: &'static str,
        /// The value given.
        value: f64,
    },
    /// A count was outside the range the preset supports.
    #[error("{what} must be in {min}..={max}, got {value}")]
    OutOfRange {
        /// What the count was for.
        what: &'static str,
        /// The value given.
        value: usize,
        /// Smallest allowed.
        min: usize,
        /// Largest allowed.
        max: usize,
    },
    /// A real number outside the range its setting allows.
    #[error("{what} must be in {range}, got {value}")]
    NotInRange {
        /// What the number was for.
        what: &'static str,
        /// The value given.
        value: f64,
        /// The allowed range, as text.
        range: &'static str,
    },
    /// The operation does not apply to this preset.
    #[error("{what} is not available for preset {preset}")]
    NotForPreset {
        /// What was asked.
        what: &'static str,
        /// The preset's name.
        preset: &'static str,
    },
}

/// Shorthand for results of this crate.
pub type Result<T> = std::result::Result<T, TopologyError>;
