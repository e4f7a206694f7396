//! A selftest sweep as a plot (`iopath selftest --sizes ... --svg FILE`): bulk bandwidth by
//! RPC size, one line per bulk test and layout, the baseline as a rule.

use iopath_plot::{Axis, Figure, Rule, Series};

use crate::report::{rate, size_text};

use super::report::transport_text;
use super::sweep::SweepReport;

/// The figure: for each `brw` test and layout (`brw write (direct)`, `brw write (routed)`),
/// its MiB/s at each size, on a log scale of sizes ticked at the sizes measured; the iperf3
/// baseline, measured once before the sweep, as a rule. `ping` moves no bulk data and is left
/// out. Only figures the sweep measured.
pub fn figure(report: &SweepReport) -> Figure {
    let mut series: Vec<Series> = Vec::new();
    for run in &report.runs {
        for test in run.tests.iter().filter(|t| t.test.starts_with("brw")) {
            let name = format!("{} ({})", test.test, test.layout);
            let point = (run.size_bytes as f64, test.mib_s);
            match series.iter_mut().find(|s| s.name == name) {
                Some(s) => s.points.push(point),
                None => series.push(Series::line(name, [point])),
            }
        }
    }
    for s in &mut series {
        s.points.sort_by(|a, b| a.0.total_cmp(&b.0));
    }
    let first = report.runs.first();
    let rules = first
        .and_then(|r| r.baseline.as_ref())
        .map(|b| {
            Rule::at_y(
                format!(
                    "baseline: iperf3 on loopback TCP, measured before the sweep: {} MiB/s",
                    rate(b.mib_s)
                ),
                b.mib_s,
            )
        })
        .into_iter()
        .collect();
    let ran_ping = report
        .runs
        .iter()
        .any(|r| r.tests.iter().any(|t| t.test == "ping"));
    let mut sizes = report.sizes_bytes.clone();
    sizes.sort_unstable();
    Figure {
        title: match first {
            Some(r) => format!(
                "selftest: bulk bandwidth by RPC size, {} client(s) to {} server(s)",
                r.clients, r.servers
            ),
            None => "selftest: bulk bandwidth by RPC size".to_owned(),
        },
        x: Axis::log("bytes per brw RPC (log scale)")
            .ticks_at(sizes.iter().map(|&s| (s as f64, size_text(s))).collect()),
        y: Axis::from_zero("bulk bandwidth (MiB/s)"),
        y2: None,
        series,
        rules,
        footnote: format!(
            "Each point is one test at that size: the bulk bytes every client moved over the \
             longest client's time{}.{} Modeled: {}.",
            first.map_or(String::new(), |r| format!(
                "; over {}, {} RPC(s) in flight per client, checksum {}",
                transport_text(r),
                r.concurrency,
                r.checksum
            )),
            if ran_ping {
                " ping moves no bulk data and is not drawn."
            } else {
                ""
            },
            report.modeled
        ),
    }
}

#[cfg(test)]
mod tests {
    use iopath_plot::check::Drawing;

    use super::*;
    use crate::baseline::Baseline;
    use crate::selftest::config::Transport;
    use crate::selftest::report::{SelftestReport, TestReport};

    fn test(test: &str, layout: &str, mib_s: f64) -> TestReport {
        TestReport {
            test: test.into(),
            layout: layout.into(),
            rpcs: 10,
            bytes: if test == "ping" { 0 } else { 1 << 20 },
            elapsed_s: 1.0,
            mib_s,
            rpc_s: 10.0,
            errors: 0,
            first_error: None,
            cpu: None,
            core_s_per_gib: None,
            processes_cpu: None,
        }
    }

