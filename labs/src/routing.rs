//! `iopath bench routing`: the Spider paper's routed study (000 §6–7, Fig. 10) and the Titan
//! paper's fine-grained routing (001 §IV), with real LNET routers on an emulated torus.
//!
//! On Jaguar, clients in the torus reached Spider's servers on InfiniBand leaf modules only
//! through LNET routers, service nodes spread over the torus. Which routers a client uses for
//! which server is the routing configuration: all of them round-robin (the baseline), the
//! routers of the server's leaf round-robin, the nearest of them, or the one router that
//! "projects" the server into the torus. Round-robin "unnecessarily distributes I/O traffic
//! throughout the torus"; projection lets placement keep a writer next to its server's
//! router. The paper measured, writing: baseline 47.6 GB/s, round-robin 48.1 (83 placed),
//! projection 92 (113 placed).
//!
//! Here a miniature of that machine runs as an embedded stack: routers at service positions
//! of a torus crossed hop by hop ([`iopath_fabric::torus`]), each with a modeled card on its
//! leaf's network; storage servers with modeled disks on the leaves; one client per writer at
//! the coordinate its placement chose, with the routes the configuration gives it, as a stack
//! file spells them. Every run is also predicted by the flow model over the same machine
//! ([`crate::prediction`]), and printed beside the paper's figure.

use std::path::PathBuf;
use std::sync::atomic::Ordering;

use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::file::{JournalName, NetworkEntry, NodeEntry, RouteEntry};
use iopath_stack::schema::{RoleName, StackFile};
use iopath_topology::spider_routing::{
    LnetRouter, SpiderFabric, SpiderRouting, SpiderRoutingConfig,
};
use iopath_topology::study::TimeSummary;
use iopath_topology::{Coord, LinkLoads, Pair, Placement, PlacementKind, Target, Torus};
use serde::Serialize;

use crate::lab::Lab;
use crate::placement::{Writes, all_distinct, placement_words, write_all};
use iopath_bench::BenchError;
use iopath_bench::prediction::{Arbitration, MachineFlows, WriterFlow};

/// An OST's sustained rate on Spider, MB/s (000 §4).
pub const PAPER_OST_MB_S: f64 = 180.0;
/// A router's InfiniBand card over its server's targets on Spider: 1,413.5 MB/s against an
/// OSS's seven OSTs at 180 MB/s.
pub const PAPER_CARD_OVER_SERVER: f64 = 1_413.5 / (7.0 * 180.0);
/// Most routers the miniature places (the service positions it has).
pub const ROUTERS_MAX: u32 = 8;

/// A routing configuration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Scheme {
    /// One remote network; every client round-robins over every router (000's baseline).
    Baseline,
    /// A network per leaf; each client uses the nearest of the leaf's routers, balanced.
    Nearest,
    /// A network per leaf; clients round-robin over the leaf's routers.
    RoundRobin,
    /// A network per server, reached through one router of its leaf.
    Projection,
    /// A network per leaf; each client's route to it goes through the leaf's router nearest
    /// to it (LNet hop count 1), the others kept as backups (hop count 10), as Titan's
    /// fine-grained routing weighs its routes (001 §IV).
    FineGrained,
}

impl Scheme {
    /// Every configuration, in the paper's order, fine-grained routing last.
    pub const ALL: [Scheme; 5] = [
        Scheme::Baseline,
        Scheme::Nearest,
        Scheme::RoundRobin,
        Scheme::Projection,
        Scheme::FineGrained,
    ];

    /// Its name on the command line and in reports.
    pub const fn name(self) -> &'static str {
        match self {
            Scheme::Baseline => "baseline",
            Scheme::Nearest => "nearest",
            Scheme::RoundRobin => "round-robin",
            Scheme::Projection => "projection",
            Scheme::FineGrained => "fine-grained",
        }
    }

    /// The paper's write bandwidth, GB/s, default placement then placed (Fig. 10), where
    /// it reports one.
    pub const fn paper_gb_s(self) -> (Option<f64>, Option<f64>) {
        match self {
            Scheme::Baseline => (Some(47.6), None),
            Scheme::Nearest | Scheme::FineGrained => (None, None),
            Scheme::RoundRobin => (Some(48.1), Some(83.0)),
            Scheme::Projection => (Some(92.0), Some(113.0)),
        }
    }

    /// The Spider configuration it is, if it is one.
    fn spider(self) -> Option<SpiderRoutingConfig> {
        match self {
            Scheme::Baseline => Some(SpiderRoutingConfig::Baseline),
            Scheme::Nearest => Some(SpiderRoutingConfig::NearestNeighbour),
            Scheme::RoundRobin => Some(SpiderRoutingConfig::LeafRoundRobin),
            Scheme::Projection => Some(SpiderRoutingConfig::Projection),
            Scheme::FineGrained => None,
        }
    }
}

