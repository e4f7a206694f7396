//! The fabric's credit views on the admin tree under load: what `lctl get_param peers` shows
//! when a node sends more than its credits allow, and after it goes idle.

use std::sync::Arc;

use bytes::Bytes;
use iopath_admin::ParamTree;
use iopath_bench::selftest::service::{BRW_WRITE, OP_BRW, SELFTEST_PORTAL, SelftestService};
use iopath_fabric::{ChecksumKind, Interface, Limits, Node, NodeConfig};
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
    (cols[5].parse().unwrap(), cols[6].parse().unwrap())
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
    for column in ["nid", "max", "rtr", "min", "tx", "queue"] {
        assert!(
            header.contains(column),
            "peers header {header:?} lacks {column}"
        );
    }

    let data = Bytes::from(vec![7u8; 1 << 20]);
    let mut tasks = Vec::new();
    for _ in 0..32 {
        let (client, server, data) = (client.clone(), server.nid(), data.clone());
        tasks.push(tokio::spawn(async move {
            for _ in 0..4 {
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
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let view = tree.get("peers").unwrap()[0].value.clone();
    let (tx, min) = peer_row(&view, &server.nid().to_string());
    assert_eq!(tx, 2, "idle: every peer credit is back\n{view}");
    assert!(
        min < 0,
        "32 senders on 2 peer credits queued: min must be negative\n{view}"
    );
    let nis = tree.get("nis").unwrap()[0].value.clone();
    assert!(nis.contains(&client.nid().to_string()), "{nis}");
}
