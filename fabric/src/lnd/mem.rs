//! The in-memory LND: every node of a network lives in one process and delivery is a call.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use crate::error::FabricError;
use crate::frame::Message;
use crate::lnd::{Admit, Deliver, Grant, Lnd, SendTicket};
use crate::nid::Nid;

/// One in-memory network: the table of nodes attached to it.
#[derive(Default)]
pub struct MemNetwork {
    nodes: Mutex<HashMap<Nid, Weak<dyn Deliver>>>,
}

impl std::fmt::Debug for MemNetwork {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let count = self.nodes.lock().map(|n| n.len()).unwrap_or(0);
        f.debug_struct("MemNetwork").field("nodes", &count).finish()
    }
}

impl MemNetwork {
    /// A network with no nodes.
    pub fn new() -> Arc<MemNetwork> {
        Arc::new(MemNetwork::default())
    }

    /// Attaches a node at `nid`. Fails if another live node already holds it.
    pub(crate) fn attach(
        self: &Arc<Self>,
        nid: Nid,
        node: Weak<dyn Deliver>,
    ) -> Result<MemLnd, FabricError> {
        let mut nodes = self.nodes.lock().expect("mem network lock poisoned");
        if nodes.get(&nid).is_some_and(|n| n.strong_count() > 0) {
            return Err(FabricError::BadNid {
                text: nid.to_string(),
                why: "already attached to this in-memory network".into(),
            });
        }
        nodes.insert(nid, node);
        Ok(MemLnd {
            nid,
            network: Arc::clone(self),
        })
    }

    fn lookup(&self, nid: &Nid) -> Option<Arc<dyn Deliver>> {
        self.nodes
            .lock()
            .expect("mem network lock poisoned")
            .get(nid)
            .and_then(Weak::upgrade)
    }
}

/// A node's interface on a [`MemNetwork`].
#[derive(Debug)]
pub struct MemLnd {
    nid: Nid,
    network: Arc<MemNetwork>,
}

impl Lnd for MemLnd {
    fn send(&self, next_hop: Nid, message: Message, ticket: SendTicket) {
        let target = next_hop;
        match self.network.lookup(&target) {
            Some(node) => match node.admit(&message.header) {
                Admit::Now(grant) => {
                    node.deliver(message, grant);
                    ticket.complete();
                }
                // The receiver (a router) is out of buffers: the message stays "on the wire",
                // holding the sender's credits, until it gets one.
                Admit::Wait(granted) => {
                    tokio::spawn(async move {
                        let grant = granted.await;
                        node.deliver(message, grant);
                        ticket.complete();
                    });
                }
                Admit::Refuse(_) => {
                    node.deliver(message, Grant::default());
                    ticket.complete();
                }
            },
            None => ticket.fail(FabricError::Unreachable {
                peer: target,
                why: "no such node on this in-memory network".into(),
            }),
        }
    }

    fn shutdown(&self) {
        let mut nodes = self
            .network
            .nodes
            .lock()
            .expect("mem network lock poisoned");
        nodes.remove(&self.nid);
    }
}