impl std::str::FromStr for Scheme {
    type Err = String;
    fn from_str(text: &str) -> Result<Self, String> {
        Scheme::ALL
            .into_iter()
            .find(|s| s.name() == text)
            .ok_or_else(|| {
                let names: Vec<&str> = Scheme::ALL.iter().map(|s| s.name()).collect();
                format!("{text:?}: use one of {}", names.join(", "))
            })
    }
}

/// What `iopath bench routing` runs.
#[derive(Debug, Clone)]
pub struct RoutingConfig {
    /// The torus, routers per axis.
    pub dims: [u32; 3],
    /// The configurations to run, each with both placements.
    pub schemes: Vec<Scheme>,
    /// Leaf modules (InfiniBand networks of the storage side).
    pub leaves: u32,
    /// Routers per leaf.
    pub routers_per_leaf: u32,
    /// Storage servers per leaf (projection needs a router each).
    pub servers_per_leaf: u32,
    /// Targets per server; a writer per target.
    pub targets_per_server: u32,
    /// An OST's modeled rate, bytes per modeled second.
    pub ost_bytes_s: u64,
    /// Client–OST pairs one torus link carries before it saturates.
    pub pairs_per_link: u32,
    /// A router's card (and its torus NIC) over its server's targets' rate (Spider's:
    /// [`PAPER_CARD_OVER_SERVER`]).
    pub card_over_server: f64,
    /// Host seconds per modeled second.
    pub time_scale: u32,
    /// Bytes each writer writes.
    pub bytes_per_writer: u64,
    /// Bytes per write call.
    pub transfer: u64,
    /// Writes each writer keeps in flight.
    pub depth: u32,
    /// Where the stacks keep their storage (a temporary directory inside, removed).
    pub dir: Option<PathBuf>,
    /// Every node in this process, or a process per server node and router (the torus
    /// modeled once, here, for all of them).
    pub mode: Mode,
}

impl Default for RoutingConfig {
    fn default() -> Self {
        RoutingConfig {
            dims: [8, 4, 2],
            schemes: Scheme::ALL.to_vec(),
            leaves: 2,
            routers_per_leaf: 4,
            servers_per_leaf: 2,
            targets_per_server: 4,
            ost_bytes_s: 180_000_000,
            pairs_per_link: 3,
            card_over_server: PAPER_CARD_OVER_SERVER,
            time_scale: 64,
            // 32 transfers each: at 16, every writer's first transfer and the spread between
            // the writers' ends weighed 5-10% of a run, more than the flow model's start-up.
            bytes_per_writer: 32 << 20,
            transfer: 1 << 20,
            depth: 4,
            dir: None,
            mode: Mode::Embedded,
        }
    }
}

impl RoutingConfig {
    /// A small run for the test suite: the same machine, less data, round-robin and projection.
    pub fn quick() -> Self {
        RoutingConfig {
            schemes: vec![Scheme::RoundRobin, Scheme::Projection],
            bytes_per_writer: 6 << 20,
            ..RoutingConfig::default()
        }
    }

    fn check(&self) -> Result<(), BenchError> {
        let bad = |option: &str, why: String| BenchError::BadOption {
            option: option.into(),
            why,
        };
        Torus::new(self.dims[0], self.dims[1], self.dims[2])
            .map_err(|e| bad("--dims", e.to_string()))?;
        if self.dims.iter().any(|&d| !(2..=16).contains(&d)) {
            return Err(bad("--dims", "each side 2 to 16 routers".into()));
        }
        if self.schemes.is_empty() {
            return Err(bad("--schemes", "name at least one configuration".into()));
        }
        if self.leaves == 0 || self.routers_per_leaf == 0 {
            return Err(bad("--leaves", "at least one leaf with a router".into()));
        }
        if self.leaves * self.routers_per_leaf > ROUTERS_MAX {
            return Err(bad(
                "--routers-per-leaf",
                format!("at most {ROUTERS_MAX} routers in all (the service positions)"),
            ));
        }
        if !(1..=self.routers_per_leaf).contains(&self.servers_per_leaf) {
            return Err(bad(
                "--servers-per-leaf",
                format!(
                    "1 to {} (projection gives each server a router of its leaf)",
                    self.routers_per_leaf
                ),
            ));
        }
        if !(1..=8).contains(&self.targets_per_server) {
            return Err(bad("--targets", "1 to 8 targets per server".into()));
        }
        if !(1..=64).contains(&self.pairs_per_link) {
            return Err(bad("--pairs-per-link", "1 to 64".into()));
        }
        if self.transfer == 0 || self.bytes_per_writer < self.transfer {
            return Err(bad("--size", "at least one transfer per writer".into()));
        }
        if !(0.25..=16.0).contains(&self.card_over_server) {
            return Err(bad(
                "--card-over-server",
                "0.25 to 16 times a server's targets' rate".into(),
            ));
        }
        if !(1..=16).contains(&self.depth) {
            return Err(bad("--depth", "1 to 16 writes in flight".into()));
        }
        let machine = self.machine()?;
        let mut positions: Vec<Coord> = machine.fabric.routers.iter().map(|r| r.coord).collect();
        positions.push(machine.mds);
        if !all_distinct(&positions) {
            return Err(bad(
                "--dims",
                format!(
                    "too small for {} routers and the MDS, each at a service position of its own",
                    machine.fabric.routers.len()
                ),
            ));
        }
        let writers = self.writers();
        let clients = machine.clients.len() as u32;
        if writers > clients {
            return Err(bad(
                "--targets",
                format!("{writers} writers need {writers} compute nodes; the torus has {clients}"),
            ));
        }
        Ok(())
    }

