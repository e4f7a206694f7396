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

/// A node's admin service: its address, or its name in a stack file `iopath launch` wrote;
/// and the stack's admin secret, which changes (set_param, route edits) need.
#[derive(Debug, Clone, clap::Args)]
pub struct AdminTarget {
    /// The node's admin service address (printed when the node starts).
    #[arg(long, env = "IOPATH_ADMIN", required_unless_present = "stack")]
    admin: Option<SocketAddr>,
    /// A stack file `iopath launch` or `iopath up --processes` wrote, where --node's admin
    /// address is read.
    #[arg(long, requires = "node", conflicts_with = "admin")]
    stack: Option<PathBuf>,
    /// The node, by name, in --stack.
    #[arg(long, requires = "stack")]
    node: Option<String>,
    /// The stack's admin secret file (mode 0600), which set_param needs: `iopath up` and
    /// `iopath launch` say where they wrote it. With --stack, FILE.secret beside the stack
    /// file is read when this is not given.
    #[command(flatten)]
    secret: SecretFileArg,
}

/// `--secret-file FILE`: where a client tool reads the stack's admin secret.
#[derive(Debug, Clone, Default, clap::Args)]
pub struct SecretFileArg {
    /// The stack's admin secret file (mode 0600), which changes need (set_param, shutdown):
    /// `iopath up` and `iopath launch` say where they wrote it.
    #[arg(long, value_name = "FILE", env = iopath_admin::secret::SECRET_FILE_ENV)]
    secret_file: Option<PathBuf>,
}

impl SecretFileArg {
    /// The secret in the file given, if one was.
    pub fn load(&self) -> anyhow::Result<Option<iopath_admin::Secret>> {
        self.secret_file
            .as_deref()
            .map(iopath_admin::Secret::load)
            .transpose()
            .map_err(Into::into)
    }
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

    /// The stack's admin secret: from --secret-file (or its environment variable), else from
    /// beside --stack's file if one is there; `None` if neither, and reads still work.
    pub fn secret(&self) -> anyhow::Result<Option<iopath_admin::Secret>> {
        if let Some(secret) = self.secret.load()? {
            return Ok(Some(secret));
        }
        let Some(stack) = &self.stack else {
            return Ok(None);
        };
        let beside = iopath_admin::secret::path_beside(stack);
        if !beside.exists() {
            return Ok(None);
        }
        Ok(Some(iopath_admin::Secret::load(&beside)?))
    }

    /// A client of the node's admin service, carrying the stack's secret where one was found.
    pub async fn client(&self) -> anyhow::Result<iopath_admin::Client> {
        let client = iopath_admin::Client::connect(self.address()?).await?;
        Ok(match self.secret()? {
            Some(secret) => client.with_secret(secret),
            None => client,
        })
    }
}

/// Runs `iopath lctl`.
pub async fn run(args: LctlArgs) -> anyhow::Result<()> {
    iopath_admin::lctl::run(args.node.address()?, args.node.secret()?, args.command).await
}
