//! The fyod role: an [`iopath_forwarder::FyodService`] on the node, configured from the stack
//! — its metadata service, PFS or UFS, the clients it serves, and the MUNIX token home every
//! fyod of the stack shares (the first fyod in the file).

use std::sync::Arc;

use iopath_admin::{Param, ParamTree};
use iopath_fabric::Node;
use iopath_forwarder::{FileSystem, FyodConfig, FyodLimits, FyodService};

use crate::schema::{FyodMode, FyodSpec, Role, RoleName, Stack};

/// A fyod's settings beyond its stack file's.
#[derive(Debug, Clone)]
pub struct FyodTuning {
    /// Its bounds.
    pub limits: FyodLimits,
    /// The most compute nodes it serves.
    pub clients_per_fyod: u32,
}

/// A running fyod.
#[derive(Debug)]
pub struct FyodRunning {
    service: Arc<FyodService>,
}

impl FyodRunning {
    /// The service, for its counters.
    pub fn service(&self) -> &Arc<FyodService> {
        &self.service
    }

    /// Stops it: the fabric node is already down, so no call is in progress or can arrive;
    /// what its clients wrote is theirs to fsync (and replay) as ever.
    pub async fn stop(self) {
        drop(self.service);
    }
}

/// Starts the fyod of node `index` (it has no storage of its own), with `tuning`'s bounds if
/// given.
pub async fn start(
    stack: &Stack,
    index: usize,
    node: &Node,
    tree: &ParamTree,
    spec: FyodSpec,
    tuning: Option<&FyodTuning>,
) -> Result<FyodRunning, String> {
    let mode = match spec.mode {
        FyodMode::Pfs => FileSystem::Pfs,
        FyodMode::Ufs => FileSystem::Ufs,
    };
    let mut config = FyodConfig::new(stack.primary_nid(stack.mds()), mode);
    let served = stack
        .nodes_of(RoleName::Client)
        .into_iter()
        .filter(|&c| matches!(stack.nodes[c].role, Role::Client(s) if s.forwarder == Some(index)))
        .count() as u32;
    config.clients_per_fyod = config.clients_per_fyod.max(served);
    if let Some(tuning) = tuning {
        config.limits = tuning.limits.clone();
        config.clients_per_fyod = tuning.clients_per_fyod.max(served);
    }
    config.service_node = stack.fyod_service(index);
    // MUNIX tokens for a file must come from one place: the first fyod of the stack.
    let home = stack.nodes_of(RoleName::Fyod)[0];
    config.token_home = Some(stack.primary_nid(home));
    // The fyod reaches the storage servers for its compute nodes, a client of theirs as a
    // Lustre client is: it has osc files of its own.
    let osc = super::client_osc_stats(stack, index, tree)
        .map_err(|e| format!("register its osc parameters: {e}"))?;
    config.osc_stats = Some(osc);
    let service = FyodService::start(node, config)
        .await
        .map_err(|e| format!("start the fyod service: {e}"))?;
    let weak = Arc::downgrade(&service);
    tree.register(
        "fyod.stats",
        Param::read_only(move || weak.upgrade().map(|s| s.stats().text()).unwrap_or_default()),
    )
    .map_err(|e| format!("register its parameters: {e}"))?;
    if stack.fyod_service(index).is_some() {
        let weak = Arc::downgrade(&service);
        tree.register(
            "fyod.service_node",
            Param::read_only(move || {
                weak.upgrade()
                    .map(|s| {
                        let n = s.service_node_stats();
                        format!(
                            "calls {}\npaged_calls {}\ncpu_seconds {:.6}\n",
                            n.calls,
                            n.paged_calls,
                            n.cpu_micros as f64 / 1e6
                        )
                    })
                    .unwrap_or_default()
            }),
        )
        .map_err(|e| format!("register its parameters: {e}"))?;
    }
    Ok(FyodRunning { service })
}
