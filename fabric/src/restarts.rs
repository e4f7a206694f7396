//! Peer restarts: a node pings each peer it was told to watch (the metadata service its
//! client library calls, the fyod a compute node calls) every second, as ptlrpc's pinger pings
//! every import. A ping's reply names the answering node's incarnation (its start); when a
//! peer answers with another incarnation than before, it restarted, and every call still
//! waiting on it is sent again at once ([`Node::resend_calls_to`]) — not after its RPC timeout,
//! since the peer that would have answered is gone. The peer's reply cache, or its log of
//! changes, answers a copy it already ran; a fyod answers a call on a handle it no longer has
//! with EBADF, at once.
//!
//! Storage servers are not watched this way: an OST connection's own pinger reconnects, and
//! replays what the restarted server had not committed (the OST client's `ping`).
//!
//! Bounded: one task per watched peer, and a node watches the few peers its code names (a
//! client its metadata service and its fyod), not peers a message names. Each task ends when
//! the node shuts down or is dropped.

use std::sync::{Arc, PoisonError, Weak};
use std::time::Duration;

use tokio::sync::watch;
use tracing::{debug, info};

use crate::nid::Nid;
use crate::node::{Node, NodeInner};

/// How often a watched peer is pinged: as often as an OST connection's pinger, well inside
/// every RPC timeout.
pub const WATCH_INTERVAL: Duration = Duration::from_secs(1);

impl Node {
    /// Watches `peer` for restarts from now on (a second call for the same peer watches
    /// nothing more): every [`WATCH_INTERVAL`] a ping; when the peer answers as another start
    /// than before, the calls waiting on it are sent again at once. The receiver counts the
    /// restarts seen, for a caller that has more to do when one happens.
    pub fn watch_restarts(&self, peer: Nid) -> watch::Receiver<u64> {
        let inner = &self.inner;
        let mut watches = inner
            .restart_watches
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(seen) = watches.get(&peer) {
            return seen.clone();
        }
        let (restarts, seen) = watch::channel(0);
        // Outside a runtime (a value made before one runs) nothing is watched.
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            debug!(%peer, "no runtime: the peer is not watched for restarts");
            return seen;
        };
        watches.insert(peer, seen.clone());
        runtime.spawn(watch(Arc::downgrade(inner), peer, restarts));
        seen
    }
}

/// The watch of one peer, until the node stops.
async fn watch(node: Weak<NodeInner>, peer: Nid, restarts: watch::Sender<u64>) {
    let mut known: Option<u64> = None;
    // The first ping at once: a restart is told from the start known before it.
    let mut first = true;
    loop {
        if !std::mem::take(&mut first) {
            tokio::time::sleep(WATCH_INTERVAL).await;
        }
        let Some(inner) = node.upgrade() else { return };
        if inner.stopped.load(std::sync::atomic::Ordering::Relaxed) {
            return;
        }
        // Not answered (down, restarting, lost): the next ping tries again.
        let Some(incarnation) = inner
            .send_ping(peer, WATCH_INTERVAL)
            .await
            .and_then(|reply| reply.incarnation)
        else {
            debug!(%peer, "a watched peer did not answer its ping");
            continue;
        };
        if known.is_some_and(|known| known != incarnation) {
            let handle = Node {
                inner: Arc::clone(&inner),
            };
            let resent = handle.resend_calls_to(peer);
            info!(%peer, resent, "the peer restarted: calls waiting on it sent again");
            restarts.send_modify(|count| *count += 1);
        }
        known = Some(incarnation);
    }
}
