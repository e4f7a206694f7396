//! `iopath bench placement`: the Spider paper's (000 §4–5) placement experiment on an
//! emulated torus.
//!
//! On Jaguar, IOR ranks went where the launcher put them and rank `i` wrote OST `i`: the
//! dimension-order routes of a compact job towards servers spread over the torus piled up
//! on a few links, and the job finished at the pace of its slowest writers. Placing each
//! server's writers on the free nodes nearest to it (`Placement::nearest_free`) kept every
//! link under its saturation point: +18% on average, up to +45%, and the spread of
//! completion times fell from 15.5 s to under 5 s.
//!
//! Here a miniature machine runs as an embedded stack on a torus crossed hop by hop
//! ([`iopath_fabric::torus`]): storage servers direct-attached at service positions spread
//! over the torus, each with modeled disks, and one client node per writer at the
//! coordinates the placement chose. Each writer writes its own file, striped once on its
//! target, keeping a few transfers in flight; every writer's completion time is measured. For
//! every run the topology crate's flow model predicts the same machine, so each measured
//! figure is printed beside the model's and the paper's.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_client::StripeRequest;
use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::file::{JournalName, NetworkEntry, NodeEntry};
use iopath_stack::schema::{RoleName, StackFile};
use iopath_topology::study::TimeSummary;
use iopath_topology::{Coord, Pair, Placement, PlacementKind, Target, Torus};
use serde::Serialize;

use crate::lab::Lab;
use iopath_bench::BenchError;
use iopath_bench::prediction::{MachineFlows, WriterFlow};

/// The paper's average gain with more than 40 OSSes (Figure 6).
pub const PAPER_GAIN_AVERAGE: f64 = 0.18;
/// The paper's smallest and largest gains.
pub const PAPER_GAIN_RANGE: (f64, f64) = (0.05, 0.45);
/// The spread of completion times, default placement then placed, seconds (Figure 7).
pub const PAPER_SPREAD_S: (f64, f64) = (15.5, 5.0);
/// An OST's sustained rate on Spider, MB/s (000 §4).
pub const PAPER_OST_MB_S: f64 = 180.0;
/// Client–OST pairs a SeaStar link carried before saturating (3,020 / 180).
pub const PAPER_PAIRS_PER_LINK: f64 = 17.0;
/// Most service positions (storage servers) the miniature machine lays out.
pub const SERVERS_MAX: u32 = 8;

/// What `iopath bench placement` runs.
#[derive(Debug, Clone)]
pub struct PlacementConfig {
    /// The torus, routers per axis.
    pub dims: [u32; 3],
    /// Storage-server counts to sweep (each 1 to [`SERVERS_MAX`]).
    pub servers: Vec<u32>,
    /// Targets per server; a writer per target.
    pub targets_per_server: u32,
    /// An OST's modeled rate, bytes per modeled second.
    pub ost_bytes_s: u64,
    /// Client–OST pairs one link carries before it saturates: the link's rate is this many
    /// OSTs' (the paper's machine: 17; a miniature job needs fewer to load its links alike).
    pub pairs_per_link: u32,
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
    /// Every node in this process, or a process per server node (the torus modeled once,
    /// here, for all of them).
    pub mode: Mode,
}

impl Default for PlacementConfig {
    fn default() -> Self {
        PlacementConfig {
            dims: [8, 4, 2],
            servers: vec![2, 4, 8],
            targets_per_server: 4,
            ost_bytes_s: 180_000_000,
            pairs_per_link: 3,
            time_scale: 64,
            bytes_per_writer: 16 << 20,
            transfer: 1 << 20,
            depth: 4,
            dir: None,
            mode: Mode::Embedded,
        }
    }
}

