//! Run the topology model's `topo` commands without the `iopath` binary:
//!
//! ```text
//! cargo run --release -p iopath-topology --example topo -- analyze --preset jaguar-spider
//! cargo run --release -p iopath-topology --example topo -- routes --preset titan-spider2 --client 3,4,5 --json
//! cargo run --release -p iopath-topology --example topo -- layout --preset titan-spider2
//! ```

use clap::Parser;
use iopath_topology::cli::{self, TopoCommand};

/// The `topo` subcommands as a program of their own.
#[derive(Parser, Debug)]
#[command(name = "topo", about = "iopath's topology model")]
struct Topo {
    #[command(subcommand)]
    command: TopoCommand,
}

fn main() -> anyhow::Result<()> {
    cli::run(Topo::parse().command)
}
