//! Router health, as LNet's router checker: every `router_ping_interval` a node pings each
//! gateway in its routing table; a gateway that has not answered for `router_dead_timeout` is
//! marked down and traffic moves to the next routes; it is marked alive again when it answers.
//! (A send that fails through a gateway marks it down at once: see `NodeInner::send`.)

use std::sync::Weak;
use std::sync::atomic::Ordering;

use bytes::Bytes;
use tracing::{info, warn};

use crate::frame::PING_PORTAL;
use crate::node::{Node, NodeInner};
use crate::rpc::CallOptions;

/// Runs until the node is shut down or dropped.
pub(crate) async fn run(node: Weak<NodeInner>) {
    let Some(interval) = node.upgrade().map(|n| n.limits.router_ping_interval) else {
        return;
    };
    let mut ticker = tokio::time::interval(interval);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        ticker.tick().await;
        let Some(inner) = node.upgrade() else { return };
        if inner.stopped.load(Ordering::Relaxed) {
            return;
        }
        let gateways: Vec<_> = {
            let now = inner.epoch.elapsed();
            let mut routes = inner.routes.lock().expect("routes lock poisoned");
            let list: Vec<_> = routes.gateways().map(|(nid, _)| *nid).collect();
            for gateway in &list {
                routes.ping_sent(*gateway, now);
            }
            list
        };
        // Each ping on a task of its own: one dead gateway must not delay the others' pings.
        for gateway in gateways {
            let handle = Node {
                inner: std::sync::Arc::clone(&inner),
            };
            let options = CallOptions {
                timeout: Some(interval),
                resends_max: Some(0),
            };
            tokio::spawn(async move {
                if handle
                    .call_with(gateway, PING_PORTAL, 0, Bytes::new(), options)
                    .await
                    .is_ok()
                {
                    let now = handle.inner.epoch.elapsed();
                    let back = handle
                        .inner
                        .routes
                        .lock()
                        .expect("routes lock poisoned")
                        .ping_answered(gateway, now);
                    if back {
                        info!(%gateway, "router answers again: marked alive");
                    }
                }
            });
        }
        let dead = {
            let now = inner.epoch.elapsed();
            let mut routes = inner.routes.lock().expect("routes lock poisoned");
            routes.expire(now, inner.limits.router_dead_timeout)
        };
        for gateway in dead {
            warn!(%gateway, timeout = ?inner.limits.router_dead_timeout, "router silent: marked down");
        }
    }
}
