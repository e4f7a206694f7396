//! The `analyze` experiment on the Jaguar + Spider preset: the Spider paper's tests,
//! recomputed by the model.
//!
//! - **Default vs placed** (§3, §5): 672 writers on 672 OSTs of 96 direct-attached OSSes,
//!   first in launcher order, then by the paper's placement over the whole machine. For each:
//!   pairs per link, the share above the saturation point, and the flow model's bandwidth and
//!   per-writer completion times.
//! - **Runs** (§4): many default-placement runs (OSS counts × where the job lands); the share
//!   of runs whose busiest link carries at least 18, over 34, over 60 and over 70 pairs.
//! - **Confined** (§5, Fig. 8): the job's own 672 nodes, launcher order vs re-paired by the
//!   placement algorithm, at several positions in the machine.
//! - **Routed** (§6–7, Fig. 10): the four LNET configurations with and without placement.

use std::collections::HashMap;

use serde::{Deserialize, Serialize};

use crate::allocation::BusyMachine;
use crate::coord::Coord;
use crate::direction::Axis;
use crate::error::{Result, TopologyError};
use crate::flow_model::{Flow, FlowModel, FlowNetwork};
use crate::link_loads::{HistogramBin, LinkLoads, Saturation};
use crate::placement::{Pair, Placement, PlacementKind, Target};
use crate::presets::JaguarSpider;
use crate::presets::jaguar::{self, DIRECT_OSS, INJECTION_MB_PER_S, OST_MB_PER_S, OSTS_PER_OSS};
use crate::spider_routing::{SpiderRouting, SpiderRoutingConfig};

/// What to analyze.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalyzeOptions {
    /// OSSes in the test (1..=96), 7 OSTs each.
    pub oss_count: usize,
    /// MB each writer writes.
    pub data_per_writer_mb: f64,
    /// Where the default job starts in launcher order.
    pub job_offset: usize,
    /// Job positions in the runs study (spread evenly over the machine).
    pub run_offsets: usize,
    /// Job positions in the confined study.
    pub confined_offsets: usize,
    /// Also model the routed configurations (slower: baseline spreads each writer over 192
    /// routers).
    pub routed: bool,
    /// Allocations drawn per OSS count and occupancy in the runs study's busy machines.
    pub busy_draws: usize,
}

impl Default for AnalyzeOptions {
    fn default() -> Self {
        Self {
            oss_count: DIRECT_OSS,
            data_per_writer_mb: jaguar::DIRECT_DATA_MB,
            job_offset: 0,
            run_offsets: 16,
            confined_offsets: 4,
            routed: false,
            busy_draws: 8,
        }
    }
}

/// Minimum, median and maximum of per-writer completion times.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TimeSummary {
    /// First writer done, s.
    pub min_s: f64,
    /// Median writer done, s.
    pub median_s: f64,
    /// Last writer done, s.
    pub max_s: f64,
}

impl TimeSummary {
    /// Summary of `times` (not empty).
    pub fn of(times: &[f64]) -> Self {
        let mut sorted = times.to_vec();
        sorted.sort_by(f64::total_cmp);
        assert!(!sorted.is_empty());
        Self {
            min_s: sorted[0],
            median_s: sorted[sorted.len() / 2],
            max_s: sorted[sorted.len() - 1],
        }
    }

    /// Last minus first, s.
    pub fn spread_s(&self) -> f64 {
        self.max_s - self.min_s
    }
}

/// One placement of one test, analyzed.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Scenario {
    /// Short name (`default`, `placed`).
    pub name: String,
    /// How the clients were chosen.
    pub placement: PlacementKind,
    /// Client–target pairs.
    pub pairs: usize,
    /// Most pairs on one link.
    pub max_pairs_per_link: f64,
    /// Links carrying any pair.
    pub used_links: usize,
    /// Links above the saturation point.
    pub saturated_links: usize,
    /// `saturated_links / used_links`.
    pub saturated_share: f64,
    /// Used links per pair count.
    pub histogram: Vec<HistogramBin>,
    /// Sum of flow rates with every writer active, MB/s.
    pub initial_aggregate_mb_per_s: f64,
    /// Total data over the time the last writer finishes (what IOR reports), MB/s.
    pub ior_aggregate_mb_per_s: f64,
    /// `ior_aggregate / (targets × OST rate)`: the share of the raw back end.
    pub share_of_raw: f64,
    /// Completion-time summary.
    pub completion: TimeSummary,
    /// Every writer's completion time, s, in pair order.
    pub completion_times_s: Vec<f64>,
    /// Whether every flow-model solve converged.
    pub converged: bool,
}

