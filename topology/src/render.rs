//! The topology model in words: the tables, CSV and plot files of `iopath topo`, as pure
//! functions of what the model computed. Which machine, which output and where it goes are the
//! command line's business; what each output says is decided here.

use std::fmt::Write as _;

use iopath_plot::{Axis, Figure, Rule, Series};

use crate::coord::Coord;
use crate::placement::PlacementKind;
use crate::presets::jaguar::DIRECT_OSS;
use crate::presets::{JaguarSpider, TitanSpider2};
use crate::route::Route;
use crate::study::{AnalyzeReport, Scenario};

/// A CSV table: `header`, then a record per row, each field quoted where it must be (a
/// comma, a quote, a line break in it), by the `csv` crate.
fn csv_table(header: &[&str], rows: impl IntoIterator<Item = Vec<String>>) -> String {
    let mut writer = csv::Writer::from_writer(Vec::new());
    // Writing into memory fails only on a record of the wrong length, which the callers'
    // fixed rows never are.
    let _ = writer.write_record(header);
    for row in rows {
        let _ = writer.write_record(&row);
    }
    let bytes = writer.into_inner().unwrap_or_default();
    String::from_utf8(bytes).unwrap_or_default()
}

/// `analyze` as CSV: one line per placement scenario.
pub fn analyze_csv(report: &AnalyzeReport) -> String {
    csv_table(
        &[
            "scenario",
            "pairs",
            "max_pairs_per_link",
            "used_links",
            "saturated_links",
            "saturated_share",
            "initial_aggregate_mb_per_s",
            "ior_aggregate_mb_per_s",
            "share_of_raw",
            "first_s",
            "median_s",
            "last_s",
            "spread_s",
        ],
        report.scenarios.iter().map(|c| {
            vec![
                c.name.to_string(),
                c.pairs.to_string(),
                c.max_pairs_per_link.to_string(),
                c.used_links.to_string(),
                c.saturated_links.to_string(),
                format!("{:.4}", c.saturated_share),
                format!("{:.1}", c.initial_aggregate_mb_per_s),
                format!("{:.1}", c.ior_aggregate_mb_per_s),
                format!("{:.4}", c.share_of_raw),
                format!("{:.3}", c.completion.min_s),
                format!("{:.3}", c.completion.median_s),
                format!("{:.3}", c.completion.max_s),
                format!("{:.3}", c.completion.spread_s()),
            ]
        }),
    )
}

/// `analyze` as the table a person reads, with the paper's figures beside the model's;
/// `dims` is the torus in words ([`crate::study::dims_text`]).
pub fn analyze_table(r: &AnalyzeReport, dims: &str) -> String {
    let mut s = String::new();
    write_scenarios(&mut s, r, dims);
    write_runs(&mut s, r);
    write_confined(&mut s, r);
    write_routed(&mut s, r);
    s
}

/// The machine, the saturation point, and a row per placement scenario, beside the paper's.
fn write_scenarios(s: &mut String, r: &AnalyzeReport, dims: &str) {
    let o = &r.options;
    let _ = writeln!(
        s,
        "jaguar-spider: {dims} torus, {} writers on the OSTs of {} direct-attached OSSes, {} MB each",
        r.scenarios.first().map_or(0, |c| c.pairs),
        o.oss_count,
        o.data_per_writer_mb
    );
    let _ = writeln!(
        s,
        "saturation: {} MB/s per link / {} MB/s per OST = {} pairs per link (paper: 17)\n",
        r.saturation.link_bandwidth_mb_per_s,
        r.saturation.per_pair_rate_mb_per_s,
        r.pairs_at_saturation
    );
    let _ = writeln!(
        s,
        "{:<9} {:>9} {:>10} {:>9} {:>9} {:>11} {:>11} {:>7} {:>7} {:>7} {:>7} {:>7}",
        "placement",
        "max pairs",
        "used links",
        "saturated",
        "sat share",
        "start MB/s",
        "IOR MB/s",
        "of raw",
        "first s",
        "median",
        "last s",
        "spread"
    );
    for c in &r.scenarios {
        let _ = writeln!(
            s,
            "{:<9} {:>9.0} {:>10} {:>9} {:>8.1}% {:>11.0} {:>11.0} {:>6.1}% {:>7.2} {:>7.2} {:>7.2} {:>7.2}",
            c.name,
            c.max_pairs_per_link,
            c.used_links,
            c.saturated_links,
            100.0 * c.saturated_share,
            c.initial_aggregate_mb_per_s,
            c.ior_aggregate_mb_per_s,
            100.0 * c.share_of_raw,
            c.completion.min_s,
            c.completion.median_s,
            c.completion.max_s,
            c.completion.spread_s()
        );
    }
    let _ = writeln!(
        s,
        "raw back end: {:.0} MB/s (paper's XDD: 120 GB/s)",
        r.raw_mb_per_s
    );
    let _ = writeln!(
        s,
        "paper: default 61-86% of raw, placed 87-92%; placed never above 7 pairs per link; spread ~15.5 s default vs < 5 s placed\n"
    );
}

