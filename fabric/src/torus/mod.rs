//! A modeled torus: messages between two nodes cross the dimension-order route **hop by hop**,
//! every directed link a server of its own bandwidth, so that the papers' findings — the
//! geometric loss along a chain of senders, the saturation of a shared link, what placement
//! and router choice do to them — come from iopath's own traffic instead of a formula.
//!
//! The model is the SeaStar/Gemini router as the Spider paper (000) describes it. A message
//! is cut into packets. A packet leaves its node through the node's **injection port**,
//! crosses each link of its dimension-order path ([`iopath_topology::Torus::dor_path`]) and
//! reaches the destination through its **ejection port**. Every port is a server: one packet
//! at a time, for its bytes over the port's bandwidth, then the hop's latency. A port serves
//! its **input ports in turn** (round-robin, one packet each, blind to how far a packet has
//! come — "locally fair, globally unfair"), and a packet may leave only when the next router
//! has room for it on that input (a few packets of buffer per input): so a link that is full
//! holds back the links before it, and back-pressure carries its share upstream. For a line
//! of senders into one link this gives the node next to the link half of it, the next a
//! quarter, and so on — 000's chain — without the model ever computing it.
//!
//! Input buffers are kept per virtual channel: a packet that has wrapped round a ring (its
//! dateline) uses the second one, as tori do, so the rings of a loaded torus cannot lock up.
//!
//! The sender's credits stay held until the message's last packet is ejected, as on a
//! modeled link ([`crate::link`]); the message then reaches the LND whole. Modeled time runs
//! `time_scale` times slower than the host's. All the ports of one network are served by one
//! task, in one process. Nodes in other processes reach it through its [`switch`]: they tell
//! it what they send, it models the packets, and tells them when the last is ejected; the
//! bytes themselves go by their own LND. The host's timers tick in milliseconds: the model
//! runs up to [`AHEAD`] ahead of the host's clock and delivers that early.

use std::cmp::Ordering as CmpOrdering;
use std::collections::{BinaryHeap, HashMap, VecDeque};
use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use iopath_topology::Direction;
use tokio::sync::mpsc;
use tokio::time::Instant;

use crate::error::FabricError;
use crate::frame::{HEADER_BYTES, Message};
use crate::lnd::{Lnd, SendTicket};
use crate::nid::Nid;

mod handle;
mod model;
pub mod switch;

pub use model::{TorusModel, TorusNode};

/// How far the model may run ahead of the host's clock (the host's timers tick in
/// milliseconds; a packet takes less).
pub const AHEAD: Duration = Duration::from_millis(1);
/// Packets a router buffers per input port and virtual channel.
pub const INPUT_BUFFER_PACKETS: u32 = 2;
/// Default packet size, bytes: a 1 MiB bulk chunk is 16 packets.
pub const PACKET_BYTES_DEFAULT: u32 = 64 * 1024;

/// What one port carried.
#[derive(Debug, Default)]
struct PortCounters {
    /// Bytes sent.
    bytes: AtomicU64,
    /// Host time sending, nanoseconds.
    busy_ns: AtomicU64,
    /// Packets that waited before leaving (port busy, or no room ahead).
    waits: AtomicU64,
    /// Their time waiting, nanoseconds.
    waited_ns: AtomicU64,
}

/// What one directed torus link carried, in host time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LinkLoad {
    /// The link.
    pub link: iopath_topology::Link,
    /// Bytes it carried.
    pub bytes: u64,
    /// Host time it was sending.
    pub busy: Duration,
    /// Packets that waited for it (it was busy, or the router after it had no room).
    pub waits: u64,
    /// Their time waiting.
    pub waited: Duration,
}

/// A modeled torus, shared by the interfaces of every node on it. Cloning gives another
/// handle; the model's task ends when the last handle of this process, and the last
/// connection to its switch, are gone.
#[derive(Clone)]
pub struct TorusNetwork {
    via: Via,
    shared: Arc<Shared>,
}

/// Where a handle's messages are modeled.
#[derive(Clone)]
enum Via {
    /// The model's task in this process.
    Engine(mpsc::UnboundedSender<Injection>),
    /// The model runs in another process: its switch, over a connection.
    Switch(Arc<handle::Connection>),
}

struct Shared {
    model: TorusModel,
    counters: Vec<PortCounters>,
    nodes: HashMap<Nid, usize>,
}

impl Shared {
    fn of(model: TorusModel) -> Shared {
        let ports = model.torus.link_count() + 2 * model.nodes.len();
        Shared {
            counters: (0..ports).map(|_| PortCounters::default()).collect(),
            nodes: model
                .nodes
                .iter()
                .enumerate()
                .map(|(i, n)| (n.nid, i))
                .collect(),
            model,
        }
    }
}

