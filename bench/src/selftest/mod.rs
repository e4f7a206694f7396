//! `iopath selftest`, in the spirit of `lnet_selftest`: a group of clients drives `brw` (bulk
//! read/write by descriptor) and `ping` RPCs at a group of servers, and the run reports MiB/s
//! and RPC/s beside a loopback-TCP baseline measured by iperf3 in the same run.
//!
//! The nodes run in this process (the default) or each in a process of its own
//! (`--processes`), started from this same binary with the hidden `selftest-node` command.

pub mod node;
pub mod service;
pub mod workload;

use std::io::IsTerminal;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result, bail};
use iopath_fabric::{Interface, Limits, MemNetwork, Nid, Node, NodeConfig};

use crate::baseline::{self, Baseline};
use crate::report::{Table, rate};
use service::{SELFTEST_PORTAL, SelftestService};
use workload::{Measured, TestKind, Workload};

/// Which transport the nodes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// In-memory: one process, no copies.
    Mem,
    /// TCP on loopback.
    Tcp,
}

/// A selftest run.
#[derive(Debug, Clone)]
pub struct SelftestConfig {
    /// The transport.
    pub transport: Transport,
    /// Each node in its own process (TCP only).
    pub processes: bool,
    /// Client nodes.
    pub clients: u32,
    /// Server nodes.
    pub servers: u32,
    /// The tests, in order.
    pub tests: Vec<TestKind>,
    /// Bytes per `brw` RPC.
    pub size_bytes: u64,
    /// RPCs in flight per client.
    pub concurrency: u32,
    /// Seconds per test.
    pub seconds: f64,
    /// `crc32` or `crc32c`.
    pub checksum: String,
    /// Measure loopback TCP with iperf3 first.
    pub baseline: bool,
}

/// One test's aggregate over all clients.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TestReport {
    /// `brw write`, `brw read` or `ping`.
    pub test: String,
    /// RPCs completed.
    pub rpcs: u64,
    /// Bulk bytes moved.
    pub bytes: u64,
    /// Longest client's run time.
    pub elapsed_s: f64,
    /// Bulk rate.
    pub mib_s: f64,
    /// RPC rate.
    pub rpc_s: f64,
    /// Failed RPCs.
    pub errors: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
}

/// Everything a run measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SelftestReport {
    /// The transport.
    pub transport: Transport,
    /// Whether each node had its own process.
    pub processes: bool,
    /// Client nodes.
    pub clients: u32,
    /// Server nodes.
    pub servers: u32,
    /// Bytes per `brw` RPC.
    pub size_bytes: u64,
    /// RPCs in flight per client.
    pub concurrency: u32,
    /// The bulk checksum.
    pub checksum: String,
    /// Per test.
    pub tests: Vec<TestReport>,
    /// The first `brw` test's rate.
    pub bulk_mib_s: Option<f64>,
    /// The `ping` test's rate.
    pub ping_rpc_s: Option<f64>,
    /// The baseline's rate.
    pub baseline_mib_s: Option<f64>,
    /// `bulk_mib_s / baseline_mib_s`.
    pub ratio: Option<f64>,
    /// How the baseline was measured.
    pub baseline: Option<Baseline>,
    /// Why there is no baseline, if it was asked for and failed.
    pub baseline_error: Option<String>,
    /// What in this run was modeled rather than real.
    pub modeled: String,
}

