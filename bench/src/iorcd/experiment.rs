//! `iopath bench iorcd`: paper 002's two findings, measured on a routed stack with IORCD's
//! own records.
//!
//! **Congestion tracks bandwidth.** The paper ran IOR at rising rank counts, each run sized to
//! fill IORCD's sampling window, and set the router congestion of the window beside the
//! bandwidth: Pearson 0.94 for writes, 0.85 for reads. Here each load (a number of IOR tasks)
//! writes for a few sampling intervals (IOR's stonewalling deadline), then reads back what it
//! wrote for as long; the congestion of a run is the routers' congestion in the intervals that
//! lie wholly inside its phase, summed over routers, and its bandwidth is IOR's.
//!
//! **A run impeded behind the routers looks like low congestion that lasts.** The paper's
//! degraded runs showed low congestion over more than two samples, where healthy runs spiked
//! within one; the cause was an OSS slowed by a locking problem, which throttled the routers'
//! traffic through LNet's credits. Here the same short IOR run (sized to take at least half an interval
//! at the healthy rate) runs on the stack as it is, on the stack with its storage servers
//! impeded (each target's modeled disk at a fraction of the healthy run's rate), and on the
//! stack with its routers starved of buffers (few large router buffers, one per sender);
//! IORCD's rule (`super::bursts`) then reads the records of all of them.
//!
//! The stack runs as a process per server node on loopback TCP, the IOR tasks in this
//! process: congestion is time queued for send credits, and only a real socket holds a send
//! long enough to queue behind it (an in-memory link delivers at once).

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::{Duration, SystemTime};

use iopath_client::Client;
use iopath_fabric::iorcd::Sample;
use iopath_fabric::router::RouterConfig;
use iopath_stack::StackChoice;
use iopath_stack::runtime::{Launcher, Mode, RunningStack, StorageDir};
use iopath_stack::schema::{NetworkLink, OstDisk, Role, RoleName, Stack};
use serde::Serialize;

use super::{Burst, Direction, Point, Samplers, bursts, pearson, series};
use crate::error::BenchError;
use crate::ior::params::IorParams;
use crate::ior::phase;

/// The paper's coefficients (Figures 3 and 4), printed beside ours.
pub const PAPER_PEARSON_WRITE: f64 = 0.94;
/// Reads.
pub const PAPER_PEARSON_READ: f64 = 0.85;

/// The links the experiment models when the stack models none: Titan's in miniature — a
/// compute node's share of the Gemini torus, and the routers' QDR InfiniBand (3.2 GB/s) — at
/// a time scale this host keeps up with.
pub const COMPUTE_LINK: NetworkLink = NetworkLink {
    bandwidth_bytes_s: 1_600_000_000,
    latency_us: 2,
};
/// The storage side's links.
pub const STORAGE_LINK: NetworkLink = NetworkLink {
    bandwidth_bytes_s: 3_200_000_000,
    latency_us: 2,
};
/// Host seconds per modeled second.
pub const TIME_SCALE: u32 = 32;

/// The experiment's settings.
#[derive(Debug, Clone)]
pub struct ExperimentConfig {
    /// The stack: a routed one (default spider-mini-routed).
    pub choice: StackChoice,
    /// IOR tasks of each run of the load series, in order.
    pub loads: Vec<u32>,
    /// IORCD's sampling interval.
    pub interval: Duration,
    /// Intervals each phase of the load series lasts.
    pub windows: u32,
    /// IOR's transfer size.
    pub transfer_bytes: u64,
    /// IOR tasks of the runs the rule reads.
    pub degraded_tasks: u32,
    /// Runs of each condition.
    pub repeats: u32,
    /// The impeded storage's rate, as a fraction of the healthy run's: its targets' modeled
    /// disks together write this fraction of what the healthy run wrote per second.
    pub impeded_fraction: f64,
    /// The starved routers' large buffers (LNet `large_router_buffers`).
    pub starved_large_buffers: u32,
    /// The starved routers' buffers per sender (LNet `peer_buffer_credits`).
    pub starved_peer_credits: u32,
    /// IORCD's rule: more than this many samples ...
    pub samples_max: usize,
    /// ... below this fraction of the highest burst's congestion.
    pub low: f64,
    /// Give an unmodeled stack the experiment's links ([`COMPUTE_LINK`], [`STORAGE_LINK`] at
    /// [`TIME_SCALE`]); false: run at the host's speed.
    pub model: bool,
    /// Directory for the stacks' storage; default: a temporary one in the current directory.
    pub dir: Option<PathBuf>,
}

impl Default for ExperimentConfig {
    fn default() -> Self {
        ExperimentConfig {
            choice: StackChoice {
                preset: Some(iopath_stack::ROUTED_PRESET.into()),
                ..StackChoice::default()
            },
            loads: vec![1, 2, 4, 8, 16, 32],
            interval: Duration::from_millis(500),
            windows: 4,
            transfer_bytes: 4 << 20,
            degraded_tasks: 8,
            repeats: 2,
            impeded_fraction: 0.125,
            starved_large_buffers: 1,
            starved_peer_credits: 1,
            samples_max: 2,
            low: 0.5,
            model: true,
            dir: None,
        }
    }
}

/// One phase of one run, as IOR measured it and as IORCD saw it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct PhaseSeen {
    /// Write or read.
    pub direction: Direction,
    /// When the phase began and ended, seconds since the Unix epoch.
    pub start_epoch: f64,
    /// End.
    pub end_epoch: f64,
    /// Bytes IOR moved.
    pub bytes: u64,
    /// IOR's bandwidth, MiB/s.
    pub bandwidth_mib_s: f64,
    /// Sampling intervals wholly inside the phase, over every router.
    pub intervals: usize,
    /// Congestion: seconds queued to leave the routers per second, summed over routers.
    pub congestion: f64,
    /// Seconds queued for router credits and buffers to get in, per second, summed.
    pub credit_waits: f64,
    /// Bytes the routers forwarded in this direction per second in those intervals, MiB/s.
    pub router_mib_s: f64,
}

