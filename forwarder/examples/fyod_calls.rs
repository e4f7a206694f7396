//! Lesson: why ASCI Red's asynchronous calls scale and its synchronous calls do not.
//!
//! Starts a small stack in this process (a metadata service, two storage servers with two
//! targets each, one fyod) and lets N compute nodes each write, then read back, a file of
//! their own through the fyod — once with synchronous calls (`write()`/`read()`: the fyod
//! serves one at a time) and once with asynchronous calls (`cwrite()`/`cread()`: one worker
//! per open file), in PFS and in UFS mode. It prints the aggregate bandwidth of each run and
//! the fyod's own count of calls in flight, which is what explains the difference.
//!
//! ```text
//! cargo run --release -p iopath-forwarder --example fyod_calls -- [clients] [MiB per client]
//! ```

use std::sync::Arc;
use std::time::Instant;

use bytes::Bytes;
use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_forwarder::{
    CallKind, FileSystem, FyodClient, FyodConfig, FyodService, IoMode, OpenOptions,
};
use iopath_mds::{MdsConfig, MdsService, MdsTarget, StripeRequest};
use iopath_storage_server::engine::EngineConfig;
use iopath_storage_server::ost::{OssConfig, OstConfig};
use iopath_storage_server::service::{OssService, ServiceConfig};

type Error = Box<dyn std::error::Error + Send + Sync>;

const MIB: u64 = 1 << 20;

async fn node(network: &Arc<MemNetwork>, n: u32) -> Result<Node, Error> {
    Ok(Node::start(NodeConfig {
        interfaces: vec![Interface::Mem {
            nid: Nid::mem(n, 0),
            network: Arc::clone(network),
        }],
        ..NodeConfig::default()
    })
    .await?)
}

/// One run: `clients` nodes writing and reading `bytes` each through a fresh stack.
async fn run(mode: FileSystem, call: CallKind, clients: u32, bytes: u64) -> Result<(), Error> {
    let dir = tempfile::tempdir()?;
    let network = MemNetwork::new();
    let mut targets = Vec::new();
    let mut servers = Vec::new();
    for i in 0..2u32 {
        let root = dir.path().join(format!("oss{i}"));
        let server = node(&network, 10 + i).await?;
        let storage = OssConfig {
            root: root.clone(),
            targets: vec![i * 2, i * 2 + 1],
            template: OstConfig::new(0, &root),
            engine: EngineConfig::default(),
            disk_model: None,
            external_journal_dir: None,
            fsname: Default::default(),
        };
        OssService::open(&server, storage, ServiceConfig::default()).await?;
        for t in 0..2 {
            targets.push(MdsTarget {
                index: i * 2 + t,
                nid: server.nid(),
            });
        }
        servers.push(server);
    }
    let mds = node(&network, 1).await?;
    let _mds_service =
        MdsService::start(&mds, MdsConfig::new(dir.path().join("mds"), targets)).await?;
    let fyod_node = node(&network, 100).await?;
    let fyod = FyodService::start(&fyod_node, FyodConfig::new(mds.nid(), mode)).await?;

    let mut tasks = tokio::task::JoinSet::new();
    let start = Instant::now();
    for c in 0..clients {
        let client =
            FyodClient::connect(node(&network, 1000 + c).await?, fyod.nid(), u64::from(c)).await?;
        tasks.spawn(async move {
            let options = OpenOptions {
                create: true,
                // PFS files are striped over every target; a UFS file lives on one.
                stripe: (mode == FileSystem::Pfs).then_some(StripeRequest {
                    stripe_size_bytes: MIB,
                    stripe_count: -1,
                    stripe_offset: -1,
                }),
                io_mode: IoMode::Masync,
                call,
                ..OpenOptions::default()
            };
            let file = client.open(&format!("/file.{c}"), options).await?;
            let data = Bytes::from(vec![c as u8; MIB as usize]);
            let mut offset = 0;
            while offset < bytes {
                file.write_at(offset, data.clone()).await?;
                offset += MIB;
            }
            let mut offset = 0;
            while offset < bytes {
                let back = file.read_at(offset, MIB).await?;
                if back != data {
                    return Err(format!("file.{c} at {offset}: read back other bytes").into());
                }
                offset += MIB;
            }
            file.close().await?;
            Ok::<(), Error>(())
        });
    }
    while let Some(done) = tasks.join_next().await {
        done??;
    }
    let seconds = start.elapsed().as_secs_f64();
    let stats = fyod.stats();
    let moved = 2.0 * (u64::from(clients) * bytes) as f64 / MIB as f64;
    println!(
        "{mode:>4} {call:>5}: {:8.1} MiB/s   calls in flight at the fyod: sync peak {:2}, async peak {:2}   bytes through the fyod {:>6} MiB",
        moved / seconds,
        stats.sync_calls_in_flight_peak,
        stats.async_calls_in_flight_peak,
        stats.bytes_through_fyod / MIB,
    );
    Ok(())
}

#[tokio::main]
async fn main() -> Result<(), Error> {
    let mut args = std::env::args().skip(1);
    let clients: u32 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(16);
    let mib: u64 = args.next().map(|a| a.parse()).transpose()?.unwrap_or(8);
    if clients == 0 || mib == 0 {
        return Err("usage: fyod_calls [clients ≥ 1] [MiB per client ≥ 1]".into());
    }
    println!("{clients} compute nodes, {mib} MiB each written and read back through one fyod");
    for mode in [FileSystem::Pfs, FileSystem::Ufs] {
        for call in [CallKind::Sync, CallKind::Async] {
            run(mode, call, clients, mib * MIB).await?;
        }
    }
    Ok(())
}