/// The §4 runs study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunsStudy {
    /// OSS counts tried.
    pub oss_counts: Vec<usize>,
    /// Job offsets tried.
    pub offsets: Vec<usize>,
    /// `(threshold, share of runs whose busiest link carries more than threshold pairs)`,
    /// for 17 (the saturation point: "18 or more"), 34, 60 and 70.
    pub share_over: Vec<(u32, f64)>,
    /// The busiest link's pair count in every run, OSS-count-major.
    pub max_pairs: Vec<f64>,
    /// The same OSS counts with jobs on a machine other jobs share, one row per occupancy
    /// ([`BUSY_MACHINES`]): the job's nodes are the free ones in launcher order, scattered.
    /// Empty when no draws were asked for.
    pub busy: Vec<BusyRuns>,
}

/// The runs study on a busy machine of one occupancy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BusyRuns {
    /// How busy the machine is, and in what runs (assumed, not from the paper).
    pub machine: BusyMachine,
    /// Allocations drawn per OSS count.
    pub draws: usize,
    /// As [`RunsStudy::share_over`].
    pub share_over: Vec<(u32, f64)>,
    /// The busiest link over every run.
    pub max_pairs: f64,
}

/// The occupancies the runs study tries, `(busy share, mean free run in nodes)`: assumed, as
/// the paper says nothing of Jaguar's load during its runs — from half busy in runs of a
/// blade's worth to nine tenths busy in runs of a cabinet's.
pub const BUSY_MACHINES: [(f64, f64); 4] = [(0.5, 8.0), (0.7, 8.0), (0.7, 64.0), (0.9, 16.0)];

/// One position of the confined study.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ConfinedRow {
    /// Where the job starts in launcher order.
    pub offset: usize,
    /// IOR aggregate in launcher order, MB/s.
    pub default_mb_per_s: f64,
    /// IOR aggregate after placement within the job's nodes, MB/s.
    pub confined_mb_per_s: f64,
    /// Busiest link, launcher order.
    pub default_max_pairs: f64,
    /// Busiest link, confined placement.
    pub confined_max_pairs: f64,
}

/// One routed configuration, with or without placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoutedRow {
    /// The LNET configuration.
    pub config: SpiderRoutingConfig,
    /// Launcher order or placed.
    pub placement: PlacementKind,
    /// Steady-state aggregate with every writer active, MB/s: each writer's rate is its
    /// slowest route times its number of routes (per-message round-robin paces a writer by
    /// its slowest router).
    pub aggregate_mb_per_s: f64,
    /// Total data over the time the last writer finishes, MB/s: followed to the end by the
    /// flow model when every writer has one route, else the slowest writer at the starting
    /// rates (a lower bound).
    pub ior_aggregate_mb_per_s: f64,
    /// Most pair-equivalents on one torus link (a writer on k routes adds 1/k per route).
    pub max_pairs_per_link: f64,
}

/// Everything `analyze` computes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AnalyzeReport {
    /// The options used.
    pub options: AnalyzeOptions,
    /// The saturation inputs.
    pub saturation: Saturation,
    /// Pairs per link at saturation.
    pub pairs_at_saturation: u32,
    /// Targets × OST rate, MB/s.
    pub raw_mb_per_s: f64,
    /// Default and placed.
    pub scenarios: Vec<Scenario>,
    /// The runs study.
    pub runs: RunsStudy,
    /// The confined study.
    pub confined: Vec<ConfinedRow>,
    /// The routed study (empty unless asked for).
    pub routed: Vec<RoutedRow>,
}

/// Ports of a torus machine, created on first use.
#[derive(Debug, Default)]
struct Ports {
    network: FlowNetwork,
    index: HashMap<PortKey, usize>,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
enum PortKey {
    Inject(usize),
    Link(usize),
    Eject(usize),
    Ost(u32),
    RouterIb(usize),
    CrossFabric(u32),
}

impl Ports {
    fn port(&mut self, key: PortKey, capacity_mb_per_s: f64) -> Result<usize> {
        if let Some(&p) = self.index.get(&key) {
            return Ok(p);
        }
        let p = self.network.add_port(capacity_mb_per_s)?;
        self.index.insert(key, p);
        Ok(p)
    }