/// One run of the load series.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadRun {
    /// IOR tasks.
    pub tasks: u32,
    /// Client nodes they ran on.
    pub nodes: u32,
    /// The write phase, then the read phase.
    pub phases: Vec<PhaseSeen>,
}

/// How congestion followed bandwidth over the series, in one direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SeriesCorrelation {
    /// Write or read.
    pub direction: Direction,
    /// Pearson's r of congestion against IOR's bandwidth over the runs.
    pub pearson: Option<f64>,
    /// The paper's.
    pub paper: f64,
}

/// What the stack of a run the rule reads was like.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Condition {
    /// As it is.
    Healthy,
    /// Its storage servers' disks slowed (the paper's degraded runs: an OSS behind the
    /// routers under-performing).
    ImpededStorage,
    /// Its routers starved of buffers.
    StarvedRouters,
}

impl Condition {
    /// Every condition, in the order they run.
    pub const ALL: [Condition; 3] = [
        Condition::Healthy,
        Condition::ImpededStorage,
        Condition::StarvedRouters,
    ];

    /// A word for tables: `healthy`, `impeded`, `starved`.
    pub fn word(self) -> &'static str {
        match self {
            Condition::Healthy => "healthy",
            Condition::ImpededStorage => "impeded",
            Condition::StarvedRouters => "starved",
        }
    }

    /// Whether its runs are degraded by design: the rule should flag them.
    pub fn should_be_flagged(self) -> bool {
        self == Condition::ImpededStorage
    }
}

/// One run of the degraded part, with the bursts IORCD's rule read in it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RuleRun {
    /// `healthy 1`, `impeded 1`, ...
    pub label: String,
    /// The stack it ran on.
    pub condition: Condition,
    /// Its phases.
    pub phases: Vec<PhaseSeen>,
    /// The bursts of its time, one per router and direction that forwarded data.
    pub bursts: Vec<RunBurst>,
    /// Whether the rule flagged any of its bursts.
    pub flagged: bool,
    /// Write congestion in each sampling interval from the one before it starts to the one
    /// after it ends, summed over routers (seconds queued per second).
    pub write_timeline: Vec<f64>,
}

/// A burst, with the router named as in the stack.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunBurst {
    /// The router's node name.
    pub router: String,
    /// The burst.
    #[serde(flatten)]
    pub burst: Burst,
}

/// Everything the experiment measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Experiment {
    /// The stack's name.
    pub stack: String,
    /// Its routers.
    pub routers: Vec<String>,
    /// The networks the storage servers are on.
    pub storage_nets: Vec<String>,
    /// The sampling interval, seconds.
    pub interval_s: f64,
    /// IOR's transfer size.
    pub transfer_bytes: u64,
    /// The load series.
    pub loads: Vec<LoadRun>,
    /// Congestion against bandwidth, per direction.
    pub correlations: Vec<SeriesCorrelation>,
    /// The starved routers' settings.
    pub starved_buffers: StarvedBuffers,
    /// The impeded storage's disks.
    pub impeded_disk: ImpededDisk,
    /// The runs the rule read, of every condition.
    pub rule_runs: Vec<RuleRun>,
    /// Each condition's runs in sum.
    pub conditions: Vec<ConditionSeen>,
    /// The rule's parameters.
    pub samples_max: usize,
    /// Its threshold.
    pub low: f64,
    /// Whether the rule flagged every impeded run and no healthy one (starved runs are
    /// reported, not judged: see [`ConditionSeen::time_vs_healthy`]).
    pub rule_holds: bool,
    /// What was real and what modeled.
    pub modeled: String,
}

/// The impeded storage servers' modeled disks.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct ImpededDisk {
    /// The fraction of the healthy run's rate they give together.
    pub fraction: f64,
    /// Each target's disk, modeled bytes per second.
    pub bandwidth_bytes_s: u64,
    /// Targets in the stack.
    pub targets: u32,
}

/// A condition's runs in sum.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ConditionSeen {
    /// Which.
    pub condition: Condition,
    /// Its runs.
    pub runs: usize,
    /// How many the rule flagged.
    pub flagged: usize,
    /// Its writes' mean time over the healthy runs' (none when the healthy runs took none).
    pub time_vs_healthy: Option<f64>,
    /// Its write bursts' mean congestion (summed over routers) over the healthy runs' (none
    /// when the healthy runs showed none).
    pub congestion_vs_healthy: Option<f64>,
}

/// The starved routers' buffers.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct StarvedBuffers {
    /// `large_router_buffers`.
    pub large_router_buffers: u32,
    /// `peer_buffer_credits`.
    pub peer_buffer_credits: u32,
}

