//! `iopath bench monitoring`: what watching a stack costs. Paper 002 found that IORCD "produces
//! a negligible impact on runtime and I/O performance"; iopath's bound is that IOR with IORCD
//! sampling every router and fyod each second, and every server node's `/metrics` scraped each
//! second, stays within 3% of IOR without them.
//!
//! One stack (default `spider-mini-routed`, a process per server node, each serving
//! `/metrics`), IOR rounds alternating plain and monitored runs — plain then monitored in odd
//! rounds, monitored then plain in even ones, so that a drift over the whole run weighs on
//! both alike. Each phase is stonewalled to the same time (or ends sooner when its files
//! would take half the storage's free space), and a run's bandwidth is its bytes over its
//! time. A plain run before the rounds warms the stack up and is not counted. Monitoring on:
//! `iorcd.interval_ms` set on every sampler (routers and fyods), and a scraper that GETs every
//! server node's `/metrics` each `scrape_every` (client nodes run inside the benchmark); off:
//! the samplers at 0 and no scraper. The IORCD records are fetched after each run, outside its
//! timed phases, to prove the samplers ran. The rounds are even in number, so each order runs
//! as often. Each round's monitored run over its plain one gives a ratio; the verdict takes the
//! rounds' noise into account (Student's t at 95%), so a cost the runs cannot resolve is said
//! to be too noisy rather than held or failed.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use iopath_client::Client;
use iopath_stack::StackChoice;
use iopath_stack::runtime::{Launcher, Mode, RunningStack, StorageDir};
use iopath_stack::schema::RoleName;
use serde::Serialize;

use crate::error::BenchError;
use crate::ior::params::IorParams;
use crate::ior::phase::{self, write_then_read};
use crate::iorcd::Samplers;

/// The bound: monitoring may cost at most this fraction of the plain runs' bandwidth.
pub const COST_MAX_FRACTION: f64 = 0.03;

/// Longest a scrape may take before it counts as failed.
const SCRAPE_TIMEOUT: Duration = Duration::from_secs(5);

/// Largest `/metrics` answer read (a node's families are a few hundred KiB at most).
const SCRAPE_MAX_BYTES: usize = 16 << 20;

/// The benchmark's settings.
#[derive(Debug, Clone)]
pub struct MonitoringConfig {
    /// The stack (default spider-mini-routed).
    pub choice: StackChoice,
    /// IOR tasks of every run.
    pub tasks: u32,
    /// Each phase's length (IOR's stonewalling deadline).
    pub phase: Duration,
    /// IOR's transfer size.
    pub transfer_bytes: u64,
    /// Rounds, each a plain and a monitored run.
    pub rounds: u32,
    /// IORCD's interval while monitored.
    pub interval: Duration,
    /// How often the scraper GETs every server node's `/metrics` while monitored.
    pub scrape_every: Duration,
    /// Directory for the stack's storage; default: a temporary one in the current directory.
    pub dir: Option<std::path::PathBuf>,
}

impl Default for MonitoringConfig {
    fn default() -> Self {
        MonitoringConfig {
            choice: StackChoice {
                preset: Some(iopath_stack::ROUTED_PRESET.into()),
                ..StackChoice::default()
            },
            tasks: 8,
            phase: Duration::from_secs(4),
            transfer_bytes: 4 << 20,
            rounds: 4,
            interval: Duration::from_secs(1),
            scrape_every: Duration::from_secs(1),
            dir: None,
        }
    }
}

/// One IOR run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonitoringRun {
    /// Its round, from 1.
    pub round: u32,
    /// Whether IORCD sampled and the scraper scraped during it.
    pub monitored: bool,
    /// IOR's write bandwidth, MiB/s.
    pub write_mib_s: f64,
    /// IOR's read bandwidth, MiB/s.
    pub read_mib_s: f64,
    /// IORCD records the samplers took during the run.
    pub records: usize,
    /// Scrapes answered during the run.
    pub scrapes: u64,
    /// Bytes they returned.
    pub scrape_bytes: u64,
    /// The slowest, milliseconds.
    pub scrape_max_ms: f64,
}

