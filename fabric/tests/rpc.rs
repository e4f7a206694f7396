//! RPC: execute-once across a lost reply, timeouts, unreachable peers.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use common::{BOTH, OP_COUNT, PORTAL, TestService, nodes};
use iopath_fabric::fault::{Fault, FaultHook};
use iopath_fabric::frame::{Header, Kind, REPLY_PORTAL};
use iopath_fabric::rpc::CallOptions;
use iopath_fabric::{FabricError, Limits};

/// Drops the first `n` RPC replies a node sends.
#[derive(Debug)]
struct DropFirstReplies {
    left: AtomicU64,
}

impl FaultHook for DropFirstReplies {
    fn on_send(&self, header: &Header, _: usize) -> Fault {
        let is_reply = header.kind == Kind::Put && header.portal == REPLY_PORTAL;
        if is_reply
            && self
                .left
                .fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
                .is_ok()
        {
            Fault::Drop
        } else {
            Fault::None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_dropped_reply_leads_to_exactly_one_execution() {
    for transport in BOTH {
        let limits = Limits {
            rpc_timeout: Duration::from_millis(100),
            ..Limits::default()
        };
        let client = nodes(transport, 1, limits.clone(), None).await.remove(0);
        let hook = Arc::new(DropFirstReplies {
            left: AtomicU64::new(2),
        });
        let server = match transport {
            common::Transport::Tcp => nodes(transport, 1, limits, Some(hook.clone()))
                .await
                .remove(0),
            common::Transport::Mem => {
                // Both nodes must share one in-memory network.
                let network = iopath_fabric::MemNetwork::new();
                let client = iopath_fabric::Node::start(iopath_fabric::NodeConfig {
                    interfaces: vec![iopath_fabric::Interface::Mem {
                        nid: iopath_fabric::Nid::mem(1, 0),
                        network: network.clone(),
                    }],
                    limits: limits.clone(),
                    fault: None,
                    ..Default::default()
                })
                .await
                .unwrap();
                let server = iopath_fabric::Node::start(iopath_fabric::NodeConfig {
                    interfaces: vec![iopath_fabric::Interface::Mem {
                        nid: iopath_fabric::Nid::mem(2, 0),
                        network,
                    }],
                    limits,
                    fault: Some(hook.clone()),
                    ..Default::default()
                })
                .await
                .unwrap();
                run_once_check(&client, &server, &hook).await;
                continue;
            }
        };
        run_once_check(&client, &server, &hook).await;
    }
}

async fn run_once_check(
    client: &iopath_fabric::Node,
    server: &iopath_fabric::Node,
    hook: &DropFirstReplies,
) {
    let service = TestService::install(server);
    let reply = client
        .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
        .await
        .unwrap();
    assert_eq!(
        u64::from_be_bytes(reply[..8].try_into().unwrap()),
        1,
        "the reply is the first execution's"
    );
    assert_eq!(service.executed.load(Ordering::SeqCst), 1, "executed once");
    assert_eq!(
        hook.left.load(Ordering::SeqCst),
        0,
        "both replies were dropped"
    );
    assert_eq!(client.counters().rpc_resends.load(Ordering::Relaxed), 2);
    assert_eq!(
        server
            .counters()
            .replies_reconstructed
            .load(Ordering::Relaxed),
        2
    );
    // The next call is a new xid and executes.
    let reply = client
        .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
        .await
        .unwrap();
    assert_eq!(u64::from_be_bytes(reply[..8].try_into().unwrap()), 2);
    assert_eq!(client.rpcs_pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_silent_server_times_out_after_bounded_resends() {
    let limits = Limits {
        rpc_timeout: Duration::from_millis(50),
        rpc_resends_max: 2,
        ..Limits::default()
    };
    let all = nodes(common::Transport::Tcp, 2, limits, None).await;
    let hook_drops_everything = all[1].clone();
    // A service that never answers: the server drops all its replies.
    #[derive(Debug)]
    struct DropAll;
    impl FaultHook for DropAll {
        fn on_send(&self, _: &Header, _: usize) -> Fault {
            Fault::Drop
        }
    }
    let _ = hook_drops_everything;
    let silent = iopath_fabric::Node::start(iopath_fabric::NodeConfig {
        interfaces: vec![iopath_fabric::Interface::Tcp {
            nid: "127.0.0.1:0@tcp0".parse().unwrap(),
        }],
        limits: all[0].limits().clone(),
        fault: Some(Arc::new(DropAll)),
        ..Default::default()
    })
    .await
    .unwrap();
    let service = TestService::install(&silent);
    let err = all[0]
        .call(silent.nid(), PORTAL, OP_COUNT, Bytes::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, FabricError::Timeout { attempts: 3, .. }),
        "{err}"
    );
    assert_eq!(
        service.executed.load(Ordering::SeqCst),
        1,
        "resends did not execute again"
    );
    assert_eq!(all[0].rpcs_pending(), 0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unreachable_peer_fails_fast_and_clearly() {
    let client = nodes(common::Transport::Tcp, 1, Limits::default(), None)
        .await
        .remove(0);
    // Bind and close a listener so the port is (almost certainly) free and refusing.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let target = format!("127.0.0.1:{port}@tcp0").parse().unwrap();
    let options = CallOptions {
        timeout: Some(Duration::from_secs(30)),
        resends_max: Some(1),
    };
    let started = std::time::Instant::now();
    let err = client
        .call_with(target, PORTAL, OP_COUNT, Bytes::new(), options)
        .await
        .unwrap_err();
    assert!(matches!(err, FabricError::Unreachable { .. }), "{err}");
    assert!(err.to_string().contains(&port.to_string()), "{err}");
    // Not a speed assertion: a refused connection must not wait out a 30 s timeout.
    assert!(started.elapsed() < Duration::from_secs(25));
    // And a peer on a network this node is not on has no route.
    let err = client
        .call("5@mem0".parse().unwrap(), PORTAL, OP_COUNT, Bytes::new())
        .await
        .unwrap_err();
    assert!(matches!(err, FabricError::NoRoute { .. }), "{err}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_portals_and_opcodes_get_errors() {
    let all = nodes(common::Transport::Mem, 2, Limits::default(), None).await;
    TestService::install(&all[1]);
    let err = all[0]
        .call(all[1].nid(), PORTAL + 1, OP_COUNT, Bytes::new())
        .await
        .unwrap_err();
    assert!(matches!(err, FabricError::Remote { code: 95, .. }), "{err}");
    let err = all[0]
        .call(all[1].nid(), PORTAL, 999, Bytes::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains("no opcode 999"), "{err}");
    let big = Bytes::from(vec![0u8; (1 << 20) + 1]);
    let err = all[0]
        .call(all[1].nid(), PORTAL, OP_COUNT, big)
        .await
        .unwrap_err();
    assert!(matches!(err, FabricError::TooLarge { .. }), "{err}");
}

/// Starts node `n` on the in-memory `network`, with `limits` and `fault`.
async fn mem_node(
    network: &Arc<iopath_fabric::MemNetwork>,
    limits: &Limits,
    n: u32,
    fault: Option<Arc<dyn FaultHook>>,
) -> Result<iopath_fabric::Node, FabricError> {
    iopath_fabric::Node::start(iopath_fabric::NodeConfig {
        interfaces: vec![iopath_fabric::Interface::Mem {
            nid: iopath_fabric::Nid::mem(n, 0),
            network: Arc::clone(network),
        }],
        limits: limits.clone(),
        fault,
        ..Default::default()
    })
    .await
}

#[tokio::test(start_paused = true)]
async fn a_peer_found_restarted_is_sent_the_calls_waiting_on_it_at_once() {
    // A reconnect that finds its server restarted tells the node: requests waiting for a reply
    // went to the start that is gone, and go again now, not at their timeout (ptlrpc's resend
    // once an import is back). Here the lost request is a lost reply: the resend is answered
    // from the reply cache, so it still executes once.
    let limits = Limits {
        rpc_timeout: Duration::from_secs(10),
        ..Limits::default()
    };
    let network = iopath_fabric::MemNetwork::new();
    let start = |n: u32, fault: Option<Arc<dyn FaultHook>>| mem_node(&network, &limits, n, fault);
    let client = start(1, None).await.unwrap();
    let hook = Arc::new(DropFirstReplies {
        left: AtomicU64::new(1),
    });
    let server = start(2, Some(hook.clone())).await.unwrap();
    let service = TestService::install(&server);
    let began = tokio::time::Instant::now();
    let call = tokio::spawn({
        let (client, server) = (client.clone(), server.nid());
        async move { client.call(server, PORTAL, OP_COUNT, Bytes::new()).await }
    });
    // Bounded: the reply is dropped within a few turns of the runtime.
    for _ in 0..1000 {
        if hook.left.load(Ordering::SeqCst) == 0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(1)).await;
    }
    assert_eq!(hook.left.load(Ordering::SeqCst), 0, "the reply was dropped");
    assert_eq!(
        client.resend_calls_to(iopath_fabric::Nid::mem(3, 0)),
        0,
        "calls to other peers are not told"
    );
    assert_eq!(client.resend_calls_to(server.nid()), 1);
    let reply = call.await.unwrap().unwrap();
    assert!(
        began.elapsed() < limits.rpc_timeout / 2,
        "answered {:?} after the call began: the resend waited for the timeout",
        began.elapsed()
    );
    assert_eq!(u64::from_be_bytes(reply[..8].try_into().unwrap()), 1);
    assert_eq!(service.executed.load(Ordering::SeqCst), 1, "executed once");
    assert_eq!(client.rpcs_pending(), 0);
}

/// A service that never answers.
struct Silent;

impl iopath_fabric::rpc::Service for Silent {
    fn handle(self: Arc<Self>, _: iopath_fabric::rpc::Request) -> iopath_fabric::rpc::Reply {
        Box::pin(std::future::pending())
    }
}

#[tokio::test(start_paused = true)]
async fn a_watched_peer_that_restarts_is_sent_the_calls_waiting_on_it_within_a_ping() {
    // Found by the red team's soaks through fyods: a compute node's call to a fyod that was
    // killed waited out its RPC timeout at every resend (a kill at ~10 s "now and then", one
    // of 60 s). A node that watches a peer pings it every second; the peer's answer names its
    // start, and when that changes the calls waiting on it go again at once.
    let limits = Limits {
        rpc_timeout: Duration::from_secs(10),
        ..Limits::default()
    };
    let network = iopath_fabric::MemNetwork::new();
    let start = |n: u32, fault: Option<Arc<dyn FaultHook>>| mem_node(&network, &limits, n, fault);
    let client = start(1, None).await.unwrap();
    // The first start of the server never answers a request (it answers pings).
    let first = start(2, None).await.unwrap();
    first.register_service(PORTAL, Arc::new(Silent)).unwrap();
    let server = first.nid();
    let restarts = client.watch_restarts(server);
    // Two pings in: the watch knows this start.
    tokio::time::sleep(Duration::from_millis(2500)).await;
    let began = tokio::time::Instant::now();
    let call = tokio::spawn({
        let client = client.clone();
        async move { client.call(server, PORTAL, OP_COUNT, Bytes::new()).await }
    });
    tokio::time::sleep(Duration::from_millis(100)).await;
    // The server dies and starts again on its address, answering this time.
    first.shutdown();
    drop(first);
    let mut second = None;
    for _ in 0..100 {
        match start(2, None).await {
            Ok(node) => {
                second = Some(node);
                break;
            }
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
    let second = second.expect("the server's address was freed");
    let service = TestService::install(&second);
    let reply = call.await.unwrap().unwrap();
    assert!(
        began.elapsed() < Duration::from_secs(3),
        "answered {:?} after the call began: the resend waited for the RPC timeout ({:?})",
        began.elapsed(),
        limits.rpc_timeout
    );
    assert_eq!(u64::from_be_bytes(reply[..8].try_into().unwrap()), 1);
    assert_eq!(service.executed.load(Ordering::SeqCst), 1);
    assert_eq!(*restarts.borrow(), 1, "one restart seen");
}

/// A service that answers after `delay`, counting what it executed.
struct Slow {
    delay: Duration,
    executed: AtomicU64,
}

impl iopath_fabric::rpc::Service for Slow {
    fn handle(self: Arc<Self>, _: iopath_fabric::rpc::Request) -> iopath_fabric::rpc::Reply {
        Box::pin(async move {
            tokio::time::sleep(self.delay).await;
            let n = self.executed.fetch_add(1, Ordering::SeqCst) + 1;
            Ok(Bytes::copy_from_slice(&n.to_be_bytes()))
        })
    }
}

#[tokio::test(start_paused = true)]
async fn a_slow_server_answers_resends_early_and_its_caller_waits_for_the_reply() {
    // A request queued behind thousands (a fyod's clients) takes longer than every resend a
    // call has: the resends find it executing and are answered early ("in progress"), which
    // uses none of them up, and the call waits for the reply, as a ptlrpc early reply
    // extends a client's deadline.
    let limits = Limits {
        rpc_timeout: Duration::from_secs(10),
        rpc_resends_max: 2,
        ..Limits::default()
    };
    let network = iopath_fabric::MemNetwork::new();
    let client = mem_node(&network, &limits, 1, None).await.unwrap();
    let server = mem_node(&network, &limits, 2, None).await.unwrap();
    let slow = Arc::new(Slow {
        delay: Duration::from_secs(95),
        executed: AtomicU64::new(0),
    });
    server
        .register_service(
            PORTAL,
            Arc::clone(&slow) as Arc<dyn iopath_fabric::rpc::Service>,
        )
        .unwrap();
    let began = tokio::time::Instant::now();
    let mut sends = 0;
    let reply = client
        .call_counting_sends(
            server.nid(),
            PORTAL,
            OP_COUNT,
            Bytes::new(),
            CallOptions::default(),
            &mut sends,
        )
        .await
        .unwrap();
    assert!(
        began.elapsed() >= Duration::from_secs(95),
        "{:?}",
        began.elapsed()
    );
    assert_eq!(u64::from_be_bytes(reply[..8].try_into().unwrap()), 1);
    assert_eq!(slow.executed.load(Ordering::SeqCst), 1, "executed once");
    let early = server.counters().early_replies.load(Ordering::Relaxed);
    assert!(early >= 3, "{early} early replies");
    // A resend a timeout, each answered early: no more than the timeouts allow.
    assert!(sends <= 10, "{sends} sends in 95 s at a 10 s timeout");
    assert_eq!(client.rpcs_pending(), 0);
}

#[tokio::test(start_paused = true)]
async fn a_call_whose_server_stays_in_progress_fails_after_its_early_replies() {
    let limits = Limits {
        rpc_timeout: Duration::from_secs(10),
        rpc_resends_max: 2,
        rpc_early_replies_max: 3,
        ..Limits::default()
    };
    let network = iopath_fabric::MemNetwork::new();
    let client = mem_node(&network, &limits, 1, None).await.unwrap();
    let server = mem_node(&network, &limits, 2, None).await.unwrap();
    server.register_service(PORTAL, Arc::new(Silent)).unwrap();
    let err = client
        .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
        .await
        .unwrap_err();
    assert!(
        matches!(err, FabricError::Timeout { what, .. } if what.contains("still executing")),
        "{err}"
    );
    assert_eq!(server.counters().early_replies.load(Ordering::Relaxed), 4);
}

#[test]
fn a_busy_server_is_asked_again_after_waits_that_double_to_a_second() {
    use iopath_fabric::rpc::client::{BUSY_BACKOFF_MAX, busy_backoff};
    assert_eq!(busy_backoff(1), Duration::from_millis(2));
    assert_eq!(busy_backoff(2), Duration::from_millis(4));
    assert_eq!(busy_backoff(9), Duration::from_millis(512));
    assert_eq!(busy_backoff(10), BUSY_BACKOFF_MAX);
    assert_eq!(busy_backoff(u32::MAX), BUSY_BACKOFF_MAX);
    assert_eq!(BUSY_BACKOFF_MAX, Duration::from_secs(1));
}