impl fmt::Debug for TorusNetwork {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("TorusNetwork")
            .field("dims", &self.shared.model.torus.dims())
            .field("nodes", &self.shared.model.nodes.len())
            .finish()
    }
}

/// A message handed to the torus: its sender and receiver (indices among the model's
/// nodes), its size, and what becomes of it once its last packet is ejected.
struct Injection {
    from: usize,
    to: usize,
    bytes: u64,
    onward: Onward,
}

/// What becomes of a message once its last packet is out of the torus.
#[expect(
    clippy::large_enum_variant,
    reason = "one per message in the model, moved once: boxing would cost an allocation each"
)]
enum Onward {
    /// Its sender is in this process: the message goes to the sender's LND.
    Here {
        message: Message,
        ticket: SendTicket,
        lnd: Arc<dyn Lnd>,
    },
    /// Its sender is in another process: the switch tells it, by the number it gave.
    There {
        id: u64,
        done: mpsc::UnboundedSender<handle::Done>,
    },
}

impl Onward {
    /// The last packet is out: on to `to`.
    fn deliver(self, to: Nid) {
        match self {
            Onward::Here {
                message,
                ticket,
                lnd,
            } => lnd.send(to, message, ticket),
            Onward::There { id, done } => {
                // A sender gone since has nothing left to tell.
                let _ = done.send(handle::Done {
                    id,
                    status: handle::EJECTED,
                });
            }
        }
    }

    /// The message will not get through.
    fn fail(self, error: FabricError) {
        match self {
            Onward::Here { ticket, .. } => ticket.fail(error),
            Onward::There { id, done } => {
                // The model drops a message it took only when it stops.
                let _ = done.send(handle::Done {
                    id,
                    status: handle::STOPPING,
                });
            }
        }
    }
}

impl TorusNetwork {
    /// Starts the model's task (inside a Tokio runtime).
    pub fn start(model: TorusModel) -> TorusNetwork {
        let shared = Arc::new(Shared::of(model));
        let (injections, waiting) = mpsc::unbounded_channel();
        tokio::spawn(Engine::new(Arc::clone(&shared)).run(waiting));
        TorusNetwork {
            via: Via::Engine(injections),
            shared,
        }
    }

    /// A handle on `model` as it runs in another process, whose switch `connection` reaches.
    fn switched(model: TorusModel, connection: Arc<handle::Connection>) -> TorusNetwork {
        TorusNetwork {
            via: Via::Switch(connection),
            shared: Arc::new(Shared::of(model)),
        }
    }

    /// The model it runs.
    pub fn model(&self) -> &TorusModel {
        &self.shared.model
    }

    /// Whether `nid` is one of its nodes.
    pub fn has(&self, nid: Nid) -> bool {
        self.shared.nodes.contains_key(&nid)
    }

    /// Sends `message` from `from` to `next_hop` across the torus; `lnd` gets it when its last
    /// packet is ejected. A sender or receiver that is not on the torus is refused with the
    /// ticket failed (the stack builds the model from every node on the network).
    pub(crate) fn send(
        &self,
        from: Nid,
        next_hop: Nid,
        message: Message,
        ticket: SendTicket,
        lnd: Arc<dyn Lnd>,
    ) {
        let (Some(&from_index), Some(&to_index)) = (
            self.shared.nodes.get(&from),
            self.shared.nodes.get(&next_hop),
        ) else {
            ticket.fail(FabricError::Unreachable {
                peer: next_hop,
                why: format!(
                    "{from} or {next_hop} has no coordinate on the modeled torus of {}",
                    from.net
                ),
            });
            return;
        };
        let bytes = (HEADER_BYTES + message.payload.len()) as u64;
        match &self.via {
            Via::Engine(injections) => {
                let injection = Injection {
                    from: from_index,
                    to: to_index,
                    bytes,
                    onward: Onward::Here {
                        message,
                        ticket,
                        lnd,
                    },
                };
                if let Err(mpsc::error::SendError(injection)) = injections.send(injection) {
                    injection.onward.fail(FabricError::ShuttingDown);
                }
            }
            Via::Switch(connection) => connection.send(
                (from_index, to_index),
                bytes,
                handle::Held {
                    to: next_hop,
                    message,
                    ticket,
                    lnd,
                },
            ),
        }
    }

