//! Placement never reuses a client; the Spider routing configurations obey their definitions.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use std::collections::HashSet;

use iopath_topology::placement::{Placement, PlacementKind, Target};
use iopath_topology::presets::JaguarSpider;
use iopath_topology::presets::jaguar::{self, OSTS};
use iopath_topology::spider_routing::{SpiderRouting, SpiderRoutingConfig};
use iopath_topology::{Coord, Torus};

fn distinct(p: &Placement) -> bool {
    let clients: HashSet<Coord> = p.clients().collect();
    clients.len() == p.pairs.len()
}

#[test]
fn nearest_free_takes_the_nearest_and_never_reuses_a_client() {
    // A ring of 10: server at 0 with 3 targets, server at 5 with 2 targets.
    let t = Torus::new(10, 1, 1).unwrap();
    let targets = [
        Target {
            index: 0,
            server: 0,
            anchor: Coord::new(0, 0, 0),
        },
        Target {
            index: 1,
            server: 0,
            anchor: Coord::new(0, 0, 0),
        },
        Target {
            index: 2,
            server: 0,
            anchor: Coord::new(0, 0, 0),
        },
        Target {
            index: 3,
            server: 1,
            anchor: Coord::new(5, 0, 0),
        },
        Target {
            index: 4,
            server: 1,
            anchor: Coord::new(5, 0, 0),
        },
    ];
    let available: Vec<Coord> = (1..10)
        .filter(|&x| x != 5)
        .map(|x| Coord::new(x, 0, 0))
        .collect();
    let p = Placement::nearest_free(&t, &available, &targets, PlacementKind::Placed).unwrap();
    let xs: Vec<u32> = p.clients().map(|c| c.x).collect();
    // Server 0: 1 and 9 (1 hop; 1 listed first), then 2 (2 hops, before 8). Server 1: 4, 6.
    assert_eq!(xs, [1, 9, 2, 4, 6]);
    assert!(distinct(&p));

    assert!(Placement::nearest_free(&t, &available[..4], &targets, PlacementKind::Placed).is_err());
    let dup = [
        Coord::new(1, 0, 0),
        Coord::new(1, 0, 0),
        Coord::new(2, 0, 0),
        Coord::new(3, 0, 0),
        Coord::new(4, 0, 0),
    ];
    assert!(Placement::nearest_free(&t, &dup, &targets, PlacementKind::Placed).is_err());
    assert!(Placement::launcher_order(&dup, &targets).is_err());
}

#[test]
fn jaguar_placements_use_each_client_once() {
    let m = JaguarSpider::new();
    assert_eq!(m.launcher_order.len(), jaguar::COMPUTE_NODES);
    let sio: HashSet<Coord> = m.sio.iter().copied().collect();
    assert!(
        m.launcher_order.iter().all(|c| !sio.contains(c)),
        "no client on an SIO node"
    );
    for n in [1, 13, 96] {
        let targets = m.direct_targets(n).unwrap();
        assert_eq!(targets.len(), 7 * n);
        let placed =
            Placement::nearest_free(&m.torus, &m.launcher_order, &targets, PlacementKind::Placed)
                .unwrap();
        assert!(distinct(&placed));
        let job = m.job_nodes(1000, targets.len()).unwrap();
        let confined =
            Placement::nearest_free(&m.torus, job, &targets, PlacementKind::Confined).unwrap();
        assert!(distinct(&confined));
        let job_set: HashSet<Coord> = job.iter().copied().collect();
        assert!(
            confined.clients().all(|c| job_set.contains(&c)),
            "confined stays in the job"
        );
    }
    assert!(m.direct_targets(0).is_err());
    assert!(m.direct_targets(97).is_err());
    assert!(m.job_nodes(jaguar::COMPUTE_NODES - 10, OSTS).is_err());
}

#[test]
fn routing_configurations_obey_their_definitions() {
    let m = JaguarSpider::new();
    let clients = &m.launcher_order;
    let sample: Vec<Coord> = clients.iter().step_by(997).copied().collect();
    for config in SpiderRoutingConfig::ALL {
        let routing = SpiderRouting::new(&m.torus, &m.fabric, config, clients).unwrap();
        let mut projected = vec![HashSet::new(); m.fabric.server_leaf.len()];
        for &client in &sample {
            for server in 0..m.fabric.server_leaf.len() as u32 {
                let gws = routing.gateways(client, server).unwrap();
                let leaf = m.fabric.server_leaf[server as usize];
                match config {
                    SpiderRoutingConfig::Baseline => assert_eq!(gws.len(), jaguar::ROUTERS),
                    SpiderRoutingConfig::LeafRoundRobin => {
                        assert_eq!(gws.len(), 6);
                        assert!(
                            gws.iter().all(|&r| m.fabric.routers[r].leaf == leaf),
                            "never leaves the leaf group"
                        );
                    }
                    SpiderRoutingConfig::NearestNeighbour => {
                        assert_eq!(gws.len(), 1);
                        assert_eq!(
                            m.fabric.routers[gws[0]].leaf, leaf,
                            "never leaves the leaf group"
                        );
                    }
                    SpiderRoutingConfig::Projection => {
                        assert_eq!(gws.len(), 1);
                        assert_eq!(m.fabric.routers[gws[0]].leaf, leaf);
                        projected[server as usize].insert(gws[0]);
                    }
                }
            }
        }
        if config == SpiderRoutingConfig::Projection {
            // One router per server, the same for every client, and no router shared.
            assert!(projected.iter().all(|s| s.len() == 1));
            let routers: HashSet<usize> =
                projected.iter().flat_map(|s| s.iter().copied()).collect();
            assert_eq!(routers.len(), m.fabric.server_leaf.len());
        }
        let routes = routing.routes(sample[0]).unwrap();
        let expected = match config {
            SpiderRoutingConfig::NearestNeighbour => 32,
            _ => 192,
        };
        assert_eq!(routes.len(), expected, "{config}");
        assert!(
            routes
                .iter()
                .all(|r| r.hops == 1 && r.gateway.ends_with("@ptl"))
        );
    }
}

#[test]
fn nearest_neighbour_is_balanced_and_near() {
    let m = JaguarSpider::new();
    let clients = &m.launcher_order;
    let routing = SpiderRouting::new(
        &m.torus,
        &m.fabric,
        SpiderRoutingConfig::NearestNeighbour,
        clients,
    )
    .unwrap();
    let share = clients.len().div_ceil(6);
    let mut load = vec![0usize; m.fabric.routers.len()];
    for &c in clients {
        load[routing.gateways(c, 0).unwrap()[0]] += 1;
    }
    assert!(load.iter().all(|&n| n <= share));
    assert_eq!(load.iter().sum::<usize>(), clients.len());
}
