//! `iopath topo`: the topology model on the command line.
//!
//! - `analyze`: link loads, saturation share, predicted bandwidth and completion times for
//!   default vs placed writers on the Jaguar preset, plus the runs, confined and (with
//!   `--routed`) routed studies; `--out-dir` writes the histogram and CDF as SVG and CSV.
//! - `routes`: one client's LNET routes (Titan FGR, or a Spider configuration on Jaguar).
//! - `layout`: the router map (Titan's Figure 3, Jaguar's SIO lattice).
//!
//! Tables for people by default; `--json` or `--csv` for machines. What each output says is
//! the topology crate's (`iopath_topology::render`); here, the flags and which output goes
//! where.

use std::io::Write;
use std::path::PathBuf;

use anyhow::{Context, bail};
use iopath_topology::coord::Coord;
use iopath_topology::presets::{JaguarSpider, PresetName, TitanSpider2};
use iopath_topology::render;
use iopath_topology::route::Route;
use iopath_topology::spider_routing::{SpiderRouting, SpiderRoutingConfig};
use iopath_topology::study::{self, AnalyzeOptions, AnalyzeReport};
use serde::Serialize;

/// The `topo` subcommands.
#[derive(clap::Subcommand, Debug)]
pub enum TopoCommand {
    /// Link loads, saturation, predicted bandwidth and completion times, default vs placed.
    Analyze(AnalyzeArgs),
    /// One client's LNET routes.
    Routes(RoutesArgs),
    /// The router map.
    Layout(LayoutArgs),
}

/// How to print.
#[derive(clap::Args, Debug, Clone, Copy)]
pub struct OutputArgs {
    /// Print JSON.
    #[arg(long, conflicts_with = "csv")]
    pub json: bool,
    /// Print CSV.
    #[arg(long)]
    pub csv: bool,
}