/// One direction's plain and monitored runs.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Overhead {
    /// `write` or `read`.
    pub direction: &'static str,
    /// The plain runs' mean, MiB/s.
    pub plain_mib_s: f64,
    /// The monitored runs' mean, MiB/s.
    pub monitored_mib_s: f64,
    /// Each round's monitored run over its plain one (the two ran back to back).
    pub round_ratios: Vec<f64>,
    /// Their mean.
    pub ratio: f64,
    /// Its standard error (the rounds' standard deviation over √rounds).
    pub ratio_error: f64,
    /// The plain runs' spread: (highest − lowest) over their mean.
    pub plain_spread: f64,
    /// What the rounds say of the bound.
    pub verdict: Verdict,
}

/// What a direction's rounds say of the bound, at 95% confidence.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Even the low end of the mean ratio's interval keeps `1 - cost_max`.
    Holds,
    /// The interval straddles `1 - cost_max`: the runs' own noise hides a difference that
    /// small.
    TooNoisy,
    /// Even its high end falls short.
    Fails,
}

/// Student's t for a two-sided 95% interval with `degrees` degrees of freedom (at least 1).
pub fn student_t_95(degrees: usize) -> f64 {
    use statrs::distribution::{ContinuousCDF as _, StudentsT};
    let t = StudentsT::new(0.0, 1.0, degrees.max(1) as f64)
        .expect("a standard t with at least one degree of freedom is valid");
    t.inverse_cdf(0.975)
}

impl Verdict {
    /// The verdict on a mean `ratio` with standard error `error` over `rounds` rounds (at
    /// least two).
    pub fn of(ratio: f64, error: f64, rounds: usize) -> Verdict {
        let t = student_t_95(rounds.max(2) - 1);
        let floor = 1.0 - COST_MAX_FRACTION;
        if ratio - t * error >= floor {
            Verdict::Holds
        } else if ratio + t * error < floor {
            Verdict::Fails
        } else {
            Verdict::TooNoisy
        }
    }
}

/// What the benchmark measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MonitoringReport {
    /// The stack's name.
    pub stack: String,
    /// The nodes whose IORCD sampled (routers and fyods).
    pub samplers: Vec<String>,
    /// The nodes whose `/metrics` was scraped.
    pub scraped: Vec<String>,
    /// IORCD's interval, seconds.
    pub interval_s: f64,
    /// The scrape interval, seconds.
    pub scrape_every_s: f64,
    /// IOR tasks.
    pub tasks: u32,
    /// Each phase, seconds.
    pub phase_s: f64,
    /// Every run, in order.
    pub runs: Vec<MonitoringRun>,
    /// Writes, then reads.
    pub overhead: Vec<Overhead>,
    /// The bound.
    pub within: f64,
    /// Whether every direction's rounds kept `1 - within` (see [`Overhead::verdict`]).
    pub holds: bool,
    /// What was real and what modeled.
    pub modeled: String,
}

/// Runs the benchmark; `say` hears each run as it ends. `launcher` starts the node processes
/// (default: this program's `node`); `--metrics` is added to its arguments.
pub async fn run(
    config: &MonitoringConfig,
    launcher: Option<&Launcher>,
    say: &mut dyn FnMut(&str),
) -> Result<MonitoringReport, BenchError> {
    check(config)?;
    let stack = config.choice.load()?;
    let launcher = match launcher {
        Some(l) => l.clone(),
        None => Launcher::this_program()?,
    }
    .with_metrics();
    let parent = config
        .dir
        .clone()
        .unwrap_or_else(|| std::path::PathBuf::from("."));
    let storage = StorageDir::temporary("bench-monitoring", Some(&parent))?;
    say(&format!(
        "starting {} (a process per server node, each serving /metrics)",
        stack.name
    ));
    let running = RunningStack::start(stack, Mode::Processes, storage, Some(&launcher)).await?;
    let result = measure(config, &running, say).await;
    let stopped = running.stop().await;
    let report = result?;
    stopped?;
    Ok(report)
}

