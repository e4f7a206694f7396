//! A client node's `osc.*.stats` and `osc.*.rpc_stats`: what every client library on the node
//! asked of each target, read through the node's parameter tree as `lctl get_param` reads it,
//! and cleared by writing to them.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use bytes::Bytes;
use iopath_client::StripeRequest;
use iopath_stack::preset;
use iopath_stack::runtime::{EmbeddedStack, StorageDir, client_config};
use iopath_stack::schema::RoleName;
use iopath_stack::schema::file::{JournalName, NetworkEntry, NodeEntry, StackFile};

/// One client node, one storage server of two targets; files striped over both in 1 MiB
/// stripes.
fn osc_stack() -> StackFile {
    StackFile::named("osc-test")
        .description("one client node, two targets")
        .stripe_size(1 << 20)
        .stripe_count(2)
        .network(NetworkEntry::named("o2ib0"))
        .node(NodeEntry::new("c0", RoleName::Client).nid("o2ib0", 100))
        .node(
            NodeEntry::new("oss", RoleName::Oss)
                .nid("o2ib0", 10)
                .targets(2),
        )
        .node(NodeEntry::new("mds", RoleName::Mds).nid("o2ib0", 1))
}

/// The counter `name` of a stats file: (samples, sum); (0, 0) if it has no line.
fn counter(stats: &str, name: &str) -> (u64, u64) {
    let Some(line) = stats
        .lines()
        .find(|l| l.split_whitespace().next() == Some(name))
    else {
        return (0, 0);
    };
    // name, samples, "samples", [unit], min, max, sum, sumsq
    let words: Vec<&str> = line.split_whitespace().collect();
    assert_eq!(words.len(), 8, "{line}");
    (words[1].parse().unwrap(), words[6].parse().unwrap())
}

/// The read and write columns' RPC counts of rpc_stats' section `title`, summed over its rows,
/// and each row's label.
fn section(rpc_stats: &str, title: &str) -> (u64, u64, Vec<String>) {
    let start = rpc_stats.find(&format!("\n{title} ")).unwrap();
    let rows = rpc_stats[start + 1..]
        .split("\n\n")
        .next()
        .unwrap()
        .lines()
        .skip(1);
    let (mut read, mut write, mut labels) = (0, 0, Vec::new());
    for row in rows {
        let (label, counts) = row.split_once(":\t\t").unwrap();
        let (r, w) = counts.split_once('|').unwrap();
        read += r.split_whitespace().next().unwrap().parse::<u64>().unwrap();
        write += w.split_whitespace().next().unwrap().parse::<u64>().unwrap();
        labels.push(label.to_owned());
    }
    (read, write, labels)
}

/// Every value of the params matching `pattern` on `tree`, by name.
fn values(tree: &iopath_admin::ParamTree, pattern: &str) -> Vec<(String, String)> {
    tree.get(pattern)
        .unwrap()
        .into_iter()
        .map(|p| (p.name, p.value))
        .collect()
}

/// The stack `text` started in this process, its storage in a directory named after `what`.
async fn start(file: &StackFile, what: &str) -> EmbeddedStack {
    let stack = file.check("osc-test").unwrap();
    let storage = StorageDir::temporary(what, None).unwrap();
    EmbeddedStack::start(stack, storage, false).await.unwrap()
}

