//! The `iopath` binary as a user runs it: selftest in every mode, and lctl against a running
//! node's admin service.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

fn iopath() -> Command {
    Command::new(env!("CARGO_BIN_EXE_iopath"))
}

fn selftest_json(args: &[&str]) -> serde_json::Value {
    let output = iopath()
        .args(["selftest", "--seconds", "0.5", "--json"])
        .args(args)
        .output()
        .expect("run iopath selftest");
    assert!(
        output.status.success(),
        "iopath selftest {args:?}: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).expect("selftest --json prints JSON")
}

#[test]
fn selftest_runs_on_every_transport_and_mode() {
    for args in [
        &["--transport", "mem"][..],
        &["--transport", "tcp"],
        &[
            "--transport",
            "tcp",
            "--processes",
            "--clients",
            "2",
            "--servers",
            "2",
        ],
        &[
            "--transport",
            "mem",
            "--mode",
            "read",
            "--size",
            "3m",
            "--checksum",
            "crc32c",
        ],
    ] {
        let report = selftest_json(args);
        for test in report["tests"].as_array().unwrap() {
            assert_eq!(test["errors"], 0, "{args:?}: {test}");
            assert!(test["rpcs"].as_u64().unwrap() > 0, "{args:?}: {test}");
        }
        assert!(report["bulk_mib_s"].as_f64().unwrap() > 0.0);
        assert!(report["ping_rpc_s"].as_f64().unwrap() > 0.0);
        assert!(
            report["ratio"].is_null(),
            "no baseline asked for, so no ratio"
        );
    }
}

#[test]
fn selftest_refuses_impossible_settings() {
    for (args, expected) in [
        (&["--processes"][..], "needs --transport tcp"),
        (&["--clients", "0"], "at least one client"),
        (&["--size", "0"], "--size must be"),
        (&["--size", "1x"], "unknown unit"),
        (&["--checksum", "md5"], "unknown checksum"),
    ] {
        let output = iopath()
            .args(["selftest", "--seconds", "0.1"])
            .args(args)
            .output()
            .unwrap();
        assert!(!output.status.success(), "{args:?} should fail");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(expected), "{args:?}: {stderr}");
    }
}

#[test]
fn lctl_reads_and_refuses_through_the_admin_service_and_shuts_a_node_down() {
    let mut server = iopath()
        .args(["selftest-node", "serve"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    BufReader::new(server.stdout.take().unwrap())
        .read_line(&mut line)
        .unwrap();
    let mut words = line.split_whitespace();
    assert_eq!(words.next(), Some("READY"), "{line}");
    let nid = words.next().unwrap().to_owned();
    let admin = words.next().unwrap().to_owned();
    let lctl = |args: &[&str]| {
        iopath()
            .args(["lctl", "--admin", &admin])
            .args(args)
            .output()
            .unwrap()
    };

    let nis = lctl(&["get_param", "nis"]);
    assert!(
        nis.status.success(),
        "{}",
        String::from_utf8_lossy(&nis.stderr)
    );
    let text = String::from_utf8_lossy(&nis.stdout);
    assert!(
        text.contains(&nid) && text.contains("max") && text.contains("min"),
        "{text}"
    );

    let stats = lctl(&["get_param", "-n", "stats"]);
    assert!(String::from_utf8_lossy(&stats.stdout).contains("send_count"));

    let refused = lctl(&["set_param", "nis=1"]);
    assert!(!refused.status.success(), "nis is read-only");
    let missing = lctl(&["get_param", "no.such.param"]);
    assert!(!missing.status.success());
    assert!(
        !String::from_utf8_lossy(&missing.stderr).is_empty(),
        "a missing param says why"
    );

    // A clean shutdown through the admin service ends the process.
    tokio::runtime::Runtime::new().unwrap().block_on(async {
        let client = iopath_admin::Client::connect(admin.parse().unwrap())
            .await
            .unwrap();
        let status = client.status().await.unwrap();
        assert_eq!(status.nids, vec![nid.clone()]);
        client.shutdown("test").await.unwrap();
    });
    let status = server.wait().unwrap();
    assert!(status.success(), "server exit: {status}");
}
