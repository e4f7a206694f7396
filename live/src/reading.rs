//! One node's counters from one Prometheus text: [`Reading::parse`] keeps what the page
//! draws and drops the rest (RPC histograms, per-operation tallies).

use std::collections::{BTreeMap, HashMap};

use prometheus_parse::{Sample, Scrape, Value};
use serde::Serialize;

/// A credit gate as `/metrics` gives it (`<prefix>_credits`, `_max`, `_min`, `_queue_depth`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Serialize)]
pub struct Gate {
    /// Free credits now; negative by the sends queued.
    pub credits: i64,
    /// Configured credits.
    pub max: i64,
    /// Lowest ever seen.
    pub min: i64,
    /// Sends waiting now.
    pub queue: u64,
}

/// One interface.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct NiReading {
    /// Its NID.
    pub nid: String,
    /// Payload bytes sent since the node started.
    pub sent_bytes: u64,
    /// Payload bytes received since the node started.
    pub received_bytes: u64,
    /// Its send credits.
    pub gate: Gate,
}

/// A gate toward one peer (send credits, or a router's buffers for it).
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PeerGate {
    /// The local interface (empty for a router's per-peer buffer credits).
    pub nid: String,
    /// The peer.
    pub peer: String,
    /// The gate.
    pub gate: Gate,
}

/// A router's buffer pool.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct PoolReading {
    /// `tiny`, `small` or `large`.
    pub class: String,
    /// Its buffers as credits.
    pub gate: Gate,
}

/// One storage target.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct TargetReading {
    /// Its name (`iopath-OST0002`).
    pub name: String,
    /// Highest committed transno.
    pub last_committed: u64,
    /// Journal commits since the server started.
    pub commits: u64,
    /// Bytes written to it since the server started.
    pub write_bytes: u64,
    /// Bytes read from it since the server started.
    pub read_bytes: u64,
    /// Still waiting for its clients' replays.
    pub recovering: bool,
    /// Commits synchronously.
    pub sync: bool,
}

/// What the page draws of one node, at one moment.
#[derive(Debug, Clone, Default, PartialEq, Serialize)]
pub struct Reading {
    /// Its interfaces, by NID.
    pub nis: Vec<NiReading>,
    /// Its send credits toward each peer.
    pub peers: Vec<PeerGate>,
    /// A router's buffer pools.
    pub pools: Vec<PoolReading>,
    /// A router's buffer credits per peer.
    pub router_peers: Vec<PeerGate>,
    /// Messages a router forwarded since it started.
    pub forwarded: u64,
    /// A storage server's targets.
    pub targets: Vec<TargetReading>,
    /// A storage server's time left in its recovery window, seconds.
    pub recovery_remaining_s: Option<f64>,
    /// Writes kept for replay by the node's OST clients (acknowledged, not yet committed),
    /// summed over targets; `None` on a node without OST clients of its own.
    pub uncommitted: Option<u64>,
    /// Read and write RPCs the node's OST clients have in flight.
    pub rpcs_in_flight: Option<u64>,
}

impl Reading {
    /// The reading in the Prometheus text `text`.
    pub fn parse(text: &str) -> Result<Reading, String> {
        let scrape = Scrape::parse(text.lines().map(|l| Ok(l.to_owned())))
            .map_err(|e| format!("unreadable Prometheus text: {e}"))?;
        Ok(Reading::of(&scrape))
    }

