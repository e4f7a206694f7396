//! The OSS service over the fabric, in one process: every operation, bad input, the replay
//! list's bookkeeping.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use bytes::Bytes;
use iopath_fabric::frame::status::errno;
use iopath_fabric::{FabricError, Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_ost_client::OstClient;
use iopath_storage_server::engine::EngineConfig;
use iopath_storage_server::ost::{OssConfig, OstConfig};
use iopath_storage_server::service::{OST_PORTAL, OssService, ServiceConfig, opcode};

struct Setup {
    _dir: tempfile::TempDir,
    client: OstClient,
    client_node: Node,
    server: Nid,
}

async fn setup(sync_journal: bool) -> Setup {
    let dir = tempfile::tempdir().unwrap();
    let mut template = OstConfig::new(0, dir.path());
    template.sync_journal = sync_journal;
    template.object_size_max_bytes = 8 << 20;
    template.commit_interval_ms = 60_000; // async commits only when asked, so the test sees them kept
    template.group_records_max = 1000;
    template.uncommitted_records_max = 4000;
    let config = OssConfig {
        root: dir.path().to_path_buf(),
        targets: OssConfig::indices(2),
        template,
        engine: EngineConfig::default(),
        disk_model: None,
        external_journal_dir: None,
        fsname: Default::default(),
    };
    let network = MemNetwork::new();
    let start = |n| {
        let network = network.clone();
        async move {
            let interfaces = vec![Interface::Mem {
                nid: Nid::mem(n, 0),
                network,
            }];
            Node::start(NodeConfig {
                interfaces,
                ..NodeConfig::default()
            })
            .await
            .unwrap()
        }
    };
    let server_node = start(1).await;
    OssService::open(&server_node, config, ServiceConfig::default())
        .await
        .unwrap();
    let client_node = start(2).await;
    let client = OstClient::connect(client_node.clone(), server_node.nid(), 77)
        .await
        .unwrap();
    std::mem::forget(server_node); // lives for the test
    Setup {
        _dir: dir,
        client,
        client_node,
        server: Nid::mem(1, 0),
    }
}

fn pattern(len: usize, seed: u8) -> Bytes {
    (0..len)
        .map(|i| (i as u8).wrapping_mul(31).wrapping_add(seed))
        .collect::<Vec<u8>>()
        .into()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_round_trips() {
    for sync in [true, false] {
        let s = setup(sync).await;
        let c = &s.client;
        c.create(1, 5).await.unwrap();
        let data = pattern(3 << 20, 1);
        let stamp = c.write(1, 5, 4096, data.clone()).await.unwrap();
        assert!(stamp.transno > 0);
        if sync {
            assert!(
                stamp.last_committed >= stamp.transno,
                "sync: committed before the reply"
            );
            assert_eq!(c.kept_writes(), 0);
        } else {
            assert!(
                stamp.last_committed < stamp.transno,
                "async: replied before the commit"
            );
            assert_eq!(
                (c.kept_writes(), c.kept_bytes()),
                (1, 3 << 20),
                "kept for replay"
            );
        }
        assert_eq!(c.getattr(1, 5).await.unwrap(), 4096 + (3 << 20));
        let back = c.read(1, 5, 4096, 3 << 20).await.unwrap();
        assert_eq!(back, data);
        let hole = c.read(1, 5, 0, 4096).await.unwrap();
        assert!(hole.iter().all(|&b| b == 0), "the hole reads as zeros");
        let tail = c.read(1, 5, (3 << 20) + 4000, 1000).await.unwrap();
        assert_eq!(tail.len(), 96, "a read past the end returns what is there");
        c.punch(1, 5, 100).await.unwrap();
        assert_eq!(c.getattr(1, 5).await.unwrap(), 100);
        let synced = c.sync(1).await.unwrap();
        assert!(synced.last_committed >= stamp.transno);
        assert_eq!(
            (c.kept_writes(), c.kept_bytes()),
            (0, 0),
            "nothing kept once committed"
        );
        c.destroy(1, 5).await.unwrap();
    }
}

fn code_of(err: FabricError) -> (u32, String) {
    match err {
        FabricError::Remote { code, message, .. } => (code, message),
        other => panic!("expected a remote error, got {other}"),
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_clear_errors_and_stored_data_stays_intact() {
    let s = setup(false).await;
    let c = &s.client;
    c.create(0, 1).await.unwrap();
    let data = pattern(1 << 20, 9);
    c.write(0, 1, 0, data.clone()).await.unwrap();

    let (code, message) = code_of(c.read(0, 999, 0, 10).await.unwrap_err());
    assert_eq!(code, errno::ENOENT, "{message}");
    assert!(message.contains("no such object"), "{message}");
    let (code, message) = code_of(c.write(0, 1, 8 << 20, pattern(10, 1)).await.unwrap_err());
    assert_eq!(
        code,
        errno::EFBIG,
        "write past the maximum object size: {message}"
    );
    let (code, message) = code_of(c.create(9, 1).await.unwrap_err());
    assert_eq!(code, 19, "no such target: {message}");
    let (code, _) = code_of(c.create(0, 1).await.unwrap_err());
    assert_eq!(code, errno::EEXIST);

    // A descriptor longer than its region: the pull is refused by the client's own node.
    use iopath_proto::ost as pb;
    use prost::Message as _;
    let region = s
        .client_node
        .regions()
        .register_source(pattern(100, 2))
        .unwrap();
    let mut desc = region.describe_all(iopath_fabric::ChecksumKind::Crc32);
    desc.length = 4096;
    let body = pb::WriteRequest {
        target: 0,
        object: 1,
        offset: 0,
        buffer: Some(desc.to_proto()),
        client: 77,
        replay_transno: 0,
        replay_session: 0,
        replay_boot_id: 0,
    };
    let (code, message) = code_of(
        s.client_node
            .call(
                s.server,
                OST_PORTAL,
                opcode::WRITE,
                body.encode_to_vec().into(),
            )
            .await
            .unwrap_err(),
    );
    assert_eq!(code, errno::ERANGE, "{message}");
    // A CONNECT naming unanswered writes that cannot be, or more than the server takes.
    let unanswered = |offset, length| pb::UnansweredWrite {
        target: 0,
        object: 1,
        offset,
        length,
    };
    for (writes, says) in [
        (vec![unanswered(0, 0)], "empty"),
        (vec![unanswered(u64::MAX, 2)], "past the largest offset"),
        (
            vec![unanswered(0, 4096); iopath_storage_server::service::UNANSWERED_WRITES_MAX + 1],
            "at most",
        ),
    ] {
        let body = pb::ConnectRequest {
            client: 78,
            unanswered: writes,
        };
        let (code, message) = code_of(
            s.client_node
                .call(
                    s.server,
                    OST_PORTAL,
                    opcode::CONNECT,
                    body.encode_to_vec().into(),
                )
                .await
                .unwrap_err(),
        );
        assert_eq!(code, errno::EINVAL, "{message}");
        assert!(message.contains(says), "{message}");
    }
    // Malformed bodies, for every opcode, and an unknown opcode.
    for op in 1..=9 {
        let err = s
            .client_node
            .call(
                s.server,
                OST_PORTAL,
                op,
                Bytes::from_static(&[0xFF, 0xFF, 0xFF]),
            )
            .await
            .unwrap_err();
        assert_eq!(code_of(err).0, errno::EPROTO, "opcode {op}");
    }
    let err = s
        .client_node
        .call(s.server, OST_PORTAL, 99, Bytes::new())
        .await
        .unwrap_err();
    assert_eq!(code_of(err).0, errno::EOPNOTSUPP);
    // A write without a buffer.
    let body = pb::WriteRequest {
        target: 0,
        object: 1,
        ..Default::default()
    };
    let err = s
        .client_node
        .call(
            s.server,
            OST_PORTAL,
            opcode::WRITE,
            body.encode_to_vec().into(),
        )
        .await
        .unwrap_err();
    assert_eq!(code_of(err).0, errno::EPROTO);

    // Nothing stored was harmed.
    assert_eq!(c.read(0, 1, 0, 1 << 20).await.unwrap(), data);
    assert_eq!(c.getattr(0, 1).await.unwrap(), 1 << 20);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_client_list_peers_grow_is_bounded() {
    let dir = tempfile::tempdir().unwrap();
    let config = OssConfig {
        root: dir.path().to_path_buf(),
        targets: OssConfig::indices(1),
        template: OstConfig::new(0, dir.path()),
        engine: EngineConfig::default(),
        disk_model: None,
        external_journal_dir: None,
        fsname: Default::default(),
    };
    let network = MemNetwork::new();
    let node = |n| {
        let network = network.clone();
        async move {
            let interfaces = vec![Interface::Mem {
                nid: Nid::mem(n, 0),
                network,
            }];
            Node::start(NodeConfig {
                interfaces,
                ..NodeConfig::default()
            })
            .await
            .unwrap()
        }
    };
    let server = node(1).await;
    let service_config = ServiceConfig {
        clients_max: 2,
        ..ServiceConfig::default()
    };
    OssService::open(&server, config, service_config)
        .await
        .unwrap();
    let client_node = node(2).await;
    OstClient::connect(client_node.clone(), server.nid(), 1)
        .await
        .unwrap();
    OstClient::connect(client_node.clone(), server.nid(), 2)
        .await
        .unwrap();
    // A third client id is refused; the two known ones may come back as often as they like.
    let err = OstClient::connect(client_node.clone(), server.nid(), 3)
        .await
        .unwrap_err();
    let (code, message) = code_of(err);
    assert_eq!(code, errno::ENOSPC, "{message}");
    assert!(message.contains("maximum of 2 clients"), "{message}");
    OstClient::connect(client_node.clone(), server.nid(), 1)
        .await
        .unwrap();
    let recorded = std::fs::read_to_string(dir.path().join("clients")).unwrap();
    assert_eq!(
        recorded.lines().count(),
        2,
        "the durable list stays at the maximum"
    );
}

/// Drops the next `left` RPC replies its node sends: requests that executed, whose senders
/// never hear so.
#[derive(Debug, Default)]
struct LoseReplies {
    left: std::sync::atomic::AtomicU32,
}

impl iopath_fabric::fault::FaultHook for LoseReplies {
    fn on_send(
        &self,
        header: &iopath_fabric::frame::Header,
        _len: usize,
    ) -> iopath_fabric::fault::Fault {
        use std::sync::atomic::Ordering;
        let reply = header.kind == iopath_fabric::frame::Kind::Put
            && header.portal == iopath_fabric::frame::REPLY_PORTAL;
        let lose = reply
            && self
                .left
                .fetch_update(Ordering::Relaxed, Ordering::Relaxed, |n| n.checked_sub(1))
                .is_ok();
        if lose {
            iopath_fabric::fault::Fault::Drop
        } else {
            iopath_fabric::fault::Fault::None
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_create_sent_again_after_its_replies_were_lost_is_answered_as_done() {
    use std::sync::Arc;
    use std::sync::atomic::Ordering;
    let dir = tempfile::tempdir().unwrap();
    let config = OssConfig {
        root: dir.path().to_path_buf(),
        targets: OssConfig::indices(1),
        template: OstConfig::new(0, dir.path()),
        engine: EngineConfig::default(),
        disk_model: None,
        external_journal_dir: None,
        fsname: Default::default(),
    };
    let network = MemNetwork::new();
    let lose = Arc::new(LoseReplies::default());
    let node = |n, fault: Option<Arc<LoseReplies>>| {
        let network = network.clone();
        async move {
            // A short timeout and one resend: the fabric gives up soon, and the client
            // library sends the create again under a new xid.
            let limits = iopath_fabric::Limits {
                rpc_timeout: std::time::Duration::from_millis(200),
                rpc_resends_max: 1,
                ..iopath_fabric::Limits::default()
            };
            Node::start(NodeConfig {
                interfaces: vec![Interface::Mem {
                    nid: Nid::mem(n, 0),
                    network,
                }],
                limits,
                fault: fault.map(|f| f as Arc<dyn iopath_fabric::fault::FaultHook>),
                ..NodeConfig::default()
            })
            .await
            .unwrap()
        }
    };
    let server = node(1, Some(Arc::clone(&lose))).await;
    OssService::open(&server, config, ServiceConfig::default())
        .await
        .unwrap();
    let client = OstClient::connect(node(2, None).await, server.nid(), 5)
        .await
        .unwrap();
    // The create executes; its reply and the reply to its resend are lost.
    lose.left.store(2, Ordering::Relaxed);
    let stamp = client.create(0, 21).await.unwrap_or_else(|e| {
        panic!("a create sent again was refused though its first attempt made the object: {e}")
    });
    assert_eq!(
        lose.left.load(Ordering::Relaxed),
        0,
        "both replies were lost"
    );
    assert_eq!(
        stamp.transno, 0,
        "answered as done, not run again: {stamp:?}"
    );
    client.write(0, 21, 0, pattern(4096, 3)).await.unwrap();
    assert_eq!(client.read(0, 21, 0, 4096).await.unwrap(), pattern(4096, 3));
}