    fn servers(&self) -> u32 {
        self.leaves * self.servers_per_leaf
    }

    fn writers(&self) -> u32 {
        self.servers() * self.targets_per_server
    }

    fn link_bytes_s(&self) -> u64 {
        self.ost_bytes_s * u64::from(self.pairs_per_link)
    }

    /// A router's card (and its torus NIC): its server's targets' rate times the margin.
    fn card_bytes_s(&self) -> u64 {
        (self.ost_bytes_s as f64 * f64::from(self.targets_per_server) * self.card_over_server)
            as u64
    }

    fn writes(&self) -> Writes {
        Writes {
            bytes_per_writer: self.bytes_per_writer,
            transfer: self.transfer,
            depth: self.depth,
        }
    }

    /// The miniature machine: routers at service positions spread over the torus (router
    /// `r` on leaf `r % leaves`, so every leaf's routers are spread too), the MDS, and the
    /// compute nodes in launcher order.
    fn machine(&self) -> Result<Machine, BenchError> {
        let [x, y, z] = self.dims;
        let torus = Torus::new(x, y, z).map_err(|e| BenchError::BadOption {
            option: "--dims".into(),
            why: e.to_string(),
        })?;
        let routers: Vec<LnetRouter> = (0..self.leaves * self.routers_per_leaf)
            .map(|r| LnetRouter {
                name: format!("rtr{r}"),
                nid: 50 + r,
                coord: Coord::new(
                    x / 4 + (r % 2) * (x / 2),
                    ((r / 2) % 2) * (y / 2),
                    ((r / 4) % 2) * (z / 2),
                ),
                leaf: r % self.leaves,
            })
            .collect();
        let mds = Coord::new(0, y - 1, z - 1);
        let clients = torus
            .coords()
            .filter(|c| *c != mds && !routers.iter().any(|r| r.coord == *c))
            .collect();
        let fabric = SpiderFabric {
            routers,
            server_leaf: (0..self.servers()).map(|s| s % self.leaves).collect(),
            leaf_count: self.leaves,
            client_net: "torus0".into(),
        };
        Ok(Machine {
            torus,
            fabric,
            mds,
            clients,
        })
    }
}

struct Machine {
    torus: Torus,
    fabric: SpiderFabric,
    mds: Coord,
    clients: Vec<Coord>,
}

/// One run: a configuration and a placement.
#[derive(Debug, Clone, Serialize)]
pub struct RoutingRun {
    /// `default` (launcher order) or `placed`.
    pub placement: String,
    /// Routers each writer's traffic is spread over (the most of any writer).
    pub routers_per_writer: u32,
    /// Torus hops from a writer to its routers, averaged over its traffic and the writers.
    pub mean_hops: f64,
    /// Most client–router pairs any torus link carried, each counted by its share.
    pub max_pairs_per_link: f64,
    /// Aggregate bandwidth, MB per modeled second: all bytes over the last writer's time.
    pub aggregate_mb_s: f64,
    /// The flow model's aggregate for the same machine and routes.
    pub model_aggregate_mb_s: f64,
    /// Measured over modeled.
    pub ratio_to_model: f64,
    /// Ports with no room where the model held an input to its turn (see
    /// [`MachineFlows::completion`]).
    pub model_ports_held: usize,
    /// The flow model's aggregate at its fluid rates alone (no input held to its turn),
    /// MB/s; the same as `model_aggregate_mb_s` where no port held one.
    pub model_fluid_mb_s: f64,
    /// The aggregate over the targets' raw rate.
    pub share_of_raw: f64,
    /// Slowest minus fastest writer, modeled seconds.
    pub spread_s: f64,
    /// Payload bytes each router forwarded (by name), measured.
    pub router_bytes: Vec<(String, u64)>,
    /// The most any router forwarded over what the routes give it when each writer's bytes
    /// are split evenly over its routers, as the flow model splits them (1: as modeled).
    pub router_over_even: f64,
    /// Each writer's completion time, modeled seconds, in target order.
    pub completion_s: Vec<f64>,
    /// The model's completion times.
    pub model_completion_s: Vec<f64>,
}