fn check(config: &MonitoringConfig) -> Result<(), BenchError> {
    let bad = |option: &str, why: String| {
        Err(BenchError::BadOption {
            option: option.into(),
            why,
        })
    };
    if !(1..=1024).contains(&config.tasks) {
        return bad("--tasks", format!("{}: use 1 to 1024", config.tasks));
    }
    if !(2..=10).contains(&config.rounds) || config.rounds % 2 == 1 {
        return bad(
            "--rounds",
            format!(
                "{}: use an even number, 2 to 10 (each order of plain and monitored runs as often, and a noise estimate)",
                config.rounds
            ),
        );
    }
    if !(Duration::from_secs(1)..=Duration::from_secs(600)).contains(&config.phase) {
        return bad("--seconds", "each phase lasts 1 to 600 seconds".into());
    }
    crate::iorcd::check_interval(config.interval)?;
    if !(Duration::from_millis(100)..=Duration::from_secs(60)).contains(&config.scrape_every) {
        return bad("--scrape-ms", "use 100 to 60000".into());
    }
    if config.transfer_bytes > 64 << 20 {
        return bad("--transfer-size", "at most 64 MiB".into());
    }
    params(config, u64::MAX)?;
    Ok(())
}

/// Most of the storage's free space one run's files may take: the rest is for the journals,
/// and for what other programs write meanwhile.
const FREE_SPACE_SHARE: f64 = 0.5;

/// IOR's options: a file per task, blocks no task finishes before the deadline unless the
/// storage's free space (`free_bytes`, shared by the tasks) runs out first.
fn params(config: &MonitoringConfig, free_bytes: u64) -> Result<IorParams, BenchError> {
    let transfer = config.transfer_bytes.max(1);
    let room = (free_bytes as f64 * FREE_SPACE_SHARE) as u64 / u64::from(config.tasks.max(1));
    let block = (phase::stonewalled_block(transfer).min(room) / transfer).max(1) * transfer;
    phase::write_read_params(config.tasks, block, transfer, "/monitoring/testFile")
}

async fn measure(
    config: &MonitoringConfig,
    running: &RunningStack,
    say: &mut dyn FnMut(&str),
) -> Result<MonitoringReport, BenchError> {
    let stack = running.stack().clone();
    let samplers = Samplers::connect(running, &[RoleName::Router, RoleName::Fyod]).await?;
    let mut targets = Vec::new();
    let mut scraped = Vec::new();
    for index in 0..stack.nodes.len() {
        if let Some(addr) = running.metrics_addr(index) {
            targets.push(addr);
            scraped.push(stack.nodes[index].name.clone());
        }
    }
    if targets.is_empty() {
        return Err(BenchError::Refused {
            why: "no node serves /metrics".into(),
        });
    }
    let mut clients: Vec<Client> = Vec::new();
    for node in running.clients() {
        clients.push(running.connect(node).await?);
    }
    if clients.is_empty() {
        return Err(BenchError::Refused {
            why: format!("{} has no client nodes to run IOR on", stack.origin),
        });
    }
    let free_bytes = iopath_storage_server::ost::target::capacity_of(running.storage().path())
        .map_err(|e| BenchError::Tool {
            what: format!("statvfs {}: {e}", running.storage().path().display()),
        })?
        .available_bytes;
    let outcome = rounds(config, &clients, &samplers, &targets, free_bytes, say).await;
    let ended = crate::ior::phase::end(&clients).await;
    let runs = outcome?;
    ended?;

    let overhead: Vec<Overhead> = [("write", true), ("read", false)]
        .into_iter()
        .map(|(direction, write)| overhead(&runs, direction, write))
        .collect();
    let holds = overhead.iter().all(|o| o.verdict == Verdict::Holds);
    Ok(MonitoringReport {
        stack: stack.name.clone(),
        samplers: samplers.names(),
        scraped,
        interval_s: config.interval.as_secs_f64(),
        scrape_every_s: config.scrape_every.as_secs_f64(),
        tasks: config.tasks,
        phase_s: config.phase.as_secs_f64(),
        runs,
        overhead,
        within: COST_MAX_FRACTION,
        holds,
        modeled: format!(
            "{}; real: IOR's bytes over loopback TCP between a process per server node, files \
             on this host's disk, IORCD and the scrapes",
            if stack.is_modeled() {
                stack.modeled()
            } else {
                "nothing (the stack runs at this host's speed, where monitoring's cost shows \
                 most)"
                    .into()
            }
        ),
    })
}

