//! `iopath bench routing`: the Spider paper's routing configurations, and Titan's
//! fine-grained routing, with real LNET routers on an emulated torus (the library is
//! `iopath_bench::routing`).

use std::path::PathBuf;

use iopath_bench::routing::{self, RoutingConfig, Scheme};
use iopath_fabric::units::parse_size;

use super::placement::parse_dims;

/// `iopath bench routing`'s options.
#[derive(Debug, clap::Args)]
pub struct RoutingArgs {
    /// The configurations to run, each with both placements (baseline, nearest, round-robin,
    /// projection, fine-grained).
    #[arg(long, value_delimiter = ',')]
    schemes: Option<Vec<Scheme>>,
    /// The torus, routers per axis (`8x4x2`).
    #[arg(long, value_parser = parse_dims)]
    dims: Option<[u32; 3]>,
    /// Leaf modules: the storage side's networks.
    #[arg(long)]
    leaves: Option<u32>,
    /// Routers per leaf (at most 8 routers in all).
    #[arg(long)]
    routers_per_leaf: Option<u32>,
    /// Storage servers per leaf (at most the routers per leaf).
    #[arg(long)]
    servers_per_leaf: Option<u32>,
    /// Targets per server; one writer per target.
    #[arg(long)]
    targets: Option<u32>,
    /// A torus link's rate in OSTs' worth (Jaguar's: 17).
    #[arg(long)]
    pairs_per_link: Option<u32>,
    /// A router's card (and its torus NIC) over one server's targets' rate (Spider's: 1.12,
    /// 1,413.5 MB/s against seven OSTs at 180).
    #[arg(long)]
    card_over_server: Option<f64>,
    /// Bytes each writer writes (k, m suffixes).
    #[arg(long, value_parser = parse_size)]
    size: Option<u64>,
    /// Writes each writer keeps in flight (1 to 16).
    #[arg(long)]
    depth: Option<u32>,
    /// A small run (round-robin and projection, 6 MiB per writer), as the test suite runs it.
    #[arg(long)]
    quick: bool,
    /// Print the report as JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Also draw each configuration's bandwidth (measured and modeled) as SVG bars.
    #[arg(long)]
    svg: Option<PathBuf>,
    /// Directory for the stacks' storage (a temporary directory inside it, removed).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// A process per server node and router on loopback TCP (the writers in this process); the torus is modeled once, here, for all of them. Default: every node in this process.
    #[arg(long)]
    processes: bool,
}

/// Runs `iopath bench routing`.
pub async fn run(args: RoutingArgs) -> anyhow::Result<()> {
    let mut config = if args.quick {
        RoutingConfig::quick()
    } else {
        RoutingConfig::default()
    };
    if let Some(schemes) = args.schemes {
        config.schemes = schemes;
    }
    if let Some(dims) = args.dims {
        config.dims = dims;
    }
    if let Some(leaves) = args.leaves {
        config.leaves = leaves;
    }
    if let Some(routers) = args.routers_per_leaf {
        config.routers_per_leaf = routers;
    }
    if let Some(servers) = args.servers_per_leaf {
        config.servers_per_leaf = servers;
    }
    if let Some(targets) = args.targets {
        config.targets_per_server = targets;
    }
    if let Some(pairs) = args.pairs_per_link {
        config.pairs_per_link = pairs;
    }
    if let Some(card) = args.card_over_server {
        config.card_over_server = card;
    }
    if let Some(size) = args.size {
        config.bytes_per_writer = size;
    }
    if let Some(depth) = args.depth {
        config.depth = depth;
    }
    config.dir = args.dir;
    config.mode = iopath_stack::runtime::Mode::of(false, args.processes);
    let report = routing::run(&config, &mut std::io::stderr()).await?;
    let svg = args.svg.as_deref().map(|path| {
        (
            path,
            routing::figure(&report).map(|f| f.svg()),
            "bandwidth by configuration",
        )
    });
    super::output::print_report(&report, args.json, routing::render, svg)
}
