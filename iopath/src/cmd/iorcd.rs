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
    /// Set each node's sampling interval first, in milliseconds (0: off).
    #[arg(long, value_name = "MS")]
    interval_ms: Option<u64>,
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
    for admin in &args.admin {
        let client = iopath_admin::Client::connect(*admin).await?;
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