/// Runs a selftest, printing progress lines through `progress`.
pub async fn run(
    config: &SelftestConfig,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<SelftestReport> {
    if config.processes && config.transport != Transport::Tcp {
        bail!("--processes needs --transport tcp: in-memory nodes share one process by definition");
    }
    if config.clients == 0 || config.servers == 0 {
        bail!("a selftest needs at least one client and one server");
    }
    if config.size_bytes == 0 || config.size_bytes > Limits::default().bulk_max_bytes {
        bail!(
            "--size must be between 1 byte and {} bytes",
            Limits::default().bulk_max_bytes
        );
    }
    let (baseline, baseline_error) = if config.baseline {
        let seconds = config.seconds.ceil().max(1.0) as u32;
        // Before our own nodes start, so the two do not compete for the cores.
        match tokio::task::block_in_place(|| baseline::iperf3_loopback(seconds, &mut *progress)) {
            Ok(b) => (Some(b), None),
            Err(e) => {
                progress(&format!("baseline unavailable: {e:#}"));
                (None, Some(format!("{e:#}")))
            }
        }
    } else {
        (None, None)
    };
    let mut tests = Vec::new();
    if config.processes {
        let cluster = node::ProcessCluster::start(config).await?;
        for &test in &config.tests {
            let workload = workload_for(config, test, cluster.server_nids());
            progress(&format!(
                "{}: {} client processes → {} server processes, {} s",
                test.label(),
                config.clients,
                config.servers,
                config.seconds
            ));
            let measured = cluster.run(&workload).await?;
            tests.push(report_of(test, &measured));
        }
        cluster.stop().await;
    } else {
        let (clients, servers) = start_in_process(config).await?;
        let server_nids: Vec<String> = servers.iter().map(|s| s.nid().to_string()).collect();
        for &test in &config.tests {
            let workload = workload_for(config, test, server_nids.clone());
            let measured = run_in_process(&clients, &workload, progress).await?;
            tests.push(report_of(test, &measured));
        }
        for node in clients.iter().chain(&servers) {
            node.shutdown();
        }
    }
    let bulk_mib_s = tests
        .iter()
        .find(|t| t.test.starts_with("brw"))
        .map(|t| t.mib_s);
    let ping_rpc_s = tests.iter().find(|t| t.test == "ping").map(|t| t.rpc_s);
    let baseline_mib_s = baseline.as_ref().map(|b| b.mib_s);
    let ratio = bulk_mib_s
        .zip(baseline_mib_s)
        .map(|(ours, theirs)| ours / theirs);
    Ok(SelftestReport {
        transport: config.transport,
        processes: config.processes,
        clients: config.clients,
        servers: config.servers,
        size_bytes: config.size_bytes,
        concurrency: config.concurrency,
        checksum: config.checksum.clone(),
        tests,
        bulk_mib_s,
        ping_rpc_s,
        baseline_mib_s,
        ratio,
        baseline,
        baseline_error,
        modeled: match config.transport {
            Transport::Mem => {
                "nothing: real bytes and checksums, moved between nodes in one process".into()
            }
            Transport::Tcp => {
                "nothing: real bytes, real checksums, real loopback TCP sockets".into()
            }
        },
    })
}

fn workload_for(config: &SelftestConfig, test: TestKind, servers: Vec<String>) -> Workload {
    Workload {
        test,
        servers,
        size_bytes: config.size_bytes,
        concurrency: config.concurrency,
        seconds: config.seconds,
        checksum: config.checksum.clone(),
    }
}

fn report_of(test: TestKind, measured: &Measured) -> TestReport {
    let elapsed = measured.elapsed_s.max(f64::MIN_POSITIVE);
    TestReport {
        test: test.label().into(),
        rpcs: measured.rpcs,
        bytes: measured.bytes,
        elapsed_s: measured.elapsed_s,
        mib_s: measured.bytes as f64 / (1 << 20) as f64 / elapsed,
        rpc_s: measured.rpcs as f64 / elapsed,
        errors: measured.errors,
        first_error: measured.first_error.clone(),
    }
}

/// Adds one client's measurement into the total (elapsed: the longest).
pub(crate) fn accumulate(total: &mut Measured, one: Measured) {
    total.rpcs += one.rpcs;
    total.bytes += one.bytes;
    total.errors += one.errors;
    total.elapsed_s = total.elapsed_s.max(one.elapsed_s);
    if total.first_error.is_none() {
        total.first_error = one.first_error;
    }
}

async fn start_in_process(config: &SelftestConfig) -> Result<(Vec<Node>, Vec<Node>)> {
    let network = MemNetwork::new();
    let mut nodes = Vec::new();
    for n in 0..config.clients + config.servers {
        let interface = match config.transport {
            Transport::Mem => Interface::Mem {
                nid: Nid::mem(n, 0),
                network: Arc::clone(&network),
            },
            Transport::Tcp => Interface::Tcp {
                nid: "127.0.0.1:0@tcp0".parse()?,
            },
        };
        let node_config = NodeConfig {
            interfaces: vec![interface],
            ..NodeConfig::default()
        };
        nodes.push(
            Node::start(node_config)
                .await
                .context("start a selftest node")?,
        );
    }
    let servers = nodes.split_off(config.clients as usize);
    for server in &servers {
        server.register_service(SELFTEST_PORTAL, Arc::new(SelftestService::default()))?;
    }
    Ok((nodes, servers))
}

async fn run_in_process(
    clients: &[Node],
    workload: &Workload,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<Measured> {
    let counters = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
    let mut tasks = Vec::new();
    for client in clients {
        let (client, workload, counters) =
            (client.clone(), workload.clone(), Arc::clone(&counters));
        tasks.push(tokio::spawn(async move {
            workload::run(&client, &workload, counters).await
        }));
    }
    let started = Instant::now();
    let show_progress = std::io::stderr().is_terminal();
    while !tasks.iter().all(|t| t.is_finished()) {
        tokio::time::sleep(Duration::from_millis(250)).await;
        if show_progress {
            let secs = started.elapsed().as_secs_f64();
            let mib = counters.1.load(Ordering::Relaxed) as f64 / (1 << 20) as f64;
            let rpcs = counters.0.load(Ordering::Relaxed);
            progress(&format!(
                "\r{}: {secs:.1}/{:.1} s  {rpcs} RPCs  {} MiB/s",
                workload.test.label(),
                workload.seconds,
                rate(mib / secs)
            ));
        }
    }
    if show_progress {
        progress("\n");
    }
    let mut total = Measured::default();
    for task in tasks {
        accumulate(&mut total, task.await.context("selftest client panicked")??);
    }
    Ok(total)
}

/// The table a person reads.
pub fn render(report: &SelftestReport) -> String {
    let mut out = format!(
        "iopath selftest: {} client(s) → {} server(s) over {}{}, brw {} bytes, concurrency {}, checksum {}\n",
        report.clients,
        report.servers,
        match report.transport {
            Transport::Mem => "mem",
            Transport::Tcp => "tcp (loopback)",
        },
        if report.processes {
            ", one process per node"
        } else {
            ", one process"
        },
        report.size_bytes,
        report.concurrency,
        report.checksum,
    );
    let mut table = Table::new(&["test", "RPCs", "seconds", "MiB/s", "RPC/s", "errors"]);
    for test in &report.tests {
        table.row(vec![
            test.test.clone(),
            test.rpcs.to_string(),
            format!("{:.2}", test.elapsed_s),
            rate(test.mib_s),
            rate(test.rpc_s),
            test.errors.to_string(),
        ]);
    }
    if let Some(baseline) = &report.baseline {
        table.row(vec![
            "baseline (iperf3)".into(),
            "-".into(),
            "-".into(),
            rate(baseline.mib_s),
            "-".into(),
            "-".into(),
        ]);
    }
    out.push_str(&table.render());
    for test in report.tests.iter().filter(|t| t.errors > 0) {
        out.push_str(&format!(
            "{}: first error: {}\n",
            test.test,
            test.first_error.as_deref().unwrap_or("?")
        ));
    }
    match (&report.baseline, report.ratio) {
        (Some(baseline), Some(ratio)) => out.push_str(&format!(
            "bulk / baseline = {ratio:.3}   (baseline: `{}`, {})\n",
            baseline.command, baseline.version
        )),
        _ => {
            if let Some(why) = &report.baseline_error {
                out.push_str(&format!("no baseline: {why}\n"));
            }
        }
    }
    out.push_str(&format!("modeled: {}\n", report.modeled));
    out
}
