//! What a selftest measured: per test and for the whole run, as JSON for machines and as the
//! table a person reads.

use crate::bare::BareStreams;
use crate::baseline::Baseline;
use crate::cpu::CpuUse;
use crate::report::{Table, rate};

use super::config::Transport;
use super::layout::Layout;
use super::workload::{Measured, TestKind};

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
    /// Where the CPU time went, by kind of node process (a process per node only).
    pub processes_cpu: Option<ProcessesCpu>,
}

/// CPU time by kind of node process during one test: seconds, and core-seconds per GiB of
/// bulk moved.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct ProcessesCpu {
    /// Seconds of CPU.
    pub seconds: CpuSplit,
    /// The same per GiB of bulk (none for a test that moves no bulk).
    pub core_s_per_gib: Option<CpuSplit>,
}

/// One amount of CPU split by who spent it.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CpuSplit {
    /// Every client process.
    pub clients: f64,
    /// Every router process.
    pub routers: f64,
    /// Every server process.
    pub servers: f64,
    /// The rest of the machine's busy time: the parent process, interrupts and softirqs the
    /// kernel ran outside the nodes' own time, anything else running.
    pub other: f64,
}

impl CpuSplit {
    fn scaled(self, by: f64) -> CpuSplit {
        CpuSplit {
            clients: self.clients * by,
            routers: self.routers * by,
            servers: self.servers * by,
            other: self.other * by,
        }
    }
}

impl ProcessesCpu {
    /// The split of one test: the node processes' seconds, the rest of the machine's busy
    /// core-seconds (`machine`) as other, and both per GiB of `bytes`.
    pub(crate) fn of(
        clients: f64,
        routers: f64,
        servers: f64,
        machine: Option<CpuUse>,
        bytes: u64,
    ) -> ProcessesCpu {
        let busy = machine.map_or(0.0, |m| m.busy_cores * m.seconds);
        let seconds = CpuSplit {
            clients,
            routers,
            servers,
            other: (busy - clients - routers - servers).max(0.0),
        };
        let gib = bytes as f64 / (1u64 << 30) as f64;
        ProcessesCpu {
            seconds,
            core_s_per_gib: (bytes > 0).then(|| seconds.scaled(1.0 / gib)),
        }
    }
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
    /// Median round trip of one ping at a time, direct.
    pub direct_ping_rtt_us: Option<f64>,
    /// Median round trip of one ping at a time, through a router.
    pub routed_ping_rtt_us: Option<f64>,
    /// What one router adds to a one-way trip: half the round-trip difference.
    pub extra_latency_per_hop_us: Option<f64>,
    /// Peak resident memory of each router process (process mode).
    pub router_peak_rss_mib: Vec<f64>,
    /// The routed `brw` rate the machine's cores allow: every core busy at the routed test's
    /// measured core-seconds per GiB.
    pub routed_cpu_ceiling_mib_s: Option<f64>,
    /// `routed_mib_s / routed_cpu_ceiling_mib_s`.
    pub routed_ceiling_ratio: Option<f64>,
    /// The routed `brw` rate the machine allows with as many cores busy as the bare relay
    /// kept busy (`bare.relayed.cpu`), at the routed test's measured core-seconds per GiB.
    pub routed_relay_ceiling_mib_s: Option<f64>,
    /// `routed_mib_s / routed_relay_ceiling_mib_s`.
    pub routed_relay_ceiling_ratio: Option<f64>,
    /// `routed_mib_s` over the bare relayed streams' rate: the router's hop against a thread
    /// that only copies.
    pub routed_bare_ratio: Option<f64>,
    /// `direct_mib_s` over the bare direct streams' rate.
    pub direct_bare_ratio: Option<f64>,
    /// The routed brw's core-s/GiB (the whole machine) over the bare relayed streams': what a
    /// byte costs through iopath's router against through a thread that only copies.
    pub routed_bare_cpu_ratio: Option<f64>,
    /// Core-s/GiB the bare relay adds to the bare direct stream: what a relay that only
    /// copies costs a byte here, the floor under a router process's core-s/GiB.
    pub bare_relay_core_s_per_gib: Option<f64>,
    /// The clients' and servers' core-s/GiB together, routed over direct (with
    /// `--processes`): a router in between should not make the endpoints spend more.
    pub endpoints_routed_direct_cpu_ratio: Option<f64>,
    /// Whether the routers verified the checksums of the bulk chunks they forwarded.
    pub router_checksums: bool,
    /// Bare loopback TCP measured in the same run, before the nodes started (routed TCP runs).
    pub bare: Option<BareTcp>,
    /// How the baseline was measured.
    pub baseline: Option<Baseline>,
    /// Why there is no baseline, if it was asked for and failed.
    pub baseline_error: Option<String>,
    /// What in this run was modeled rather than real.
    pub modeled: String,
}

