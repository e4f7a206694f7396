//! Credits under overload: in-flight sends never exceed the credits, counts go negative by the
//! queue, `min` remembers the worst, and everything comes back when idle.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::{OP_PULL, PORTAL, TestService, Transport, encode_desc, nodes, pattern};
use iopath_fabric::{ChecksumKind, Limits};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn in_flight_never_exceeds_credits_under_10x_overload_and_all_come_back() {
    let ni_credits = 8;
    let peer_credits = 4;
    let limits = Limits {
        ni_credits,
        peer_credits,
        ..Limits::default()
    };
    let all = nodes(Transport::Tcp, 3, limits, None).await;
    let client = all[0].clone();
    for server in &all[1..] {
        TestService::install(server);
    }
    // Ten times as many concurrent 1 MiB writers as the client's interface has credits.
    let writers = 10 * ni_credits as usize;
    let stop = Arc::new(AtomicBool::new(false));
    let sampler = {
        let client = client.clone();
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut samples = 0u64;
            let mut worst_in_flight = 0;
            while !stop.load(Ordering::Relaxed) {
                let ni = &client.interfaces()[0];
                let credits = ni.credits();
                assert!(
                    credits.in_flight <= ni_credits,
                    "interface in flight {credits:?}"
                );
                worst_in_flight = worst_in_flight.max(credits.in_flight);
                for (peer, snapshot) in ni.peers() {
                    assert!(
                        snapshot.in_flight <= peer_credits,
                        "peer {peer} in flight {snapshot:?}"
                    );
                }
                samples += 1;
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            (samples, worst_in_flight)
        })
    };
    let data = Bytes::from(pattern(1 << 20, 9));
    let mut tasks = Vec::new();
    for i in 0..writers {
        let client = client.clone();
        let server = all[1 + i % 2].nid();
        let data = data.clone();
        tasks.push(tokio::spawn(async move {
            for _ in 0..4 {
                let region = client.regions().register_source(data.clone()).unwrap();
                let desc = region.describe_all(ChecksumKind::Crc32);
                client
                    .call(server, PORTAL, OP_PULL, encode_desc(&desc))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    stop.store(true, Ordering::Relaxed);
    let (samples, worst) = sampler.await.unwrap();
    assert!(samples > 0 && worst > 0, "the sampler saw the load");

    // The overload showed as queueing: somebody's count went negative.
    let ni = &client.interfaces()[0];
    let peers = ni.peers();
    let worst_min = peers.iter().map(|(_, s)| s.credits_min).min().unwrap();
    assert!(
        worst_min < 0,
        "peer credits went negative under 10x overload: {peers:?}"
    );
    // Every pool that went negative had senders wait, each granted in the end: their waits and
    // time waited are counted; a pool that never went negative counted none.
    for (peer, snapshot) in &peers {
        assert_eq!(
            snapshot.credits_min < 0,
            snapshot.waits > 0,
            "peer {peer}: {snapshot:?}"
        );
        assert_eq!(
            snapshot.waits > 0,
            !snapshot.waited.is_zero(),
            "{snapshot:?}"
        );
    }
    // Idle: every credit is back, on the client and the servers (which sent the REPLYs).
    for node in &all {
        for ni in node.interfaces() {
            let credits = ni.credits();
            assert_eq!(
                (credits.credits, credits.in_flight, credits.queued),
                (i64::from(ni_credits), 0, 0)
            );
            for (peer, snapshot) in ni.peers() {
                assert_eq!(
                    snapshot.credits,
                    i64::from(peer_credits),
                    "peer {peer}: {snapshot:?}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn credits_come_back_when_sends_fail() {
    let limits = Limits {
        ni_credits: 2,
        peer_credits: 1,
        rpc_resends_max: 0,
        ..Limits::default()
    };
    let client = nodes(Transport::Tcp, 1, limits, None).await.remove(0);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let dead: iopath_fabric::Nid = format!("127.0.0.1:{port}@tcp0").parse().unwrap();
    let mut tasks = Vec::new();
    for _ in 0..10 {
        let client = client.clone();
        tasks.push(tokio::spawn(async move {
            client.call(dead, PORTAL, 1, Bytes::new()).await
        }));
    }
    for task in tasks {
        assert!(task.await.unwrap().is_err());
    }
    let ni = &client.interfaces()[0];
    assert_eq!(ni.credits().credits, 2);
    assert_eq!(ni.peers()[0].1.credits, 1);
    assert!(
        ni.peers()[0].1.credits_min < 0,
        "the ten senders queued on the one peer credit"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn answers_sent_for_peers_are_bounded_and_dropped_ones_are_asked_for_again() {
    // The owner may send at most 2 answers at once; 16 pullers ask at once.
    let owner_limits = Limits {
        detached_sends_max: 2,
        peer_credits: 1,
        ..Limits::default()
    };
    let owner = nodes(Transport::Tcp, 1, owner_limits, None).await.remove(0);
    let puller_limits = Limits {
        bulk_timeout: Duration::from_millis(100),
        rpc_resends_max: 50,
        ..Limits::default()
    };
    let puller = nodes(Transport::Tcp, 1, puller_limits, None)
        .await
        .remove(0);
    TestService::install(&puller);
    // 4 MiB each: every pull asks for a window of chunks at once, so 16 pulls put far more
    // than 2 answers in demand at the same moment however the threads are scheduled (with
    // one chunk each, a loaded machine could serve them one after another and drop none).
    let data = Bytes::from(pattern(4 << 20, 3));
    let mut tasks = Vec::new();
    for _ in 0..16 {
        let (owner, puller, data) = (owner.clone(), puller.nid(), data.clone());
        tasks.push(tokio::spawn(async move {
            let region = owner.regions().register_source(data.clone()).unwrap();
            let desc = region.describe_all(ChecksumKind::Crc32);
            let reply = owner
                .call(puller, PORTAL, OP_PULL, encode_desc(&desc))
                .await
                .unwrap();
            assert_eq!(
                u32::from_be_bytes(reply[..4].try_into().unwrap()),
                desc.checksum.unwrap()
            );
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let peak = owner
        .counters()
        .answers_in_flight_peak
        .load(Ordering::Relaxed);
    assert!(
        (1..=2).contains(&peak),
        "answers in flight peaked at {peak}"
    );
    let dropped = owner.counters().answers_dropped.load(Ordering::Relaxed);
    assert!(
        dropped > 0,
        "16 pulls at once over a limit of 2: answers were dropped and asked for again"
    );
}
