//! Which call the fyod runs next.
//!
//! The paper's fyod is one process. A **synchronous** call (`read()`, `write()`) is a system
//! call made by that process: "until that read() call returns, the fyod is blocked and will
//! not serve other requests from any other node" (§2.5.1). An **asynchronous** call
//! (`iread`, `iwrite`, `cread`, `cwrite`) is handed to a thread "for each open file", so
//! the fyod "can initiate multiple requests on behalf of multiple compute nodes" (§2.5.5).
//! This core states exactly that:
//!
//! ```text
//! arrivals ─▶ per-handle reorder (by seq) ─▶ dispatch FIFO ─▶ handle lanes ─▶ running
//!                                                 │
//!                         a sync call dispatched ─┘ blocks the FIFO until it finishes
//! ```
//!
//! - Each open file (handle) is a **lane**: its calls run one at a time, in the order the
//!   client numbered them (`seq`), whatever order they arrive in — its worker.
//! - Calls leave their lane's reorder buffer in `seq` order into one **dispatch FIFO**. An
//!   async call is dispatched into its lane at once; a sync call is dispatched and **blocks
//!   the dispatcher** until it finishes. So at most one sync call runs per fyod, and while it
//!   runs no call behind it in the FIFO is dispatched — though async calls already in their
//!   lanes keep running, as the paper's threads did.
//! - A sync call also waits for its own lane's earlier calls; they never need the dispatcher,
//!   so this cannot deadlock.
//!
//! Bounds: at most `queued_max` calls accepted and not finished; a call may arrive at most
//! `window` places ahead of its lane's next.

use std::collections::{BTreeMap, HashMap, VecDeque};

use crate::error::{ForwarderError, Result};
use crate::modes::CallKind;

/// Names a call while the fyod holds it.
pub type CallId = u64;
/// Names a lane: the handle of an open file.
pub type LaneId = u64;

/// A call as it arrives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallSpec {
    /// Its id (unique among calls held).
    pub id: CallId,
    /// Its open file.
    pub lane: LaneId,
    /// Its place in the lane's order.
    pub seq: u64,
    /// Sync or async.
    pub kind: CallKind,
}

/// What the scheduler has seen, for the fyod's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SchedulerStats {
    /// Sync calls running now.
    pub sync_running: u32,
    /// The most sync calls ever running at once.
    pub sync_running_peak: u32,
    /// Sync calls accepted and not yet started, now.
    pub sync_waiting: u32,
    /// The most sync calls ever waiting at once.
    pub sync_waiting_peak: u32,
    /// Async calls running now.
    pub async_running: u32,
    /// The most async calls ever running at once.
    pub async_running_peak: u32,
    /// Calls finished.
    pub finished: u64,
}

#[derive(Debug, Default)]
struct Lane {
    /// The seq the lane releases next.
    next_seq: u64,
    /// Calls that arrived ahead of `next_seq`.
    early: BTreeMap<u64, CallId>,
    /// Calls dispatched into the lane, waiting to run in order.
    queue: VecDeque<CallId>,
    /// The call running, if any.
    running: Option<CallId>,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    lane: LaneId,
    kind: CallKind,
    started: bool,
}

/// The scheduler. See the module documentation.
#[derive(Debug)]
pub struct CallScheduler {
    lanes: HashMap<LaneId, Lane>,
    fifo: VecDeque<CallId>,
    /// The sync call the dispatcher is blocked on.
    blocking: Option<CallId>,
    held: HashMap<CallId, Held>,
    queued_max: usize,
    window: u64,
    stats: SchedulerStats,
}

impl CallScheduler {
    /// A scheduler holding at most `queued_max` calls, each at most `window` ahead of its
    /// lane's next.
    pub fn new(queued_max: u32, window: u64) -> CallScheduler {
        assert!(queued_max > 0 && window > 0, "room for at least one call");
        CallScheduler {
            lanes: HashMap::new(),
            fifo: VecDeque::new(),
            blocking: None,
            held: HashMap::new(),
            queued_max: queued_max as usize,
            window,
            stats: SchedulerStats::default(),
        }
    }

