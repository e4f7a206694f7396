//! `iopath lctl`: a running node's parameters, over its admin service, as Lustre's lctl reads
//! and sets them (the commands themselves are the admin crate's).

use std::net::SocketAddr;
use std::path::PathBuf;

use anyhow::Context as _;

/// `iopath lctl`: which node, and the command.
#[derive(Debug, clap::Args)]
pub struct LctlArgs {
    /// The node.
    #[command(flatten)]
    node: AdminTarget,
    #[command(subcommand)]
    command: iopath_admin::LctlCommand,
}

/// A node's admin service: its address, or its name in a stack file `iopath launch` wrote.
#[derive(Debug, Clone, clap::Args)]
pub struct AdminTarget {
    /// The node's admin service address (printed when the node starts).
    #[arg(long, env = "IOPATH_ADMIN", required_unless_present = "stack")]
    admin: Option<SocketAddr>,
    /// A stack file `iopath launch` wrote, where --node's admin address is read.
    #[arg(long, requires = "node", conflicts_with = "admin")]
    stack: Option<PathBuf>,
    /// The node, by name, in --stack.
    #[arg(long, requires = "stack")]
    node: Option<String>,
}

impl AdminTarget {
    /// The admin service's address.
    pub fn address(&self) -> anyhow::Result<SocketAddr> {
        match (&self.admin, &self.stack, &self.node) {
            (_, Some(file), Some(node)) => {
                let stack = iopath_stack::Stack::load(file)?;
                super::launch::admin_of(&stack, node)
            }
            (Some(admin), _, _) => Ok(*admin),
            _ => None.context("which node? give --admin ADDR, or --stack FILE --node NAME"),
        }
    }
}

/// Runs `iopath lctl`.
pub async fn run(args: LctlArgs) -> anyhow::Result<()> {
    iopath_admin::lctl::run(args.node.address()?, args.command).await
}