    /// What every directed link has carried so far, in link-number order (all zeros on a
    /// handle whose model runs in another process: it counts there).
    pub fn link_loads(&self) -> Vec<LinkLoad> {
        let torus = &self.shared.model.torus;
        (0..torus.link_count())
            .map(|i| {
                let c = &self.shared.counters[i];
                LinkLoad {
                    link: torus.link(i),
                    bytes: c.bytes.load(Ordering::Relaxed),
                    busy: Duration::from_nanos(c.busy_ns.load(Ordering::Relaxed)),
                    waits: c.waits.load(Ordering::Relaxed),
                    waited: Duration::from_nanos(c.waited_ns.load(Ordering::Relaxed)),
                }
            })
            .collect()
    }

    /// Packets `nid` injected that waited for its injection port, and their time waiting.
    pub fn injection_waits(&self, nid: Nid) -> (u64, Duration) {
        self.shared
            .nodes
            .get(&nid)
            .map_or((0, Duration::ZERO), |&n| {
                let c = &self.shared.counters[self.shared.model.torus.link_count() + 2 * n];
                (
                    c.waits.load(Ordering::Relaxed),
                    Duration::from_nanos(c.waited_ns.load(Ordering::Relaxed)),
                )
            })
    }
}

/// A port's number: the torus links first (in [`iopath_topology::Torus::link_index`]
/// order), then each node's injection and ejection ports.
type PortId = u32;

/// Where a packet waits at a port: which port it came from and on which virtual channel, or,
/// at an injection port, which node it is going to (so destinations take turns).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum InputKey {
    From(PortId, u8),
    To(u32),
}

/// One step of a packet's route: the port, and the virtual channel it arrives on there.
#[derive(Debug, Clone, Copy)]
struct Step {
    port: PortId,
    vc: u8,
}

#[derive(Debug)]
struct Packet {
    message: u64,
    bytes: u32,
    route: Arc<[Step]>,
    /// Index into `route` of the port it is at.
    hop: u16,
    /// Since when it has waited at that port.
    since: Instant,
}

#[derive(Debug)]
struct Input {
    key: InputKey,
    queue: VecDeque<Packet>,
    /// Packets queued plus those on their way here (room is taken before they leave).
    held: u32,
}

struct Port {
    /// Host nanoseconds per byte.
    ns_per_byte: f64,
    /// Host time from leaving this port to reaching the next.
    latency: Duration,
    busy: bool,
    inputs: Vec<Input>,
    /// The input to look at first next time.
    turn: usize,
}

impl Port {
    fn input(&mut self, key: InputKey) -> &mut Input {
        let at = match self.inputs.iter().position(|i| i.key == key) {
            Some(at) => at,
            None => {
                self.inputs.push(Input {
                    key,
                    queue: VecDeque::new(),
                    held: 0,
                });
                self.inputs.len() - 1
            }
        };
        &mut self.inputs[at]
    }

    fn has_room(&self, key: InputKey) -> bool {
        self.inputs
            .iter()
            .find(|i| i.key == key)
            .is_none_or(|i| i.held < INPUT_BUFFER_PACKETS)
    }
}

enum Event {
    /// A port has sent its packet.
    Sent { port: PortId, packet: Packet },
    /// A packet has reached the port its route goes on to.
    Arrived { packet: Packet },
}

struct Timed {
    at: Instant,
    seq: u64,
    event: Event,
}

impl PartialEq for Timed {
    fn eq(&self, other: &Self) -> bool {
        (self.at, self.seq) == (other.at, other.seq)
    }
}
impl Eq for Timed {}
impl PartialOrd for Timed {
    fn partial_cmp(&self, other: &Self) -> Option<CmpOrdering> {
        Some(self.cmp(other))
    }
}
impl Ord for Timed {
    /// Earliest first in a max-heap.
    fn cmp(&self, other: &Self) -> CmpOrdering {
        (other.at, other.seq).cmp(&(self.at, self.seq))
    }
}

/// A message on its way: sent on when its last packet is ejected.
struct Delivery {
    to: Nid,
    onward: Onward,
    packets_left: u32,
}

/// The model's state, owned by its task.
struct Engine {
    shared: Arc<Shared>,
    ports: Vec<Port>,
    /// Routes between nodes, built once each.
    routes: HashMap<(usize, usize), Arc<[Step]>>,
    deliveries: HashMap<u64, Delivery>,
    next_message: u64,
    events: BinaryHeap<Timed>,
    seq: u64,
    /// Model time: the last event's.
    now: Instant,
    /// Ports to try to start (ports that may have work, or room ahead, again).
    wake: Vec<PortId>,
}