/// Bare loopback TCP between threads, the floor under a routed run, measured in the same run
/// ([`crate::bare`]).
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct BareTcp {
    /// Median round trip of [`crate::bare::ROUND_TRIP_BYTES`] between two threads, one at a
    /// time.
    pub round_trip_us: f64,
    /// The same through a relay thread.
    pub relayed_round_trip_us: f64,
    /// What a bare hop adds one way: half the difference of the two round trips.
    pub hop_us: f64,
    /// A stream per client of `brw`-sized writes, direct.
    pub direct: BareStreams,
    /// The same, each through a relay thread of its own.
    pub relayed: BareStreams,
}

/// One test's row, from what its clients measured together and the machine's CPUs meanwhile.
pub(crate) fn report_of(
    test: TestKind,
    layout: Layout,
    measured: &Measured,
    cpu: Option<CpuUse>,
    processes_cpu: Option<ProcessesCpu>,
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
        processes_cpu,
    }
}

/// The transport and the processes in words: `tcp (loopback), one process per node`.
pub(crate) fn transport_text(report: &SelftestReport) -> String {
    format!(
        "{}, {}",
        match report.transport {
            Transport::Mem => "mem",
            Transport::Tcp => "tcp (loopback)",
        },
        if report.processes {
            "one process per node"
        } else {
            "one process"
        }
    )
}

/// The table a person reads.
pub fn render(report: &SelftestReport) -> String {
    let mut out = format!(
        "iopath selftest: {} client(s) → {} server(s) over {}, brw {} bytes, concurrency {}, checksum {}\n",
        report.clients,
        report.servers,
        transport_text(report),
        report.size_bytes,
        report.concurrency,
        report.checksum,
    );
    write_tests(&mut out, report);
    write_latency(&mut out, report);
    write_bare(&mut out, report);
    write_by_process(&mut out, report);
    write_ceilings(&mut out, report);
    out.push_str(&format!("modeled: {}\n", report.modeled));
    out
}

/// A row per test (and the iperf3 baseline's), then each failing test's first error.
fn write_tests(out: &mut String, report: &SelftestReport) {
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
}

/// Routed over direct, and the ping round trips: what a router's hop adds, beside a bare relay's.
fn write_latency(out: &mut String, report: &SelftestReport) {
    if let Some(ratio) = report.routed_ratio {
        out.push_str(&format!("routed / direct = {ratio:.3}\n"));
    }
    if let (Some(d), Some(r), Some(extra)) = (
        report.direct_ping_rtt_us,
        report.routed_ping_rtt_us,
        report.extra_latency_per_hop_us,
    ) {
        out.push_str(&format!("ping round trip, one at a time (medians): direct {d:.1} us, routed {r:.1} us: {extra:.1} us per router hop\n"));
        if let Some(bare) = &report.bare {
            // Noise can put the relayed median under the direct one: said, not hidden.
            let bare_hop = if bare.hop_us >= 0.0 {
                format!("a bare hop adds {:.1} us", bare.hop_us)
            } else {
                format!("a bare hop adds nothing measurable ({:.1} us)", bare.hop_us)
            };
            out.push_str(&format!(
                "bare loopback TCP round trip ({} bytes, threads, blocking sockets, medians): {:.1} us direct, {:.1} us through a relay thread: {bare_hop}; the router's hop adds {:.1} us more\n",
                crate::bare::ROUND_TRIP_BYTES,
                bare.round_trip_us,
                bare.relayed_round_trip_us,
                extra - bare.hop_us
            ));
        }
    }
}

