//! `iopath oss`: one object storage server as a process of its own.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use iopath_admin::{NodeInfo, ParamTree};
use iopath_fabric::{Interface, Nid, Node, NodeConfig};
use tracing::info;

use super::{OssService, ServiceConfig};
use crate::engine::EngineConfig;
use crate::error::StorageError;
use crate::ost::{OssConfig, OstConfig};

/// How to run one OSS process.
#[derive(Debug, Clone)]
pub struct OssRole {
    /// Where its targets live (`dir/ost<index>`), with its client list.
    pub dir: PathBuf,
    /// Its NID; a TCP NID with port 0 picks a free port.
    pub nid: Nid,
    /// Number of targets.
    pub targets: u32,
    /// Sync journal commits (reply after commit) instead of async.
    pub sync_journal: bool,
    /// How long known clients have to replay after an unclean restart.
    pub recovery_window: Duration,
    /// Journal group commit interval (async mode).
    pub commit_interval_ms: u64,
    /// Largest object.
    pub object_size_max_bytes: u64,
    /// The admin service's address.
    pub admin: std::net::SocketAddr,
    /// The file holding the admin secret `set_param` and shutdown callers must send; without
    /// one, the OSS writes a secret of its own to `dir/admin.secret` (mode 0600) and says so
    /// on standard error.
    pub secret_file: Option<PathBuf>,
    /// Where to serve `/metrics` (the Prometheus text format), if anywhere.
    pub metrics: Option<std::net::SocketAddr>,
    /// The file system its targets belong to (their names: `iopath-OST0000`, ...).
    pub fsname: iopath_layout::FsName,
}

/// Errors of the OSS process, with what was being done.
#[derive(Debug, thiserror::Error)]
pub enum RoleError {
    /// The targets would not open (corrupt journal, bad directory, ...).
    #[error("open the targets in {dir}: {source}")]
    Storage {
        /// Where.
        dir: PathBuf,
        /// Why.
        source: StorageError,
    },
    /// The network interface would not start.
    #[error("start the network interface {nid}: {source}")]
    Fabric {
        /// Which.
        nid: Nid,
        /// Why.
        source: iopath_fabric::FabricError,
    },
    /// The admin service would not start, or its secret could not be read or made.
    #[error("start the admin service: {0}")]
    Admin(#[from] iopath_admin::AdminError),
}

/// Runs the OSS until its standard input closes, SIGTERM, or an admin shutdown; then stops
/// cleanly (every target committed, the clean-shutdown marker left). Killed instead, it
/// recovers at the next start.
pub async fn run(role: OssRole) -> Result<(), RoleError> {
    let storage = |source| RoleError::Storage {
        dir: role.dir.clone(),
        source,
    };
    std::fs::create_dir_all(&role.dir).map_err(|source| {
        storage(StorageError::Io {
            op: "create",
            path: role.dir.clone(),
            source,
        })
    })?;
    let (secret, own) = iopath_admin::secret::for_node(role.secret_file.as_deref(), &role.dir)?;
    if let Some(own) = own {
        // Standard output is for the READY line.
        eprintln!(
            "admin secret: {} (no --secret-file given: set_param and shutdown need this one)",
            own.display()
        );
    }
    let mut template = OstConfig::new(0, &role.dir);
    template.sync_journal = role.sync_journal;
    template.commit_interval_ms = role.commit_interval_ms;
    template.object_size_max_bytes = role.object_size_max_bytes;
    let targets = OssConfig {
        root: role.dir.clone(),
        targets: OssConfig::indices(role.targets),
        template,
        engine: EngineConfig::default(),
        disk_model: None,
        external_journal_dir: None,
        fsname: role.fsname.clone(),
    };
    let interface = match role.nid.socket_addr() {
        Some(_) => Interface::Tcp { nid: role.nid },
        None => {
            return Err(RoleError::Fabric {
                nid: role.nid,
                source: iopath_fabric::FabricError::BadNid {
                    text: role.nid.to_string(),
                    why: "an OSS process needs a TCP NID".into(),
                },
            });
        }
    };
    let node = Node::start(NodeConfig {
        interfaces: vec![interface],
        ..NodeConfig::default()
    })
    .await
    .map_err(|source| RoleError::Fabric {
        nid: role.nid,
        source,
    })?;
    let service_config = ServiceConfig {
        recovery_window: role.recovery_window,
        ..ServiceConfig::default()
    };
    let service = OssService::open(&node, targets, service_config)
        .await
        .map_err(storage)?;
    let oss = Arc::clone(service.oss());
    for target in oss.targets() {
        let report = target.recovery();
        info!(
            target = target.index(),
            last_committed = target.last_committed().0,
            ?report,
            "target opened"
        );
    }
    let tree = ParamTree::new();
    iopath_fabric::params::register(&node, &tree, "").map_err(iopath_admin::AdminError::from)?;
    super::params::register(&oss, &tree)?;
    let info = NodeInfo::new(vec![node.nid().to_string()], vec!["oss".into()]);
    let metrics = role.metrics.map(|addr| {
        let mut registry = prometheus_client::registry::Registry::default();
        registry.register_collector(Box::new(iopath_fabric::metrics::FabricCollector::new(
            &node,
        )));
        registry.register_collector(Box::new(super::metrics::OssCollector::new(&service)));
        (addr, Arc::new(registry))
    });
    let reason =
        iopath_admin::process::serve_until_stopped(role.admin, tree, info, secret, metrics, true)
            .await?;
    info!(nid = %node.nid(), "OSS stopping: {reason}");
    node.shutdown();
    service.shutdown().await.map_err(storage)?;
    Ok(())
}
