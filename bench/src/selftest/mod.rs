//! `iopath selftest`, in the spirit of `lnet_selftest`: a group of clients drives `brw` (bulk
//! read/write by descriptor) and `ping` RPCs at a group of servers, and the run reports MiB/s
//! and RPC/s beside a loopback-TCP baseline measured by iperf3 in the same run.
//!
//! The nodes run in this process (the default) or each in a process of its own
//! (`--processes`), started from this same binary with the hidden `selftest-node` command.
//! With `--sizes` the same tests run at each of several RPC sizes, one after another, beside
//! one baseline ([`sweep`]), and `--svg` draws bandwidth by size ([`plot`]).
//!
//! # Layout
//!
//! Read it top-down; each module uses only those listed after it:
//!
//! - [`plot`]: a sweep as a plot, bandwidth by RPC size.
//! - [`sweep`]: [`sweep::sweep`], the same selftest at each of several RPC sizes, beside one
//!   baseline, and its table.
//! - this module: [`run`], one selftest from start to report.
//! - [`cluster`]: [`cluster::Cluster`], the running nodes, in this process or in processes of
//!   their own ([`node`]), and a workload run on every client at once.
//! - [`node`]: the node processes — the parent's side ([`node::ProcessCluster`]) and the
//!   `selftest-node` program's ([`node::run_role`]).
//! - [`layout`]: direct or routed wiring, the routes and unbound interfaces it gives each node.
//! - [`report`]: what was measured, as JSON and as the table a person reads.
//! - [`config`]: [`SelftestConfig`], what a run asks for.
//! - [`workload`]: one client's workers and what they measured.
//! - [`service`]: the `ping` and `brw` service every selftest server runs.

pub mod cluster;
pub mod config;
pub mod layout;
pub mod node;
pub mod plot;
pub mod report;
pub mod service;
pub mod sweep;
pub mod workload;

pub use config::{SelftestConfig, Transport};
pub use report::{SelftestReport, TestReport, render};
pub use sweep::{SweepReport, render_sweep};

use iopath_fabric::Limits;

use crate::bare;
use crate::baseline::{self, Baseline};
use crate::cpu::CpuSample;
use crate::error::BenchError;
use cluster::Cluster;
use layout::Layout;
use report::{BareTcp, report_of};
use workload::{TestKind, Workload};