    /// The counters.
    pub fn stats(&self) -> SchedulerStats {
        self.stats
    }

    /// Calls held (accepted and not finished).
    pub fn held(&self) -> usize {
        self.held.len()
    }

    /// Lanes open: the open files, each a worker thread.
    pub fn lanes_open(&self) -> usize {
        self.lanes.len()
    }

    /// Opens a lane for a new handle; its first call is seq 0.
    pub fn open_lane(&mut self, lane: LaneId) {
        let previous = self.lanes.insert(lane, Lane::default());
        assert!(previous.is_none(), "lane {lane} opened twice");
    }

    /// Closes a lane (its close call is running). Calls of the lane still waiting — a client
    /// that sent calls after its close — are dropped and returned, to be refused.
    pub fn close_lane(&mut self, lane: LaneId) -> Vec<CallId> {
        let Some(removed) = self.lanes.remove(&lane) else {
            return Vec::new();
        };
        let mut dropped: Vec<CallId> = removed.early.into_values().collect();
        dropped.extend(removed.queue);
        let in_fifo: Vec<CallId> = self
            .fifo
            .iter()
            .copied()
            .filter(|id| self.held.get(id).is_some_and(|h| h.lane == lane))
            .collect();
        self.fifo.retain(|id| !in_fifo.contains(id));
        dropped.extend(in_fifo);
        for id in &dropped {
            if let Some(held) = self.held.remove(id)
                && held.kind == CallKind::Sync
            {
                self.stats.sync_waiting -= 1;
                if self.blocking == Some(*id) {
                    self.blocking = None;
                }
            }
        }
        dropped
    }

    /// A call arrived: accepted (the calls to start now, perhaps including it) or refused.
    pub fn arrive(&mut self, call: CallSpec) -> Result<Vec<CallId>> {
        if self.held.len() >= self.queued_max {
            return Err(ForwarderError::LimitReached {
                what: "calls queued at the fyod",
                max: self.queued_max as u64,
            });
        }
        assert!(!self.held.contains_key(&call.id), "call ids are unique");
        let window = self.window;
        let lane = self.lanes.get_mut(&call.lane).ok_or_else(|| {
            ForwarderError::invalid("handle", format!("handle {} is not open", call.lane))
        })?;
        if call.seq < lane.next_seq || lane.early.contains_key(&call.seq) {
            return Err(ForwarderError::invalid(
                "call sequence number",
                format!("seq {} on handle {} was already used", call.seq, call.lane),
            ));
        }
        if call.seq - lane.next_seq >= window {
            return Err(ForwarderError::LimitReached {
                what: "calls ahead of a handle's next call",
                max: window,
            });
        }
        lane.early.insert(call.seq, call.id);
        // Release what is now in order into the dispatch FIFO.
        while let Some(id) = lane.early.remove(&lane.next_seq) {
            lane.next_seq += 1;
            self.fifo.push_back(id);
        }
        self.held.insert(
            call.id,
            Held {
                lane: call.lane,
                kind: call.kind,
                started: false,
            },
        );
        if call.kind == CallKind::Sync {
            self.stats.sync_waiting += 1;
            self.stats.sync_waiting_peak =
                self.stats.sync_waiting_peak.max(self.stats.sync_waiting);
        }
        Ok(self.pump(Some(call.lane)))
    }

    /// A running call finished: the calls to start now.
    pub fn finish(&mut self, id: CallId) -> Vec<CallId> {
        let held = self.held.remove(&id).expect("only held calls finish");
        assert!(held.started, "only started calls finish");
        match held.kind {
            CallKind::Sync => self.stats.sync_running -= 1,
            CallKind::Async => self.stats.async_running -= 1,
        }
        self.stats.finished += 1;
        if let Some(lane) = self.lanes.get_mut(&held.lane) {
            assert_eq!(lane.running, Some(id), "the lane ran this call");
            lane.running = None;
        }
        if self.blocking == Some(id) {
            self.blocking = None;
        }
        self.pump(Some(held.lane))
    }