    /// The reading in a parsed scrape.
    pub fn of(scrape: &Scrape) -> Reading {
        let families = Families::of(scrape);
        let sent = families.index("iopath_ni_sent_bytes_total", &["nid"]);
        let received = families.index("iopath_ni_received_bytes_total", &["nid"]);
        let nis = families
            .gates("iopath_ni", &["nid"])
            .into_iter()
            .map(|(mut labels, gate)| {
                let nid = labels.pop().unwrap_or_default();
                let bytes = |values: &HashMap<Vec<&str>, f64>| {
                    values.get(&vec![nid.as_str()]).copied().unwrap_or(0.0) as u64
                };
                NiReading {
                    sent_bytes: bytes(&sent),
                    received_bytes: bytes(&received),
                    nid,
                    gate,
                }
            })
            .collect();
        let peers = families
            .gates("iopath_peer", &["nid", "peer"])
            .into_iter()
            .map(|(mut labels, gate)| PeerGate {
                peer: labels.pop().unwrap_or_default(),
                nid: labels.pop().unwrap_or_default(),
                gate,
            })
            .collect();
        let pools = families
            .gates("iopath_router_buffers", &["class"])
            .into_iter()
            .map(|(mut labels, gate)| PoolReading {
                class: labels.pop().unwrap_or_default(),
                gate,
            })
            .collect();
        let router_peers = families
            .gates("iopath_router_peer", &["peer"])
            .into_iter()
            .map(|(mut labels, gate)| PeerGate {
                nid: String::new(),
                peer: labels.pop().unwrap_or_default(),
                gate,
            })
            .collect();
        let targets = families
            .label_values("iopath_ost_last_committed_transno", "target")
            .into_iter()
            .map(|name| {
                let with = [("target", name.as_str())];
                let io = |op: &str| {
                    families.sum(
                        "iopath_ost_io_bytes_total",
                        &[("target", &name), ("op", op)],
                    ) as u64
                };
                TargetReading {
                    last_committed: families.sum("iopath_ost_last_committed_transno", &with) as u64,
                    commits: families.sum("iopath_journal_commits_total", &with) as u64,
                    write_bytes: io("write"),
                    read_bytes: io("read"),
                    recovering: families.sum("iopath_ost_recovering", &with) > 0.0,
                    sync: families.sum("iopath_ost_sync_journal", &with) > 0.0,
                    name,
                }
            })
            .collect();
        let present = |family: &str| families.by_name.contains_key(family);
        Reading {
            nis,
            peers,
            pools,
            router_peers,
            forwarded: families.sum("iopath_router_forwarded_messages_total", &[]) as u64,
            targets,
            recovery_remaining_s: present("iopath_oss_recovery_remaining_seconds")
                .then(|| families.sum("iopath_oss_recovery_remaining_seconds", &[])),
            uncommitted: present("iopath_osc_uncommitted_writes")
                .then(|| families.sum("iopath_osc_uncommitted_writes", &[]) as u64),
            rpcs_in_flight: present("iopath_osc_rpcs_in_flight")
                .then(|| families.sum("iopath_osc_rpcs_in_flight", &[]) as u64),
        }
    }
}

/// A scrape's numeric samples by metric name. A router has a gate per peer: each family is
/// indexed by its label values once ([`Families::index`]), so reading every gate is linear in
/// the scrape, not quadratic.
struct Families<'a> {
    by_name: BTreeMap<&'a str, Vec<&'a Sample>>,
}

impl<'a> Families<'a> {
    fn of(scrape: &'a Scrape) -> Families<'a> {
        let mut by_name: BTreeMap<&str, Vec<&Sample>> = BTreeMap::new();
        for sample in &scrape.samples {
            by_name.entry(&sample.metric).or_default().push(sample);
        }
        Families { by_name }
    }

    fn samples(&self, metric: &str) -> &[&'a Sample] {
        self.by_name.get(metric).map(Vec::as_slice).unwrap_or(&[])
    }

    /// The sum of `metric` over the samples whose labels include every pair of `with`.
    fn sum(&self, metric: &str, with: &[(&str, &str)]) -> f64 {
        self.samples(metric)
            .iter()
            .filter(|s| with.iter().all(|(k, v)| s.labels.get(k) == Some(*v)))
            .map(|s| number(s))
            .sum()
    }

    /// `metric`'s values by the values of `labels` (in that order).
    fn index(&self, metric: &str, labels: &[&str]) -> HashMap<Vec<&'a str>, f64> {
        self.samples(metric)
            .iter()
            .map(|s| (key(s, labels), number(s)))
            .collect()
    }

    /// The values label `label` takes in `metric`, in the order first seen.
    fn label_values(&self, metric: &str, label: &str) -> Vec<String> {
        let mut values: Vec<String> = Vec::new();
        for sample in self.samples(metric) {
            if let Some(value) = sample.labels.get(label)
                && !values.iter().any(|v| v == value)
            {
                values.push(value.to_owned());
            }
        }
        values
    }

    /// Every gate of family `prefix`, identified by the values of `labels`, in the order of
    /// `<prefix>_credits_max`.
    fn gates(&self, prefix: &str, labels: &[&str]) -> Vec<(Vec<String>, Gate)> {
        let family = |suffix: &str| self.index(&format!("{prefix}_{suffix}"), labels);
        let (credits, min, queue) = (
            family("credits"),
            family("credits_min"),
            family("queue_depth"),
        );
        self.samples(&format!("{prefix}_credits_max"))
            .iter()
            .map(|sample| {
                let key = key(sample, labels);
                let of =
                    |values: &HashMap<Vec<&str>, f64>| values.get(&key).copied().unwrap_or(0.0);
                let gate = Gate {
                    credits: of(&credits) as i64,
                    max: number(sample) as i64,
                    min: of(&min) as i64,
                    queue: of(&queue) as u64,
                };
                (key.into_iter().map(str::to_owned).collect(), gate)
            })
            .collect()
    }
}

