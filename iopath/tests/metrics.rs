//! `/metrics` on every node process: a routed stack (spider-mini-routed) of `iopath node
//! --metrics` processes, a file written through it by the client library, then each storage
//! server's and each router's `/metrics` scraped over loopback and parsed as Prometheus's
//! text format — every family present, with values that agree with what was written.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::collections::BTreeMap;
use std::net::SocketAddr;

use iopath_client::{Client, layout::StripeRequest};
use iopath_stack::runtime::{Launcher, ProcessStack, StorageDir, client_config};
use iopath_stack::schema::RoleName;
use prometheus_parse::{Sample, Scrape, Value};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

const MIB: u64 = 1 << 20;

/// `GET /metrics` at `addr`, parsed.
async fn scrape(addr: SocketAddr) -> Scrape {
    let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.1\r\nHost: test\r\n\r\n")
        .await
        .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).await.unwrap();
    let (head, body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    Scrape::parse(body.lines().map(|l| Ok(l.to_owned()))).unwrap()
}

/// The samples of `metric`, by their labels (as `k=v,k=v`).
fn samples<'a>(scrape: &'a Scrape, metric: &str) -> Vec<&'a Sample> {
    scrape
        .samples
        .iter()
        .filter(|s| s.metric == metric)
        .collect()
}

fn value(sample: &Sample) -> f64 {
    match &sample.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        other => panic!("{} is not a number: {other:?}", sample.metric),
    }
}

