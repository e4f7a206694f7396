//! Fail points and network rules on real nodes: armed as an operator arms them (through the
//! node's admin tree), each changes what happens to a call the way `iopath_fabric::fail` says.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use common::{BOTH, OP_COUNT, OP_PULL, PORTAL, TestService, encode_desc, nodes, pattern};
use iopath_fabric::fail::Site;
use iopath_fabric::rpc::{Reply, Request, Service};
use iopath_fabric::{ChecksumKind, FabricError, Limits, Node};
use iopath_lprocfs::ParamTree;

/// Short timeouts, so lost messages are sent again quickly; a pull's chunk is asked for again
/// well within its RPC's resends.
fn limits() -> Limits {
    Limits {
        rpc_timeout: Duration::from_millis(200),
        bulk_timeout: Duration::from_millis(100),
        ..Limits::default()
    }
}

/// The node's admin tree, as `iopath lctl` reaches it.
fn tree(node: &Node) -> ParamTree {
    let tree = ParamTree::new();
    iopath_fabric::params::register(node, &tree, "").unwrap();
    tree
}

fn get(tree: &ParamTree, name: &str) -> String {
    tree.get(name).unwrap().remove(0).value
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn client_send_fails_a_call_with_its_errno_and_a_dropped_request_is_sent_again() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, limits(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        let service = TestService::install(server);
        let admin = tree(client);

        admin
            .set("fail_loc", "client.send:errno=ENOSPC:once")
            .unwrap();
        let err = client
            .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
            .await
            .unwrap_err();
        assert!(
            matches!(err, FabricError::Injected { code: 28, .. }),
            "{transport:?}: {err}"
        );
        assert_eq!(err.errno(), 28);
        assert_eq!(
            service.executed.load(Ordering::SeqCst),
            0,
            "nothing was sent"
        );
        assert_eq!(get(&admin, "fail_loc"), "off", "once disarms itself");

        admin.set("fail_loc", "client.send:drop:once").unwrap();
        let reply = client
            .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
            .await
            .unwrap();
        assert_eq!(reply[..8], 1u64.to_be_bytes(), "the resend executed once");
        assert_eq!(client.counters().rpc_resends.load(Ordering::Relaxed), 1);
        assert_eq!(get(&admin, "fail_injected"), "2");
    }
}

/// Counts executions and passes `oss.before_reply`, as a storage server's requests do.
#[derive(Debug, Default)]
struct ReplyingService {
    executed: std::sync::atomic::AtomicU64,
}