/// The values of `labels` on `sample`, in that order (empty where absent).
fn key<'a>(sample: &'a Sample, labels: &[&str]) -> Vec<&'a str> {
    labels
        .iter()
        .map(|l| sample.labels.get(l).unwrap_or_default())
        .collect()
}

fn number(sample: &Sample) -> f64 {
    match &sample.value {
        Value::Counter(v) | Value::Gauge(v) | Value::Untyped(v) => *v,
        Value::Histogram(_) | Value::Summary(_) => 0.0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTER: &str = "\
# TYPE iopath_ni_credits_max gauge
iopath_ni_credits_max{nid=\"50@mem0\"} 256.0
iopath_ni_credits_max{nid=\"50@mem1\"} 256.0
iopath_ni_credits{nid=\"50@mem0\"} -3.0
iopath_ni_credits{nid=\"50@mem1\"} 250.0
iopath_ni_credits_min{nid=\"50@mem0\"} -7.0
iopath_ni_credits_min{nid=\"50@mem1\"} 240.0
iopath_ni_queue_depth{nid=\"50@mem0\"} 3.0
iopath_ni_queue_depth{nid=\"50@mem1\"} 0.0
# TYPE iopath_ni_sent_bytes counter
iopath_ni_sent_bytes_total{nid=\"50@mem0\"} 1048576
iopath_ni_sent_bytes_total{nid=\"50@mem1\"} 2097152
# TYPE iopath_ni_received_bytes counter
iopath_ni_received_bytes_total{nid=\"50@mem0\"} 2097152
iopath_ni_received_bytes_total{nid=\"50@mem1\"} 1048576
# TYPE iopath_peer_credits_max gauge
iopath_peer_credits_max{nid=\"50@mem0\",peer=\"100@mem0\"} 8.0
iopath_peer_credits{nid=\"50@mem0\",peer=\"100@mem0\"} -2.0
iopath_peer_credits_min{nid=\"50@mem0\",peer=\"100@mem0\"} -4.0
iopath_peer_queue_depth{nid=\"50@mem0\",peer=\"100@mem0\"} 2.0
# TYPE iopath_router_buffers_credits_max gauge
iopath_router_buffers_credits_max{class=\"large\"} 64.0
iopath_router_buffers_credits{class=\"large\"} 0.0
iopath_router_buffers_credits_min{class=\"large\"} -5.0
iopath_router_buffers_queue_depth{class=\"large\"} 0.0
# TYPE iopath_router_forwarded_messages counter
iopath_router_forwarded_messages_total 42
";

    #[test]
    fn a_router_reads_as_its_interfaces_peers_and_pools() {
        let reading = Reading::parse(ROUTER).unwrap();
        assert_eq!(reading.nis.len(), 2);
        let first = &reading.nis[0];
        assert_eq!(
            (first.nid.as_str(), first.sent_bytes, first.received_bytes),
            ("50@mem0", 1 << 20, 2 << 20)
        );
        assert_eq!(
            first.gate,
            Gate {
                credits: -3,
                max: 256,
                min: -7,
                queue: 3
            }
        );
        assert_eq!(reading.peers[0].peer, "100@mem0");
        assert_eq!(reading.peers[0].nid, "50@mem0");
        assert_eq!(reading.peers[0].gate.credits, -2);
        assert_eq!(reading.pools[0].class, "large");
        assert_eq!(reading.pools[0].gate.min, -5);
        assert_eq!(reading.forwarded, 42);
        assert!(reading.targets.is_empty());
        assert_eq!(reading.uncommitted, None, "no osc families: not a client");
    }

    #[test]
    fn a_storage_server_reads_as_its_targets() {
        let text = "\
iopath_ost_last_committed_transno{target=\"iopath-OST0000\"} 17.0
iopath_ost_last_committed_transno{target=\"iopath-OST0002\"} 9.0
iopath_journal_commits_total{target=\"iopath-OST0000\"} 5
iopath_ost_recovering{target=\"iopath-OST0002\"} 1.0
iopath_ost_sync_journal{target=\"iopath-OST0000\"} 1.0
iopath_ost_io_bytes_total{target=\"iopath-OST0000\",op=\"write\"} 4096
iopath_oss_recovery_remaining_seconds 12.5
";
        let reading = Reading::parse(text).unwrap();
        let names: Vec<&str> = reading.targets.iter().map(|t| t.name.as_str()).collect();
        assert_eq!(names, ["iopath-OST0000", "iopath-OST0002"]);
        let first = &reading.targets[0];
        assert_eq!((first.last_committed, first.commits), (17, 5));
        assert_eq!((first.sync, first.recovering), (true, false));
        assert_eq!(first.write_bytes, 4096);
        assert!(reading.targets[1].recovering);
        assert_eq!(reading.recovery_remaining_s, Some(12.5));
    }
}
