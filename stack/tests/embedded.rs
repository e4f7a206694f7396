//! A whole stack in one process: it starts, a client writes and reads back through it, and it
//! stops cleanly.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use bytes::Bytes;
use iopath_client::StripeRequest;
use iopath_stack::preset;
use iopath_stack::runtime::{EmbeddedStack, StorageDir};
use iopath_stack::schema::RoleName;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn spider_mini_starts_serves_and_stops() {
    let stack = preset("spider-mini").unwrap().stack().unwrap();
    let storage = StorageDir::temporary("test-embedded", None).unwrap();
    let root = storage.path().to_path_buf();
    let running = EmbeddedStack::start(stack, storage, true).await.unwrap();
    // Every node serves an admin service of its own, whose changes need the stack's secret.
    for i in 0..running.nodes().len() {
        assert!(running.admin_addr(i).is_some());
    }
    let oss = running
        .nodes()
        .into_iter()
        .find(|n| n.role == RoleName::Oss)
        .unwrap()
        .index;
    let admin = iopath_admin::Client::connect(running.admin_addr(oss).unwrap())
        .await
        .unwrap();
    let refused = admin
        .set_param("obdfilter.*.sync_journal", "1")
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("set_param refused: no admin secret was sent"),
        "{refused}"
    );
    let secret = running.admin_secret().unwrap().clone();
    admin
        .with_secret(secret)
        .set_param("obdfilter.*.sync_journal", "1")
        .await
        .unwrap();
    let c0 = running
        .nodes()
        .into_iter()
        .find(|n| n.role == RoleName::Client)
        .unwrap();
    let config = iopath_stack::runtime::client_config(running.stack(), c0);
    let client = iopath_client::Client::connect(config).await.unwrap();
    client.mkdir("/t").await.unwrap();
    let file = client.create("/t/f", StripeRequest::INHERIT).await.unwrap();
    assert_eq!(
        file.layout().stripe_count(),
        4,
        "the preset's default layout"
    );
    let data: Bytes = (0..(3 << 20) + 17)
        .map(|i| (i % 253) as u8)
        .collect::<Vec<u8>>()
        .into();
    file.write_at(4096, data.clone()).await.unwrap();
    let back = file.read_at(4096, data.len() as u64).await.unwrap();
    assert_eq!(back, data);
    file.close().await.unwrap();
    running.stop().await.unwrap();
    assert!(!root.exists(), "the temporary storage is removed");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn up_prints_every_node_with_its_admin_address_and_stops() {
    let args = iopath_stack::up::UpConfig {
        choice: iopath_stack::StackChoice {
            preset: Some("spider-mini-routed".into()),
            ..Default::default()
        },
        ..Default::default()
    };
    let mut out = Vec::new();
    // Stop as soon as it is up.
    iopath_stack::up::up_until(&args, &mut out, std::future::ready(()), None)
        .await
        .unwrap();
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("iopath up: spider-mini-routed"), "{text}");
    let secret_line = text
        .lines()
        .find(|l| l.starts_with("admin secret: "))
        .unwrap_or_else(|| panic!("up says where the admin secret is: {text}"));
    assert!(
        secret_line.contains("admin.secret (mode 0600; set_param and shutdown need it"),
        "{secret_line}"
    );
    assert!(
        text.contains("\nmodeled: nothing\n"),
        "an unmodeled stack says so: {text}"
    );
    for node in ["c0", "c7", "rtr0", "rtr3", "oss0", "oss1", "mds"] {
        let line = text
            .lines()
            .find(|l| l.starts_with(&format!("{node} ")))
            .unwrap_or_else(|| panic!("no line for {node}:\n{text}"));
        assert!(line.contains("127.0.0.1:"), "an admin address: {line}");
    }
    assert!(
        text.contains("50@mem0,50@mem1"),
        "a router has a NID on each network: {text}"
    );
    assert!(text.trim_end().ends_with("stopped"), "{text}");
}