    /// A run as `measure` reports it, from made-up figures (no nodes start here).
    fn run(size_bytes: u64, tests: Vec<TestReport>, baseline_mib_s: Option<f64>) -> SelftestReport {
        SelftestReport {
            transport: Transport::Tcp,
            processes: false,
            clients: 1,
            servers: 1,
            size_bytes,
            concurrency: 8,
            checksum: "crc32".into(),
            tests,
            bulk_mib_s: None,
            ping_rpc_s: None,
            baseline_mib_s,
            ratio: None,
            baseline_ratio: None,
            routers: 0,
            direct_mib_s: None,
            routed_mib_s: None,
            routed_ratio: None,
            direct_ping_rtt_us: None,
            routed_ping_rtt_us: None,
            extra_latency_per_hop_us: None,
            router_peak_rss_mib: Vec::new(),
            routed_cpu_ceiling_mib_s: None,
            routed_ceiling_ratio: None,
            routed_relay_ceiling_mib_s: None,
            routed_relay_ceiling_ratio: None,
            routed_bare_ratio: None,
            direct_bare_ratio: None,
            routed_bare_cpu_ratio: None,
            bare_relay_core_s_per_gib: None,
            endpoints_routed_direct_cpu_ratio: None,
            router_checksums: true,
            bare: None,
            baseline: baseline_mib_s.map(|mib_s| Baseline {
                version: "iperf 3.12".into(),
                command: "iperf3 -c 127.0.0.1".into(),
                mib_s,
            }),
            baseline_error: None,
            modeled: "nothing: real bytes, real checksums, real loopback TCP sockets".into(),
        }
    }

    fn read_well(figure: &Figure) -> Drawing {
        Drawing::read_clean(&figure.svg()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn a_line_per_bulk_test_and_layout_with_a_point_per_size() {
        let sizes = [1 << 20, 4 << 10, 64 << 10];
        let runs = sizes
            .iter()
            .zip([900.0, 80.0, 500.0])
            .map(|(&size, mib_s)| {
                run(
                    size,
                    vec![
                        test("brw write", "direct", mib_s),
                        test("brw write", "routed", mib_s * 0.8),
                        test("ping", "direct", 0.0),
                    ],
                    Some(2000.0),
                )
            })
            .collect();
        let report = SweepReport {
            sizes_bytes: sizes.to_vec(),
            runs,
            modeled: "nothing: real bytes, real checksums, real loopback TCP sockets".into(),
        };
        let drawing = read_well(&figure(&report));
        let names: Vec<&str> = drawing.series.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["brw write (direct)", "brw write (routed)"]);
        for s in &drawing.series {
            assert_eq!(s.points.len(), sizes.len(), "{}", s.name);
            // Sizes drawn left to right, and the larger sizes' higher rates drawn higher.
            assert!(
                s.points
                    .windows(2)
                    .all(|w| w[0].0 < w[1].0 && w[0].1 > w[1].1)
            );
        }
        let ticks = drawing.texts_of("tick");
        for size in ["4 KiB", "64 KiB", "1 MiB"] {
            assert!(ticks.contains(&size), "{ticks:?}");
        }
        let legend = drawing.texts_of("legend-label").join("\n");
        assert!(legend.contains("iperf3 on loopback TCP, measured before the sweep: 2000 MiB/s"));
        let footnote = drawing.texts_of("footnote").join(" ");
        assert!(
            footnote.contains("Modeled: nothing: real bytes"),
            "{footnote}"
        );
        assert!(footnote.contains("ping moves no bulk data"), "{footnote}");
        assert!(
            footnote.contains("over tcp (loopback), one process"),
            "{footnote}"
        );
    }

    #[test]
    fn without_a_baseline_there_is_no_rule() {
        let report = SweepReport {
            sizes_bytes: vec![4096, 8192],
            runs: vec![
                run(4096, vec![test("brw read", "direct", 10.0)], None),
                run(8192, vec![test("brw read", "direct", 20.0)], None),
            ],
            modeled: "nothing".into(),
        };
        let svg = figure(&report).svg();
        let drawing = read_well(&figure(&report));
        assert_eq!(drawing.series.len(), 1);
        assert_eq!(drawing.series[0].points.len(), 2);
        assert!(!svg.contains(r#"class="rule""#));
        assert!(!svg.contains("ping"), "no ping ran, so none is mentioned");
    }
}
