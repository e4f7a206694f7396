//! Credit gates: a [`CreditPool`] that async tasks wait on, and the [`Credit`] a task holds
//! until it drops it. The pool itself (`credits.rs`) is the pure core that counts; a gate adds
//! only a lock and the wake-up of the oldest waiter.
//!
//! Interfaces take their send credits here, per interface and per peer; routers their buffer
//! and per-peer router credits; LNDs carry the credits of a message until it has left.

use std::sync::{Arc, Mutex};

use tokio::sync::oneshot;

use crate::credits::{Acquire, CreditPool, WaiterId};

/// A [`CreditPool`] that async tasks can wait on.
#[derive(Debug)]
pub struct CreditGate {
    pool: Mutex<CreditPool<oneshot::Sender<()>>>,
}

/// One credit taken from a [`CreditGate`]; returned when dropped.
#[derive(Debug)]
pub struct Credit {
    gate: Arc<CreditGate>,
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
        })
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, CreditPool<oneshot::Sender<()>>> {
        self.pool.lock().expect("credit pool lock poisoned")
    }

    /// Takes a credit, waiting in arrival order if none is free.
    pub async fn acquire(self: &Arc<Self>) -> Credit {
        let (granted_tx, granted_rx) = oneshot::channel();
        let id = match self.lock().acquire(granted_tx) {
            Acquire::Granted(_) => {
                return Credit {
                    gate: Arc::clone(self),
                };
            }
            Acquire::Queued(id) => id,
        };
        let mut waiting = Waiting {
            gate: self,
            id,
            granted: false,
        };
        // The sender is only dropped unsent if the pool is dropped, which needs this Arc.
        let _ = granted_rx.await;
        waiting.granted = true;
        Credit {
            gate: Arc::clone(self),
        }
    }

    /// Takes a credit if one is free, without waiting.
    pub fn try_acquire(self: &Arc<Self>) -> Option<Credit> {
        self.lock().try_acquire().then(|| Credit {
            gate: Arc::clone(self),
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