/// One configuration: both placements.
#[derive(Debug, Clone, Serialize)]
pub struct RoutingRow {
    /// The configuration.
    pub scheme: Scheme,
    /// Launcher order.
    pub default: RoutingRun,
    /// Writers on the free nodes nearest their server's projected router.
    pub placed: RoutingRun,
    /// The paper's write GB/s, default then placed, where reported.
    pub paper_gb_s: (Option<f64>, Option<f64>),
}

/// What `iopath bench routing` measured.
#[derive(Debug, Clone, Serialize)]
pub struct RoutingReport {
    /// The torus, `XxYxZ`.
    pub torus: String,
    /// Leaves, routers, servers, writers.
    pub leaves: u32,
    /// Routers in all.
    pub routers: u32,
    /// Storage servers in all.
    pub servers: u32,
    /// Writers (one per target).
    pub writers: u32,
    /// An OST's modeled rate, MB/s.
    pub ost_mb_s: f64,
    /// A torus link's modeled rate, MB/s.
    pub link_mb_s: f64,
    /// A router's modeled card, MB/s.
    pub card_mb_s: f64,
    /// Host seconds per modeled second.
    pub time_scale: u32,
    /// MiB each writer wrote.
    pub mib_per_writer: f64,
    /// One row per configuration.
    pub rows: Vec<RoutingRow>,
    /// What was modeled and what real.
    pub modeled: String,
    /// How the stacks ran: `embedded` or `processes`.
    pub mode: String,
    /// The same, in words.
    pub ran: String,
}

/// The experiment as a [`Lab`]: what `iopath bench routing` runs.
#[derive(Debug, Clone, Copy)]
pub struct RoutingLab;

impl Lab for RoutingLab {
    type Config = RoutingConfig;
    type Report = RoutingReport;

    const DRAWS: &'static str = "bandwidth by configuration";

    fn quick() -> RoutingConfig {
        RoutingConfig::quick()
    }

    fn storage_dir(config: &mut RoutingConfig) -> &mut Option<PathBuf> {
        &mut config.dir
    }

    /// Runs every configuration with both placements, saying on `progress` what it does.
    async fn run(
        config: &RoutingConfig,
        progress: &mut impl std::io::Write,
    ) -> Result<RoutingReport, BenchError> {
        config.check()?;
        let machine = config.machine()?;
        let bad = |e: iopath_topology::TopologyError| BenchError::BadOption {
            option: "--servers-per-leaf".into(),
            why: e.to_string(),
        };
        // Projection's router of each server anchors its targets: placement puts a writer next
        // to it, whatever the configuration.
        let projection = SpiderRouting::new(
            &machine.torus,
            &machine.fabric,
            SpiderRoutingConfig::Projection,
            &machine.clients,
        )
        .map_err(bad)?;
        let targets: Vec<Target> = (0..config.writers())
            .map(|t| {
                let server = t / config.targets_per_server;
                let router = projection.gateways(machine.mds, server).map_err(bad)?[0];
                Ok(Target {
                    index: t,
                    server,
                    anchor: machine.fabric.routers[router].coord,
                })
            })
            .collect::<Result<_, BenchError>>()?;
        let default = Placement::launcher_order(&machine.clients, &targets).map_err(bad)?;
        let placed = Placement::nearest_free(
            &machine.torus,
            &machine.clients,
            &targets,
            PlacementKind::Placed,
        )
        .map_err(bad)?;
        let mut rows = Vec::new();
        let (mut modeled, mut modeled_routers) = (String::new(), 0);
        for &scheme in &config.schemes {
            let mut runs = Vec::new();
            for (name, placement) in [("default", &default), ("placed", &placed)] {
                let _ = writeln!(
                    progress,
                    "{}, {} writers {} ...",
                    scheme.name(),
                    placement.pairs.len(),
                    placement_words(name)
                );
                let (run, words, routers) =
                    run_one(config, &machine, scheme, name, placement).await?;
                let _ = writeln!(
                    progress,
                    "  {:.0} MB/s (the flow model: {:.0}), writers finished over {:.1} ms (modeled)",
                    run.aggregate_mb_s,
                    run.model_aggregate_mb_s,
                    run.spread_s * 1e3
                );
                // The stack with the most routers in it names every modeled part.
                if routers > modeled_routers {
                    (modeled, modeled_routers) = (words, routers);
                }
                runs.push(run);
            }
            let placed = runs.pop().unwrap_or_else(|| unreachable!("two runs"));
            let default = runs.pop().unwrap_or_else(|| unreachable!("two runs"));
            rows.push(RoutingRow {
                scheme,
                default,
                placed,
                paper_gb_s: scheme.paper_gb_s(),
            });
        }
        Ok(RoutingReport {
            torus: machine.torus.dims_text(),
            leaves: config.leaves,
            routers: machine.fabric.routers.len() as u32,
            servers: config.servers(),
            writers: config.writers(),
            ost_mb_s: config.ost_bytes_s as f64 / 1e6,
            link_mb_s: config.link_bytes_s() as f64 / 1e6,
            card_mb_s: config.card_bytes_s() as f64 / 1e6,
            time_scale: config.time_scale,
            mib_per_writer: config.bytes_per_writer as f64 / f64::from(1 << 20),
            rows,
            modeled,
            mode: config.mode.name().into(),
            ran: crate::placement::ran_words(config.mode),
        })
    }