/// The runs study: how often the busiest link passes each threshold, in launcher order and on
/// a busy machine, beside §4's shares.
fn write_runs(s: &mut String, r: &AnalyzeReport) {
    let runs = r.runs.max_pairs.len();
    let _ = writeln!(
        s,
        "runs study: {runs} default-placement runs (OSS counts {:?} x {} job positions)",
        r.runs.oss_counts,
        r.runs.offsets.len()
    );
    let paper = [70.0, 42.0, 21.0, 3.0];
    for ((t, share), p) in r.runs.share_over.iter().zip(paper) {
        let _ = writeln!(
            s,
            "  busiest link over {t:>2} pairs: {:>5.1}% of runs (paper: {p}%)",
            100.0 * share
        );
    }
    if !r.runs.busy.is_empty() {
        let _ = writeln!(
            s,
            "on a busy machine (the job given the free nodes between other jobs', in launcher order; occupancy assumed, the paper gives none), {} draws per OSS count:",
            r.runs.busy[0].draws
        );
        let thresholds: Vec<String> = r
            .runs
            .share_over
            .iter()
            .map(|(t, _)| format!("over {t}"))
            .collect();
        let _ = writeln!(
            s,
            "  {:<26} {:>8} {:>8} {:>8} {:>8} {:>9}",
            "busy, mean free run",
            thresholds[0],
            thresholds[1],
            thresholds[2],
            thresholds[3],
            "busiest"
        );
        let _ = writeln!(
            s,
            "  {:<26} {:>7.0}% {:>7.0}% {:>7.0}% {:>7.0}% {:>9}",
            "paper (Jaguar in service)", paper[0], paper[1], paper[2], paper[3], "-"
        );
        for b in &r.runs.busy {
            let shares: Vec<f64> = b.share_over.iter().map(|(_, v)| 100.0 * v).collect();
            let _ = writeln!(
                s,
                "  {:<26} {:>7.0}% {:>7.0}% {:>7.0}% {:>7.0}% {:>9.0}",
                format!(
                    "{:.0}%, {:.0} nodes",
                    100.0 * b.machine.busy_share,
                    b.machine.free_run_nodes
                ),
                shares[0],
                shares[1],
                shares[2],
                shares[3],
                b.max_pairs
            );
        }
    }
}

/// Jobs confined to their own nodes: launcher order against placed within them.
fn write_confined(s: &mut String, r: &AnalyzeReport) {
    if !r.confined.is_empty() {
        let _ = writeln!(
            s,
            "\nconfined: the job's own nodes, launcher order vs placed within them (paper: +38% to +58%)"
        );
        let _ = writeln!(
            s,
            "{:>7} {:>12} {:>12} {:>7} {:>10} {:>10}",
            "offset", "default MB/s", "placed MB/s", "gain", "max pairs", "placed max"
        );
        for c in &r.confined {
            let _ = writeln!(
                s,
                "{:>7} {:>12.0} {:>12.0} {:>6.1}% {:>10.0} {:>10.0}",
                c.offset,
                c.default_mb_per_s,
                c.confined_mb_per_s,
                100.0 * (c.confined_mb_per_s / c.default_mb_per_s - 1.0),
                c.default_max_pairs,
                c.confined_max_pairs
            );
        }
    }
}