/// Runs a selftest, printing progress lines through `progress`.
pub async fn run(
    config: &SelftestConfig,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<SelftestReport, BenchError> {
    check(config)?;
    let baseline = measure_baseline(config, progress);
    measure(config, baseline, progress).await
}

/// Refuses what cannot run, before anything starts.
fn check(config: &SelftestConfig) -> Result<(), BenchError> {
    if config.compare_direct && config.routers == 0 {
        return Err(BenchError::refused(
            "--compare-direct compares against routers: give --routers N too",
        ));
    }
    if config.processes && config.transport != Transport::Tcp {
        return Err(BenchError::refused(
            "--processes needs --transport tcp: in-memory nodes share one process by definition",
        ));
    }
    if config.clients == 0 || config.servers == 0 {
        return Err(BenchError::refused(
            "a selftest needs at least one client and one server",
        ));
    }
    if config.size_bytes == 0 || config.size_bytes > Limits::default().bulk_max_bytes {
        return Err(BenchError::refused(format!(
            "--size must be between 1 byte and {} bytes",
            Limits::default().bulk_max_bytes
        )));
    }
    Ok(())
}

/// The baseline, when asked for: iperf3 on loopback, or why it could not run.
type BaselineOutcome = (Option<Baseline>, Option<String>);

/// Measures the baseline if `config` asks for it — before our own nodes start, so the two do
/// not compete for the cores.
fn measure_baseline(
    config: &SelftestConfig,
    progress: &mut (dyn FnMut(&str) + Send),
) -> BaselineOutcome {
    if !config.baseline {
        return (None, None);
    }
    let seconds = config.seconds.ceil().max(1.0) as u32;
    match tokio::task::block_in_place(|| baseline::iperf3_loopback(seconds, &mut *progress)) {
        Ok(b) => (Some(b), None),
        Err(e) => {
            progress(&format!("baseline unavailable: {e}"));
            (None, Some(e.to_string()))
        }
    }
}

/// Starts the nodes (once per layout), runs every test on them, and reports, with `baseline`
/// measured before.
async fn measure(
    config: &SelftestConfig,
    (baseline, baseline_error): BaselineOutcome,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<SelftestReport, BenchError> {
    let layouts = match (config.routers, config.compare_direct) {
        (0, _) => vec![Layout::Direct],
        (routers, true) => vec![Layout::Direct, Layout::Routed(routers)],
        (routers, false) => vec![Layout::Routed(routers)],
    };
    let mut tests = Vec::new();
    let mut rtt_us = [None, None];
    // The floor under a router hop, measured before any node starts, so that nothing of
    // ours competes for the cores: bare sockets, direct and through a relay.
    let bare = if config.routers > 0 && config.transport == config::Transport::Tcp {
        Some(tokio::task::block_in_place(|| {
            measure_bare(config, &mut *progress)
        })?)
    } else {
        None
    };
    let mut router_peak_rss_mib = Vec::new();
    for layout in layouts {
        let label = match layout {
            Layout::Direct => "direct".to_owned(),
            Layout::Routed(n) => format!("routed via {n} router(s)"),
        };
        let threads = match (config.processes, node::workers_for(config, layout)) {
            (true, Some(n)) => format!(", {n} runtime worker thread(s) per process"),
            _ => String::new(),
        };
        progress(&format!(
            "starting {} client(s), {} server(s), {label}{threads}",
            config.clients, config.servers
        ));
        let cluster = Cluster::start(config, layout).await?;
        for &test in &config.tests {
            let workload = workload_for(config, test, cluster.server_nids());
            if !std::io::IsTerminal::is_terminal(&std::io::stderr()) || config.processes {
                progress(&format!("{} ({label}): {} s", test.label(), config.seconds));
            }
            let before = CpuSample::now();
            let servers_before = cluster.server_cpu_s();
            let measured = cluster.run(&workload, progress).await?;
            let cpu = before.zip(CpuSample::now()).map(|(b, a)| b.until(&a));
            let processes_cpu =
                processes_cpu(servers_before, cluster.server_cpu_s(), &measured, cpu);
            tests.push(report_of(test, layout, &measured, cpu, processes_cpu));
        }
        if config.routers > 0 {
            // One ping at a time: the round trip itself, not a queue.
            let probe = Workload {
                concurrency: 1,
                seconds: config.seconds.min(1.0),
                ..workload_for(config, TestKind::Ping, cluster.server_nids())
            };
            let measured = cluster.run(&probe, &mut |_| {}).await?;
            // Every client pings, each one at a time: the median of each client's trips.
            rtt_us[usize::from(layout != Layout::Direct)] = measured.median_rpc_us;
        }
        router_peak_rss_mib.extend(cluster.router_peak_rss_mib());
        cluster.stop().await;
    }
    // The brw test of a layout, and its rate.
    let brw = |layout: &str| {
        tests
            .iter()
            .find(|t| t.test.starts_with("brw") && t.layout == layout)
    };
    let brw_of = |layout: &str| brw(layout).map(|t| t.mib_s);
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
    let routed_cost = brw("routed").and_then(|t| Some((t.cpu?.cpus, t.core_s_per_gib?)));
    // Every core busy at the routed test's own cost per GiB.
    let routed_cpu_ceiling_mib_s = routed_cost.map(|(cpus, cost)| f64::from(cpus) / cost * 1024.0);
    let routed_ceiling_ratio = routed_mib_s
        .zip(routed_cpu_ceiling_mib_s)
        .map(|(measured, ceiling)| measured / ceiling);
    // As many cores busy as a bare relay keeps busy on this machine, at the same cost.
    let relay_busy_cores = bare
        .as_ref()
        .and_then(|b| b.relayed.cpu)
        .map(|c| c.busy_cores);
    let routed_relay_ceiling_mib_s = routed_cost
        .zip(relay_busy_cores)
        .map(|((_, cost), busy)| busy / cost * 1024.0);
    let routed_relay_ceiling_ratio = routed_mib_s
        .zip(routed_relay_ceiling_mib_s)
        .map(|(measured, ceiling)| measured / ceiling);
    let routed_bare_ratio = routed_mib_s
        .zip(bare.as_ref())
        .map(|(routed, bare)| routed / bare.relayed.mib_s);
    let direct_bare_ratio = direct_mib_s
        .zip(bare.as_ref())
        .map(|(direct, bare)| direct / bare.direct.mib_s);
    let routed_bare_cpu_ratio = routed_cost
        .zip(bare.as_ref().and_then(|b| b.relayed.core_s_per_gib))
        .map(|((_, routed), relayed)| routed / relayed);
    let bare_relay_core_s_per_gib = bare
        .as_ref()
        .and_then(|b| Some(b.relayed.core_s_per_gib? - b.direct.core_s_per_gib?));
    let endpoints = |layout: &str| {
        let split = brw(layout)?.processes_cpu?.core_s_per_gib?;
        Some(split.clients + split.servers)
    };
    let endpoints_routed_direct_cpu_ratio = endpoints("routed")
        .zip(endpoints("direct"))
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
        routed_cpu_ceiling_mib_s,
        routed_ceiling_ratio,
        routed_relay_ceiling_mib_s,
        routed_relay_ceiling_ratio,
        routed_bare_ratio,
        direct_bare_ratio,
        routed_bare_cpu_ratio,
        bare_relay_core_s_per_gib,
        endpoints_routed_direct_cpu_ratio,
        router_checksums: config.router_checksums,
        bare,
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

/// Bare loopback TCP for `config`'s routed run: a small message's round trip direct and
/// through a relay, then a stream per client of `brw`-sized writes, direct and through a
/// relay each. Blocking.
fn measure_bare(
    config: &SelftestConfig,
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<BareTcp, BenchError> {
    let streams = config.clients.min(bare::STREAMS_MAX);
    let seconds = config.seconds.min(BARE_STREAM_SECONDS_MAX);
    let rtt_seconds = config.seconds.min(1.0);
    // Writes of the brw size, up to the bulk chunk a router forwards as one message.
    let chunk = usize::try_from(config.size_bytes)
        .unwrap_or(usize::MAX)
        .min(bare::CHUNK_MAX_BYTES);
    progress(&format!(
        "bare loopback TCP: round trips ({rtt_seconds} s each), then {streams} stream(s) of {chunk}-byte writes ({seconds} s each), direct and through a relay thread"
    ));
    let round_trip_us = bare::round_trip_us(0, rtt_seconds)?;
    let relayed_round_trip_us = bare::round_trip_us(1, rtt_seconds)?;
    Ok(BareTcp {
        round_trip_us,
        relayed_round_trip_us,
        hop_us: (relayed_round_trip_us - round_trip_us) / 2.0,
        direct: bare::streams(streams, 0, chunk, seconds)?,
        relayed: bare::streams(streams, 1, chunk, seconds)?,
    })
}

/// The longest the bare streams run, each: long enough to steady, short beside the tests.
const BARE_STREAM_SECONDS_MAX: f64 = 3.0;

/// Where one test's CPU went, by kind of node process: the servers' and routers' time between
/// the two samples, the clients' as they measured it themselves, and the rest of the
/// machine's busy time. `None` unless every node ran in a process of its own.
fn processes_cpu(
    before: Option<node::ServerCpu>,
    after: Option<node::ServerCpu>,
    measured: &workload::Measured,
    machine: Option<crate::cpu::CpuUse>,
) -> Option<report::ProcessesCpu> {
    let (before, after) = (before?, after?);
    let spent = |b: Option<f64>, a: Option<f64>| Some((a? - b?).max(0.0));
    Some(report::ProcessesCpu::of(
        measured.process_cpu_s?,
        spent(before.routers_s, after.routers_s)?,
        spent(before.servers_s, after.servers_s)?,
        machine,
        measured.bytes,
    ))
}

/// The workload of `test` on every client, as `config` asks.
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
