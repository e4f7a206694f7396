//! Routed networks: clients on one network, servers on another, LNET-style routers between.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use bytes::Bytes;
use common::{OP_COUNT, OP_PULL, PORTAL, TestService, encode_desc, pattern, stat};
use iopath_fabric::fault::{FaultPlan, MessageFilter, SeededFaults};
use iopath_fabric::frame::Kind;
use iopath_fabric::router::RouterConfig;
use iopath_fabric::routing::RouteSpec;
use iopath_fabric::{ChecksumKind, Interface, Limits, MemNetwork, Nid, Node, NodeConfig};

/// Two in-memory networks: mem0 for clients, mem1 for servers.
struct Fabric {
    compute: Arc<MemNetwork>,
    storage: Arc<MemNetwork>,
    limits: Limits,
}

impl Fabric {
    /// Quick to notice a dead router and to resend.
    fn new() -> Fabric {
        Fabric::with_limits(Limits {
            router_ping_interval: Duration::from_millis(20),
            router_dead_timeout: Duration::from_millis(100),
            rpc_timeout: Duration::from_millis(300),
            bulk_timeout: Duration::from_millis(300),
            rpc_resends_max: 20,
            ..Limits::default()
        })
    }

    fn with_limits(limits: Limits) -> Fabric {
        Fabric {
            compute: MemNetwork::new(),
            storage: MemNetwork::new(),
            limits,
        }
    }

    async fn router(&self, n: u32, config: RouterConfig) -> Node {
        self.router_with_fault(n, config, None).await
    }

    async fn router_with_fault(
        &self,
        n: u32,
        config: RouterConfig,
        fault: Option<Arc<dyn iopath_fabric::fault::FaultHook>>,
    ) -> Node {
        let interfaces = vec![
            Interface::Mem {
                nid: Nid::mem(n, 0),
                network: self.compute.clone(),
            },
            Interface::Mem {
                nid: Nid::mem(n, 1),
                network: self.storage.clone(),
            },
        ];
        Node::start(NodeConfig {
            interfaces,
            limits: self.limits.clone(),
            router: Some(config),
            fault,
            ..NodeConfig::default()
        })
        .await
        .unwrap()
    }

    /// A node on mem0 (`compute`) or mem1, routing to the other network through `routers`
    /// given as (router number, hops).
    async fn endpoint(
        &self,
        n: u32,
        compute: bool,
        routers: &[(u32, u32)],
        fault: Option<Arc<SeededFaults>>,
    ) -> Node {
        let (net, other, network) = if compute {
            (0, 1, &self.compute)
        } else {
            (1, 0, &self.storage)
        };
        let routes = routers
            .iter()
            .map(|&(r, hops)| RouteSpec {
                net: Nid::mem(0, other).net,
                gateway: Nid::mem(r, net),
                hops,
                priority: 0,
            })
            .collect();
        let interfaces = vec![Interface::Mem {
            nid: Nid::mem(n, net),
            network: network.clone(),
        }];
        let fault = fault.map(|f| f as Arc<dyn iopath_fabric::fault::FaultHook>);
        Node::start(NodeConfig {
            interfaces,
            limits: self.limits.clone(),
            routes,
            fault,
            ..NodeConfig::default()
        })
        .await
        .unwrap()
    }
}

