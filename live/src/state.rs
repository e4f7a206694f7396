//! The page's state: each node's latest [`Reading`] and the rates between it and the one
//! before, as the page asks for it (`/state.json`).

use serde::Serialize;

use crate::reading::{NiReading, PeerGate, PoolReading, Reading, TargetReading};

/// Bytes in the page's megabyte (decimal, as the papers' MB/s).
pub const MB: f64 = 1e6;

/// The whole stack at one moment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct State {
    /// Samples taken so far, this one included.
    pub seq: u64,
    /// When it was taken, milliseconds since the view started.
    pub at_ms: u64,
    /// Every node, in the view's order.
    pub nodes: Vec<NodeState>,
    /// Set on the last sample of a run: what ended it (`the benchmark finished`). The page
    /// keeps this state on screen and says so.
    pub ended: Option<String>,
}

/// One node at one moment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NodeState {
    /// Its name.
    pub name: String,
    /// Whether its counters were read this time.
    pub read: bool,
    /// Why not, when they were not.
    pub error: Option<String>,
    /// Its interfaces: what each link from the node carries.
    pub nis: Vec<NiState>,
    /// Payload bytes sent, every interface, since the node started.
    pub sent_bytes: u64,
    /// Payload bytes received, every interface, since the node started.
    pub received_bytes: u64,
    /// Sent since the last sample, MB/s.
    pub sent_mb_s: f64,
    /// Received since the last sample, MB/s.
    pub received_mb_s: f64,
    /// The peer with the fewest send credits now (the most queued), if any.
    pub peer_lowest: Option<PeerGate>,
    /// Sends queued for a peer credit, every peer.
    pub peer_queue: u64,
    /// The lowest peer credit count ever seen, any peer (LNet's `min`: below 0, sends
    /// queued at some moment, whether or not a sample caught it).
    pub peer_min: Option<i64>,
    /// A router's buffer pools.
    pub pools: Vec<PoolReading>,
    /// A router: the peer with the fewest router buffer credits now.
    pub router_peer_lowest: Option<PeerGate>,
    /// Messages a router forwarded since it started.
    pub forwarded: u64,
    /// ... and per second since the last sample.
    pub forwarded_per_s: f64,
    /// A storage server's targets.
    pub targets: Vec<TargetState>,
    /// A storage server's time left in its recovery window, seconds (0 when not recovering).
    pub recovery_remaining_s: Option<f64>,
    /// Writes its OST clients keep for replay (acknowledged, uncommitted).
    pub uncommitted: Option<u64>,
    /// RPCs its OST clients have in flight.
    pub rpcs_in_flight: Option<u64>,
}

/// One interface: the node's link to one network.
#[derive(Debug, Clone, Default, Serialize)]
pub struct NiState {
    /// Its counters and credits, as read.
    #[serde(flatten)]
    pub reading: NiReading,
    /// Sent since the last sample, MB/s.
    pub sent_mb_s: f64,
    /// Received since the last sample, MB/s.
    pub received_mb_s: f64,
}

/// One storage target.
#[derive(Debug, Clone, Default, Serialize)]
pub struct TargetState {
    /// Its counters, as read.
    #[serde(flatten)]
    pub reading: TargetReading,
    /// Journal commits per second since the last sample.
    pub commits_per_s: f64,
    /// Written since the last sample, MB/s.
    pub write_mb_s: f64,
    /// Read since the last sample, MB/s.
    pub read_mb_s: f64,
}

impl NodeState {
    /// Node `name` not read this time, for `why`.
    pub fn unread(name: &str, why: Option<String>) -> NodeState {
        NodeState {
            name: name.to_owned(),
            error: why,
            ..NodeState::default()
        }
    }

