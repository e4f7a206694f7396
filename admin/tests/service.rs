//! The admin service over real loopback gRPC: start, get/set/list/status, lctl output, shutdown.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use iopath_admin::lctl::{self, LctlCommand};
use iopath_admin::{AdminError, AdminHandle, Client, NodeInfo, Param, ParamTree, Shutdown, serve};

/// A bound on waits that should end at once, so a bug fails the test instead of hanging it.
const HANG_LIMIT: Duration = Duration::from_secs(20);

struct Node {
    handle: AdminHandle,
    shutdown: Shutdown,
    credits: Arc<AtomicU64>,
    sync_journal: Arc<AtomicBool>,
}

async fn start_node() -> Node {
    let tree = ParamTree::new();
    let credits = Arc::new(AtomicU64::new(8));
    let sync_journal = Arc::new(AtomicBool::new(true));
    let params = [
        (
            "fabric.tcp0.credits",
            Param::u64(Arc::clone(&credits), 1..=1024),
        ),
        (
            "fabric.mem0.credits",
            Param::u64(Arc::new(AtomicU64::new(64)), 1..=1024),
        ),
        (
            "fabric.tcp0.sent",
            Param::counter(Arc::new(AtomicU64::new(12))),
        ),
        (
            "fabric.peers",
            Param::read_only(|| "nid credits\n17@mem0 8\n".into()),
        ),
        (
            "obdfilter.OST0000.sync_journal",
            Param::flag(Arc::clone(&sync_journal)),
        ),
    ];
    for (name, param) in params {
        tree.register(name, param)
            .expect("test names are valid and distinct");
    }
    let node = NodeInfo::new(
        vec!["127.0.0.1:7001@tcp0".into()],
        vec!["oss".into(), "router".into()],
    );
    let shutdown = Shutdown::new();
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let handle = serve(addr, tree, node, shutdown.clone())
        .await
        .expect("bind loopback port 0");
    assert_ne!(handle.local_addr().port(), 0, "the bound port is reported");
    Node {
        handle,
        shutdown,
        credits,
        sync_journal,
    }
}

