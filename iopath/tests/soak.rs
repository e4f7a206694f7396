//! `iopath soak` for a minute on each kind of stack: routed (storage servers, routers, the
//! MDS killed in turn) and forwarded (storage servers, fyods, the MDS), with fail points
//! flipped between; nothing acknowledged may be lost, every kill must be recovered from, and
//! the report must say what was injected and what every process held.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;
use common::iopath;

fn soak(preset: &str) -> serde_json::Value {
    let dir = tempfile::tempdir().unwrap();
    let out = iopath()
        .args([
            "soak",
            "--preset",
            preset,
            "--minutes",
            "1",
            "--interval",
            "15",
        ])
        .args(["--file-size", "1m", "--json", "--dir"])
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "soak of {preset} failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).unwrap()
}

fn check(report: &serde_json::Value, roles: &[&str], nodes: usize) {
    assert_eq!(report["bytes_lost"], 0, "{report}");
    let kills = report["kills"].as_object().unwrap();
    for role in roles {
        assert!(
            kills.get(*role).is_some_and(|n| n.as_u64() >= Some(1)),
            "{role} killed: {report}"
        );
    }
    let total: u64 = kills.values().map(|n| n.as_u64().unwrap()).sum();
    assert_eq!(report["recovery_s"].as_array().unwrap().len() as u64, total);
    assert!(
        report["recovery_p99_s"].as_f64().unwrap() >= report["recovery_p50_s"].as_f64().unwrap()
    );
    assert!(
        report["fail_points_armed"].as_u64().unwrap() >= 3,
        "{report}"
    );
    let acknowledged = report["bytes_acknowledged"].as_u64().unwrap();
    assert!(acknowledged > 0, "{report}");
    assert!(
        report["bytes_verified"].as_u64().unwrap() >= acknowledged,
        "every acknowledged file is read back at least once: {report}"
    );
    let memory = report["memory"].as_array().unwrap();
    assert_eq!(memory.len(), nodes, "{report}");
    for process in memory {
        assert!(process["start_kib"].as_u64().unwrap() > 0, "{process}");
        assert!(process["end_kib"].as_u64().unwrap() > 0, "{process}");
    }
    assert!(report["modeled"].as_str().unwrap().starts_with("nothing"));
}

#[test]
fn a_minute_of_kills_and_fail_points_on_a_routed_stack_loses_nothing() {
    let report = soak("spider-mini-routed");
    // Four routers, two storage servers, the MDS.
    check(&report, &["oss", "router", "mds"], 7);
}

#[test]
fn a_minute_of_kills_and_fail_points_through_fyods_loses_nothing() {
    let report = soak("asci-red-mini");
    // Two storage servers, the MDS, two fyods: a fyod started again is connected to anew.
    check(&report, &["oss", "fyod", "mds"], 5);
}
