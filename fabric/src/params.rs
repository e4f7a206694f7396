//! The fabric's views on a node's admin parameter tree, in the layout of LNet's own files:
//! `nis`, `peers`, `stats`, `routes`, `routers` and `buffers`, so `iopath lctl get_param peers` reads like `lctl`;
//! and iopath's own `congestion`: every credit gate's waits and time waited, for sampling;
//! and `trace.events`, the node's log of traced requests (see [`crate::trace`]), with
//! `trace.dropped`, the events its bound let go.
//!
//! Columns follow LNet's files exactly (see `nis` and `peers` below for each column's
//! meaning here). `routes`, `routers` and `buffers` show the routing table, gateway health and
//! router buffer pools; writing `routes` adds or deletes a route (what `iopath lnetctl route
//! add|del` does).

use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{PoisonError, Weak};

use iopath_lprocfs::{Param, ParamError, ParamTree};

use crate::gate::CreditSnapshot;
use crate::node::{Node, NodeInner};

/// Hangs `nis`, `peers` and `stats` for `node` on `tree`, under `prefix` (empty for none: one
/// node per process, as LNet has it).
pub fn register(node: &Node, tree: &ParamTree, prefix: &str) -> Result<(), ParamError> {
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
    tree.register(&name("stats"), view(stats, weak.clone()))?;
    tree.register(&name("routers"), view(routers, weak.clone()))?;
    tree.register(&name("buffers"), view(buffers, weak.clone()))?;
    tree.register(&name("congestion"), view(congestion, weak.clone()))?;
    // `routes` is a view and, written to, `lnetctl route add|del`:
    //   set_param routes="add NET GATEWAY [HOPS [PRIORITY]]"   set_param routes="del NET GATEWAY"
    let writer = weak.clone();
    let routes_param = Param::read_write(
        move || {
            weak.upgrade()
                .map(|n| routes(&n))
                .unwrap_or_else(|| "node stopped\n".into())
        },
        move |command: &str| {
            let node = writer
                .upgrade()
                .map(|inner| Node { inner })
                .ok_or("node stopped")?;
            edit_routes(&node, command).map_err(|e| e.to_string())
        },
    );
    tree.register(&name("routes"), routes_param)?;
    // `trace.events`: what the node did for traced requests, as JSON Lines; writing clears.
    let reader = std::sync::Arc::downgrade(&node.inner);
    let clearer = reader.clone();
    let trace_param = Param::read_write(
        move || {
            reader
                .upgrade()
                .map(|n| n.trace.json_lines())
                .unwrap_or_default()
        },
        move |_: &str| {
            let node = clearer.upgrade().ok_or("node stopped")?;
            node.trace.clear();
            Ok(())
        },
    );
    tree.register(&name("trace.events"), trace_param)?;
    // `trace.dropped`: events the bounded log let go; a trace that lost some is incomplete.
    let dropped = std::sync::Arc::downgrade(&node.inner);
    tree.register(
        &name("trace.dropped"),
        Param::read_only(move || {
            dropped
                .upgrade()
                .map(|n| n.trace.dropped().to_string())
                .unwrap_or_default()
        }),
    )?;
    register_faults(node, tree, &name)
}

/// `fail_loc` (arm, read and clear fail points), `fail_sites` (what each site can do),
/// `fail_injected` (faults injected so far), and `net_drop`/`net_delay` (LNet's drop and
/// delay rules; `iopath lctl net_drop_add` and friends write them). See [`crate::fail`].
fn register_faults(
    node: &Node,
    tree: &ParamTree,
    name: &dyn Fn(&str) -> String,
) -> Result<(), ParamError> {
    let fail = std::sync::Arc::clone(node.fail_points());
    let (reader, writer) = (std::sync::Arc::clone(&fail), std::sync::Arc::clone(&fail));
    tree.register(
        &name("fail_loc"),
        Param::read_write(
            move || reader.fail_loc(),
            move |value: &str| writer.set_fail_loc(value),
        ),
    )?;
    tree.register(
        &name("fail_sites"),
        Param::read_only(|| {
            crate::fail::Site::ALL
                .iter()
                .map(|site| format!("{site}: {}\n", site.actions().join(", ")))
                .collect()
        }),
    )?;
    let injected = std::sync::Arc::clone(&fail);
    tree.register(
        &name("fail_injected"),
        Param::read_only(move || injected.injected().to_string()),
    )?;
    for (leaf, kind) in [
        ("net_drop", crate::fail::NetKind::Drop),
        ("net_delay", crate::fail::NetKind::Delay),
    ] {
        let (reader, writer) = (std::sync::Arc::clone(&fail), std::sync::Arc::clone(&fail));
        tree.register(
            &name(leaf),
            Param::read_write(
                move || reader.net().list(kind),
                move |command: &str| writer.net().command(kind, command),
            ),
        )?;
    }
    Ok(())
}