/// The routed configurations, beside Fig. 10's writes.
fn write_routed(s: &mut String, r: &AnalyzeReport) {
    if !r.routed.is_empty() {
        let _ = writeln!(
            s,
            "\nrouted (8000 MB per writer; paper's writes: baseline 47.6 GB/s, round-robin 48.1 / 83 placed, projection 92 / 113 placed)"
        );
        let _ = writeln!(
            s,
            "{:<18} {:<14} {:>12} {:>12} {:>10}",
            "config", "placement", "steady MB/s", "IOR MB/s", "max pairs"
        );
        for row in &r.routed {
            let _ = writeln!(
                s,
                "{:<18} {:<14} {:>12.0} {:>12.0} {:>10.1}",
                row.config.name(),
                format!("{:?}", row.placement),
                row.aggregate_mb_per_s,
                row.ior_aggregate_mb_per_s,
                row.max_pairs_per_link
            );
        }
    }
}

/// The plots of an `analyze` run and their data, as `(file name, contents)`: the link-load
/// histogram and the completion-time CDF, as SVG and as CSV.
pub fn plot_files(report: &AnalyzeReport) -> [(&'static str, String); 4] {
    let hist_csv = csv_table(
        &["scenario", "pairs_per_link", "links"],
        report.scenarios.iter().flat_map(|s| {
            s.histogram
                .iter()
                .map(|b| vec![s.name.to_string(), b.pairs.to_string(), b.links.to_string()])
        }),
    );
    let cdf_csv = csv_table(
        &["scenario", "writer", "completion_s"],
        report.scenarios.iter().flat_map(|s| {
            s.completion_times_s
                .iter()
                .enumerate()
                .map(|(i, t)| vec![s.name.to_string(), i.to_string(), format!("{t:.6}")])
        }),
    );
    [
        ("link_histogram.svg", link_histogram(report).svg()),
        ("completion_cdf.svg", completion_cdf(report).svg()),
        ("link_histogram.csv", hist_csv),
        ("completion_times.csv", cdf_csv),
    ]
}

/// The link-load histogram: for each placement, how many torus links carry each number of
/// client–OST pairs, on a log scale (counts run from one to thousands, and the few saturated
/// links are the point), with the saturation point as a rule.
pub fn link_histogram(report: &AnalyzeReport) -> Figure {
    let saturation = report.pairs_at_saturation;
    Figure {
        title: format!(
            "Client-OST pairs per torus link, jaguar-spider ({})",
            setup(report)
        ),
        x: Axis::around_data("client-OST pairs crossing the link"),
        y: Axis::log("torus links (count, log scale)"),
        y2: None,
        series: report
            .scenarios
            .iter()
            .map(|s| {
                Series::bars(
                    placement_name(s),
                    s.histogram
                        .iter()
                        .map(|b| (f64::from(b.pairs), b.links as f64)),
                )
            })
            .collect(),
        rules: vec![Rule::at_x(
            format!(
                "saturation point: {saturation} pairs per link ({} / {} MB/s); links right of it are oversubscribed",
                report.saturation.link_bandwidth_mb_per_s, report.saturation.per_pair_rate_mb_per_s
            ),
            f64::from(saturation) + 0.5,
        )],
        footnote: modeled(report),
    }
}

/// The completion-time CDF: for each placement, the share of writers done by each time.
pub fn completion_cdf(report: &AnalyzeReport) -> Figure {
    Figure {
        title: format!(
            "Per-writer completion time, jaguar-spider ({})",
            setup(report)
        ),
        x: Axis::around_data("completion time (s)"),
        // A little beyond 0 and 1, so the curves' flat ends do not lie on the frame.
        y: Axis::from_zero("fraction of writers done").fixed(-0.03, 1.05),
        y2: None,
        series: report
            .scenarios
            .iter()
            .map(|s| {
                Series::cdf(
                    format!(
                        "{}: first {:.1} s, last {:.1} s",
                        placement_name(s),
                        s.completion.min_s,
                        s.completion.max_s
                    ),
                    &s.completion_times_s,
                )
            })
            .collect(),
        rules: vec![],
        footnote: modeled(report),
    }
}

/// A scenario's name with what its placement is.
fn placement_name(s: &Scenario) -> String {
    match s.placement {
        PlacementKind::LauncherOrder => format!("{} (launcher order)", s.name),
        PlacementKind::Placed => format!("{} (nearest free clients per OSS)", s.name),
        PlacementKind::Confined => format!("{} (placed within the job's nodes)", s.name),
    }
}

/// The run in a few words: writers, OSSes, MB each.
fn setup(report: &AnalyzeReport) -> String {
    format!(
        "{} writers, {} OSSes, {} MB each",
        report.scenarios.first().map_or(0, |c| c.pairs),
        report.options.oss_count,
        report.options.data_per_writer_mb
    )
}

/// What the plots' figures are: all modeled, none measured ("modeled is labeled").
fn modeled(report: &AnalyzeReport) -> String {
    format!(
        "Modeled, not measured: every figure here is computed by iopath's topology model of \
         jaguar-spider (dimension-order routes on the torus, the flow model's locally fair \
         arbitration), with the Spider paper's {} MB/s per torus link and {} MB/s per OST.",
        report.saturation.link_bandwidth_mb_per_s, report.saturation.per_pair_rate_mb_per_s
    )
}

/// Routes as CSV.
pub fn routes_csv(routes: &[Route]) -> String {
    csv_table(
        &[
            "net",
            "gateway",
            "hops",
            "router",
            "gateway_coord",
            "torus_hops",
        ],
        routes.iter().map(|r| {
            vec![
                r.net.to_string(),
                r.gateway.to_string(),
                r.hops.to_string(),
                r.router.to_string(),
                r.gateway_coord.to_string(),
                r.torus_hops.to_string(),
            ]
        }),
    )
}

/// Routes as the `lnetctl route add` commands that configure them.
pub fn routes_lnetctl(routes: &[Route]) -> String {
    routes
        .iter()
        .map(|r| format!("{}\n", r.lnetctl()))
        .collect()
}

/// Routes as the table a person reads: `client`'s routes on machine `preset`.
pub fn routes_table(routes: &[Route], client: Coord, preset: &str) -> String {
    let mut s = format!(
        "{} routes for client {client} on {}\n",
        routes.len(),
        preset
    );
    let _ = writeln!(
        s,
        "{:<9} {:<14} {:>4} {:<10} {:<10} {:>10}",
        "net", "gateway", "hop", "router", "at", "torus hops"
    );
    for r in routes {
        let _ = writeln!(
            s,
            "{:<9} {:<14} {:>4} {:<10} {:<10} {:>10}",
            r.net,
            r.gateway,
            r.hops,
            r.router,
            r.gateway_coord.to_string(),
            r.torus_hops
        );
    }
    s
}

/// Titan's routers as CSV: each with its module's group, sub-group and index.
pub fn titan_layout_csv(titan: &TitanSpider2) -> String {
    csv_table(
        &[
            "router",
            "nid",
            "x",
            "y",
            "z",
            "group",
            "sub_group",
            "index",
            "node",
            "switch",
            "net",
        ],
        titan.layout.routers.iter().map(|r| {
            let m = &titan.layout.modules[r.module];
            vec![
                r.name.to_string(),
                r.nid.to_string(),
                r.coord.x.to_string(),
                r.coord.y.to_string(),
                r.coord.z.to_string(),
                m.group.to_string(),
                m.sub_group.to_string(),
                m.index.to_string(),
                r.node.to_string(),
                r.switch.name().to_string(),
                r.switch.net().to_string(),
            ]
        }),
    )
}

/// Titan's router modules by cabinet, as the Titan paper's Figure 3 draws them, and the
/// modules one per line.
pub fn titan_layout_map(titan: &TitanSpider2) -> String {
    let mut grid = vec![vec![String::new(); 25]; 8];
    for m in &titan.layout.modules {
        grid[usize::from(m.cabinet_row)][usize::from(m.cabinet_column)].push(m.group);
    }
    let mut s = String::from(
        "Titan router modules by cabinet (rows = Y/2, columns = X), as in the Titan paper's Figure 3\n",
    );
    for (row, cells) in grid.iter().enumerate() {
        let _ = write!(s, "{row:>2} ");
        for cell in cells {
            let mut letters: Vec<char> = cell.chars().collect();
            letters.sort_unstable();
            let text: String = letters.into_iter().collect();
            let _ = write!(
                s,
                "{:>3}",
                if text.is_empty() {
                    ".".to_string()
                } else {
                    text
                }
            );
        }
        s.push('\n');
    }
    let _ = write!(s, "   ");
    for c in 0..25 {
        let _ = write!(s, "{c:>3}");
    }
    s.push('\n');
    let _ = writeln!(
        s,
        "\n{:<6} {:<9} {:<8} {:<10} {:<10} routers (node 0..3 -> row 1,3,2,4)",
        "module", "sub-group", "gni", "gemini 0", "gemini 1"
    );
    for m in &titan.layout.modules {
        let mi = titan
            .layout
            .module_index(m.group, m.sub_group, m.index)
            .unwrap_or(0);
        let names: Vec<&str> = titan.layout.routers[mi * 4..mi * 4 + 4]
            .iter()
            .map(|r| r.name.as_str())
            .collect();
        let _ = writeln!(
            s,
            "{}{:<5} {:<9} {:<8} {:<10} {:<10} {}",
            m.group,
            m.index + 1,
            m.sub_group + 1,
            m.gni_net(),
            m.geminis[0].to_string(),
            m.geminis[1].to_string(),
            names.join(" ")
        );
    }
    s
}

/// Jaguar's SIO nodes (routers) as CSV.
pub fn jaguar_layout_csv(jaguar: &JaguarSpider) -> String {
    csv_table(
        &["router", "nid", "x", "y", "z", "leaf", "direct_oss"],
        jaguar.fabric.routers.iter().enumerate().map(|(i, r)| {
            vec![
                r.name.to_string(),
                r.nid.to_string(),
                r.coord.x.to_string(),
                r.coord.y.to_string(),
                r.coord.z.to_string(),
                r.leaf.to_string(),
                (i < DIRECT_OSS).to_string(),
            ]
        }),
    )
}

/// Jaguar's SIO nodes per cabinet, on iopath's assumed lattice, and the routers one per line.
pub fn jaguar_layout_map(jaguar: &JaguarSpider) -> String {
    let mut s = String::new();
    s.push_str(
        "Jaguar SIO nodes per cabinet (rows = Y/4, columns = X); iopath's assumed lattice\n",
    );
    let mut grid = vec![vec![0u32; 25]; 8];
    for r in &jaguar.fabric.routers {
        grid[(r.coord.y / 4) as usize][r.coord.x as usize] += 1;
    }
    for (row, cells) in grid.iter().enumerate() {
        let _ = write!(s, "{row:>2} ");
        for &n in cells {
            let _ = write!(
                s,
                "{:>3}",
                if n == 0 {
                    ".".to_string()
                } else {
                    n.to_string()
                }
            );
        }
        s.push('\n');
    }
    let _ = writeln!(s, "\n{:<7} {:<10} {:>5}  role", "router", "at", "leaf");
    for (i, r) in jaguar.fabric.routers.iter().enumerate() {
        let role = if i < DIRECT_OSS {
            "router; OSS when direct-attached"
        } else {
            "router"
        };
        let _ = writeln!(
            s,
            "{:<7} {:<10} {:>5}  {role}",
            r.name,
            r.coord.to_string(),
            r.leaf
        );
    }
    s
}
