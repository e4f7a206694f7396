//! `iopath trace` as a user runs it, with a process per server node: the storage servers'
//! and routers' steps come from their own processes, over their admin service, and the
//! sequence diagrams are drawn.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;
use common::iopath;

#[test]
fn a_trace_across_node_processes_gathers_every_nodes_steps() {
    let dir = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let svg = dir.path().join("trace.svg");
    let output = iopath()
        .args(["trace", "--processes", "--json", "--journal", "sync"])
        .args(["--size", "128k", "--stripe-count", "1", "--svg"])
        .arg(&svg)
        .arg("--dir")
        .arg(dir.path())
        .output()
        .unwrap();
    assert!(
        output.status.success(),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["mode"], "processes");
    let write = &report["requests"][0];
    assert_eq!(write["op"], "write");
    let hops = write["hops"].as_array().unwrap();
    let roles: Vec<&str> = hops.iter().map(|h| h["role"].as_str().unwrap()).collect();
    // The client runs in the command's process; routers and servers in their own.
    for role in ["client", "router", "oss"] {
        assert!(roles.contains(&role), "no {role} step in {roles:?}");
    }
    let commit = hops.iter().position(|h| h["what"] == "commit").unwrap();
    let reply = hops
        .iter()
        .position(|h| h["role"] == "oss" && h["what"] == "reply")
        .unwrap();
    assert!(commit < reply, "sync journal: commit, then reply");
    for name in ["trace.svg", "trace-read.svg"] {
        let text = std::fs::read_to_string(dir.path().join(name)).unwrap();
        assert!(text.contains("class=\"arrow\""), "{name} has no arrows");
    }
}
