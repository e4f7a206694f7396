//! The 3D torus: dimensions, hop distance and dimension-order paths.

use serde::{Deserialize, Serialize};

use crate::coord::Coord;
use crate::direction::{Axis, Direction, Link};
use crate::error::{Result, TopologyError};

/// The longest axis a [`Torus`] accepts; large enough for any machine in the papers (Jaguar's
/// longest axis is 32) and small enough that indices never overflow.
pub const AXIS_LENGTH_MAX: u32 = 1024;

/// A 3D torus of routers with wrap-around links on every axis.
///
/// Routers are numbered `((x * Y) + y) * Z + z`; link `d` of router `r` is numbered
/// `r * 6 + d.index()`, so per-link tables are plain vectors.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Torus {
    dims: [u32; 3],
    /// Width of one link along each axis as a fraction of an X link: 1.0 everywhere on
    /// SeaStar, 0.5 for Y on Gemini.
    link_width: [f64; 3],
    /// Compute nodes sharing one router: 1 on SeaStar, 2 on Gemini.
    nodes_per_router: u32,
}

impl Torus {
    /// A SeaStar-style torus: one node per router, all links the same width.
    pub fn new(x: u32, y: u32, z: u32) -> Result<Self> {
        let ok = |len: u32| (1..=AXIS_LENGTH_MAX).contains(&len);
        if !(ok(x) && ok(y) && ok(z)) {
            return Err(TopologyError::InvalidDimensions {
                x,
                y,
                z,
                max: AXIS_LENGTH_MAX,
            });
        }
        Ok(Self {
            dims: [x, y, z],
            link_width: [1.0; 3],
            nodes_per_router: 1,
        })
    }

    /// A Gemini-style torus: two nodes share each router and Y links are half as wide as X
    /// and Z links (Titan paper §III-A: "each Gemini supports two nodes, which effectively
    /// halved the Y-dimension length ... Y-dimension connections are comprised of only half
    /// the links"). The dimensions given are router (Gemini) counts.
    pub fn gemini(x: u32, y: u32, z: u32) -> Result<Self> {
        let mut torus = Self::new(x, y, z)?;
        torus.link_width = [1.0, 0.5, 1.0];
        torus.nodes_per_router = 2;
        Ok(torus)
    }

    /// Lengths of the X, Y and Z axes in routers.
    pub fn dims(&self) -> [u32; 3] {
        self.dims
    }

    /// Length of one axis.
    pub fn len(&self, axis: Axis) -> u32 {
        self.dims[axis.index()]
    }

    /// Number of routers in the torus.
    pub fn router_count(&self) -> usize {
        self.dims.iter().map(|&d| d as usize).product()
    }

    /// Number of directed links (six per router).
    pub fn link_count(&self) -> usize {
        self.router_count() * 6
    }

    /// Compute nodes per router (1 SeaStar, 2 Gemini).
    pub fn nodes_per_router(&self) -> u32 {
        self.nodes_per_router
    }

    /// Width of a link along `axis` relative to an X link.
    pub fn link_width(&self, axis: Axis) -> f64 {
        self.link_width[axis.index()]
    }

    /// The dimensions as `XxYxZ`.
    pub fn dims_text(&self) -> String {
        format!("{}x{}x{}", self.dims[0], self.dims[1], self.dims[2])
    }

    /// True when `coord` lies inside the torus.
    pub fn contains(&self, coord: Coord) -> bool {
        coord.x < self.dims[0] && coord.y < self.dims[1] && coord.z < self.dims[2]
    }

    /// `coord` back if it lies inside the torus, an error naming both otherwise.
    pub fn check(&self, coord: Coord) -> Result<Coord> {
        if self.contains(coord) {
            Ok(coord)
        } else {
            Err(TopologyError::CoordOutOfRange {
                coord: coord.to_string(),
                dims: self.dims_text(),
            })
        }
    }

    /// The router number of `coord`, which must lie inside the torus.
    pub fn index(&self, coord: Coord) -> usize {
        assert!(self.contains(coord), "{coord} outside {}", self.dims_text());
        ((coord.x as usize * self.dims[1] as usize) + coord.y as usize) * self.dims[2] as usize
            + coord.z as usize
    }

