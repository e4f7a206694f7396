//! [`EmbeddedStack`]: every node of a stack in this process, on one in-memory network per
//! stack network, each with an admin service of its own on loopback.

use std::net::SocketAddr;
use std::sync::Arc;

use iopath_admin::{AdminHandle, Shutdown};
use iopath_fabric::MemNetwork;

use super::node::RunningNode;
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

/// A whole stack in this process.
#[derive(Debug)]
pub struct EmbeddedStack {
    stack: Stack,
    /// The nodes, by stack index.
    nodes: Vec<RunningNode>,
    /// Each node's admin service, by stack index (when asked for).
    admins: Vec<Option<AdminHandle>>,
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
        let networks: Vec<Arc<MemNetwork>> =
            stack.networks.iter().map(|_| MemNetwork::new()).collect();
        let mut started: Vec<Option<RunningNode>> = (0..stack.nodes.len()).map(|_| None).collect();
        let mut failure = None;
        'roles: for kind in START_ORDER {
            for index in stack.nodes_of(kind) {
                let dir = storage.node(&stack.nodes[index].name);
                match RunningNode::start(&stack, index, &networks, &dir).await {
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
        let mut admins = Vec::new();
        for node in &nodes {
            if !admin {
                admins.push(None);
                continue;
            }
            let loopback: SocketAddr = ([127, 0, 0, 1], 0).into();
            match iopath_admin::serve(loopback, node.tree.clone(), node.info(), shutdown.clone())
                .await
            {
                Ok(handle) => admins.push(Some(handle)),
                Err(e) => {
                    failure = Some(StackError::Start {
                        node: node.name.clone(),
                        role: node.role.as_str(),
                        why: format!("start its admin service: {e}"),
                    });
                    break;
                }
            }
        }
        if let Some(error) = failure {
            shutdown.trigger("a node's admin service failed to start");
            let _ = stop_all(nodes).await;
            return Err(error);
        }
        Ok(EmbeddedStack {
            stack,
            nodes,
            admins,
            shutdown,
            storage,
        })
    }

    /// The stack.
    pub fn stack(&self) -> &Stack {
        &self.stack
    }

    /// The running nodes, by stack index.
    pub fn nodes(&self) -> &[RunningNode] {
        &self.nodes
    }

    /// Node `index`'s admin address, if it serves one.
    pub fn admin_addr(&self, index: usize) -> Option<SocketAddr> {
        self.admins
            .get(index)
            .and_then(Option::as_ref)
            .map(AdminHandle::local_addr)
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
        let result = stop_all(self.nodes).await;
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
