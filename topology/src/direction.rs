//! Directions and the directed links between neighbouring torus routers (the axes they
//! move along are [`crate::coord`]'s, re-exported here).

use std::fmt;

use serde::{Deserialize, Serialize};

pub use crate::coord::Axis;
use crate::coord::Coord;

/// The direction a message leaves a router in, listed in dimension order: SeaStar and Gemini
/// route every packet through the `+` moves X, Y, Z and then the `-` moves X, Y, Z
/// (Spider paper §4, citing Abts' SeaStar description).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub enum Direction {
    /// Towards larger X.
    XPlus,
    /// Towards larger Y.
    YPlus,
    /// Towards larger Z.
    ZPlus,
    /// Towards smaller X.
    XMinus,
    /// Towards smaller Y.
    YMinus,
    /// Towards smaller Z.
    ZMinus,
}

impl Direction {
    /// The six directions in dimension order, which is also their index order.
    pub const DOR_ORDER: [Direction; 6] = [
        Direction::XPlus,
        Direction::YPlus,
        Direction::ZPlus,
        Direction::XMinus,
        Direction::YMinus,
        Direction::ZMinus,
    ];

    /// Position in [`Direction::DOR_ORDER`], 0..6.
    pub const fn index(self) -> usize {
        match self {
            Direction::XPlus => 0,
            Direction::YPlus => 1,
            Direction::ZPlus => 2,
            Direction::XMinus => 3,
            Direction::YMinus => 4,
            Direction::ZMinus => 5,
        }
    }

    /// The axis this direction moves along.
    pub const fn axis(self) -> Axis {
        match self {
            Direction::XPlus | Direction::XMinus => Axis::X,
            Direction::YPlus | Direction::YMinus => Axis::Y,
            Direction::ZPlus | Direction::ZMinus => Axis::Z,
        }
    }

    /// True for the `+` directions.
    pub const fn is_plus(self) -> bool {
        matches!(self, Direction::XPlus | Direction::YPlus | Direction::ZPlus)
    }

    /// The direction moving along `axis`, `+` or `-`.
    pub const fn along(axis: Axis, plus: bool) -> Direction {
        match (axis, plus) {
            (Axis::X, true) => Direction::XPlus,
            (Axis::Y, true) => Direction::YPlus,
            (Axis::Z, true) => Direction::ZPlus,
            (Axis::X, false) => Direction::XMinus,
            (Axis::Y, false) => Direction::YMinus,
            (Axis::Z, false) => Direction::ZMinus,
        }
    }
}

impl fmt::Display for Direction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            Direction::XPlus => "X+",
            Direction::YPlus => "Y+",
            Direction::ZPlus => "Z+",
            Direction::XMinus => "X-",
            Direction::YMinus => "Y-",
            Direction::ZMinus => "Z-",
        };
        f.write_str(text)
    }
}

/// One directed torus link: the link that leaves router `from` in `direction`.
/// Links are full duplex, so the two directions of one cable are two `Link`s.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Link {
    /// The router the data leaves.
    pub from: Coord,
    /// The direction it leaves in.
    pub direction: Direction,
}

impl fmt::Display for Link {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}) {}", self.from, self.direction)
    }
}