    /// The coordinate of router number `index`.
    pub fn coord(&self, index: usize) -> Coord {
        assert!(index < self.router_count(), "router {index} out of range");
        let z = index % self.dims[2] as usize;
        let rest = index / self.dims[2] as usize;
        let y = rest % self.dims[1] as usize;
        let x = rest / self.dims[1] as usize;
        Coord::new(x as u32, y as u32, z as u32)
    }

    /// Every coordinate in router-number order.
    pub fn coords(&self) -> impl Iterator<Item = Coord> + '_ {
        (0..self.router_count()).map(|i| self.coord(i))
    }

    /// The number of a directed link in per-link tables.
    pub fn link_index(&self, link: Link) -> usize {
        self.index(link.from) * 6 + link.direction.index()
    }

    /// The directed link numbered `index`.
    pub fn link(&self, index: usize) -> Link {
        Link {
            from: self.coord(index / 6),
            direction: Direction::DOR_ORDER[index % 6],
        }
    }

    /// The router one hop from `coord` in `direction`, wrapping around.
    pub fn neighbour(&self, coord: Coord, direction: Direction) -> Coord {
        let axis = direction.axis();
        let len = self.len(axis);
        let at = coord.along(axis);
        let moved = if direction.is_plus() {
            (at + 1) % len
        } else {
            (at + len - 1) % len
        };
        match axis {
            Axis::X => Coord::new(moved, coord.y, coord.z),
            Axis::Y => Coord::new(coord.x, moved, coord.z),
            Axis::Z => Coord::new(coord.x, coord.y, moved),
        }
    }

    /// Hops along one axis the shortest way round (the Spider paper's `d_axis`:
    /// the smaller of `(a - b) mod L` and `(b - a) mod L`).
    pub fn axis_distance(&self, axis: Axis, a: u32, b: u32) -> u32 {
        let len = self.len(axis);
        assert!(
            a < len && b < len,
            "{a} or {b} outside axis of length {len}"
        );
        let forward = (b + len - a) % len;
        forward.min(len - forward)
    }

    /// The Spider paper's hop count `h(n1, n2) = d_x + d_y + d_z`.
    pub fn hop_distance(&self, a: Coord, b: Coord) -> u32 {
        Axis::ALL
            .iter()
            .map(|&axis| self.axis_distance(axis, a.along(axis), b.along(axis)))
            .sum()
    }

    /// For one axis, the direction and number of hops dimension-order routing takes from
    /// `a` to `b`: the shorter way round; on a tie (an even axis, half way round) the `+` way,
    /// which is what iopath assumes the boot-time tables chose (the papers do not say).
    pub fn axis_move(&self, axis: Axis, a: u32, b: u32) -> (Direction, u32) {
        let len = self.len(axis);
        let forward = (b + len - a) % len;
        let backward = (len - forward) % len;
        if forward <= backward {
            (Direction::along(axis, true), forward)
        } else {
            (Direction::along(axis, false), backward)
        }
    }

    /// The links a message from `from` to `to` crosses under dimension-order routing
    /// (X+, Y+, Z+, X-, Y-, Z-), in the order it crosses them. Empty when `from == to`.
    /// Its length is always [`Torus::hop_distance`].
    pub fn dor_path(&self, from: Coord, to: Coord) -> Vec<Link> {
        let mut path = Vec::with_capacity(self.hop_distance(from, to) as usize);
        self.dor_path_into(from, to, &mut path);
        path
    }

    /// [`Torus::dor_path`] appended to `path`, for callers that walk many paths and want to
    /// keep one buffer.
    pub fn dor_path_into(&self, from: Coord, to: Coord, path: &mut Vec<Link>) {
        assert!(self.contains(from) && self.contains(to));
        let moves = Axis::ALL.map(|axis| self.axis_move(axis, from.along(axis), to.along(axis)));
        let mut at = from;
        // Two passes give the dimension order: all `+` moves X, Y, Z, then all `-` moves.
        for plus_pass in [true, false] {
            for &(direction, hops) in &moves {
                if direction.is_plus() != plus_pass {
                    continue;
                }
                for _ in 0..hops {
                    path.push(Link {
                        from: at,
                        direction,
                    });
                    at = self.neighbour(at, direction);
                }
            }
        }
        assert_eq!(at, to, "dimension-order path must end at its destination");
    }
}
