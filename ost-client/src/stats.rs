//! [`OscStats`]: one client node's osc counters, a row ([`TargetStats`]) per target of the
//! file system, read as `osc.*.stats` and `osc.*.rpc_stats` ([`crate::params`]).
//!
//! Every OST client on the node counts into the same table — every client library connected
//! there (several IOR tasks share one node, each with its own client), each of its
//! connections — so the files read as the node's, as a Lustre client's do. Requests a
//! connection makes for itself (connect, replay done, disconnect) concern a server, not a
//! target, and are in no row.
//!
//! Counting is on the I/O path, so it is cheap: an atomic add for each gauge (requests and
//! RPCs under way, pages waiting for an RPC slot) and a short lock each time a request adds to
//! the tallies ([`OscCounters`]: when a bulk RPC is sent, when it is answered, when it is
//! done); nothing is allocated. The table is fixed when the node starts and
//! every histogram has [`BUCKETS`](iopath_admin::lprocfs::BUCKETS) buckets, so its memory is
//! bounded whatever the load.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::SystemTime;

use iopath_admin::lprocfs::{PAGE_BYTES, Rw};
use tokio::time::Instant;

use crate::counters::{OscCounters, OstOp, UnderWay};

/// One target's counters, as every OST client on the node shares them.
#[derive(Debug)]
pub struct TargetStats {
    /// The target's index in the file system.
    index: u32,
    /// The tallies since the last clear; held only to add one event or copy them out.
    counters: Mutex<OscCounters>,
    /// Requests to the target sent and not yet answered.
    active: AtomicU64,
    /// Read and write RPCs sent and not yet answered, by [`Rw`].
    rpcs: [AtomicU64; 2],
    /// Pages of read and write RPCs waiting for an RPC slot, by [`Rw`].
    pending_pages: [AtomicU64; 2],
    /// Writes the target acknowledged and has not yet committed, kept by the node's OST
    /// clients for replay.
    uncommitted: AtomicU64,
}

// Relaxed throughout: each gauge is read on its own, and publishes no other memory.
impl TargetStats {
    /// Target `index`'s row, from zero, counting from `since`.
    pub fn new(index: u32, since: SystemTime) -> TargetStats {
        TargetStats {
            index,
            counters: Mutex::new(OscCounters::new(since)),
            active: AtomicU64::new(0),
            rpcs: Default::default(),
            pending_pages: Default::default(),
            uncommitted: AtomicU64::new(0),
        }
    }

    /// The target's index in the file system.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// The tallies since the last clear.
    pub fn counters(&self) -> OscCounters {
        self.lock().clone()
    }

    /// Writes to the target acknowledged and not yet committed, kept for replay by every
    /// OST client on the node.
    pub fn uncommitted(&self) -> u64 {
        self.uncommitted.load(Ordering::Relaxed)
    }

    /// `added` more writes are kept for replay, `removed` fewer (an OST client's replay list
    /// changed).
    pub fn kept_changed(&self, added: u64, removed: u64) {
        if added > 0 {
            self.uncommitted.fetch_add(added, Ordering::Relaxed);
        }
        if removed > 0 {
            self.uncommitted.fetch_sub(removed, Ordering::Relaxed);
        }
    }

    /// What is under way at the target now.
    pub fn under_way(&self) -> UnderWay {
        UnderWay {
            rpcs: self.rpcs.each_ref().map(|n| n.load(Ordering::Relaxed)),
            pending_pages: self
                .pending_pages
                .each_ref()
                .map(|n| n.load(Ordering::Relaxed)),
        }
    }

    /// Starts the stats file's counters again from zero, at `now` (`osc.*.stats=clear`).
    pub fn clear_stats(&self, now: SystemTime) {
        self.lock().clear_stats(now);
    }

    /// Empties rpc_stats' histograms (`osc.*.rpc_stats=clear`). What is under way stays as it
    /// is: it is the present, not a tally.
    pub fn clear_rpc_stats(&self) {
        self.lock().clear_histograms();
    }

    /// A request to the target is being sent: it counts as under way until the returned
    /// guard goes, and [`Request::replied`] counts its wait.
    pub fn request(&self) -> Request<'_> {
        let active = self.active.fetch_add(1, Ordering::Relaxed) + 1;
        Request {
            stats: self,
            active,
            sent: Instant::now(),
        }
    }

    /// A read or write RPC of `bytes` at `offset_bytes` in its object is being sent: it is
    /// tallied in rpc_stats' histograms now, counts as in flight until the returned guard
    /// goes, and [`Rpc::done`] counts the bytes it moved.
    pub fn rpc(&self, rw: Rw, bytes: u64, offset_bytes: u64) -> Rpc<'_> {
        let in_flight = self.rpcs[rw as usize].fetch_add(1, Ordering::Relaxed) + 1;
        self.lock().rpc_sent(rw, bytes, offset_bytes, in_flight);
        Rpc { stats: self, rw }
    }

    /// `bytes` of a read or write are waiting for one of the target's RPC slots: they count as
    /// pending pages until the returned guard goes.
    pub fn pending(&self, rw: Rw, bytes: u64) -> Pending<'_> {
        let pages = bytes.div_ceil(PAGE_BYTES);
        self.pending_pages[rw as usize].fetch_add(pages, Ordering::Relaxed);
        Pending {
            stats: self,
            rw,
            pages,
        }
    }

    /// The tallies, locked. Each change is a handful of adds that cannot panic half-way, so
    /// a poisoned lock still holds whole tallies.
    fn lock(&self) -> MutexGuard<'_, OscCounters> {
        self.counters.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A request under way (from [`TargetStats::request`]).
