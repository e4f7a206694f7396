//! The simulated network's faults: one [`NetworkFaults`] hook on every node, drawing from one
//! seeded generator in the order messages are sent (which the one-thread runtime fixes), and
//! the partitions the run's schedule opens and heals.

use std::collections::BTreeSet;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iopath_fabric::fault::{Fault, FaultHook, SplitMix64};
use iopath_fabric::frame::Header;
use iopath_fabric::nid::Addr;

use crate::events::EventLog;

/// How often each fault hits a message while faults are on.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MessageFaults {
    /// Chance a message is lost.
    pub drop_probability: f64,
    /// Chance a message is held back (by up to `delay_max`).
    pub delay_probability: f64,
    /// Longest hold.
    pub delay_max: Duration,
    /// Chance a bulk payload has one bit flipped (the receiver's checksum must catch it).
    pub flip_probability: f64,
}

impl Default for MessageFaults {
    /// 1% lost, 3% delayed by up to 2 s, 2% of bulk payloads with a bit flipped.
    fn default() -> Self {
        MessageFaults {
            drop_probability: 0.01,
            delay_probability: 0.03,
            delay_max: Duration::from_secs(2),
            flip_probability: 0.02,
        }
    }
}

#[derive(Debug)]
struct State {
    rng: SplitMix64,
    on: bool,
    /// Node numbers cut off from every other node.
    isolated: BTreeSet<u32>,
}

/// The fault hook every simulated node sends through.
#[derive(Debug)]
pub struct NetworkFaults {
    faults: MessageFaults,
    state: Mutex<State>,
    events: Arc<EventLog>,
}

impl NetworkFaults {
    /// Faults per `faults`, decided from `seed`, recorded in `events`; off until
    /// [`NetworkFaults::unleash`].
    pub fn new(seed: u64, faults: MessageFaults, events: Arc<EventLog>) -> Arc<NetworkFaults> {
        Arc::new(NetworkFaults {
            faults,
            state: Mutex::new(State {
                rng: SplitMix64(seed),
                on: false,
                isolated: BTreeSet::new(),
            }),
            events,
        })
    }

    /// Starts injecting message faults.
    pub fn unleash(&self) {
        self.lock().on = true;
    }

    /// Cuts node `number` off: every message to or from it is lost until [`Self::heal`].
    pub fn isolate(&self, number: u32) {
        self.lock().isolated.insert(number);
    }

    /// Ends node `number`'s partition.
    pub fn heal(&self, number: u32) {
        self.lock().isolated.remove(&number);
    }

    /// Ends every partition and stops injecting faults: the run's final recovery.
    pub fn calm(&self) {
        let mut state = self.lock();
        state.on = false;
        state.isolated.clear();
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

fn number(addr: &Addr) -> Option<u32> {
    match addr {
        Addr::Num(n) => Some(*n),
        _ => None,
    }
}

impl FaultHook for NetworkFaults {
    fn on_send(&self, header: &Header, payload_len: usize) -> Fault {
        let mut state = self.lock();
        let ends = [number(&header.source.addr), number(&header.target.addr)];
        if ends.iter().flatten().any(|n| state.isolated.contains(n)) {
            self.events.record(
                "partition_drop",
                format_args!("{:?} {} -> {}", header.kind, header.source, header.target),
            );
            return Fault::Drop;
        }
        if !state.on {
            return Fault::None;
        }
        let plan = self.faults;
        let roll = state.rng.unit();
        let fault = if roll < plan.drop_probability {
            Fault::Drop
        } else if roll < plan.drop_probability + plan.delay_probability {
            let nanos = plan.delay_max.as_nanos() as f64 * state.rng.unit();
            Fault::Delay(Duration::from_nanos(nanos as u64))
        } else if header.is_bulk()
            && payload_len > 0
            && roll < plan.drop_probability + plan.delay_probability + plan.flip_probability
        {
            Fault::Corrupt {
                byte: (state.rng.next() % payload_len as u64) as usize,
            }
        } else {
            Fault::None
        };
        let kind = match fault {
            Fault::None => return fault,
            Fault::Drop => "drop",
            Fault::Delay(_) => "delay",
            Fault::Corrupt { .. } => "bit_flip",
        };
        self.events.record(
            kind,
            format_args!(
                "{:?} {} -> {} ({fault:?})",
                header.kind, header.source, header.target
            ),
        );
        fault
    }
}
