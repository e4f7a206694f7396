//! `iopath demo` completes at a small size: every phase moves its bytes, everything reads
//! back verified, the journals commit, and the account names the path.

use iopath_stack::demo::DemoConfig;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn demo_runs_end_to_end_at_a_small_size() {
    let args = DemoConfig {
        size: 4 << 20,
        ..DemoConfig::default()
    };
    let mut out = Vec::new();
    let report = iopath_stack::demo::run(&args, &mut out).await.unwrap();
    let text = String::from_utf8(out).unwrap();
    assert_eq!(report.phases.len(), 3, "{text}");
    assert_eq!(report.phases[0].bytes, 4 << 20);
    assert!(report.phases.iter().all(|p| p.seconds > 0.0));
    assert_eq!(report.verified_bytes, (4 << 20) + (4 << 20), "{text}");
    assert!(report.journals.len() >= 4, "{text}");
    assert!(
        report.journals.iter().any(|j| j.commits > 0),
        "fsync committed: {text}"
    );
    assert_eq!(
        report.kept_after_fsync_bytes, 0,
        "fsync leaves nothing to replay: {text}"
    );
    assert!(!report.path.is_empty());
    assert!(text.contains("the path of c0's writes"), "{text}");
    assert!(text.contains("stopped cleanly"), "{text}");
    // The default preset: clients -> fyods -> storage servers.
    assert_eq!(report.stack, "asci-red-mini");
    assert!(
        text.contains("to fyod0 (20@mem0, torus 0,0,1), 1 torus hop"),
        "{text}"
    );
    assert!(text.contains("fyod0: executed"), "{text}");
}

#[tokio::test]
async fn a_bad_size_is_refused() {
    let args = DemoConfig {
        size: 1,
        ..DemoConfig::default()
    };
    let error = iopath_stack::demo::run(&args, &mut Vec::new())
        .await
        .unwrap_err();
    assert!(error.to_string().starts_with("--size"), "{error}");
}
