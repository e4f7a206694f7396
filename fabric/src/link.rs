//! A modeled link: what an interface's wire would take, so a miniature stack runs at the speed
//! of the machine it stands for rather than of this host.
//!
//! The model is the interface's **transmit side as a server**: a message occupies the wire for
//! its bytes (header and payload) over the modeled bandwidth, one message at a time, the
//! messages for different next hops taking turns, and arrives the modeled latency after its
//! last byte left. The sender's
//! credits stay held until it arrives — as LNet's do until the LND completes — so a slow link
//! fills the credit queues behind it, and congestion shows where it would on the real machine.
//!
//! Modeled time runs `time_scale` times slower than the host's (a modeled 3.2 GB/s link at
//! scale 20 carries 160 MB/s here; a modeled 2 µs latency takes 40 µs), so that this host can
//! outrun what it models. What is *not* modeled: the switch between interfaces and the receive
//! side (an interface takes what arrives at once), and the host's timers (about 1 ms): a wait
//! shorter than that is rounded up to it.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::frame::{HEADER_BYTES, Message};
use crate::lnd::{Lnd, SendTicket};
use crate::nid::Nid;

/// One network's link, as modeled.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkModel {
    /// Bytes per second of modeled time.
    pub bandwidth_bytes_s: f64,
    /// From a message's last byte leaving to its arrival, modeled time.
    pub latency: Duration,
    /// Host seconds per modeled second (1: real time; 20: twenty times slower).
    pub time_scale: f64,
}

impl LinkModel {
    /// Host time the wire takes to carry `bytes`.
    pub fn wire_time(&self, bytes: u64) -> Duration {
        Duration::from_secs_f64(bytes as f64 / self.bandwidth_bytes_s * self.time_scale)
    }

    /// Host time a message spends in flight after its last byte left.
    pub fn flight_time(&self) -> Duration {
        self.latency.mul_f64(self.time_scale)
    }

    /// The bandwidth this host sees, bytes per second.
    pub fn host_bandwidth_bytes_s(&self) -> f64 {
        self.bandwidth_bytes_s / self.time_scale
    }
}

/// A send waiting for the wire: where, its credits, and since when.
type Waiting = (Nid, Message, SendTicket, Instant);

/// What the wire counted: messages that found it busy, and their time queued for it — a
/// network-level stall, as Gemini's congestion counters see one.
#[derive(Debug, Default)]
pub struct LinkCounters {
    /// Messages that queued for the wire.
    pub waits: AtomicU64,
    /// Their time queued, nanoseconds.
    pub waited_ns: AtomicU64,
}

/// How far the wire's clock may run ahead of the host's before the wire task sleeps: the
/// host's timers tick in milliseconds, and a small message takes microseconds, so the wire
/// sleeps off its debt in whole ticks rather than a tick per message.
const AHEAD: Duration = Duration::from_millis(1);

/// An interface's modeled wire. Sends wait in a queue per next hop; the wire serves the
/// queues in turn, a message at a time (two flows to two peers get half the link each, as
/// packets interleave on a real one), then each message flies for the latency and is handed
/// to the LND in the order it left. Its memory is bounded by the interface's send credits:
/// every message in it holds one.
#[derive(Debug)]
pub(crate) struct Link {
    queue: mpsc::UnboundedSender<Waiting>,
    counters: Arc<LinkCounters>,
}

impl Link {
    /// A link per `model` in front of `lnd`; its tasks end when the link is dropped.
    pub(crate) fn new(model: LinkModel, lnd: Arc<dyn Lnd>) -> Link {
        let (queue, waiting) = mpsc::unbounded_channel::<Waiting>();
        let (flying, landing) = mpsc::unbounded_channel::<(Instant, Waiting)>();
        let counters = Arc::new(LinkCounters::default());
        tokio::spawn(wire(model, waiting, flying, Arc::clone(&counters)));
        tokio::spawn(flight(landing, lnd));
        Link { queue, counters }
    }

    /// What the wire counted.
    pub(crate) fn counters(&self) -> &LinkCounters {
        &self.counters
    }

    /// Queues `message` for the wire; the LND gets it when it arrives.
    pub(crate) fn send(&self, next_hop: Nid, message: Message, ticket: SendTicket) {
        if let Err(mpsc::error::SendError((_, _, ticket, _))) =
            self.queue.send((next_hop, message, ticket, Instant::now()))
        {
            ticket.fail(crate::error::FabricError::ShuttingDown);
        }
    }
}

/// The wire: serves the next hops' queues in turn, each message for its bytes' time.
async fn wire(
    model: LinkModel,
    mut waiting: mpsc::UnboundedReceiver<Waiting>,
    flying: mpsc::UnboundedSender<(Instant, Waiting)>,
    counters: Arc<LinkCounters>,
) {
    let mut queues: HashMap<Nid, VecDeque<(Message, SendTicket, Instant)>> = HashMap::new();
    let mut turns: VecDeque<Nid> = VecDeque::new();
    let mut clock = Instant::now();
    loop {
        // Take what has arrived; wait only when nothing is queued.
        loop {
            let next = if turns.is_empty() {
                let Some(w) = waiting.recv().await else {
                    return;
                };
                // The wire was idle: it starts again now. (While busy, it keeps its own
                // clock, so the host's late wake-ups do not add up.)
                clock = clock.max(Instant::now());
                Some(w)
            } else {
                waiting.try_recv().ok()
            };
            let Some((hop, message, ticket, since)) = next else {
                break;
            };
            let queue = queues.entry(hop).or_default();
            if queue.is_empty() {
                turns.push_back(hop);
            }
            queue.push_back((message, ticket, since));
        }
        let Some(hop) = turns.pop_front() else {
            continue;
        };
        let Some(queue) = queues.get_mut(&hop) else {
            continue;
        };
        let Some((message, ticket, since)) = queue.pop_front() else {
            continue;
        };
        if queue.is_empty() {
            queues.remove(&hop);
        } else {
            turns.push_back(hop);
        }
        // It starts when the wire is done with those before it.
        let queued = clock.saturating_duration_since(since);
        if !queued.is_zero() {
            counters.waits.fetch_add(1, Ordering::Relaxed);
            counters
                .waited_ns
                .fetch_add(queued.as_nanos() as u64, Ordering::Relaxed);
        }
        let bytes = (HEADER_BYTES + message.payload.len()) as u64;
        clock += model.wire_time(bytes);
        if clock > Instant::now() + AHEAD {
            tokio::time::sleep_until(clock).await;
        }
        if flying
            .send((clock + model.flight_time(), (hop, message, ticket, since)))
            .is_err()
        {
            return;
        }
    }
}

/// The flight: each message reaches the LND when it arrives, in the order it left.
async fn flight(mut landing: mpsc::UnboundedReceiver<(Instant, Waiting)>, lnd: Arc<dyn Lnd>) {
    while let Some((arrives, (hop, message, ticket, _))) = landing.recv().await {
        if arrives > Instant::now() + AHEAD {
            tokio::time::sleep_until(arrives).await;
        }
        lnd.send(hop, message, ticket);
    }
}
