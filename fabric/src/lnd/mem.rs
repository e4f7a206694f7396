//! The in-memory LND: every node of a network lives in one process and delivery is a call.
//!
//! A payload is handed over as the sender's `Bytes`, shared, not copied — unless the receiver
//! names a place for it (a chunk of a pull's landing): a place is memory of its own, so the
//! payload is copied into it, once. That is the one copy a multi-chunk pull costs here, where
//! over TCP the kernel's receive puts the bytes in place.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;

use crate::error::FabricError;
use crate::frame::Message;
use crate::lnd::{Admit, Deliver, Grant, Lnd, LndCounters, SendTicket};
use crate::nid::Nid;

/// One in-memory network: the table of nodes attached to it.
#[derive(Default)]
pub struct MemNetwork {
    nodes: Mutex<HashMap<Nid, Attached>>,
}

/// A node attached to a network: where its messages go, and its interface's counters (the
/// sender's call does the receiving here, so it counts on the receiver's behalf).
struct Attached {
    node: Weak<dyn Deliver>,
    counters: Arc<LndCounters>,
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
        let mut nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        if nodes.get(&nid).is_some_and(|n| n.node.strong_count() > 0) {
            return Err(FabricError::BadNid {
                text: nid.to_string(),
                why: "already attached to this in-memory network".into(),
            });
        }
        let counters = Arc::new(LndCounters::default());
        let attached = Attached {
            node,
            counters: Arc::clone(&counters),
        };
        nodes.insert(nid, attached);
        Ok(MemLnd {
            nid,
            network: Arc::clone(self),
            counters,
        })
    }

    fn lookup(&self, nid: &Nid) -> Option<(Arc<dyn Deliver>, Arc<LndCounters>)> {
        let nodes = self.nodes.lock().unwrap_or_else(PoisonError::into_inner);
        let attached = nodes.get(nid)?;
        Some((attached.node.upgrade()?, Arc::clone(&attached.counters)))
    }
}

/// A node's interface on a [`MemNetwork`].
#[derive(Debug)]
pub struct MemLnd {
    nid: Nid,
    network: Arc<MemNetwork>,
    /// Counted by the senders' calls that deliver to this interface.
    counters: Arc<LndCounters>,
}

/// Copies the payload into the grant's place, leaving the message's payload empty. A place
/// of another length (which the node never lends) is given back and the payload kept.
fn put_in_place(counters: &LndCounters, message: &mut Message, grant: &mut Grant) {
    let Some(mut place) = grant.place.take() else {
        return;
    };
    if place.len() != message.payload.len() {
        return;
    }
    place.as_mut_slice().copy_from_slice(&message.payload);
    let len = message.payload.len() as u64;
    counters.copied_bytes.fetch_add(len, Ordering::Relaxed);
    counters.placed_bytes.fetch_add(len, Ordering::Relaxed);
    message.payload = Bytes::new();
    grant.place = Some(place);
}

impl Lnd for MemLnd {
    fn send(&self, next_hop: Nid, mut message: Message, ticket: SendTicket) {
        let target = next_hop;
        match self.network.lookup(&target) {
            Some((node, counters)) => match node.admit(&message.header) {
                Admit::Now(mut grant) => {
                    put_in_place(&counters, &mut message, &mut grant);
                    node.deliver(target, message, grant);
                    ticket.complete();
                }
                // The receiver (a router) is out of buffers: the message stays "on the wire",
                // holding the sender's credits, until it gets one.
                Admit::Wait(granted) => {
                    tokio::spawn(async move {
                        // A router's wait: its grant never names a place.
                        let grant = granted.await;
                        node.deliver(target, message, grant);
                        ticket.complete();
                    });
                }
                Admit::Refuse(_) => {
                    node.deliver(target, message, Grant::default());
                    ticket.complete();
                }
            },
            None => ticket.fail(FabricError::Unreachable {
                peer: target,
                why: "no such node on this in-memory network".into(),
            }),
        }
    }

    fn counters(&self) -> &LndCounters {
        &self.counters
    }

    fn shutdown(&self) {
        let mut nodes = self
            .network
            .nodes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        nodes.remove(&self.nid);
    }
}
