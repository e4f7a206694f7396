//! `iopath oss`: an object storage server with its targets, as a process of its own — the
//! storage server's `OssRole`, from flags.

use std::net::SocketAddr;

use clap::ValueEnum;
use iopath_fabric::units::parse_size;
use iopath_storage_server::service::role::{self, OssRole};

/// `iopath oss`'s options.
#[derive(Debug, clap::Args)]
pub struct OssArgs {
    /// Directory of its targets (created if absent).
    #[arg(long)]
    dir: std::path::PathBuf,
    /// Its NID; port 0 picks a free port (printed on the READY line).
    #[arg(long, default_value = "127.0.0.1:0@tcp0")]
    nid: iopath_fabric::Nid,
    /// Number of object storage targets.
    #[arg(long, default_value_t = 1)]
    targets: u32,
    /// Journal commits: sync (reply after commit) or async (reply once data is on disk).
    #[arg(long, value_enum, default_value = "async")]
    journal: JournalMode,
    /// Milliseconds known clients have to replay after an unclean restart.
    #[arg(long, default_value_t = 30_000)]
    recovery_window_ms: u64,
    /// Async group commit interval in milliseconds.
    #[arg(long, default_value_t = 1000)]
    commit_interval_ms: u64,
    /// Largest object (k, m, g, t suffixes).
    #[arg(long, default_value = "1t", value_parser = parse_size)]
    object_size_max: u64,
    /// The admin service's address.
    #[arg(long, default_value = "127.0.0.1:0")]
    admin: SocketAddr,
    /// The admin secret file (mode 0600) that set_param and shutdown callers must match;
    /// without it, a new secret is written to DIR/admin.secret and its path printed.
    #[arg(long, value_name = "FILE")]
    secret_file: Option<std::path::PathBuf>,
    /// Serve Prometheus's `/metrics` on this address (port 0 picks one; printed on the READY
    /// line after the admin address).
    #[arg(long, value_name = "ADDR")]
    metrics: Option<SocketAddr>,
    /// The file system's name, which the targets are named after (`iopath-OST0000`): 1 to 8
    /// letters, digits, `_` or `-`, as Lustre's `mkfs.lustre --fsname`.
    #[arg(long, default_value = iopath_client::FsName::DEFAULT)]
    fsname: iopath_client::FsName,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum JournalMode {
    /// Commit the journal before replying.
    Sync,
    /// Reply once the data is on disk; commit in groups later.
    Async,
}

/// Runs `iopath oss` until it is stopped.
pub async fn run(args: OssArgs) -> anyhow::Result<()> {
    let role = OssRole {
        dir: args.dir,
        nid: args.nid,
        targets: args.targets,
        sync_journal: args.journal == JournalMode::Sync,
        recovery_window: std::time::Duration::from_millis(args.recovery_window_ms),
        commit_interval_ms: args.commit_interval_ms,
        object_size_max_bytes: args.object_size_max,
        admin: args.admin,
        secret_file: args.secret_file,
        metrics: args.metrics,
        fsname: args.fsname,
    };
    role::run(role).await?;
    Ok(())
}