    /// The report for people: a row per configuration, the model's and the paper's beside.
    fn render(report: &RoutingReport) -> String {
        let mut out = format!(
            "routing on a {} torus: up to {} routers on {} leaves (a configuration's stack leaves out \
             those it does not route through), {} servers, {} writers; OSTs at {:.0} \
             MB/s, torus links at {:.0} MB/s ({} OSTs' worth), router cards at {:.0} MB/s, {:.0} MiB \
             per writer, time scale {}

",
            report.torus,
            report.routers,
            report.leaves,
            report.servers,
            report.writers,
            report.ost_mb_s,
            report.link_mb_s,
            report.link_mb_s / report.ost_mb_s,
            report.card_mb_s,
            report.mib_per_writer,
            report.time_scale
        );
        out.push_str(
            "             |       | default placement                                   | placed                                              | paper, GB/s
\
             routing      | rtr/w | MB/s (model, ratio)  hops pairs/link busiest share | MB/s (model, ratio)  hops pairs/link busiest share | default placed
",
        );
        let paper = |v: Option<f64>| v.map_or("-".to_string(), |g| format!("{g}"));
        for row in &report.rows {
            let run = |r: &RoutingRun| {
                format!(
                    "{:>5.0} ({:>5.0}, {:.2}){}{:>5.1} {:>10.1} {:>6.2}x {:>4.0}%",
                    r.aggregate_mb_s,
                    r.model_aggregate_mb_s,
                    r.ratio_to_model,
                    if r.model_ports_held > 0 { '*' } else { ' ' },
                    r.mean_hops,
                    r.max_pairs_per_link,
                    r.router_over_even,
                    r.share_of_raw * 100.0
                )
            };
            out.push_str(&format!(
                "{:<12} | {:>5} | {} | {} | {:>7} {:>6}
",
                row.scheme.name(),
                row.default.routers_per_writer,
                run(&row.default),
                run(&row.placed),
                paper(row.paper_gb_s.0),
                paper(row.paper_gb_s.1),
            ));
        }
        let marked: Vec<String> = report
            .rows
            .iter()
            .flat_map(|row| [(row, &row.default), (row, &row.placed)])
            .filter(|(_, run)| run.model_ports_held > 0)
            .map(|(row, run)| {
                format!(
                    "{} {} {:.0} ({} port{})",
                    row.scheme.name(),
                    run.placement,
                    run.model_fluid_mb_s,
                    run.model_ports_held,
                    if run.model_ports_held == 1 { "" } else { "s" }
                )
            })
            .collect();
        if !marked.is_empty() {
            out.push_str(&format!(
                "
*: the routes load a port exactly to its capacity, every flow through it at its \
                 disk's rate: no room. The port serves its inputs in turn, so while one input's \
                 burst lasts another gets only its turn, and with no room it cannot make that up \
                 after; the model holds each input of such a port to its turn (the bound). With \
                 every input making up after each burst (the fluid rates), MB/s: {}. The emulation \
                 comes near the bound where a router lengthens the path to the disk, and makes up \
                 part of it where the path is short
",
                marked.join("; ")
            ));
        }
        out.push_str(
            "
rtr/w: routers a writer's traffic is spread over; hops: torus hops to them, mean; \
             pairs/link: the most writer-router pairs (by share) on one link; busiest: the most a router \
             forwarded over its share when each writer's bytes split evenly over its routers (as the \
             flow model has them: 1.00x)
",
        );
        out.push_str(
            "
the paper (Jaguar and Spider, 000 Fig. 10, writes): baseline 47.6 GB/s; round-robin \
             48.1, placed 83; projection 92, placed 113; nearest not reported; fine-grained routing \
             (001) gave +30% over routing without it
",
        );
        out.push_str(&format!(
            "modeled: {}
",
            report.modeled
        ));
        out.push_str(&format!(
            "ran: {}
",
            report.ran
        ));
        out.push_str(
            "real: every byte through the fabric and the LNET routers (the torus's, the routers' \
             cards' and the disks' pace is modeled; the InfiniBand fabric beyond a router's card is \
             not), the storage servers' journals and files on this host's disk; times are modeled \
             seconds
",
        );
        out
    }

