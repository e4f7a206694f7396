//! `iopath soak`: a stack of processes under a verified workload for a given time, with its
//! server nodes killed and started again and fail points flipped on a schedule — the flags,
//! and the table or JSON of what it found (the run itself is `iopath_stack::soak`).

use std::path::PathBuf;
use std::time::Duration;

use anyhow::Context as _;
use iopath_fabric::units::parse_size;
use iopath_stack::soak::{self, SoakConfig};

use super::stack::StackArgs;

/// `iopath soak`'s options.
#[derive(Debug, clap::Args)]
#[command(mut_arg("preset", |a| a.help(super::stack::preset_help(iopath_stack::ROUTED_PRESET))))]
pub struct SoakArgs {
    /// The stack (default spider-mini-routed; asci-red-mini goes through fyods).
    #[command(flatten)]
    choice: StackArgs,
    /// How long the workload runs under faults, in minutes (fractions allowed: 0.5).
    #[arg(long, default_value_t = 10.0)]
    minutes: f64,
    /// Seconds between faults: each interval kills and restarts one server node and arms a
    /// fail point on another.
    #[arg(long, default_value_t = 30)]
    interval: u64,
    /// Bytes of each file the workload writes (k, m, g suffixes).
    #[arg(long, default_value = "4m", value_parser = parse_size)]
    file_size: u64,
    /// Seeds which node of a role is killed and which fail point is armed.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Directory for the stack's storage (a temporary directory inside it, removed at the
    /// end). Default: the system's temporary directory.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print the report as JSON instead of a table.
    #[arg(long)]
    json: bool,
}

/// Runs `iopath soak`; fails if any acknowledged byte was lost.
pub async fn run(args: SoakArgs) -> anyhow::Result<()> {
    anyhow::ensure!(
        args.minutes.is_finite() && args.minutes > 0.0,
        "--minutes: give a positive number of minutes"
    );
    let config = SoakConfig {
        choice: args.choice.or_preset(iopath_stack::ROUTED_PRESET),
        duration: Duration::from_secs_f64(args.minutes * 60.0),
        interval: Duration::from_secs(args.interval),
        file_bytes: args.file_size,
        seed: args.seed,
        dir: args.dir,
    };
    // Progress on standard error when the report is JSON, so standard output is only JSON.
    let report = if args.json {
        soak::run(&config, &mut std::io::stderr()).await
    } else {
        soak::run(&config, &mut std::io::stdout()).await
    }
    .context("soak")?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", soak::table(&report));
    }
    anyhow::ensure!(
        report.bytes_lost == 0,
        "{} acknowledged bytes were lost: {}",
        report.bytes_lost,
        report.losses.join("; ")
    );
    Ok(())
}
