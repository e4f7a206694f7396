//! IORCD, the I/O Router Congestion Daemon of OLCF's Titan (paper 002), on an iopath node:
//! every interval it reads the node's credit gates and counters, and keeps, per network the
//! node is on, what happened since the last reading — as JSON Lines with host, router, epoch
//! and direction, readable and settable through the admin tree (`iorcd.samples`,
//! `iorcd.interval_ms`).
//!
//! Congestion is counted where senders wait: **egress** onto a network is the time messages
//! spent queued for send credits on that network (the interface's and its peers') and, on a
//! modeled link, for the wire itself, the paper's OUTQ; **ingress** from a network is the time messages arriving from it spent queued for the
//! router's per-peer router credits, the paper's INQ; the router's buffer pools, shared by all
//! networks, are a record of their own (`network` `*`, ingress). Beside them: the bytes and
//! messages the node sent onto the network in the interval, and the credit views the paper
//! reads (`max`, `tx`, `min`, and `rtr` / its `min` for the network's peers).
//!
//! [`Reading`] and [`samples`] are the pure part: a reading of cumulative counts, and the
//! differences of two readings as records; [`Sampler`] is the task that takes readings.

use std::collections::VecDeque;
use std::fmt::Write as _;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, SystemTime};

use iopath_lprocfs::{Param, ParamError, ParamTree};

use crate::gate::CreditSnapshot;
use crate::node::{Node, NodeInner};

/// Records kept; the oldest go first.
pub const SAMPLES_MAX: usize = 8192;
/// Shortest interval, milliseconds.
pub const INTERVAL_MIN_MS: u64 = 10;
/// Longest interval, milliseconds (the paper samples every 30 s).
pub const INTERVAL_MAX_MS: u64 = 3_600_000;

/// Waits at a set of gates, cumulative.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Waits {
    /// Sends that queued.
    pub count: u64,
    /// Their time queued.
    pub time: Duration,
}

impl Waits {
    fn add(&mut self, c: &CreditSnapshot) {
        self.count += c.waits;
        self.time += c.waited;
    }

    fn since(self, before: Waits) -> Waits {
        Waits {
            count: self.count.saturating_sub(before.count),
            time: self.time.saturating_sub(before.time),
        }
    }
}

/// The credit views the paper reads, for one network at one moment: the interface's send
/// credits (`max`, `tx`, `min`) and the router credits of the network's peers (`rtr`, summed,
/// and the lowest any of them has been).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct CreditView {
    /// Send credits configured on the network's interface (`max`).
    pub max: i64,
    /// Free send credits (`tx`; negative by the queue).
    pub tx: i64,
    /// The lowest `tx` has been (`min`).
    pub min: i64,
    /// Router credits of the network's peers, summed (router only).
    pub rtr: i64,
    /// The lowest router credit count of any of them.
    pub rtr_min: i64,
}

/// One network's cumulative counts at one moment (`network` `*`: the shared buffer pools).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NetReading {
    /// The network (`tcp1`), or `*`.
    pub network: String,
    /// Waits for send credits onto the network.
    pub egress: Waits,
    /// Waits for router credits by messages from the network (or for router buffers).
    pub ingress: Waits,
    /// Payload bytes sent onto the network.
    pub bytes_out: u64,
    /// Messages sent onto the network.
    pub messages_out: u64,
    /// The credit views now.
    pub credits: CreditView,
}

/// A node's reading: when, and each network's counts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reading {
    /// When it was taken.
    pub at: SystemTime,
    /// Per network.
    pub nets: Vec<NetReading>,
}

/// One record: a network's congestion and traffic over one interval.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Sample {
    /// The host the node runs on.
    pub host: String,
    /// The node (its first NID).
    pub router: String,
    /// The network, or `*` for the router's shared buffer pools.
    pub network: String,
    /// Seconds since the Unix epoch at the end of the interval.
    pub epoch: f64,
    /// The interval's length, seconds.
    pub interval_s: f64,
    /// Sends onto the network that queued for credits in the interval.
    pub egress_waits: u64,
    /// Their time queued, seconds (egress congestion, the paper's OUTQ).
    pub egress_congestion_s: f64,
    /// Messages from the network that queued for router credits or buffers in the interval.
    pub ingress_waits: u64,
    /// Their time queued, seconds (ingress congestion, the paper's INQ).
    pub ingress_congestion_s: f64,
    /// Payload bytes sent onto the network in the interval.
    pub bytes_out: u64,
    /// Messages sent onto the network in the interval.
    pub messages_out: u64,
    /// The credit views at the end of the interval.
    #[serde(flatten)]
    pub credits: CreditView,
}