    /// Aggregate bandwidth per configuration, measured and modeled, both placements.
    fn figure(report: &RoutingReport) -> Option<iopath_plot::Figure> {
        use iopath_plot::{Axis, Figure, Series};
        if report.rows.is_empty() {
            return None;
        }
        let series = |name: &str, f: &dyn Fn(&RoutingRow) -> f64| {
            Series::bars(
                name,
                report
                    .rows
                    .iter()
                    .enumerate()
                    .map(|(i, r)| (i as f64, f(r))),
            )
        };
        let ticks = report
            .rows
            .iter()
            .enumerate()
            .map(|(i, r)| (i as f64, r.scheme.name().to_string()))
            .collect();
        Some(Figure {
            title: format!(
                "Write bandwidth by routing configuration ({} torus, {} writers, {} routers)",
                report.torus, report.writers, report.routers
            ),
            x: Axis::around_data("routing configuration").ticks_at(ticks),
            y: Axis::from_zero("aggregate MB/s (modeled time)"),
            y2: None,
            series: vec![
                series("default placement (measured)", &|r| {
                    r.default.aggregate_mb_s
                }),
                series("default (flow model)", &|r| r.default.model_aggregate_mb_s),
                series("placed (measured)", &|r| r.placed.aggregate_mb_s),
                series("placed (flow model)", &|r| r.placed.model_aggregate_mb_s),
            ],
            rules: Vec::new(),
            footnote: format!(
                "Measured: {} writers writing {:.0} MiB each through real LNET routers on an \
                 emulated torus crossed hop by hop (modeled links, router cards and disks at time \
                 scale {}); the flow model computes the same machine. Paper (Fig. 10): baseline \
                 47.6, round-robin 48.1/83, projection 92/113 GB/s.",
                report.writers, report.mib_per_writer, report.time_scale
            ),
        })
    }
}

/// Which routers each writer uses for each server, and the storage side's networks: what
/// the configuration gives the miniature machine.
struct Routes {
    /// Each storage network's name and routers (indices into the fabric's routers).
    networks: Vec<(String, Vec<usize>)>,
    /// Each server's network (index into `networks`).
    server_network: Vec<usize>,
    /// `(writer, network, router, hops)`: the client routes.
    client: Vec<(usize, usize, usize, u32)>,
}

impl Routes {
    fn of(
        config: &RoutingConfig,
        machine: &Machine,
        scheme: Scheme,
        placement: &Placement,
    ) -> Result<Routes, BenchError> {
        let routers = machine.fabric.routers.len();
        let bad = |e: iopath_topology::TopologyError| BenchError::refused(e.to_string());
        let net_name = |server: u32| -> String {
            match scheme {
                Scheme::Baseline => "o2ib".into(),
                Scheme::Projection => format!("o2ib{}", server + 1),
                _ => format!("o2ib{}", machine.fabric.server_leaf[server as usize] + 1),
            }
        };
        let mut networks: Vec<(String, Vec<usize>)> = Vec::new();
        let mut server_network = Vec::new();
        for server in 0..config.servers() {
            let name = net_name(server);
            let n = match networks.iter().position(|(n, _)| *n == name) {
                Some(n) => n,
                None => {
                    networks.push((name, Vec::new()));
                    networks.len() - 1
                }
            };
            server_network.push(n);
        }
        // Which routers carry each network: every router of the network's leaves (all of
        // them for the baseline), projection's one router for a server's own.
        let leaf = |r: usize| machine.fabric.routers[r].leaf;
        let mut client = Vec::new();
        match scheme.spider() {
            Some(spider) => {
                let routing =
                    SpiderRouting::new(&machine.torus, &machine.fabric, spider, &machine.clients)
                        .map_err(bad)?;
                for (w, pair) in placement.pairs.iter().enumerate() {
                    for server in 0..config.servers() {
                        let n = server_network[server as usize];
                        for router in routing.gateways(pair.client, server).map_err(bad)? {
                            if !client.contains(&(w, n, router, 1)) {
                                client.push((w, n, router, 1));
                            }
                        }
                    }
                }
            }
            None => {
                // Fine-grained: on each leaf, the router nearest the client first, the
                // others behind it.
                for (w, pair) in placement.pairs.iter().enumerate() {
                    for n in 0..networks.len() {
                        let on_leaf: Vec<usize> = (0..routers)
                            .filter(|&r| {
                                leaf(r)
                                    == machine.fabric.server_leaf
                                        [server_network.iter().position(|&s| s == n).unwrap_or(0)]
                            })
                            .collect();
                        let nearest = on_leaf
                            .iter()
                            .copied()
                            .min_by_key(|&r| {
                                machine
                                    .torus
                                    .hop_distance(pair.client, machine.fabric.routers[r].coord)
                            })
                            .ok_or_else(|| BenchError::refused("a leaf without a router"))?;
                        for r in on_leaf {
                            let hops = if r == nearest { 1 } else { 10 };
                            client.push((w, n, r, hops));
                        }
                    }
                }
            }
        }
        for (n, (_, carriers)) in networks.iter_mut().enumerate() {
            let mut used: Vec<usize> = client
                .iter()
                .filter(|&&(_, net, _, _)| net == n)
                .map(|&(_, _, r, _)| r)
                .collect();
            used.sort_unstable();
            used.dedup();
            *carriers = used;
        }
        Ok(Routes {
            networks,
            server_network,
            client,
        })
    }