/// Applies `add NET GATEWAY [HOPS [PRIORITY]]` or `del NET GATEWAY`.
pub fn edit_routes(node: &Node, command: &str) -> Result<(), crate::FabricError> {
    let command = command.trim();
    if let Some(spec) = command.strip_prefix("add ") {
        node.add_route(crate::routing::RouteSpec::parse(spec)?)
    } else if let Some(rest) = command.strip_prefix("del ") {
        let words: Vec<&str> = rest.split_whitespace().collect();
        let [net, gateway] = words[..] else {
            return Err(crate::FabricError::BadRoute {
                why: format!("{command:?}: expected del NET GATEWAY"),
            });
        };
        if node.remove_route(net.parse()?, gateway.parse()?) {
            Ok(())
        } else {
            Err(crate::FabricError::BadRoute {
                why: format!("no route to {net} via {gateway}"),
            })
        }
    } else {
        Err(crate::FabricError::BadRoute {
            why: format!(
                "{command:?}: expected add NET GATEWAY [HOPS [PRIORITY]] or del NET GATEWAY"
            ),
        })
    }
}

/// LNet's `routes` view, in its columns and order (`proc_lnet_routes`: net, hops, priority,
/// state, router).
fn routes(node: &NodeInner) -> String {
    let mut out = format!(
        "Routing {}\n{:<8} {:>4} {:>8} {:>7} {}\n",
        if node.router.is_some() {
            "enabled"
        } else {
            "disabled"
        },
        "net",
        "hops",
        "priority",
        "state",
        "router"
    );
    for (route, alive) in node
        .routes
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .routes()
    {
        let _ = writeln!(
            out,
            "{:<8} {:>4} {:>8} {:>7} {}",
            route.net.to_string(),
            route.hops,
            route.priority,
            if alive { "up" } else { "down" },
            route.gateway
        );
    }
    out
}

/// LNet's `routers` view in its order (`proc_lnet_routers`), with the columns iopath keeps:
/// `rtr_ref` (routes through the router), `alive_cnt` (times it came up), `state`,
/// `last_ping` (seconds since it last answered; `NA` if never), `down_ni` (its interfaces it
/// reported down), then the router; LNet's `ref` and `deadline` are left out (no reference
/// counts; pings time out inside the checker), its `ping_sent` flag is `pings_sent`, a
/// count, and iopath adds `downs` and `messages` before the router.
fn routers(node: &NodeInner) -> String {
    let now = node.epoch.elapsed();
    let mut out = format!(
        "{:>7} {:>9} {:>6} {:>12} {:>10} {:>7} {:>6} {:>10} {}\n",
        "rtr_ref",
        "alive_cnt",
        "state",
        "last_ping",
        "pings_sent",
        "down_ni",
        "downs",
        "messages",
        "router"
    );
    let table = node.routes.lock().unwrap_or_else(PoisonError::into_inner);
    let routes = table.routes();
    for (gateway, state) in table.gateways() {
        let last = state.last_alive.map_or_else(
            || "NA".into(),
            |t| now.saturating_sub(t).as_secs().to_string(),
        );
        // Every time it went down it had come up; up now is one more.
        let alive_count = state.downs + u64::from(state.alive);
        let _ = writeln!(
            out,
            "{:>7} {:>9} {:>6} {:>12} {:>10} {:>7} {:>6} {:>10} {}",
            routes.iter().filter(|(r, _)| r.gateway == *gateway).count(),
            alive_count,
            if state.alive { "up" } else { "down" },
            last,
            state.pings_sent,
            state.down_nets.len(),
            state.downs,
            state.messages,
            gateway
        );
    }
    out
}