/// Runs the experiment; `say` hears each step and result as it comes. `launcher` starts the
/// node processes (default: this program's `node`).
pub async fn run(
    config: &ExperimentConfig,
    launcher: Option<&Launcher>,
    say: &mut dyn FnMut(&str),
) -> Result<Experiment, BenchError> {
    check(config)?;
    let mut stack = config.choice.load()?;
    if config.model && !stack.is_modeled() {
        model(&mut stack);
        say(&format!("modeled: {}", stack.modeled()));
    }
    let routers = stack.nodes_of(RoleName::Router);
    if routers.is_empty() {
        return Err(BenchError::BadOption {
            option: "--stack".into(),
            why: format!("{} has no routers for IORCD to watch", stack.origin),
        });
    }
    let client_nodes = stack.nodes_of(RoleName::Client).len() as u32;
    if client_nodes == 0 {
        return Err(BenchError::BadOption {
            option: "--stack".into(),
            why: format!("{} has no client nodes to run IOR on", stack.origin),
        });
    }
    let parent = config.dir.clone().unwrap_or_else(|| PathBuf::from("."));

    // The load series, on the stack as it is.
    say(&format!(
        "starting {} (a process per server node), IORCD every {} ms",
        stack.name,
        config.interval.as_millis()
    ));
    let healthy = Watched::start(stack.clone(), &parent, launcher, config.interval).await?;
    let outcome = load_series(config, &healthy, say).await;
    let (loads, healthy_rule) = match outcome {
        Ok(loads) => {
            let per_task = fixed_bytes_per_task(config, &loads);
            say(&format!(
                "degraded rule: {} healthy run(s) of {} tasks x {} MiB",
                config.repeats,
                config.degraded_tasks,
                per_task >> 20
            ));
            let rate = healthy_write_mib_s(config, &loads);
            let runs = rule_runs(config, &healthy, per_task, Condition::Healthy, say).await;
            (loads, runs.map(|r| (r, (per_task, rate))))
        }
        Err(e) => {
            let _ = healthy.stop().await;
            return Err(e);
        }
    };
    let healthy_samples = healthy.routers.samples().await;
    let healthy_names = healthy.routers.names_by_nid();
    let storage_nets = healthy.storage_nets.clone();
    healthy.stop().await?;
    let (healthy_runs, (per_task, healthy_mib_s)) = healthy_rule?;
    let healthy_samples = healthy_samples?;

    // The load series: each phase's congestion from the intervals inside it.
    let healthy_series = series(&healthy_samples, &storage_nets);
    let loads: Vec<LoadRun> = loads
        .into_iter()
        .map(|mut run| {
            for phase in &mut run.phases {
                seen_in(phase, &healthy_series);
            }
            run
        })
        .collect();
    let correlations = [Direction::Write, Direction::Read]
        .into_iter()
        .map(|direction| {
            let (congestion, bandwidth): (Vec<f64>, Vec<f64>) = loads
                .iter()
                .flat_map(|r| &r.phases)
                .filter(|p| p.direction == direction && p.intervals > 0)
                .map(|p| (p.congestion, p.bandwidth_mib_s))
                .unzip();
            SeriesCorrelation {
                direction,
                pearson: pearson(&congestion, &bandwidth),
                paper: match direction {
                    Direction::Write => PAPER_PEARSON_WRITE,
                    Direction::Read => PAPER_PEARSON_READ,
                },
            }
        })
        .collect();

    // The same short runs on the stack impeded, then starved.
    if !(healthy_mib_s.is_finite() && healthy_mib_s > 0.0) {
        return Err(BenchError::Tool {
            what: format!(
                "the healthy run of {} tasks moved no data ({healthy_mib_s} MiB/s): there is no rate to impede the storage to",
                config.degraded_tasks
            ),
        });
    }
    let impeded_disk = impeded_disk(config, &stack, healthy_mib_s);
    let mut watched_runs = vec![RunsOf {
        runs: healthy_runs,
        samples: healthy_samples,
        series: healthy_series,
        names: healthy_names,
    }];
    for condition in [Condition::ImpededStorage, Condition::StarvedRouters] {
        let (changed, how) = match condition {
            Condition::ImpededStorage => (
                impede(&stack, impeded_disk),
                format!(
                    "its storage impeded: each of its {} targets' disks at {:.1} MB/s modeled ({:.1}% of the healthy rate together)",
                    impeded_disk.targets,
                    impeded_disk.bandwidth_bytes_s as f64 / 1e6,
                    config.impeded_fraction * 100.0
                ),
            ),
            _ => (
                starve(&stack, config),
                format!(
                    "its routers starved: large_router_buffers = {}, peer_buffer_credits = {}",
                    config.starved_large_buffers, config.starved_peer_credits
                ),
            ),
        };
        say(&format!("starting {} again with {how}", stack.name));
        let watched = Watched::start(changed, &parent, launcher, config.interval).await?;
        let runs = rule_runs(config, &watched, per_task, condition, say).await;
        let samples = watched.routers.samples().await;
        let names = watched.routers.names_by_nid();
        watched.stop().await?;
        let samples = samples?;
        watched_runs.push(RunsOf {
            runs: runs?,
            series: series(&samples, &storage_nets),
            samples,
            names,
        });
    }

    // The rule, over the records of every condition's runs together (as an operator's log of
    // one application's runs), each burst given to the run whose time it falls in.
    let rule_samples: Vec<Sample> = watched_runs
        .iter()
        .flat_map(|w| {
            w.samples
                .iter()
                .filter(|s| w.runs.iter().any(|r| overlaps(s, r)))
        })
        .cloned()
        .collect();
    let found = bursts(
        &series(&rule_samples, &storage_nets),
        config.samples_max,
        config.low,
    );
    let mut rule_runs = Vec::new();
    for w in watched_runs {
        let seen = &w.series;
        for mut run in w.runs {
            for phase in &mut run.phases {
                seen_in(phase, seen);
            }
            run.bursts = found
                .iter()
                .filter(|b| w.names.contains_key(&b.router) && burst_in(b, &run))
                .map(|b| RunBurst {
                    router: w.names[&b.router].clone(),
                    burst: b.clone(),
                })
                .collect();
            run.flagged = run.bursts.iter().any(|b| b.burst.degraded);
            run.write_timeline = timeline(&run, seen, config.interval.as_secs_f64());
            rule_runs.push(run);
        }
    }
    let conditions = conditions_seen(&rule_runs);
    let rule_holds = rule_runs
        .iter()
        .filter(|r| r.condition != Condition::StarvedRouters)
        .all(|r| r.flagged == r.condition.should_be_flagged());
    Ok(Experiment {
        stack: stack.name.clone(),
        routers: routers
            .iter()
            .map(|&r| stack.nodes[r].name.clone())
            .collect(),
        storage_nets,
        interval_s: config.interval.as_secs_f64(),
        transfer_bytes: config.transfer_bytes,
        loads,
        correlations,
        starved_buffers: StarvedBuffers {
            large_router_buffers: config.starved_large_buffers,
            peer_buffer_credits: config.starved_peer_credits,
        },
        impeded_disk,
        rule_runs,
        conditions,
        samples_max: config.samples_max,
        low: config.low,
        rule_holds,
        modeled: format!(
            "{}; in the impeded runs, a disk under each target at {:.1} MB/s (in place of any the \
             stack had); real: bytes \
             over loopback TCP between a process per server node, files on this host's disk; \
             Titan's Gemini congestion counters are stood for by the time messages queue to \
             leave each router (for send credits and the modeled wire); torus hops are not \
             modeled",
            stack.modeled(),
            impeded_disk.bandwidth_bytes_s as f64 / 1e6
        ),
    })
}

