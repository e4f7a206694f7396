//! `iopath selftest`, in the spirit of `lnet_selftest`: a group of clients drives `brw` (bulk
//! read/write by descriptor) and `ping` RPCs at a group of servers, and the run reports MiB/s
//! and RPC/s beside a loopback-TCP baseline measured by iperf3 in the same run.
//!
//! The nodes run in this process (the default) or each in a process of its own
//! (`--processes`), started from this same binary with the hidden `selftest-node` command.

pub mod cluster;
pub mod node;
pub mod service;
pub mod workload;

use anyhow::{Result, bail};
use iopath_fabric::Limits;

use crate::baseline::{self, Baseline};
use crate::cpu::{CpuSample, CpuUse};
use crate::report::{Table, rate};
use cluster::{Cluster, Layout};
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
    /// Routers between clients (network 0) and servers (network 1); 0 for direct.
    pub routers: u32,
    /// With routers: run the same tests without them too, and report the ratio.
    pub compare_direct: bool,
}

/// One test's aggregate over all clients.
#[derive(Debug, Clone, serde::Serialize)]
pub struct TestReport {
    /// `brw write`, `brw read` or `ping`.
    pub test: String,
    /// `direct`, or `routed` through the configured routers.
    pub layout: String,
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
    /// The whole machine's CPUs during the test (every node, and anything else running).
    pub cpu: Option<CpuUse>,
    /// Busy core-seconds of the whole machine per GiB of bulk moved.
    pub core_s_per_gib: Option<f64>,
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
    /// The run's headline ratio: `routed_mib_s / direct_mib_s` when routed and direct were
    /// compared, else `bulk_mib_s / baseline_mib_s`.
    pub ratio: Option<f64>,
    /// `bulk_mib_s / baseline_mib_s`.
    pub baseline_ratio: Option<f64>,
    /// Routers between clients and servers.
    pub routers: u32,
    /// Bulk rate without routers.
    pub direct_mib_s: Option<f64>,
    /// Bulk rate through the routers.
    pub routed_mib_s: Option<f64>,
    /// `routed_mib_s / direct_mib_s`.
    pub routed_ratio: Option<f64>,
    /// Mean round trip of one ping at a time, direct.
    pub direct_ping_rtt_us: Option<f64>,
    /// Mean round trip of one ping at a time, through a router.
    pub routed_ping_rtt_us: Option<f64>,
    /// What one router adds to a one-way trip: half the round-trip difference.
    pub extra_latency_per_hop_us: Option<f64>,
    /// Peak resident memory of each router process (process mode).
    pub router_peak_rss_mib: Vec<f64>,
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
    if config.compare_direct && config.routers == 0 {
        bail!("--compare-direct compares against routers: give --routers N too");
    }
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
    let layouts = match (config.routers, config.compare_direct) {
        (0, _) => vec![Layout::Direct],
        (routers, true) => vec![Layout::Direct, Layout::Routed(routers)],
        (routers, false) => vec![Layout::Routed(routers)],
    };
    let mut tests = Vec::new();
    let mut rtt_us = [None, None];
    let mut router_peak_rss_mib = Vec::new();
    for layout in layouts {
        let label = match layout {
            Layout::Direct => "direct".to_owned(),
            Layout::Routed(n) => format!("routed via {n} router(s)"),
        };
        progress(&format!(
            "starting {} client(s), {} server(s), {label}",
            config.clients, config.servers
        ));
        let cluster = Cluster::start(config, layout).await?;
        for &test in &config.tests {
            let workload = workload_for(config, test, cluster.server_nids());
            if !std::io::IsTerminal::is_terminal(&std::io::stderr()) || config.processes {
                progress(&format!("{} ({label}): {} s", test.label(), config.seconds));
            }
            let before = CpuSample::now();
            let measured = cluster.run(&workload, progress).await?;
            let cpu = before.zip(CpuSample::now()).map(|(b, a)| b.until(&a));
            tests.push(report_of(test, layout, &measured, cpu));
        }
        if config.routers > 0 {
            // One ping at a time: the round trip itself, not a queue.
            let probe = Workload {
                concurrency: 1,
                seconds: config.seconds.min(1.0),
                ..workload_for(config, TestKind::Ping, cluster.server_nids())
            };
            let measured = cluster.run(&probe, &mut |_| {}).await?;
            // Every client pings, each one at a time: a client's round trip is the run's time
            // over its share of the RPCs, not over all of them.
            let per_client = measured.rpcs as f64 / f64::from(config.clients.max(1));
            let rtt = (measured.rpcs > 0).then(|| measured.elapsed_s * 1e6 / per_client);
            rtt_us[usize::from(layout != Layout::Direct)] = rtt;
        }
        router_peak_rss_mib.extend(cluster.router_peak_rss_mib());
        cluster.stop().await;
    }
    let brw_of = |layout: &str| {
        tests
            .iter()
            .find(|t| t.test.starts_with("brw") && t.layout == layout)
            .map(|t| t.mib_s)
    };
    let direct_mib_s = brw_of("direct");
    let routed_mib_s = brw_of("routed");
    let bulk_mib_s = routed_mib_s.or(direct_mib_s);
    let ping_rpc_s = tests.iter().find(|t| t.test == "ping").map(|t| t.rpc_s);
    let baseline_mib_s = baseline.as_ref().map(|b| b.mib_s);
    let baseline_ratio = bulk_mib_s
        .zip(baseline_mib_s)
        .map(|(ours, theirs)| ours / theirs);
    let routed_ratio = routed_mib_s
        .zip(direct_mib_s)
        .map(|(routed, direct)| routed / direct);
    let [direct_ping_rtt_us, routed_ping_rtt_us] = rtt_us;
    let extra_latency_per_hop_us = routed_ping_rtt_us
        .zip(direct_ping_rtt_us)
        .map(|(r, d)| (r - d) / 2.0);
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
        ratio: routed_ratio.or(baseline_ratio),
        baseline_ratio,
        routers: config.routers,
        direct_mib_s,
        routed_mib_s,
        routed_ratio,
        direct_ping_rtt_us,
        routed_ping_rtt_us,
        extra_latency_per_hop_us,
        router_peak_rss_mib,
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

fn report_of(
    test: TestKind,
    layout: Layout,
    measured: &Measured,
    cpu: Option<CpuUse>,
) -> TestReport {
    let elapsed = measured.elapsed_s.max(f64::MIN_POSITIVE);
    TestReport {
        test: test.label().into(),
        layout: match layout {
            Layout::Direct => "direct".into(),
            Layout::Routed(_) => "routed".into(),
        },
        rpcs: measured.rpcs,
        bytes: measured.bytes,
        elapsed_s: measured.elapsed_s,
        mib_s: measured.bytes as f64 / (1 << 20) as f64 / elapsed,
        rpc_s: measured.rpcs as f64 / elapsed,
        errors: measured.errors,
        first_error: measured.first_error.clone(),
        cpu,
        core_s_per_gib: cpu.and_then(|c| c.core_s_per_gib(measured.bytes)),
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
    let mut table = Table::new(&[
        "test",
        "layout",
        "RPCs",
        "seconds",
        "MiB/s",
        "RPC/s",
        "errors",
        "busy cores",
        "core-s/GiB",
    ]);
    for test in &report.tests {
        table.row(vec![
            test.test.clone(),
            test.layout.clone(),
            test.rpcs.to_string(),
            format!("{:.2}", test.elapsed_s),
            rate(test.mib_s),
            rate(test.rpc_s),
            test.errors.to_string(),
            test.cpu
                .map_or("-".into(), |c| format!("{:.2} of {}", c.busy_cores, c.cpus)),
            test.core_s_per_gib
                .map_or("-".into(), |c| format!("{c:.2}")),
        ]);
    }
    if let Some(baseline) = &report.baseline {
        table.row(vec![
            "baseline (iperf3)".into(),
            "loopback".into(),
            "-".into(),
            "-".into(),
            rate(baseline.mib_s),
            "-".into(),
            "-".into(),
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
    if let Some(ratio) = report.routed_ratio {
        out.push_str(&format!("routed / direct = {ratio:.3}\n"));
    }
    if let (Some(d), Some(r), Some(extra)) = (
        report.direct_ping_rtt_us,
        report.routed_ping_rtt_us,
        report.extra_latency_per_hop_us,
    ) {
        out.push_str(&format!("ping round trip, one at a time: direct {d:.1} us, routed {r:.1} us: {extra:.1} us per router hop\n"));
    }
    for (i, rss) in report.router_peak_rss_mib.iter().enumerate() {
        out.push_str(&format!("router {i}: peak resident memory {rss:.1} MiB\n"));
    }
    match (&report.baseline, report.baseline_ratio) {
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
