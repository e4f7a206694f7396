//! The fabric's views on a node's admin parameter tree, in the layout of LNet's own files:
//! `nis`, `peers` and `stats`, so `iopath lctl get_param peers` reads like `lctl`.
//!
//! Columns of `nis`: `max` is the interface's credits, `tx` its free credits now (negative by
//! the number of queued sends), `min` the lowest `tx` has been. Columns of `peers`: the same for
//! each peer's credits, with `queue` the sends waiting. `rtr` columns (router buffer credits)
//! show the peer credits until routers arrive with their own buffers.

use std::fmt::Write as _;
use std::sync::Weak;
use std::sync::atomic::Ordering;

use iopath_admin::{AdminError, Param, ParamTree};

use crate::node::{Node, NodeInner};

/// Hangs `nis`, `peers` and `stats` for `node` on `tree`, under `prefix` (empty for none: one
/// node per process, as LNet has it).
pub fn register(node: &Node, tree: &ParamTree, prefix: &str) -> Result<(), AdminError> {
    let name = |leaf: &str| {
        if prefix.is_empty() {
            leaf.to_owned()
        } else {
            format!("{prefix}.{leaf}")
        }
    };
    let weak = std::sync::Arc::downgrade(&node.inner);
    let view = |render: fn(&NodeInner) -> String, weak: Weak<NodeInner>| {
        Param::read_only(move || {
            weak.upgrade()
                .map(|n| render(&n))
                .unwrap_or_else(|| "node stopped\n".into())
        })
    };
    tree.register(&name("nis"), view(nis, weak.clone()))?;
    tree.register(&name("peers"), view(peers, weak.clone()))?;
    tree.register(&name("stats"), view(stats, weak))?;
    Ok(())
}

fn nis(node: &NodeInner) -> String {
    let mut out = format!(
        "{:<24} {:>6} {:>5} {:>5} {:>5} {:>5} {:>5}\n",
        "nid", "status", "peer", "max", "tx", "min", "queue"
    );
    for ni in node.nis() {
        let c = ni.credits();
        let _ = writeln!(
            out,
            "{:<24} {:>6} {:>5} {:>5} {:>5} {:>5} {:>5}",
            ni.nid().to_string(),
            "up",
            node.limits.peer_credits,
            c.credits_max,
            c.credits,
            c.credits_min,
            c.queued
        );
    }
    out
}

fn peers(node: &NodeInner) -> String {
    let mut out = format!(
        "{:<24} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}\n",
        "nid", "state", "max", "rtr", "min", "tx", "min queue"
    );
    for ni in node.nis() {
        for (peer, c) in ni.peers() {
            let _ = writeln!(
                out,
                "{:<24} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {}",
                peer.to_string(),
                "up",
                c.credits_max,
                c.credits_max,
                c.credits_max,
                c.credits,
                c.credits_min,
                c.queued
            );
        }
    }
    out
}

fn stats(node: &NodeInner) -> String {
    let (mut sends, mut recvs, mut drops, mut send_bytes, mut recv_bytes) = (0, 0, 0, 0, 0);
    for ni in node.nis() {
        let c = &ni.counters;
        sends += c.send_count.load(Ordering::Relaxed);
        recvs += c.recv_count.load(Ordering::Relaxed);
        drops += c.drop_count.load(Ordering::Relaxed);
        send_bytes += c.send_bytes.load(Ordering::Relaxed);
        recv_bytes += c.recv_bytes.load(Ordering::Relaxed);
    }
    let n = &node.counters;
    format!(
        "send_count {sends}\nrecv_count {recvs}\ndrop_count {drops}\nsend_length {send_bytes}\nrecv_length {recv_bytes}\n\
         checksum_mismatches {}\nrpc_resends {}\nrequests_executed {}\nreplies_reconstructed {}\nrequests_busy {}\nunexpected {}\nanswers_in_flight_peak {}\n",
        n.checksum_mismatches.load(Ordering::Relaxed),
        n.rpc_resends.load(Ordering::Relaxed),
        n.requests_executed.load(Ordering::Relaxed),
        n.replies_reconstructed.load(Ordering::Relaxed),
        n.requests_busy.load(Ordering::Relaxed),
        n.unexpected.load(Ordering::Relaxed),
        n.answers_in_flight_peak.load(Ordering::Relaxed),
    )
}