/// Arguments of `topo analyze`.
#[derive(clap::Args, Debug)]
pub struct AnalyzeArgs {
    /// The machine (only jaguar-spider has the Spider paper's experiments).
    #[arg(long, default_value = "jaguar-spider")]
    pub preset: String,
    /// OSSes in the test, 1–96 (7 OSTs each).
    #[arg(long, default_value_t = 96)]
    pub oss: usize,
    /// MB each writer writes.
    #[arg(long, default_value_t = 3000.0)]
    pub data_mb: f64,
    /// Where the default job starts in launcher order.
    #[arg(long, default_value_t = 0)]
    pub offset: usize,
    /// Job positions in the runs study.
    #[arg(long, default_value_t = 16)]
    pub runs: usize,
    /// Job positions in the confined study.
    #[arg(long, default_value_t = 4)]
    pub confined: usize,
    /// Also model the routed LNET configurations (slower).
    #[arg(long)]
    pub routed: bool,
    /// Scattered allocations drawn per OSS count for each busy-machine occupancy of the runs
    /// study (a job given the free nodes between other jobs').
    #[arg(long, default_value_t = 8)]
    pub busy_draws: usize,
    /// Write the plots here, with their data as CSV: link_histogram.svg (links per pair count,
    /// log scale, with the saturation point) and completion_cdf.svg (the share of writers done
    /// by each time), each footnoted as modeled.
    #[arg(long)]
    pub out_dir: Option<PathBuf>,
    /// Output format.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Arguments of `topo routes`.
#[derive(clap::Args, Debug)]
pub struct RoutesArgs {
    /// The machine.
    #[arg(long, default_value = "titan-spider2")]
    pub preset: String,
    /// The client's torus coordinate, `X,Y,Z`.
    #[arg(long)]
    pub client: String,
    /// Spider routing configuration on jaguar-spider: baseline, nearest-neighbour,
    /// leaf-round-robin, projection.
    #[arg(long, default_value = "projection")]
    pub config: String,
    /// Print `lnetctl route add` commands.
    #[arg(long, conflicts_with_all = ["json", "csv"])]
    pub lnetctl: bool,
    /// Output format.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Arguments of `topo layout`.
#[derive(clap::Args, Debug)]
pub struct LayoutArgs {
    /// The machine.
    #[arg(long, default_value = "titan-spider2")]
    pub preset: String,
    /// Output format.
    #[command(flatten)]
    pub output: OutputArgs,
}

/// Runs a `topo` command, printing to stdout.
pub fn run(cmd: TopoCommand) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut out = stdout.lock();
    run_to(cmd, &mut out)
}

/// Runs a `topo` command, printing to `out`.
pub fn run_to(cmd: TopoCommand, out: &mut dyn Write) -> anyhow::Result<()> {
    let text = match cmd {
        TopoCommand::Analyze(args) => analyze(&args)?,
        TopoCommand::Routes(args) => routes(&args)?,
        TopoCommand::Layout(args) => layout(&args)?,
    };
    out.write_all(text.as_bytes()).context("write output")?;
    Ok(())
}

fn preset(name: &str) -> anyhow::Result<PresetName> {
    name.parse::<PresetName>().context("choose the preset")
}

fn json<T: Serialize>(value: &T) -> anyhow::Result<String> {
    let mut text = serde_json::to_string_pretty(value).context("encode JSON")?;
    text.push('\n');
    Ok(text)
}

fn analyze(args: &AnalyzeArgs) -> anyhow::Result<String> {
    if preset(&args.preset)? != PresetName::JaguarSpider {
        bail!(
            "analyze models the Spider paper's experiments, which ran on jaguar-spider; for titan-spider2 use `routes` and `layout`"
        );
    }
    let machine = JaguarSpider::new();
    let options = AnalyzeOptions {
        oss_count: args.oss,
        data_per_writer_mb: args.data_mb,
        job_offset: args.offset,
        run_offsets: args.runs,
        confined_offsets: args.confined,
        routed: args.routed,
        busy_draws: args.busy_draws,
    };
    let report = study::analyze(&machine, &options).context("analyze jaguar-spider")?;
    if let Some(dir) = &args.out_dir {
        write_plots(&report, dir)?;
    }
    if args.output.json {
        json(&report)
    } else if args.output.csv {
        Ok(render::analyze_csv(&report))
    } else {
        Ok(render::analyze_table(&report, &study::dims_text(&machine)))
    }
}

fn write_plots(report: &AnalyzeReport, dir: &std::path::Path) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    for (name, text) in render::plot_files(report) {
        let path = dir.join(name);
        std::fs::write(&path, text).with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

fn routes(args: &RoutesArgs) -> anyhow::Result<String> {
    let client: Coord = args.client.parse().context("read --client")?;
    let routes: Vec<Route> = match preset(&args.preset)? {
        PresetName::TitanSpider2 => TitanSpider2::new()
            .routes(client)
            .context("route the client")?,
        PresetName::JaguarSpider => {
            let machine = JaguarSpider::new();
            let config: SpiderRoutingConfig = args.config.parse().context("read --config")?;
            let routing = SpiderRouting::new(
                &machine.torus,
                &machine.fabric,
                config,
                &machine.launcher_order,
            )
            .context("configure routing")?;
            routing.routes(client).context("route the client")?
        }
    };
    if args.output.json {
        json(&routes)
    } else if args.output.csv {
        Ok(render::routes_csv(&routes))
    } else if args.lnetctl {
        Ok(render::routes_lnetctl(&routes))
    } else {
        Ok(render::routes_table(&routes, client, &args.preset))
    }
}

fn layout(args: &LayoutArgs) -> anyhow::Result<String> {
    match preset(&args.preset)? {
        PresetName::TitanSpider2 => {
            let titan = TitanSpider2::new();
            if args.output.json {
                json(&titan.layout)
            } else if args.output.csv {
                Ok(render::titan_layout_csv(&titan))
            } else {
                Ok(render::titan_layout_map(&titan))
            }
        }
        PresetName::JaguarSpider => {
            let machine = JaguarSpider::new();
            if args.output.json {
                json(&machine.fabric)
            } else if args.output.csv {
                Ok(render::jaguar_layout_csv(&machine))
            } else {
                Ok(render::jaguar_layout_map(&machine))
            }
        }
    }
}

#[cfg(test)]
mod tests;
