//! `iopath bench placement`: the Spider paper's placement experiment on an emulated torus
//! (the library is `iopath_bench::placement`).

use std::path::PathBuf;

use iopath_bench::placement::{self, PlacementConfig};
use iopath_fabric::units::parse_size;

/// `iopath bench placement`'s options.
#[derive(Debug, clap::Args)]
pub struct PlacementArgs {
    /// Storage-server counts to sweep (each 1 to 8), a run per count and placement.
    #[arg(long, value_delimiter = ',')]
    servers: Option<Vec<u32>>,
    /// The torus, routers per axis (`8x4x2`).
    #[arg(long, value_parser = parse_dims)]
    dims: Option<[u32; 3]>,
    /// Targets per server; one writer per target.
    #[arg(long)]
    targets: Option<u32>,
    /// A link's rate in OSTs' worth: the client–OST pairs a link carries before it saturates
    /// (Jaguar's: 17).
    #[arg(long)]
    pairs_per_link: Option<u32>,
    /// Bytes each writer writes (k, m suffixes).
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// A small sweep (two server counts on a 4x4x2 torus, links of two OSTs' worth, 8 MiB per
    /// writer), as the test suite runs it.
    #[arg(long)]
    quick: bool,
    /// Print the report as JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Also draw the largest run's completion times (measured and modeled) as an SVG CDF.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Directory for the stacks' storage (a temporary directory inside it, removed).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// A process per server node on loopback TCP (the writers in this process); the torus is modeled once, here, for all of them. Default: every node in this process.
    #[arg(long)]
    processes: bool,
}

pub(crate) fn parse_dims(text: &str) -> Result<[u32; 3], String> {
    let parts: Vec<&str> = text.split('x').collect();
    let bad = || format!("{text:?}: give the torus as XxYxZ, as in 8x4x2");
    let [x, y, z] = parts.as_slice() else {
        return Err(bad());
    };
    let n = |s: &str| s.parse::<u32>().map_err(|_| bad());
    Ok([n(x)?, n(y)?, n(z)?])
}

/// Runs `iopath bench placement`.
pub async fn run(args: PlacementArgs) -> anyhow::Result<()> {
    let mut config = if args.quick {
        PlacementConfig::quick()
    } else {
        PlacementConfig::default()
    };
    if let Some(servers) = args.servers {
        config.servers = servers;
    }
    if let Some(dims) = args.dims {
        config.dims = dims;
    }
    if let Some(targets) = args.targets {
        config.targets_per_server = targets;
    }
    if let Some(pairs) = args.pairs_per_link {
        config.pairs_per_link = pairs;
    }
    if let Some(size) = args.size {
        config.bytes_per_writer = size;
    }
    config.dir = args.dir;
    config.mode = iopath_stack::runtime::Mode::of(false, args.processes);
    let report = placement::run(&config, &mut std::io::stderr()).await?;
    let svg = args.svg.as_deref().map(|path| {
        (
            path,
            placement::figure(&report).map(|f| f.svg()),
            "completion times",
        )
    });
    super::output::print_report(&report, args.json, placement::render, svg)
}