impl PlacementConfig {
    /// A small sweep for the test suite: two server counts on a smaller torus, less data.
    pub fn quick() -> Self {
        PlacementConfig {
            dims: [4, 4, 2],
            servers: vec![2, 4],
            // Fewer pairs fill a link on the smaller torus, as they do on the larger one.
            pairs_per_link: 2,
            bytes_per_writer: 8 << 20,
            ..PlacementConfig::default()
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
        if self.servers.is_empty() || self.servers.iter().any(|&s| s == 0 || s > SERVERS_MAX) {
            return Err(bad(
                "--servers",
                format!("1 to {SERVERS_MAX} storage servers per run"),
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
        if !(1..=16).contains(&self.depth) {
            return Err(bad("--depth", "1 to 16 writes in flight".into()));
        }
        let machine = self.machine()?;
        let most = self.servers.iter().max().copied().unwrap_or(0);
        let mut positions = machine.service[..most as usize].to_vec();
        positions.push(machine.mds);
        if !all_distinct(&positions) {
            return Err(bad(
                "--dims",
                format!("too small for {most} servers and the MDS, each at a position of its own"),
            ));
        }
        let writers = most * self.targets_per_server;
        let clients = machine.clients.len() as u32;
        if writers > clients {
            return Err(bad(
                "--servers",
                format!(
                    "{writers} writers need {writers} compute nodes; a {}x{}x{} torus has {clients}",
                    self.dims[0], self.dims[1], self.dims[2]
                ),
            ));
        }
        Ok(())
    }

    fn link_bytes_s(&self) -> u64 {
        self.ost_bytes_s * u64::from(self.pairs_per_link)
    }

    /// A server's NIC: half again its targets' rate, so its card is not the limit.
    fn server_nic_bytes_s(&self) -> u64 {
        self.ost_bytes_s * u64::from(self.targets_per_server) * 3 / 2
    }

    /// The miniature machine: service positions spread over the torus (storage servers take
    /// the first ones), the MDS, and the compute nodes in launcher order.
    fn machine(&self) -> Result<Machine, BenchError> {
        let [x, y, z] = self.dims;
        let torus = Torus::new(x, y, z).map_err(|e| BenchError::BadOption {
            option: "--dims".into(),
            why: e.to_string(),
        })?;
        // Two positions along X (a quarter and three quarters round), then Y, then Z.
        let service: Vec<Coord> = (0..SERVERS_MAX)
            .map(|s| {
                Coord::new(
                    x / 4 + (s % 2) * (x / 2),
                    ((s / 2) % 2) * (y / 2),
                    ((s / 4) % 2) * (z / 2),
                )
            })
            .collect();
        let mds = Coord::new(0, y - 1, z - 1);
        // The launcher hands out nodes in router order (X slowest), as cabinet by cabinet.
        let clients = torus
            .coords()
            .filter(|c| *c != mds && !service.contains(c))
            .collect();
        Ok(Machine {
            torus,
            service,
            mds,
            clients,
        })
    }
}

/// How a run's placement reads in a progress line: `default` is the launcher's order.
pub(crate) fn placement_words(name: &str) -> &str {
    match name {
        "default" => "in launcher order",
        other => other,
    }
}

/// Whether no two of `positions` are the same router.
pub(crate) fn all_distinct(positions: &[Coord]) -> bool {
    let mut seen = positions.to_vec();
    seen.sort_unstable_by_key(|c| (c.x, c.y, c.z));
    seen.dedup();
    seen.len() == positions.len()
}

struct Machine {
    torus: Torus,
    service: Vec<Coord>,
    mds: Coord,
    clients: Vec<Coord>,
}

/// One run: a server count and a placement.
#[derive(Debug, Clone, Serialize)]
pub struct PlacementRun {
    /// `default` (launcher order) or `placed`.
    pub placement: String,
    /// Storage servers.
    pub servers: u32,
    /// Writers (one per target).
    pub writers: u32,
    /// Most client–OST pairs any link carried.
    pub max_pairs_per_link: u32,
    /// Aggregate bandwidth, MB per modeled second: all bytes over the last writer's time.
    pub aggregate_mb_s: f64,
    /// The flow model's aggregate for the same machine and pairs.
    pub model_aggregate_mb_s: f64,
    /// Measured over modeled.
    pub ratio_to_model: f64,
    /// The aggregate over the targets' raw rate.
    pub share_of_raw: f64,
    /// Each writer's completion time, modeled seconds, in target order.
    pub completion_s: Vec<f64>,
    /// The model's completion times.
    pub model_completion_s: Vec<f64>,
    /// Slowest minus fastest writer, modeled seconds.
    pub spread_s: f64,
    /// The model's spread.
    pub model_spread_s: f64,
}

/// One server count: both placements.
#[derive(Debug, Clone, Serialize)]
pub struct PlacementRow {
    /// Storage servers.
    pub servers: u32,
    /// Launcher order.
    pub default: PlacementRun,
    /// Nearest free nodes per server.
    pub placed: PlacementRun,
    /// Placed over default, minus one.
    pub gain: f64,
    /// The model's gain.
    pub model_gain: f64,
}

/// What `iopath bench placement` measured.
#[derive(Debug, Clone, Serialize)]
pub struct PlacementReport {
    /// The torus, `XxYxZ`.
    pub torus: String,
    /// An OST's modeled rate, MB/s; a link's; the time scale.
    pub ost_mb_s: f64,
    /// A link's modeled rate, MB/s.
    pub link_mb_s: f64,
    /// Host seconds per modeled second.
    pub time_scale: u32,
    /// MiB each writer wrote.
    pub mib_per_writer: f64,
    /// One row per server count.
    pub rows: Vec<PlacementRow>,
    /// What was modeled and what real.
    pub modeled: String,
    /// How the stacks ran: `embedded` or `processes`.
    pub mode: String,
    /// The same, in words.
    pub ran: String,
}

/// The experiment as a [`Lab`]: what `iopath bench placement` runs.
#[derive(Debug, Clone, Copy)]
pub struct PlacementLab;

impl Lab for PlacementLab {
    type Config = PlacementConfig;
    type Report = PlacementReport;

    const DRAWS: &'static str = "completion times";

    fn quick() -> PlacementConfig {
        PlacementConfig::quick()
    }

    fn storage_dir(config: &mut PlacementConfig) -> &mut Option<PathBuf> {
        &mut config.dir
    }

    /// Runs the sweep, saying on `progress` what it does.
    async fn run(
        config: &PlacementConfig,
        progress: &mut impl std::io::Write,
    ) -> Result<PlacementReport, BenchError> {
        config.check()?;
        let machine = config.machine()?;
        let mut rows = Vec::new();
        let mut modeled = String::new();
        for &servers in &config.servers {
            let targets: Vec<Target> = (0..servers * config.targets_per_server)
                .map(|t| {
                    let server = t / config.targets_per_server;
                    Target {
                        index: t,
                        server,
                        anchor: machine.service[server as usize],
                    }
                })
                .collect();
            let default = Placement::launcher_order(&machine.clients, &targets).map_err(|e| {
                BenchError::BadOption {
                    option: "--servers".into(),
                    why: e.to_string(),
                }
            })?;
            let placed = Placement::nearest_free(
                &machine.torus,
                &machine.clients,
                &targets,
                PlacementKind::Placed,
            )
            .map_err(|e| BenchError::BadOption {
                option: "--servers".into(),
                why: e.to_string(),
            })?;
            let mut runs = Vec::new();
            for (name, placement) in [("default", &default), ("placed", &placed)] {
                let _ = writeln!(
                    progress,
                    "{servers} servers, {} writers {} ...",
                    placement.pairs.len(),
                    placement_words(name)
                );
                let (run, words) = run_one(config, &machine, servers, name, placement).await?;
                let _ = writeln!(
                    progress,
                    "  {:.0} MB/s (the flow model: {:.0}), writers finished over {:.1} ms (modeled)",
                    run.aggregate_mb_s,
                    run.model_aggregate_mb_s,
                    run.spread_s * 1e3
                );
                modeled = words;
                runs.push(run);
            }
            let placed = runs.pop().unwrap_or_else(|| unreachable!("two runs"));
            let default = runs.pop().unwrap_or_else(|| unreachable!("two runs"));
            rows.push(PlacementRow {
                servers,
                gain: placed.aggregate_mb_s / default.aggregate_mb_s - 1.0,
                model_gain: placed.model_aggregate_mb_s / default.model_aggregate_mb_s - 1.0,
                default,
                placed,
            });
        }
        Ok(PlacementReport {
            torus: machine.torus.dims_text(),
            ost_mb_s: config.ost_bytes_s as f64 / 1e6,
            link_mb_s: config.link_bytes_s() as f64 / 1e6,
            time_scale: config.time_scale,
            mib_per_writer: config.bytes_per_writer as f64 / f64::from(1 << 20),
            rows,
            modeled,
            mode: config.mode.name().into(),
            ran: ran_words(config.mode),
        })
    }

    /// The report for people: a row per server count, the model's and the paper's figures beside.
    fn render(report: &PlacementReport) -> String {
        let mut out = format!(
            "placement on a {} torus: OSTs at {:.0} MB/s, links at {:.0} MB/s ({} OSTs' worth; \
             Jaguar's: {PAPER_PAIRS_PER_LINK}), {:.0} MiB per writer, time scale {}

",
            report.torus,
            report.ost_mb_s,
            report.link_mb_s,
            report.link_mb_s / report.ost_mb_s,
            report.mib_per_writer,
            report.time_scale
        );
        out.push_str(
            "                | default placement                          | placed                                     |
\
             servers writers | MB/s (model, ratio)  pairs/link spread ms | MB/s (model, ratio)  pairs/link spread ms | gain (model)
",
        );
        for row in &report.rows {
            let run = |r: &PlacementRun| {
                format!(
                    "{:>5.0} ({:>5.0}, {:.2}) {:>10} {:>9.1}",
                    r.aggregate_mb_s,
                    r.model_aggregate_mb_s,
                    r.ratio_to_model,
                    r.max_pairs_per_link,
                    r.spread_s * 1e3
                )
            };
            out.push_str(&format!(
                "{:>7} {:>7} | {} | {} | {:+.0}% ({:+.0}%)
",
                row.servers,
                row.default.writers,
                run(&row.default),
                run(&row.placed),
                row.gain * 100.0,
                row.model_gain * 100.0
            ));
        }
        out.push_str(&format!(
            "
the paper (Jaguar, 96 OSSes, 672 writers): placed {:+.0}% on average above 40 OSSes \
             ({:+.0}% to {:+.0}%), completion spread {} s -> under {} s
",
            PAPER_GAIN_AVERAGE * 100.0,
            PAPER_GAIN_RANGE.0 * 100.0,
            PAPER_GAIN_RANGE.1 * 100.0,
            PAPER_SPREAD_S.0,
            PAPER_SPREAD_S.1
        ));
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
            "real: every byte through the fabric (the torus's pace is modeled), the storage servers' \
             journals and files on this host's disk (their pace modeled); times are modeled seconds
",
        );
        out
    }

    /// The completion times of the largest run, default against placed, as CDFs.
    fn figure(report: &PlacementReport) -> Option<iopath_plot::Figure> {
        use iopath_plot::{Axis, Figure, Series};
        let row = report.rows.last()?;
        Some(Figure {
            title: format!(
                "Per-writer completion time, {} writers on {} servers ({} torus)",
                row.default.writers, row.servers, report.torus
            ),
            x: Axis::around_data("completion time (modeled ms)"),
            y: Axis::from_zero("fraction of writers done").fixed(0.0, 1.0),
            y2: None,
            series: vec![
                Series::cdf(
                    "default placement (measured)",
                    &ms(&row.default.completion_s),
                ),
                Series::cdf("placed (measured)", &ms(&row.placed.completion_s)),
                Series::cdf("default (flow model)", &ms(&row.default.model_completion_s)),
                Series::cdf("placed (flow model)", &ms(&row.placed.model_completion_s)),
            ],
            rules: Vec::new(),
            footnote: format!(
                "Measured: each writer's time to write {:.0} MiB on an emulated torus crossed hop by \
                 hop (modeled links and disks at time scale {}); the flow model computes the same \
                 machine. Paper (Jaguar): default spread 15.5 s, placed under 5 s.",
                report.mib_per_writer, report.time_scale
            ),
        })
    }
}

/// The stack of one run: the MDS, the storage servers at their service positions, a client
/// node per writer at its placed coordinate, on one torus crossed hop by hop.
fn stack_file(
    config: &PlacementConfig,
    machine: &Machine,
    servers: u32,
    pairs: &Placement,
) -> StackFile {
    let at = |coord: Coord| [coord.x, coord.y, coord.z];
    let mut file = StackFile::named("placement")
        .description("the placement experiment's miniature machine")
        .time_scale(config.time_scale)
        .stripe_count(1)
        .network(
            NetworkEntry::named("torus0")
                .torus(config.dims)
                .bandwidth(config.link_bytes_s())
                .latency_us(1)
                .hop_by_hop(),
        )
        .node(
            NodeEntry::new("mds", RoleName::Mds)
                .nid("torus0", 1)
                .torus(at(machine.mds)),
        );
    for s in 0..servers {
        file = file.node(
            NodeEntry::new(format!("oss{s}"), RoleName::Oss)
                .nid("torus0", 10 + u64::from(s))
                .torus(at(machine.service[s as usize]))
                .targets(config.targets_per_server)
                .journal(JournalName::Async)
                .disk_bandwidth(config.ost_bytes_s)
                .nic_bandwidth(config.server_nic_bytes_s()),
        );
    }
    for (w, pair) in pairs.pairs.iter().enumerate() {
        file = file.node(
            NodeEntry::new(format!("w{w}"), RoleName::Client)
                .nid("torus0", 100 + w as u64)
                .torus(at(pair.client)),
        );
    }
    file
}

async fn run_one(
    config: &PlacementConfig,
    machine: &Machine,
    servers: u32,
    name: &str,
    placement: &Placement,
) -> Result<(PlacementRun, String), BenchError> {
    let stack =
        stack_file(config, machine, servers, placement).check("the placement experiment")?;
    let modeled = stack.modeled();
    // Each writer's target, as the file system numbers it.
    let targets: Vec<u32> = placement
        .pairs
        .iter()
        .map(|pair| target_index(config, servers, pair))
        .collect();
    // The flow model of the same stack: each writer's client node to its target.
    let clients = stack.nodes_of(RoleName::Client);
    let writers: Vec<WriterFlow> = targets
        .iter()
        .zip(&clients)
        .map(|(&target, &client)| WriterFlow {
            client,
            targets: vec![target],
        })
        .collect();
    let model = MachineFlows::of(&stack, &writers)?
        .completion_s(config.bytes_per_writer, config.transfer)?;
    let storage = StorageDir::temporary("bench-placement", config.dir.as_deref())?;
    let running = RunningStack::start(stack, config.mode, storage, None).await?;
    let result = write_all(&config.writes(), &running, &targets).await;
    let stopped = running.stop().await;
    let times = result?;
    stopped?;
    let scale = f64::from(config.time_scale);
    let completion_s: Vec<f64> = times.iter().map(|t| t.as_secs_f64() / scale).collect();
    let total_mb = config.bytes_per_writer as f64 * times.len() as f64 / 1e6;
    let makespan = completion_s.iter().copied().fold(0.0, f64::max);
    let aggregate_mb_s = total_mb / makespan;
    let model_makespan = model.iter().copied().fold(0.0, f64::max);
    let model_aggregate_mb_s = total_mb / model_makespan;
    let raw = placement.pairs.len() as f64 * config.ost_bytes_s as f64 / 1e6;
    let mut loads = iopath_topology::LinkLoads::new(&machine.torus);
    for pair in &placement.pairs {
        loads.add_route(&machine.torus, pair.client, pair.target.anchor, 1.0);
    }
    Ok((
        PlacementRun {
            placement: name.into(),
            servers,
            writers: placement.pairs.len() as u32,
            max_pairs_per_link: loads.max_pairs() as u32,
            aggregate_mb_s,
            model_aggregate_mb_s,
            ratio_to_model: aggregate_mb_s / model_aggregate_mb_s,
            share_of_raw: aggregate_mb_s / raw,
            spread_s: spread(&completion_s),
            model_spread_s: spread(&model),
            completion_s,
            model_completion_s: model,
        },
        modeled,
    ))
}

fn spread(times: &[f64]) -> f64 {
    TimeSummary::of(times).spread_s()
}

/// The file-system index of `pair`'s target. The experiment numbers OSTs in blocks per server,
/// as Jaguar's were (rank i writes OST i); the stack numbers them round the servers, as Lustre
/// does.
fn target_index(config: &PlacementConfig, servers: u32, pair: &Pair) -> u32 {
    let local = pair.target.index % config.targets_per_server;
    let counts = vec![config.targets_per_server; servers as usize];
    iopath_layout::dealt_index(&counts, pair.target.server as usize, local)
        .expect("a pair's target is one of its server's")
}

/// What each writer of an experiment writes.
#[derive(Debug, Clone, Copy)]
pub struct Writes {
    /// Bytes each writer writes.
    pub bytes_per_writer: u64,
    /// Bytes per write call.
    pub transfer: u64,
    /// Writes each writer keeps in flight.
    pub depth: u32,
}

impl PlacementConfig {
    fn writes(&self) -> Writes {
        Writes {
            bytes_per_writer: self.bytes_per_writer,
            transfer: self.transfer,
            depth: self.depth,
        }
    }
}

/// Every writer at once: writer `w` on the stack's `w`-th client node, its file striped once
/// on target `targets[w]`, `depth` writes in flight; each writer's time from the common start
/// to its last write's reply.
pub async fn write_all(
    config: &Writes,
    running: &RunningStack,
    targets: &[u32],
) -> Result<Vec<Duration>, BenchError> {
    let clients = running.clients();
    let mut files = Vec::new();
    for (w, &target) in targets.iter().enumerate() {
        let client = running.connect(clients[w]).await?;
        let stripe = StripeRequest {
            stripe_size_bytes: config.transfer,
            stripe_count: 1,
            stripe_offset: i64::from(target),
        };
        let file = client
            .create(&format!("/w{w}"), stripe)
            .await
            .map_err(|e| BenchError::io(format!("create /w{w}"), e))?;
        files.push((client, file));
    }
    let data = Bytes::from(vec![0x5au8; config.transfer as usize]);
    let started = Instant::now();
    let mut writers = tokio::task::JoinSet::new();
    for (w, (_, file)) in files.iter().enumerate() {
        let file = file.clone();
        let data = data.clone();
        let transfers = config.bytes_per_writer / config.transfer;
        let (transfer, depth) = (config.transfer, u64::from(config.depth));
        writers.spawn(async move {
            let mut lanes = tokio::task::JoinSet::new();
            for lane in 0..depth.min(transfers) {
                let file = file.clone();
                let data = data.clone();
                lanes.spawn(async move {
                    let mut n = lane;
                    while n < transfers {
                        file.write_at(n * transfer, data.clone()).await?;
                        n += depth;
                    }
                    Ok::<(), iopath_client::ClientError>(())
                });
            }
            while let Some(done) = lanes.join_next().await {
                done.map_err(|e| BenchError::io(format!("writer {w}"), e))?
                    .map_err(|e| BenchError::io(format!("write /w{w}"), e))?;
            }
            Ok::<(usize, Duration), BenchError>((w, started.elapsed()))
        });
    }
    let mut times = vec![Duration::ZERO; files.len()];
    while let Some(done) = writers.join_next().await {
        let (w, took) = done.map_err(|e| BenchError::io("a writer", e))??;
        times[w] = took;
    }
    for (client, file) in files {
        file.close().await.map_err(|e| BenchError::io("close", e))?;
        client
            .close()
            .await
            .map_err(|e| BenchError::io("disconnect", e))?;
    }
    Ok(times)
}

fn ms(seconds: &[f64]) -> Vec<f64> {
    seconds.iter().map(|s| s * 1e3).collect()
}

/// How a benchmark's stacks ran, in words, for its report: the mode as `Mode` says it, and,
/// over processes, where the torus was modeled.
pub(crate) fn ran_words(mode: Mode) -> String {
    match mode {
        Mode::Processes => format!(
            "{}; the torus modeled once, in this process, for every node on it (the node \
             processes through its switch)",
            mode.describe()
        ),
        _ => mode.describe().to_owned(),
    }
}