#[derive(Debug)]
pub struct Request<'a> {
    stats: &'a TargetStats,
    /// Requests under way as it was sent, itself included.
    active: u64,
    sent: Instant,
}

impl Request<'_> {
    /// Its reply came: counts its wait as `req_waittime` and as `op`'s time.
    pub fn replied(self, op: OstOp) {
        let waited_us = u64::try_from(self.sent.elapsed().as_micros()).unwrap_or(u64::MAX);
        self.stats.lock().replied(op, waited_us, self.active);
    }
}

impl Drop for Request<'_> {
    /// Answered or not, it is no longer under way.
    fn drop(&mut self) {
        self.stats.active.fetch_sub(1, Ordering::Relaxed);
    }
}

/// A read or write RPC in flight (from [`TargetStats::rpc`]).
#[derive(Debug)]
pub struct Rpc<'a> {
    stats: &'a TargetStats,
    rw: Rw,
}

impl Rpc<'_> {
    /// It completed, having moved `bytes`: `read_bytes` or `write_bytes`.
    pub fn done(self, bytes: u64) {
        self.stats.lock().rpc_done(self.rw, bytes);
    }
}

impl Drop for Rpc<'_> {
    /// Completed or failed, it is no longer in flight.
    fn drop(&mut self) {
        self.stats.rpcs[self.rw as usize].fetch_sub(1, Ordering::Relaxed);
    }
}

/// Pages waiting for an RPC slot (from [`TargetStats::pending`]).
#[derive(Debug)]
pub struct Pending<'a> {
    stats: &'a TargetStats,
    rw: Rw,
    pages: u64,
}

impl Drop for Pending<'_> {
    /// They have a slot, or gave up waiting.
    fn drop(&mut self) {
        self.stats.pending_pages[self.rw as usize].fetch_sub(self.pages, Ordering::Relaxed);
    }
}

/// One client node's osc counters: a row per target of the file system, fixed when made.
#[derive(Debug)]
pub struct OscStats {
    /// By target index, ascending; each row shared with whoever holds it.
    targets: Vec<Arc<TargetStats>>,
}

impl OscStats {
    /// A row for each of `targets` (indices; repeats are one row), from zero, counting from
    /// `since`.
    pub fn new(targets: impl IntoIterator<Item = u32>, since: SystemTime) -> OscStats {
        let mut indices: Vec<u32> = targets.into_iter().collect();
        indices.sort_unstable();
        indices.dedup();
        OscStats {
            targets: indices
                .into_iter()
                .map(|index| Arc::new(TargetStats::new(index, since)))
                .collect(),
        }
    }

    /// Target `index`'s row, if the table has one (a search of a short sorted list: cheap on
    /// every request).
    pub fn target(&self, index: u32) -> Option<&Arc<TargetStats>> {
        self.targets
            .binary_search_by_key(&index, |t| t.index)
            .ok()
            .map(|at| &self.targets[at])
    }

    /// Every row, by target index.
    pub fn targets(&self) -> &[Arc<TargetStats>] {
        &self.targets
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[tokio::test(start_paused = true)]
    async fn guards_count_what_is_under_way_and_a_clear_keeps_it() {
        let row = TargetStats::new(3, at(0));
        let waiting = row.pending(Rw::Write, (1 << 20) + 1);
        assert_eq!(row.under_way().pending_pages, [0, 257]);
        drop(waiting);
        let first = row.request();
        let second = row.request();
        let rpc = row.rpc(Rw::Write, 1 << 20, 0);
        assert_eq!(row.under_way().rpcs, [0, 1]);
        tokio::time::advance(Duration::from_micros(250)).await;
        second.replied(OstOp::Write);
        rpc.done(1 << 20);
        drop(first); // no reply: not a wait, no longer under way
        assert_eq!(row.under_way(), UnderWay::default());
        let c = row.counters();
        assert_eq!((c.waittime.samples, c.waittime.sum), (1, 250));
        assert_eq!(c.active.max, 2, "sent second of two");
        assert_eq!(c.op(OstOp::Write).samples, 1);
        assert_eq!(c.bytes[Rw::Write as usize].sum, 1 << 20);
        let _again = row.rpc(Rw::Read, 4096, 0);
        row.clear_stats(at(5));
        let cleared = row.counters();
        assert_eq!(
            (cleared.since, cleared.waittime),
            (at(5), Default::default())
        );
        assert_eq!(cleared.bytes, [Default::default(); 2]);
        assert_eq!(
            cleared.pages_per_rpc[Rw::Write as usize].total(),
            1,
            "each file clears its own"
        );
        row.clear_rpc_stats();
        assert_eq!(row.counters(), OscCounters::new(at(5)));
        assert_eq!(row.under_way().rpcs, [1, 0], "what is under way stays");
    }

    #[test]
    fn the_table_has_one_row_per_target() {
        let table = OscStats::new([4, 0, 2, 2], at(0));
        let indices: Vec<u32> = table.targets().iter().map(|t| t.index()).collect();
        assert_eq!(indices, [0, 2, 4]);
        assert_eq!(table.target(2).map(|t| t.index()), Some(2));
        assert!(table.target(1).is_none());
        assert!(table.target(5).is_none());
    }
}
