//! `iopath lctl`: a running node's parameters, over its admin service, as Lustre's lctl reads
//! and sets them (the commands themselves are the admin crate's).

use std::net::SocketAddr;

/// `iopath lctl`: which node, and the command.
#[derive(Debug, clap::Args)]
pub struct LctlArgs {
    /// The node's admin service address (printed when the node starts).
    #[arg(long, env = "IOPATH_ADMIN")]
    admin: SocketAddr,
    #[command(subcommand)]
    command: iopath_admin::LctlCommand,
}

/// Runs `iopath lctl`.
pub async fn run(args: LctlArgs) -> anyhow::Result<()> {
    iopath_admin::lctl::run(args.admin, args.command).await
}
