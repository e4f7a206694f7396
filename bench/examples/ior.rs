//! IOR on an emulated stack (what `iopath bench ior` does), e.g.
//! `cargo run --release -p iopath-bench --example ior -- --preset asci-red-mini -w -r -F -t 1m -b 64m`.
//! With `--processes` it starts its node processes from itself: run as `ior node --stack FILE
//! --name NODE --dir DIR`, it is `iopath node`.

use clap::Parser;

/// IOR's flags and where to run.
#[derive(Debug, Parser)]
struct Cli {
    #[command(flatten)]
    ior: iopath_bench::ior::IorArgs,
}

/// `ior node ...`: one node of a stack.
#[derive(Debug, Parser)]
struct NodeCli {
    #[command(subcommand)]
    command: NodeCommand,
}

#[derive(Debug, clap::Subcommand)]
enum NodeCommand {
    Node(iopath_stack::cli::NodeArgs),
}

#[tokio::main]
async fn main() -> Result<(), Box<dyn std::error::Error>> {
    if std::env::args().nth(1).as_deref() == Some("node") {
        let NodeCommand::Node(args) = NodeCli::parse().command;
        return Ok(iopath_stack::cli::node(args).await?);
    }
    Ok(iopath_bench::ior::run(Cli::parse().ior).await?)
}