impl Service for ReplyingService {
    fn handle(self: Arc<Self>, request: Request) -> Reply {
        let executed = self.executed.fetch_add(1, Ordering::SeqCst) + 1;
        Box::pin(async move {
            request
                .node
                .fail_points()
                .pass(Site::OssBeforeReply)
                .await
                .map_err(|i| {
                    iopath_fabric::ServiceError::new(5, i.message(Site::OssBeforeReply))
                })?;
            Ok(Bytes::from(executed.to_be_bytes().to_vec()))
        })
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reply_a_server_site_drops_is_answered_from_the_saved_reply_on_the_resend() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, limits(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        let service = Arc::new(ReplyingService::default());
        server.register_service(PORTAL, service.clone()).unwrap();
        let admin = tree(server);

        admin.set("fail_loc", "oss.before_reply:drop:once").unwrap();
        let reply = client
            .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
            .await
            .unwrap();
        assert_eq!(reply[..8], 1u64.to_be_bytes());
        assert_eq!(
            service.executed.load(Ordering::SeqCst),
            1,
            "{transport:?}: the resend did not execute again"
        );
        assert_eq!(client.counters().rpc_resends.load(Ordering::Relaxed), 1);

        admin
            .set("fail_loc", "oss.before_reply:delay=300ms")
            .unwrap();
        let started = tokio::time::Instant::now();
        client
            .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(300));
        admin
            .set("fail_loc", "oss.before_reply:errno=EIO:every=2")
            .unwrap();
        let mut failed = 0;
        for _ in 0..4 {
            let call = client
                .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
                .await;
            failed += u32::from(call.is_err_and(|e| e.errno() == 5));
        }
        assert_eq!(failed, 2, "every second reply fails");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_or_dropped_bulk_chunk_is_pulled_again_and_arrives_whole() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, limits(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        TestService::install(server);
        let admin = tree(client);
        for spec in ["bulk.send:corrupt:every=2", "bulk.send:drop:once"] {
            admin.set("fail_loc", spec).unwrap();
            let data = Bytes::from(pattern(3 << 20, 9));
            let region = client.regions().register_source(data.clone()).unwrap();
            let desc = region
                .describe(0, data.len() as u64, ChecksumKind::Crc32)
                .unwrap();
            let reply = client
                .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
                .await
                .unwrap_or_else(|e| panic!("{transport:?} {spec}: {e}"));
            assert_eq!(
                u32::from_be_bytes(reply[..4].try_into().unwrap()),
                ChecksumKind::Crc32.compute(&data),
                "{transport:?} {spec}: the server holds the bytes sent"
            );
            admin.set("fail_loc", "off").unwrap();
        }
        assert!(
            server
                .counters()
                .checksum_mismatches
                .load(Ordering::Relaxed)
                >= 1
        );
        assert!(get(&admin, "fail_injected").parse::<u64>().unwrap() >= 2);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn network_drop_and_delay_rules_hit_one_in_rate_between_their_nids() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, limits(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        let service = TestService::install(server);
        let admin = tree(client);
        let rule = format!("add {} {} rate=2", client.nid(), server.nid());
        admin.set("net_drop", &rule).unwrap();
        for _ in 0..4 {
            client
                .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
                .await
                .unwrap();
        }
        assert_eq!(
            service.executed.load(Ordering::SeqCst),
            4,
            "executed once each"
        );
        assert!(
            client.counters().rpc_resends.load(Ordering::Relaxed) >= 2,
            "{transport:?}: dropped requests were sent again"
        );
        assert!(
            get(&admin, "net_drop").contains("dropped="),
            "{}",
            get(&admin, "net_drop")
        );
        admin.set("net_drop", "clear").unwrap();

        admin
            .set("net_delay", "add * * rate=1 latency=100ms")
            .unwrap();
        let started = tokio::time::Instant::now();
        client
            .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
            .await
            .unwrap();
        assert!(started.elapsed() >= Duration::from_millis(100));
        let refused = admin
            .set("net_delay", "add * * rate=0 latency=1ms")
            .unwrap_err();
        assert!(refused.to_string().contains("net_delay"), "{refused}");
        assert!(refused.to_string().contains("rate=0"), "{refused}");
    }
}

#[tokio::test]
async fn bad_fail_loc_values_are_refused_naming_the_parameter_and_leave_the_rules_alone() {
    let node = nodes(common::Transport::Mem, 1, limits(), None)
        .await
        .remove(0);
    let admin = tree(&node);
    admin
        .set("fail_loc", "mds.after_log:delay=5ms:every=4")
        .unwrap();
    for (value, says) in [
        ("nowhere:drop", "the sites are"),
        ("router.forward:errno=5", "router.forward cannot"),
        ("client.send", "names no action"),
        ("client.send:delay=1h", "units are"),
        ("client.send:drop:prob=2", "at most 1"),
    ] {
        let err = admin.set("fail_loc", value).unwrap_err().to_string();
        assert!(
            err.contains("fail_loc") && err.contains(says),
            "{value}: {err}"
        );
    }
    assert_eq!(
        get(&admin, "fail_loc"),
        "mds.after_log:delay=5ms:every=4:seed=1 passes=0 fired=0"
    );
    let sites = get(&admin, "fail_sites");
    assert!(
        sites.contains("router.forward: delay, drop, corrupt, abort"),
        "{sites}"
    );
}
