//! The topology model's fine-grained routes drive a real fabric node: Algorithm 1's output for a
//! Titan client becomes its LNET routing table, and traffic to each storage network goes to the
//! primary router (hop 1) until it is down, then to the backups (hop 10).

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::collections::{BTreeMap, BTreeSet};

use iopath_fabric::routing::RouteSpec;
use iopath_fabric::{Interface, MemNetwork, NetId, Nid, Node, NodeConfig};
use iopath_topology::Coord;
use iopath_topology::presets::titan::TitanSpider2;

#[tokio::test]
async fn titan_fgr_routes_load_into_a_node_and_prefer_the_primary() {
    let client_coord = Coord { x: 5, y: 7, z: 11 };
    let routes = TitanSpider2::new().routes(client_coord).unwrap();
    assert_eq!(routes.len(), 108, "36 primaries and 72 backups");
    let specs: Vec<RouteSpec> = routes
        .iter()
        .map(|r| RouteSpec::parse(&format!("{} {} {} 0", r.net, r.gateway, r.hops)).unwrap())
        .collect();
    // The client has an interface on every gni network its gateways are on, as on Titan.
    let gni_nets: BTreeSet<NetId> = specs.iter().map(|s| s.gateway.net).collect();
    let interfaces = gni_nets
        .iter()
        .map(|net| Interface::Mem {
            nid: format!("{}@{net}", 70_000).parse().unwrap(),
            network: MemNetwork::new(),
        })
        .collect();
    let node = Node::start(NodeConfig {
        interfaces,
        routes: specs.clone(),
        ..NodeConfig::default()
    })
    .await
    .unwrap();
    assert_eq!(node.routes().len(), 108);

    // For each storage network: exactly one hop-1 route, two hop-10 routes.
    let mut per_net: BTreeMap<NetId, Vec<&RouteSpec>> = BTreeMap::new();
    for spec in &specs {
        per_net.entry(spec.net).or_default().push(spec);
    }
    assert_eq!(per_net.len(), 36, "one route set per IB leaf switch");
    for (net, set) in &per_net {
        let hops: Vec<u32> = {
            let mut h: Vec<u32> = set.iter().map(|s| s.hops).collect();
            h.sort();
            h
        };
        assert_eq!(hops, [1, 10, 10], "{net}");
    }

    // Messages to a storage network leave through its primary while it is up; no routers run
    // here, so each send fails, which marks that router down at once, and the next message
    // takes a backup — never another network's router. One send per call makes the order plain.
    let (net, set) = per_net.iter().next().unwrap();
    let primary = set.iter().find(|s| s.hops == 1).unwrap().gateway;
    let backups: BTreeSet<Nid> = set
        .iter()
        .filter(|s| s.hops == 10)
        .map(|s| s.gateway)
        .collect();
    let target: Nid = format!("1@{net}").parse().unwrap();
    let once = iopath_fabric::rpc::CallOptions {
        timeout: None,
        resends_max: Some(0),
    };
    let mut order = Vec::new();
    for _ in 0..3 {
        let before: BTreeMap<Nid, u64> = node.messages_per_gateway().into_iter().collect();
        let err = node
            .call_with(target, 20, 1, bytes::Bytes::new(), once)
            .await
            .unwrap_err();
        assert!(
            !matches!(err, iopath_fabric::FabricError::NoRoute { .. }),
            "{err}"
        );
        let after: BTreeMap<Nid, u64> = node.messages_per_gateway().into_iter().collect();
        let used: Vec<Nid> = after
            .iter()
            .filter(|(nid, n)| before.get(*nid) != Some(*n))
            .map(|(nid, _)| *nid)
            .collect();
        assert_eq!(used.len(), 1, "{used:?}");
        order.push(used[0]);
    }
    assert_eq!(order[0], primary, "the primary first");
    assert_eq!(
        order[1..].iter().copied().collect::<BTreeSet<_>>(),
        backups,
        "then each backup"
    );
    let err = node
        .call_with(target, 20, 1, bytes::Bytes::new(), once)
        .await
        .unwrap_err();
    assert!(
        err.to_string().contains("every route to"),
        "all three down: {err}"
    );
}
