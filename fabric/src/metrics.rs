//! The fabric's families on a node's `/metrics`: every credit gate (each interface's and
//! each peer's send credits; on a router each buffer pool and each peer's router credits)
//! with its maximum, credits now, low-water mark, queue and waits; the interfaces' message
//! and byte counters; bulk bytes, checksum errors and resends; and what the node's services
//! executed, by operation, with a latency histogram.
//!
//! A [`FabricCollector`] reads the same snapshots the `nis`, `peers`, `buffers`,
//! `congestion` and `stats` views print, when a scrape comes: nothing on the send path
//! changes for it. It holds the node weakly, so a stopped node's families simply vanish.

use std::sync::Weak;
use std::sync::atomic::Ordering;

use iopath_lprocfs::families::{Labels, counters, gauges, histograms};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use crate::gate::CreditSnapshot;
use crate::node::{Node, NodeInner};

/// The fabric's collector for one node.
#[derive(Debug)]
pub struct FabricCollector {
    node: Weak<NodeInner>,
}

impl FabricCollector {
    /// A collector reading `node`.
    pub fn new(node: &Node) -> FabricCollector {
        FabricCollector {
            node: std::sync::Arc::downgrade(&node.inner),
        }
    }
}

/// One gate, with its labels.
type Gate = (Labels, CreditSnapshot);

/// Writes the families of a set of credit gates: `{prefix}_credits_max`, `_credits`,
/// `_credits_min`, `_queue_depth`, `_credit_waits_total`, `_credit_wait_seconds_total`.
fn gate_families(
    encoder: &mut DescriptorEncoder,
    prefix: &str,
    what: &str,
    gates: &[Gate],
) -> Result<(), std::fmt::Error> {
    let each =
        |f: fn(&CreditSnapshot) -> f64| gates.iter().map(move |(labels, c)| (labels.clone(), f(c)));
    gauges(
        encoder,
        &format!("{prefix}_credits_max"),
        &format!("Configured credits of {what}."),
        each(|c| f64::from(c.credits_max)),
    )?;
    gauges(
        encoder,
        &format!("{prefix}_credits"),
        &format!("Free credits of {what} now; negative by the number of sends queued."),
        each(|c| c.credits as f64),
    )?;
    gauges(
        encoder,
        &format!("{prefix}_credits_min"),
        &format!("Lowest credits of {what} ever seen (LNet's min)."),
        each(|c| c.credits_min as f64),
    )?;
    gauges(
        encoder,
        &format!("{prefix}_queue_depth"),
        &format!("Sends waiting for a credit of {what} now."),
        each(|c| c.queued as f64),
    )?;
    counters(
        encoder,
        &format!("{prefix}_credit_waits"),
        &format!("Sends that had to queue for a credit of {what}."),
        gates.iter().map(|(labels, c)| (labels.clone(), c.waits)),
    )?;
    counters(
        encoder,
        &format!("{prefix}_credit_wait_seconds"),
        &format!("Time sends spent queued for a credit of {what}, summed."),
        each(|c| c.waited.as_secs_f64()),
    )
}

impl Collector for FabricCollector {
    /// Long (231 lines) on purpose: one family after another, each a few lines over what the
    /// node's views already hold; the order is the order of `/metrics` (docs/metrics.md).
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(node) = self.node.upgrade() else {
            return Ok(());
        };
        let nid = |nid: &crate::Nid| vec![("nid", nid.to_string())];

