//! Modeled links: an interface's sends take the modeled bandwidth and latency, shared in the
//! order they were sent, on either transport. The rates are far below what this host does, so
//! what is measured is the model, not the host.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_fabric::link::LinkModel;
use iopath_fabric::{ChecksumKind, Interface, MemNetwork, Nid, Node, NodeConfig};

const MIB: u64 = 1 << 20;

/// A sender whose interface is modeled by `model`, and `receivers` plain nodes, on one
/// in-memory network or on loopback TCP.
async fn nodes(tcp: bool, model: LinkModel, receivers: u32) -> (Node, Vec<Node>) {
    let network = MemNetwork::new();
    let start = |n: u32, link: Option<LinkModel>| {
        let network = Arc::clone(&network);
        async move {
            let interface = if tcp {
                Interface::Tcp {
                    nid: "127.0.0.1:0@tcp0".parse().unwrap(),
                }
            } else {
                Interface::Mem {
                    nid: Nid::mem(n, 0),
                    network,
                }
            };
            let net = if tcp {
                "127.0.0.1:1@tcp0".parse::<Nid>().unwrap().net
            } else {
                Nid::mem(n, 0).net
            };
            Node::start(NodeConfig {
                interfaces: vec![interface],
                links: link.map(|m| vec![(net, m)]).unwrap_or_default(),
                ..NodeConfig::default()
            })
            .await
            .unwrap()
        }
    };
    let sender = start(1, Some(model)).await;
    let mut others = Vec::new();
    for n in 0..receivers {
        others.push(start(n + 2, None).await);
    }
    (sender, others)
}

/// `receiver` pulls `bytes` from `sender`: the data crosses the sender's link. Returns the
/// seconds it took.
async fn pull(sender: &Node, receiver: &Node, bytes: u64) -> f64 {
    let data = Bytes::from(vec![7u8; bytes as usize]);
    let region = sender.regions().register_source(data.clone()).unwrap();
    let desc = region.describe(0, bytes, ChecksumKind::Crc32).unwrap();
    let started = Instant::now();
    let got = receiver.bulk_get(&desc).await.unwrap();
    let seconds = started.elapsed().as_secs_f64();
    assert_eq!(got.len() as u64, bytes);
    seconds
}

fn model(mb_s: f64, latency: Duration, time_scale: f64) -> LinkModel {
    LinkModel {
        bandwidth_bytes_s: mb_s * 1e6,
        latency,
        time_scale,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_flow_gets_the_modeled_bandwidth() {
    for tcp in [false, true] {
        // 640 MB/s modeled at a time scale of 16: 40 MB/s here.
        let m = model(640.0, Duration::from_micros(50), 16.0);
        let (sender, receivers) = nodes(tcp, m, 1).await;
        let bytes = 16 * MIB;
        let seconds = pull(&sender, &receivers[0], bytes).await;
        let expected = bytes as f64 / m.host_bandwidth_bytes_s();
        let ratio = seconds / expected;
        println!("tcp {tcp}: {seconds:.3} s for {expected:.3} s modeled ({ratio:.3})");
        assert!(
            (0.97..1.05).contains(&ratio),
            "tcp {tcp}: {seconds:.3} s, the model says {expected:.3} s"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn two_flows_sharing_a_link_get_half_each() {
    let m = model(40.0, Duration::ZERO, 1.0);
    let (sender, receivers) = nodes(false, m, 2).await;
    // Enough chunks that the one the first flow may get before the second starts is small.
    let bytes = 16 * MIB;
    let alone = bytes as f64 / m.host_bandwidth_bytes_s();
    let (a, b) = tokio::join!(
        pull(&sender, &receivers[0], bytes),
        pull(&sender, &receivers[1], bytes)
    );
    for (flow, seconds) in [("first", a), ("second", b)] {
        // Half the link each: twice the time alone.
        let ratio = seconds / (2.0 * alone);
        println!(
            "{flow}: {seconds:.3} s against {:.3} s ({ratio:.3})",
            2.0 * alone
        );
        assert!(
            (0.9..1.1).contains(&ratio),
            "{flow} flow took {seconds:.3} s; half the link would take {:.3} s",
            2.0 * alone
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn latency_holds_the_credits_and_bounds_a_window() {
    // A wire far faster than the latency: a pull's window of chunks is in flight at once, so
    // each window takes one latency (a round trip of GET and REPLY; the GETs go unmodeled).
    let m = model(100_000.0, Duration::from_millis(40), 1.0);
    let (sender, receivers) = nodes(false, m, 1).await;
    let window = iopath_fabric::Limits::default().bulk_window_chunks as u64;
    let seconds = pull(&sender, &receivers[0], 2 * window * MIB).await;
    println!("two windows over a 40 ms link: {seconds:.3} s");
    assert!(
        (0.075..0.2).contains(&seconds),
        "two windows of chunks should take two latencies (80 ms), took {seconds:.3} s"
    );
}
