//! Hop distances and dimension-order paths, checked against examples worked by hand.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use iopath_topology::{Axis, Coord, Direction, Torus};

fn c(x: u32, y: u32, z: u32) -> Coord {
    Coord::new(x, y, z)
}

#[test]
fn axis_distance_is_the_shorter_way_round() {
    let t = Torus::new(8, 5, 1).unwrap();
    // X ring of 8: 1 -> 6 is 5 forward or 3 backward.
    assert_eq!(t.axis_distance(Axis::X, 1, 6), 3);
    assert_eq!(t.axis_distance(Axis::X, 6, 1), 3);
    assert_eq!(t.axis_distance(Axis::X, 0, 7), 1); // wrap-around
    assert_eq!(t.axis_distance(Axis::X, 2, 6), 4); // tie: half way round
    assert_eq!(t.axis_distance(Axis::X, 3, 3), 0);
    // Y ring of 5 (odd): never a tie.
    assert_eq!(t.axis_distance(Axis::Y, 0, 3), 2);
    assert_eq!(t.axis_distance(Axis::Y, 4, 0), 1);
    assert_eq!(t.axis_distance(Axis::Z, 0, 0), 0);
}

#[test]
fn hop_distance_sums_the_axes() {
    let t = Torus::new(25, 32, 24).unwrap();
    // (0,0,0) -> (24,31,23): one hop back round each axis.
    assert_eq!(t.hop_distance(c(0, 0, 0), c(24, 31, 23)), 3);
    // (3,4,5) -> (20,20,17): X 17 fwd / 8 back = 8; Y 16 either way = 16; Z 12 = 12.
    assert_eq!(t.hop_distance(c(3, 4, 5), c(20, 20, 17)), 36);
    // The diameter of 25x32x24 is 12 + 16 + 12.
    let max = t
        .coords()
        .map(|n| t.hop_distance(c(0, 0, 0), n))
        .max()
        .unwrap();
    assert_eq!(max, 40);
}

#[test]
fn dor_path_goes_plus_moves_then_minus_moves() {
    let t = Torus::new(6, 6, 6).unwrap();
    // From (1,4,2) to (3,2,0): X +2, Y -2, Z -2. Order X+, (Y+), (Z+), (X-), Y-, Z-.
    let path = t.dor_path(c(1, 4, 2), c(3, 2, 0));
    let expected = [
        (c(1, 4, 2), Direction::XPlus),
        (c(2, 4, 2), Direction::XPlus),
        (c(3, 4, 2), Direction::YMinus),
        (c(3, 3, 2), Direction::YMinus),
        (c(3, 2, 2), Direction::ZMinus),
        (c(3, 2, 1), Direction::ZMinus),
    ];
    let got: Vec<(Coord, Direction)> = path.iter().map(|l| (l.from, l.direction)).collect();
    assert_eq!(got, expected);

    // A Z+ move comes before an X- move: (4,0,0) -> (2,0,1) is Z+ then X- X-.
    let got: Vec<Direction> = t
        .dor_path(c(4, 0, 0), c(2, 0, 1))
        .iter()
        .map(|l| l.direction)
        .collect();
    assert_eq!(
        got,
        [Direction::ZPlus, Direction::XMinus, Direction::XMinus]
    );
}

#[test]
fn dor_path_wraps_around_and_breaks_ties_plus() {
    let t = Torus::new(6, 5, 4).unwrap();
    // X 5 -> 1 is shorter forwards through the wrap: 5 -> 0 -> 1.
    let path = t.dor_path(c(5, 0, 0), c(1, 0, 0));
    let got: Vec<(Coord, Direction)> = path.iter().map(|l| (l.from, l.direction)).collect();
    assert_eq!(
        got,
        [
            (c(5, 0, 0), Direction::XPlus),
            (c(0, 0, 0), Direction::XPlus)
        ]
    );
    // Y 0 -> 4 on a ring of 5 goes backwards through the wrap: 0 -> 4.
    let path = t.dor_path(c(0, 0, 0), c(0, 4, 0));
    assert_eq!(path.len(), 1);
    assert_eq!(
        (path[0].from, path[0].direction),
        (c(0, 0, 0), Direction::YMinus)
    );
    // Ties (X 0 -> 3 on 6, Z 1 -> 3 on 4) go the + way.
    let dirs: Vec<Direction> = t
        .dor_path(c(0, 0, 1), c(3, 0, 3))
        .iter()
        .map(|l| l.direction)
        .collect();
    assert_eq!(
        dirs,
        [Direction::XPlus; 3]
            .iter()
            .chain(&[Direction::ZPlus; 2])
            .copied()
            .collect::<Vec<_>>()
    );
}

#[test]
fn every_path_is_as_long_as_the_distance_and_ends_at_its_destination() {
    let t = Torus::new(5, 4, 3).unwrap();
    for a in t.coords() {
        for b in t.coords() {
            let path = t.dor_path(a, b);
            assert_eq!(path.len() as u32, t.hop_distance(a, b));
            let mut at = a;
            for link in &path {
                assert_eq!(link.from, at);
                at = t.neighbour(at, link.direction);
            }
            assert_eq!(at, b);
            // Directions never go backwards in dimension order.
            assert!(path.windows(2).all(|w| w[0].direction <= w[1].direction));
        }
    }
}

#[test]
fn indices_round_trip_and_bad_input_is_an_error() {
    let t = Torus::new(3, 4, 5).unwrap();
    for i in 0..t.router_count() {
        assert_eq!(t.index(t.coord(i)), i);
    }
    for l in 0..t.link_count() {
        assert_eq!(t.link_index(t.link(l)), l);
    }
    assert!(t.check(c(3, 0, 0)).is_err());
    assert!(Torus::new(0, 1, 1).is_err());
    let g = Torus::gemini(25, 16, 24).unwrap();
    assert_eq!(g.link_width(Axis::Y), 0.5);
    assert_eq!(g.link_width(Axis::X), 1.0);
    assert_eq!(g.nodes_per_router(), 2);
}
