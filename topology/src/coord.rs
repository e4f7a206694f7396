//! A position in the 3D torus, and the axes it is measured along.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::error::TopologyError;

/// One of the three torus axes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum Axis {
    /// The X axis (cabinet columns on Jaguar and Titan).
    X,
    /// The Y axis (cabinet rows and nodes or Geminis on a blade).
    Y,
    /// The Z axis (blades within a cabinet).
    Z,
}

impl Axis {
    /// All three axes, X first.
    pub const ALL: [Axis; 3] = [Axis::X, Axis::Y, Axis::Z];

    /// 0 for X, 1 for Y, 2 for Z.
    pub const fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }
}

/// The position of one torus router (a SeaStar NIC on Jaguar, a Gemini on Titan) as
/// topological X, Y, Z — the coordinates the routing tables use, not cabinet positions.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct Coord {
    /// Position along X.
    pub x: u32,
    /// Position along Y.
    pub y: u32,
    /// Position along Z.
    pub z: u32,
}

impl Coord {
    /// The coordinate `(x, y, z)`.
    pub const fn new(x: u32, y: u32, z: u32) -> Self {
        Self { x, y, z }
    }

    /// The component along `axis`.
    pub const fn along(self, axis: Axis) -> u32 {
        match axis {
            Axis::X => self.x,
            Axis::Y => self.y,
            Axis::Z => self.z,
        }
    }
}

impl fmt::Display for Coord {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{},{},{}", self.x, self.y, self.z)
    }
}

impl FromStr for Coord {
    type Err = TopologyError;

    /// Parses `X,Y,Z` (spaces around the numbers are allowed); range is checked by the torus.
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let err = || TopologyError::ParseCoord {
            text: text.to_string(),
        };
        let mut parts = text.split(',');
        let mut next = || -> Result<u32, TopologyError> {
            parts
                .next()
                .ok_or_else(err)?
                .trim()
                .parse::<u32>()
                .map_err(|_| err())
        };
        let coord = Coord::new(next()?, next()?, next()?);
        if parts.next().is_some() {
            return Err(err());
        }
        Ok(coord)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints() {
        let c: Coord = " 3, 4 ,5".parse().unwrap();
        assert_eq!(c, Coord::new(3, 4, 5));
        assert_eq!(c.to_string(), "3,4,5");
    }

    #[test]
    fn rejects_bad_text() {
        for bad in ["", "1,2", "1,2,3,4", "a,b,c", "-1,2,3", "1;2;3"] {
            assert!(bad.parse::<Coord>().is_err(), "{bad:?} should not parse");
        }
    }
}