/// One direction's figures over `runs`.
fn overhead(runs: &[MonitoringRun], direction: &'static str, write: bool) -> Overhead {
    let bw = |r: &MonitoringRun| if write { r.write_mib_s } else { r.read_mib_s };
    let mean = |v: &[f64]| v.iter().sum::<f64>() / v.len().max(1) as f64;
    let of = |monitored: bool| -> Vec<f64> {
        runs.iter()
            .filter(|r| r.monitored == monitored)
            .map(bw)
            .collect()
    };
    let (plain, monitored) = (of(false), of(true));
    let plain_mean = mean(&plain);
    let spread = plain.iter().copied().fold(f64::MIN, f64::max)
        - plain.iter().copied().fold(f64::MAX, f64::min);
    let mut round_ratios = Vec::new();
    for round in runs
        .iter()
        .map(|r| r.round)
        .collect::<std::collections::BTreeSet<_>>()
    {
        let find = |monitored| {
            runs.iter()
                .find(|r| r.round == round && r.monitored == monitored)
                .map(bw)
        };
        if let (Some(p), Some(m)) = (find(false), find(true)) {
            round_ratios.push(m / p.max(1e-12));
        }
    }
    let ratio = mean(&round_ratios);
    let n = round_ratios.len() as f64;
    let ratio_error = if round_ratios.len() > 1 {
        statrs::statistics::Statistics::std_dev(&round_ratios) / n.sqrt()
    } else {
        0.0
    };
    let rounds = round_ratios.len();
    Overhead {
        direction,
        plain_mib_s: plain_mean,
        monitored_mib_s: mean(&monitored),
        round_ratios,
        ratio,
        ratio_error,
        plain_spread: spread / plain_mean.max(1e-12),
        verdict: Verdict::of(ratio, ratio_error, rounds),
    }
}

async fn rounds(
    config: &MonitoringConfig,
    clients: &[Client],
    samplers: &Samplers,
    targets: &[std::net::SocketAddr],
    free_bytes: u64,
    say: &mut dyn FnMut(&str),
) -> Result<Vec<MonitoringRun>, BenchError> {
    samplers.stop().await?;
    // A plain run first, not counted: the first run after a start pays for cold caches and
    // connections, which would read as the monitored run's gain.
    say("warming up: a plain run, not counted");
    write_then_read(
        clients,
        params(config, free_bytes)?,
        config.tasks,
        Some(config.phase),
        u32::MAX,
        Duration::from_millis(500),
    )
    .await?;
    let mut runs = Vec::new();
    for round in 1..=config.rounds {
        let order = if round % 2 == 1 {
            [false, true]
        } else {
            [true, false]
        };
        for monitored in order {
            let params = params(config, free_bytes)?;
            if monitored {
                samplers.start(config.interval).await?;
            }
            // Stopped at the end of the run, or aborted when dropped on an early return.
            let scraper = monitored.then(|| Scraper::start(targets.to_vec(), config.scrape_every));
            let stamp = runs.len() as u32 + 1;
            let phases = write_then_read(
                clients,
                params,
                config.tasks,
                Some(config.phase),
                stamp,
                Duration::from_millis(500),
            )
            .await;
            let scrapes = match scraper {
                Some(s) => s.stop().await?,
                None => ScrapeTally::default(),
            };
            // Read after every run, plain ones too: a run proves which way it ran — a
            // monitored one recorded and scraped, a plain one recorded nothing (the samplers
            // were off and cleared).
            let taken = samplers.samples().await;
            if monitored {
                samplers.stop().await?;
                samplers.clear().await?;
            }
            let records = taken?.len();
            let phases = phases?;
            let as_set = if monitored {
                records > 0 && scrapes.answered > 0
            } else {
                records == 0
            };
            if !as_set {
                return Err(BenchError::Tool {
                    what: format!(
                        "round {round} ({}): the monitors did not run as set: {records} IORCD \
                         records, {} scrapes",
                        if monitored { "monitored" } else { "plain" },
                        scrapes.answered
                    ),
                });
            }
            let run = MonitoringRun {
                round,
                monitored,
                write_mib_s: phases[0].result.bw_mib_s(),
                read_mib_s: phases[1].result.bw_mib_s(),
                records,
                scrapes: scrapes.answered,
                scrape_bytes: scrapes.bytes,
                scrape_max_ms: scrapes.slowest.as_secs_f64() * 1000.0,
            };
            say(&format!(
                "round {round}/{} {:<9}  write {:>8.1} MiB/s  read {:>8.1} MiB/s{}",
                config.rounds,
                if monitored { "monitored" } else { "plain" },
                run.write_mib_s,
                run.read_mib_s,
                if monitored {
                    format!("  ({} IORCD records, {} scrapes)", run.records, run.scrapes)
                } else {
                    String::new()
                }
            ));
            runs.push(run);
        }
    }
    Ok(runs)
}

