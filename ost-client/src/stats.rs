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
//! done); nothing is allocated once a row exists. Every histogram has
//! [`BUCKETS`](iopath_admin::lprocfs::BUCKETS) buckets, so a row's memory is bounded whatever
//! the load.
//!
//! A node of a file system of up to [`EAGER_ROWS_MAX`] targets has every row from the start,
//! as a Lustre client has an osc device per target from its mount. Past that, a row is made
//! when the node first reaches its target: 18,688 nodes of a file system of 672 targets
//! (Jaguar's clients on Spider) would otherwise hold 12.5 million rows, about 2.7 KB each with
//! their parameters, before writing a byte.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, RwLock};
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

/// File systems of at most this many targets have every osc row from the start; larger ones
/// make each when the node first reaches its target.
pub const EAGER_ROWS_MAX: usize = 64;

/// What is called with each row made after the table was (its parameters, registered).
type RowHook = Box<dyn Fn(&Arc<TargetStats>) + Send + Sync>;

/// One client node's osc counters: a row per target of the file system (see the module's
/// text for when each is made).
pub struct OscStats {
    since: SystemTime,
    /// Every target the node may reach, by index, ascending.
    known: Vec<u32>,
    /// The rows made so far, by target index, ascending; each shared with whoever holds it.
    rows: RwLock<Vec<Arc<TargetStats>>>,
    /// Called with each row made from now on.
    hooks: Mutex<Vec<RowHook>>,
}

impl std::fmt::Debug for OscStats {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OscStats")
            .field("known", &self.known.len())
            .field("rows", &self.read_rows().len())
            .finish_non_exhaustive()
    }
}

impl OscStats {
    /// The table of `targets` (indices; repeats are one target), from zero, counting from
    /// `since`: every row now when there are at most [`EAGER_ROWS_MAX`], else none yet.
    pub fn new(targets: impl IntoIterator<Item = u32>, since: SystemTime) -> OscStats {
        let mut known: Vec<u32> = targets.into_iter().collect();
        known.sort_unstable();
        known.dedup();
        let rows = if known.len() <= EAGER_ROWS_MAX {
            known
                .iter()
                .map(|&index| Arc::new(TargetStats::new(index, since)))
                .collect()
        } else {
            Vec::new()
        };
        OscStats {
            since,
            known,
            rows: RwLock::new(rows),
            hooks: Mutex::new(Vec::new()),
        }
    }

    /// Target `index`'s row, made now if it was not yet; `None` for a target the file system
    /// does not have. (A search of a sorted list under a read lock: cheap on every request.)
    pub fn target(&self, index: u32) -> Option<Arc<TargetStats>> {
        {
            let rows = self.read_rows();
            if let Ok(at) = rows.binary_search_by_key(&index, |t| t.index) {
                return Some(Arc::clone(&rows[at]));
            }
        }
        self.known.binary_search(&index).ok()?;
        let made = {
            let mut rows = self.rows.write().unwrap_or_else(PoisonError::into_inner);
            match rows.binary_search_by_key(&index, |t| t.index) {
                // Another request made it meanwhile.
                Ok(at) => return Some(Arc::clone(&rows[at])),
                Err(at) => {
                    let row = Arc::new(TargetStats::new(index, self.since));
                    rows.insert(at, Arc::clone(&row));
                    row
                }
            }
        };
        for hook in self.lock_hooks().iter() {
            hook(&made);
        }
        Some(made)
    }

    /// The rows made so far, by target index.
    pub fn targets(&self) -> Vec<Arc<TargetStats>> {
        self.read_rows().clone()
    }

    /// Every target the node may reach, by index (a row or not).
    pub fn known_targets(&self) -> &[u32] {
        &self.known
    }

    /// Calls `hook` with every row made from now on (not with those made already).
    pub fn on_new_row(&self, hook: impl Fn(&Arc<TargetStats>) + Send + Sync + 'static) {
        self.lock_hooks().push(Box::new(hook));
    }

    fn read_rows(&self) -> std::sync::RwLockReadGuard<'_, Vec<Arc<TargetStats>>> {
        self.rows.read().unwrap_or_else(PoisonError::into_inner)
    }

    fn lock_hooks(&self) -> MutexGuard<'_, Vec<RowHook>> {
        self.hooks.lock().unwrap_or_else(PoisonError::into_inner)
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

    #[test]
    fn a_large_file_systems_rows_are_made_when_first_reached() {
        let targets = EAGER_ROWS_MAX as u32 + 8;
        let table = OscStats::new(0..targets, at(0));
        assert!(
            table.targets().is_empty(),
            "no row before a target is reached"
        );
        assert_eq!(table.known_targets().len(), targets as usize);
        let made = Arc::new(Mutex::new(Vec::new()));
        let seen = Arc::clone(&made);
        table.on_new_row(move |row| seen.lock().unwrap().push(row.index()));
        let row = table.target(40).unwrap();
        assert!(
            Arc::ptr_eq(&row, &table.target(40).unwrap()),
            "one row a target"
        );
        table.target(3).unwrap();
        assert!(table.target(targets).is_none(), "no such target");
        let indices: Vec<u32> = table.targets().iter().map(|t| t.index()).collect();
        assert_eq!(indices, [3, 40]);
        assert_eq!(
            *made.lock().unwrap(),
            [40, 3],
            "the hook hears each new row once"
        );
    }
}
