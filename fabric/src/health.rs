//! Router health, as LNet's router checker: every `router_ping_interval` a node pings each
//! gateway in its routing table; a gateway that has not answered for `router_dead_timeout` is
//! marked down and traffic moves to the next routes; it is marked alive again when it answers.
//! (A send that fails through a gateway marks it down at once: see `NodeInner::send`.) A
//! router's answer also names the networks it has lost (its interface there is down): routes
//! to those through it are set aside while it still answers — LNet's
//! `avoid_asym_router_failure`.
//!
//! The checker sits below the node it checks for: it sees the node only through [`Checked`]
//! (its routing table, its clock, and LNet's ping), so the node can start it without the two
//! importing each other.

use std::future::Future;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use tracing::{info, warn};

use crate::nid::{NetId, Nid};
use crate::routing::RouteTable;

/// What the router checker needs from the node whose gateways it checks.
pub(crate) trait Checked: Send + Sync + 'static {
    /// The node's own NID, which its log lines carry: in a job log many nodes share, a line
    /// says which node marked a router down.
    fn nid(&self) -> Nid;

    /// The routing table whose gateways are pinged and marked up or down.
    fn routes(&self) -> &Mutex<RouteTable>;

    /// Time since the node started: the routing table's clock.
    fn elapsed(&self) -> Duration;

    /// True once the node has been shut down; the checker then ends.
    fn stopped(&self) -> bool;

    /// Pings `gateway` once; `Some` if it answered within `timeout`, with the networks it
    /// reports it cannot reach.
    fn ping(
        self: Arc<Self>,
        gateway: Nid,
        timeout: Duration,
    ) -> impl Future<Output = Option<Vec<NetId>>> + Send;
}

/// Pings every gateway each `interval` and marks silent ones down after `dead_timeout`.
/// Runs until the node is shut down or dropped.
pub(crate) async fn run<N: Checked>(node: Weak<N>, interval: Duration, dead_timeout: Duration) {
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Some(inner) = node.upgrade() else { return };
        if inner.stopped() {
            return;
        }
        let gateways: Vec<_> = {
            let now = inner.elapsed();
            let mut routes = inner
                .routes()
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let list: Vec<_> = routes.gateways().map(|(nid, _)| *nid).collect();
            for gateway in &list {
                routes.ping_sent(*gateway, now);
            }
            list
        };
        // Each ping on a task of its own: one dead gateway must not delay the others' pings.
        for gateway in gateways {
            let node = Arc::clone(&inner);
            tokio::spawn(async move {
                if let Some(down) = Arc::clone(&node).ping(gateway, interval).await {
                    let now = node.elapsed();
                    let (back, (lost, regained)) = {
                        let mut routes =
                            node.routes().lock().unwrap_or_else(PoisonError::into_inner);
                        let back = routes.ping_answered(gateway, now);
                        (back, routes.set_down_nets(gateway, down))
                    };
                    let me = node.nid();
                    if back {
                        info!(node = %me, %gateway, "router answers again: marked alive");
                    }
                    for net in lost {
                        warn!(node = %me, %gateway, %net, "router reports it cannot reach {net}: routes to it through this router are not used");
                    }
                    for net in regained {
                        info!(node = %me, %gateway, %net, "router reaches {net} again");
                    }
                }
            });
        }
        let dead = {
            let now = inner.elapsed();
            let mut routes = inner
                .routes()
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            routes.expire(now, dead_timeout)
        };
        for gateway in dead {
            warn!(node = %inner.nid(), %gateway, timeout = ?dead_timeout, "router silent: marked down");
        }
    }
}
