//! `iopath trace` on embedded stacks: one write and one read, followed hop by hop, show what
//! each configuration does — routers between client and servers, the PFS fyod letting the
//! storage server pull from the compute node, the UFS fyod pulling into its own buffers, and
//! the reply before (async) or after (sync) the journal commit.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use iopath_bench::trace::{self, Hop, JournalChoice, TraceConfig, TraceReport, TracedRequest};
use iopath_stack::StackChoice;
use iopath_stack::schema::FyodMode;

fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap()
}

async fn trace_on(preset: &str, configure: impl FnOnce(&mut TraceConfig)) -> TraceReport {
    let dir = scratch();
    let mut config = TraceConfig {
        choice: StackChoice {
            preset: Some(preset.into()),
            ..StackChoice::default()
        },
        size: 256 << 10,
        stripe_count: Some(1),
        dir: Some(dir.path().to_owned()),
        ..TraceConfig::default()
    };
    configure(&mut config);
    let report = trace::run(&config, &mut std::io::sink()).await.unwrap();
    assert_eq!(report.requests.len(), 2);
    report
}

fn first(request: &TracedRequest, pred: impl Fn(&Hop) -> bool) -> Option<(usize, &Hop)> {
    request.hops.iter().enumerate().find(|(_, h)| pred(h))
}

fn role_of<'a>(request: &'a TracedRequest, node: &str) -> &'a str {
    &request.hops.iter().find(|h| h.node == node).unwrap().role
}

