//! Credit gates: a [`CreditPool`] that async tasks wait on, and the [`Credit`] a task holds
//! until it drops it. The pool itself (`credits.rs`) is the pure core that counts; a gate adds
//! only a lock and the wake-up of the oldest waiter.
//!
//! Interfaces take their send credits here, per interface and per peer; routers their buffer
//! and per-peer router credits; LNDs carry the credits of a message until it has left.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::sync::oneshot;
use tokio::time::Instant;

use crate::credits::{Acquire, CreditPool, WaiterId};

/// A [`CreditPool`] that async tasks can wait on.
///
/// Besides LNet's counters it keeps what IORCD-style congestion sampling reads: how many
/// acquisitions had to wait, and for how long in all.
#[derive(Debug)]
pub struct CreditGate {
    pool: Mutex<CreditPool<oneshot::Sender<()>>>,
    /// Acquisitions that queued and were granted.
    waits: AtomicU64,
    /// Their time in the queue, nanoseconds, summed.
    waited_ns: AtomicU64,
}

/// One credit taken from a [`CreditGate`]; returned when dropped.
#[derive(Debug)]
pub struct Credit {
    gate: Arc<CreditGate>,
    /// How long its taker queued for it (zero when one was free).
    waited: Duration,
    /// The pool's count right after its taker asked: negative by the takers queued, itself
    /// among them, had it to queue.
    credits_left: i64,
}

impl Credit {
    /// How long its taker queued for it: zero when one was free.
    pub fn waited(&self) -> Duration {
        self.waited
    }

    /// The pool's count right after its taker asked for it, as LNet's `tx` column showed it
    /// at that moment: negative by the takers queued, itself among them, had it to queue. A
    /// value the pool really held, so never below its `min`.
    pub fn credits_left(&self) -> i64 {
        self.credits_left
    }
}

impl Drop for Credit {
    fn drop(&mut self) {
        self.gate.release();
    }
}

/// Removes a waiter from the queue if its task gives up before it is granted.
struct Waiting<'a> {
    gate: &'a Arc<CreditGate>,
    id: WaiterId,
    granted: bool,
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        if self.granted {
            return;
        }
        let mut pool = self.gate.lock();
        if !pool.cancel(self.id) {
            // Granted between our last poll and now: the credit is ours to give back.
            drop(pool);
            self.gate.release();
        }
    }
}

impl CreditGate {
    /// A gate over `credits_max` credits.
    pub fn new(credits_max: u32) -> Arc<CreditGate> {
        Arc::new(CreditGate {
            pool: Mutex::new(CreditPool::new(credits_max)),
            waits: AtomicU64::new(0),
            waited_ns: AtomicU64::new(0),
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CreditPool<oneshot::Sender<()>>> {
        self.pool.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Takes a credit, waiting in arrival order if none is free.
    pub async fn acquire(self: &Arc<Self>) -> Credit {
        let (granted_tx, granted_rx) = oneshot::channel();
        // The count is read under the same lock as the acquisition: the one this taker left.
        let (outcome, credits_left) = {
            let mut pool = self.lock();
            let outcome = pool.acquire(granted_tx);
            (outcome, pool.credits())
        };
        let id = match outcome {
            Acquire::Granted(_) => {
                return Credit {
                    gate: Arc::clone(self),
                    waited: Duration::ZERO,
                    credits_left,
                };
            }
            Acquire::Queued(id) => id,
        };
        let mut waiting = Waiting {
            gate: self,
            id,
            granted: false,
        };
        let queued = Instant::now();
        // The sender is only dropped unsent if the pool is dropped, which needs this Arc.
        let _ = granted_rx.await;
        waiting.granted = true;
        let waited = queued.elapsed();
        self.waits.fetch_add(1, Ordering::Relaxed);
        self.waited_ns.fetch_add(
            u64::try_from(waited.as_nanos()).unwrap_or(u64::MAX),
            Ordering::Relaxed,
        );
        Credit {
            gate: Arc::clone(self),
            waited,
            credits_left,
        }
    }

    /// Takes a credit if one is free, without waiting.
    pub fn try_acquire(self: &Arc<Self>) -> Option<Credit> {
        let mut pool = self.lock();
        pool.try_acquire().then(|| Credit {
            gate: Arc::clone(self),
            waited: Duration::ZERO,
            credits_left: pool.credits(),
        })
    }

    fn release(&self) {
        let mut pool = self.lock();
        // Hand the credit to the oldest waiter still waiting. A waiter whose receiver is gone
        // is mid-cancel and will find itself granted and release again, so sending is enough.
        if let Some(next) = pool.release() {
            let _ = next.send(());
        }
    }

    /// A snapshot of the counters, for views and tests.
    pub fn snapshot(&self) -> CreditSnapshot {
        let pool = self.lock();
        CreditSnapshot {
            credits_max: pool.credits_max(),
            credits: pool.credits(),
            credits_min: pool.credits_min(),
            in_flight: pool.in_flight(),
            queued: pool.queued(),
            waits: self.waits.load(Ordering::Relaxed),
            waited: Duration::from_nanos(self.waited_ns.load(Ordering::Relaxed)),
        }
    }

    /// Forgets the low-water mark.
    pub fn reset_min(&self) {
        self.lock().reset_min();
    }
}

/// The counters of one credit pool at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CreditSnapshot {
    /// Acquisitions that had to queue for a credit, since the gate was made.
    pub waits: u64,
    /// Their time queued, summed: the congestion a sampler differences between samples.
    pub waited: Duration,
    /// Configured credits (`max`).
    pub credits_max: u32,
    /// Free credits, negative by the queue length (`tx`).
    pub credits: i64,
    /// Lowest `credits` seen (`min`).
    pub credits_min: i64,
    /// Credits held by sends in progress.
    pub in_flight: u32,
    /// Sends waiting for a credit.
    pub queued: usize,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn a_gate_counts_its_waits_and_their_time() {
        let gate = CreditGate::new(1);
        let held = gate.acquire().await;
        let held_left = held.credits_left();
        assert_eq!(gate.snapshot().waits, 0, "a free credit is no wait");
        let waiter = tokio::spawn({
            let gate = Arc::clone(&gate);
            async move { gate.acquire().await }
        });
        tokio::task::yield_now().await;
        assert_eq!(gate.snapshot().queued, 1);
        tokio::time::sleep(Duration::from_millis(5)).await;
        drop(held);
        let second = waiter.await.unwrap();
        // Each credit says the count its taker left: the first took the last, the second
        // queued, one below zero, and the pool's `min` remembers it.
        assert_eq!((held_left, second.credits_left()), (0, -1));
        let snapshot = gate.snapshot();
        assert_eq!(snapshot.credits_min, -1);
        assert_eq!(snapshot.waits, 1);
        assert_eq!(snapshot.waited, Duration::from_millis(5));
        // A waiter that gives up is not counted: it was never granted.
        let gave_up = tokio::time::timeout(Duration::from_millis(3), gate.acquire()).await;
        assert!(gave_up.is_err());
        drop(second);
        assert_eq!(gate.snapshot().waits, 1);
        assert_eq!(gate.snapshot().credits, 1, "every credit back");
    }
}