impl Engine {
    fn new(shared: Arc<Shared>) -> Engine {
        let model = &shared.model;
        let scale = model.time_scale;
        let ns_per_byte = |bytes_s: f64| 1e9 / bytes_s * scale;
        let mut ports = Vec::new();
        for i in 0..model.torus.link_count() {
            let axis = model.torus.link(i).direction.axis();
            ports.push(Port {
                ns_per_byte: ns_per_byte(
                    model.link_bandwidth_bytes_s * model.torus.link_width(axis),
                ),
                latency: model.hop_latency.mul_f64(scale),
                busy: false,
                inputs: Vec::new(),
                turn: 0,
            });
        }
        for node in &model.nodes {
            for _ in 0..2 {
                ports.push(Port {
                    ns_per_byte: ns_per_byte(node.nic_bandwidth_bytes_s),
                    latency: Duration::ZERO,
                    busy: false,
                    inputs: Vec::new(),
                    turn: 0,
                });
            }
        }
        Engine {
            shared,
            ports,
            routes: HashMap::new(),
            deliveries: HashMap::new(),
            next_message: 0,
            events: BinaryHeap::new(),
            seq: 0,
            now: Instant::now(),
            wake: Vec::new(),
        }
    }

    async fn run(mut self, mut injections: mpsc::UnboundedReceiver<Injection>) {
        let mut open = true;
        loop {
            while open {
                match injections.try_recv() {
                    Ok(injection) => self.inject(injection),
                    Err(mpsc::error::TryRecvError::Empty) => break,
                    Err(mpsc::error::TryRecvError::Disconnected) => open = false,
                }
            }
            self.advance(Instant::now() + AHEAD);
            match (self.events.peek().map(|e| e.at), open) {
                (None, false) => break,
                (None, true) => match injections.recv().await {
                    Some(injection) => self.inject(injection),
                    None => open = false,
                },
                (Some(at), false) => tokio::time::sleep_until(at - AHEAD).await,
                (Some(at), true) => {
                    tokio::select! {
                        injection = injections.recv() => match injection {
                            Some(injection) => self.inject(injection),
                            None => open = false,
                        },
                        () = tokio::time::sleep_until(at.checked_sub(AHEAD).unwrap_or(at)) => {}
                    }
                }
            }
        }
        for (_, delivery) in self.deliveries.drain() {
            delivery.onward.fail(FabricError::ShuttingDown);
        }
    }

    /// Runs every event due by `until`, in time order.
    fn advance(&mut self, until: Instant) {
        while self.events.peek().is_some_and(|e| e.at <= until) {
            let Some(timed) = self.events.pop() else {
                break;
            };
            // Events are never scheduled before `now`: this is `timed.at`.
            self.now = self.now.max(timed.at);
            self.handle(timed.event);
            self.start_woken();
        }
    }

    fn links(&self) -> usize {
        self.shared.model.torus.link_count()
    }

    fn injection_port(&self, node: usize) -> PortId {
        (self.links() + 2 * node) as PortId
    }

    fn ejection_port(&self, node: usize) -> PortId {
        (self.links() + 2 * node + 1) as PortId
    }

    /// Injection, the dimension-order links with their virtual channels, ejection.
    fn route(&mut self, from: usize, to: usize) -> Arc<[Step]> {
        if let Some(route) = self.routes.get(&(from, to)) {
            return Arc::clone(route);
        }
        let torus = &self.shared.model.torus;
        let nodes = &self.shared.model.nodes;
        let mut steps = vec![Step {
            port: self.injection_port(from),
            vc: 0,
        }];
        let mut vc = 0;
        let mut direction: Option<Direction> = None;
        for link in torus.dor_path(nodes[from].coord, nodes[to].coord) {
            if direction != Some(link.direction) {
                // A new ring: its dateline not yet crossed.
                direction = Some(link.direction);
                vc = 0;
            }
            steps.push(Step {
                port: torus.link_index(link) as PortId,
                vc,
            });
            let axis = link.direction.axis();
            let at = link.from.along(axis);
            let last = torus.len(axis) - 1;
            if (link.direction.is_plus() && at == last) || (!link.direction.is_plus() && at == 0) {
                vc = 1;
            }
        }
        steps.push(Step {
            port: self.ejection_port(to),
            vc,
        });
        let route: Arc<[Step]> = steps.into();
        self.routes.insert((from, to), Arc::clone(&route));
        route
    }

