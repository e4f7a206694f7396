//! [`EmbeddedStack`]: every node of a stack in this process, on one in-memory network per
//! stack network, each with an admin service of its own on loopback (changes only with the
//! stack's admin secret) — what `iopath up` and
//! `iopath demo` run, and what every crate's integration tests build on
//! ([`crate::testing::TestStack`]): a node can be crashed and started again on its storage.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use std::collections::BTreeMap;

use iopath_admin::http::HttpHandle;
use iopath_admin::{AdminHandle, Secret, Shutdown};
use iopath_fabric::fault::FaultHook;
use iopath_fabric::{Limits, MemNetwork};

use super::fyod::FyodTuning;
use super::node::{NodeTuning, RunningNode, SharedNetworks};
use super::storage::StorageDir;
use crate::error::StackError;
use crate::schema::{RoleName, Stack};

/// The order roles start in: what others connect to comes first.
pub const START_ORDER: [RoleName; 5] = [
    RoleName::Router,
    RoleName::Oss,
    RoleName::Mds,
    RoleName::Fyod,
    RoleName::Client,
];

/// How to run an embedded stack.
#[derive(Debug, Clone, Default)]
pub struct EmbeddedOptions {
    /// Give each node an admin service on a loopback port.
    pub admin: bool,
    /// The secret the admin services ask of `set_param` and shutdown callers (`iopath up`
    /// writes one to a file first); without one, a new secret is drawn, which
    /// [`EmbeddedStack::admin_secret`] hands to this process's own callers.
    pub admin_secret: Option<Secret>,
    /// Give each node Prometheus's `/metrics` on a loopback port (as each node process
    /// serves its own with `--processes`).
    pub metrics: bool,
    /// Every node's fabric limits (RPC timeouts, credits, ...).
    pub limits: Limits,
    /// Fault hooks by node name (tests): on everything that node sends, restarts included.
    pub faults: BTreeMap<String, Arc<dyn FaultHook>>,
    /// Every fyod's bounds, if not the defaults.
    pub fyod: Option<FyodTuning>,
    /// The largest object every OSS's targets hold, if not the default.
    pub object_size_max_bytes: Option<u64>,
}

impl EmbeddedOptions {
    /// What node `name` starts with.
    fn tuning(&self, name: &str) -> NodeTuning {
        NodeTuning {
            limits: self.limits.clone(),
            fault: self.faults.get(name).cloned(),
            fyod: self.fyod.clone(),
            object_size_max_bytes: self.object_size_max_bytes,
        }
    }
}

/// How long a node's in-memory address may stay taken by its crashed self (requests still
/// executing hold the old node) before a restart gives up.
const RESTART_WAIT: Duration = Duration::from_secs(4);

/// A whole stack in this process.
#[derive(Debug)]
pub struct EmbeddedStack {
    stack: Stack,
    /// The nodes, by stack index; `None` while crashed.
    nodes: Vec<Option<RunningNode>>,
    networks: SharedNetworks,
    options: EmbeddedOptions,
    /// Each node's admin service, by stack index (when asked for).
    admins: Vec<Option<AdminHandle>>,
    /// What the admin services ask of callers that change a node (when they are asked for).
    admin_secret: Option<Secret>,
    /// Each node's `/metrics`, by stack index (when asked for). A node restarted after a
    /// crash keeps the services of its first start, which read the crashed node.
    metrics: Vec<Option<HttpHandle>>,
    shutdown: Shutdown,
    storage: StorageDir,
}

impl EmbeddedStack {
    /// Starts every node of `stack` (routers, storage servers, the metadata service, fyods,
    /// then clients), each keeping its state in `storage`; with `admin`, each serves its
    /// parameters on a loopback port of its own. A node that will not start stops the ones
    /// already started.
    pub async fn start(
        stack: Stack,
        storage: StorageDir,
        admin: bool,
    ) -> Result<EmbeddedStack, StackError> {
        let options = EmbeddedOptions {
            admin,
            ..EmbeddedOptions::default()
        };
        EmbeddedStack::start_with(stack, storage, options).await
    }

