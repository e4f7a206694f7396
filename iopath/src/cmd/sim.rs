//! `iopath sim`: the seeded whole-stack simulation over a range of seeds — on every core
//! (`--jobs`), in blocks a long run records as it finishes them (`--record FILE`), so that a
//! run of hours stopped by Ctrl-C or `--time-limit` resumes where it stopped — with a progress
//! line, and a summary: seeds run, seeds/s, failing seeds and how to replay them, faults
//! injected by kind.

use std::collections::{BTreeMap, BTreeSet};
use std::fs::{File, OpenOptions};
use std::io::{BufRead as _, BufReader, Write as _};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use iopath_sim::run::add_counts;
use iopath_sim::sweep::{BLOCK_SEEDS_DEFAULT, BlockDone, Sweep};
use iopath_sim::{SimConfig, run_seed};
use serde::{Deserialize, Serialize};

/// `iopath sim`'s options.
#[derive(Debug, clap::Args)]
pub struct SimArgs {
    /// How many seeds to run.
    #[arg(long, default_value_t = 200)]
    seeds: u64,
    /// The first seed (the others follow it).
    #[arg(long, default_value_t = 0)]
    first: u64,
    /// Reads and writes each simulated client issues.
    #[arg(long, default_value_t = 12)]
    ops: u32,
    /// Print every event of each seed (to read one failing seed's story); seeds run one at
    /// a time.
    #[arg(long)]
    events: bool,
    /// Keep every seed on the storage path alone (no metadata server, no fyods), as seeds
    /// ran before those were simulated: a seed found then replays as it did.
    #[arg(long)]
    storage_only: bool,
    /// Seeds run side by side on this many threads [default: one per core].
    #[arg(long, value_name = "N")]
    jobs: Option<usize>,
    /// Record each finished block of seeds in FILE (JSON lines). If FILE records an earlier
    /// run of the same seeds and options, its blocks are skipped and its findings counted:
    /// the same command again resumes a stopped run.
    #[arg(long, value_name = "FILE")]
    record: Option<PathBuf>,
    /// Seeds per block: the unit a worker takes and `--record` keeps.
    #[arg(long, value_name = "SEEDS", default_value_t = BLOCK_SEEDS_DEFAULT)]
    block: u64,
    /// Stop taking new blocks after this many seconds (with --record, run again to go on).
    #[arg(long, value_name = "SECONDS")]
    time_limit: Option<u64>,
}

/// The first line of a record: the run it belongs to.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct RunLine {
    first: u64,
    seeds: u64,
    ops: u32,
    storage_only: bool,
    block: u64,
}

/// One finished block, as recorded.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct BlockLine {
    start: u64,
    end: u64,
    failed: Vec<u64>,
    /// The block's seeds' event digests folded: equal for the same code (`Sweep`).
    #[serde(with = "hex_u64")]
    digest: u64,
    counts: BTreeMap<String, u64>,
    wall_s: f64,
    simulated_s: f64,
}

/// Runs the seeds on threads of their own (each seed runs its own one-thread runtime).
pub async fn run(args: SimArgs) -> anyhow::Result<()> {
    if args.events {
        let failed = tokio::task::spawn_blocking(move || run_one_by_one(&args)).await??;
        anyhow::ensure!(failed == 0, "{failed} seeds failed");
        return Ok(());
    }
    let stop = Arc::new(AtomicBool::new(false));
    let on_signal = Arc::clone(&stop);
    // `main` catches the first signal from the start and tells us; a second ends the process
    // at once.
    tokio::spawn(async move {
        let signal = crate::signals::stop_requested().await;
        eprintln!(
            "{signal}: finishing the seeds under way (Ctrl-C again to stop at once; blocks not finished are not recorded)"
        );
        on_signal.store(true, Ordering::Relaxed);
    });
    let summary = tokio::task::spawn_blocking(move || sweep(&args, &stop)).await??;
    anyhow::ensure!(
        summary.failed.is_empty(),
        "{} seeds failed",
        summary.failed.len()
    );
    anyhow::ensure!(
        summary.seeds_left == 0,
        "stopped with {} seeds not run{}",
        summary.seeds_left,
        if summary.recorded {
            "; the same command resumes"
        } else {
            " (--record FILE lets a run resume)"
        }
    );
    Ok(())
}

/// What a sweep came to.
struct Summary {
    failed: Vec<u64>,
    seeds_left: u64,
    recorded: bool,
}

/// Totals over the blocks done, this call's and a record's.
#[derive(Default)]
struct Totals {
    blocks: BTreeSet<u64>,
    seeds: u64,
    failed: Vec<u64>,
    counts: BTreeMap<String, u64>,
    simulated: Duration,
}

impl Totals {
    fn add(&mut self, line: &BlockLine) {
        self.blocks.insert(line.start);
        self.seeds += line.end - line.start;
        self.failed.extend(&line.failed);
        for (kind, n) in &line.counts {
            *self.counts.entry(kind.clone()).or_default() += n;
        }
        self.simulated += Duration::from_secs_f64(line.simulated_s);
    }
}

