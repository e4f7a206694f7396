//! `iopath iorcd`: IORCD's records from running routers and fyods, and the paper's analyses of
//! them (the library is `iopath_bench::iorcd`; the sampler is `iopath_fabric::iorcd`).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context;
use iopath_bench::iorcd;

/// `iopath iorcd`'s commands.
#[derive(Debug, clap::Subcommand)]
pub enum IorcdCommand {
    /// Fetch the records IORCD keeps on running nodes (their `iorcd.samples`), as JSON Lines.
    Collect(CollectArgs),
    /// The paper's analyses of collected records: congestion against bandwidth per direction,
    /// and bursts flagged degraded (low congestion lasting more than two samples).
    Analyze(AnalyzeArgs),
}

/// `iopath iorcd collect`.
#[derive(Debug, clap::Args)]
pub struct CollectArgs {
    /// A node's admin service address (routers and fyods sample); repeat for several.
    #[arg(long, required = true)]
    admin: Vec<SocketAddr>,
    /// Set each node's sampling interval first, in milliseconds (0: off); a change, so it
    /// needs --secret-file.
    #[arg(long, value_name = "MS")]
    interval_ms: Option<u64>,
    /// The stack's admin secret file, which --interval-ms needs.
    #[command(flatten)]
    secret: super::lctl::SecretFileArg,
    /// Write the records here instead of standard output.
    #[arg(short, long)]
    out: Option<PathBuf>,
}

/// `iopath iorcd analyze`.
#[derive(Debug, clap::Args)]
pub struct AnalyzeArgs {
    /// The records (JSON Lines, as `collect` writes them).
    records: PathBuf,
    /// The networks the storage servers are on (the rest are the compute side).
    #[arg(long, value_delimiter = ',', required = true)]
    storage_net: Vec<String>,
    /// A burst longer than this many samples may be degraded (the paper: two).
    #[arg(long, default_value_t = 2)]
    samples_max: usize,
    /// ... if its congestion is below this fraction of the highest burst's.
    #[arg(long, default_value_t = 0.5)]
    low: f64,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Also draw the series as an SVG.
    #[arg(long)]
    svg: Option<PathBuf>,
}

/// Runs `iopath iorcd`.
pub async fn run(command: IorcdCommand) -> anyhow::Result<()> {
    match command {
        IorcdCommand::Collect(args) => collect(args).await,
        IorcdCommand::Analyze(args) => analyze(args),
    }
}

async fn collect(args: CollectArgs) -> anyhow::Result<()> {
    let mut lines = String::new();
    let secret = args.secret.load()?;
    for admin in &args.admin {
        let mut client = iopath_admin::Client::connect(*admin).await?;
        if let Some(secret) = &secret {
            client = client.with_secret(secret.clone());
        }
        if let Some(ms) = args.interval_ms {
            client
                .set_param("iorcd.interval_ms", &ms.to_string())
                .await
                .with_context(|| format!("set iorcd.interval_ms on {admin}"))?;
        }
        let values = client.get_param("iorcd.samples").await.with_context(|| {
            format!("{admin} keeps no IORCD records (only routers and fyods sample)")
        })?;
        for value in values {
            lines.push_str(&value.value);
        }
    }
    match &args.out {
        Some(path) => {
            std::fs::write(path, &lines).with_context(|| format!("write {}", path.display()))?
        }
        None => print!("{lines}"),
    }
    Ok(())
}

fn analyze(args: AnalyzeArgs) -> anyhow::Result<()> {
    if !(0.0..=1.0).contains(&args.low) {
        anyhow::bail!("--low is a fraction, 0 to 1, not {}", args.low);
    }
    let text = iopath_bench::ior::params::read_bounded(&args.records, iorcd::RECORDS_MAX_BYTES)
        .with_context(|| format!("read {}", args.records.display()))?;
    let samples =
        iorcd::parse(&text).map_err(|e| anyhow::anyhow!("{}: {e}", args.records.display()))?;
    let analysis = iorcd::analyze(&samples, &args.storage_net, args.samples_max, args.low);
    if args.json {
        println!("{}", serde_json::to_string_pretty(&analysis)?);
    } else {
        print!("{}", iorcd::text(&analysis));
    }
    if let Some(path) = &args.svg {
        std::fs::write(path, iorcd::figure(&samples, &analysis).svg())
            .with_context(|| format!("write {}", path.display()))?;
    }
    Ok(())
}

