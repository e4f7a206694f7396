//! A lesson in metadata durability: create files through the metadata service over the
//! in-memory fabric, "crash" it (drop it without any shutdown), start it again on the same
//! directory, and see that every acknowledged file is there — replayed from the snapshot and
//! the log's tail.
//!
//! `cargo run --release -p iopath-mds --example namespace_crash -- [FILES]`

use std::sync::Arc;
use std::time::Instant;

use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_mds::{MdsClient, MdsConfig, MdsService, MdsTarget, StripeRequest};

#[tokio::main]
async fn main() -> anyhow::Result<()> {
    let files: usize = std::env::args().nth(1).map_or(Ok(2000), |a| a.parse())?;
    let network = MemNetwork::new();
    let node = |n: u32| {
        Node::start(NodeConfig {
            interfaces: vec![Interface::Mem {
                nid: Nid::mem(n, 0),
                network: Arc::clone(&network),
            }],
            ..Default::default()
        })
    };
    let (server, client_node) = (node(1).await?, node(2).await?);
    let dir = tempfile::tempdir()?;
    let targets: Vec<MdsTarget> = (0..4)
        .map(|i| MdsTarget {
            index: i,
            nid: Nid::mem(10 + i, 0),
        })
        .collect();
    let config = MdsConfig::new(dir.path(), targets);
    let service = MdsService::start(&server, config.clone()).await?;
    let client = MdsClient::new(client_node.clone(), server.nid());

    // Every create is answered only after its log record is fsync'd.
    client.mkdir("/run", 0o755).await?;
    let started = Instant::now();
    for i in 0..files {
        client
            .create(&format!("/run/f{i:06}"), 0o644, StripeRequest::INHERIT)
            .await?;
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "created {files} files in {elapsed:.3} s: {:.0} creates/s ({:.1} µs each, one fsync each)",
        files as f64 / elapsed,
        elapsed * 1e6 / files as f64
    );

    // The crash: the node goes, the store is dropped mid-stride, nothing is flushed.
    server.shutdown();
    drop((service, server));

    let server = node(3).await?;
    let started = Instant::now();
    let service = MdsService::start(&server, config).await?;
    let recovery = service.store().recovery().clone();
    println!(
        "restarted in {:.1} ms: snapshot covers {} changes, {} replayed from the log ({} log bytes)",
        started.elapsed().as_secs_f64() * 1e3,
        recovery.snapshot_seq,
        recovery.records_replayed,
        recovery.log_bytes
    );
    let client = MdsClient::new(client_node, server.nid());
    let listed = client.readdir("/run").await?.len();
    println!("after the crash /run holds {listed} of the {files} files acknowledged");
    anyhow::ensure!(
        listed == files,
        "lost {} acknowledged files",
        files - listed
    );
    Ok(())
}