/// The records of the interval between `before` and `now`, for each network in both.
pub fn samples(host: &str, router: &str, before: &Reading, now: &Reading) -> Vec<Sample> {
    let epoch = |t: SystemTime| {
        t.duration_since(SystemTime::UNIX_EPOCH)
            .unwrap_or_default()
            .as_secs_f64()
    };
    let interval = now.at.duration_since(before.at).unwrap_or_default();
    now.nets
        .iter()
        .filter_map(|n| {
            let b = before.nets.iter().find(|b| b.network == n.network)?;
            let egress = n.egress.since(b.egress);
            let ingress = n.ingress.since(b.ingress);
            Some(Sample {
                host: host.to_owned(),
                router: router.to_owned(),
                network: n.network.clone(),
                epoch: epoch(now.at),
                interval_s: interval.as_secs_f64(),
                egress_waits: egress.count,
                egress_congestion_s: egress.time.as_secs_f64(),
                ingress_waits: ingress.count,
                ingress_congestion_s: ingress.time.as_secs_f64(),
                bytes_out: n.bytes_out.saturating_sub(b.bytes_out),
                messages_out: n.messages_out.saturating_sub(b.messages_out),
                credits: n.credits,
            })
        })
        .collect()
}

/// Reads `node`'s cumulative counts, per network.
pub fn read(node: &Node) -> Reading {
    reading(&node.inner)
}

fn reading(node: &NodeInner) -> Reading {
    let mut nets = Vec::new();
    for ni in node.nis() {
        let network = ni.nid().net;
        let c = ni.credits();
        let mut egress = Waits::default();
        egress.add(&c);
        for (_, peer) in ni.peers() {
            egress.add(&peer);
        }
        // On a modeled link, the time messages queued for the wire itself: the stall a
        // network's own counters (Gemini's) see.
        let (count, time) = ni.link_waits();
        egress.count += count;
        egress.time += time;
        let mut ingress = Waits::default();
        let (mut rtr, mut rtr_min) = (0, i64::MAX);
        if let Some(router) = &node.router {
            for (peer, credits) in router.peers() {
                if peer.net == network {
                    ingress.add(&credits);
                    rtr += credits.credits;
                    rtr_min = rtr_min.min(credits.credits_min);
                }
            }
        }
        nets.push(NetReading {
            network: network.to_string(),
            egress,
            ingress,
            bytes_out: ni.counters.send_bytes.load(Ordering::Relaxed),
            messages_out: ni.counters.send_count.load(Ordering::Relaxed),
            credits: CreditView {
                max: i64::from(c.credits_max),
                tx: c.credits,
                min: c.credits_min,
                rtr,
                rtr_min: if rtr_min == i64::MAX { 0 } else { rtr_min },
            },
        });
    }
    if let Some(router) = &node.router {
        let mut ingress = Waits::default();
        let (mut max, mut tx, mut min) = (0, 0, i64::MAX);
        for (_, _, pool) in router.pools() {
            ingress.add(&pool);
            max += i64::from(pool.credits_max);
            tx += pool.credits;
            min = min.min(pool.credits_min);
        }
        nets.push(NetReading {
            network: "*".to_owned(),
            egress: Waits::default(),
            ingress,
            bytes_out: 0,
            messages_out: 0,
            credits: CreditView {
                max,
                tx,
                min,
                ..CreditView::default()
            },
        });
    }
    Reading {
        at: SystemTime::now(),
        nets,
    }
}

/// The sampling task of one node and the records it keeps (at most [`SAMPLES_MAX`]).
#[derive(Debug)]
pub struct Sampler {
    /// The interval, milliseconds (0: off); the task watches it.
    interval_ms: tokio::sync::watch::Sender<u64>,
    records: Mutex<VecDeque<Sample>>,
}