    /// [`EmbeddedStack::start`] with `options`.
    pub async fn start_with(
        stack: Stack,
        storage: StorageDir,
        options: EmbeddedOptions,
    ) -> Result<EmbeddedStack, StackError> {
        let admin = options.admin;
        let networks = SharedNetworks::embedded(&stack);
        let mut started: Vec<Option<RunningNode>> = (0..stack.nodes.len()).map(|_| None).collect();
        let mut failure = None;
        'roles: for kind in START_ORDER {
            for index in stack.nodes_of(kind) {
                let dir = storage.node(&stack.nodes[index].name);
                let tuning = options.tuning(&stack.nodes[index].name);
                match RunningNode::start_tuned(&stack, index, &networks, &dir, &tuning).await {
                    Ok(node) => started[index] = Some(node),
                    Err(e) => {
                        failure = Some(e);
                        break 'roles;
                    }
                }
            }
        }
        if let Some(error) = failure {
            let _ = stop_all(started.into_iter().flatten().collect()).await;
            return Err(error);
        }
        let nodes: Vec<RunningNode> = started.into_iter().flatten().collect();
        assert_eq!(nodes.len(), stack.nodes.len(), "every node started");
        let shutdown = Shutdown::new();
        let admin_secret = match (&options.admin_secret, admin) {
            (_, false) => None,
            (Some(secret), true) => Some(secret.clone()),
            (None, true) => match Secret::generate() {
                Ok(secret) => Some(secret),
                Err(e) => {
                    let _ = stop_all(nodes).await;
                    return Err(StackError::io("make the stack's admin secret", e));
                }
            },
        };
        let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
        let mut admins = Vec::new();
        let mut metrics = Vec::new();
        for node in &nodes {
            let failed = |what: &str, e: iopath_admin::AdminError| StackError::Start {
                node: node.name.clone(),
                role: node.role.as_str(),
                why: format!("start its {what}: {e}"),
            };
            if let Some(secret) = &admin_secret {
                match iopath_admin::serve(
                    loopback,
                    node.tree.clone(),
                    node.info(),
                    shutdown.clone(),
                    secret.clone(),
                )
                .await
                {
                    Ok(handle) => admins.push(Some(handle)),
                    Err(e) => {
                        failure = Some(failed("admin service", e));
                        break;
                    }
                }
            } else {
                admins.push(None);
            }
            if options.metrics {
                let registry = Arc::new(node.metrics_registry());
                match iopath_admin::metrics::serve(loopback, registry, shutdown.clone()).await {
                    Ok(handle) => metrics.push(Some(handle)),
                    Err(e) => {
                        failure = Some(failed("/metrics", e));
                        break;
                    }
                }
            } else {
                metrics.push(None);
            }
        }
        if let Some(error) = failure {
            shutdown.trigger("a node's admin service or /metrics failed to start");
            let _ = stop_all(nodes).await;
            return Err(error);
        }
        Ok(EmbeddedStack {
            stack,
            nodes: nodes.into_iter().map(Some).collect(),
            networks,
            options,
            admins,
            admin_secret,
            metrics,
            shutdown,
            storage,
        })
    }

    /// The stack.
    pub fn stack(&self) -> &Stack {
        &self.stack
    }

    /// The running nodes, in stack order (a crashed node is not running).
    pub fn nodes(&self) -> Vec<&RunningNode> {
        self.nodes.iter().flatten().collect()
    }

    /// Node `index`, if it is running.
    pub fn node(&self, index: usize) -> Option<&RunningNode> {
        self.nodes.get(index).and_then(Option::as_ref)
    }

    /// The in-memory network of stack network `index`.
    pub fn network(&self, index: usize) -> Option<&Arc<MemNetwork>> {
        self.networks.mem(index)
    }

    /// The modeled torus of stack network `index`, if it is crossed hop by hop.
    pub fn torus(&self, index: usize) -> Option<&iopath_fabric::torus::TorusNetwork> {
        self.networks.torus(index)
    }

    /// The fabric limits every node runs with.
    pub fn limits(&self) -> &Limits {
        &self.options.limits
    }

    /// Crashes node `index`: a storage server's targets stop without committing anything
    /// more (to its disk this is a crash), and the node leaves its networks. What its clients
    /// were told is acknowledged and not committed survives only in their memory.
    pub fn crash_node(&mut self, index: usize) -> Result<(), StackError> {
        let node = self
            .nodes
            .get_mut(index)
            .and_then(Option::take)
            .ok_or_else(|| StackError::Process {
                node: self
                    .stack
                    .nodes
                    .get(index)
                    .map_or_else(|| index.to_string(), |n| n.name.clone()),
                why: "it is not running".into(),
            })?;
        node.crash();
        Ok(())
    }

    /// Starts node `index` again on its addresses and its storage after
    /// [`EmbeddedStack::crash_node`]: a storage server recovers its journals and opens a
    /// recovery window for the clients it knew.
    pub async fn restart_node(&mut self, index: usize) -> Result<(), StackError> {
        let name = self.stack.nodes[index].name.clone();
        if self.nodes[index].is_some() {
            return Err(StackError::Process {
                node: name,
                why: "it is running".into(),
            });
        }
        let dir = self.storage.node(&name);
        // The in-memory network frees the address once every handle to the crashed node is
        // gone (requests it was executing hold one): try again, for a bounded time.
        let deadline = tokio::time::Instant::now() + RESTART_WAIT;
        let node = loop {
            let tuning = self.options.tuning(&name);
            match RunningNode::start_tuned(&self.stack, index, &self.networks, &dir, &tuning).await
            {
                Ok(node) => break node,
                Err(error) if tokio::time::Instant::now() < deadline => {
                    tracing::debug!(%error, "restart: the address is not free yet");
                    tokio::time::sleep(Duration::from_millis(20)).await;
                }
                Err(error) => return Err(error),
            }
        };
        self.nodes[index] = Some(node);
        Ok(())
    }

    /// Node `index`'s admin address, if it serves one.
    pub fn admin_addr(&self, index: usize) -> Option<SocketAddr> {
        self.admins
            .get(index)
            .and_then(Option::as_ref)
            .map(AdminHandle::local_addr)
    }

    /// The secret the nodes' admin services ask of `set_param` and shutdown callers, if they
    /// serve any.
    pub fn admin_secret(&self) -> Option<&Secret> {
        self.admin_secret.as_ref()
    }

    /// Node `index`'s `/metrics` address, if it serves one.
    pub fn metrics_addr(&self, index: usize) -> Option<SocketAddr> {
        self.metrics
            .get(index)
            .and_then(Option::as_ref)
            .map(HttpHandle::local_addr)
    }

    /// Where the nodes keep their state.
    pub fn storage(&self) -> &StorageDir {
        &self.storage
    }

    /// Stops every node (clients first, storage servers last) and the admin services.
    pub async fn stop(self) -> Result<(), StackError> {
        self.shutdown.trigger("the stack is stopping");
        for handle in self.admins.into_iter().flatten() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), handle.join()).await;
        }
        for handle in self.metrics.into_iter().flatten() {
            let _ = tokio::time::timeout(std::time::Duration::from_secs(5), handle.join()).await;
        }
        let result = stop_all(self.nodes.into_iter().flatten().collect()).await;
        drop(self.storage);
        result
    }
}

/// Stops `nodes` in the reverse of the start order; the first error is returned after all
/// have been asked to stop.
pub(crate) async fn stop_all(nodes: Vec<RunningNode>) -> Result<(), StackError> {
    let mut by_kind: Vec<Vec<RunningNode>> = START_ORDER.iter().map(|_| Vec::new()).collect();
    for node in nodes {
        let slot = START_ORDER
            .iter()
            .position(|&k| k == node.role)
            .expect("every role has a start position");
        by_kind[slot].push(node);
    }
    let mut first_error = None;
    for group in by_kind.into_iter().rev() {
        for node in group {
            if let Err(e) = node.stop().await {
                tracing::warn!("{e}");
                first_error.get_or_insert(e);
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}