        // Interfaces: their send credits and traffic.
        let nis: Vec<Gate> = node
            .nis()
            .iter()
            .map(|ni| (nid(&ni.nid()), ni.credits()))
            .collect();
        gate_families(&mut encoder, "iopath_ni", "the interface", &nis)?;
        gauges(
            &mut encoder,
            "iopath_ni_sends_in_flight",
            "Sends holding one of the interface's credits now.",
            node.nis()
                .iter()
                .map(|ni| (nid(&ni.nid()), f64::from(ni.credits().in_flight))),
        )?;
        let ni_counter = |encoder: &mut DescriptorEncoder,
                          name: &str,
                          help: &str,
                          read: fn(&crate::ni::NiCounters) -> u64| {
            counters(
                encoder,
                name,
                help,
                node.nis()
                    .iter()
                    .map(|ni| (nid(&ni.nid()), read(&ni.counters))),
            )
        };
        ni_counter(
            &mut encoder,
            "iopath_ni_sent_messages",
            "Messages handed to the LND.",
            |c| c.send_count.load(Ordering::Relaxed),
        )?;
        ni_counter(
            &mut encoder,
            "iopath_ni_sent_bytes",
            "Payload bytes handed to the LND.",
            |c| c.send_bytes.load(Ordering::Relaxed),
        )?;
        ni_counter(
            &mut encoder,
            "iopath_ni_received_messages",
            "Messages received.",
            |c| c.recv_count.load(Ordering::Relaxed),
        )?;
        ni_counter(
            &mut encoder,
            "iopath_ni_received_bytes",
            "Payload bytes received.",
            |c| c.recv_bytes.load(Ordering::Relaxed),
        )?;
        ni_counter(
            &mut encoder,
            "iopath_ni_dropped_messages",
            "Messages dropped: by the fault hook, or on arrival with nothing waiting for them.",
            |c| c.drop_count.load(Ordering::Relaxed),
        )?;

        // Peers: the send credits this node holds toward each.
        let peers: Vec<Gate> = node
            .nis()
            .iter()
            .flat_map(|ni| {
                let local = ni.nid().to_string();
                ni.peers().into_iter().map(move |(peer, c)| {
                    (vec![("nid", local.clone()), ("peer", peer.to_string())], c)
                })
            })
            .collect();
        gate_families(&mut encoder, "iopath_peer", "the peer", &peers)?;

        // A router: its buffer pools and its peers' router credits.
        if let Some(router) = &node.router {
            let class = |c: crate::router::BufferClass| c.name().to_owned();
            let pools = router.pools();
            let gates: Vec<Gate> = pools
                .iter()
                .map(|(c, _, snapshot)| (vec![("class", class(*c))], *snapshot))
                .collect();
            gate_families(
                &mut encoder,
                "iopath_router_buffers",
                "the router buffer pool",
                &gates,
            )?;
            gauges(
                &mut encoder,
                "iopath_router_buffer_size_bytes",
                "Bytes of one buffer of the pool.",
                pools
                    .iter()
                    .map(|(c, bytes, _)| (vec![("class", class(*c))], f64::from(*bytes))),
            )?;
            let peers: Vec<Gate> = router
                .peers()
                .into_iter()
                .map(|(peer, c)| (vec![("peer", peer.to_string())], c))
                .collect();
            gate_families(
                &mut encoder,
                "iopath_router_peer",
                "the peer's router buffers",
                &peers,
            )?;
        }
        let n = &node.counters;
        let single = |value: u64| [(Labels::new(), value)];
        counters(
            &mut encoder,
            "iopath_router_forwarded_messages",
            "Messages this node passed on as a router.",
            single(n.forwarded.load(Ordering::Relaxed)),
        )?;
        counters(
            &mut encoder,
            "iopath_router_forwarded_bytes",
            "Payload bytes of the messages this node passed on as a router.",
            single(n.forwarded_bytes.load(Ordering::Relaxed)),
        )?;
        counters(
            &mut encoder,
            "iopath_router_forwarded_inline_messages",
            "Of the messages this node passed on as a router, those handed on by the task that read them (small, credits free).",
            single(n.forwarded_inline.load(Ordering::Relaxed)),
        )?;

        // Bulk.
        counters(
            &mut encoder,
            "iopath_bulk_bytes",
            "Bulk bytes moved by this node: pulled (get) or pushed (put).",
            [
                (
                    vec![("direction", "get".to_owned())],
                    n.bulk_get_bytes.load(Ordering::Relaxed),
                ),
                (
                    vec![("direction", "put".to_owned())],
                    n.bulk_put_bytes.load(Ordering::Relaxed),
                ),
            ],
        )?;
        counters(
            &mut encoder,
            "iopath_bulk_checksum_errors",
            "Bulk chunks or whole pulls whose checksum did not match on arrival.",
            single(n.checksum_mismatches.load(Ordering::Relaxed)),
        )?;
        counters(
            &mut encoder,
            "iopath_bulk_resends",
            "Bulk chunks or whole pulls asked for again (checksum mismatch, timeout, BUSY).",
            single(n.bulk_resends.load(Ordering::Relaxed)),
        )?;
        counters(
            &mut encoder,
            "iopath_router_checksum_errors",
            "Forwarded bulk chunks whose checksum did not match their bytes.",
            single(n.router_checksum_mismatches.load(Ordering::Relaxed)),
        )?;

