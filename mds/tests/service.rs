//! The metadata service end to end: a client node and an MDS node on an in-memory network
//! (and once over loopback TCP), every operation through `MdsClient`, bad input of every
//! kind answered with a clear errno and leaving the namespace untouched, and a restart.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use std::sync::Arc;

use bytes::Bytes;
use iopath_fabric::rpc::{Request, Service as _};
use iopath_fabric::{FabricError, Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_mds::error::errno::*;
use iopath_mds::service::opcode;
use iopath_mds::{
    FileType, MDS_PORTAL, MdsClient, MdsConfig, MdsError, MdsService, MdsTarget, StripeInfo,
    StripeRequest,
};
use iopath_proto::mds as pb;
use prost::Message as _;

const MIB: u64 = 1 << 20;

async fn mem_node(network: &Arc<MemNetwork>, n: u32) -> Node {
    Node::start(NodeConfig {
        interfaces: vec![Interface::Mem {
            nid: Nid::mem(n, 0),
            network: Arc::clone(network),
        }],
        ..Default::default()
    })
    .await
    .unwrap()
}

/// Four targets on OSS NIDs 10..13 (nothing runs there: the MDS only names them).
fn targets() -> Vec<MdsTarget> {
    (0..4)
        .map(|i| MdsTarget {
            index: i,
            nid: Nid::mem(10 + i, 0),
        })
        .collect()
}

struct Fixture {
    network: Arc<MemNetwork>,
    server: Node,
    service: Arc<MdsService>,
    client: MdsClient,
    client_node: Node,
    dir: tempfile::TempDir,
}

async fn fixture() -> Fixture {
    let network = MemNetwork::new();
    let server = mem_node(&network, 1).await;
    let client_node = mem_node(&network, 2).await;
    let dir = tempfile::tempdir().unwrap();
    let service = MdsService::start(&server, MdsConfig::new(dir.path(), targets()))
        .await
        .unwrap();
    let client = MdsClient::new(client_node.clone(), server.nid());
    Fixture {
        network,
        server,
        service,
        client,
        client_node,
        dir,
    }
}

fn errno_of(error: &MdsError) -> u32 {
    match error {
        MdsError::Fabric(FabricError::Remote { code, .. }) => *code,
        other => panic!("expected a remote error, got {other}"),
    }
}

fn stripe(size: u64, count: i64, offset: i64) -> StripeRequest {
    StripeRequest {
        stripe_size_bytes: size,
        stripe_count: count,
        stripe_offset: offset,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_operation_works_through_the_client() {
    let f = fixture().await;
    let c = &f.client;
    let d = c.mkdir("/d", 0o750).await.unwrap();
    assert_eq!((d.file_type, d.mode), (FileType::Directory, 0o750));

    // Lustre's default: one 1 MiB stripe, round-robin.
    let a = c
        .create("/d/a", 0o644, StripeRequest::INHERIT)
        .await
        .unwrap();
    let layout = a.layout.clone().unwrap();
    assert_eq!(
        (layout.stripe_size_bytes(), layout.stripe_count()),
        (MIB, 1)
    );
    // -1: every target, starting where asked.
    let wide = c
        .create("/d/wide", 0o644, stripe(4 * MIB, -1, 2))
        .await
        .unwrap()
        .layout
        .unwrap();
    assert_eq!(
        wide.objects().iter().map(|o| o.target).collect::<Vec<_>>(),
        [2, 3, 0, 1]
    );

    // open and stat agree; open carries the layout the create returned.
    assert_eq!(c.open("/d/a").await.unwrap(), a);
    assert_eq!(c.stat("/d/a").await.unwrap(), a);
    assert_eq!(c.stat("/d").await.unwrap().entries_count, 2);

    // A directory default, inherited by new files; getstripe on both kinds.
    c.setstripe("/d", Some(stripe(256 << 10, 2, -1)))
        .await
        .unwrap();
    let inherited = c
        .create("/d/b", 0o600, StripeRequest::INHERIT)
        .await
        .unwrap()
        .layout
        .unwrap();
    assert_eq!(
        (inherited.stripe_size_bytes(), inherited.stripe_count()),
        (256 << 10, 2)
    );
    assert_eq!(
        c.getstripe("/d/b").await.unwrap(),
        StripeInfo::File(inherited.clone())
    );
    assert_eq!(
        c.getstripe("/d").await.unwrap(),
        StripeInfo::Directory {
            default_stripe: stripe(256 << 10, 2, -1),
            set_here: true
        }
    );
    assert_eq!(
        c.getstripe("/").await.unwrap(),
        StripeInfo::Directory {
            default_stripe: StripeRequest::LUSTRE_DEFAULT,
            set_here: false
        }
    );

    // readdir, whole and by pages.
    let names = |entries: Vec<iopath_mds::DirEntry>| {
        entries.into_iter().map(|e| e.name).collect::<Vec<_>>()
    };
    assert_eq!(names(c.readdir("/d").await.unwrap()), ["a", "b", "wide"]);
    let page = c.readdir_page("/d", "", 2).await.unwrap();
    assert_eq!(
        (names(page.entries), page.more),
        (vec!["a".to_owned(), "b".to_owned()], true)
    );
    let page = c.readdir_page("/d", "b", 2).await.unwrap();
    assert_eq!(
        (names(page.entries), page.more),
        (vec!["wide".to_owned()], false)
    );

    // rename within a directory, across directories, and onto a file (whose layout returns).
    assert_eq!(c.rename("/d/a", "/d/a2").await.unwrap(), None);
    c.mkdir("/e", 0o755).await.unwrap();
    assert_eq!(c.rename("/d/a2", "/e/a").await.unwrap(), None);
    assert_eq!(c.rename("/d/b", "/e/a").await.unwrap(), Some(layout));
    assert_eq!(c.open("/e/a").await.unwrap().layout.unwrap(), inherited);

    // unlink returns the layout; rmdir removes an empty directory.
    assert_eq!(c.unlink("/d/wide").await.unwrap().layout, Some(wide));
    c.rmdir("/d").await.unwrap();
    assert_eq!(names(c.readdir("/").await.unwrap()), ["e"]);

    // The targets and the default.
    let list = c.targets().await.unwrap();
    assert_eq!(list.targets, targets());
    assert_eq!(list.default_stripe, StripeRequest::LUSTRE_DEFAULT);
    f.service.store().read(|ns| ns.check_invariants()).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_requests_get_clear_errors_and_harm_nothing() {
    let f = fixture().await;
    let c = &f.client;
    c.mkdir("/d", 0o755).await.unwrap();
    c.create("/d/f", 0o644, StripeRequest::INHERIT)
        .await
        .unwrap();
    c.mkdir("/d/sub", 0o755).await.unwrap();
    c.create("/d/sub/x", 0o644, StripeRequest::INHERIT)
        .await
        .unwrap();
    let before = f.service.store().read(|ns| ns.state().clone());
    let seq_before = f.service.store().last_seq();

    let cases: Vec<(Result<(), MdsError>, u32, &str)> = vec![
        (
            c.open("/missing").await.map(drop),
            ENOENT,
            "/missing: no such file or directory",
        ),
        (c.stat("/d/missing").await.map(drop), ENOENT, "no such file"),
        (c.open("/d").await.map(drop), EISDIR, "/d: is a directory"),
        (
            c.stat("/d/f/x").await.map(drop),
            ENOTDIR,
            "/d/f: not a directory",
        ),
        (
            c.mkdir("/d", 0o755).await.map(drop),
            EEXIST,
            "/d: already exists",
        ),
        (
            c.create("/d/f", 0o644, StripeRequest::INHERIT)
                .await
                .map(drop),
            EEXIST,
            "already exists",
        ),
        (
            c.create("/nope/f", 0o644, StripeRequest::INHERIT)
                .await
                .map(drop),
            ENOENT,
            "/nope: no such",
        ),
        (
            c.create("/d/two\nnames", 0o644, StripeRequest::INHERIT)
                .await
                .map(drop),
            EINVAL,
            "\"/d/two\\nnames\": a new name cannot contain a newline",
        ),
        (
            c.mkdir("/d/a\u{1b}[2J", 0o755).await.map(drop),
            EINVAL,
            "cannot contain a control character",
        ),
        (
            c.rename("/d/f", "/d/f\tx").await.map(drop),
            EINVAL,
            "cannot contain a tab",
        ),
        (c.unlink("/d").await.map(drop), EISDIR, "is a directory"),
        (c.unlink("/d/missing").await.map(drop), ENOENT, "no such"),
        (
            c.rmdir("/d").await.map(drop),
            ENOTEMPTY,
            "/d: directory not empty",
        ),
        (c.rmdir("/d/f").await.map(drop), ENOTDIR, "not a directory"),
        (
            c.rmdir("/").await.map(drop),
            EINVAL,
            "root directory cannot be removed",
        ),
        (
            c.rename("/d", "/d/sub/d").await.map(drop),
            EINVAL,
            "into itself",
        ),
        (
            c.rename("/d/f", "/d/sub").await.map(drop),
            EISDIR,
            "/d/sub: is a directory",
        ),
        (
            c.rename("/missing", "/x").await.map(drop),
            ENOENT,
            "no such",
        ),
        (
            c.readdir("/d/f").await.map(drop),
            ENOTDIR,
            "not a directory",
        ),
        (c.getstripe("/missing").await.map(drop), ENOENT, "no such"),
        // Impossible setstripe values.
        (
            c.setstripe("/d", Some(stripe(1000, 1, -1))).await,
            EINVAL,
            "stripe size 1000 bytes is not a positive multiple of 65536",
        ),
        (
            c.setstripe("/d", Some(stripe(0, 1, 4))).await,
            EINVAL,
            "starting target index 4 is out of range",
        ),
        (
            c.setstripe("/d", Some(stripe(0, -3, -1))).await,
            EINVAL,
            "stripe count -3 is invalid",
        ),
        (
            c.setstripe("/d/f", Some(stripe(0, 2, -1))).await,
            EINVAL,
            "layout is fixed when it is created",
        ),
        (c.setstripe("/missing", None).await, ENOENT, "no such"),
        (
            c.create("/d/g", 0o644, stripe(5 << 30, 1, -1))
                .await
                .map(drop),
            EINVAL,
            "exceeds the maximum",
        ),
        (
            c.create("/d/g", 0o10000, StripeRequest::INHERIT)
                .await
                .map(drop),
            EINVAL,
            "mode",
        ),
        // Paths that are not paths.
        (c.stat("").await.map(drop), EINVAL, "the path is empty"),
        (c.stat("relative").await.map(drop), EINVAL, "not absolute"),
        (
            c.mkdir("/d//x", 0o755).await.map(drop),
            EINVAL,
            "empty component",
        ),
        (
            c.mkdir("/d/../x", 0o755).await.map(drop),
            EINVAL,
            "'.' and '..'",
        ),
        (
            c.create(
                &format!("/{}", "n".repeat(300)),
                0o644,
                StripeRequest::INHERIT,
            )
            .await
            .map(drop),
            ENAMETOOLONG,
            "the maximum is 255",
        ),
        (
            c.stat(&"/x".repeat(3000)).await.map(drop),
            ENAMETOOLONG,
            "path length",
        ),
        (
            c.readdir_page("/d", &"z".repeat(300), 1).await.map(drop),
            EINVAL,
            "longer than any name",
        ),
    ];
    for (i, (result, errno, message)) in cases.into_iter().enumerate() {
        let error = result.unwrap_err();
        assert_eq!(errno_of(&error), errno, "case {i}: {error}");
        assert_eq!(error.errno(), errno, "case {i}");
        assert!(error.to_string().contains(message), "case {i}: {error}");
    }

    // Bodies that are not messages, for every opcode; an opcode that does not exist.
    let garbage = Bytes::from_static(&[0xFF, 0xFF, 0xFF, 0xFF, 0x0F, 0x01]);
    for op in 1..=11 {
        let error = f
            .client_node
            .call(f.server.nid(), MDS_PORTAL, op, garbage.clone())
            .await
            .unwrap_err();
        match error {
            FabricError::Remote { code, message, .. } => {
                assert_eq!(code, EPROTO, "opcode {op}: {message}");
                assert!(message.starts_with("malformed "), "opcode {op}: {message}");
            }
            other => panic!("opcode {op}: {other}"),
        }
    }
    let error = f
        .client_node
        .call(f.server.nid(), MDS_PORTAL, 99, Bytes::new())
        .await
        .unwrap_err();
    assert!(
        matches!(&error, FabricError::Remote { code, .. } if *code == EOPNOTSUPP),
        "{error}"
    );
    assert!(error.to_string().contains("no opcode 99"), "{error}");
    // A path field holding bytes that are not UTF-8 is a malformed message.
    let not_utf8 = Bytes::from_static(&[0x0A, 0x02, 0xC3, 0x28]);
    let error = f
        .client_node
        .call(f.server.nid(), MDS_PORTAL, opcode::STAT, not_utf8)
        .await
        .unwrap_err();
    assert!(
        matches!(&error, FabricError::Remote { code, .. } if *code == EPROTO),
        "{error}"
    );
    // A create with no path field at all is an empty path.
    let empty = pb::CreateRequest::default().encode_to_vec().into();
    let error = f
        .client_node
        .call(f.server.nid(), MDS_PORTAL, opcode::CREATE, empty)
        .await
        .unwrap_err();
    assert!(error.to_string().contains("the path is empty"), "{error}");

    // Nothing stored was harmed, nothing was logged, and the service still serves.
    assert_eq!(f.service.store().read(|ns| ns.state().clone()), before);
    assert_eq!(f.service.store().last_seq(), seq_before);
    c.create("/d/after", 0o644, StripeRequest::INHERIT)
        .await
        .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_service_has_everything_it_acknowledged() {
    let f = fixture().await;
    let c = &f.client;
    c.mkdir("/d", 0o755).await.unwrap();
    c.setstripe("/d", Some(stripe(0, -1, -1))).await.unwrap();
    let mut layouts = Vec::new();
    for i in 0..20 {
        layouts.push(
            c.create(&format!("/d/f{i:02}"), 0o644, StripeRequest::INHERIT)
                .await
                .unwrap(),
        );
    }
    c.rename("/d/f00", "/moved").await.unwrap();
    c.unlink("/d/f01").await.unwrap();
    let before = f.service.store().read(|ns| ns.state().clone());

    // The MDS node goes away without any shutdown of the store; a new one opens the same
    // directory (at a new NID: the old one may still be attached to the network).
    f.server.shutdown();
    drop(f.service);
    drop(f.server);
    let server = mem_node(&f.network, 3).await;
    let service = MdsService::start(&server, MdsConfig::new(f.dir.path(), targets()))
        .await
        .unwrap();
    assert_eq!(service.store().recovery().records_replayed, 24);
    assert_eq!(service.store().read(|ns| ns.state().clone()), before);
    let c = MdsClient::new(f.client_node.clone(), server.nid());
    // Same inode and layout; the rename moved its ctime on.
    let moved = c.open("/moved").await.unwrap();
    assert_eq!(
        (moved.ino, &moved.layout),
        (layouts[0].ino, &layouts[0].layout)
    );
    assert!(moved.ctime_ns >= layouts[0].ctime_ns);
    assert_eq!(errno_of(&c.open("/d/f01").await.unwrap_err()), ENOENT);
    assert_eq!(c.readdir("/d").await.unwrap().len(), 18);
    // New objects never reuse the ids handed out before the restart.
    let next = c
        .create("/d/new", 0o644, StripeRequest::INHERIT)
        .await
        .unwrap()
        .layout
        .unwrap();
    for old in &layouts {
        for object in old.layout.as_ref().unwrap().objects() {
            assert!(
                !next.objects().contains(object),
                "{object:?} handed out twice"
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_service_answers_over_tcp_too() {
    let server = Node::start(NodeConfig {
        interfaces: vec![Interface::Tcp {
            nid: "127.0.0.1:0@tcp0".parse().unwrap(),
        }],
        ..Default::default()
    })
    .await
    .unwrap();
    let client_node = Node::start(NodeConfig {
        interfaces: vec![Interface::Tcp {
            nid: "127.0.0.1:0@tcp0".parse().unwrap(),
        }],
        ..Default::default()
    })
    .await
    .unwrap();
    let dir = tempfile::tempdir().unwrap();
    let tcp_targets = vec![MdsTarget {
        index: 0,
        nid: "127.0.0.1:7100@tcp0".parse().unwrap(),
    }];
    MdsService::start(&server, MdsConfig::new(dir.path(), tcp_targets.clone()))
        .await
        .unwrap();
    let c = MdsClient::new(client_node.clone(), server.nid());
    c.mkdir("/d", 0o755).await.unwrap();
    let file = c
        .create("/d/f", 0o644, StripeRequest::INHERIT)
        .await
        .unwrap();
    assert_eq!(c.open("/d/f").await.unwrap(), file);
    assert_eq!(c.targets().await.unwrap().targets, tcp_targets);
    server.shutdown();
    client_node.shutdown();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_corrupt_log_stops_the_service_from_starting() {
    let network = MemNetwork::new();
    let server = mem_node(&network, 1).await;
    let dir = tempfile::tempdir().unwrap();
    {
        let service = MdsService::open(MdsConfig::new(dir.path(), targets()))
            .await
            .unwrap();
        for i in 0..3 {
            let op = iopath_mds::Op::Mkdir {
                path: iopath_mds::MdsPath::parse(&format!("/d{i}")).unwrap(),
                mode: 0o755,
                owner: iopath_mds::Owner::UNRECORDED,
            };
            service.store().execute(&op, 1).unwrap();
        }
    }
    let log_path = dir.path().join(iopath_mds::store::LOG_FILE);
    let mut bytes = std::fs::read(&log_path).unwrap();
    bytes[iopath_mds::store::log::HEADER_LEN + 30] ^= 0xFF;
    std::fs::write(&log_path, &bytes).unwrap();
    let error = MdsService::start(&server, MdsConfig::new(dir.path(), targets()))
        .await
        .unwrap_err();
    assert_eq!(error.errno(), EIO);
    assert!(
        error.to_string().contains("is corrupt at byte 32"),
        "{error}"
    );
}

/// Found by the seeded simulation (seeds 25, 184 and 191 of 0–199): a create whose reply was
/// lost, resent to the restarted service, ran again and was told EEXIST — the application
/// heard that its create failed when it had been made (and a fyod, opening with create,
/// reported that it found the file rather than made it). The same for an unlink, told
/// ENOENT. Each change is now logged with the request that asked for it, and a resend —
/// after a restart, and after a compaction — is answered with the reply it was given.
#[tokio::test]
async fn a_change_resent_after_a_restart_is_answered_as_it_was_not_run_again() {
    let network = MemNetwork::new();
    let server = mem_node(&network, 1).await;
    let client = Nid::mem(2, 0);
    let dir = tempfile::tempdir().unwrap();
    let open = || async {
        Arc::new(
            MdsService::open(MdsConfig::new(dir.path(), targets()))
                .await
                .unwrap(),
        )
    };
    // The same request, as the fabric resends it: the same client, xid and bytes.
    let request = |xid: u64, opcode: u32, body: Vec<u8>| Request {
        node: server.clone(),
        source: client,
        xid,
        opcode,
        body: body.into(),
    };
    let create = pb::CreateRequest {
        uid: None,
        gid: None,
        path: "/f".into(),
        mode: 0o644,
        stripe: None,
        origin: None,
    }
    .encode_to_vec();
    let unlink = pb::PathRequest { path: "/g".into() }.encode_to_vec();
    let create_g = pb::CreateRequest {
        uid: None,
        gid: None,
        path: "/g".into(),
        mode: 0o644,
        stripe: None,
        origin: None,
    }
    .encode_to_vec();

    let first = open().await;
    let created = Arc::clone(&first)
        .handle(request(10, opcode::CREATE, create.clone()))
        .await
        .unwrap();
    Arc::clone(&first)
        .handle(request(11, opcode::CREATE, create_g))
        .await
        .unwrap();
    let unlinked = Arc::clone(&first)
        .handle(request(12, opcode::UNLINK, unlink.clone()))
        .await
        .unwrap();
    // The service crashes after each change is durable and before its reply leaves.
    drop(first);

    let restarted = open().await;
    let again = Arc::clone(&restarted)
        .handle(request(10, opcode::CREATE, create.clone()))
        .await
        .expect("a resent create is answered, not refused with EEXIST");
    assert_eq!(again, created);
    let again = Arc::clone(&restarted)
        .handle(request(12, opcode::UNLINK, unlink.clone()))
        .await
        .expect("a resent unlink is answered, not refused with ENOENT");
    assert_eq!(again, unlinked);
    assert_eq!(
        restarted
            .store()
            .counters()
            .replies_reconstructed
            .load(std::sync::atomic::Ordering::Relaxed),
        2
    );
    // Nothing ran again: no new record.
    assert_eq!(restarted.store().last_seq(), 3);
    // Another request with the same xid (a client that started its xids over) runs.
    let other = pb::CreateRequest {
        uid: None,
        gid: None,
        path: "/h".into(),
        mode: 0o644,
        stripe: None,
        origin: None,
    }
    .encode_to_vec();
    Arc::clone(&restarted)
        .handle(request(10, opcode::CREATE, other))
        .await
        .unwrap();

    // The replies are in the snapshot too.
    restarted.store().compact().unwrap();
    drop(restarted);
    let compacted = open().await;
    assert_eq!(compacted.store().recovery().records_replayed, 0);
    let again = Arc::clone(&compacted)
        .handle(request(10, opcode::CREATE, create))
        .await
        .expect("answered from the snapshot's replies");
    assert_eq!(again, created);
}

/// Found by the soaks: an MDS killed while a client's change was in flight held that client
/// for its RPC timeout (5-10 s), as the MDS client had no reconnect. It watches the MDS now:
/// a ping a second names the MDS's start, and a new start gets the waiting call at once.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_waiting_on_an_mds_that_restarts_is_answered_within_a_ping() {
    let network = MemNetwork::new();
    let dir = tempfile::tempdir().unwrap();
    let first = mem_node(&network, 1).await;
    let service = MdsService::start(&first, MdsConfig::new(dir.path(), targets()))
        .await
        .unwrap();
    let client_node = mem_node(&network, 2).await;
    let client = MdsClient::new(client_node.clone(), first.nid());
    client.mkdir("/d", 0o755).await.unwrap();
    // The create is made durable and its reply lost: the client waits on.
    first
        .fail_points()
        .set_fail_loc("mds.after_log:drop:once")
        .unwrap();
    let began = tokio::time::Instant::now();
    let create = tokio::spawn({
        let client = client.clone();
        async move { client.create("/d/f", 0o644, StripeRequest::INHERIT).await }
    });
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // The MDS dies and starts again on its address and its directory.
    first.shutdown();
    drop(service);
    drop(first);
    let mut second = None;
    for _ in 0..100 {
        match Node::start(NodeConfig {
            interfaces: vec![Interface::Mem {
                nid: Nid::mem(1, 0),
                network: Arc::clone(&network),
            }],
            ..Default::default()
        })
        .await
        {
            Ok(node) => {
                second = Some(node);
                break;
            }
            Err(_) => tokio::time::sleep(std::time::Duration::from_millis(10)).await,
        }
    }
    let second = second.expect("the MDS's address was freed");
    let _service = MdsService::start(&second, MdsConfig::new(dir.path(), targets()))
        .await
        .unwrap();
    let created = create
        .await
        .unwrap()
        .expect("the resent create is answered from the log, not refused with EEXIST");
    let timeout = iopath_fabric::Limits::default().rpc_timeout;
    assert!(
        began.elapsed() < timeout / 2,
        "answered {:?} after the create began: the resend waited for the RPC timeout ({timeout:?})",
        began.elapsed()
    );
    assert_eq!(client.open("/d/f").await.unwrap().ino, created.ino);
}