fn buffers(node: &NodeInner) -> String {
    let mut out = format!(
        "{:<6} {:>8} {:>6} {:>7} {:>6} {:>5}\n",
        "class", "bytes", "count", "credits", "min", "queue"
    );
    let Some(router) = &node.router else {
        out.push_str("(not a router)\n");
        return out;
    };
    for (class, bytes, c) in router.pools() {
        let _ = writeln!(
            out,
            "{:<6} {:>8} {:>6} {:>7} {:>6} {:>5}",
            class.name(),
            bytes,
            c.credits_max,
            c.credits,
            c.credits_min,
            c.queued
        );
    }
    out
}

/// iopath's `congestion`: for every credit gate on the node — each interface's and each
/// peer's send credits (`tx`), and on a router each buffer pool and each peer's router credits
/// (`rtr`) — how many sends had to wait for a credit and for how long in all, beside the queue
/// now and the low-water mark. The counts only grow: a sampler (IORCD's) differences two
/// readings to get an interval's congestion. `forwarded` is the messages a router passed on.
fn congestion(node: &NodeInner) -> String {
    let mut out = format!(
        "{:<44} {:>10} {:>12} {:>6} {:>6}\n",
        "gate", "waits", "waited_s", "queue", "min"
    );
    let mut row = |gate: String, c: CreditSnapshot| {
        let _ = writeln!(
            out,
            "{gate:<44} {:>10} {:>12.6} {:>6} {:>6}",
            c.waits,
            c.waited.as_secs_f64(),
            c.queued,
            c.credits_min
        );
    };
    for ni in node.nis() {
        row(format!("ni {} tx", ni.nid()), ni.credits());
        for (peer, c) in ni.peers() {
            row(format!("peer {peer} tx"), c);
        }
    }
    if let Some(router) = &node.router {
        for (class, _, c) in router.pools() {
            row(format!("router buffers {}", class.name()), c);
        }
        for (peer, c) in router.peers() {
            row(format!("router peer {peer} rtr"), c);
        }
    }
    let _ = writeln!(
        out,
        "forwarded {}",
        node.counters.forwarded.load(Ordering::Relaxed)
    );
    out
}

/// LNet's `nis`: `nid status alive refs peer rtr max tx min`. `refs` counts the interface's
/// own reference and its sends in flight or queued; `peer` is the per-peer credit setting and
/// `rtr` the per-peer router buffer credits (0 on a node that does not route).
fn nis(node: &NodeInner) -> String {
    let mut out = format!(
        "{:<24} {:>6} {:>5} {:>5} {:>5} {:>5} {:>6} {:>6} {:>6}\n",
        "nid", "status", "alive", "refs", "peer", "rtr", "max", "tx", "min"
    );
    let rtr = node
        .router
        .as_ref()
        .map(|r| r.peer_buffer_credits())
        .unwrap_or(0);
    for ni in node.nis() {
        let c = ni.credits();
        let _ = writeln!(
            out,
            "{:<24} {:>6} {:>5} {:>5} {:>5} {:>5} {:>6} {:>6} {:>6}",
            ni.nid().to_string(),
            "up",
            0,
            1 + c.in_flight as usize + c.queued,
            node.limits.peer_credits,
            rtr,
            c.credits_max,
            c.credits,
            c.credits_min
        );
    }
    out
}