    /// Routers that carry some network (the others stay out of the stack).
    fn routers(&self) -> Vec<usize> {
        let mut all: Vec<usize> = self.networks.iter().flat_map(|(_, r)| r.clone()).collect();
        all.sort_unstable();
        all.dedup();
        all
    }
}

/// The stack of one run.
fn stack_file(
    config: &RoutingConfig,
    machine: &Machine,
    routes: &Routes,
    placement: &Placement,
) -> StackFile {
    let at = |coord: Coord| [coord.x, coord.y, coord.z];
    let mut file = StackFile::named("routing")
        .description("the routing experiment's miniature machine")
        .time_scale(config.time_scale)
        .stripe_count(1)
        .network(
            NetworkEntry::named("torus0")
                .torus(config.dims)
                .bandwidth(config.link_bytes_s())
                .latency_us(1)
                .hop_by_hop(),
        );
    for (name, _) in &routes.networks {
        file = file.network(
            NetworkEntry::named(name)
                .bandwidth(config.card_bytes_s())
                .latency_us(2),
        );
    }
    file = file.node(
        NodeEntry::new("mds", RoleName::Mds)
            .nid("torus0", 1)
            .torus(at(machine.mds)),
    );
    for r in routes.routers() {
        let router = &machine.fabric.routers[r];
        let mut node = NodeEntry::new(&router.name, RoleName::Router)
            .nid("torus0", router.nid.into())
            .torus(at(router.coord))
            .nic_bandwidth(config.card_bytes_s());
        for (name, carriers) in &routes.networks {
            if carriers.contains(&r) {
                node = node.nid(name, router.nid.into());
            }
        }
        file = file.node(node);
    }
    for s in 0..config.servers() {
        let (net, _) = &routes.networks[routes.server_network[s as usize]];
        file = file.node(
            NodeEntry::new(format!("oss{s}"), RoleName::Oss)
                .nid(net, 10 + u64::from(s))
                .targets(config.targets_per_server)
                .journal(JournalName::Async)
                .disk_bandwidth(config.ost_bytes_s),
        );
    }
    for (w, pair) in placement.pairs.iter().enumerate() {
        file = file.node(
            NodeEntry::new(format!("w{w}"), RoleName::Client)
                .nid("torus0", 100 + w as u64)
                .torus(at(pair.client)),
        );
    }
    // The storage side reaches the torus through its network's routers.
    for (name, carriers) in &routes.networks {
        for &r in carriers {
            file = file.route(RouteEntry::new(
                name,
                "torus0",
                &machine.fabric.routers[r].name,
            ));
        }
    }
    // The clients' routes, one entry per (network, router, hops) naming its writers.
    let mut entries: Vec<((usize, usize, u32), Vec<usize>)> = Vec::new();
    for &(w, n, r, hops) in &routes.client {
        match entries.iter_mut().find(|(key, _)| *key == (n, r, hops)) {
            Some((_, writers)) => writers.push(w),
            None => entries.push(((n, r, hops), vec![w])),
        }
    }
    for ((n, r, hops), writers) in entries {
        // The MDS is on the torus too: name the writers, so that it is not given routes.
        file = file.route(
            RouteEntry::new(
                "torus0",
                &routes.networks[n].0,
                &machine.fabric.routers[r].name,
            )
            .hops(hops)
            .nodes(writers.iter().map(|w| format!("w{w}"))),
        );
    }
    file
}

/// The file-system index of `pair`'s target (Lustre numbers targets round the servers; the
/// experiment in blocks per server).
fn target_index(config: &RoutingConfig, pair: &Pair) -> u32 {
    let local = pair.target.index % config.targets_per_server;
    let counts = vec![config.targets_per_server; config.servers() as usize];
    iopath_layout::dealt_index(&counts, pair.target.server as usize, local)
        .expect("a pair's target is one of its server's")
}

