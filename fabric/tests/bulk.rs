//! Bulk GET and PUT by descriptor across sizes, offsets and transports, with faults.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use common::{
    BOTH, OP_PULL, OP_PUSH, PORTAL, TestService, Transport, encode_desc, nodes, pattern, stat,
};
use iopath_fabric::aligned::DIRECT_ALIGN_BYTES;
use iopath_fabric::fault::{FaultPlan, MessageFilter, SeededFaults};
use iopath_fabric::frame::Kind;
use iopath_fabric::lnd::tcp::READ_AHEAD_BYTES;
use iopath_fabric::{ChecksumKind, Checksummed, FabricError, Limits, Nid, Node};
use iopath_lprocfs::ParamTree;

const MIB: usize = 1 << 20;

/// Sizes from one byte to 64 MiB, including chunk boundaries and their neighbours.
const SIZES: [usize; 10] = [
    1,
    7,
    4095,
    4096,
    65_537,
    MIB - 1,
    MIB,
    MIB + 1,
    3 * MIB + 12_345,
    64 * MIB,
];

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pulls_from_one_byte_to_64_mib_at_unaligned_offsets() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, Limits::default(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        TestService::install(server);
        for (i, &size) in SIZES.iter().enumerate() {
            let offset = [0usize, 1, 3, 4097][i % 4];
            for kind in [ChecksumKind::Crc32, ChecksumKind::Crc32c] {
                let data = Bytes::from(pattern(offset + size + 5, size as u64));
                let region = client.regions().register_source(data.clone()).unwrap();
                let desc = region.describe(offset as u64, size as u64, kind).unwrap();
                let reply = client
                    .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
                    .await
                    .unwrap();
                let crc = u32::from_be_bytes(reply[..4].try_into().unwrap());
                assert_eq!(
                    crc,
                    kind.compute(&data[offset..offset + size]),
                    "{transport:?} {kind} {size}@{offset}"
                );
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pushes_from_one_byte_to_64_mib_at_unaligned_offsets() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, Limits::default(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        TestService::install(server);
        for (i, &size) in SIZES.iter().enumerate() {
            let offset = [0u64, 1, 3, 4097][i % 4];
            let sink = client
                .regions()
                .register_sink(offset + size as u64 + 9)
                .unwrap();
            let desc = sink
                .describe(offset, size as u64, ChecksumKind::Crc32c)
                .unwrap();
            let reply = client
                .call(server.nid(), PORTAL, OP_PUSH, encode_desc(&desc))
                .await
                .unwrap();
            let data = sink.into_bytes();
            let expected = pattern(size, offset);
            assert_eq!(
                &data[offset as usize..offset as usize + size],
                &expected[..],
                "{transport:?} {size}@{offset}"
            );
            assert!(
                data[..offset as usize].iter().all(|&b| b == 0),
                "nothing written before the descriptor"
            );
            assert!(
                data[offset as usize + size..].iter().all(|&b| b == 0),
                "nothing written after it"
            );
            let crc = u32::from_be_bytes(reply[..4].try_into().unwrap());
            assert_eq!(crc, ChecksumKind::Crc32c.compute(&expected));
        }
    }
}

/// `server` pulls `data` from a region of `client`'s and answers with the checksum of what
/// arrived, which must be the data's.
async fn pulled_whole(client: &Node, server: Nid, data: Vec<u8>, what: &str) {
    let data = Bytes::from(data);
    let region = client.regions().register_source(data.clone()).unwrap();
    let desc = region
        .describe(0, data.len() as u64, ChecksumKind::Crc32)
        .unwrap();
    let reply = client
        .call(server, PORTAL, OP_PULL, encode_desc(&desc))
        .await
        .unwrap();
    assert_eq!(
        u32::from_be_bytes(reply[..4].try_into().unwrap()),
        ChecksumKind::Crc32.compute(&data),
        "{what}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn many_concurrent_regions() {
    for transport in BOTH {
        let nodes = nodes(transport, 3, Limits::default(), None).await;
        for server in &nodes[1..] {
            TestService::install(server);
        }
        let client = nodes[0].clone();
        let mut tasks = Vec::new();
        for i in 0..64u64 {
            let client = client.clone();
            let server = nodes[1 + (i % 2) as usize].nid();
            tasks.push(tokio::spawn(async move {
                let size = 1000 + (i as usize * 37_111) % (3 * MIB);
                pulled_whole(&client, server, pattern(size, i), &format!("region {i}")).await;
            }));
        }
        for task in tasks {
            task.await.unwrap();
        }
        assert_eq!(
            client.regions().count(),
            0,
            "every region released when its handle dropped"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn small_frames_written_by_their_senders_and_large_ones_by_the_writer_arrive_whole() {
    // A small frame that finds its TCP connection idle is written by the task sending it;
    // the others queue for the connection's writer. Many tasks at once, small and large
    // payloads mixed, both nodes sending: every frame must arrive whole, none interleaved
    // with another's bytes.
    let nodes = nodes(Transport::Tcp, 2, Limits::default(), None).await;
    let (client, server) = (nodes[0].clone(), &nodes[1]);
    TestService::install(server);
    let mut tasks = Vec::new();
    for i in 0..16u64 {
        let client = client.clone();
        let server = server.nid();
        tasks.push(tokio::spawn(async move {
            for call in 0..40u64 {
                let size = match (i + call) % 5 {
                    0 => 256 * 1024 + (call as usize * 4099) % 4096,
                    _ => (i as usize * 977 + call as usize * 131) % 4097,
                };
                let data = pattern(size, i * 1000 + call);
                let what = format!("task {i}, call {call}: {size} bytes");
                pulled_whole(&client, server, data, &what).await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    for node in [&client, server] {
        let tree = ParamTree::new();
        iopath_fabric::params::register(node, &tree, "").unwrap();
        let (sent, inline) = (stat(&tree, "send_count"), stat(&tree, "sent_inline"));
        // Frames that found their connection idle, small or bulk, were written by the task
        // that sent them; never more than were sent.
        assert!(
            0 < inline && inline <= sent,
            "{}: {inline} of {sent} frames written by their senders",
            node.nid()
        );
        // A garbled frame would end its connection and be sent again: not one was.
        for counter in ["checksum_mismatches", "bulk_resends", "rpc_resends"] {
            assert_eq!(stat(&tree, counter), 0, "{}: {counter}", node.nid());
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_chunk_pull_lands_in_one_aligned_buffer_with_nothing_assembled() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, Limits::default(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        let tree = ParamTree::new();
        iopath_fabric::params::register(server, &tree, "").unwrap();
        let data = Bytes::from(pattern(4 * MIB + 3, 11));
        let region = client.regions().register_source(data.clone()).unwrap();
        // An OST write's worth: four chunks, from an unaligned offset of the owner's memory.
        let desc = region
            .describe(3, 4 * MIB as u64, ChecksumKind::Crc32)
            .unwrap();
        for pull in 1..=2u64 {
            let pulled = server.bulk_get(&desc).await.unwrap();
            assert_eq!(pulled, data.slice(3..), "{transport:?}");
            assert_eq!(
                pulled.as_ptr() as usize % DIRECT_ALIGN_BYTES,
                0,
                "{transport:?}: one page-aligned buffer, which a storage server writes with \
                 O_DIRECT as it is"
            );
            let pulled_bytes = pull * 4 * MIB as u64;
            assert_eq!(stat(&tree, "bulk_get_bytes"), pulled_bytes);
            assert_eq!(
                stat(&tree, "recv_placed_bytes"),
                pulled_bytes,
                "{transport:?}: every REPLY received straight into its place"
            );
            assert_eq!(
                stat(&tree, "bulk_copied_bytes"),
                0,
                "{transport:?}: nothing copied to assemble the chunks"
            );
            let copied = stat(&tree, "recv_copied_bytes");
            println!("{transport:?}, after pull {pull} of 4 MiB: {copied} bytes copied by the LND");
            match transport {
                // At most what the reader took in along with each chunk's header.
                Transport::Tcp => assert!(
                    copied <= pull * 4 * READ_AHEAD_BYTES as u64,
                    "{copied} bytes copied by the TCP LND"
                ),
                // Its payloads are the owner's memory: one copy each into place.
                Transport::Mem => assert_eq!(copied, pulled_bytes),
            }
        }
        // The congestion view: a row per gate, nobody waited, nothing forwarded.
        let congestion = tree.get("congestion").unwrap().remove(0).value;
        let mut lines = congestion.lines();
        assert!(lines.next().unwrap().starts_with("gate "), "{congestion}");
        let gates: Vec<&str> = lines
            .clone()
            .filter(|l| !l.starts_with("forwarded"))
            .collect();
        assert!(
            gates
                .iter()
                .any(|l| l.starts_with(&format!("ni {} tx", server.nid())))
        );
        assert!(
            gates
                .iter()
                .any(|l| l.starts_with(&format!("peer {} tx", client.nid())))
        );
        for gate in gates {
            let fields: Vec<&str> = gate.split_whitespace().collect();
            assert_eq!(fields[fields.len() - 4], "0", "no waits: {gate}");
        }
        assert_eq!(congestion.lines().last(), Some("forwarded 0"));
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_multi_chunk_pull_whose_whole_checksum_is_wrong_fails_after_every_chunk_checks_out() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, Limits::default(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        let data = Bytes::from(pattern(3 * MIB, 12));
        let wrong = !ChecksumKind::Crc32.compute(&data);
        let region = client
            .regions()
            .register_source(Checksummed::new(data.clone(), ChecksumKind::Crc32, wrong))
            .unwrap();
        let desc = region.describe_all(ChecksumKind::Crc32);
        let err = server.bulk_get(&desc).await.unwrap_err();
        let attempts = Limits::default().checksum_resends_max + 1;
        assert!(
            matches!(err, FabricError::ChecksumMismatch { attempts: a, .. } if a == attempts),
            "{transport:?}: {err}"
        );
        // Every attempt pulled every chunk intact; nothing of them is handed on, and a
        // right descriptor of the same bytes pulls them whole.
        let region = client.regions().register_source(data.clone()).unwrap();
        let right = region.describe_all(ChecksumKind::Crc32);
        assert_eq!(
            server.bulk_get(&right).await.unwrap(),
            data,
            "{transport:?}"
        );
    }
}

fn corrupt_replies(seed: u64, probability: f64, faults_max: u64) -> Arc<SeededFaults> {
    let plan = FaultPlan {
        filter: MessageFilter {
            kinds: vec![Kind::Reply],
            portals: vec![],
        },
        corrupt_probability: probability,
        faults_max,
        ..FaultPlan::default()
    };
    Arc::new(SeededFaults::new(seed, plan))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupted_chunk_is_resent_and_arrives_intact() {
    let seed = 0x5EED_0001;
    println!("fault seed {seed:#x}");
    for transport in BOTH {
        // The client (owner of the data) corrupts a third of the chunks it serves, at most 20.
        let faults = corrupt_replies(seed, 0.34, 20);
        // Which chunk draws which number depends on the order of sends across threads, so a
        // chunk may be hit several times in a row: allow enough resends that the test is
        // about resending, not about the limit (0.34^11 per chunk).
        let limits = Limits {
            checksum_resends_max: 10,
            ..Limits::default()
        };
        let mut all = nodes(transport, 1, limits.clone(), Some(faults.clone())).await;
        all.extend(nodes(transport, 1, limits.clone(), None).await);
        if transport == Transport::Mem {
            // Two networks from two calls: put both on one by starting afresh.
            all = nodes_on_one_mem_network_with(faults.clone(), limits.clone()).await;
        }
        let (client, server) = (&all[0], &all[1]);
        TestService::install(server);
        let data = Bytes::from(pattern(8 * MIB + 3, 1));
        let region = client.regions().register_source(data.clone()).unwrap();
        let desc = region.describe_all(ChecksumKind::Crc32);
        let reply = client
            .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
            .await
            .unwrap();
        assert_eq!(
            u32::from_be_bytes(reply[..4].try_into().unwrap()),
            ChecksumKind::Crc32.compute(&data)
        );
        assert!(
            faults.injected() > 0,
            "the plan injected no corruption (seed {seed:#x})"
        );
        let mismatches = server
            .counters()
            .checksum_mismatches
            .load(std::sync::atomic::Ordering::Relaxed);
        assert_eq!(
            mismatches,
            faults.injected(),
            "every corrupted chunk was caught ({transport:?})"
        );
    }
}

async fn nodes_on_one_mem_network(client_fault: Arc<SeededFaults>) -> Vec<iopath_fabric::Node> {
    nodes_on_one_mem_network_with(client_fault, Limits::default()).await
}

async fn nodes_on_one_mem_network_with(
    client_fault: Arc<SeededFaults>,
    limits: Limits,
) -> Vec<iopath_fabric::Node> {
    use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};
    let network = MemNetwork::new();
    let mut out = Vec::new();
    for (n, fault) in [
        (
            1,
            Some(client_fault as Arc<dyn iopath_fabric::fault::FaultHook>),
        ),
        (2, None),
    ] {
        let interface = Interface::Mem {
            nid: Nid::mem(n, 0),
            network: network.clone(),
        };
        out.push(
            Node::start(NodeConfig {
                interfaces: vec![interface],
                limits: limits.clone(),
                fault,
                ..Default::default()
            })
            .await
            .unwrap(),
        );
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn persistent_corruption_ends_in_an_error_and_nothing_is_handed_on() {
    let seed = 0x5EED_0002;
    println!("fault seed {seed:#x}");
    let nodes = nodes_on_one_mem_network(corrupt_replies(seed, 1.0, u64::MAX)).await;
    let (client, server) = (&nodes[0], &nodes[1]);
    TestService::install(server);
    let region = client
        .regions()
        .register_source(Bytes::from(pattern(3 * MIB, 2)))
        .unwrap();
    let desc = region.describe_all(ChecksumKind::Crc32);
    let err = client
        .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
        .await
        .unwrap_err();
    match err {
        FabricError::Remote { code, message, .. } => {
            assert_eq!(code, 74, "EBADMSG");
            assert!(message.contains("checksum mismatch"), "{message}");
        }
        other => panic!("expected a remote checksum error, got {other}"),
    }
    let limits = Limits::default();
    let mismatches = server
        .counters()
        .checksum_mismatches
        .load(std::sync::atomic::Ordering::Relaxed);
    // Three chunks are in flight at once and every one keeps failing: the first to use up its
    // resends ends the transfer, so each chunk was tried at most `checksum_resends_max + 1` times.
    let per_chunk = u64::from(limits.checksum_resends_max) + 1;
    assert!(
        (per_chunk..=3 * per_chunk).contains(&mismatches),
        "{mismatches} mismatches"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn corrupted_pushes_are_refused_by_the_owner_and_resent() {
    let seed = 0x5EED_0003;
    println!("fault seed {seed:#x}");
    // The server pushes; its PUT chunks are corrupted on the way.
    let plan = FaultPlan {
        filter: MessageFilter {
            kinds: vec![Kind::Put],
            portals: vec![iopath_fabric::frame::BULK_PORTAL],
        },
        corrupt_probability: 0.5,
        faults_max: 10,
        ..FaultPlan::default()
    };
    let faults = Arc::new(SeededFaults::new(seed, plan));
    let network = iopath_fabric::MemNetwork::new();
    let mut all = Vec::new();
    for (n, fault) in [
        (1u32, None),
        (
            2,
            Some(faults.clone() as Arc<dyn iopath_fabric::fault::FaultHook>),
        ),
    ] {
        let interface = iopath_fabric::Interface::Mem {
            nid: iopath_fabric::Nid::mem(n, 0),
            network: network.clone(),
        };
        let config = iopath_fabric::NodeConfig {
            interfaces: vec![interface],
            limits: Limits {
                checksum_resends_max: 12,
                ..Limits::default()
            }, // a chunk may be hit again and again: the test is about refusal and resend
            fault,
            ..Default::default()
        };
        all.push(iopath_fabric::Node::start(config).await.unwrap());
    }
    let (client, server) = (&all[0], &all[1]);
    TestService::install(server);
    let sink = client.regions().register_sink(6 * MIB as u64).unwrap();
    let desc = sink
        .describe(0, 6 * MIB as u64, ChecksumKind::Crc32)
        .unwrap();
    client
        .call(server.nid(), PORTAL, OP_PUSH, encode_desc(&desc))
        .await
        .unwrap();
    assert_eq!(&sink.into_bytes()[..], &pattern(6 * MIB, 0)[..]);
    assert!(faults.injected() > 0);
    let refused = client
        .counters()
        .checksum_mismatches
        .load(std::sync::atomic::Ordering::Relaxed);
    assert_eq!(
        refused,
        faults.injected(),
        "the owner refused every corrupted chunk"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropped_and_delayed_bulk_still_completes() {
    let seed = 0x5EED_0004;
    println!("fault seed {seed:#x}");
    for transport in BOTH {
        let plan = FaultPlan {
            filter: MessageFilter {
                kinds: vec![Kind::Get, Kind::Reply],
                portals: vec![],
            },
            drop_probability: 0.2,
            delay_probability: 0.3,
            delay_max: Duration::from_millis(20),
            faults_max: 30,
            ..FaultPlan::default()
        };
        let faults = Arc::new(SeededFaults::new(seed, plan));
        let limits = Limits {
            bulk_timeout: Duration::from_millis(200),
            ..Limits::default()
        };
        let nodes = nodes(transport, 2, limits, Some(faults.clone())).await;
        TestService::install(&nodes[1]);
        let data = Bytes::from(pattern(10 * MIB, 4));
        let region = nodes[0].regions().register_source(data.clone()).unwrap();
        let desc = region.describe_all(ChecksumKind::Crc32c);
        // Delayed REPLYs arrive after their chunk was asked for again and kept, some after
        // the transfer is over: they must land nowhere that matters.
        let reply = nodes[0]
            .call(nodes[1].nid(), PORTAL, OP_PULL, encode_desc(&desc))
            .await
            .unwrap();
        assert_eq!(
            u32::from_be_bytes(reply[..4].try_into().unwrap()),
            ChecksumKind::Crc32c.compute(&data),
            "{transport:?}"
        );
        assert!(faults.injected() > 0);
        // A second pull of the same bytes, into a landing that may reuse the first's
        // memory, while the first's late REPLYs may still be arriving.
        let again = nodes[1].bulk_get(&desc).await.unwrap();
        assert_eq!(again, data, "{transport:?}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forwarders_slice_is_verified_chunk_by_chunk() {
    let seed = 0x5EED_0007;
    println!("fault seed {seed:#x}");
    // Nearly every chunk corrupted once (at most 2 in all), so the run always exercises it.
    let faults = corrupt_replies(seed, 0.9, 2);
    let nodes = nodes_on_one_mem_network(faults.clone()).await;
    let (client, server) = (&nodes[0], &nodes[1]);
    TestService::install(server);
    let data = Bytes::from(pattern(8 * MIB, 8));
    let region = client.regions().register_source(data.clone()).unwrap();
    let whole = region.describe_all(ChecksumKind::Crc32);
    // A forwarder cuts out a stripe-sized piece: it cannot know the piece's checksum.
    let (offset, length) = (MIB as u64 + 17, 3 * MIB as u64);
    let piece = whole.slice(offset, length).unwrap();
    assert_eq!(piece.checksum, None);
    let reply = client
        .call(server.nid(), PORTAL, OP_PULL, encode_desc(&piece))
        .await
        .unwrap();
    let expected = ChecksumKind::Crc32.compute(&data[offset as usize..(offset + length) as usize]);
    assert_eq!(
        u32::from_be_bytes(reply[..4].try_into().unwrap()),
        expected,
        "the piece arrived intact"
    );
    assert!(faults.injected() > 0, "chunks were corrupted on the way");
    assert_eq!(
        server
            .counters()
            .checksum_mismatches
            .load(std::sync::atomic::Ordering::Relaxed),
        faults.injected()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_checksum_that_comes_with_the_data_is_used_and_a_wrong_one_is_caught() {
    for transport in BOTH {
        let nodes = nodes(transport, 2, Limits::default(), None).await;
        let (client, server) = (&nodes[0], &nodes[1]);
        TestService::install(server);
        let data = Bytes::from(pattern(MIB, 9));
        let right = ChecksumKind::Crc32.compute(&data);
        let region = client
            .regions()
            .register_source(Checksummed::new(data.clone(), ChecksumKind::Crc32, right))
            .unwrap();
        let desc = region.describe_all(ChecksumKind::Crc32);
        assert_eq!(desc.checksum, Some(right));
        let reply = client
            .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
            .await
            .unwrap();
        assert_eq!(u32::from_be_bytes(reply[..4].try_into().unwrap()), right);

        // A checksum of another kind is not used; a wrong one is not trusted.
        let region = client
            .regions()
            .register_source(Checksummed::new(data.clone(), ChecksumKind::Crc32c, 0))
            .unwrap();
        assert_eq!(
            region.describe_all(ChecksumKind::Crc32).checksum,
            Some(right)
        );
        let region = client
            .regions()
            .register_source(Checksummed::new(data, ChecksumKind::Crc32, !right))
            .unwrap();
        let desc = region.describe_all(ChecksumKind::Crc32);
        let err = client
            .call(server.nid(), PORTAL, OP_PULL, encode_desc(&desc))
            .await
            .unwrap_err();
        match err {
            FabricError::Remote { code, .. } => assert_eq!(code, 74, "{transport:?}: EBADMSG"),
            other => panic!("{transport:?}: expected a remote checksum error, got {other}"),
        }
    }
}