/// LNet's `peers`: `nid refs state last max rtr min tx min queue`. `max`/`tx`/second `min` are
/// the peer's send credits; `rtr`/first `min` its router buffer credits on a router (they go
/// negative while its messages wait for buffers), else they mirror `max`. `state` and `last`
/// (seconds since it last answered a ping) are known for gateways; others show `NA` and -1.
fn peers(node: &NodeInner) -> String {
    let mut out = format!(
        "{:<24} {:>4} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}\n",
        "nid", "refs", "state", "last", "max", "rtr", "min", "tx", "min", "queue"
    );
    let now = node.epoch.elapsed();
    let routes = node.routes.lock().unwrap_or_else(PoisonError::into_inner);
    for ni in node.nis() {
        for (peer, c) in ni.peers() {
            let rtr = node.router.as_ref().and_then(|r| r.peer_snapshot(&peer));
            let max = i64::from(c.credits_max);
            let (rtr_now, rtr_min) = rtr
                .map(|r| (r.credits, r.credits_min))
                .unwrap_or((max, max));
            let gateway = routes
                .gateways()
                .find(|(nid, _)| **nid == peer)
                .map(|(_, g)| g);
            let state = gateway
                .map(|g| if g.alive { "up" } else { "down" })
                .unwrap_or("NA");
            let last = gateway
                .and_then(|g| g.last_alive)
                .map(|t| now.saturating_sub(t).as_secs() as i64)
                .unwrap_or(-1);
            let _ = writeln!(
                out,
                "{:<24} {:>4} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5} {:>5}",
                peer.to_string(),
                1 + c.in_flight as usize + c.queued,
                state,
                last,
                c.credits_max,
                rtr_now,
                rtr_min,
                c.credits,
                c.credits_min,
                c.queued
            );
        }
    }
    out
}

/// LNet's `stats` (`send_count` … `recv_length`), then iopath's own counters. The copy
/// counters say where received bulk bytes were copied in user space: `recv_placed_bytes`
/// went straight into a pull's landing, `recv_copied_bytes` were copied by an LND (TCP's
/// read-ahead; the in-memory LND's copy into place), `bulk_copied_bytes` by the puller.
/// `sent_inline` frames were written by the task that sent them, not the connection's writer.
fn stats(node: &NodeInner) -> String {
    let (mut sends, mut recvs, mut drops, mut send_bytes, mut recv_bytes) = (0, 0, 0, 0, 0);
    let (mut placed, mut copied, mut inline) = (0, 0, 0);
    for ni in node.nis() {
        let c = &ni.counters;
        sends += c.send_count.load(Ordering::Relaxed);
        recvs += c.recv_count.load(Ordering::Relaxed);
        drops += c.drop_count.load(Ordering::Relaxed);
        send_bytes += c.send_bytes.load(Ordering::Relaxed);
        recv_bytes += c.recv_bytes.load(Ordering::Relaxed);
        let lnd = ni.lnd_counters();
        placed += lnd.placed_bytes.load(Ordering::Relaxed);
        copied += lnd.copied_bytes.load(Ordering::Relaxed);
        inline += lnd.written_inline.load(Ordering::Relaxed);
    }
    let n = &node.counters;
    format!(
        "send_count {sends}\nrecv_count {recvs}\ndrop_count {drops}\nsend_length {send_bytes}\nrecv_length {recv_bytes}\n\
         checksum_mismatches {}\nbulk_resends {}\nrpc_resends {}\nrequests_executed {}\nreplies_reconstructed {}\nrequests_busy {}\nearly_replies {}\nunexpected {}\nanswers_in_flight_peak {}\n\
         answers_dropped {}\nforwarded {}\nforwarded_bytes {}\nforwarded_inline {}\nrouter_checksum_mismatches {}\n\
         bulk_get_bytes {}\nbulk_put_bytes {}\nrecv_placed_bytes {placed}\nrecv_copied_bytes {copied}\nbulk_copied_bytes {}\nsent_inline {inline}\n",
        n.checksum_mismatches.load(Ordering::Relaxed),
        n.bulk_resends.load(Ordering::Relaxed),
        n.rpc_resends.load(Ordering::Relaxed),
        n.requests_executed.load(Ordering::Relaxed),
        n.replies_reconstructed.load(Ordering::Relaxed),
        n.requests_busy.load(Ordering::Relaxed),
        n.early_replies.load(Ordering::Relaxed),
        n.unexpected.load(Ordering::Relaxed),
        n.answers_in_flight_peak.load(Ordering::Relaxed),
        n.answers_dropped.load(Ordering::Relaxed),
        n.forwarded.load(Ordering::Relaxed),
        n.forwarded_bytes.load(Ordering::Relaxed),
        n.forwarded_inline.load(Ordering::Relaxed),
        n.router_checksum_mismatches.load(Ordering::Relaxed),
        n.bulk_get_bytes.load(Ordering::Relaxed),
        n.bulk_put_bytes.load(Ordering::Relaxed),
        n.bulk_copied_bytes.load(Ordering::Relaxed),
    )
}