/// Sums `metric` over the samples whose labels include every `(key, value)` of `with`.
fn sum(scrape: &Scrape, metric: &str, with: &[(&str, &str)]) -> f64 {
    samples(scrape, metric)
        .into_iter()
        .filter(|s| with.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
        .map(value)
        .sum()
}

/// Every family in `families` has at least one sample.
fn check_present(scrape: &Scrape, node: &str, families: &[&str]) {
    let names: BTreeMap<&str, usize> = scrape.samples.iter().fold(BTreeMap::new(), |mut m, s| {
        *m.entry(s.metric.as_str()).or_default() += 1;
        m
    });
    for family in families {
        assert!(
            names.contains_key(family),
            "{node}: no {family} in /metrics (it has {:?})",
            names.keys().collect::<Vec<_>>()
        );
    }
}

fn check_gates(scrape: &Scrape, node: &str, prefix: &str) {
    let max = samples(scrape, &format!("{prefix}_credits_max"));
    assert!(!max.is_empty(), "{node}: no {prefix} gates");
    for gate in max {
        let same = |metric: &str| {
            samples(scrape, metric)
                .into_iter()
                .find(|s| s.labels == gate.labels)
                .map(value)
                .unwrap()
        };
        let (max, now, min) = (
            value(gate),
            same(&format!("{prefix}_credits")),
            same(&format!("{prefix}_credits_min")),
        );
        assert!(max > 0.0, "{node} {prefix} {:?}: max {max}", gate.labels);
        assert!(
            now <= max,
            "{node} {prefix} {:?}: {now} > max {max}",
            gate.labels
        );
        assert!(
            min <= now,
            "{node} {prefix} {:?}: min {min} > {now}",
            gate.labels
        );
        assert!(same(&format!("{prefix}_queue_depth")) >= 0.0);
    }
}

/// Every `le` bucket of histogram `metric` is cumulative and ends at its count.
fn check_histograms(scrape: &Scrape, node: &str, metric: &str) -> f64 {
    let mut total = 0.0;
    let list = samples(scrape, metric);
    assert!(!list.is_empty(), "{node}: no {metric}");
    for sample in list {
        let Value::Histogram(buckets) = &sample.value else {
            panic!("{node}: {metric} is not a histogram: {:?}", sample.value)
        };
        assert!(
            buckets.windows(2).all(|w| w[0].count <= w[1].count),
            "{node}: {buckets:?}"
        );
        // This series' own count: the `_count` sample with the same labels.
        let count = scrape
            .samples
            .iter()
            .find(|s| s.metric == format!("{metric}_count") && s.labels == sample.labels)
            .map(|s| match s.value {
                Value::Counter(v) | Value::Untyped(v) | Value::Gauge(v) => v,
                _ => panic!("{node}: {metric}_count is not a number: {:?}", s.value),
            })
            .unwrap_or_else(|| panic!("{node}: no {metric}_count for {:?}", sample.labels));
        assert!(
            buckets.last().unwrap().less_than.is_infinite(),
            "{buckets:?}"
        );
        total += buckets.last().unwrap().count;
        assert_eq!(count, buckets.last().unwrap().count, "{node}: {metric}");
    }
    total
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_daemon_serves_its_families_with_values_that_agree_with_what_was_written() {
    let stack = iopath_stack::StackChoice {
        preset: Some("spider-mini-routed".into()),
        ..Default::default()
    }
    .load()
    .unwrap();
    let launcher = Launcher {
        program: env!("CARGO_BIN_EXE_iopath").into(),
        args: vec!["node".into(), "--metrics".into(), "127.0.0.1:0".into()],
    };
    let storage = StorageDir::temporary("metrics-test", None).unwrap();
    let running = ProcessStack::start(&stack, storage, &launcher)
        .await
        .unwrap();
    let clients = running.start_clients().await.unwrap();
    let client = Client::connect(client_config(running.stack(), &clients[0]))
        .await
        .unwrap();

    // A small IOR's write phase: 4 MiB in 256 KiB transfers, striped over every target.
    let file = client
        .create(
            "/metrics-test",
            StripeRequest {
                stripe_size_bytes: MIB,
                stripe_count: -1,
                stripe_offset: -1,
            },
        )
        .await
        .unwrap();
    let written = 4 * MIB;
    for i in 0..16u8 {
        let block = bytes::Bytes::from(vec![i; (256 << 10) as usize]);
        file.cwrite(block).await.unwrap();
    }
    file.close().await.unwrap();
    // Closing the client disconnects it: every target commits what it acknowledged.
    client.close().await.unwrap();

    let mut bytes_written = 0.0;
    let mut commits = 0.0;
    let mut forwarded = 0.0;
    let mut forwarded_inline = 0.0;
    for child in running.children() {
        let addr = child.metrics.expect("every node process serves /metrics");
        let scrape = scrape(addr).await;
        let node = child.name.as_str();
        check_present(
            &scrape,
            node,
            &[
                "iopath_ni_credits_max",
                "iopath_ni_credits",
                "iopath_ni_credits_min",
                "iopath_ni_queue_depth",
                "iopath_ni_credit_waits_total",
                "iopath_ni_credit_wait_seconds_total",
                "iopath_ni_sent_bytes_total",
                "iopath_peer_credits",
                "iopath_peer_credits_min",
                "iopath_bulk_bytes_total",
                "iopath_bulk_checksum_errors_total",
                "iopath_bulk_resends_total",
                "iopath_rpc_resends_total",
                "iopath_router_forwarded_messages_total",
                "iopath_router_forwarded_inline_messages_total",
            ],
        );
        check_gates(&scrape, node, "iopath_ni");
        check_gates(&scrape, node, "iopath_peer");
        assert_eq!(
            sum(&scrape, "iopath_bulk_checksum_errors_total", &[]),
            0.0,
            "{node}"
        );
        match child.role {
            RoleName::Oss => {
                check_present(
                    &scrape,
                    node,
                    &[
                        "iopath_rpc_requests_total",
                        "iopath_rpc_request_bytes_total",
                        "iopath_rpc_reply_bytes_total",
                        "iopath_ost_operations_total",
                        "iopath_ost_io_bytes_total",
                        "iopath_journal_commits_total",
                        "iopath_ost_recovering",
                        "iopath_oss_recovery_remaining_seconds",
                        "iopath_ost_lost_bytes",
                        "iopath_oss_bulk_pool_pages_free",
                    ],
                );
                let served = check_histograms(&scrape, node, "iopath_rpc_duration_seconds");
                let writes = sum(&scrape, "iopath_rpc_requests_total", &[("op", "write")]);
                assert!(writes > 0.0, "{node} served no write RPCs");
                assert!(served >= writes, "{node}: {served} timed, {writes} writes");
                assert_eq!(
                    writes,
                    sum(&scrape, "iopath_ost_operations_total", &[("op", "write")]),
                    "{node}: write RPCs and target writes disagree"
                );
                // The server pulled every byte it wrote.
                let target_bytes = sum(&scrape, "iopath_ost_io_bytes_total", &[("op", "write")]);
                let pulled = sum(&scrape, "iopath_bulk_bytes_total", &[("direction", "get")]);
                assert_eq!(target_bytes, pulled, "{node}");
                bytes_written += target_bytes;
                let node_commits = sum(&scrape, "iopath_journal_commits_total", &[]);
                let timed =
                    check_histograms(&scrape, node, "iopath_journal_commit_duration_seconds");
                assert_eq!(node_commits, timed, "{node}: every commit timed");
                commits += node_commits;
                assert_eq!(sum(&scrape, "iopath_ost_recovering", &[]), 0.0, "{node}");
                assert_eq!(sum(&scrape, "iopath_ost_lost_bytes", &[]), 0.0, "{node}");
                let free = sum(&scrape, "iopath_oss_bulk_pool_pages_free", &[]);
                let max = sum(&scrape, "iopath_oss_bulk_pool_pages_max", &[]);
                assert!(free <= max && max > 0.0, "{node}: {free} of {max}");
            }
            RoleName::Router => {
                check_present(
                    &scrape,
                    node,
                    &[
                        "iopath_router_buffers_credits_max",
                        "iopath_router_buffers_queue_depth",
                        "iopath_router_buffer_size_bytes",
                        "iopath_router_peer_credits",
                        "iopath_router_checksum_errors_total",
                    ],
                );
                check_gates(&scrape, node, "iopath_router_buffers");
                check_gates(&scrape, node, "iopath_router_peer");
                assert_eq!(
                    samples(&scrape, "iopath_router_buffers_credits_max").len(),
                    3,
                    "{node}: tiny, small and large pools"
                );
                forwarded += sum(&scrape, "iopath_router_forwarded_messages_total", &[]);
                forwarded_inline += sum(
                    &scrape,
                    "iopath_router_forwarded_inline_messages_total",
                    &[],
                );
            }
            RoleName::Mds => {
                let creates = sum(&scrape, "iopath_rpc_requests_total", &[("op", "create")]);
                assert_eq!(creates, 1.0, "{node}: one file created");
            }
            _ => {}
        }
    }
    assert_eq!(
        bytes_written, written as f64,
        "the storage servers wrote what the client did"
    );
    assert!(commits > 0.0, "no journal commits");
    assert!(forwarded > 0.0, "the routers forwarded nothing");
    // Requests, GETs and replies are small: a router sends most on from the task that read
    // them; the bulk it forwards from tasks of their own.
    assert!(
        forwarded_inline > 0.0 && forwarded_inline < forwarded,
        "forwarded inline {forwarded_inline} of {forwarded}"
    );

    for c in clients {
        c.stop().await.unwrap();
    }
    running.stop().await.unwrap();
}

/// What `up` prints, shared with the future that stops it.
#[derive(Clone, Default)]
struct Printed(std::sync::Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Printed {
    fn write(&mut self, data: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(data);
        Ok(data.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_embedded_stack_serves_metrics_for_every_node() {
    let args = iopath_stack::up::UpConfig {
        choice: iopath_stack::StackChoice {
            preset: Some("spider-mini-routed".into()),
            ..Default::default()
        },
        metrics: true,
        ..Default::default()
    };
    let printed = Printed::default();
    let seen = printed.clone();
    // Once it is up: scrape every node it listed, then stop it.
    let check = async move {
        let text = String::from_utf8(seen.0.lock().unwrap().clone()).unwrap();
        let listed: Vec<(String, SocketAddr)> = text
            .lines()
            .filter_map(|l| l.strip_prefix("metrics "))
            .map(|l| {
                let (node, url) = l.split_once(' ').unwrap();
                let addr = url
                    .strip_prefix("http://")
                    .and_then(|u| u.strip_suffix("/metrics"))
                    .unwrap();
                (node.to_owned(), addr.parse().unwrap())
            })
            .collect();
        let stack = iopath_stack::preset("spider-mini-routed")
            .unwrap()
            .stack()
            .unwrap();
        assert_eq!(listed.len(), stack.nodes.len(), "a line per node: {text}");
        for (node, addr) in listed {
            let scrape = scrape(addr).await;
            check_present(
                &scrape,
                &node,
                &["iopath_ni_credits", "iopath_ni_sent_bytes_total"],
            );
            check_gates(&scrape, &node, "iopath_ni");
            if node.starts_with("oss") {
                check_present(&scrape, &node, &["iopath_journal_commits_total"]);
            }
            if node.starts_with("rtr") {
                check_present(&scrape, &node, &["iopath_router_forwarded_messages_total"]);
            }
        }
    };
    let mut out = printed;
    iopath_stack::up::up_until(&args, &mut out, check, None)
        .await
        .unwrap();
}