    /// Dispatches from the FIFO until a sync call blocks it, then starts every lane whose
    /// head may run.
    fn pump(&mut self, touched: Option<LaneId>) -> Vec<CallId> {
        let mut lanes: Vec<LaneId> = touched.into_iter().collect();
        // Bounded by the FIFO's length.
        while self.blocking.is_none() {
            let Some(id) = self.fifo.pop_front() else {
                break;
            };
            let held = self.held[&id];
            let lane = self
                .lanes
                .get_mut(&held.lane)
                .expect("calls in the FIFO belong to open lanes");
            lane.queue.push_back(id);
            lanes.push(held.lane);
            if held.kind == CallKind::Sync {
                self.blocking = Some(id);
            }
        }
        if let Some(blocking) = self.blocking {
            lanes.push(self.held[&blocking].lane);
        }
        lanes.sort_unstable();
        lanes.dedup();
        let mut starts = Vec::new();
        for lane_id in lanes {
            let Some(lane) = self.lanes.get_mut(&lane_id) else {
                continue;
            };
            if lane.running.is_some() {
                continue;
            }
            let Some(id) = lane.queue.pop_front() else {
                continue;
            };
            lane.running = Some(id);
            let held = self.held.get_mut(&id).expect("queued calls are held");
            held.started = true;
            match held.kind {
                CallKind::Sync => {
                    self.stats.sync_waiting -= 1;
                    self.stats.sync_running += 1;
                    self.stats.sync_running_peak =
                        self.stats.sync_running_peak.max(self.stats.sync_running);
                }
                CallKind::Async => {
                    self.stats.async_running += 1;
                    self.stats.async_running_peak =
                        self.stats.async_running_peak.max(self.stats.async_running);
                }
            }
            starts.push(id);
        }
        starts
    }

