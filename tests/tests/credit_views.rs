//! The fabric's credit views on the admin tree under load: what `lctl get_param peers` shows
//! when a node sends more than its credits allow, and after it goes idle.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::sync::Arc;

use bytes::Bytes;
use iopath_admin::ParamTree;
use iopath_bench::selftest::service::{BRW_WRITE, OP_BRW, SELFTEST_PORTAL, SelftestService};
use iopath_fabric::{ChecksumKind, Interface, Limits, Nid, Node, NodeConfig};
use iopath_proto::selftest::BrwRequest;
use prost::Message as _;

async fn tcp_node(limits: Limits) -> Node {
    let interfaces = vec![Interface::Tcp {
        nid: "127.0.0.1:0@tcp0".parse().unwrap(),
    }];
    Node::start(NodeConfig {
        interfaces,
        limits,
        fault: None,
        ..Default::default()
    })
    .await
    .unwrap()
}

/// The `tx` and `min` columns of `peer`'s row in a `peers` view.
fn peer_row(view: &str, peer: &str) -> (i64, i64) {
    let row = view
        .lines()
        .find(|l| l.starts_with(peer))
        .unwrap_or_else(|| panic!("no row for {peer} in\n{view}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    (cols[7].parse().unwrap(), cols[8].parse().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn peers_view_shows_negative_credits_under_overload_and_full_credits_when_idle() {
    let limits = Limits {
        peer_credits: 2,
        ni_credits: 4,
        ..Limits::default()
    };
    let client = tcp_node(limits.clone()).await;
    let server = tcp_node(limits).await;
    server
        .register_service(SELFTEST_PORTAL, Arc::new(SelftestService::default()))
        .unwrap();
    let tree = ParamTree::new();
    iopath_fabric::params::register(&client, &tree, "").unwrap();
    let header = tree.get("peers").unwrap()[0]
        .value
        .lines()
        .next()
        .unwrap()
        .to_owned();
    let columns: Vec<&str> = header.split_whitespace().collect();
    assert_eq!(
        columns,
        [
            "nid", "refs", "state", "last", "max", "rtr", "min", "tx", "min", "queue"
        ],
        "Lustre's peers columns"
    );

    let tasks = start_writers(&client, server.nid(), 32, 4);
    for task in tasks {
        task.await.unwrap();
    }
    // A send's credit comes back when the send completes, which may be just after its reply
    // reached the writer: idle is when the last of them is back (bounded wait).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (view, tx, min) = loop {
        let view = tree.get("peers").unwrap()[0].value.clone();
        let (tx, min) = peer_row(&view, &server.nid().to_string());
        if tx == 2 || std::time::Instant::now() > deadline {
            break (view, tx, min);
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(tx, 2, "idle: every peer credit is back\n{view}");
    assert!(
        min < 0,
        "32 senders on 2 peer credits queued: min must be negative\n{view}"
    );
    let nis = tree.get("nis").unwrap()[0].value.clone();
    assert!(nis.contains(&client.nid().to_string()), "{nis}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_loaded_routers_peers_view_shows_negative_router_credits() {
    use iopath_fabric::router::RouterConfig;
    use iopath_fabric::routing::RouteSpec;
    let tcp = |net: u16| Interface::Tcp {
        nid: format!("127.0.0.1:0@tcp{net}").parse().unwrap(),
    };
    let config = RouterConfig {
        large_buffers: 2,
        peer_buffer_credits: 4,
        ..RouterConfig::default()
    };
    let router = Node::start(NodeConfig {
        interfaces: vec![tcp(0), tcp(1)],
        router: Some(config),
        ..NodeConfig::default()
    })
    .await
    .unwrap();
    let route = |to: u16, gateway| {
        vec![RouteSpec {
            net: Nid::tcp("127.0.0.1:1".parse().unwrap(), to).net,
            gateway,
            hops: 1,
            priority: 0,
        }]
    };
    let client = Node::start(NodeConfig {
        interfaces: vec![tcp(0)],
        routes: route(1, router.nids()[0]),
        ..NodeConfig::default()
    })
    .await
    .unwrap();
    let server = Node::start(NodeConfig {
        interfaces: vec![tcp(1)],
        routes: route(0, router.nids()[1]),
        ..NodeConfig::default()
    })
    .await
    .unwrap();
    server
        .register_service(SELFTEST_PORTAL, Arc::new(SelftestService::default()))
        .unwrap();
    let tree = ParamTree::new();
    iopath_fabric::params::register(&router, &tree, "").unwrap();

    // The router holds every message it forwards 20 ms before sending it on, so the queue
    // behind its two large buffers lasts the whole run instead of moments a sampler on a
    // busy machine can miss (CI once sampled 0.4 s of a faster router and never saw it).
    router
        .fail_points()
        .set_fail_loc("router.forward:delay=20ms")
        .unwrap();
    let tasks = start_writers(&client, server.nid(), 32, 2);
    // While loaded: some peer's router credits are below zero right now.
    let mut negative_seen = None;
    while negative_seen.is_none() && !tasks.iter().all(|t| t.is_finished()) {
        let view = tree.get("peers").unwrap()[0].value.clone();
        let negative = view.lines().skip(1).any(|row| {
            row.split_whitespace()
                .nth(5)
                .is_some_and(|rtr| rtr.starts_with('-'))
        });
        if negative {
            negative_seen = Some(view);
        }
        tokio::time::sleep(std::time::Duration::from_micros(300)).await;
    }
    for task in tasks {
        task.await.unwrap();
    }
    router.fail_points().disarm_all();
    let during = negative_seen
        .expect("no negative router credits seen under 16x overload of the large buffers");
    println!("peers under load:\n{during}");
    // After: credits back at their maximum, and `min` remembers the queue. A router credit
    // comes back when the router has passed its message on, which may be just after the
    // writer saw its reply: idle is when the last of them is back (bounded wait; the suite
    // once read 3 of 4 on a loaded machine).
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    let (view, cols) = loop {
        let view = tree.get("peers").unwrap()[0].value.clone();
        let client_row = view
            .lines()
            .find(|l| l.starts_with(&client.nid().to_string()))
            .unwrap_or_else(|| panic!("{view}"))
            .to_owned();
        let cols: Vec<String> = client_row.split_whitespace().map(str::to_owned).collect();
        if cols[5] == "4" || std::time::Instant::now() > deadline {
            break (view, cols);
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    };
    assert_eq!(cols[5], "4", "router credits back at max when idle\n{view}");
    assert!(
        cols[6].parse::<i64>().unwrap() < 0,
        "router credit min below zero\n{view}"
    );
    let buffers = tree.get("buffers").unwrap()[0].value.clone();
    assert!(
        buffers.lines().any(|l| l.starts_with("large")
            && l.split_whitespace()
                .nth(4)
                .is_some_and(|m| m.starts_with('-'))),
        "{buffers}"
    );
}

/// `writers` tasks, each writing `each` 1 MiB buffers to `server` by brw (the server pulls).
fn start_writers(
    client: &Node,
    server: Nid,
    writers: usize,
    each: usize,
) -> Vec<tokio::task::JoinHandle<()>> {
    let data = Bytes::from(vec![7u8; 1 << 20]);
    (0..writers)
        .map(|_| {
            let (client, data) = (client.clone(), data.clone());
            tokio::spawn(async move {
                for _ in 0..each {
                    let region = client.regions().register_source(data.clone()).unwrap();
                    let desc = region.describe_all(ChecksumKind::Crc32);
                    let body = BrwRequest {
                        mode: BRW_WRITE,
                        buffer: Some(desc.to_proto()),
                        fill: 0,
                    };
                    client
                        .call(server, SELFTEST_PORTAL, OP_BRW, body.encode_to_vec().into())
                        .await
                        .unwrap();
                }
            })
        })
        .collect()
}