async fn run_one(
    config: &RoutingConfig,
    machine: &Machine,
    scheme: Scheme,
    name: &str,
    placement: &Placement,
) -> Result<(RoutingRun, String, usize), BenchError> {
    let routes = Routes::of(config, machine, scheme, placement)?;
    let stack = stack_file(config, machine, &routes, placement).check("the routing experiment")?;
    let modeled = stack.modeled();
    let targets: Vec<u32> = placement
        .pairs
        .iter()
        .map(|pair| target_index(config, pair))
        .collect();
    let clients = stack.nodes_of(RoleName::Client);
    let writers: Vec<WriterFlow> = targets
        .iter()
        .zip(&clients)
        .map(|(&target, &client)| WriterFlow {
            client,
            targets: vec![target],
        })
        .collect();
    let flows = MachineFlows::of(&stack, &writers)?;
    let turns = flows.completion(config.bytes_per_writer, config.transfer, Arbitration::Turns)?;
    // The fluid rates differ only where a port held an input to its turn.
    let fluid = if turns.ports_held > 0 {
        flows
            .completion(config.bytes_per_writer, config.transfer, Arbitration::Fluid)?
            .times_s
    } else {
        turns.times_s.clone()
    };
    let model = turns.times_s;
    // What the routes put on the torus: each writer's share to each router it uses (the
    // routes of the lowest hop count, which LNet chooses among).
    let mut loads = LinkLoads::new(&machine.torus);
    let (mut hops, mut most) = (0.0, 0);
    let mut even_bytes = vec![0.0f64; machine.fabric.routers.len()];
    for (w, pair) in placement.pairs.iter().enumerate() {
        let n = routes.server_network[pair.target.server as usize];
        let mine: Vec<(usize, u32)> = routes
            .client
            .iter()
            .filter(|&&(cw, cn, _, _)| cw == w && cn == n)
            .map(|&(_, _, r, h)| (r, h))
            .collect();
        let best = mine.iter().map(|&(_, h)| h).min().unwrap_or(1);
        let used: Vec<usize> = mine
            .iter()
            .filter(|&&(_, h)| h == best)
            .map(|&(r, _)| r)
            .collect();
        let share = 1.0 / used.len() as f64;
        most = most.max(used.len() as u32);
        for r in used {
            even_bytes[r] += share * config.bytes_per_writer as f64;
            let to = machine.fabric.routers[r].coord;
            loads.add_route(&machine.torus, pair.client, to, share);
            hops += share * f64::from(machine.torus.hop_distance(pair.client, to));
        }
    }
    let storage = StorageDir::temporary("bench-routing", config.dir.as_deref())?;
    let running = RunningStack::start(stack, config.mode, storage, None).await?;
    let result = write_all(&config.writes(), &running, &targets).await;
    let counted = match &result {
        Ok(_) => router_bytes(&running).await,
        Err(_) => Ok(Vec::new()),
    };
    let stopped = running.stop().await;
    let times = result?;
    stopped?;
    let router_bytes = counted?;
    let router_over_even = router_bytes
        .iter()
        .filter_map(|(name, bytes)| {
            let r = machine
                .fabric
                .routers
                .iter()
                .position(|r| r.name == *name)?;
            (even_bytes[r] > 0.0).then(|| *bytes as f64 / even_bytes[r])
        })
        .fold(0.0, f64::max);
    let scale = f64::from(config.time_scale);
    let completion_s: Vec<f64> = times.iter().map(|t| t.as_secs_f64() / scale).collect();
    let total_mb = config.bytes_per_writer as f64 * times.len() as f64 / 1e6;
    let makespan = completion_s.iter().copied().fold(0.0, f64::max);
    let aggregate_mb_s = total_mb / makespan;
    let model_makespan = model.iter().copied().fold(0.0, f64::max);
    let model_aggregate_mb_s = total_mb / model_makespan;
    let model_fluid_mb_s = total_mb / fluid.iter().copied().fold(0.0, f64::max);
    let raw = placement.pairs.len() as f64 * config.ost_bytes_s as f64 / 1e6;
    Ok((
        RoutingRun {
            placement: name.into(),
            routers_per_writer: most,
            mean_hops: hops / placement.pairs.len() as f64,
            max_pairs_per_link: loads.max_pairs(),
            aggregate_mb_s,
            model_aggregate_mb_s,
            ratio_to_model: aggregate_mb_s / model_aggregate_mb_s,
            model_ports_held: turns.ports_held,
            model_fluid_mb_s,
            share_of_raw: aggregate_mb_s / raw,
            spread_s: TimeSummary::of(&completion_s).spread_s(),
            router_bytes,
            router_over_even,
            completion_s,
            model_completion_s: model,
        },
        modeled,
        routes.routers().len(),
    ))
}

/// What each router forwarded, by name: its counter where it runs here, its `stats` over its
/// admin service where it is a process of its own.
async fn router_bytes(running: &RunningStack) -> Result<Vec<(String, u64)>, BenchError> {
    let stack = running.stack();
    let local = running.local_nodes();
    let mut all = Vec::new();
    for index in stack.nodes_of(RoleName::Router) {
        let name = stack.nodes[index].name.clone();
        if let Some(node) = local.iter().find(|n| n.index == index) {
            let bytes = node.node.counters().forwarded_bytes.load(Ordering::Relaxed);
            all.push((name, bytes));
            continue;
        }
        let addr = running
            .admin_addr(index)
            .ok_or_else(|| BenchError::refused(format!("{name} serves no admin service")))?;
        let admin = iopath_admin::Client::connect(addr).await?;
        let stats = admin.get_param("stats").await?;
        let bytes = stats
            .iter()
            .flat_map(|v| v.value.lines())
            .find_map(|line| line.strip_prefix("forwarded_bytes ")?.trim().parse().ok())
            .ok_or_else(|| BenchError::Tool {
                what: format!("{name}'s stats name no forwarded_bytes"),
            })?;
        all.push((name, bytes));
    }
    Ok(all)
}