fn check(config: &ExperimentConfig) -> Result<(), BenchError> {
    let bad = |option: &str, why: String| {
        Err(BenchError::BadOption {
            option: option.into(),
            why,
        })
    };
    super::check_interval(config.interval)?;
    if config.loads.len() < 3 || config.loads.iter().any(|&t| t == 0 || t > 1024) {
        return bad(
            "--loads",
            "at least three loads (a correlation needs three points), each 1 to 1024 tasks".into(),
        );
    }
    if !(3..=100).contains(&config.windows) {
        return bad(
            "--windows",
            format!(
                "{}: use 3 to 100 (a phase needs whole intervals inside it)",
                config.windows
            ),
        );
    }
    if config.transfer_bytes > 64 << 20 {
        return bad("--transfer-size", "at most 64 MiB".into());
    }
    // IOR's own checks of a transfer, before any stack starts.
    params(config, 1, config.transfer_bytes)?;
    if !(1..=1024).contains(&config.degraded_tasks) || !(1..=10).contains(&config.repeats) {
        return bad(
            "--degraded-tasks / --repeats",
            "1 to 1024 tasks, 1 to 10 repeats".into(),
        );
    }
    if !(config.impeded_fraction > 0.0 && config.impeded_fraction < 1.0) {
        return bad(
            "--impeded",
            format!(
                "{}: a fraction of the healthy rate, above 0 and below 1",
                config.impeded_fraction
            ),
        );
    }
    if !(0.0..=1.0).contains(&config.low) || config.samples_max == 0 {
        return bad(
            "--low / --samples-max",
            "a fraction 0 to 1, and at least one sample".into(),
        );
    }
    Ok(())
}

/// A running stack with its routers' IORCD at the experiment's interval.
struct Watched {
    running: RunningStack,
    clients: Vec<Client>,
    routers: Samplers,
    storage_nets: Vec<String>,
}

impl Watched {
    async fn start(
        stack: Stack,
        parent: &std::path::Path,
        launcher: Option<&Launcher>,
        interval: Duration,
    ) -> Result<Watched, BenchError> {
        let storage = StorageDir::temporary("bench-iorcd", Some(parent))?;
        let running = RunningStack::start(stack, Mode::Processes, storage, launcher).await?;
        match Watched::watch(running, interval).await {
            Ok(w) => Ok(w),
            Err((running, e)) => {
                let _ = running.stop().await;
                Err(e)
            }
        }
    }

    async fn watch(
        running: RunningStack,
        interval: Duration,
    ) -> Result<Watched, (RunningStack, BenchError)> {
        let stack = running.stack().clone();
        let routers = match Samplers::connect(&running, &[RoleName::Router]).await {
            Ok(r) => r,
            Err(e) => return Err((running, e)),
        };
        if let Err(e) = routers.start(interval).await {
            return Err((running, e));
        }
        let mut storage_nets: Vec<String> = stack
            .nodes_of(RoleName::Oss)
            .into_iter()
            .flat_map(|i| (0..stack.nodes[i].interfaces.len()).map(move |k| (i, k)))
            .map(|(i, k)| stack.nid_of(i, k).net.to_string())
            .collect();
        storage_nets.sort();
        storage_nets.dedup();
        let mut clients = Vec::new();
        for node in running.clients() {
            match running.connect(node).await {
                Ok(c) => clients.push(c),
                Err(e) => return Err((running, e.into())),
            }
        }
        Ok(Watched {
            running,
            clients,
            routers,
            storage_nets,
        })
    }

    async fn stop(self) -> Result<(), BenchError> {
        let ended = phase::end(&self.clients).await;
        self.running.stop().await?;
        ended
    }
}

/// IOR's options for one run: a file per task, `tasks` tasks, each `block` bytes in the
/// experiment's transfers.
fn params(config: &ExperimentConfig, tasks: u32, block: u64) -> Result<IorParams, BenchError> {
    phase::write_read_params(tasks, block, config.transfer_bytes, "/iorcd/testFile")
}

/// Long enough for the routers to sample an idle interval: bursts apart.
fn idle_time(config: &ExperimentConfig) -> Duration {
    config.interval * 3 / 2
}

/// Waits [`idle_time`].
async fn idle(config: &ExperimentConfig) {
    tokio::time::sleep(idle_time(config)).await;
}

fn epoch(t: SystemTime) -> f64 {
    t.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
        .as_secs_f64()
}

/// A write-then-read run's two phases as the experiment records them.
fn seen(phases: [phase::TimedPhase; 2]) -> Vec<PhaseSeen> {
    [Direction::Write, Direction::Read]
        .into_iter()
        .zip(phases)
        .map(|(direction, p)| PhaseSeen {
            direction,
            start_epoch: epoch(p.start),
            end_epoch: epoch(p.end),
            bytes: p.result.bytes,
            bandwidth_mib_s: p.result.bw_mib_s(),
            intervals: 0,
            congestion: 0.0,
            credit_waits: 0.0,
            router_mib_s: 0.0,
        })
        .collect()
}