fn config_of(args: &SimArgs) -> SimConfig {
    SimConfig {
        ops_per_client: args.ops,
        keep_events: args.events,
        other_roles: !args.storage_only,
        ..SimConfig::default()
    }
}

fn sweep(args: &SimArgs, stop: &AtomicBool) -> anyhow::Result<Summary> {
    let jobs = args
        .jobs
        .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get()));
    anyhow::ensure!(jobs >= 1, "--jobs must be at least 1");
    anyhow::ensure!(args.block >= 1, "--block must be at least 1 seed");
    let run_line = RunLine {
        first: args.first,
        seeds: args.seeds,
        ops: args.ops,
        storage_only: args.storage_only,
        block: args.block,
    };
    let mut totals = Totals::default();
    let record = match &args.record {
        Some(path) => Some(open_record(path, &run_line, &mut totals)?),
        None => None,
    };
    if !totals.blocks.is_empty() {
        eprintln!(
            "resuming: {} seeds already run in {} blocks ({} failed), recorded in {}",
            totals.seeds,
            totals.blocks.len(),
            totals.failed.len(),
            args.record.as_deref().unwrap_or(Path::new("")).display()
        );
    }
    let sweep = Sweep {
        first: args.first,
        seeds: args.seeds,
        jobs,
        block_seeds: args.block,
        // The nodes' own logs only when asked for: what a sweep reports is the oracle's.
        quiet: std::env::var_os("IOPATH_LOG").is_none() && std::env::var_os("RUST_LOG").is_none(),
    };
    let config = config_of(args);
    let started = Instant::now();
    let before = totals.seeds;
    let done = totals.blocks.clone();
    let shared = Mutex::new((totals, record, Instant::now()));
    // A report that cannot be written (`> /dev/full`, a closed pipe) stops the sweep, and is
    // its error.
    let unwritten: Mutex<Option<anyhow::Error>> = Mutex::new(None);
    let deadline = args.time_limit.map(|s| started + Duration::from_secs(s));
    let on_block = |block: BlockDone| {
        let mut guard = shared.lock().unwrap_or_else(PoisonError::into_inner);
        let (totals, record, last_progress) = &mut *guard;
        let mut text = String::new();
        for report in &block.failed {
            text.push_str(&report.to_string());
        }
        for seed in &block.panicked {
            text.push_str(&format!(
                "seed {seed} PANICKED; replay it with `iopath sim --first {seed} --seeds 1 --events`\n"
            ));
        }
        if !text.is_empty()
            && let Err(error) = super::output::write_out(&text)
        {
            stop.store(true, Ordering::Relaxed);
            unwritten
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert(error);
        }
        let line = BlockLine {
            start: block.seeds.start,
            end: block.seeds.end,
            failed: block.failing_seeds(),
            digest: block.digest,
            counts: block
                .counts
                .iter()
                .map(|(k, v)| ((*k).to_string(), *v))
                .collect(),
            wall_s: block.wall.as_secs_f64(),
            simulated_s: block.simulated.as_secs_f64(),
        };
        if let Some(file) = record.as_mut() {
            let written = serde_json::to_string(&line)
                .map_err(std::io::Error::other)
                .and_then(|text| writeln!(file, "{text}"))
                .and_then(|()| file.flush());
            if let Err(error) = written {
                eprintln!("iopath sim: cannot record a finished block: {error}; stopping");
                stop.store(true, Ordering::Relaxed);
            }
        }
        totals.add(&line);
        if deadline.is_some_and(|d| Instant::now() >= d) && !stop.swap(true, Ordering::Relaxed) {
            eprintln!("time limit reached: finishing the seeds under way");
        }
        if last_progress.elapsed() >= Duration::from_secs(10) {
            *last_progress = Instant::now();
            let now = totals.seeds - before;
            let rate = now as f64 / started.elapsed().as_secs_f64().max(1e-9);
            let left = args.seeds.saturating_sub(totals.seeds);
            eprintln!(
                "{} of {} seeds, {} failed, {rate:.0} seeds/s, about {} left",
                totals.seeds,
                args.seeds,
                totals.failed.len(),
                human_duration(Duration::from_secs_f64(left as f64 / rate.max(1e-9)))
            );
        }
    };
    sweep.run(&config, &done, stop, &on_block);
    if let Some(error) = unwritten
        .into_inner()
        .unwrap_or_else(PoisonError::into_inner)
    {
        return Err(error);
    }
    let (totals, record, _) = shared.into_inner().unwrap_or_else(PoisonError::into_inner);
    let wall = started.elapsed();
    let this_call = totals.seeds - before;
    let mut failed = totals.failed.clone();
    failed.sort_unstable();
    outln!(
        "{} of {} seeds from {} run ({} in this call, {:.1} s, {:.0} seeds/s on {jobs} threads; {:.0} s simulated): {} failed{}",
        totals.seeds,
        args.seeds,
        args.first,
        this_call,
        wall.as_secs_f64(),
        this_call as f64 / wall.as_secs_f64().max(1e-9),
        totals.simulated.as_secs_f64(),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(" (seeds {failed:?})")
        }
    )?;
    print_counts(&totals.counts)?;
    Ok(Summary {
        failed,
        seeds_left: args.seeds - totals.seeds,
        recorded: record.is_some(),
    })
}

