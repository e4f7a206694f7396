//! The admin service over real loopback gRPC: start, get/set/list/status, lctl output,
//! shutdown, and the secret that set_param and shutdown need.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use iopath_admin::lctl::{self, LctlCommand};
use iopath_admin::{
    AdminError, AdminHandle, Client, NodeInfo, Param, ParamTree, Secret, Shutdown, serve,
};

/// A bound on waits that should end at once, so a bug fails the test instead of hanging it.
const HANG_LIMIT: Duration = Duration::from_secs(20);

struct Node {
    handle: AdminHandle,
    shutdown: Shutdown,
    credits: Arc<AtomicU64>,
    sync_journal: Arc<AtomicBool>,
    /// A fail point, as nodes register them: a writable parameter.
    fail_loc: Arc<AtomicU64>,
    /// What set_param and shutdown need.
    secret: Secret,
}

impl Node {
    /// A client that sends the node's secret.
    async fn admin(&self) -> Client {
        Client::connect(self.handle.local_addr())
            .await
            .expect("the node is listening")
            .with_secret(self.secret.clone())
    }
}

async fn start_node() -> Node {
    let tree = ParamTree::new();
    let credits = Arc::new(AtomicU64::new(8));
    let sync_journal = Arc::new(AtomicBool::new(true));
    let fail_loc = Arc::new(AtomicU64::new(0));
    let params = [
        (
            "fail_loc",
            Param::u64(Arc::clone(&fail_loc), 0..=u64::from(u32::MAX)),
        ),
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
    let secret = Secret::generate().expect("the OS's random source works");
    let addr = SocketAddr::from(([127, 0, 0, 1], 0));
    let handle = serve(addr, tree, node, shutdown.clone(), secret.clone())
        .await
        .expect("bind loopback port 0");
    assert_ne!(handle.local_addr().port(), 0, "the bound port is reported");
    Node {
        handle,
        shutdown,
        credits,
        sync_journal,
        fail_loc,
        secret,
    }
}

#[tokio::test]
async fn get_set_list_status_then_shutdown() {
    let node = start_node().await;
    let client = node.admin().await;
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
    let secret = node.secret.clone();
    let run = |cmd: LctlCommand| {
        let secret = secret.clone();
        async move {
            let mut out = String::new();
            let result = lctl::execute(addr, Some(secret), &cmd, &mut out).await;
            (out, result)
        }
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

    let list = |recursive| LctlCommand::ListParam {
        classify: true,
        recursive,
        directories: false,
        patterns: vec!["obdfilter".into()],
    };
    let (out, result) = run(list(true)).await;
    result.unwrap();
    assert_eq!(out, "obdfilter.OST0000.sync_journal=\n");
    // Without -R, what the pattern names: a directory, as Lustre's list_param -F marks it.
    let (out, result) = run(list(false)).await;
    result.unwrap();
    assert_eq!(out, "obdfilter/\n");

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
        recursive: false,
        directories: false,
        patterns: vec!["*".into()],
    };
    let err = lctl::execute(addr, None, &cmd, &mut String::new())
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
        Secret::generate().unwrap(),
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

/// The refusal a call without the right secret gets: `Unauthenticated`, its text saying which
/// call was refused, why, and what to pass.
fn assert_refused(err: &AdminError, call: &str, why: &str) {
    match err {
        AdminError::Remote { code, message, .. } => {
            assert_eq!(*code, tonic::Code::Unauthenticated, "{message}");
            assert!(
                message.starts_with(&format!("{call} refused: {why}")),
                "{message}"
            );
            assert!(
                message.contains("need this stack's admin secret: pass --secret-file FILE"),
                "{message}"
            );
        }
        other => panic!("{other:?}"),
    }
}

#[tokio::test]
async fn without_the_secret_set_param_fail_points_and_shutdown_are_refused() {
    let node = start_node().await;
    let addr = node.handle.local_addr();
    let open = Client::connect(addr).await.unwrap();
    let wrong = Client::connect(addr)
        .await
        .unwrap()
        .with_secret(Secret::generate().unwrap());
    let callers = [
        (&open, "no admin secret was sent"),
        (&wrong, "the admin secret sent is not this node's"),
    ];
    for (client, why) in callers {
        let err = client.set_param("fail_loc", "5").await.unwrap_err();
        assert_refused(&err, "set_param", why);
        let err = client
            .set_param("fabric.tcp0.credits", "16")
            .await
            .unwrap_err();
        assert_refused(&err, "set_param", why);
        let err = client.shutdown("not mine to stop").await.unwrap_err();
        assert_refused(&err, "shutdown", why);
        // Reads stay open to anyone on the port.
        assert_eq!(client.get_param("fail_loc").await.unwrap()[0].value, "0");
        assert!(!client.list_param("fabric").await.unwrap().is_empty());
        assert_eq!(client.status().await.unwrap().roles, ["oss", "router"]);
    }
    // Nothing changed, and the node still runs.
    assert_eq!(node.fail_loc.load(Ordering::Relaxed), 0);
    assert_eq!(node.credits.load(Ordering::Relaxed), 8);
    assert_eq!(node.shutdown.reason(), None);
    assert!(!node.handle.is_finished());

    // lctl without the secret says so, and with it sets the fail point.
    let set = LctlCommand::SetParam {
        quiet: false,
        assignments: vec!["fail_loc=7".into()],
    };
    let err = lctl::execute(addr, None, &set, &mut String::new())
        .await
        .unwrap_err();
    let text = format!("{err:#}");
    assert!(
        text.contains("set_param fail_loc") && text.contains("no admin secret was sent"),
        "{text}"
    );
    let mut out = String::new();
    lctl::execute(addr, Some(node.secret.clone()), &set, &mut out)
        .await
        .unwrap();
    assert_eq!(out, "fail_loc=7\n");
    assert_eq!(node.fail_loc.load(Ordering::Relaxed), 7);

    // With the secret, a value out of range is still refused, naming the parameter and range.
    let admin = node.admin().await;
    let err = admin.set_param("fail_loc", "4294967296").await.unwrap_err();
    assert!(
        err.to_string()
            .contains("fail_loc: cannot set \"4294967296\": 4294967296 is outside 0..=4294967295"),
        "{err}"
    );
    assert_eq!(node.fail_loc.load(Ordering::Relaxed), 7);

    // And the node's own secret stops it.
    admin.shutdown("test is done").await.unwrap();
    let reason = tokio::time::timeout(HANG_LIMIT, node.shutdown.triggered())
        .await
        .unwrap();
    assert_eq!(reason, "test is done");
    tokio::time::timeout(HANG_LIMIT, node.handle.join())
        .await
        .expect("server task ended")
        .unwrap();
}