/// The stack's (first) client node.
fn client_node(running: &EmbeddedStack) -> &iopath_stack::runtime::RunningNode {
    running
        .nodes()
        .into_iter()
        .find(|n| n.role == RoleName::Client)
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_nodes_osc_files_count_every_client_on_it_and_clear_when_written() {
    let running = start(&osc_stack(), "test-osc-stats").await;
    let c0 = client_node(&running);
    let tree = &c0.tree;
    let names: Vec<String> = values(tree, "osc.*.*").into_iter().map(|v| v.0).collect();
    assert_eq!(
        names,
        [
            "osc.iopath-OST0000-osc-c0.rpc_stats",
            "osc.iopath-OST0000-osc-c0.stats",
            "osc.iopath-OST0001-osc-c0.rpc_stats",
            "osc.iopath-OST0001-osc-c0.stats",
        ]
    );
    assert!(
        values(tree, "devices")[0]
            .1
            .contains("UP osc iopath-OST0001-osc-c0 iopath-OST0001-osc-c0_UUID"),
        "lctl dl lists the osc devices"
    );

    // Two clients on the one node, as two IOR tasks: 3 MiB + 4 KiB at 0, then 1 MiB at 4 MiB
    // (2 MiB into its object), written and read back.
    let data: Bytes = (0..(3 << 20) + 4096)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    let small = Bytes::from(vec![9u8; 1 << 20]);
    let mut written = 0;
    for (path, offset, bytes) in [("/a", 0, &data), ("/b", 4 << 20, &small)] {
        let client = iopath_client::Client::connect(client_config(running.stack(), c0))
            .await
            .unwrap();
        let file = client.create(path, StripeRequest::INHERIT).await.unwrap();
        file.write_at(offset, bytes.clone()).await.unwrap();
        let back = file.read_at(offset, bytes.len() as u64).await.unwrap();
        assert_eq!(&back, bytes);
        written += bytes.len() as u64;
        file.close().await.unwrap();
        client.close().await.unwrap();
    }

    let stats = values(tree, "osc.*.stats");
    let rpc_stats = values(tree, "osc.*.rpc_stats");
    let (mut write_rpcs, mut write_bytes, mut read_bytes, mut pages_write_rpcs) = (0, 0, 0, 0);
    let mut offsets = Vec::new();
    for ((name, stats), (_, rpc)) in stats.iter().zip(&rpc_stats) {
        assert!(stats.starts_with("snapshot_time             "), "{stats}");
        let (rpcs, bytes) = counter(stats, "write_bytes");
        assert!(rpcs > 0, "both targets were written: {name}\n{stats}");
        assert_eq!(counter(stats, "ost_write").0, rpcs, "{stats}");
        let reads = counter(stats, "read_bytes").0;
        assert!(reads > 0, "{stats}");
        let waits = counter(stats, "req_waittime").0;
        assert!(waits > rpcs + reads, "creates, writes, reads: {stats}");
        assert!(counter(stats, "ost_create").0 >= 1, "{stats}");
        write_rpcs += rpcs;
        write_bytes += bytes;
        read_bytes += counter(stats, "read_bytes").1;

        assert!(
            rpc.starts_with("snapshot_time:         ")
                && rpc.contains(
                    "\nread RPCs in flight:  0\nwrite RPCs in flight: 0\n\
                     pending write pages:  0\npending read pages:   0\n"
                ),
            "{rpc}"
        );
        let (read_pages, write_pages, labels) = section(rpc, "pages per rpc");
        assert_eq!(
            write_pages, rpcs,
            "a pages-per-rpc count per write RPC: {rpc}"
        );
        assert_eq!(read_pages, reads, "{rpc}");
        assert_eq!(labels[..3], ["1", "2", "4"], "{rpc}");
        pages_write_rpcs += write_pages;
        let (in_flight_reads, in_flight_writes, labels) = section(rpc, "rpcs in flight");
        assert_eq!(
            (in_flight_reads, in_flight_writes),
            (read_pages, write_pages)
        );
        assert_eq!(labels[..2], ["0", "1"], "{rpc}");
        let (_, offset_writes, labels) = section(rpc, "offset");
        assert_eq!(offset_writes, write_pages, "{rpc}");
        assert_eq!(labels[0], "0", "{rpc}");
        offsets.extend(labels);
    }
    assert_eq!(write_bytes, written, "every byte both clients wrote");
    assert_eq!(read_bytes, written, "every byte both clients read");
    assert_eq!(pages_write_rpcs, write_rpcs);
    assert!(write_rpcs >= 3, "two files over two targets: {write_rpcs}");
    assert!(
        offsets.iter().any(|label| label == "512"),
        "/b's write 2 MiB into its object: offset 512 pages: {offsets:?}"
    );

    // Each file clears its own, whatever is written to it (Lustre takes any value).
    tree.set("osc.*.stats", "clear").unwrap();
    for (name, stats) in values(tree, "osc.*.stats") {
        assert_eq!(counter(&stats, "write_bytes"), (0, 0), "{name}: {stats}");
        assert_eq!(counter(&stats, "req_waittime"), (0, 0), "{name}: {stats}");
        assert!(stats.contains("\nelapsed_time "), "{stats}");
    }
    for (_, rpc) in values(tree, "osc.*.rpc_stats") {
        assert!(
            section(&rpc, "pages per rpc").1 > 0,
            "rpc_stats kept: {rpc}"
        );
    }
    tree.set("osc.iopath-OST000*-osc-c0.rpc_stats", "1")
        .unwrap();
    for (_, rpc) in values(tree, "osc.*.rpc_stats") {
        let (read, write, labels) = section(&rpc, "pages per rpc");
        assert_eq!(
            (read, write, labels.len()),
            (0, 0, 1),
            "one row of zeros: {rpc}"
        );
    }
    running.stop().await.unwrap();
}

/// The sum of counter `name` over every osc `stats` file on `tree`.
fn summed(tree: &iopath_admin::ParamTree, name: &str) -> u64 {
    values(tree, "osc.*.stats")
        .iter()
        .map(|(_, stats)| counter(stats, name).1)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_fyod_counts_in_its_own_osc_files_what_it_forwards() {
    // asci-red-mini: c0's reads and writes go through fyod0 (PFS), which reaches the targets.
    let stack = preset("asci-red-mini").unwrap().stack().unwrap();
    let storage = StorageDir::temporary("test-osc-fyod", None).unwrap();
    let running = EmbeddedStack::start(stack, storage, false).await.unwrap();
    let node = |name: &str| {
        running
            .nodes()
            .into_iter()
            .find(|n| n.name == name)
            .unwrap()
    };
    let (c0, fyod0) = (node("c0"), node("fyod0"));
    let client = iopath_client::Client::connect(client_config(running.stack(), c0))
        .await
        .unwrap();
    let data: Bytes = (0..(2 << 20) + 100)
        .map(|i| (i % 249) as u8)
        .collect::<Vec<u8>>()
        .into();
    let file = client.create("/f", StripeRequest::INHERIT).await.unwrap();
    file.write_at(0, data.clone()).await.unwrap();
    assert_eq!(file.read_at(0, data.len() as u64).await.unwrap(), data);
    file.close().await.unwrap();
    client.close().await.unwrap();
    assert!(
        values(&fyod0.tree, "osc.*.stats")[0]
            .0
            .ends_with("-osc-fyod0.stats")
    );
    let written = data.len() as u64;
    assert_eq!(summed(&fyod0.tree, "write_bytes"), written);
    assert_eq!(summed(&fyod0.tree, "read_bytes"), written);
    assert_eq!(
        summed(&c0.tree, "write_bytes"),
        0,
        "the compute node reached no target itself"
    );
    running.stop().await.unwrap();
}

/// [`osc_stack`] with async commits that wait for a minute: acknowledged writes stay
/// uncommitted until a client forces a commit (its disconnect does).
fn slow_commits() -> StackFile {
    let mut file = osc_stack();
    let oss = file.node_mut("oss").unwrap();
    oss.journal = Some(JournalName::Async);
    oss.commit_interval_ms = Some(60_000);
    file
}

/// The sum of `iopath_osc_uncommitted_writes` in the node's `/metrics` text.
fn uncommitted_on_metrics(node: &iopath_stack::runtime::RunningNode) -> u64 {
    let text = iopath_admin::metrics::render(&node.metrics_registry()).unwrap();
    text.lines()
        .filter(|l| l.starts_with("iopath_osc_uncommitted_writes{"))
        .map(|l| l.rsplit(' ').next().unwrap().parse::<f64>().unwrap() as u64)
        .sum()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_nodes_uncommitted_writes_rise_with_async_writes_and_fall_at_commit() {
    let running = start(&slow_commits(), "test-osc-uncommitted").await;
    let c0 = client_node(&running);
    let osc = c0.osc.as_ref().unwrap();
    let uncommitted = || -> u64 { osc.targets().iter().map(|t| t.uncommitted()).sum() };
    assert_eq!(uncommitted(), 0);

    // 2 MiB over both targets in 1 MiB stripes: a write kept on each.
    let client = iopath_client::Client::connect(client_config(running.stack(), c0))
        .await
        .unwrap();
    let file = client.create("/a", StripeRequest::INHERIT).await.unwrap();
    file.write_at(0, Bytes::from(vec![7u8; 2 << 20]))
        .await
        .unwrap();
    let kept = uncommitted();
    assert!(kept >= 2, "a write on each target is kept: {kept}");
    for target in osc.targets() {
        assert!(target.uncommitted() >= 1, "target {}", target.index());
    }
    assert_eq!(uncommitted_on_metrics(c0), kept, "/metrics says the same");

    // A second client on the node, dropped without closing: what it kept goes with it.
    let other = iopath_client::Client::connect(client_config(running.stack(), c0))
        .await
        .unwrap();
    let second = other.create("/b", StripeRequest::INHERIT).await.unwrap();
    second
        .write_at(0, Bytes::from(vec![8u8; 1 << 20]))
        .await
        .unwrap();
    assert!(uncommitted() > kept, "both clients' writes are counted");
    drop(second);
    drop(other);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while uncommitted() != kept {
        assert!(
            std::time::Instant::now() < deadline,
            "the dropped client's writes are still counted: {} (kept {kept})",
            uncommitted()
        );
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }

    // Closing commits every target: nothing is kept.
    file.close().await.unwrap();
    client.close().await.unwrap();
    assert_eq!(uncommitted(), 0);
    assert_eq!(uncommitted_on_metrics(c0), 0);
    running.stop().await.unwrap();
}

/// A file system of 72 targets on 18 servers (more than `EAGER_ROWS_MAX` and
/// `EAGER_SERVERS_MAX`): a client node lists an osc device for every target, but makes a row
/// (and its files) only for the target it writes, which its client alone connected to.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_large_file_systems_osc_rows_are_made_for_the_targets_used() {
    use iopath_ost_client::stats::EAGER_ROWS_MAX;
    let mut file = osc_stack().stripe_count(1);
    let oss = file.node_mut("oss").unwrap();
    oss.count = Some(18);
    oss.targets = Some(4);
    let running = start(&file, "test-osc-lazy").await;
    assert!(running.stack().targets().len() > EAGER_ROWS_MAX);
    let c0 = client_node(&running);
    let tree = &c0.tree;
    assert!(tree.get("osc.*.*").is_err(), "no row before any I/O");
    let devices = &values(tree, "devices")[0].1;
    assert_eq!(
        devices.lines().count(),
        72,
        "lctl dl lists every osc device"
    );

    let client = iopath_client::Client::connect(client_config(running.stack(), c0))
        .await
        .unwrap();
    let file = client.create("/one", StripeRequest::INHERIT).await.unwrap();
    let target = file.layout().objects()[0].target;
    let data = Bytes::from(vec![5u8; 64 << 10]);
    file.write_at(0, data.clone()).await.unwrap();
    assert_eq!(file.read_at(0, data.len() as u64).await.unwrap(), data);
    file.close().await.unwrap();
    let stats = values(tree, "osc.*.stats");
    assert_eq!(stats.len(), 1, "one row: {stats:?}");
    assert!(
        stats[0].0.contains(&format!("OST{target:04x}")),
        "the row is the written target's: {}",
        stats[0].0
    );
    client.close().await.unwrap();
    running.stop().await.unwrap();
}