/// What a scraper did.
#[derive(Debug, Clone, Copy, Default)]
struct ScrapeTally {
    answered: u64,
    bytes: u64,
    slowest: Duration,
}

/// A task that GETs every target's `/metrics` each interval until stopped (or dropped: then
/// it is aborted).
struct Scraper {
    stop: Arc<AtomicBool>,
    task: Option<tokio::task::JoinHandle<Result<ScrapeTally, String>>>,
}

impl Drop for Scraper {
    fn drop(&mut self) {
        if let Some(task) = &self.task {
            task.abort();
        }
    }
}

impl Scraper {
    fn start(targets: Vec<std::net::SocketAddr>, every: Duration) -> Scraper {
        let stop = Arc::new(AtomicBool::new(false));
        let stopped = Arc::clone(&stop);
        let task = tokio::spawn(async move {
            let mut tally = ScrapeTally::default();
            let mut tick = tokio::time::interval(every);
            tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                tick.tick().await;
                if stopped.load(Ordering::Acquire) {
                    return Ok(tally);
                }
                for &addr in &targets {
                    let started = Instant::now();
                    let bytes = scrape(addr).await.map_err(|why| format!("{addr}: {why}"))?;
                    tally.answered += 1;
                    tally.bytes += bytes;
                    tally.slowest = tally.slowest.max(started.elapsed());
                }
            }
        });
        Scraper {
            stop,
            task: Some(task),
        }
    }

    async fn stop(mut self) -> Result<ScrapeTally, BenchError> {
        self.stop.store(true, Ordering::Release);
        let Some(task) = self.task.take() else {
            return Ok(ScrapeTally::default());
        };
        match task.await {
            Ok(Ok(tally)) => Ok(tally),
            Ok(Err(why)) => Err(BenchError::Tool {
                what: format!("scraping /metrics: {why}"),
            }),
            Err(e) => Err(BenchError::Tool {
                what: format!("the scraper: {e}"),
            }),
        }
    }
}

/// One `GET /metrics` at `addr`: the bytes of text it answered.
async fn scrape(addr: std::net::SocketAddr) -> Result<u64, String> {
    let text = iopath_admin::metrics::fetch(addr, SCRAPE_MAX_BYTES, SCRAPE_TIMEOUT).await?;
    Ok(text.len() as u64)
}

