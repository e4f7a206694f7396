//! `iopath trace` on embedded stacks: one write and one read, followed hop by hop, show what
//! each configuration does — routers between client and servers, the PFS fyod letting the
//! storage server pull from the compute node, the UFS fyod pulling into its own buffers, and
//! the reply before (async) or after (sync) the journal commit; and a write traced inside a
//! load, whose credit counts are checked against the nodes' own counters.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use iopath_bench::trace::{
    self, Hop, JournalChoice, LoadConfig, TraceConfig, TraceReport, TracedRequest,
};
use iopath_fabric::gate::CreditSnapshot;
use iopath_stack::StackChoice;
use iopath_stack::runtime::{Mode, RunningNode, RunningStack, StorageDir};
use iopath_stack::schema::{FyodMode, Stack};

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
    let (disk, written) = first(write, |h| h.layer == "disk" && h.what == "write").unwrap();
    let (record, _) = first(write, |h| h.what == "record" && h.layer == "journal").unwrap();
    let (reply, _) = first(write, |h| h.role == "oss" && h.what == "reply").unwrap();
    let (commit, _) = first(write, |h| h.what == "commit").unwrap();
    assert!(pull < verify && verify < disk && disk < record && record < reply && reply < commit);
    assert!(
        written.detail.contains("written to the target's file") && written.detail.contains(" µs"),
        "the disk step says how long it took: {written:?}"
    );
    // The request's opcode is named, as its service names it.
    assert!(
        send.detail.contains("OST write (opcode 3, portal 46)"),
        "{send:?}"
    );
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

/// A hop's count of `name`.
fn count(hop: &Hop, name: &str) -> Option<i64> {
    hop.credits.iter().find(|(k, _)| k == name).map(|(_, c)| *c)
}

/// A count a node reported at some moment of the run, against the pool's own counters read
/// after it: the pool held it, so it is no lower than the pool's low-water mark (`min`, never
/// reset here), and its taker held a credit or queued for one, so it is below `max`.
fn held_by(what: &str, reported: i64, pool: CreditSnapshot) {
    assert!(
        pool.credits_min <= reported && reported < i64::from(pool.credits_max),
        "{what}: the trace says {reported}, the node's own view min {} max {}",
        pool.credits_min,
        pool.credits_max
    );
    if reported < 0 {
        assert!(
            pool.waits >= 1,
            "{what}: the trace says it queued ({reported}); the node counts no wait"
        );
    }
}

/// Under load through routers slower than the fabric (docs/labs/slow-routers.toml, the trace
/// lab's), the 16th write of c0 queues for credits somewhere on its way, and every count the
/// trace reports is one the node's own pools held: at or above their `min` (what `lnetctl peer
/// show` and `lctl get_param buffers` print), with a wait counted where it went negative, and a
/// send whose count went negative is one that waited.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_traced_in_a_load_reports_the_counts_the_nodes_own_pools_held() {
    let dir = scratch();
    let lab =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../docs/labs/slow-routers.toml");
    let stack = Stack::load(&lab).unwrap();
    let storage = StorageDir::temporary("trace", Some(dir.path())).unwrap();
    let running = RunningStack::start(stack, Mode::Embedded, storage, None)
        .await
        .unwrap();
    let config = TraceConfig {
        load: Some(LoadConfig {
            writers: 32,
            nth: 16,
        }),
        size: 4 << 20,
        stripe_count: Some(1),
        ..TraceConfig::default()
    };
    let report = trace::trace_running(&running, &config, &mut std::io::sink())
        .await
        .unwrap();
    // The nodes' own counters, read now that the load has stopped.
    let stack = running.stack();
    let nodes = running.local_nodes();
    let node = |name: &str| -> &RunningNode { nodes.iter().find(|n| n.name == name).unwrap() };
    let nids = |name: &str| stack.nids(stack.nodes.iter().position(|n| n.name == name).unwrap());
    let load = report.load.as_ref().unwrap();
    assert_eq!((load.traced_node.as_str(), load.nth), ("c0", 16));
    assert!(load.requests >= 16, "{load:?}");
    let write = &report.requests[0];
    check_pairs(write);
    let mut sends = 0;
    for hop in &write.hops {
        match hop.what.as_str() {
            "send" => {
                let sender = node(&hop.node);
                let to = nids(hop.peer.as_deref().unwrap());
                let (ni, pool) = sender
                    .node
                    .interfaces()
                    .iter()
                    .find_map(|ni| to.iter().find_map(|nid| Some((ni, ni.peer_snapshot(nid)?))))
                    .unwrap_or_else(|| panic!("{} has no credits for {:?}", hop.node, hop.peer));
                let what = format!("{} to {:?}", hop.node, hop.peer);
                let peer = count(hop, "peer").unwrap();
                let ni_count = count(hop, "ni").unwrap();
                held_by(&format!("{what}: peer"), peer, pool);
                held_by(&format!("{what}: ni"), ni_count, ni.credits());
                // Queued and waited are one fact, seen from the count and from the clock.
                assert_eq!(hop.queued(), hop.waited_us > 0.0, "{what}: {hop:?}");
                sends += 1;
            }
            "forward" => {
                let router = node(&hop.node).node.router_buffers().unwrap();
                for (name, reported) in &hop.credits {
                    let pool = if name == "router peer" {
                        let from = nids(hop.peer.as_deref().unwrap());
                        from.iter()
                            .find_map(|nid| router.peer_snapshot(nid))
                            .unwrap()
                    } else {
                        let class = name.trim_end_matches(" buffers");
                        router
                            .pools()
                            .into_iter()
                            .find(|(c, _, _)| c.name() == class)
                            .unwrap()
                            .2
                    };
                    held_by(&format!("{}: {name}", hop.node), *reported, pool);
                }
            }
            _ => {}
        }
    }
    assert!(
        sends >= 8,
        "a routed 4 MiB write sends at least 8 frames: {write:?}"
    );
    // The load made the write queue: some count went negative, and that node's own `min` for
    // the pool is as low or lower (checked above for every count).
    let queued: Vec<&Hop> = write.hops.iter().filter(|h| h.queued()).collect();
    assert!(
        !queued.is_empty(),
        "nothing queued under the load: {}",
        trace::render(&report)
    );
    assert!(trace::render(&report).contains("load: 32 writers on c0, c1"));
    running.stop().await.unwrap();
}
