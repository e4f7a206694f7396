//! The dispatcher at run time: every call on an open file passes through the pure
//! [`CallScheduler`], which says when it may run. A call's RPC task registers a wake-up,
//! tells the scheduler it arrived, sleeps until the scheduler starts it, runs, and tells the
//! scheduler it finished — which may start others. The "worker per open file" is the
//! scheduler's lane for that file; the fyod's one synchronous "thread" is its blocked FIFO.

use std::collections::HashMap;
use std::future::Future;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};

use tokio::sync::oneshot;

use crate::error::{ForwarderError, Result};
use crate::limits::FyodLimits;
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
        let mut shared = self.dispatch.shared.lock().expect("dispatch lock poisoned");
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
    pub(crate) fn new(limits: &FyodLimits) -> Dispatch {
        Dispatch {
            shared: Mutex::new(Shared {
                scheduler: CallScheduler::new(limits.calls_queued_max, limits.reorder_window_calls),
                waiting: HashMap::new(),
            }),
            next_call: AtomicU64::new(1),
        }
    }

    /// The scheduler's counters.
    pub(crate) fn stats(&self) -> SchedulerStats {
        self.shared
            .lock()
            .expect("dispatch lock poisoned")
            .scheduler
            .stats()
    }

    /// A new open file's lane.
    pub(crate) fn open_lane(&self, lane: LaneId) {
        self.shared
            .lock()
            .expect("dispatch lock poisoned")
            .scheduler
            .open_lane(lane);
    }

    /// Closes a lane from inside its close call; calls sent after the close are refused.
    pub(crate) fn close_lane(&self, lane: LaneId) {
        let mut shared = self.shared.lock().expect("dispatch lock poisoned");
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
            let mut shared = self.shared.lock().expect("dispatch lock poisoned");
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
        work.await
    }
}