/// The benchmark for people.
pub fn text(r: &MonitoringReport) -> String {
    let mut out = format!(
        "Monitoring's cost on {}: IOR, {} tasks, a file each, phases of {:.0} s; monitored: IORCD every {:.1} s on {} and /metrics scraped every {:.1} s on {} nodes\n\n",
        r.stack,
        r.tasks,
        r.phase_s,
        r.interval_s,
        r.samplers.join(" "),
        r.scrape_every_s,
        r.scraped.len()
    );
    out.push_str(&format!(
        "  {:>5} {:<9} {:>11} {:>11} {:>8} {:>8} {:>12} {:>11}\n",
        "round",
        "run",
        "write MiB/s",
        "read MiB/s",
        "records",
        "scrapes",
        "scraped KiB",
        "slowest ms"
    ));
    for run in &r.runs {
        out.push_str(&format!(
            "  {:>5} {:<9} {:>11.1} {:>11.1} {:>8} {:>8} {:>12.0} {:>11.1}\n",
            run.round,
            if run.monitored { "monitored" } else { "plain" },
            run.write_mib_s,
            run.read_mib_s,
            run.records,
            run.scrapes,
            run.scrape_bytes as f64 / 1024.0,
            run.scrape_max_ms
        ));
    }
    out.push('\n');
    let keep = (1.0 - r.within) * 100.0;
    for o in &r.overhead {
        let ratios: Vec<String> = o.round_ratios.iter().map(|x| format!("{x:.3}")).collect();
        out.push_str(&format!(
            "  {:<5}  plain {:>8.1} MiB/s  monitored {:>8.1} MiB/s  monitored/plain by round {}: mean {:.3} ± {:.3}  (plain runs' own spread {:.1}%)\n         {}\n",
            o.direction,
            o.plain_mib_s,
            o.monitored_mib_s,
            ratios.join(" "),
            o.ratio,
            o.ratio_error,
            o.plain_spread * 100.0,
            match o.verdict {
                Verdict::Holds => format!(
                    "kept at least {keep:.0}% of the plain bandwidth (the low end of the rounds' 95% interval)"
                ),
                Verdict::TooNoisy => format!(
                    "cannot tell whether it kept {keep:.0}%: the rounds' 95% interval straddles it; run more --rounds on a quieter machine"
                ),
                Verdict::Fails => format!("did NOT keep {keep:.0}% of the plain bandwidth"),
            }
        ));
    }
    out.push_str(&format!("\nmodeled: {}\n", r.modeled));
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn run(round: u32, monitored: bool, write: f64, read: f64) -> MonitoringRun {
        MonitoringRun {
            round,
            monitored,
            write_mib_s: write,
            read_mib_s: read,
            records: 0,
            scrapes: 0,
            scrape_bytes: 0,
            scrape_max_ms: 0.0,
        }
    }

    #[test]
    fn each_round_is_a_pair_and_the_error_is_the_rounds_spread() {
        let runs = [
            run(1, false, 100.0, 50.0),
            run(1, true, 99.0, 40.0),
            run(2, true, 101.0, 60.0),
            run(2, false, 100.0, 50.0),
        ];
        let write = overhead(&runs, "write", true);
        assert_eq!(write.round_ratios, [0.99, 1.01]);
        assert!((write.ratio - 1.0).abs() < 1e-12);
        // Sample sd of 0.99 and 1.01 is 0.01√2; over √2 rounds: 0.01.
        assert!(
            (write.ratio_error - 0.01).abs() < 1e-12,
            "{}",
            write.ratio_error
        );
        assert_eq!(write.plain_spread, 0.0);
        let read = overhead(&runs, "read", false);
        assert_eq!(read.round_ratios, [0.8, 1.2]);
        // A mean of 1.0 that the rounds cannot pin down: too noisy, not held.
        assert_eq!(read.verdict, Verdict::TooNoisy);
    }

    #[test]
    fn the_verdict_reads_the_interval_not_the_mean() {
        // Two rounds: t = 12.7, so even a small error widens the interval a lot.
        assert_eq!(Verdict::of(0.99, 0.0001, 2), Verdict::Holds);
        assert_eq!(Verdict::of(0.99, 0.002, 2), Verdict::TooNoisy);
        assert_eq!(Verdict::of(0.90, 0.002, 2), Verdict::Fails);
        // Ten rounds: t = 2.26.
        assert_eq!(Verdict::of(0.98, 0.004, 10), Verdict::Holds);
        assert_eq!(Verdict::of(0.975, 0.004, 10), Verdict::TooNoisy);
        assert_eq!(Verdict::of(0.95, 0.004, 10), Verdict::Fails);
    }

    #[test]
    fn student_s_t_is_the_tables() {
        // Two-sided 95%, as printed in every table: 1, 4 and 9 degrees of freedom.
        for (degrees, table) in [(1, 12.706), (4, 2.776), (9, 2.262), (30, 2.042)] {
            let t = student_t_95(degrees);
            assert!((t - table).abs() < 5e-4, "{degrees}: {t} against {table}");
        }
    }

    #[test]
    fn a_run_never_fills_more_than_half_the_free_space() {
        let config = MonitoringConfig::default();
        let roomy = params(&config, u64::MAX).unwrap();
        assert_eq!(roomy.block_size_bytes, 64 << 30);
        // 1 GiB free, 8 tasks: 64 MiB each at most, in whole 4 MiB transfers.
        let tight = params(&config, 1 << 30).unwrap();
        assert_eq!(tight.block_size_bytes, 64 << 20);
    }

    #[test]
    fn odd_or_single_rounds_are_refused() {
        for rounds in [1, 3] {
            let config = MonitoringConfig {
                rounds,
                ..MonitoringConfig::default()
            };
            assert!(check(&config).is_err(), "{rounds}");
        }
    }
}