/// Opens (or starts) the record at `path` for `run`, adding what it holds to `totals`.
fn open_record(path: &Path, run: &RunLine, totals: &mut Totals) -> anyhow::Result<File> {
    let exists = path.exists();
    if exists {
        let file = File::open(path).with_context(|| format!("open {}", path.display()))?;
        let mut lines = BufReader::new(file).lines();
        let first = lines
            .next()
            .transpose()
            .with_context(|| format!("read {}", path.display()))?;
        if let Some(first) = first {
            let recorded: RunLine = serde_json::from_str(&first).with_context(|| {
                format!(
                    "{} is not a record of `iopath sim --record`",
                    path.display()
                )
            })?;
            anyhow::ensure!(
                recorded == *run,
                "{} records another run ({recorded:?}); this one is {run:?}: give the same \
                 options to resume it, or another file",
                path.display()
            );
            let blocks: BTreeSet<u64> = Sweep {
                first: run.first,
                seeds: run.seeds,
                jobs: 1,
                block_seeds: run.block,
                quiet: true,
            }
            .blocks()
            .into_iter()
            .map(|b| b.start)
            .collect();
            for (number, line) in lines.enumerate() {
                let line = line.with_context(|| format!("read {}", path.display()))?;
                // A line cut short by a kill as it was written: its block runs again.
                let Ok(block) = serde_json::from_str::<BlockLine>(&line) else {
                    eprintln!(
                        "{}: line {} is not a whole block (cut short?): it will run again",
                        path.display(),
                        number + 2
                    );
                    continue;
                };
                if blocks.contains(&block.start) && !totals.blocks.contains(&block.start) {
                    totals.add(&block);
                }
            }
        }
    }
    let mut file = OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("open {} to record blocks", path.display()))?;
    if !exists || std::fs::metadata(path)?.len() == 0 {
        writeln!(file, "{}", serde_json::to_string(run)?)
            .with_context(|| format!("write {}", path.display()))?;
    }
    Ok(file)
}

/// The old way, for `--events`: one seed after another, every event printed.
fn run_one_by_one(args: &SimArgs) -> anyhow::Result<u64> {
    let config = config_of(args);
    let started = Instant::now();
    let mut counts = BTreeMap::new();
    let mut failed = Vec::new();
    for seed in args.first..args.first.saturating_add(args.seeds) {
        let report = match std::panic::catch_unwind(|| run_seed(seed, &config)) {
            Ok(report) => report,
            Err(_) => {
                outln!(
                    "seed {seed} PANICKED; replay it with `iopath sim --first {seed} --seeds 1 --events`"
                )?;
                failed.push(seed);
                continue;
            }
        };
        for line in &report.lines {
            outln!("  {line}")?;
        }
        add_counts(&mut counts, &report.events);
        if !report.passed() {
            out!("{report}")?;
            failed.push(seed);
        }
    }
    outln!(
        "{} seeds from {} in {:.1} s: {} failed{}",
        args.seeds,
        args.first,
        started.elapsed().as_secs_f64(),
        failed.len(),
        if failed.is_empty() {
            String::new()
        } else {
            format!(" (seeds {failed:?})")
        }
    )?;
    print_counts(&counts.iter().map(|(k, v)| ((*k).to_string(), *v)).collect())?;
    Ok(failed.len() as u64)
}

/// The faults injected and the operations done, by kind.
fn print_counts(counts: &BTreeMap<String, u64>) -> anyhow::Result<()> {
    let line = |kinds: &[&str]| -> String {
        kinds
            .iter()
            .map(|kind| format!("{kind} {}", counts.get(*kind).copied().unwrap_or(0)))
            .collect::<Vec<_>>()
            .join(", ")
    };
    outln!("faults injected: {}", line(&iopath_sim::FAULT_KINDS))?;
    outln!(
        "operations: {}",
        line(&[
            "write_ok",
            "write_failed",
            "read_ok",
            "read_failed",
            "replayed",
            "loss_reported",
            "read_around_lost",
            "mds_create_ok",
            "mds_create_failed",
            "mds_unlink_ok",
            "mds_unlink_failed",
            "fyod_write_ok",
            "fyod_write_failed",
            "fyod_read_ok",
            "fyod_read_failed",
            "fyod_handle_gone",
        ])
    )
}

/// `3 h 12 min`, `4 min 10 s`, `12 s`.
fn human_duration(d: Duration) -> String {
    let s = d.as_secs();
    match s {
        0..60 => format!("{s} s"),
        60..3600 => format!("{} min {} s", s / 60, s % 60),
        _ => format!("{} h {} min", s / 3600, (s % 3600) / 60),
    }
}

/// A digest as 16 hex digits in the record: JSON numbers above 2^53 lose digits in most
/// readers.
mod hex_u64 {
    use serde::{Deserialize as _, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(value: &u64, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&format!("{value:016x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(deserializer: D) -> Result<u64, D::Error> {
        let text = String::deserialize(deserializer)?;
        u64::from_str_radix(&text, 16).map_err(serde::de::Error::custom)
    }
}