async fn load_series(
    config: &ExperimentConfig,
    watched: &Watched,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<LoadRun>, BenchError> {
    let phase_time = config.interval * config.windows;
    let block = phase::stonewalled_block(config.transfer_bytes);
    idle(config).await;
    let mut runs = Vec::new();
    for (k, &tasks) in config.loads.iter().enumerate() {
        let params = params(config, tasks, block)?;
        let phases = phase::write_then_read(
            &watched.clients,
            params,
            tasks,
            Some(phase_time),
            k as u32 + 1,
            idle_time(config),
        )
        .await
        .map(seen)?;
        say(&format!(
            "load {:>2}/{}: {tasks:>4} tasks  write {:>8.1} MiB/s  read {:>8.1} MiB/s",
            k + 1,
            config.loads.len(),
            phases[0].bandwidth_mib_s,
            phases[1].bandwidth_mib_s
        ));
        runs.push(LoadRun {
            tasks,
            nodes: tasks.min(watched.clients.len() as u32),
            phases,
        });
    }
    Ok(runs)
}

/// One condition's runs with the records of the stack they ran on.
struct RunsOf {
    runs: Vec<RuleRun>,
    samples: Vec<Sample>,
    /// The samples' series, once.
    series: super::Series,
    /// Router node names by the NID the records name them with.
    names: BTreeMap<String, String>,
}

/// The healthy write rate of the load series' run nearest `degraded_tasks`, MiB/s.
fn healthy_write_mib_s(config: &ExperimentConfig, loads: &[LoadRun]) -> f64 {
    loads
        .iter()
        .min_by_key(|r| r.tasks.abs_diff(config.degraded_tasks))
        .map_or(0.0, |r| r.phases[0].bandwidth_mib_s)
}

/// Bytes per task of the runs the rule reads: at the healthy write rate, at least half an
/// interval's worth, in whole transfers (rounded up: rounded down, 7.7 MiB of 4 MiB transfers
/// became 4 MiB and the impeded runs fell inside two samples, where the rule cannot see them).
fn fixed_bytes_per_task(config: &ExperimentConfig, loads: &[LoadRun]) -> u64 {
    let mib_s = healthy_write_mib_s(config, loads);
    let total = mib_s * (1u64 << 20) as f64 * config.interval.as_secs_f64() / 2.0;
    let per_task = (total / f64::from(config.degraded_tasks)) as u64;
    per_task.div_ceil(config.transfer_bytes).max(1) * config.transfer_bytes
}

async fn rule_runs(
    config: &ExperimentConfig,
    watched: &Watched,
    per_task: u64,
    condition: Condition,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<RuleRun>, BenchError> {
    let kind = condition.word();
    idle(config).await;
    let mut runs = Vec::new();
    for k in 0..config.repeats {
        let params = params(config, config.degraded_tasks, per_task)?;
        let phases = phase::write_then_read(
            &watched.clients,
            params,
            config.degraded_tasks,
            None,
            100 + k,
            idle_time(config),
        )
        .await
        .map(seen)?;
        say(&format!(
            "{kind} {}: write {:.3} s ({:.1} MiB/s), read {:.3} s",
            k + 1,
            phases[0].end_epoch - phases[0].start_epoch,
            phases[0].bandwidth_mib_s,
            phases[1].end_epoch - phases[1].start_epoch,
        ));
        runs.push(RuleRun {
            label: format!("{kind} {}", k + 1),
            condition,
            phases,
            bursts: Vec::new(),
            flagged: false,
            write_timeline: Vec::new(),
        });
    }
    Ok(runs)
}

/// Gives `stack` the experiment's links: torus networks the compute side's, the others the
/// storage side's.
fn model(stack: &mut Stack) {
    for network in &mut stack.networks {
        network.link = Some(if network.torus.is_some() {
            COMPUTE_LINK
        } else {
            STORAGE_LINK
        });
    }
    stack.time_scale = TIME_SCALE;
}

/// `stack` with every router's large buffers and per-sender credits cut.
fn starve(stack: &Stack, config: &ExperimentConfig) -> Stack {
    let mut starved = stack.clone();
    for node in &mut starved.nodes {
        if let Role::Router(buffers) = &mut node.role {
            *buffers = RouterConfig {
                large_buffers: config.starved_large_buffers,
                peer_buffer_credits: config.starved_peer_credits,
                ..*buffers
            };
        }
    }
    starved
}

/// The impeded storage's disks: each target's, so that together they write `config.impeded_fraction`
/// of `healthy_mib_s` (host time), in modeled bytes per second.
fn impeded_disk(config: &ExperimentConfig, stack: &Stack, healthy_mib_s: f64) -> ImpededDisk {
    let targets = (stack.targets().len() as u32).max(1);
    let host_bytes_s =
        healthy_mib_s * config.impeded_fraction * (1u64 << 20) as f64 / f64::from(targets);
    ImpededDisk {
        fraction: config.impeded_fraction,
        bandwidth_bytes_s: ((host_bytes_s * f64::from(stack.time_scale)) as u64).max(1),
        targets,
    }
}

/// `stack` with a slow modeled disk under every target.
fn impede(stack: &Stack, disk: ImpededDisk) -> Stack {
    let mut impeded = stack.clone();
    for node in &mut impeded.nodes {
        if let Role::Oss(spec) = &mut node.role {
            spec.disk = Some(OstDisk {
                bandwidth_bytes_s: disk.bandwidth_bytes_s,
                seek_us: 0,
            });
        }
    }
    impeded
}

/// Each condition's runs in sum, against the healthy ones.
fn conditions_seen(runs: &[RuleRun]) -> Vec<ConditionSeen> {
    let mean = |condition: Condition, f: &dyn Fn(&RuleRun) -> f64| {
        let of: Vec<f64> = runs
            .iter()
            .filter(|r| r.condition == condition)
            .map(f)
            .collect();
        of.iter().sum::<f64>() / of.len().max(1) as f64
    };
    let congestion = |r: &RuleRun| {
        r.bursts
            .iter()
            .filter(|b| b.burst.direction == Direction::Write)
            .map(|b| b.burst.congestion)
            .sum::<f64>()
    };
    let seconds = |r: &RuleRun| {
        r.phases
            .first()
            .map_or(0.0, |p| p.end_epoch - p.start_epoch)
    };
    let over = |x: f64, healthy: f64| (healthy > 0.0).then(|| x / healthy);
    let healthy_seconds = mean(Condition::Healthy, &seconds);
    let healthy_congestion = mean(Condition::Healthy, &congestion);
    Condition::ALL
        .into_iter()
        .map(|condition| ConditionSeen {
            condition,
            runs: runs.iter().filter(|r| r.condition == condition).count(),
            flagged: runs
                .iter()
                .filter(|r| r.condition == condition && r.flagged)
                .count(),
            time_vs_healthy: over(mean(condition, &seconds), healthy_seconds),
            congestion_vs_healthy: over(mean(condition, &congestion), healthy_congestion),
        })
        .collect()
}

/// Fills in what the routers saw during `phase`: the intervals wholly inside it.
fn seen_in(phase: &mut PhaseSeen, series: &super::Series) {
    const SLACK_S: f64 = 1e-3;
    let (mut intervals, mut congestion, mut waits, mut mib_s) = (0, 0.0, 0.0, 0.0);
    for ((_, direction), points) in series {
        if *direction != phase.direction {
            continue;
        }
        let inside: Vec<&Point> = points
            .iter()
            .filter(|p| {
                p.epoch - p.interval_s >= phase.start_epoch - SLACK_S
                    && p.epoch <= phase.end_epoch + SLACK_S
            })
            .collect();
        let elapsed: f64 = inside.iter().map(|p| p.interval_s).sum();
        if elapsed <= 0.0 {
            continue;
        }
        intervals += inside.len();
        congestion += inside.iter().map(|p| p.congestion_s).sum::<f64>() / elapsed;
        waits += inside.iter().map(|p| p.credit_wait_s).sum::<f64>() / elapsed;
        mib_s += inside.iter().map(|p| p.bytes).sum::<u64>() as f64 / (1u64 << 20) as f64 / elapsed;
    }
    phase.intervals = intervals;
    phase.congestion = congestion;
    phase.credit_waits = waits;
    phase.router_mib_s = mib_s;
}

/// Whether record `s` covers any of `run`'s time (with an interval either side, so that its
/// burst is seen whole, with the idle intervals that bound it).
fn overlaps(s: &Sample, run: &RuleRun) -> bool {
    let (start, end) = run_span(run);
    s.epoch >= start - s.interval_s && s.epoch - s.interval_s <= end + s.interval_s
}

fn run_span(run: &RuleRun) -> (f64, f64) {
    let start = run
        .phases
        .iter()
        .map(|p| p.start_epoch)
        .fold(f64::INFINITY, f64::min);
    let end = run.phases.iter().map(|p| p.end_epoch).fold(0.0, f64::max);
    (start, end)
}

/// Write congestion per sampling interval around `run`, summed over routers: slot `k` covers
/// `[start + k·I, start + (k+1)·I)` for `k` from −1 (the interval before the run) to the one
/// in which it ends plus one. Routers sample on clocks of their own, so each record's queued
/// seconds are shared among the slots its interval overlaps, in proportion, before dividing
/// by the slot's width.
fn timeline(run: &RuleRun, seen: &super::Series, interval_s: f64) -> Vec<f64> {
    let (start, end) = run_span(run);
    let slots = ((end - start) / interval_s).ceil().max(1.0) as usize + 2;
    let origin = start - interval_s;
    let mut queued = vec![0.0; slots];
    for ((_, direction), points) in seen {
        if *direction != Direction::Write {
            continue;
        }
        for p in points {
            let (from, to) = (p.epoch - p.interval_s, p.epoch);
            if p.interval_s <= 0.0 || to <= origin || from >= origin + slots as f64 * interval_s {
                continue;
            }
            let first = (((from - origin) / interval_s).floor().max(0.0)) as usize;
            let last = ((((to - origin) / interval_s).ceil()) as usize).min(slots);
            for (k, slot) in queued.iter_mut().enumerate().take(last).skip(first) {
                let lo = origin + k as f64 * interval_s;
                let overlap = (to.min(lo + interval_s) - from.max(lo)).max(0.0);
                *slot += p.congestion_s * overlap / p.interval_s;
            }
        }
    }
    queued.iter().map(|q| q / interval_s).collect()
}

/// Whether burst `b` falls in `run`'s time.
fn burst_in(b: &Burst, run: &RuleRun) -> bool {
    let (start, end) = run_span(run);
    let (Some(first), Some(last)) = (b.points.first(), b.points.last()) else {
        return false;
    };
    first.epoch > start && last.epoch - last.interval_s < end
}

/// The experiment for people.
pub fn text(e: &Experiment) -> String {
    let mut out = format!(
        "IORCD experiment (paper 002) on {}: routers {}; storage side {}; IORCD every {} ms; IOR transfers of {} MiB, a file per task\n\n",
        e.stack,
        e.routers.join(" "),
        e.storage_nets.join(", "),
        (e.interval_s * 1000.0).round(),
        e.transfer_bytes >> 20
    );
    out.push_str("1. congestion against bandwidth, a run per load (each phase stonewalled to fill several sampling intervals)\n");
    out.push_str(&format!(
        "  {:>5} {:>5} {:<6} {:>12} {:>12} {:>11} {:>12} {:>9}\n",
        "tasks",
        "nodes",
        "dir",
        "IOR MiB/s",
        "router MiB/s",
        "congestion",
        "credit waits",
        "intervals"
    ));
    for run in &e.loads {
        for p in &run.phases {
            out.push_str(&format!(
                "  {:>5} {:>5} {:<6} {:>12.1} {:>12.1} {:>11.4} {:>12.4} {:>9}\n",
                run.tasks,
                run.nodes,
                direction_name(p.direction),
                p.bandwidth_mib_s,
                p.router_mib_s,
                p.congestion,
                p.credit_waits,
                p.intervals
            ));
        }
    }
    out.push_str("  Pearson's r, congestion against IOR's bandwidth over the runs:\n");
    for c in &e.correlations {
        out.push_str(&format!(
            "    {:<6} r = {:<8} (paper: {:.2})\n",
            direction_name(c.direction),
            c.pearson
                .map_or_else(|| "-".to_owned(), |r| format!("{r:.3}")),
            c.paper
        ));
    }
    out.push_str(&format!(
        "\n2. IORCD's rule (degraded: a burst longer than {} samples below {:.0}% of the highest burst's congestion) over the same short run on the stack as it is (healthy), with its storage impeded (each of {} targets' disks at {:.1} MB/s modeled, {:.1}% of the healthy rate together) and with its routers starved (large_router_buffers = {}, peer_buffer_credits = {})\n",
        e.samples_max,
        e.low * 100.0,
        e.impeded_disk.targets,
        e.impeded_disk.bandwidth_bytes_s as f64 / 1e6,
        e.impeded_disk.fraction * 100.0,
        e.starved_buffers.large_router_buffers,
        e.starved_buffers.peer_buffer_credits
    ));
    out.push_str(&format!(
        "  {:<10} {:<6} {:>9} {:>11} {:<8} {:>9} {:>11} {:>12} {:>9}\n",
        "run",
        "dir",
        "seconds",
        "IOR MiB/s",
        "router",
        "samples",
        "congestion",
        "credit waits",
        "flagged"
    ));
    for run in &e.rule_runs {
        for p in &run.phases {
            let mut bursts: Vec<&RunBurst> = run
                .bursts
                .iter()
                .filter(|b| b.burst.direction == p.direction)
                .collect();
            bursts.sort_by(|a, b| a.router.cmp(&b.router));
            let head = format!(
                "  {:<10} {:<6} {:>9.3} {:>11.1}",
                run.label,
                direction_name(p.direction),
                p.end_epoch - p.start_epoch,
                p.bandwidth_mib_s
            );
            if bursts.is_empty() {
                out.push_str(&format!("{head} (no burst sampled)\n"));
            }
            for (i, b) in bursts.iter().enumerate() {
                let lead = if i == 0 {
                    head.clone()
                } else {
                    " ".repeat(head.len())
                };
                out.push_str(&format!(
                    "{lead} {:<8} {:>9} {:>11.4} {:>12.4} {:>9}\n",
                    b.router,
                    b.burst.points.len(),
                    b.burst.congestion,
                    b.burst.credit_waits,
                    if b.burst.degraded { "DEGRADED" } else { "-" }
                ));
            }
        }
    }
    out.push_str("  against the healthy runs, writes:\n");
    for c in &e.conditions {
        out.push_str(&format!(
            "    {:<8} flagged {} of {}   time {:>6}   congestion {:>6}\n",
            c.condition.word(),
            c.flagged,
            c.runs,
            percent(c.time_vs_healthy),
            percent(c.congestion_vs_healthy)
        ));
    }
    out.push_str(if e.rule_holds {
        "  the rule flagged every impeded run and no healthy one, as the paper's should\n"
    } else {
        "  the rule did NOT flag exactly the impeded runs (healthy flagged, or impeded missed)\n"
    });
    out.push_str(&format!(
        "\ncongestion: seconds messages queued to leave the routers (for send credits, and on a modeled link for the wire), per second, summed over routers (write: onto the storage side; read: onto the compute side); credit waits: seconds queued for router credits and buffers to get in.\nmodeled: {}\n",
        e.modeled
    ));
    out
}

/// `42%`, or `n/a` where there was nothing to compare with.
fn percent(fraction: Option<f64>) -> String {
    fraction.map_or_else(|| "n/a".into(), |f| format!("{:.0}%", f * 100.0))
}

fn direction_name(d: Direction) -> &'static str {
    match d {
        Direction::Write => "write",
        Direction::Read => "read",
    }
}

/// The rule's runs as the paper's Figure 7 showed its GTC runs: write congestion per sampling
/// interval, the runs laid end to end, one line per condition.
pub fn rule_figure(e: &Experiment) -> iopath_plot::Figure {
    use iopath_plot::{Axis, Figure, Series};
    let mut at = 0.0;
    let mut lines: Vec<(Condition, Vec<(f64, f64)>)> = Vec::new();
    for run in &e.rule_runs {
        let points = run.write_timeline.iter().map(|&c| {
            at += 1.0;
            (at, c)
        });
        match lines.iter_mut().find(|(c, _)| *c == run.condition) {
            Some((_, line)) => line.extend(points),
            None => lines.push((run.condition, points.collect())),
        }
    }
    let said = |c: Condition| {
        e.conditions
            .iter()
            .find(|s| s.condition == c)
            .map_or_else(String::new, |s| {
                format!(
                    "{} ({} of {} flagged, {} of the healthy time)",
                    c.word(),
                    s.flagged,
                    s.runs,
                    percent(s.time_vs_healthy)
                )
            })
    };
    Figure {
        title: format!(
            "Write congestion per {:.1} s sample over IORCD's rule's runs on {}",
            e.interval_s, e.stack
        ),
        x: Axis::from_zero(
            "sampling interval (the runs end to end, each from the interval before it to the one after)",
        ),
        y: Axis::from_zero("congestion, summed over routers (s queued per s)"),
        y2: None,
        series: lines
            .into_iter()
            .map(|(c, points)| Series::line(said(c), points))
            .collect(),
        rules: Vec::new(),
        footnote: format!(
            "Measured: IORCD's records on every router during the same short IOR run on the stack \
             as it is, with its storage impeded (each target's modeled disk at {:.1} MB/s) and with \
             its routers starved (large_router_buffers = {}, peer_buffer_credits = {}). The rule \
             flags a burst longer than {} samples below {:.0}% of the highest burst's congestion. \
             Modeled: {}",
            e.impeded_disk.bandwidth_bytes_s as f64 / 1e6,
            e.starved_buffers.large_router_buffers,
            e.starved_buffers.peer_buffer_credits,
            e.samples_max,
            e.low * 100.0,
            e.modeled
        ),
    }
}

/// The load series as the paper drew it (Figures 3 and 4): bandwidth and congestion against
/// tasks, one panel per direction, congestion on an axis of its own on the right.
pub fn figure(e: &Experiment, direction: Direction) -> iopath_plot::Figure {
    use iopath_plot::{Axis, Figure, Series};
    let phases: Vec<(u32, &PhaseSeen)> = e
        .loads
        .iter()
        .flat_map(|r| r.phases.iter().map(move |p| (r.tasks, p)))
        .filter(|(_, p)| p.direction == direction)
        .collect();
    let r = e
        .correlations
        .iter()
        .find(|c| c.direction == direction)
        .and_then(|c| c.pearson);
    let ticks: Vec<(f64, String)> = phases
        .iter()
        .map(|(t, _)| (f64::from(*t), t.to_string()))
        .collect();
    Figure {
        title: format!(
            "{} bandwidth and router congestion against load on {} (Pearson r = {}; paper {:.2})",
            match direction {
                Direction::Write => "Write",
                Direction::Read => "Read",
            },
            e.stack,
            r.map_or_else(|| "-".to_owned(), |r| format!("{r:.2}")),
            match direction {
                Direction::Write => PAPER_PEARSON_WRITE,
                Direction::Read => PAPER_PEARSON_READ,
            }
        ),
        x: Axis::log("IOR tasks").ticks_at(ticks),
        y: Axis::from_zero("IOR bandwidth (MiB/s)"),
        y2: Some(Axis::from_zero("router congestion (s queued per s)")),
        series: vec![
            Series::line(
                "IOR bandwidth (MiB/s)",
                phases
                    .iter()
                    .map(|(t, p)| (f64::from(*t), p.bandwidth_mib_s)),
            ),
            Series::line(
                "router congestion (s queued per s)",
                phases.iter().map(|(t, p)| (f64::from(*t), p.congestion)),
            )
            .on_right(),
        ],
        rules: Vec::new(),
        footnote: format!(
            "Measured: IOR's bandwidth per run, and IORCD's congestion (seconds messages queued \
             to leave the routers, for send credits and the modeled wire, per second, summed \
             over the routers) in the sampling intervals inside each phase. Modeled: {}",
            e.modeled
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn phase(direction: Direction, start: f64, end: f64) -> PhaseSeen {
        PhaseSeen {
            direction,
            start_epoch: start,
            end_epoch: end,
            bytes: 0,
            bandwidth_mib_s: 0.0,
            intervals: 0,
            congestion: 0.0,
            credit_waits: 0.0,
            router_mib_s: 0.0,
        }
    }

    fn point(epoch: f64, congestion_s: f64) -> Point {
        Point {
            epoch,
            interval_s: 1.0,
            congestion_s,
            credit_wait_s: 0.0,
            bytes: 1,
        }
    }

    #[test]
    fn the_rules_runs_last_at_least_half_an_interval_at_the_healthy_rate() {
        let config = ExperimentConfig::default();
        let at = |mib_s: f64| {
            let mut write = phase(Direction::Write, 0.0, 1.0);
            write.bandwidth_mib_s = mib_s;
            let loads = [LoadRun {
                tasks: config.degraded_tasks,
                nodes: config.degraded_tasks,
                phases: vec![write],
            }];
            fixed_bytes_per_task(&config, &loads)
        };
        let half_interval_mib = |mib_s: f64| mib_s * config.interval.as_secs_f64() / 2.0;
        // CI's machine: 245 MiB/s is 61 MiB in half an interval, 7.7 MiB a task; 8 of 4 MiB
        // transfers, not 4.
        for mib_s in [10.0, 245.0, 355.0, 1000.0] {
            let per_task = at(mib_s);
            assert_eq!(per_task % config.transfer_bytes, 0, "{mib_s}");
            let total_mib = (per_task * u64::from(config.degraded_tasks)) as f64 / 1048576.0;
            assert!(
                total_mib >= half_interval_mib(mib_s),
                "{mib_s}: {total_mib}"
            );
            let spare = (config.transfer_bytes * u64::from(config.degraded_tasks)) as f64;
            assert!(
                total_mib < half_interval_mib(mib_s) + spare / 1048576.0,
                "{mib_s}: {total_mib}"
            );
        }
        assert_eq!(at(245.0), 8 << 20);
    }

    #[test]
    fn a_timeline_shares_each_record_among_the_slots_it_overlaps() {
        let run = RuleRun {
            label: "healthy 1".into(),
            condition: Condition::Healthy,
            phases: vec![
                phase(Direction::Write, 100.0, 101.5),
                phase(Direction::Read, 101.6, 102.0),
            ],
            bursts: Vec::new(),
            flagged: false,
            write_timeline: Vec::new(),
        };
        let mut seen = super::super::Series::new();
        // One router's records end half-way through slots, another's on their edges.
        seen.insert(
            ("a".into(), Direction::Write),
            vec![point(100.5, 0.4), point(101.5, 0.2), point(105.0, 9.0)],
        );
        seen.insert(("b".into(), Direction::Write), vec![point(101.0, 0.5)]);
        seen.insert(("b".into(), Direction::Read), vec![point(101.0, 7.0)]);
        let line = timeline(&run, &seen, 1.0);
        // Slots: [99,100) before, [100,101), [101,102), [102,103) after; the read and the
        // record far after the run are left out.
        assert_eq!(line.len(), 4);
        let want = [0.2, 0.2 + 0.1 + 0.5, 0.1, 0.0];
        for (got, want) in line.iter().zip(want) {
            assert!((got - want).abs() < 1e-12, "{line:?}");
        }
        // Every queued second inside the slots is counted once.
        assert!((line.iter().sum::<f64>() - 1.1).abs() < 1e-12);
    }

    #[test]
    fn percentages_without_a_healthy_figure_say_so() {
        assert_eq!(percent(Some(0.425)), "42%");
        assert_eq!(percent(None), "n/a");
    }
}