/// `iopath bench iorcd`'s options.
#[derive(Debug, clap::Args)]
#[command(mut_arg("preset", |a| a.help(super::stack::preset_help(iopath_stack::ROUTED_PRESET))))]
pub struct ExperimentArgs {
    /// The stack (a routed one; default: the spider-mini-routed preset).
    #[command(flatten)]
    stack: super::stack::StackArgs,
    /// IOR tasks of each run of the load series (the paper scaled ranks to 64, four per node).
    #[arg(long, value_delimiter = ',', default_value = "1,2,4,8,16,32")]
    loads: Vec<u32>,
    /// IORCD's sampling interval, milliseconds (the paper's 30 s, scaled down).
    #[arg(long, value_name = "MS", default_value_t = 500)]
    interval_ms: u64,
    /// Sampling intervals each phase of the load series lasts (IOR stonewalls it).
    #[arg(long, default_value_t = 4)]
    windows: u32,
    /// IOR's transfer size (k, m suffixes).
    #[arg(short = 't', long, value_name = "SIZE", default_value = "4m", value_parser = iopath_fabric::units::parse_size)]
    transfer_size: u64,
    /// IOR tasks of the short runs IORCD's rule reads (healthy, impeded, starved).
    #[arg(long, default_value_t = 8)]
    degraded_tasks: u32,
    /// Runs of each condition: healthy, with the storage impeded, with the routers starved.
    #[arg(long, default_value_t = 2)]
    repeats: u32,
    /// The impeded storage's rate: its targets' modeled disks together write this fraction
    /// of the healthy run's rate.
    #[arg(long, value_name = "FRACTION", default_value_t = 0.125)]
    impeded: f64,
    /// The starved routers' large_router_buffers.
    #[arg(long, default_value_t = 1)]
    starved_large_buffers: u32,
    /// The starved routers' peer_buffer_credits.
    #[arg(long, default_value_t = 1)]
    starved_peer_credits: u32,
    /// Run an unmodeled stack at this host's speed, instead of giving it the experiment's
    /// links (Titan's Gemini share and QDR InfiniBand, scaled).
    #[arg(long)]
    unmodeled: bool,
    /// Directory for the stacks' storage (default: a temporary one in the current directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
    /// Draw the load series (bandwidth and congestion against tasks, as the paper's Figures 3
    /// and 4) into DIR/iorcd-write.svg and DIR/iorcd-read.svg, and the rule's runs (write
    /// congestion per sample, as its Figure 7) into DIR/iorcd-rule.svg.
    #[arg(long, value_name = "DIR")]
    svg: Option<PathBuf>,
}

/// Runs `iopath bench iorcd`.
pub async fn experiment(args: ExperimentArgs) -> anyhow::Result<()> {
    use iorcd::experiment::{self, ExperimentConfig};
    let config = ExperimentConfig {
        choice: args.stack.or_preset(iopath_stack::ROUTED_PRESET),
        loads: args.loads,
        interval: std::time::Duration::from_millis(args.interval_ms),
        windows: args.windows,
        transfer_bytes: args.transfer_size,
        degraded_tasks: args.degraded_tasks,
        repeats: args.repeats,
        impeded_fraction: args.impeded,
        starved_large_buffers: args.starved_large_buffers,
        starved_peer_credits: args.starved_peer_credits,
        model: !args.unmodeled,
        dir: args.dir,
        ..ExperimentConfig::default()
    };
    if let Some(dir) = &args.svg {
        std::fs::create_dir_all(dir).with_context(|| format!("create {}", dir.display()))?;
    }
    let mut say = |line: &str| eprintln!("{line}");
    let result = experiment::run(&config, None, &mut say).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&result)?);
    } else {
        print!("{}", experiment::text(&result));
    }
    if let Some(dir) = &args.svg {
        for (direction, name) in [
            (iorcd::Direction::Write, "iorcd-write.svg"),
            (iorcd::Direction::Read, "iorcd-read.svg"),
        ] {
            let path = dir.join(name);
            std::fs::write(&path, experiment::figure(&result, direction).svg())
                .with_context(|| format!("write {}", path.display()))?;
            eprintln!("wrote {}", path.display());
        }
        let path = dir.join("iorcd-rule.svg");
        std::fs::write(&path, experiment::rule_figure(&result).svg())
            .with_context(|| format!("write {}", path.display()))?;
        eprintln!("wrote {}", path.display());
    }
    Ok(())
}

/// `iopath bench monitoring`'s options.
#[derive(Debug, clap::Args)]
#[command(mut_arg("preset", |a| a.help(super::stack::preset_help(iopath_stack::ROUTED_PRESET))))]
pub struct MonitoringArgs {
    /// The stack (default: the spider-mini-routed preset).
    #[command(flatten)]
    stack: super::stack::StackArgs,
    /// IOR tasks of every run.
    #[arg(long, default_value_t = 8)]
    tasks: u32,
    /// Each IOR phase's length, seconds (IOR stonewalls it).
    #[arg(long, default_value_t = 4)]
    seconds: u64,
    /// IOR's transfer size (k, m suffixes).
    #[arg(short = 't', long, value_name = "SIZE", default_value = "4m", value_parser = iopath_fabric::units::parse_size)]
    transfer_size: u64,
    /// Rounds, each a plain and a monitored run: an even number, 2 to 10.
    #[arg(long, default_value_t = 4)]
    rounds: u32,
    /// IORCD's interval while monitored, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    interval_ms: u64,
    /// How often every server node's /metrics is scraped while monitored, milliseconds.
    #[arg(long, value_name = "MS", default_value_t = 1000)]
    scrape_ms: u64,
    /// Directory for the stack's storage (default: a temporary one in the current directory).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// JSON instead of text.
    #[arg(long)]
    json: bool,
}

/// Runs `iopath bench monitoring`.
pub async fn monitoring(args: MonitoringArgs) -> anyhow::Result<()> {
    use iopath_bench::monitoring::{self, MonitoringConfig};
    let config = MonitoringConfig {
        choice: args.stack.or_preset(iopath_stack::ROUTED_PRESET),
        tasks: args.tasks,
        phase: std::time::Duration::from_secs(args.seconds),
        transfer_bytes: args.transfer_size,
        rounds: args.rounds,
        interval: std::time::Duration::from_millis(args.interval_ms),
        scrape_every: std::time::Duration::from_millis(args.scrape_ms),
        dir: args.dir,
    };
    let mut say = |line: &str| eprintln!("{line}");
    let report = monitoring::run(&config, None, &mut say).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", monitoring::text(&report));
    }
    Ok(())
}
