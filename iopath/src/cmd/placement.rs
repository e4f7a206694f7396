//! `iopath bench placement`: the Spider paper's placement experiment on an emulated torus
//! (the library is `iopath_labs::placement`).

use iopath_fabric::units::parse_size;
use iopath_labs::placement::PlacementLab;

use super::lab::{self, LabArgs, set};

/// `iopath bench placement`'s options.
#[derive(Debug, clap::Args)]
#[command(
    mut_arg("quick", |a| a.help(
        "A small sweep (two server counts on a 4x4x2 torus, links of two OSTs' worth, 8 MiB \
         per writer), as the test suite runs it"
    )),
    mut_arg("svg", |a| a.help(
        "Also draw the largest run's completion times (measured and modeled) as an SVG CDF"
    )),
)]
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
    /// What every lab takes.
    #[command(flatten)]
    lab: LabArgs,
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
    lab::run::<PlacementLab>(args.lab, |config| {
        set(&mut config.servers, args.servers);
        set(&mut config.dims, args.dims);
        set(&mut config.targets_per_server, args.targets);
        set(&mut config.pairs_per_link, args.pairs_per_link);
        set(&mut config.bytes_per_writer, args.size);
        config.mode = iopath_stack::runtime::Mode::of(false, args.processes);
        Ok(())
    })
    .await
}