/// Every send that arrived pairs with an arrival on the node it was sent to; every arrival
/// and forward is some send's.
fn check_pairs(request: &TracedRequest) {
    for (i, hop) in request.hops.iter().enumerate() {
        if hop.what == "send" {
            let j = hop
                .arrived_at
                .unwrap_or_else(|| panic!("send {i} never arrived: {hop:?}"));
            let arrival = &request.hops[j];
            assert_eq!(
                Some(&arrival.node),
                hop.peer.as_ref(),
                "a send arrives at its next hop"
            );
            // No earlier than the send (one host's clock).
            assert!(
                j > i && arrival.at_us >= hop.at_us,
                "arrival {j} before send {i}"
            );
        }
        if hop.what == "arrive" {
            assert!(
                hop.hop_us.is_some(),
                "arrival {i} pairs with a send: {hop:?}"
            );
        }
    }
    // Causality: the request starts where it was issued, on the client, with its first send
    // (the report sorts by time, so this is what the clocks say, not the sort).
    let opening = &request.hops[0];
    assert_eq!(
        (opening.role.as_str(), opening.what.as_str()),
        ("client", "send"),
        "the first step is the client's send: {opening:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_routed_async_write_crosses_a_router_and_replies_before_its_commit() {
    let report = trace_on("spider-mini-routed", |c| {
        c.journal = Some(JournalChoice::Async)
    })
    .await;
    let write = &report.requests[0];
    check_pairs(write);
    // The request leaves the client for a router, which takes a buffer and sends it on to
    // a storage server.
    let (_, send) = first(write, |h| h.node == "c0" && h.what == "send").unwrap();
    let router = send.peer.clone().unwrap();
    assert_eq!(role_of(write, &router), "router");
    let (_, forward) = first(write, |h| h.node == router && h.what == "forward").unwrap();
    assert_eq!(forward.layer, "router");
    // An idle stack: each send saw all its credits but its own, as the fabric's defaults give
    // them, and the router all its buffers of that class but one.
    let limits = iopath_fabric::Limits::default();
    let peer = send.credits.iter().find(|(k, _)| k == "peer").unwrap().1;
    assert_eq!(peer, i64::from(limits.peer_credits) - 1);
    let ni = send.credits.iter().find(|(k, _)| k == "ni").unwrap().1;
    assert_eq!(ni, i64::from(limits.ni_credits) - 1);
    let rtr_peer = forward
        .credits
        .iter()
        .find(|(k, _)| k == "router peer")
        .unwrap()
        .1;
    let config = iopath_fabric::router::RouterConfig::default();
    assert_eq!(rtr_peer, i64::from(config.peer_buffer_credits) - 1);
    // The server pulls the bytes (through a router too), verifies them, records the write,
    // replies — and commits after the reply, in the group commit.
    let (pull, _) = first(write, |h| {
        h.role == "oss" && h.what == "send" && h.detail.starts_with("GET")
    })
    .unwrap();
    let (verify, _) = first(write, |h| h.role == "oss" && h.what == "verify").unwrap();
    let (record, _) = first(write, |h| h.what == "record" && h.layer == "journal").unwrap();
    let (reply, _) = first(write, |h| h.role == "oss" && h.what == "reply").unwrap();
    let (commit, _) = first(write, |h| h.what == "commit").unwrap();
    assert!(pull < verify && verify < record && record < reply && reply < commit);
    // The client keeps the write for replay until a reply says it is committed (the read's).
    let (keep, _) = first(write, |h| h.node == "c0" && h.what == "keep").unwrap();
    let (release, _) = first(write, |h| h.node == "c0" && h.what == "release").unwrap();
    assert!(reply < keep && commit < release);
    check_pairs(&report.requests[1]);
    // The sequence diagram has an arrow per paired send.
    let svg = trace::sequence(&report, write).svg();
    let sends = write.hops.iter().filter(|h| h.arrived_at.is_some()).count();
    assert_eq!(svg.matches("class=\"arrow\"").count(), sends);
    assert!(trace::render(&report).contains("modeled: nothing"));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_sync_write_commits_before_its_reply_and_nothing_is_kept() {
    let report = trace_on("spider-mini", |c| c.journal = Some(JournalChoice::Sync)).await;
    let write = &report.requests[0];
    check_pairs(write);
    let (commit, _) = first(write, |h| h.what == "commit").unwrap();
    let (reply, _) = first(write, |h| h.role == "oss" && h.what == "reply").unwrap();
    assert!(commit < reply, "sync: the commit comes before the reply");
    assert!(first(write, |h| h.what == "record").is_none());
    assert!(
        first(write, |h| h.what == "keep").is_none(),
        "a committed write is not kept"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_pfs_fyod_the_storage_server_pulls_from_the_compute_node() {
    let report = trace_on("asci-red-mini", |c| {
        c.fyod_mode = Some(FyodMode::Pfs);
        c.journal = Some(JournalChoice::Sync);
    })
    .await;
    let write = &report.requests[0];
    check_pairs(write);
    assert!(first(write, |h| h.role == "fyod" && h.what == "split").is_some());
    let (_, get) = first(write, |h| h.what == "send" && h.detail.starts_with("GET")).unwrap();
    assert_eq!(get.role, "oss", "the storage server pulls");
    assert_eq!(
        get.peer.as_deref(),
        Some("c0"),
        "straight from the compute node"
    );
    assert!(
        first(write, |h| h.role == "fyod" && h.what == "verify").is_none(),
        "the fyod never holds the bytes"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn through_a_ufs_fyod_the_bytes_land_in_the_fyods_buffers() {
    let report = trace_on("asci-red-mini", |c| {
        c.fyod_mode = Some(FyodMode::Ufs);
        c.journal = Some(JournalChoice::Sync);
    })
    .await;
    let write = &report.requests[0];
    check_pairs(write);
    assert!(first(write, |h| h.role == "fyod" && h.what == "buffer").is_some());
    let (_, get) = first(write, |h| h.what == "send" && h.detail.starts_with("GET")).unwrap();
    assert_eq!(get.role, "fyod", "the fyod pulls into its buffers");
    assert_eq!(get.peer.as_deref(), Some("c0"));
    let (_, fyod_verify) = first(write, |h| h.role == "fyod" && h.what == "verify").unwrap();
    assert!(fyod_verify.detail.starts_with("pulled"));
    // Then the storage server pulls from the fyod, not the compute node.
    let (_, oss_get) = first(write, |h| {
        h.role == "oss" && h.what == "send" && h.detail.starts_with("GET")
    })
    .unwrap();
    assert_eq!(oss_get.peer.as_deref(), Some("fyod0"));
}

#[tokio::test]
async fn sizes_outside_the_bounds_are_refused_with_the_option_named() {
    let config = TraceConfig {
        size: 0,
        ..TraceConfig::default()
    };
    let error = trace::run(&config, &mut std::io::sink()).await.unwrap_err();
    assert!(error.to_string().contains("--size"), "{error}");
}