    fn inject(&mut self, injection: Injection) {
        let to = injection.to;
        // What was due before it arrived happens first; then model time is the host's (or
        // ahead of it, by less than AHEAD).
        let host = Instant::now();
        self.advance(host);
        self.now = self.now.max(host);
        let now = self.now;
        let route = self.route(injection.from, to);
        let bytes = injection.bytes;
        let packet = u64::from(self.shared.model.packet_bytes);
        let packets = bytes.div_ceil(packet).max(1);
        let id = self.next_message;
        self.next_message += 1;
        self.deliveries.insert(
            id,
            Delivery {
                to: self.shared.model.nodes[to].nid,
                onward: injection.onward,
                packets_left: packets as u32,
            },
        );
        let port = route[0].port;
        let input = self.ports[port as usize].input(InputKey::To(to as u32));
        for p in 0..packets {
            input.queue.push_back(Packet {
                message: id,
                bytes: (bytes - p * packet).min(packet) as u32,
                route: Arc::clone(&route),
                hop: 0,
                since: now,
            });
            input.held += 1;
        }
        self.wake.push(port);
        self.start_woken();
    }

    fn handle(&mut self, event: Event) {
        match event {
            Event::Sent { port, packet } => {
                self.ports[port as usize].busy = false;
                self.wake.push(port);
                let hop = usize::from(packet.hop) + 1;
                if hop < packet.route.len() {
                    let latency = self.ports[port as usize].latency;
                    self.schedule(
                        self.now + latency,
                        Event::Arrived {
                            packet: Packet {
                                hop: hop as u16,
                                ..packet
                            },
                        },
                    );
                } else {
                    self.eject(packet.message);
                }
            }
            Event::Arrived { mut packet } => {
                let step = packet.route[usize::from(packet.hop)];
                let from = packet.route[usize::from(packet.hop) - 1].port;
                packet.since = self.now;
                // Its room was taken when it left.
                self.ports[step.port as usize]
                    .input(InputKey::From(from, step.vc))
                    .queue
                    .push_back(packet);
                self.wake.push(step.port);
            }
        }
    }

    /// One more packet of `message` is out: the message is, when it was the last.
    fn eject(&mut self, message: u64) {
        let Some(delivery) = self.deliveries.get_mut(&message) else {
            return;
        };
        delivery.packets_left -= 1;
        if delivery.packets_left == 0
            && let Some(d) = self.deliveries.remove(&message)
        {
            d.onward.deliver(d.to);
        }
    }

    fn schedule(&mut self, at: Instant, event: Event) {
        self.seq += 1;
        self.events.push(Timed {
            at,
            seq: self.seq,
            event,
        });
    }

    fn start_woken(&mut self) {
        while let Some(port) = self.wake.pop() {
            self.try_start(port);
        }
    }

    /// Starts `port` on its next packet, if it is idle and some input's first packet has room
    /// ahead: the inputs in turn, from the one after the last served.
    fn try_start(&mut self, port: PortId) {
        let p = port as usize;
        if self.ports[p].busy {
            return;
        }
        let inputs = self.ports[p].inputs.len();
        for i in 0..inputs {
            let at = (self.ports[p].turn + i) % inputs;
            let input = &self.ports[p].inputs[at];
            let Some(head) = input.queue.front() else {
                continue;
            };
            let next = head.route.get(usize::from(head.hop) + 1).copied();
            if let Some(next) = next
                && !self.ports[next.port as usize].has_room(InputKey::From(port, next.vc))
            {
                continue;
            }
            let key = input.key;
            let input = &mut self.ports[p].inputs[at];
            let Some(packet) = input.queue.pop_front() else {
                continue;
            };
            input.held -= 1;
            self.ports[p].turn = at + 1;
            if let Some(next) = next {
                self.ports[next.port as usize]
                    .input(InputKey::From(port, next.vc))
                    .held += 1;
            }
            // Room freed here: the port before may go on.
            if let InputKey::From(before, _) = key {
                self.wake.push(before);
            }
            let wire = Duration::from_nanos(
                (f64::from(packet.bytes) * self.ports[p].ns_per_byte).round() as u64,
            );
            let counters = &self.shared.counters[p];
            counters
                .bytes
                .fetch_add(u64::from(packet.bytes), Ordering::Relaxed);
            counters
                .busy_ns
                .fetch_add(wire.as_nanos() as u64, Ordering::Relaxed);
            let waited = self.now.saturating_duration_since(packet.since);
            if !waited.is_zero() {
                counters.waits.fetch_add(1, Ordering::Relaxed);
                counters
                    .waited_ns
                    .fetch_add(waited.as_nanos() as u64, Ordering::Relaxed);
            }
            self.ports[p].busy = true;
            self.schedule(self.now + wire, Event::Sent { port, packet });
            return;
        }
    }
}
