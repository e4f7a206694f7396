//! `iopath lnetctl route add|del|show`: a running node's LNet routes, over its admin service
//! (written to and read from its `routes` parameter).

use std::net::SocketAddr;

use clap::Subcommand;

/// `iopath lnetctl`: which node, and the command.
#[derive(Debug, clap::Args)]
pub struct LnetctlArgs {
    /// The node's admin service address.
    #[arg(long, env = "IOPATH_ADMIN")]
    admin: SocketAddr,
    #[command(subcommand)]
    command: LnetctlCommand,
}

#[derive(Debug, Subcommand)]
enum LnetctlCommand {
    /// Routes to remote networks.
    Route {
        #[command(subcommand)]
        action: RouteAction,
    },
}

#[derive(Debug, Subcommand)]
enum RouteAction {
    /// Add a route: reach NET through GATEWAY.
    Add {
        /// The remote network, e.g. tcp1.
        #[arg(long)]
        net: String,
        /// The router's NID on one of the node's networks.
        #[arg(long)]
        gateway: String,
        /// Hop count: lower is preferred; equal routes share traffic round-robin.
        #[arg(long, default_value_t = 1)]
        hop: u32,
        /// Priority, considered before hops: lower is preferred.
        #[arg(long, default_value_t = 0)]
        priority: u32,
    },
    /// Delete a route.
    Del {
        /// The remote network.
        #[arg(long)]
        net: String,
        /// The router's NID.
        #[arg(long)]
        gateway: String,
    },
    /// Show the routing table.
    Show,
}

/// Runs `iopath lnetctl`.
pub async fn run(args: LnetctlArgs) -> anyhow::Result<()> {
    let LnetctlCommand::Route { action } = args.command;
    let client = iopath_admin::Client::connect(args.admin).await?;
    let command = match action {
        RouteAction::Add {
            net,
            gateway,
            hop,
            priority,
        } => format!("add {net} {gateway} {hop} {priority}"),
        RouteAction::Del { net, gateway } => format!("del {net} {gateway}"),
        RouteAction::Show => {
            for param in client.get_param("routes").await? {
                print!("{}", param.value);
            }
            return Ok(());
        }
    };
    client.set_param("routes", &command).await?;
    Ok(())
}
