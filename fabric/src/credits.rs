//! Credit accounting as LNet does it, as a pure core: no locks, no clocks, no sockets.
//!
//! A [`CreditPool`] is one counter from `lctl get_param peers` or `nis`: `max` credits, a
//! current count that goes **negative by the number of queued senders**, and `min`, the lowest
//! the count has ever been (how bad the worst backlog was). A sender takes a credit or joins
//! the queue; when a send completes — whether it succeeded or failed — its credit comes back
//! and goes straight to the oldest waiter.
//!
//! The async wrapper that parks real tasks on a pool is `CreditGate`, in `gate.rs`, one layer
//! up: this module imports nothing from the rest of the crate.

use std::collections::VecDeque;

/// Identifies a queued waiter so that it can leave the queue if it gives up.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WaiterId(u64);

/// The outcome of asking for a credit.
#[derive(Debug, PartialEq, Eq)]
pub enum Acquire<W> {
    /// A credit was free; the waiter is handed back and may send now.
    Granted(W),
    /// No credit: the waiter is queued and will be returned by a later [`CreditPool::release`].
    Queued(WaiterId),
}

/// One pool of credits with LNet's accounting.
#[derive(Debug)]
pub struct CreditPool<W> {
    credits_max: u32,
    /// Free credits minus queued waiters: LNet's `tx`/`cr` column.
    credits: i64,
    /// The lowest `credits` has been since creation: LNet's `min`.
    credits_min: i64,
    queue: VecDeque<(WaiterId, W)>,
    next_waiter: u64,
}

impl<W> CreditPool<W> {
    /// A pool with `credits_max` credits, all free.
    pub fn new(credits_max: u32) -> Self {
        assert!(credits_max > 0, "a pool with no credits could never send");
        CreditPool {
            credits_max,
            credits: i64::from(credits_max),
            credits_min: i64::from(credits_max),
            queue: VecDeque::new(),
            next_waiter: 0,
        }
    }

    /// Takes a credit for `waiter`, or queues it.
    pub fn acquire(&mut self, waiter: W) -> Acquire<W> {
        self.credits -= 1;
        self.credits_min = self.credits_min.min(self.credits);
        let outcome = if self.credits >= 0 {
            Acquire::Granted(waiter)
        } else {
            let id = WaiterId(self.next_waiter);
            self.next_waiter += 1;
            self.queue.push_back((id, waiter));
            Acquire::Queued(id)
        };
        self.check();
        outcome
    }

    /// Takes a credit only if one is free and nobody is queued; never queues.
    pub fn try_acquire(&mut self) -> bool {
        if self.credits > 0 {
            self.credits -= 1;
            self.credits_min = self.credits_min.min(self.credits);
            self.check();
            true
        } else {
            false
        }
    }

    /// Returns one credit. If anyone is queued, the credit passes to the oldest waiter, which
    /// is returned: it now holds a credit and may send.
    pub fn release(&mut self) -> Option<W> {
        assert!(self.in_flight() > 0, "credit released that was never taken");
        self.credits += 1;
        let next = self.queue.pop_front().map(|(_, waiter)| waiter);
        self.check();
        next
    }

    /// Removes a waiter that gave up before it was granted. Returns false if it is not
    /// queued — it was already granted, and the caller now holds a credit to release.
    pub fn cancel(&mut self, id: WaiterId) -> bool {
        let Some(index) = self.queue.iter().position(|(queued, _)| *queued == id) else {
            return false;
        };
        self.queue.remove(index);
        self.credits += 1;
        self.check();
        true
    }

    /// The configured number of credits.
    pub fn credits_max(&self) -> u32 {
        self.credits_max
    }

    /// Free credits, negative by the queue length (LNet's `tx` column).
    pub fn credits(&self) -> i64 {
        self.credits
    }

    /// The lowest [`CreditPool::credits`] has been (LNet's `min` column).
    pub fn credits_min(&self) -> i64 {
        self.credits_min
    }

    /// Senders waiting for a credit.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Credits held by senders right now.
    pub fn in_flight(&self) -> u32 {
        let held = i64::from(self.credits_max) - self.credits - self.queue.len() as i64;
        u32::try_from(held).unwrap_or(u32::MAX)
    }

