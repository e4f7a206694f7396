//! `iopath sim`: the seeded whole-stack simulation over a range of seeds, with a progress
//! line and a summary — seeds run, failing seeds and how to replay them, faults injected by
//! kind, wall time.

use std::collections::BTreeMap;
use std::time::Instant;

use iopath_sim::run::add_counts;
use iopath_sim::{SimConfig, run_seed};

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
    /// Print every event of each seed (to read one failing seed's story).
    #[arg(long)]
    events: bool,
    /// Keep every seed on the storage path alone (no metadata server, no fyods), as seeds
    /// ran before those were simulated: a seed found then replays as it did.
    #[arg(long)]
    storage_only: bool,
}

/// Runs the seeds on a thread of their own (each seed runs its own one-thread runtime).
pub async fn run(args: SimArgs) -> anyhow::Result<()> {
    let failed = tokio::task::spawn_blocking(move || run_seeds(&args)).await?;
    anyhow::ensure!(failed == 0, "{failed} seeds failed");
    Ok(())
}

fn run_seeds(args: &SimArgs) -> u64 {
    let config = SimConfig {
        ops_per_client: args.ops,
        keep_events: args.events,
        other_roles: !args.storage_only,
        ..SimConfig::default()
    };
    let started = Instant::now();
    let mut counts = BTreeMap::new();
    let mut failed = Vec::new();
    let mut last_progress = Instant::now();
    for (done, seed) in (args.first..args.first.saturating_add(args.seeds)).enumerate() {
        let report = match std::panic::catch_unwind(|| run_seed(seed, &config)) {
            Ok(report) => report,
            Err(_) => {
                println!(
                    "seed {seed} PANICKED; replay it with `iopath sim --first {seed} --seeds 1 --events`"
                );
                failed.push(seed);
                continue;
            }
        };
        for line in &report.lines {
            println!("  {line}");
        }
        add_counts(&mut counts, &report.events);
        if !report.passed() {
            print!("{report}");
            failed.push(seed);
        }
        if last_progress.elapsed().as_secs() >= 10 {
            last_progress = Instant::now();
            eprintln!(
                "{} of {} seeds, {} failed, {:.0} s",
                done + 1,
                args.seeds,
                failed.len(),
                started.elapsed().as_secs_f64()
            );
        }
    }
    println!(
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
    );
    let faults = [
        "drop",
        "delay",
        "bit_flip",
        "partition",
        "partition_drop",
        "away",
        "server_crash",
        "router_crash",
        "mds_crash",
        "fyod_crash",
    ];
    let injected: Vec<String> = faults
        .iter()
        .map(|kind| format!("{kind} {}", counts.get(kind).copied().unwrap_or(0)))
        .collect();
    println!("faults injected: {}", injected.join(", "));
    let ops: Vec<String> = [
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
    ]
    .iter()
    .map(|kind| format!("{kind} {}", counts.get(kind).copied().unwrap_or(0)))
    .collect();
    println!("operations: {}", ops.join(", "));
    failed.len() as u64
}