fn forwarded(node: &Node) -> u64 {
    node.counters().forwarded.load(Ordering::Relaxed)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn four_equal_routers_share_messages_round_robin() {
    let fabric = Fabric::new();
    let mut routers = Vec::new();
    for r in 1..=4 {
        routers.push(fabric.router(r, RouterConfig::default()).await);
    }
    let via: Vec<(u32, u32)> = (1..=4).map(|r| (r, 1)).collect();
    let client = fabric.endpoint(100, true, &via, None).await;
    let server = fabric.endpoint(200, false, &via, None).await;
    let service = TestService::install(&server);
    for _ in 0..40 {
        client
            .call(server.nid(), PORTAL, OP_COUNT, Bytes::new())
            .await
            .unwrap();
        // A gateway with bytes still outstanding is passed over, so strict turns need each
        // side's last send to have completed (on a loaded host its completion can lag a
        // round trip behind).
        wait_until("the routed sends have completed", || {
            client.bytes_outstanding_on_gateways() == 0
                && server.bytes_outstanding_on_gateways() == 0
        })
        .await;
    }
    assert_eq!(service.executed.load(Ordering::SeqCst), 40);
    // Each request went through the next router in turn, and so did each reply.
    let per_gateway: Vec<u64> = client
        .messages_per_gateway()
        .iter()
        .map(|(_, n)| *n)
        .collect();
    assert_eq!(
        per_gateway,
        [10, 10, 10, 10],
        "client's requests per router"
    );
    for router in &routers {
        assert_eq!(
            forwarded(router),
            20,
            "10 requests and 10 replies through {}",
            router.nid()
        );
        // What a router forwards it received: its stats count both sides. Beyond that it
        // sends only its answers to the nodes' pings, each naming its start in 8 bytes.
        let tree = iopath_lprocfs::ParamTree::new();
        iopath_fabric::params::register(router, &tree, "").unwrap();
        let (received, sent) = (stat(&tree, "recv_length"), stat(&tree, "send_length"));
        assert!(
            received > 0 && sent >= received && (sent - received) % 8 == 0,
            "{}: received {received} bytes, sent {sent}",
            router.nid()
        );
    }
}

async fn wait_until(what: &str, mut condition: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !condition() {
        assert!(Instant::now() < deadline, "timed out waiting until {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn backups_carry_traffic_only_while_every_primary_is_down() {
    let fabric = Fabric::new();
    let primaries = [
        fabric.router(1, RouterConfig::default()).await,
        fabric.router(2, RouterConfig::default()).await,
    ];
    let backups = [
        fabric.router(3, RouterConfig::default()).await,
        fabric.router(4, RouterConfig::default()).await,
    ];
    let via = [(1, 1), (2, 1), (3, 10), (4, 10)];
    let client = fabric.endpoint(100, true, &via, None).await;
    let server = fabric.endpoint(200, false, &via, None).await;
    TestService::install(&server);
    let calls = |n: usize| {
        let (client, server) = (client.clone(), server.nid());
        async move {
            for _ in 0..n {
                client
                    .call(server, PORTAL, OP_COUNT, Bytes::new())
                    .await
                    .unwrap();
            }
        }
    };
    calls(20).await;
    assert!(primaries.iter().all(|r| forwarded(r) > 0));
    assert!(
        backups.iter().all(|r| forwarded(r) == 0),
        "backups idle while a primary lives"
    );

    // Kill both primaries: traffic moves to the backups (the first send through a dead router
    // fails, marks it down, and the RPC is resent the next way).
    for router in &primaries {
        router.shutdown();
    }
    let before: Vec<u64> = primaries.iter().map(forwarded).collect();
    calls(20).await;
    assert_eq!(
        primaries.iter().map(forwarded).collect::<Vec<_>>(),
        before,
        "dead routers carried nothing"
    );
    assert!(
        backups.iter().all(|r| forwarded(r) > 0),
        "both backups share the load"
    );

    // Bring one primary back at the same NIDs: once it answers a ping it takes the traffic again.
    drop(primaries);
    let revived = fabric.router(1, RouterConfig::default()).await;
    let gateway = Nid::mem(1, 0);
    wait_until("the client sees router 1 alive", || {
        client
            .routes()
            .iter()
            .any(|(r, alive)| r.gateway == gateway && *alive)
    })
    .await;
    wait_until("the server sees router 1 alive", || {
        server
            .routes()
            .iter()
            .any(|(r, alive)| r.gateway == Nid::mem(1, 1) && *alive)
    })
    .await;
    let backups_before: Vec<u64> = backups.iter().map(forwarded).collect();
    calls(20).await;
    assert_eq!(
        forwarded(&revived),
        40,
        "all 20 requests and 20 replies through the revived primary"
    );
    assert_eq!(
        backups.iter().map(forwarded).collect::<Vec<_>>(),
        backups_before,
        "backups idle again"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_write_is_lost_or_duplicated_across_a_router_failure_under_load() {
    let limits = Limits {
        router_ping_interval: Duration::from_millis(50),
        router_dead_timeout: Duration::from_millis(200),
        rpc_timeout: Duration::from_millis(500),
        bulk_timeout: Duration::from_millis(500),
        rpc_resends_max: 20,
        ..Limits::default()
    };
    let (routers, client, server) = tcp_routed(&limits, RouterConfig::default(), 2).await;
    let service = TestService::install(&server);
    let data = Bytes::from(pattern(1 << 20, 11));
    let mut tasks = Vec::new();
    for worker in 0..8 {
        let (client, server, data) = (client.clone(), server.nid(), data.clone());
        tasks.push(tokio::spawn(async move {
            for i in 0..40 {
                let region = client.regions().register_source(data.clone()).unwrap();
                let desc = region.describe_all(ChecksumKind::Crc32);
                let reply = client
                    .call(server, PORTAL, OP_PULL, encode_desc(&desc))
                    .await;
                let reply = reply.unwrap_or_else(|e| panic!("worker {worker} write {i}: {e}"));
                assert_eq!(
                    u32::from_be_bytes(reply[..4].try_into().unwrap()),
                    desc.checksum.unwrap()
                );
            }
        }));
    }
    // Kill a router while the writes are in flight.
    wait_until("writes are flowing", || {
        service.executed.load(Ordering::SeqCst) >= 40
    })
    .await;
    routers[0].shutdown();
    let at_kill = service.executed.load(Ordering::SeqCst);
    for task in tasks {
        task.await.unwrap();
    }
    assert!(
        at_kill < 320,
        "the router died with writes still to come ({at_kill} done)"
    );
    let dead = routers[0].nids()[0];
    assert!(
        client
            .routes()
            .iter()
            .any(|(r, alive)| r.gateway == dead && !alive),
        "the client marked it down"
    );
    // Every write acknowledged, each executed exactly once.
    assert_eq!(
        service.executed.load(Ordering::SeqCst),
        320,
        "no write lost, none executed twice"
    );
}

/// `count` routers between two loopback TCP networks (tcp0, tcp1), with an endpoint on each
/// side routing through all of them at hop 1.
async fn tcp_routed(
    limits: &Limits,
    config: RouterConfig,
    count: usize,
) -> (Vec<Node>, Node, Node) {
    let any = |net: u16| Interface::Tcp {
        nid: format!("127.0.0.1:0@tcp{net}").parse().unwrap(),
    };
    let mut routers = Vec::new();
    for _ in 0..count {
        let interfaces = vec![any(0), any(1)];
        let config = NodeConfig {
            interfaces,
            limits: limits.clone(),
            router: Some(config),
            ..NodeConfig::default()
        };
        routers.push(Node::start(config).await.unwrap());
    }
    let endpoint = |net: u16| {
        let other = Nid::tcp("127.0.0.1:1".parse().unwrap(), 1 - net).net;
        let routes = routers
            .iter()
            .map(|r| RouteSpec {
                net: other,
                gateway: r.nids()[net as usize],
                hops: 1,
                priority: 0,
            })
            .collect();
        NodeConfig {
            interfaces: vec![any(net)],
            limits: limits.clone(),
            routes,
            ..NodeConfig::default()
        }
    };
    let client = Node::start(endpoint(0)).await.unwrap();
    let server = Node::start(endpoint(1)).await.unwrap();
    (routers, client, server)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_under_10x_overload_never_holds_more_buffers_than_its_credits() {
    let limits = Limits {
        rpc_timeout: Duration::from_secs(30),
        bulk_timeout: Duration::from_secs(30),
        ..Limits::default()
    };
    let config = RouterConfig {
        tiny_buffers: 4,
        small_buffers: 4,
        large_buffers: 2,
        peer_buffer_credits: 2,
        ..RouterConfig::default()
    };
    let (routers, client, server) = tcp_routed(&limits, config, 1).await;
    let router = routers.into_iter().next().unwrap();
    TestService::install(&server);
    // IORCD on the router, every 20 ms.
    let tree = iopath_lprocfs::ParamTree::new();
    let iorcd =
        iopath_fabric::iorcd::Sampler::start(&router, Some(Duration::from_millis(20)), &tree)
            .unwrap();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let sampler = {
        let (router, stop) = (router.clone(), stop.clone());
        tokio::spawn(async move {
            let mut worst = [0u32; 3];
            while !stop.load(Ordering::Relaxed) {
                let buffers = router.router_buffers().unwrap();
                for (i, (_, _, snapshot)) in buffers.pools().iter().enumerate() {
                    assert!(snapshot.in_flight <= snapshot.credits_max, "{snapshot:?}");
                    worst[i] = worst[i].max(snapshot.in_flight);
                }
                for (peer, snapshot) in buffers.peers() {
                    assert!(
                        snapshot.in_flight <= 2,
                        "router credits of {peer}: {snapshot:?}"
                    );
                }
                tokio::time::sleep(Duration::from_micros(200)).await;
            }
            worst
        })
    };
    // 20 writers of 1 MiB against 2 large buffers: ten times the router's large-buffer credits.
    let data = Bytes::from(pattern(1 << 20, 5));
    let mut tasks = Vec::new();
    for _ in 0..20 {
        let (client, server, data) = (client.clone(), server.nid(), data.clone());
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
    let worst = sampler.await.unwrap();
    assert!(worst[2] > 0, "the sampler saw large buffers in use");
    let buffers = router.router_buffers().unwrap();
    let [_, _, (_, _, large)] = buffers.pools();
    let queued_on_peer = buffers.peers().iter().any(|(_, s)| s.credits_min < 0);
    assert!(
        large.credits_min < 0 || queued_on_peer,
        "senders queued for buffers (counts went negative): {large:?}"
    );
    // The wait showed as congestion where it happened: a router pool or router credit that
    // went negative counted its waits and their time; one that never did counted none.
    let gates = buffers
        .pools()
        .into_iter()
        .map(|(class, _, s)| (format!("{class:?}"), s))
        .chain(buffers.peers().into_iter().map(|(p, s)| (p.to_string(), s)));
    for (gate, snapshot) in gates {
        assert_eq!(
            snapshot.credits_min < 0,
            snapshot.waits > 0 && !snapshot.waited.is_zero(),
            "{gate}: {snapshot:?}"
        );
    }
    // IORCD saw the stall where it was: the data (1 MiB REPLYs) comes from the client's network
    // and waited longest to get into the router; the puller's small GETs from the server's
    // network, two router credits per peer for twenty pulls, waited too, but less. What the
    // router forwarded onto the server's network is counted too.
    tokio::time::sleep(Duration::from_millis(60)).await;
    let records = iorcd.records();
    assert!(!records.is_empty(), "samples every 20 ms");
    let sum = |network: &str, f: fn(&iopath_fabric::iorcd::Sample) -> f64| -> f64 {
        records.iter().filter(|r| r.network == network).map(f).sum()
    };
    let (client_net, server_net) = (client.nid().net.to_string(), server.nid().net.to_string());
    let ingress = |r: &iopath_fabric::iorcd::Sample| r.ingress_congestion_s;
    let (from_client, from_server) = (
        sum(&client_net, ingress) + sum("*", ingress),
        sum(&server_net, ingress),
    );
    assert!(
        from_client > from_server,
        "ingress congestion from the data's side {from_client} s, the GETs' side {from_server} s: {records:#?}"
    );
    let bytes_to_server: u64 = records
        .iter()
        .filter(|r| r.network == server_net)
        .map(|r| r.bytes_out)
        .sum();
    assert!(
        bytes_to_server >= 20 * 4 * (1 << 20),
        "every pulled byte went out onto the server's network: {bytes_to_server}"
    );
    let lines = tree.get("iorcd.samples").unwrap().remove(0).value;
    assert!(
        lines.lines().count() >= records.len(),
        "the records, as JSON Lines"
    );
    for line in lines.lines() {
        let record: serde_json::Value = serde_json::from_str(line).unwrap();
        assert_eq!(record["router"], router.nid().to_string());
    }
    // Idle: every router buffer and router credit is back, and every send credit.
    for (class, _, snapshot) in buffers.pools() {
        assert_eq!(
            snapshot.credits,
            i64::from(snapshot.credits_max),
            "{class:?}: {snapshot:?}"
        );
    }
    for (peer, snapshot) in buffers.peers() {
        assert_eq!(
            snapshot.credits, 2,
            "router credits of {peer}: {snapshot:?}"
        );
    }
    for node in [&client, &server, &router] {
        for ni in node.interfaces() {
            assert_eq!(ni.credits().credits, i64::from(ni.credits().credits_max));
            for (_, snapshot) in ni.peers() {
                assert_eq!(snapshot.credits, i64::from(snapshot.credits_max));
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_bulk_chunk_is_caught_at_the_router() {
    let seed = 0x5EED_0006;
    println!("fault seed {seed:#x}");
    let fabric = Fabric::new();
    let router = fabric.router(1, RouterConfig::default()).await;
    let plan = FaultPlan {
        filter: MessageFilter {
            kinds: vec![Kind::Reply],
            portals: vec![],
        },
        corrupt_probability: 0.5,
        faults_max: 3,
        ..FaultPlan::default()
    };
    let faults = Arc::new(SeededFaults::new(seed, plan));
    // The client serves its data corrupted now and then; the server pulls it through the router.
    let client = fabric
        .endpoint(100, true, &[(1, 1)], Some(faults.clone()))
        .await;
    let server = fabric.endpoint(200, false, &[(1, 1)], None).await;
    TestService::install(&server);
    let data = Bytes::from(pattern(4 << 20, 6));
    let region = client.regions().register_source(data.clone()).unwrap();
    let desc = region.describe_all(ChecksumKind::Crc32);
    let reply = client
        .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
        .await
        .unwrap();
    assert_eq!(
        u32::from_be_bytes(reply[..4].try_into().unwrap()),
        desc.checksum.unwrap(),
        "arrived intact"
    );
    let injected = faults.injected();
    assert!(injected > 0);
    assert_eq!(
        router
            .counters()
            .router_checksum_mismatches
            .load(Ordering::Relaxed),
        injected,
        "caught at the router"
    );
    assert_eq!(
        server
            .counters()
            .checksum_mismatches
            .load(Ordering::Relaxed),
        injected,
        "and refused by the receiver"
    );
}

/// Every send of the node arrives this much later, as over a slow wire: credits stay held.
#[derive(Debug)]
struct SlowWire(Duration);

impl iopath_fabric::fault::FaultHook for SlowWire {
    fn on_send(
        &self,
        _header: &iopath_fabric::frame::Header,
        _payload_len: usize,
    ) -> iopath_fabric::fault::Fault {
        iopath_fabric::fault::Fault::Delay(self.0)
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_router_holds_a_small_messages_buffer_until_it_has_left() {
    // Default limits: a router 200 ms slow is not dead, and its RPCs are not late.
    let fabric = Fabric::with_limits(Limits::default());
    // The router's wire holds each message 200 ms: forwarded at once, it is still "leaving".
    let slow = Arc::new(SlowWire(Duration::from_millis(200)));
    let router = fabric
        .router_with_fault(1, RouterConfig::default(), Some(slow))
        .await;
    let client = fabric.endpoint(10, true, &[(1, 1)], None).await;
    let server = fabric.endpoint(20, false, &[(1, 1)], None).await;
    TestService::install(&server);
    let call = {
        let (client, server) = (client.clone(), server.nid());
        tokio::spawn(async move { client.call(server, PORTAL, OP_COUNT, Bytes::new()).await })
    };
    // While the request (then the reply) is on the router's slow wire, its buffer is held.
    let buffers = router.router_buffers().unwrap();
    let mut held = 0;
    while !call.is_finished() {
        let in_use: u32 = buffers.pools().iter().map(|(_, _, s)| s.in_flight).sum();
        held = held.max(in_use);
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    call.await.unwrap().unwrap();
    assert_eq!(
        held, 1,
        "one message through the router at a time, its buffer held"
    );
    assert!(
        router.counters().forwarded_inline.load(Ordering::Relaxed) >= 2,
        "the request and its reply were handed on by the task that read them"
    );
    // Left: every buffer and router credit is back.
    for (class, _, snapshot) in buffers.pools() {
        assert_eq!(snapshot.in_flight, 0, "{class:?}: {snapshot:?}");
    }
    for (peer, snapshot) in buffers.peers() {
        assert_eq!(
            snapshot.in_flight, 0,
            "router credits of {peer}: {snapshot:?}"
        );
    }
}

/// Log lines gathered by a subscriber of their own, for a test to read.
#[derive(Clone, Default)]
struct Logged(Arc<std::sync::Mutex<Vec<u8>>>);

impl std::io::Write for Logged {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(bytes);
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[tokio::test]
async fn a_node_that_marks_a_silent_router_down_names_itself_in_the_log() {
    // Found in a Slurm job's log, which every node of the job writes to: "router silent:
    // marked down" did not say which node had marked it.
    let logged = Logged::default();
    let subscriber = tracing_subscriber::fmt()
        .with_writer({
            let logged = logged.clone();
            move || logged.clone()
        })
        .with_ansi(false)
        .finish();
    let _guard = tracing::subscriber::set_default(subscriber);
    let fabric = Fabric::new();
    let router = fabric.router(1, RouterConfig::default()).await;
    let client = fabric.endpoint(100, true, &[(1, 1)], None).await;
    router.shutdown();
    let text = || String::from_utf8_lossy(&logged.0.lock().unwrap()).into_owned();
    wait_until("the client marks its silent router down", || {
        text().contains("router silent: marked down")
    })
    .await;
    let line = text()
        .lines()
        .find(|l| l.contains("router silent: marked down"))
        .unwrap()
        .to_owned();
    assert!(
        line.contains(&format!("node={}", client.nid())) && line.contains("gateway=1@mem0"),
        "the line names the node and the router: {line}"
    );
}