    /// Forgets the low-water mark, as writing to LNet's `peers` file does.
    pub fn reset_min(&mut self) {
        self.credits_min = self.credits;
    }

    fn check(&self) {
        let held = i64::from(self.credits_max) - self.credits - self.queue.len() as i64;
        assert!(
            (0..=i64::from(self.credits_max)).contains(&held),
            "credits in flight {held} outside 0..={}",
            self.credits_max
        );
        assert!(
            self.queue.is_empty() || self.credits == -(self.queue.len() as i64),
            "waiters queued while credits are free"
        );
        assert!(self.credits_min <= self.credits);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lnet_accounting_goes_negative_by_the_queue_length() {
        let mut pool = CreditPool::new(2);
        assert_eq!(pool.acquire("a"), Acquire::Granted("a"));
        assert_eq!(pool.acquire("b"), Acquire::Granted("b"));
        assert_eq!(pool.credits(), 0);
        assert!(matches!(pool.acquire("c"), Acquire::Queued(_)));
        assert!(matches!(pool.acquire("d"), Acquire::Queued(_)));
        assert_eq!(
            (pool.credits(), pool.credits_min(), pool.queued()),
            (-2, -2, 2)
        );
        assert_eq!(pool.in_flight(), 2);
        // Credits pass to waiters in arrival order.
        assert_eq!(pool.release(), Some("c"));
        assert_eq!(pool.release(), Some("d"));
        assert_eq!((pool.credits(), pool.queued(), pool.in_flight()), (0, 0, 2));
        assert_eq!(pool.release(), None);
        assert_eq!(pool.release(), None);
        // All back; `min` remembers the worst.
        assert_eq!(
            (pool.credits(), pool.credits_min(), pool.in_flight()),
            (2, -2, 0)
        );
        pool.reset_min();
        assert_eq!(pool.credits_min(), 2);
    }

    #[test]
    fn a_cancelled_waiter_gives_its_place_back() {
        let mut pool = CreditPool::new(1);
        assert_eq!(pool.acquire(1), Acquire::Granted(1));
        let Acquire::Queued(second) = pool.acquire(2) else {
            panic!("should queue")
        };
        let Acquire::Queued(_third) = pool.acquire(3) else {
            panic!("should queue")
        };
        assert!(pool.cancel(second));
        assert!(!pool.cancel(second), "cancelling twice finds nothing");
        assert_eq!(pool.credits(), -1);
        assert_eq!(pool.release(), Some(3));
        assert_eq!(pool.release(), None);
        assert_eq!(pool.credits(), 1);
    }

    #[test]
    #[should_panic(expected = "never taken")]
    fn releasing_more_than_taken_is_a_bug() {
        let mut pool: CreditPool<()> = CreditPool::new(1);
        pool.release();
    }

    /// Every interleaving of acquire/release/cancel over a small pool keeps the invariants
    /// (checked by `check()` inside every call) and ends with all credits back.
    #[test]
    fn random_histories_keep_the_invariants() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for max in 1..=4u32 {
            for _ in 0..200 {
                let mut pool = CreditPool::new(max);
                let mut holders = 0u32;
                let mut queued = Vec::new();
                for step in 0..200u32 {
                    match next() % 3 {
                        0 => match pool.acquire(step) {
                            Acquire::Granted(_) => holders += 1,
                            Acquire::Queued(id) => queued.push(id),
                        },
                        1 if holders > 0 => {
                            if pool.release().is_some() {
                                queued.remove(0);
                            } else {
                                holders -= 1;
                            }
                        }
                        _ if !queued.is_empty() => {
                            let index = (next() % queued.len() as u64) as usize;
                            assert!(pool.cancel(queued.remove(index)));
                        }
                        _ => {}
                    }
                    assert_eq!(pool.in_flight(), holders);
                    assert!(holders <= max, "in flight never exceeds max");
                    assert_eq!(pool.queued(), queued.len());
                }
                while holders > 0 {
                    if pool.release().is_some() {
                        queued.remove(0);
                    } else {
                        holders -= 1;
                    }
                }
                assert_eq!(pool.credits(), i64::from(max), "all credits back when idle");
            }
        }
    }
}