        // RPC: this node as a client, then what its services executed.
        counters(
            &mut encoder,
            "iopath_rpc_resends",
            "RPCs this node sent again after a timeout or a failed send.",
            single(n.rpc_resends.load(Ordering::Relaxed)),
        )?;
        gauges(
            &mut encoder,
            "iopath_rpcs_pending",
            "RPCs this node sent that wait for their reply now.",
            [(
                Labels::new(),
                node.pending.lock().map_or(0, |p| p.len()) as f64,
            )],
        )?;
        counters(
            &mut encoder,
            "iopath_rpc_requests_busy",
            "Requests answered BUSY: the node was at its limit of executing requests.",
            single(n.requests_busy.load(Ordering::Relaxed)),
        )?;
        counters(
            &mut encoder,
            "iopath_rpc_early_replies",
            "Early replies sent: resends of requests still executing, answered \"in progress\" \
             so their clients wait on.",
            single(n.early_replies.load(Ordering::Relaxed)),
        )?;
        counters(
            &mut encoder,
            "iopath_rpc_replies_reconstructed",
            "Resent requests answered from the saved reply, without executing again.",
            single(n.replies_reconstructed.load(Ordering::Relaxed)),
        )?;
        let ops = node.rpc_stats.snapshot();
        let op_labels = |op: &crate::rpc_stats::OpSnapshot| {
            vec![("portal", op.portal.to_string()), ("op", op.name.clone())]
        };
        counters(
            &mut encoder,
            "iopath_rpc_requests",
            "Requests the node's services executed, by portal and operation.",
            ops.iter().map(|op| (op_labels(op), op.requests)),
        )?;
        counters(
            &mut encoder,
            "iopath_rpc_errors",
            "Executed requests answered with an error, by portal and operation.",
            ops.iter().map(|op| (op_labels(op), op.errors)),
        )?;
        counters(
            &mut encoder,
            "iopath_rpc_request_bytes",
            "Request body bytes of executed requests (bulk data moves apart, by descriptor).",
            ops.iter().map(|op| (op_labels(op), op.request_bytes)),
        )?;
        counters(
            &mut encoder,
            "iopath_rpc_reply_bytes",
            "Reply body bytes of executed requests.",
            ops.iter().map(|op| (op_labels(op), op.reply_bytes)),
        )?;
        histograms(
            &mut encoder,
            "iopath_rpc_duration_seconds",
            "Time from a request's admission to its reply, by portal and operation.",
            ops.iter().map(|op| (op_labels(op), op.latency.clone())),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Interface, MemNetwork, NodeConfig};
    use prometheus_client::registry::Registry;

    #[tokio::test]
    async fn an_idle_node_shows_its_interface_credits_and_a_stopped_one_nothing() {
        let network = MemNetwork::new();
        let node = Node::start(NodeConfig {
            interfaces: vec![Interface::Mem {
                nid: "7@mem0".parse().unwrap(),
                network,
            }],
            ..NodeConfig::default()
        })
        .await
        .unwrap();
        let mut registry = Registry::default();
        registry.register_collector(Box::new(FabricCollector::new(&node)));
        let text = iopath_lprocfs::scrape::render(&registry).unwrap();
        let max = node.limits().ni_credits;
        for line in [
            format!("iopath_ni_credits_max{{nid=\"7@mem0\"}} {max}.0"),
            format!("iopath_ni_credits{{nid=\"7@mem0\"}} {max}.0"),
            "iopath_ni_credit_waits_total{nid=\"7@mem0\"} 0".to_owned(),
            "iopath_bulk_bytes_total{direction=\"get\"} 0".to_owned(),
            "iopath_rpcs_pending 0.0".to_owned(),
            "# TYPE iopath_rpc_duration_seconds histogram".to_owned(),
        ] {
            assert!(text.contains(&line), "{line} missing from\n{text}");
        }
        assert!(
            !text.contains("iopath_router_buffers"),
            "not a router:\n{text}"
        );
        node.shutdown();
        drop(node);
        let text = iopath_lprocfs::scrape::render(&registry).unwrap();
        assert!(!text.contains("iopath_ni_credits"), "{text}");
    }
}