    /// Checks what the scheduler believes; tests call it after every event.
    pub fn check_invariants(&self) {
        assert!(self.stats.sync_running <= 1, "at most one sync call runs");
        let running: Vec<CallId> = self.lanes.values().filter_map(|l| l.running).collect();
        let sync_running = running
            .iter()
            .filter(|id| self.held[id].kind == CallKind::Sync)
            .count();
        assert_eq!(sync_running as u32, self.stats.sync_running);
        assert_eq!(
            (running.len() - sync_running) as u32,
            self.stats.async_running
        );
        if sync_running == 1 {
            let id = running
                .iter()
                .find(|id| self.held[id].kind == CallKind::Sync)
                .expect("counted above");
            assert_eq!(
                self.blocking,
                Some(*id),
                "a running sync call blocks dispatch"
            );
        }
        for lane in self.lanes.values() {
            let syncs_queued = lane
                .queue
                .iter()
                .filter(|id| self.held[id].kind == CallKind::Sync)
                .count();
            assert!(
                syncs_queued <= 1,
                "only the blocking sync call is dispatched"
            );
            assert!(
                lane.early.keys().all(|&seq| seq > lane.next_seq),
                "early calls are ahead of the next"
            );
        }
        for id in &self.fifo {
            assert!(!self.held[id].started, "calls in the FIFO have not started");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use CallKind::{Async, Sync};

    /// Drives the scheduler like the runtime, recording the order calls started in.
    struct Run {
        s: CallScheduler,
        running: Vec<CallId>,
        started: Vec<CallId>,
        specs: HashMap<CallId, CallSpec>,
        next_id: CallId,
    }

    impl Run {
        fn new(lanes: u64) -> Run {
            let mut s = CallScheduler::new(64, 8);
            for lane in 0..lanes {
                s.open_lane(lane);
            }
            Run {
                s,
                running: Vec::new(),
                started: Vec::new(),
                specs: HashMap::new(),
                next_id: 1,
            }
        }

        fn arrive(&mut self, lane: LaneId, seq: u64, kind: CallKind) -> CallId {
            let id = self.next_id;
            self.next_id += 1;
            let spec = CallSpec {
                id,
                lane,
                seq,
                kind,
            };
            self.specs.insert(id, spec);
            let starts = self.s.arrive(spec).unwrap();
            self.note(starts);
            id
        }

        fn finish(&mut self, id: CallId) {
            let position = self.running.iter().position(|r| *r == id).unwrap();
            self.running.remove(position);
            let starts = self.s.finish(id);
            self.note(starts);
        }

        fn note(&mut self, starts: Vec<CallId>) {
            self.running.extend(&starts);
            self.started.extend(&starts);
            self.s.check_invariants();
        }

        fn is_running(&self, id: CallId) -> bool {
            self.running.contains(&id)
        }
    }

    #[test]
    fn async_calls_on_different_files_run_together() {
        let mut r = Run::new(4);
        let ids: Vec<CallId> = (0..4).map(|lane| r.arrive(lane, 0, Async)).collect();
        assert!(ids.iter().all(|id| r.is_running(*id)));
        assert_eq!(r.s.stats().async_running_peak, 4);
    }

    #[test]
    fn async_calls_on_one_file_run_one_at_a_time_in_seq_order() {
        let mut r = Run::new(1);
        let c2 = r.arrive(0, 2, Async);
        let c1 = r.arrive(0, 1, Async);
        assert!(r.running.is_empty(), "seq 0 has not arrived");
        let c0 = r.arrive(0, 0, Async);
        assert_eq!(r.running, [c0]);
        r.finish(c0);
        assert_eq!(r.running, [c1]);
        r.finish(c1);
        r.finish(c2);
        assert_eq!(r.started, [c0, c1, c2]);
        assert_eq!(r.s.stats().async_running_peak, 1);
    }

    #[test]
    fn sync_calls_run_one_at_a_time_per_fyod() {
        let mut r = Run::new(4);
        let ids: Vec<CallId> = (0..4).map(|lane| r.arrive(lane, 0, Sync)).collect();
        assert_eq!(r.running, [ids[0]]);
        assert_eq!(r.s.stats().sync_waiting, 3);
        for (i, id) in ids.iter().enumerate() {
            assert_eq!(r.running, [*id], "the {i}th sync call runs alone");
            r.finish(*id);
        }
        let stats = r.s.stats();
        assert_eq!((stats.sync_running_peak, stats.sync_waiting_peak), (1, 3));
    }

    #[test]
    fn a_running_sync_call_blocks_dispatch_of_later_async_calls() {
        let mut r = Run::new(3);
        let a0 = r.arrive(0, 0, Async);
        let s1 = r.arrive(1, 0, Sync);
        let a2 = r.arrive(2, 0, Async);
        assert!(r.is_running(a0), "already dispatched: keeps running");
        assert!(r.is_running(s1));
        assert!(!r.is_running(a2), "behind the sync call in the FIFO");
        r.finish(s1);
        assert!(r.is_running(a2));
    }

    #[test]
    fn a_sync_call_waits_for_its_own_files_earlier_async_calls() {
        let mut r = Run::new(2);
        let a = r.arrive(0, 0, Async);
        let s = r.arrive(0, 1, Sync);
        let other = r.arrive(1, 0, Async);
        assert_eq!(r.running, [a]);
        assert!(
            !r.is_running(other),
            "the dispatcher is blocked on the sync call"
        );
        r.finish(a);
        assert_eq!(r.running, [s]);
        r.finish(s);
        assert_eq!(r.running, [other]);
    }

    #[test]
    fn bad_arrivals_are_refused_and_change_nothing() {
        let mut s = CallScheduler::new(2, 4);
        s.open_lane(7);
        let spec = |id, seq| CallSpec {
            id,
            lane: 7,
            seq,
            kind: Async,
        };
        assert_eq!(s.arrive(spec(1, 0)).unwrap(), [1]);
        assert!(matches!(
            s.arrive(spec(2, 0)),
            Err(ForwarderError::Invalid { .. })
        ));
        assert!(matches!(
            s.arrive(spec(3, 5)),
            Err(ForwarderError::LimitReached { .. })
        ));
        assert!(matches!(
            s.arrive(CallSpec {
                lane: 8,
                ..spec(4, 0)
            }),
            Err(ForwarderError::Invalid { .. })
        ));
        assert!(s.arrive(spec(5, 1)).unwrap().is_empty());
        assert!(matches!(
            s.arrive(spec(6, 2)),
            Err(ForwarderError::LimitReached { .. })
        ));
        assert_eq!(s.held(), 2);
        s.check_invariants();
    }

    #[test]
    fn closing_a_lane_drops_calls_sent_after_the_close() {
        let mut r = Run::new(1);
        let close = r.arrive(0, 0, Sync);
        let late = r.arrive(0, 1, Async);
        let early = r.arrive(0, 3, Async);
        let dropped = r.s.close_lane(0);
        assert_eq!(dropped.len(), 2);
        assert!(dropped.contains(&late) && dropped.contains(&early));
        r.finish(close);
        assert_eq!(r.s.held(), 0);
        r.s.check_invariants();
    }

    /// Every interleaving of a small mixed workload, driven by a seeded generator: in-lane
    /// order is kept, at most one sync call runs, and nothing starves.
    #[test]
    fn random_workloads_keep_every_promise() {
        for seed in 1..=300u64 {
            let mut rng = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
            let mut next = |n: u64| {
                rng ^= rng << 13;
                rng ^= rng >> 7;
                rng ^= rng << 17;
                rng % n
            };
            let lanes = 1 + next(4);
            let mut r = Run::new(lanes);
            // Each lane's calls, shuffled within the reorder window as the fabric might.
            let mut pending: Vec<(LaneId, u64, CallKind)> = Vec::new();
            for lane in 0..lanes {
                let count = 1 + next(6);
                let mut seqs: Vec<u64> = (0..count).collect();
                for i in (1..seqs.len()).rev() {
                    let j = next(i as u64 + 1) as usize;
                    if i.abs_diff(j) < 4 {
                        seqs.swap(i, j);
                    }
                }
                for seq in seqs {
                    let kind = if next(3) == 0 { Sync } else { Async };
                    pending.push((lane, seq, kind));
                }
            }
            let mut steps = 0;
            while !(pending.is_empty() && r.running.is_empty()) {
                steps += 1;
                assert!(steps < 10_000, "seed {seed}: no progress");
                if !pending.is_empty() && (r.running.is_empty() || next(2) == 0) {
                    // Arrive the next call of a random lane (keeping each lane's own
                    // shuffled order).
                    let lane = pending[next(pending.len() as u64) as usize].0;
                    let index = pending.iter().position(|p| p.0 == lane).unwrap();
                    let (lane, seq, kind) = pending.remove(index);
                    r.arrive(lane, seq, kind);
                } else if !r.running.is_empty() {
                    let id = r.running[next(r.running.len() as u64) as usize];
                    r.finish(id);
                } else {
                    panic!("seed {seed}: calls wait with nothing running");
                }
            }
            assert_eq!(r.s.held(), 0, "seed {seed}: every call finished");
            for lane in 0..lanes {
                let seqs: Vec<u64> = r
                    .started
                    .iter()
                    .map(|id| r.specs[id])
                    .filter(|spec| spec.lane == lane)
                    .map(|spec| spec.seq)
                    .collect();
                let sorted: Vec<u64> = (0..seqs.len() as u64).collect();
                assert_eq!(seqs, sorted, "seed {seed}: lane {lane} ran in seq order");
            }
            assert!(r.s.stats().sync_running_peak <= 1);
        }
    }
}