impl Sampler {
    /// Starts sampling `node` every `interval` (none: off until `iorcd.interval_ms` is set),
    /// and hangs `iorcd.interval_ms` and `iorcd.samples` on `tree`. The task ends with the
    /// node.
    pub fn start(
        node: &Node,
        interval: Option<Duration>,
        tree: &ParamTree,
    ) -> Result<Arc<Sampler>, ParamError> {
        let (interval_ms, watch) =
            tokio::sync::watch::channel(interval.map_or(0, |d| d.as_millis() as u64));
        let sampler = Arc::new(Sampler {
            interval_ms,
            records: Mutex::new(VecDeque::new()),
        });
        let host = std::fs::read_to_string("/proc/sys/kernel/hostname")
            .map(|h| h.trim().to_owned())
            .unwrap_or_else(|_| "unknown".to_owned());
        let router = node.nid().to_string();
        let weak_node = Arc::downgrade(&node.inner);
        tokio::spawn(run(
            watch,
            Arc::downgrade(&sampler),
            weak_node,
            host,
            router,
        ));
        let (get, set) = (Arc::downgrade(&sampler), Arc::downgrade(&sampler));
        tree.register(
            "iorcd.interval_ms",
            Param::read_write(
                move || {
                    get.upgrade()
                        .map(|s| s.interval_ms.borrow().to_string())
                        .unwrap_or_default()
                },
                move |value| {
                    let ms: u64 = value.trim().parse().map_err(|_| {
                        format!("iorcd.interval_ms takes milliseconds (0: off), not {value:?}")
                    })?;
                    if ms != 0 && !(INTERVAL_MIN_MS..=INTERVAL_MAX_MS).contains(&ms) {
                        return Err(format!(
                            "iorcd.interval_ms: 0 (off) or {INTERVAL_MIN_MS} to {INTERVAL_MAX_MS}"
                        ));
                    }
                    let sampler = set.upgrade().ok_or("node stopped")?;
                    sampler.interval_ms.send_replace(ms);
                    Ok(())
                },
            ),
        )?;
        let (get, clear) = (Arc::downgrade(&sampler), Arc::downgrade(&sampler));
        tree.register(
            "iorcd.samples",
            Param::read_write(
                move || get.upgrade().map(|s| s.json_lines()).unwrap_or_default(),
                move |_| {
                    let sampler = clear.upgrade().ok_or("node stopped")?;
                    sampler.lock().clear();
                    Ok(())
                },
            ),
        )?;
        Ok(sampler)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<Sample>> {
        self.records
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The records kept, oldest first.
    pub fn records(&self) -> Vec<Sample> {
        self.lock().iter().cloned().collect()
    }

    /// The records as JSON Lines.
    pub fn json_lines(&self) -> String {
        let mut out = String::new();
        for record in self.lock().iter() {
            if let Ok(line) = serde_json::to_string(record) {
                let _ = writeln!(out, "{line}");
            }
        }
        out
    }

    fn keep(&self, new: Vec<Sample>) {
        let mut records = self.lock();
        for record in new {
            if records.len() == SAMPLES_MAX {
                records.pop_front();
            }
            records.push_back(record);
        }
    }
}

/// The sampling loop: a reading every interval, the differences kept. Ends when the node or
/// the sampler is gone.
async fn run(
    mut interval: tokio::sync::watch::Receiver<u64>,
    sampler: Weak<Sampler>,
    node: Weak<NodeInner>,
    host: String,
    router: String,
) {
    let mut before: Option<Reading> = None;
    loop {
        let ms = *interval.borrow_and_update();
        if ms == 0 {
            // Off until an interval is set; gone when the sampler is.
            before = None;
            if interval.changed().await.is_err() {
                return;
            }
            continue;
        }
        if before.is_none() {
            let Some(n) = node.upgrade() else { return };
            before = Some(reading(&n));
        }
        tokio::select! {
            _ = tokio::time::sleep(Duration::from_millis(ms)) => {}
            changed = interval.changed() => {
                if changed.is_err() {
                    return;
                }
                before = None;
                continue;
            }
        }
        let (Some(n), Some(s)) = (node.upgrade(), sampler.upgrade()) else {
            return;
        };
        let now = reading(&n);
        drop(n);
        if let Some(previous) = before.replace(now.clone()) {
            s.keep(samples(&host, &router, &previous, &now));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn net(network: &str, egress_ms: u64, bytes: u64) -> NetReading {
        NetReading {
            network: network.into(),
            egress: Waits {
                count: egress_ms,
                time: Duration::from_millis(egress_ms),
            },
            ingress: Waits::default(),
            bytes_out: bytes,
            messages_out: bytes / 1024,
            credits: CreditView {
                max: 8,
                tx: 8,
                min: -3,
                rtr: 4,
                rtr_min: 1,
            },
        }
    }

    #[test]
    fn a_sample_is_the_difference_of_two_readings() {
        let t0 = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let before = Reading {
            at: t0,
            nets: vec![net("tcp0", 5, 1 << 20), net("tcp1", 0, 0)],
        };
        let now = Reading {
            at: t0 + Duration::from_secs(30),
            nets: vec![
                net("tcp0", 25, 3 << 20),
                net("tcp1", 0, 4096),
                net("tcp9", 100, 0),
            ],
        };
        let records = samples("host", "r0", &before, &now);
        assert_eq!(
            records.len(),
            2,
            "a network new in this reading waits a round"
        );
        let r = &records[0];
        assert_eq!(
            (r.network.as_str(), r.interval_s, r.epoch),
            ("tcp0", 30.0, 1030.0)
        );
        assert_eq!(r.egress_waits, 20);
        assert!((r.egress_congestion_s - 0.020).abs() < 1e-12);
        assert_eq!(r.bytes_out, 2 << 20);
        let c = r.credits;
        assert_eq!((c.max, c.tx, c.min, c.rtr, c.rtr_min), (8, 8, -3, 4, 1));
        assert_eq!(records[1].bytes_out, 4096);
        assert_eq!(records[1].egress_waits, 0);
        let line = serde_json::to_string(r).unwrap();
        let back: Sample = serde_json::from_str(&line).unwrap();
        assert_eq!(&back, r, "a record reads back as written");
        for key in [
            "\"host\"",
            "\"router\"",
            "\"epoch\"",
            "\"network\"",
            "\"egress_congestion_s\"",
            "\"rtr_min\"",
        ] {
            assert!(line.contains(key), "{line}");
        }
    }
}
