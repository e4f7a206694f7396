//! The flow model against the papers' geometric chain and against its own invariants.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use iopath_topology::{Coord, Flow, FlowModel, FlowNetwork, Torus};

/// A line of `k` senders at x = 1..=k streaming into router 0 over X- links, with link
/// bandwidth `b` and injection bandwidth `inj`. Returns each sender's rate.
fn chain(k: u32, b: f64, inj: f64) -> Vec<f64> {
    // A ring long enough that every sender goes X- (the short way) to x = 0.
    let torus = Torus::new(2 * k + 2, 1, 1).unwrap();
    let mut net = FlowNetwork::new();
    let link_ports: Vec<usize> = (0..torus.link_count())
        .map(|_| net.add_port(b).unwrap())
        .collect();
    let mut flows = Vec::new();
    for h in 1..=k {
        let inj_port = net.add_port(inj).unwrap();
        let mut ports = vec![inj_port];
        for link in torus.dor_path(Coord::new(h, 0, 0), Coord::new(0, 0, 0)) {
            ports.push(link_ports[torus.link_index(link)]);
        }
        flows.push(Flow {
            ports,
            demand_mb_per_s: inj,
        });
    }
    let model = FlowModel::new(&net, &flows).unwrap();
    let alloc = model.solve();
    assert!(alloc.converged, "chain of {k} did not converge");
    alloc.rates_mb_per_s
}

#[test]
fn geometric_chain_reproduces_b_link_over_2_to_the_h() {
    let b = 3020.0;
    for k in 1..=16u32 {
        let rates = chain(k, b, 1705.0);
        for h in 1..=k {
            // Node h hops from the link gets B/2^H; the farthest node (alone at its router,
            // n = 1) gets the same as its neighbour. A lone sender is limited by injection.
            let expected = if k == 1 {
                1705.0
            } else if h < k {
                b / 2f64.powi(h as i32)
            } else {
                b / 2f64.powi(h as i32 - 1)
            };
            let got = rates[(h - 1) as usize];
            assert!(
                (got - expected).abs() <= expected * 1e-6,
                "k={k} h={h}: got {got}, expected {expected}"
            );
        }
    }
    // The paper's numbers: first node 1,510 MB/s (measured 1,513). With 15 senders the two
    // farthest get 3020/2^14 MB/s = 184 KB/s (measured: "approximately 166 KB/s").
    let rates = chain(15, b, 1705.0);
    assert!((rates[0] - 1510.0).abs() < 1e-6);
    assert!((rates[13] * 1000.0 - 184.3).abs() < 0.1);
    assert!((rates[14] * 1000.0 - 184.3).abs() < 0.1);
}

#[test]
fn allocation_is_feasible_and_every_flow_is_bottlenecked() {
    // A small random torus workload: check capacities hold and no flow could grow alone.
    let torus = Torus::new(5, 4, 3).unwrap();
    let mut seed: u64 = 0x9e3779b97f4a7c15;
    let mut rand = |n: u32| {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        (seed % u64::from(n)) as u32
    };
    for trial in 0..20 {
        let mut net = FlowNetwork::new();
        let links: Vec<usize> = (0..torus.link_count())
            .map(|_| net.add_port(100.0 + f64::from(rand(200))).unwrap())
            .collect();
        let mut flows = Vec::new();
        for _ in 0..30 {
            let a = Coord::new(rand(5), rand(4), rand(3));
            let b = Coord::new(rand(5), rand(4), rand(3));
            let mut ports = vec![net.add_port(150.0).unwrap()];
            ports.extend(
                torus
                    .dor_path(a, b)
                    .iter()
                    .map(|l| links[torus.link_index(*l)]),
            );
            flows.push(Flow {
                ports,
                demand_mb_per_s: 10.0 + f64::from(rand(100)),
            });
        }
        let model = FlowModel::new(&net, &flows).unwrap();
        let alloc = model.solve();
        assert!(
            alloc.converged,
            "trial {trial} did not converge in {} rounds",
            alloc.rounds
        );
        let mut load = vec![0.0; net.port_count()];
        for (f, flow) in flows.iter().enumerate() {
            let r = alloc.rates_mb_per_s[f];
            assert!(r > 0.0 && r <= flow.demand_mb_per_s * (1.0 + 1e-9));
            for &p in &flow.ports {
                load[p] += r;
            }
        }
        for (p, &l) in load.iter().enumerate() {
            assert!(
                l <= net.capacity(p) * (1.0 + 1e-9),
                "trial {trial}: port {p} over capacity"
            );
        }
        // Pareto: each flow is at its demand or crosses a full port.
        for (f, flow) in flows.iter().enumerate() {
            let r = alloc.rates_mb_per_s[f];
            let at_demand = r >= flow.demand_mb_per_s * (1.0 - 1e-6);
            let blocked = flow
                .ports
                .iter()
                .any(|&p| load[p] >= net.capacity(p) * (1.0 - 1e-6));
            assert!(at_demand || blocked, "trial {trial}: flow {f} could grow");
        }
    }
}

#[test]
fn completion_times_follow_freed_bandwidth() {
    // Two flows share one 100 MB/s port; one has 100 MB, the other 300 MB. Both get 50 until
    // t = 2 s, then the second gets all 100 for its last 200 MB: done at 4 s.
    let mut net = FlowNetwork::new();
    let shared = net.add_port(100.0).unwrap();
    let a = net.add_port(1000.0).unwrap();
    let b = net.add_port(1000.0).unwrap();
    let flows = vec![
        Flow {
            ports: vec![a, shared],
            demand_mb_per_s: 1000.0,
        },
        Flow {
            ports: vec![b, shared],
            demand_mb_per_s: 1000.0,
        },
    ];
    let model = FlowModel::new(&net, &flows).unwrap();
    let done = model.completion(&[100.0, 300.0]).unwrap();
    assert!((done.times_s[0] - 2.0).abs() < 1e-9);
    assert!((done.times_s[1] - 4.0).abs() < 1e-9);
    assert!((done.initial.aggregate_mb_per_s() - 100.0).abs() < 1e-9);
    assert_eq!(done.solves, 2);
}

#[test]
fn bad_inputs_are_errors() {
    let mut net = FlowNetwork::new();
    assert!(net.add_port(0.0).is_err());
    assert!(net.add_port(f64::INFINITY).is_err());
    let p = net.add_port(1.0).unwrap();
    assert!(
        FlowModel::new(
            &net,
            &[Flow {
                ports: vec![p + 1],
                demand_mb_per_s: 1.0
            }]
        )
        .is_err()
    );
    assert!(
        FlowModel::new(
            &net,
            &[Flow {
                ports: vec![p],
                demand_mb_per_s: -1.0
            }]
        )
        .is_err()
    );
    assert!(
        FlowModel::new(
            &net,
            &[Flow {
                ports: vec![p, p],
                demand_mb_per_s: 1.0
            }]
        )
        .is_err()
    );
    let model = FlowModel::new(
        &net,
        &[Flow {
            ports: vec![p],
            demand_mb_per_s: 1.0,
        }],
    )
    .unwrap();
    assert!(model.completion(&[0.0]).is_err());
}
