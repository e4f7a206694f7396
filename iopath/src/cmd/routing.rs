//! `iopath bench routing`: the Spider paper's routing configurations, and Titan's
//! fine-grained routing, with real LNET routers on an emulated torus (the library is
//! `iopath_labs::routing`).

use iopath_fabric::units::parse_size;
use iopath_labs::routing::{RoutingLab, Scheme};

use super::lab::{self, LabArgs, set};
use super::placement::parse_dims;

/// `iopath bench routing`'s options.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("quick", |a| a.help(
        "A small run (round-robin and projection, 6 MiB per writer), as the test suite runs it"
    )),
    mut_arg("svg", |a| a.help(
        "Also draw each configuration's bandwidth (measured and modeled) as SVG bars"
    )),
)]
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
    /// What every lab takes.
    #[command(flatten)]
    lab: LabArgs,
    /// A process per server node and router on loopback TCP (the writers in this process); the torus is modeled once, here, for all of them. Default: every node in this process.
    #[arg(long)]
    processes: bool,
}

/// Runs `iopath bench routing`.
pub async fn run(args: RoutingArgs) -> anyhow::Result<()> {
    lab::run::<RoutingLab>(args.lab, |config| {
        set(&mut config.schemes, args.schemes);
        set(&mut config.dims, args.dims);
        set(&mut config.leaves, args.leaves);
        set(&mut config.routers_per_leaf, args.routers_per_leaf);
        set(&mut config.servers_per_leaf, args.servers_per_leaf);
        set(&mut config.targets_per_server, args.targets);
        set(&mut config.pairs_per_link, args.pairs_per_link);
        set(&mut config.card_over_server, args.card_over_server);
        set(&mut config.bytes_per_writer, args.size);
        set(&mut config.depth, args.depth);
        config.mode = iopath_stack::runtime::Mode::of(false, args.processes);
        Ok(())
    })
    .await
}
