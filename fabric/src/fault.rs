//! A seeded fault hook on the send path: drop, delay or corrupt chosen messages.
//!
//! Tests install a [`FaultHook`] on a node; every message the node sends is shown to it after
//! credits are taken and before the LND sees it. [`SeededFaults`] decides from a seeded
//! generator: the sequence of decisions is fixed by the seed, and so is the run wherever the
//! order of sends is (one task, or the in-memory LND driven by one sender); where tasks race
//! on several threads, which message meets which decision can differ from run to run, so tests
//! print the seed and check properties that hold for every such order.

use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use crate::frame::{Header, Kind};

/// What happens to one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fault {
    /// Sent as it is.
    None,
    /// Lost on the wire.
    Drop,
    /// Arrives this much later.
    Delay(Duration),
    /// One payload byte flipped; the checksum in the header is left as the sender wrote it.
    Corrupt {
        /// Index of the byte, within the payload.
        byte: usize,
    },
}

/// Decides the fate of each message a node sends.
pub trait FaultHook: Send + Sync + fmt::Debug + 'static {
    /// Called once per message, with its header and payload length.
    fn on_send(&self, header: &Header, payload_len: usize) -> Fault;
}

/// Which messages a fault plan applies to.
#[derive(Debug, Clone, Default)]
pub struct MessageFilter {
    /// Only these kinds (all kinds if empty).
    pub kinds: Vec<Kind>,
    /// Only these portals (all portals if empty). ACK and REPLY frames have portal 0.
    pub portals: Vec<u32>,
}

impl MessageFilter {
    /// Whether `header` is selected.
    pub fn matches(&self, header: &Header) -> bool {
        (self.kinds.is_empty() || self.kinds.contains(&header.kind))
            && (self.portals.is_empty() || self.portals.contains(&header.portal))
    }
}

/// Probabilities of each fault for selected messages.
#[derive(Debug, Clone, Default)]
pub struct FaultPlan {
    /// Which messages may be hit.
    pub filter: MessageFilter,
    /// Chance a selected message is dropped.
    pub drop_probability: f64,
    /// Chance a selected message is delayed (by up to `delay_max`).
    pub delay_probability: f64,
    /// Longest delay.
    pub delay_max: Duration,
    /// Chance a selected message with a payload has a byte flipped.
    pub corrupt_probability: f64,
    /// Stop injecting after this many faults (`u64::MAX` for no limit).
    pub faults_max: u64,
}

/// A [`FaultHook`] driven by a seeded generator.
#[derive(Debug)]
pub struct SeededFaults {
    seed: u64,
    plan: FaultPlan,
    rng: Mutex<SplitMix64>,
    injected: AtomicU64,
}

impl SeededFaults {
    /// Faults per `plan`, reproducible from `seed`.
    pub fn new(seed: u64, plan: FaultPlan) -> SeededFaults {
        SeededFaults {
            seed,
            plan,
            rng: Mutex::new(SplitMix64(seed)),
            injected: AtomicU64::new(0),
        }
    }

    /// The seed, for a test to print.
    pub fn seed(&self) -> u64 {
        self.seed
    }

    /// Faults injected so far.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }
}

impl FaultHook for SeededFaults {
    fn on_send(&self, header: &Header, payload_len: usize) -> Fault {
        if !self.plan.filter.matches(header) || self.injected() >= self.plan.faults_max {
            return Fault::None;
        }
        let mut rng = self.rng.lock().unwrap_or_else(PoisonError::into_inner);
        let roll = rng.unit();
        let plan = &self.plan;
        let fault = if roll < plan.drop_probability {
            Fault::Drop
        } else if roll < plan.drop_probability + plan.delay_probability {
            let nanos = plan.delay_max.as_nanos() as f64 * rng.unit();
            Fault::Delay(Duration::from_nanos(nanos as u64))
        } else if payload_len > 0
            && roll < plan.drop_probability + plan.delay_probability + plan.corrupt_probability
        {
            Fault::Corrupt {
                byte: (rng.next() % payload_len as u64) as usize,
            }
        } else {
            Fault::None
        };
        if fault != Fault::None {
            self.injected.fetch_add(1, Ordering::Relaxed);
        }
        fault
    }
}

/// SplitMix64, kept in the topology model (the crate below this one) so that both use one.
pub use iopath_topology::random::SplitMix64;