    /// Injection at `from`, the links of the DOR path, ejection at `to`.
    fn torus_path(
        &mut self,
        machine: &JaguarSpider,
        from: Coord,
        to: Coord,
        ports: &mut Vec<usize>,
    ) -> Result<()> {
        let torus = &machine.torus;
        ports.push(self.port(PortKey::Inject(torus.index(from)), INJECTION_MB_PER_S)?);
        for link in torus.dor_path(from, to) {
            let capacity = machine.link_mb_per_s(link.direction.axis());
            ports.push(self.port(PortKey::Link(torus.link_index(link)), capacity)?);
        }
        // Ejection into the destination node: assumed equal to injection (§4 measures only
        // injection).
        ports.push(self.port(PortKey::Eject(torus.index(to)), INJECTION_MB_PER_S)?);
        Ok(())
    }
}

/// Runs the whole `analyze` experiment.
pub fn analyze(machine: &JaguarSpider, options: &AnalyzeOptions) -> Result<AnalyzeReport> {
    if !(options.data_per_writer_mb.is_finite() && options.data_per_writer_mb > 0.0) {
        return Err(TopologyError::NotPositive {
            what: "data per writer",
            value: options.data_per_writer_mb,
        });
    }
    let saturation = machine.saturation();
    let targets = machine.direct_targets(options.oss_count)?;
    let clients = machine.job_nodes(options.job_offset, targets.len())?;

    let default = Placement::launcher_order(clients, &targets)?;
    let placed = Placement::nearest_free(
        &machine.torus,
        &machine.launcher_order,
        &targets,
        PlacementKind::Placed,
    )?;
    let scenarios = vec![
        direct_scenario(machine, "default", &default, options.data_per_writer_mb)?,
        direct_scenario(machine, "placed", &placed, options.data_per_writer_mb)?,
    ];

    let runs = runs_study(
        machine,
        &saturation,
        options.run_offsets,
        options.busy_draws,
    )?;
    let confined = confined_study(machine, options)?;
    let routed = if options.routed {
        routed_study(machine, options)?
    } else {
        Vec::new()
    };
    Ok(AnalyzeReport {
        options: options.clone(),
        saturation,
        pairs_at_saturation: saturation.pairs_at_saturation(),
        raw_mb_per_s: targets.len() as f64 * OST_MB_PER_S,
        scenarios,
        runs,
        confined,
        routed,
    })
}

/// Loads and flow model of a direct-attached placement.
pub fn direct_scenario(
    machine: &JaguarSpider,
    name: &str,
    placement: &Placement,
    data_mb: f64,
) -> Result<Scenario> {
    let saturation = machine.saturation();
    let loads = pair_loads(machine, &placement.pairs);
    let model = direct_flows(machine, &placement.pairs)?;
    let data = vec![data_mb; placement.pairs.len()];
    let completion = model.completion(&data)?;
    let total_mb = data_mb * placement.pairs.len() as f64;
    let ior = total_mb / completion.makespan_s();
    Ok(Scenario {
        name: name.to_string(),
        placement: placement.kind,
        pairs: placement.pairs.len(),
        max_pairs_per_link: loads.max_pairs(),
        used_links: loads.used_links(),
        saturated_links: loads.saturated_links(&saturation),
        saturated_share: loads.saturated_share(&saturation),
        histogram: loads.histogram(),
        initial_aggregate_mb_per_s: completion.initial.aggregate_mb_per_s(),
        ior_aggregate_mb_per_s: ior,
        share_of_raw: ior / (placement.pairs.len() as f64 * OST_MB_PER_S),
        completion: TimeSummary::of(&completion.times_s),
        completion_times_s: completion.times_s.clone(),
        converged: completion.converged,
    })
}

fn pair_loads(machine: &JaguarSpider, pairs: &[Pair]) -> LinkLoads {
    let mut loads = LinkLoads::new(&machine.torus);
    for pair in pairs {
        loads.add_route(&machine.torus, pair.client, pair.target.anchor, 1.0);
    }
    loads
}

/// Flows of direct-attached pairs: client injection, torus links, OSS ejection, the OST.
fn direct_flows(machine: &JaguarSpider, pairs: &[Pair]) -> Result<FlowModel> {
    let mut ports = Ports::default();
    let mut flows = Vec::with_capacity(pairs.len());
    for pair in pairs {
        let mut path = Vec::new();
        ports.torus_path(machine, pair.client, pair.target.anchor, &mut path)?;
        path.push(ports.port(PortKey::Ost(pair.target.index), OST_MB_PER_S)?);
        flows.push(Flow {
            ports: path,
            demand_mb_per_s: OST_MB_PER_S,
        });
    }
    FlowModel::new(&ports.network, &flows)
}

fn spread_offsets(machine: &JaguarSpider, job_size: usize, count: usize) -> Vec<usize> {
    let room = machine.launcher_order.len().saturating_sub(job_size);
    let count = count.max(1);
    (0..count).map(|i| room * i / count).collect()
}

/// The §4 runs study: OSS counts 8, 16, ..., 96 at `offsets` job positions each, each job one
/// stretch of launcher order; then on busy machines ([`BUSY_MACHINES`]), `busy_draws`
/// scattered allocations per OSS count.
pub fn runs_study(
    machine: &JaguarSpider,
    saturation: &Saturation,
    offsets: usize,
    busy_draws: usize,
) -> Result<RunsStudy> {
    let oss_counts: Vec<usize> = (1..=DIRECT_OSS / 8).map(|i| i * 8).collect();
    let offsets = spread_offsets(machine, DIRECT_OSS * OSTS_PER_OSS, offsets);
    let thresholds = [saturation.pairs_at_saturation(), 34, 60, 70];
    let busiest = |clients: &[Coord], targets: &[Target]| -> Result<f64> {
        let placement = Placement::launcher_order(clients, targets)?;
        Ok(pair_loads(machine, &placement.pairs).max_pairs())
    };
    let mut max_pairs = Vec::new();
    for &n in &oss_counts {
        let targets = machine.direct_targets(n)?;
        for &offset in &offsets {
            max_pairs.push(busiest(
                machine.job_nodes(offset, targets.len())?,
                &targets,
            )?);
        }
    }
    let mut busy = Vec::new();
    // No draws, no rows: a row of 0% over nothing would read as a finding.
    for (busy_share, free_run_nodes) in BUSY_MACHINES.into_iter().filter(|_| busy_draws > 0) {
        let occupancy = BusyMachine::new(busy_share, free_run_nodes)?;
        let mut runs = Vec::new();
        for &n in &oss_counts {
            let targets = machine.direct_targets(n)?;
            for draw in 0..busy_draws as u64 {
                let seed = (n as u64) << 32 | draw;
                let clients = occupancy.allocate(&machine.launcher_order, targets.len(), seed)?;
                runs.push(busiest(&clients, &targets)?);
            }
        }
        busy.push(BusyRuns {
            machine: occupancy,
            draws: busy_draws,
            share_over: shares_over(&thresholds, &runs),
            max_pairs: runs.iter().copied().fold(0.0, f64::max),
        });
    }
    Ok(RunsStudy {
        oss_counts,
        offsets,
        share_over: shares_over(&thresholds, &max_pairs),
        max_pairs,
        busy,
    })
}

/// For each threshold, the share of `runs` whose busiest link carries more pairs.
fn shares_over(thresholds: &[u32], runs: &[f64]) -> Vec<(u32, f64)> {
    thresholds
        .iter()
        .map(|&t| {
            let over = runs.iter().filter(|&&m| m > f64::from(t)).count();
            (t, over as f64 / runs.len().max(1) as f64)
        })
        .collect()
}

/// The §5 confined study: launcher order vs placement within the job's own nodes.
pub fn confined_study(
    machine: &JaguarSpider,
    options: &AnalyzeOptions,
) -> Result<Vec<ConfinedRow>> {
    let targets = machine.direct_targets(options.oss_count)?;
    let mut rows = Vec::new();
    for offset in spread_offsets(machine, targets.len(), options.confined_offsets) {
        let clients = machine.job_nodes(offset, targets.len())?;
        let default = Placement::launcher_order(clients, &targets)?;
        let confined =
            Placement::nearest_free(&machine.torus, clients, &targets, PlacementKind::Confined)?;
        let d = direct_scenario(machine, "default", &default, options.data_per_writer_mb)?;
        let c = direct_scenario(machine, "confined", &confined, options.data_per_writer_mb)?;
        rows.push(ConfinedRow {
            offset,
            default_mb_per_s: d.ior_aggregate_mb_per_s,
            confined_mb_per_s: c.ior_aggregate_mb_per_s,
            default_max_pairs: d.max_pairs_per_link,
            confined_max_pairs: c.max_pairs_per_link,
        });
    }
    Ok(rows)
}

/// The §7 routed study: every configuration, launcher order and placed (clients nearest the
/// router that projection pairs with each OST's OSS).
pub fn routed_study(machine: &JaguarSpider, options: &AnalyzeOptions) -> Result<Vec<RoutedRow>> {
    let targets = machine.routed_targets(options.oss_count)?;
    let clients = machine.job_nodes(options.job_offset, targets.len())?;
    let default = Placement::launcher_order(clients, &targets)?;
    let placed = Placement::nearest_free(
        &machine.torus,
        &machine.launcher_order,
        &targets,
        PlacementKind::Placed,
    )?;
    let mut rows = Vec::new();
    for config in SpiderRoutingConfig::ALL {
        let routing = SpiderRouting::new(
            &machine.torus,
            &machine.fabric,
            config,
            &machine.launcher_order,
        )?;
        for placement in [&default, &placed] {
            rows.push(routed_row(
                machine,
                &routing,
                placement,
                jaguar::ROUTED_DATA_MB,
            )?);
        }
    }
    Ok(rows)
}

fn routed_row(
    machine: &JaguarSpider,
    routing: &SpiderRouting<'_>,
    placement: &Placement,
    data_mb: f64,
) -> Result<RoutedRow> {
    let mut ports = Ports::default();
    let mut loads = LinkLoads::new(&machine.torus);
    let mut flows = Vec::new();
    let mut owner = Vec::new();
    let mut routes_of = Vec::with_capacity(placement.pairs.len());
    let efficiency = machine.fat_tree_efficiency();
    for (w, pair) in placement.pairs.iter().enumerate() {
        let Target { index, server, .. } = pair.target;
        let gateways = routing.gateways(pair.client, server)?;
        let k = gateways.len() as f64;
        routes_of.push(gateways.len());
        let server_leaf = machine.fabric.server_leaf[server as usize];
        for r in gateways {
            let router = &machine.fabric.routers[r];
            loads.add_route(&machine.torus, pair.client, router.coord, 1.0 / k);
            let mut path = Vec::new();
            ports.torus_path(machine, pair.client, router.coord, &mut path)?;
            path.push(ports.port(PortKey::RouterIb(r), machine.router_ib_mb_per_s())?);
            if router.leaf != server_leaf {
                // Through the fat tree: the server receives off-leaf traffic at Fig. 9's
                // congested efficiency.
                let capacity = OSTS_PER_OSS as f64 * OST_MB_PER_S * efficiency;
                path.push(ports.port(PortKey::CrossFabric(server), capacity)?);
            }
            path.push(ports.port(PortKey::Ost(index), OST_MB_PER_S)?);
            flows.push(Flow {
                ports: path,
                demand_mb_per_s: OST_MB_PER_S / k,
            });
            owner.push(w);
        }
    }
    let model = FlowModel::new(&ports.network, &flows)?;
    let alloc = model.solve();
    let mut slowest = vec![f64::INFINITY; placement.pairs.len()];
    for (f, &w) in owner.iter().enumerate() {
        slowest[w] = slowest[w].min(alloc.rates_mb_per_s[f]);
    }
    let writer_rates: Vec<f64> = slowest
        .iter()
        .zip(&routes_of)
        .map(|(&s, &k)| s * k as f64)
        .collect();
    let aggregate: f64 = writer_rates.iter().sum();
    let slowest_time = if routes_of.iter().all(|&k| k == 1) {
        // One route per writer: follow the run to the end, freed bandwidth and all.
        model.completion(&vec![data_mb; flows.len()])?.makespan_s()
    } else {
        // Split writers: the slowest writer's time at the starting rates (a lower bound on
        // bandwidth; re-solving 129,000 sub-flows at every finish is not worth a table row).
        writer_rates
            .iter()
            .map(|&r| data_mb / r)
            .fold(0.0, f64::max)
    };
    Ok(RoutedRow {
        config: routing.config(),
        placement: placement.kind,
        aggregate_mb_per_s: aggregate,
        ior_aggregate_mb_per_s: data_mb * placement.pairs.len() as f64 / slowest_time,
        max_pairs_per_link: loads.max_pairs(),
    })
}

/// Axis lengths, for reports.
pub fn dims_text(machine: &JaguarSpider) -> String {
    let t = &machine.torus;
    format!("{}x{}x{}", t.len(Axis::X), t.len(Axis::Y), t.len(Axis::Z))
}
