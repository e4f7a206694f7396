//! The dispatcher at run time: every call on an open file passes through the pure
//! [`CallScheduler`], which says when it may run. A call's RPC task registers a wake-up,
//! tells the scheduler it arrived, sleeps until the scheduler starts it, runs, and tells the
//! scheduler it finished — which may start others. The "worker per open file" is the
//! scheduler's lane for that file; the fyod's one synchronous "thread" is its blocked FIFO.

use std::collections::HashMap;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use tokio::sync::{Semaphore, oneshot};

use crate::error::{ForwarderError, Result};
use crate::limits::{FyodLimits, ServiceNode};
use crate::modes::CallKind;
use crate::policy::scheduler::{CallId, CallScheduler, CallSpec, LaneId, SchedulerStats};

#[derive(Debug)]
struct Shared {
    scheduler: CallScheduler,
    /// Calls accepted and not started: how to wake each (true: run; false: refused).
    waiting: HashMap<CallId, oneshot::Sender<bool>>,
}

/// The dispatcher.
#[derive(Debug)]
pub(crate) struct Dispatch {
    shared: Mutex<Shared>,
    next_call: AtomicU64,
    /// The modeled service node, its CPUs and what it has done.
    node: Option<ModeledNode>,
}

/// A modeled service node at run time.
#[derive(Debug)]
struct ModeledNode {
    model: ServiceNode,
    cpus: Semaphore,
    calls: AtomicU64,
    paged: AtomicU64,
    cpu_micros: AtomicU64,
}

/// What a fyod's modeled service node has done.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ServiceNodeStats {
    /// Calls that took the node's CPU time.
    pub calls: u64,
    /// Of those, calls made while the threads outgrew the memory (each paid the overcommit).
    pub paged_calls: u64,
    /// CPU time they took, host microseconds.
    pub cpu_micros: u64,
}

/// Tells the scheduler a call is done, however its future ends: finished if it started; if it
/// never started, its wake-up is withdrawn and the scheduler finishes it the moment it would
/// start (so the calls behind it in its file still run).
struct Held<'a> {
    dispatch: &'a Dispatch,
    id: CallId,
    /// False once the scheduler has dropped the call (its file was closed).
    live: bool,
}

impl Drop for Held<'_> {
    fn drop(&mut self) {
        if !self.live {
            return;
        }
        let mut shared = self
            .dispatch
            .shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if shared.waiting.remove(&self.id).is_none() {
            let starts = shared.scheduler.finish(self.id);
            wake(&mut shared, starts);
        }
    }
}

/// Wakes started calls. A call whose task has gone away is finished at once, which may start
/// others; bounded by the calls held.
fn wake(shared: &mut Shared, mut starts: Vec<CallId>) {
    while let Some(id) = starts.pop() {
        let woken = shared
            .waiting
            .remove(&id)
            .is_some_and(|tx| tx.send(true).is_ok());
        if !woken {
            starts.extend(shared.scheduler.finish(id));
        }
    }
}

impl Dispatch {
    pub(crate) fn new(limits: &FyodLimits, node: Option<ServiceNode>) -> Dispatch {
        Dispatch {
            shared: Mutex::new(Shared {
                scheduler: CallScheduler::new(limits.calls_queued_max, limits.reorder_window_calls),
                waiting: HashMap::new(),
            }),
            next_call: AtomicU64::new(1),
            node: node.map(|model| ModeledNode {
                cpus: Semaphore::new(model.cpus as usize),
                model,
                calls: AtomicU64::new(0),
                paged: AtomicU64::new(0),
                cpu_micros: AtomicU64::new(0),
            }),
        }
    }

    /// What the modeled service node has done.
    pub(crate) fn service_node_stats(&self) -> ServiceNodeStats {
        self.node
            .as_ref()
            .map_or_else(ServiceNodeStats::default, |n| ServiceNodeStats {
                calls: n.calls.load(Ordering::Relaxed),
                paged_calls: n.paged.load(Ordering::Relaxed),
                cpu_micros: n.cpu_micros.load(Ordering::Relaxed),
            })
    }

    /// A started call's CPU time on the modeled service node: one of its CPUs for the call's
    /// time at the node's present thread count (none without a model).
    async fn take_cpu(&self) {
        let Some(node) = &self.node else {
            return;
        };
        // Never closed, so acquiring cannot fail; if it did, the call would just not wait.
        let _cpu = node.cpus.acquire().await;
        // The threads are the lanes: one per open file, as the scheduler holds them.
        let open = self
            .shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .scheduler
            .lanes_open();
        let took = node.model.call_time(open as u64);
        if took > node.model.call {
            node.paged.fetch_add(1, Ordering::Relaxed);
        }
        node.calls.fetch_add(1, Ordering::Relaxed);
        node.cpu_micros
            .fetch_add(took.as_micros() as u64, Ordering::Relaxed);
        tokio::time::sleep(took).await;
    }

    /// The scheduler's counters.
    pub(crate) fn stats(&self) -> SchedulerStats {
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .scheduler
            .stats()
    }

    /// A new open file's lane.
    pub(crate) fn open_lane(&self, lane: LaneId) {
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .scheduler
            .open_lane(lane);
    }

    /// Closes a lane from inside its close call; calls sent after the close are refused.
    pub(crate) fn close_lane(&self, lane: LaneId) {
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        for id in shared.scheduler.close_lane(lane) {
            if let Some(tx) = shared.waiting.remove(&id) {
                let _ = tx.send(false);
            }
        }
    }

    /// Runs `work` as call `seq` of `lane` when the scheduler says so.
    pub(crate) async fn run<T>(
        &self,
        lane: LaneId,
        seq: u64,
        kind: CallKind,
        work: impl Future<Output = Result<T>>,
    ) -> Result<T> {
        let id = self.next_call.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = oneshot::channel();
        {
            let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            shared.waiting.insert(id, tx);
            let spec = CallSpec {
                id,
                lane,
                seq,
                kind,
            };
            match shared.scheduler.arrive(spec) {
                Ok(starts) => wake(&mut shared, starts),
                Err(e) => {
                    shared.waiting.remove(&id);
                    return Err(e);
                }
            }
        }
        let mut held = Held {
            dispatch: self,
            id,
            live: true,
        };
        // Sleeps here while earlier calls of the file run, or a sync call holds the fyod.
        if !rx.await.unwrap_or(false) {
            held.live = false;
            return Err(ForwarderError::invalid(
                "call",
                format!("handle {lane} was closed by an earlier call"),
            ));
        }
        self.take_cpu().await;
        work.await
    }
}
