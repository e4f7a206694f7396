//! The run's end reaches the page: the live view's last sample says the run ended, and an
//! open page reads it before the server stops.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::net::SocketAddr;
use std::time::Duration;

use iopath_live::{Source, View, ViewInterface, ViewNode};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};

/// A view of one node that is never read, sampled every `INTERVAL_MS`.
const INTERVAL_MS: u64 = 100;

fn view() -> View {
    View {
        title: "t".into(),
        description: String::new(),
        mode: "embedded".into(),
        modeled: "nothing".into(),
        workload: String::new(),
        networks: vec!["mem0".into()],
        nodes: vec![ViewNode {
            name: "c0".into(),
            role: "client".into(),
            detail: String::new(),
            interfaces: vec![ViewInterface {
                network: 0,
                nid: "1@mem0".into(),
            }],
            torus: None,
            admin: None,
            source: Source::Unread("not here".into()),
        }],
        interval_ms: INTERVAL_MS,
    }
}

/// `/state.json`'s body, parsed.
async fn state(addr: SocketAddr) -> serde_json::Value {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /state.json HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    let (_, body) = text.split_once("\r\n\r\n").unwrap();
    serde_json::from_str(body).unwrap()
}

#[tokio::test]
async fn the_last_sample_says_the_run_ended_and_is_served_for_a_page_to_read() {
    let live = iopath_live::serve("127.0.0.1:0".parse().unwrap(), view())
        .await
        .unwrap();
    let addr = live.local_addr();
    assert_eq!(state(addr).await["ended"], serde_json::Value::Null);
    let ending = tokio::spawn(live.end("the benchmark finished"));
    // A page asks once per interval: within one, it reads the end.
    let mut seen = serde_json::Value::Null;
    for _ in 0..20 {
        seen = state(addr).await;
        if !seen["ended"].is_null() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(INTERVAL_MS / 4)).await;
    }
    assert_eq!(seen["ended"], "the benchmark finished", "{seen}");
    assert_eq!(seen["nodes"][0]["name"], "c0");
    // And then it stops.
    tokio::time::timeout(Duration::from_secs(10), ending)
        .await
        .unwrap()
        .unwrap();
    assert!(tokio::net::TcpStream::connect(addr).await.is_err());
}