#[tokio::test]
async fn up_refuses_a_bad_stack_file_with_the_field_named() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("bad.toml");
    std::fs::write(
        &file,
        "name = \"bad\"\n[[networks]]\nname = \"n\"\n[[nodes]]\nname = \"m\"\nrole = \"mds\"\nnids = { n = 1 }\ntargets = 2\n",
    )
    .unwrap();
    let args = iopath_stack::up::UpConfig {
        choice: iopath_stack::StackChoice {
            stack: Some(file),
            ..Default::default()
        },
        ..Default::default()
    };
    let error = iopath_stack::up::up_until(&args, &mut Vec::new(), std::future::ready(()), None)
        .await
        .unwrap_err()
        .to_string();
    assert!(
        error.contains("bad.toml: nodes[0] (m).targets: applies to oss nodes only"),
        "{error}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_modeled_disk_holds_each_write_for_its_modeled_time() {
    use iopath_stack::schema::{OstDisk, Role};
    let mut stack = preset("spider-mini").unwrap().stack().unwrap();
    // 1 MiB/s per target, at time scale 1: the model's time is the host's.
    let disk = OstDisk {
        bandwidth_bytes_s: 1 << 20,
        seek_us: 0,
    };
    for node in &mut stack.nodes {
        if let Role::Oss(spec) = &mut node.role {
            spec.disk = Some(disk);
        }
    }
    assert!(stack.modeled().contains("a disk under each target"));
    // Within the first 1 MiB stripe: one target's disk transfers 256 KiB, a quarter second.
    let took = timed_write(stack, 256 << 10).await;
    assert!(
        took >= std::time::Duration::from_millis(250),
        "the disks' modeled time bounds the write from below: {took:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_clients_nic_rate_holds_its_writes_to_that_rate() {
    let mut stack = preset("spider-mini").unwrap().stack().unwrap();
    // Every client's card at 1 MiB/s, at time scale 1: the servers pull a write's bytes
    // from the client, so the client's card sends them.
    for node in &mut stack.nodes {
        if node.role.kind() == RoleName::Client {
            node.nic_bandwidth_bytes_s = Some(1 << 20);
        }
    }
    assert!(
        stack.modeled().contains("the NICs of c0"),
        "{}",
        stack.modeled()
    );
    let took = timed_write(stack, 256 << 10).await;
    assert!(
        took >= std::time::Duration::from_millis(250),
        "256 KiB through a 1 MiB/s card takes a quarter second at least: {took:?}"
    );
}

/// Starts `stack` in this process, writes `bytes` into a new file from its first client node
/// (within the first stripe), checks they read back, stops it; how long the write took.
async fn timed_write(stack: iopath_stack::schema::Stack, bytes: usize) -> std::time::Duration {
    use iopath_stack::runtime::{Mode, RunningStack};
    let storage = StorageDir::temporary("test-modeled", None).unwrap();
    let running = RunningStack::start(stack, Mode::Embedded, storage, None)
        .await
        .unwrap();
    let client = running.connect(running.clients()[0]).await.unwrap();
    let file = client.create("/f", StripeRequest::INHERIT).await.unwrap();
    let data = Bytes::from(vec![7u8; bytes]);
    let started = std::time::Instant::now();
    file.write_at(0, data.clone()).await.unwrap();
    let took = started.elapsed();
    assert_eq!(file.read_at(0, data.len() as u64).await.unwrap(), data);
    file.close().await.unwrap();
    client.close().await.unwrap();
    running.stop().await.unwrap();
    took
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_on_a_torus_crossed_hop_by_hop_takes_its_dimension_order_route() {
    use iopath_stack::runtime::{Mode, RunningStack};
    // The MDS at x=3, a client at x=0, the OSS at x=2 on a ring of five routers: the OSS
    // pulls the write's bytes from the client, so they cross X+ from 0 to 2, and no other
    // link carries them.
    let text = "name = \"line\"\n[model]\ntime_scale = 8\n[[networks]]\nname = \"torus0\"\n\
                torus = [5, 1, 1]\nbandwidth = \"640m\"\nlatency_us = 1\nhop_by_hop = true\n\
                [[nodes]]\nname = \"mds\"\nrole = \"mds\"\nnids = { torus0 = 1 }\ntorus = [3, 0, 0]\n\
                [[nodes]]\nname = \"c\"\nrole = \"client\"\nnids = { torus0 = 100 }\ntorus = [0, 0, 0]\n\
                [[nodes]]\nname = \"oss\"\nrole = \"oss\"\nnids = { torus0 = 10 }\ntorus = [2, 0, 0]\n";
    let stack = iopath_stack::schema::Stack::parse(text, "line.toml").unwrap();
    // (With --processes, the same: `tests/processes.rs`.)
    let storage = StorageDir::temporary("test-torus", None).unwrap();
    let running = RunningStack::start(stack, Mode::Embedded, storage, None)
        .await
        .unwrap();
    let client = running.connect(running.clients()[0]).await.unwrap();
    let file = client.create("/f", StripeRequest::INHERIT).await.unwrap();
    let bytes = 4u64 << 20;
    let data = Bytes::from(vec![3u8; bytes as usize]);
    file.write_at(0, data.clone()).await.unwrap();
    assert_eq!(file.read_at(0, bytes).await.unwrap(), data);
    file.close().await.unwrap();
    client.close().await.unwrap();
    let RunningStack::Embedded(embedded) = &running else {
        panic!("started embedded");
    };
    let loads = embedded.torus(0).unwrap().link_loads();
    let along_x =
        |l: &&iopath_fabric::torus::LinkLoad| l.link.direction.axis() == iopath_topology::Axis::X;
    for load in loads.iter().filter(along_x) {
        let plus = load.link.direction.is_plus();
        let x = load.link.from.x;
        let on_route = plus && x < 2;
        // Written (pulled 0 -> 2) on the route; read back (2 -> 0, the X- way) off it.
        if on_route {
            assert!(load.bytes >= bytes, "{load:?} carried the write");
        } else if plus {
            assert!(load.bytes < bytes, "{load:?} is off the write's route");
        }
    }
    let back: u64 = loads
        .iter()
        .filter(along_x)
        .filter(|l| !l.link.direction.is_plus() && (l.link.from.x == 2 || l.link.from.x == 1))
        .map(|l| l.bytes)
        .min()
        .unwrap();
    assert!(back >= bytes, "the read came back over X- from 2 to 0");
    running.stop().await.unwrap();
}

/// The resident memory of this process, from `/proc/self/status`.
fn resident_bytes() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    let kib: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
    kib * 1024
}

/// Past the old limit of 1,024 nodes: 1,500 compute nodes through 6 fyods start in one
/// process within the named memory bound per idle node, and every one of them writes a file
/// of its own through its fyod and reads it back.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_stack_of_1500_compute_nodes_starts_and_every_node_round_trips() {
    use iopath_stack::runtime::{Mode, RunningStack};
    use iopath_stack::schema::IDLE_NODE_MEMORY_MAX_BYTES;
    use iopath_stack::schema::file::{NetworkEntry, NodeEntry, RoleName, StackFile};
    const CLIENTS: usize = 1500;
    let stack = StackFile::named("wide")
        .network(NetworkEntry::named("mesh0"))
        .node(
            NodeEntry::new("c", RoleName::Client)
                .count(CLIENTS as u32)
                .nid("mesh0", 100),
        )
        .node(
            NodeEntry::new("fyod", RoleName::Fyod)
                .count(6)
                .nid("mesh0", 20),
        )
        .node(
            NodeEntry::new("oss", RoleName::Oss)
                .count(2)
                .targets(2)
                .nid("mesh0", 10),
        )
        .node(NodeEntry::new("mds", RoleName::Mds).nid("mesh0", 1))
        .check("wide")
        .unwrap();
    let nodes = stack.nodes.len() as u64;
    let storage = StorageDir::temporary("test-wide", None).unwrap();
    let before = resident_bytes();
    let running = std::sync::Arc::new(
        RunningStack::start(stack, Mode::Embedded, storage, None)
            .await
            .unwrap(),
    );
    let per_node = resident_bytes().saturating_sub(before) / nodes;
    eprintln!("{nodes} idle nodes: {per_node} bytes each");
    assert!(
        per_node <= IDLE_NODE_MEMORY_MAX_BYTES,
        "an idle node takes {per_node} bytes, over the bound of {IDLE_NODE_MEMORY_MAX_BYTES}"
    );
    let first = running.connect(running.clients()[0]).await.unwrap();
    first.mkdir("/wide").await.unwrap();
    first.close().await.unwrap();

    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..CLIENTS {
        let running = std::sync::Arc::clone(&running);
        tasks.spawn(async move {
            let client = running.connect(running.clients()[index]).await.unwrap();
            let path = format!("/wide/f{index}");
            let file = client.create(&path, StripeRequest::INHERIT).await.unwrap();
            let data = Bytes::from(format!("node {index} of {CLIENTS}").repeat(64));
            file.write_at(0, data.clone()).await.unwrap();
            assert_eq!(file.read_at(0, data.len() as u64).await.unwrap(), data);
            file.close().await.unwrap();
            client.close().await.unwrap();
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
    std::sync::Arc::into_inner(running)
        .unwrap()
        .stop()
        .await
        .unwrap();
}