#[tokio::test]
async fn get_set_list_status_then_shutdown() {
    let node = start_node().await;
    let client = Client::connect(node.handle.local_addr()).await.unwrap();
    assert_eq!(client.addr(), node.handle.local_addr());

    let got = client.get_param("fabric.*.credits").await.unwrap();
    let pairs: Vec<(&str, &str)> = got
        .iter()
        .map(|p| (p.name.as_str(), p.value.as_str()))
        .collect();
    assert_eq!(
        pairs,
        [("fabric.mem0.credits", "64"), ("fabric.tcp0.credits", "8")]
    );

    assert_eq!(
        client.set_param("fabric.tcp0.credits", "16").await.unwrap(),
        ["fabric.tcp0.credits"]
    );
    assert_eq!(node.credits.load(Ordering::Relaxed), 16);
    assert_eq!(
        client.get_param("fabric.tcp0.credits").await.unwrap()[0].value,
        "16"
    );

    // Errors arrive with their kind and the parameter's name, and change nothing.
    let err = client
        .set_param("fabric.tcp0.credits", "0")
        .await
        .unwrap_err();
    match &err {
        AdminError::Remote { code, message, .. } => {
            assert_eq!(*code, tonic::Code::InvalidArgument);
            assert!(
                message.starts_with("fabric.tcp0.credits: cannot set \"0\""),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(node.credits.load(Ordering::Relaxed), 16);
    let err = client.set_param("fabric.peers", "x").await.unwrap_err();
    assert!(
        matches!(
            &err,
            AdminError::Remote {
                code: tonic::Code::PermissionDenied,
                ..
            }
        ),
        "{err:?}"
    );
    let err = client.get_param("lnet.*").await.unwrap_err();
    assert!(
        matches!(
            &err,
            AdminError::Remote {
                code: tonic::Code::NotFound,
                ..
            }
        ),
        "{err:?}"
    );
    assert!(
        err.to_string().contains("no parameter matches lnet.*"),
        "{err}"
    );
    assert!(
        err.to_string()
            .contains(&node.handle.local_addr().to_string()),
        "{err}"
    );

    let listed = client.list_param("fabric").await.unwrap();
    let names: Vec<(&str, bool)> = listed
        .iter()
        .map(|p| (p.name.as_str(), p.writable))
        .collect();
    assert_eq!(
        names,
        [
            ("fabric.mem0.credits", true),
            ("fabric.peers", false),
            ("fabric.tcp0.credits", true),
            ("fabric.tcp0.sent", false),
        ]
    );

    let status = client.status().await.unwrap();
    assert_eq!(status.nids, ["127.0.0.1:7001@tcp0"]);
    assert_eq!(status.roles, ["oss", "router"]);
    assert_eq!(status.pid, std::process::id());
    assert!(!status.version.is_empty());

    // Shutdown: the call is answered, the node's signal fires with the reason, and the server
    // task ends even though this client still holds its connection open.
    assert!(!node.handle.is_finished());
    client.shutdown("test is done").await.unwrap();
    let reason = tokio::time::timeout(HANG_LIMIT, node.shutdown.triggered())
        .await
        .unwrap();
    assert_eq!(reason, "test is done");
    tokio::time::timeout(HANG_LIMIT, node.handle.join())
        .await
        .expect("server task ended")
        .unwrap();
    let err = client.status().await.unwrap_err();
    assert!(
        matches!(
            err,
            AdminError::Remote {
                code: tonic::Code::Unavailable,
                ..
            }
        ),
        "{err:?}"
    );
}

#[tokio::test]
async fn lctl_prints_like_lctl() {
    let node = start_node().await;
    let addr = node.handle.local_addr();
    let run = |cmd: LctlCommand| async move {
        let mut out = String::new();
        let result = lctl::execute(addr, &cmd, &mut out).await;
        (out, result)
    };
    let get = |values_only: bool, patterns: &[&str]| LctlCommand::GetParam {
        values_only,
        names_only: false,
        patterns: patterns.iter().map(|p| p.to_string()).collect(),
    };

    let (out, result) = run(get(false, &["fabric.*.credits", "fabric.peers"])).await;
    result.unwrap();
    assert_eq!(
        out,
        "fabric.mem0.credits=64\nfabric.tcp0.credits=8\nfabric.peers=\nnid credits\n17@mem0 8\n"
    );

    let (out, result) = run(get(true, &["fabric.tcp0.*"])).await;
    result.unwrap();
    assert_eq!(out, "8\n12\n");

    let set = LctlCommand::SetParam {
        quiet: false,
        assignments: vec!["obdfilter.*.sync_journal=0".into()],
    };
    let (out, result) = run(set).await;
    result.unwrap();
    assert_eq!(out, "obdfilter.OST0000.sync_journal=0\n");
    assert!(!node.sync_journal.load(Ordering::Relaxed));

    let list = LctlCommand::ListParam {
        classify: true,
        patterns: vec!["obdfilter".into()],
    };
    let (out, result) = run(list).await;
    result.unwrap();
    assert_eq!(out, "obdfilter.OST0000.sync_journal=\n");

    // One bad pattern does not hide the good ones; the error names each failure.
    let (out, result) = run(get(false, &["lnet.*", "fabric.tcp0.sent"])).await;
    assert_eq!(out, "fabric.tcp0.sent=12\n");
    let err = format!("{:#}", result.unwrap_err());
    assert!(
        err.contains("get_param lnet.*") && err.contains("no parameter matches lnet.*"),
        "{err}"
    );

    let set = LctlCommand::SetParam {
        quiet: false,
        assignments: vec!["fabric.tcp0.credits".into(), "fabric.tcp0.credits=9".into()],
    };
    let (out, result) = run(set).await;
    assert_eq!(out, "fabric.tcp0.credits=9\n");
    assert!(format!("{:#}", result.unwrap_err()).contains("is not PATTERN=VALUE"));

    node.shutdown.trigger("test is done");
    tokio::time::timeout(HANG_LIMIT, node.handle.join())
        .await
        .expect("server task ended")
        .unwrap();
}

#[tokio::test]
async fn connect_errors_name_the_address() {
    // A port that was just free: bind, note it, release it.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    let err = Client::connect(addr).await.unwrap_err();
    assert!(matches!(err, AdminError::Connect { .. }), "{err:?}");
    let text = err.to_string();
    assert!(
        text.contains(&format!("cannot reach the admin service at {addr}")),
        "{text}"
    );
    assert!(
        text.to_lowercase().contains("refused"),
        "the cause is kept: {text}"
    );

    let cmd = LctlCommand::ListParam {
        classify: false,
        patterns: vec!["*".into()],
    };
    let err = lctl::execute(addr, &cmd, &mut String::new())
        .await
        .unwrap_err();
    assert!(err.to_string().contains(&addr.to_string()), "{err}");
}

#[tokio::test]
async fn binding_a_taken_port_says_which() {
    let node = start_node().await;
    let taken = node.handle.local_addr();
    let err = serve(
        taken,
        ParamTree::new(),
        NodeInfo::new(vec![], vec![]),
        Shutdown::new(),
    )
    .await
    .unwrap_err();
    assert!(
        matches!(err, AdminError::Bind { addr, .. } if addr == taken),
        "{err:?}"
    );
    node.shutdown.trigger("test is done");
    tokio::time::timeout(HANG_LIMIT, node.handle.join())
        .await
        .expect("server task ended")
        .unwrap();
}