    /// Node `name` as `now` reads, with rates from `before`, read `seconds` earlier (no rates
    /// without it). A counter that went back (the node restarted) gives a rate of 0.
    pub fn of(name: &str, now: &Reading, before: Option<(&Reading, f64)>) -> NodeState {
        let rate = |now: u64, then: Option<u64>, per: f64| -> f64 {
            match (then, before) {
                (Some(then), Some((_, seconds))) if seconds > 0.0 && now >= then => {
                    (now - then) as f64 / seconds / per
                }
                _ => 0.0,
            }
        };
        let earlier = before.map(|(r, _)| r);
        let nis: Vec<NiState> = now
            .nis
            .iter()
            .map(|ni| {
                let then = earlier.and_then(|r| r.nis.iter().find(|n| n.nid == ni.nid));
                NiState {
                    sent_mb_s: rate(ni.sent_bytes, then.map(|t| t.sent_bytes), MB),
                    received_mb_s: rate(ni.received_bytes, then.map(|t| t.received_bytes), MB),
                    reading: ni.clone(),
                }
            })
            .collect();
        let targets = now
            .targets
            .iter()
            .map(|t| {
                let then = earlier.and_then(|r| r.targets.iter().find(|o| o.name == t.name));
                TargetState {
                    commits_per_s: rate(t.commits, then.map(|o| o.commits), 1.0),
                    write_mb_s: rate(t.write_bytes, then.map(|o| o.write_bytes), MB),
                    read_mb_s: rate(t.read_bytes, then.map(|o| o.read_bytes), MB),
                    reading: t.clone(),
                }
            })
            .collect();
        let lowest = |gates: &[PeerGate]| gates.iter().min_by_key(|p| p.gate.credits).cloned();
        NodeState {
            name: name.to_owned(),
            read: true,
            error: None,
            sent_bytes: now.nis.iter().map(|n| n.sent_bytes).sum(),
            received_bytes: now.nis.iter().map(|n| n.received_bytes).sum(),
            sent_mb_s: nis.iter().map(|n| n.sent_mb_s).sum(),
            received_mb_s: nis.iter().map(|n| n.received_mb_s).sum(),
            nis,
            peer_lowest: lowest(&now.peers),
            peer_queue: now.peers.iter().map(|p| p.gate.queue).sum(),
            peer_min: now.peers.iter().map(|p| p.gate.min).min(),
            pools: now.pools.clone(),
            router_peer_lowest: lowest(&now.router_peers),
            forwarded: now.forwarded,
            forwarded_per_s: rate(now.forwarded, earlier.map(|r| r.forwarded), 1.0),
            targets,
            recovery_remaining_s: now.recovery_remaining_s,
            uncommitted: now.uncommitted,
            rpcs_in_flight: now.rpcs_in_flight,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reading(sent: u64, commits: u64) -> Reading {
        Reading {
            nis: vec![NiReading {
                nid: "10@mem1".into(),
                sent_bytes: sent,
                ..NiReading::default()
            }],
            targets: vec![TargetReading {
                name: "iopath-OST0000".into(),
                commits,
                ..TargetReading::default()
            }],
            ..Reading::default()
        }
    }

    #[test]
    fn rates_are_the_difference_over_the_time_between_readings() {
        let before = reading(1_000_000, 10);
        let now = reading(5_000_000, 14);
        let state = NodeState::of("oss0", &now, Some((&before, 2.0)));
        assert_eq!(state.sent_bytes, 5_000_000);
        assert!((state.sent_mb_s - 2.0).abs() < 1e-9, "{}", state.sent_mb_s);
        assert!((state.targets[0].commits_per_s - 2.0).abs() < 1e-9);
    }

    #[test]
    fn a_first_reading_or_a_restarted_node_has_no_rate() {
        let first = NodeState::of("oss0", &reading(5, 1), None);
        assert_eq!(first.sent_mb_s, 0.0);
        let restarted = NodeState::of("oss0", &reading(5, 1), Some((&reading(9, 4), 1.0)));
        assert_eq!(
            (restarted.sent_mb_s, restarted.targets[0].commits_per_s),
            (0.0, 0.0)
        );
    }
}