/// The bare loopback streams, direct and relayed, and brw against them.
fn write_bare(out: &mut String, report: &SelftestReport) {
    if let Some(bare) = &report.bare {
        let streams = |s: &BareStreams| {
            format!(
                "{} MiB/s ({}{} core-s/GiB)",
                rate(s.mib_s),
                s.cpu.map_or(String::new(), |c| format!(
                    "{:.2} of {} cores busy, ",
                    c.busy_cores, c.cpus
                )),
                s.core_s_per_gib.map_or("-".into(), |c| format!("{c:.2}"))
            )
        };
        out.push_str(&format!(
            "bare loopback TCP, {} stream(s) of {}-byte writes (plain blocking read and write loops): direct {}; through a relay thread {}\n",
            bare.direct.streams,
            bare.direct.chunk_bytes,
            streams(&bare.direct),
            streams(&bare.relayed)
        ));
        if let (Some(direct), Some(routed)) = (report.direct_bare_ratio, report.routed_bare_ratio) {
            out.push_str(&format!(
                "brw / bare stream: direct {direct:.2}, routed {routed:.2} (the router's hop against a relay that only copies)\n"
            ));
        }
        if let (Some(cpu), Some(relay)) = (
            report.routed_bare_cpu_ratio,
            report.bare_relay_core_s_per_gib,
        ) {
            out.push_str(&format!(
                "core-s/GiB, routed brw over the bare relayed stream: {cpu:.2}; the bare relay alone adds {relay:.2}\n"
            ));
        }
    }
}

/// Core-seconds per GiB by process: clients, routers, servers.
fn write_by_process(out: &mut String, report: &SelftestReport) {
    let split: Vec<&TestReport> = report
        .tests
        .iter()
        .filter(|t| t.processes_cpu.and_then(|p| p.core_s_per_gib).is_some())
        .collect();
    if !split.is_empty() {
        out.push_str("core-s/GiB by process (user + system time of each node process):\n");
        let mut table = Table::new(&["test", "layout", "clients", "routers", "servers", "other"]);
        for test in split {
            let Some(per_gib) = test.processes_cpu.and_then(|p| p.core_s_per_gib) else {
                continue;
            };
            let routed = test.layout == "routed";
            table.row(vec![
                test.test.clone(),
                test.layout.clone(),
                format!("{:.2}", per_gib.clients),
                if routed {
                    format!("{:.2}", per_gib.routers)
                } else {
                    "-".into()
                },
                format!("{:.2}", per_gib.servers),
                format!("{:.2}", per_gib.other),
            ]);
        }
        out.push_str(&table.render());
        if let Some(ratio) = report.endpoints_routed_direct_cpu_ratio {
            out.push_str(&format!(
                "clients and servers, core-s/GiB routed over direct: {ratio:.2}\n"
            ));
        }
        if report.routers > 0 && !report.router_checksums {
            out.push_str(
                "the routers did not verify the bulk chunks' checksums (--no-router-checksums)\n",
            );
        }
    }
}

/// The routed run against its CPU ceilings, the routers' memory, and the baseline's ratio.
fn write_ceilings(out: &mut String, report: &SelftestReport) {
    if let (Some(ceiling), Some(ratio), Some(routed)) = (
        report.routed_cpu_ceiling_mib_s,
        report.routed_ceiling_ratio,
        report.routed_mib_s,
    ) {
        out.push_str(&format!(
            "routed brw: {} MiB/s of a CPU ceiling of {} MiB/s (every core busy at the measured core-s/GiB) = {ratio:.2}\n",
            rate(routed),
            rate(ceiling)
        ));
        if let (Some(ceiling), Some(ratio), Some(busy)) = (
            report.routed_relay_ceiling_mib_s,
            report.routed_relay_ceiling_ratio,
            report.bare.and_then(|b| b.relayed.cpu),
        ) {
            out.push_str(&format!(
                "            of {} MiB/s with as many cores busy as the bare relay kept ({:.2} of {}) = {ratio:.2}\n",
                rate(ceiling),
                busy.busy_cores,
                busy.cpus
            ));
        }
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
}
