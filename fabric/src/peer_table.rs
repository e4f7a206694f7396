//! [`PeerTable`]: the credit gates an interface or a router keeps per peer, as LNet keeps its
//! peer table. A peer is added when first sent to or heard from, and forgotten once it has
//! been idle for [`PEER_IDLE_MAX`] with nothing held — no send in flight and none waiting on
//! its credits. A client that came and went (each `iopath lfs --stack` call is a client of
//! its own) leaves no peer behind, and so no `peers` line and no `/metrics` series.
//!
//! The table is swept when it is listed (`lctl get_param peers`, a scrape), and when a new
//! peer is added to a full table or [`SWEEP_EVERY`] after the last sweep: not at every new
//! peer, which made a server that 20,000 clients first reach scan its table 20,000 times.
//! Forgetting costs nothing on the send path.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::time::Instant;

use crate::gate::CreditGate;
use crate::gate::CreditSnapshot;
use crate::nid::Nid;

/// How long a peer with nothing held is kept after it was last used: ksocklnd's
/// `peer_timeout` (180 s), after which LNet counts a silent peer gone.
pub const PEER_IDLE_MAX: Duration = Duration::from_secs(180);

/// How often adding a peer also sweeps the table, at most (when it is not full).
pub const SWEEP_EVERY: Duration = Duration::from_secs(10);

/// Credit gates by peer, each forgotten once idle.
#[derive(Debug)]
pub struct PeerTable {
    entries: Mutex<Entries>,
    credits_max: u32,
    peers_max: usize,
}

/// The gates, and when the table was last swept.
#[derive(Debug)]
struct Entries {
    map: HashMap<Nid, Entry>,
    swept: Instant,
}

#[derive(Debug)]
struct Entry {
    gate: Arc<CreditGate>,
    used: Instant,
}

impl PeerTable {
    /// A table of at most `peers_max` peers in use, each with `credits_max` credits.
    pub fn new(credits_max: u32, peers_max: usize) -> PeerTable {
        PeerTable {
            entries: Mutex::new(Entries {
                map: HashMap::new(),
                swept: Instant::now(),
            }),
            credits_max,
            peers_max,
        }
    }

    /// `peer`'s gate, the peer added if new; `None` when `peers_max` peers are in use.
    pub fn gate(&self, peer: Nid) -> Option<Arc<CreditGate>> {
        let now = Instant::now();
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(entry) = entries.map.get_mut(&peer) {
            entry.used = now;
            return Some(Arc::clone(&entry.gate));
        }
        if entries.map.len() >= self.peers_max
            || now.saturating_duration_since(entries.swept) >= SWEEP_EVERY
        {
            forget_idle(&mut entries.map, now);
            entries.swept = now;
        }
        if entries.map.len() >= self.peers_max {
            return None;
        }
        let gate = CreditGate::new(self.credits_max);
        entries.map.insert(
            peer,
            Entry {
                gate: Arc::clone(&gate),
                used: now,
            },
        );
        Some(gate)
    }

    /// One peer's counters, if it is in the table.
    pub fn snapshot(&self, peer: &Nid) -> Option<CreditSnapshot> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .get(peer)
            .map(|e| e.gate.snapshot())
    }

    /// Up to `max` of the peers, in no order.
    pub fn some_peers(&self, max: usize) -> Vec<Nid> {
        self.entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .keys()
            .take(max)
            .copied()
            .collect()
    }

    /// Forgets every peer's low-water mark.
    pub fn reset_min(&self) {
        for entry in self
            .entries
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .map
            .values()
        {
            entry.gate.reset_min();
        }
    }

    /// Every peer's counters, sorted by NID, once the idle ones are forgotten.
    pub fn snapshots(&self) -> Vec<(Nid, CreditSnapshot)> {
        let mut entries = self.entries.lock().unwrap_or_else(PoisonError::into_inner);
        let now = Instant::now();
        forget_idle(&mut entries.map, now);
        entries.swept = now;
        let mut list: Vec<_> = entries
            .map
            .iter()
            .map(|(nid, e)| (*nid, e.gate.snapshot()))
            .collect();
        list.sort_by_key(|(nid, _)| *nid);
        list
    }
}

/// Drops the peers idle for [`PEER_IDLE_MAX`] whose gate nobody else holds: no credit taken,
/// no sender waiting (each holds the gate while it waits or holds a credit).
fn forget_idle(entries: &mut HashMap<Nid, Entry>, now: Instant) {
    entries.retain(|_, e| {
        Arc::strong_count(&e.gate) > 1 || now.saturating_duration_since(e.used) < PEER_IDLE_MAX
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nid(n: u32) -> Nid {
        Nid::mem(n, 0)
    }

    #[tokio::test(start_paused = true)]
    async fn a_peer_idle_past_the_limit_is_forgotten_unless_something_is_held() {
        let table = PeerTable::new(2, 8);
        let gone = table.gate(nid(1)).unwrap();
        let held = table.gate(nid(2)).unwrap().try_acquire().unwrap();
        drop(gone);
        tokio::time::advance(PEER_IDLE_MAX - Duration::from_secs(1)).await;
        assert_eq!(table.snapshots().len(), 2, "not idle long enough yet");
        tokio::time::advance(Duration::from_secs(2)).await;
        let left: Vec<Nid> = table.snapshots().into_iter().map(|(n, _)| n).collect();
        assert_eq!(left, [nid(2)], "the peer holding a credit stays");
        drop(held);
        assert_eq!(table.snapshots(), [], "idle and free: forgotten");
        assert_eq!(table.snapshot(&nid(2)), None);
    }

    #[tokio::test(start_paused = true)]
    async fn adding_a_peer_sweeps_at_most_every_ten_seconds_and_idle_peers_still_go() {
        let table = PeerTable::new(1, 8);
        drop(table.gate(nid(1)).unwrap());
        tokio::time::advance(PEER_IDLE_MAX + Duration::from_secs(1)).await;
        // The last sweep is long past: this add sweeps, and nid(1) is forgotten.
        drop(table.gate(nid(2)).unwrap());
        assert_eq!(table.some_peers(8), [nid(2)]);
        let sorted = |table: &PeerTable| {
            let mut peers = table.some_peers(8);
            peers.sort();
            peers
        };
        // A sweep while nid(2) is not yet idle long enough: it stays.
        tokio::time::advance(PEER_IDLE_MAX - Duration::from_secs(5)).await;
        drop(table.gate(nid(3)).unwrap());
        assert_eq!(sorted(&table), [nid(2), nid(3)]);
        // Now it is, but the last sweep is under SWEEP_EVERY ago: an add does not sweep.
        tokio::time::advance(SWEEP_EVERY - Duration::from_secs(3)).await;
        drop(table.gate(nid(4)).unwrap());
        assert_eq!(sorted(&table), [nid(2), nid(3), nid(4)]);
        // Past SWEEP_EVERY, the next add sweeps it away.
        tokio::time::advance(Duration::from_secs(4)).await;
        drop(table.gate(nid(5)).unwrap());
        assert_eq!(sorted(&table), [nid(3), nid(4), nid(5)]);
    }

    #[tokio::test(start_paused = true)]
    async fn use_keeps_a_peer_and_a_full_table_makes_room_from_idle_peers() {
        let table = PeerTable::new(1, 2);
        table.gate(nid(1)).unwrap();
        table.gate(nid(2)).unwrap();
        assert!(table.gate(nid(3)).is_none(), "two peers at most");
        tokio::time::advance(PEER_IDLE_MAX / 2).await;
        table.gate(nid(1)).unwrap();
        tokio::time::advance(PEER_IDLE_MAX / 2).await;
        // nid(2) has been idle for the limit; nid(1) was used half of it ago.
        assert!(table.gate(nid(3)).is_some());
        let left: Vec<Nid> = table.snapshots().into_iter().map(|(n, _)| n).collect();
        assert_eq!(left, [nid(1), nid(3)]);
    }
}
