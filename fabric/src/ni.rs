//! A network interface (LNet's NI): one per network a node is on. It owns the interface's
//! send credits, a credit pool per peer, the LND, and the counters `lctl` shows.
//!
//! The send path, in LNet's order: take a **peer** credit (waiting in the peer's queue if none),
//! then an **interface** credit (waiting in the NI's queue), then apply the fault hook, then
//! hand the message and both credits to the LND. Credits come back when the LND completes —
//! whether the message went out or not.

use std::fmt;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::BytesMut;
use tokio::sync::oneshot;

use crate::error::FabricError;
use crate::fail::{FailPoints, Injected, NetFate, Site};
use crate::fault::{Fault, FaultHook};
use crate::frame::Message;
use crate::gate::{Credit, CreditGate, CreditSnapshot};
use crate::peer_table::PeerTable;

use crate::link::{Link, LinkModel};
use crate::lnd::{Hold, Lnd, LndCounters, SendTicket};
use crate::nid::Nid;
use crate::torus::TorusNetwork;

/// Message and byte counters of an interface.
#[derive(Debug, Default)]
pub struct NiCounters {
    /// Messages handed to the LND.
    pub send_count: AtomicU64,
    /// Payload bytes handed to the LND.
    pub send_bytes: AtomicU64,
    /// Messages received.
    pub recv_count: AtomicU64,
    /// Payload bytes received.
    pub recv_bytes: AtomicU64,
    /// Messages dropped: by the fault hook, or on arrival because nothing was waiting for them.
    pub drop_count: AtomicU64,
}

/// What a send's credits were, for a trace: how long it queued for them, and the counts of
/// the peer's and the interface's pools right after it asked for each (negative by the sends
/// queued, itself among them), as `lnetctl peer show` and `net show` read at that moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SendCredits {
    /// The time it queued for its peer and interface credits, summed.
    pub waited: std::time::Duration,
    /// The peer pool's count it left (LNet's peer `tx`).
    pub peer_credits: i64,
    /// The interface pool's count it left (LNet's NI `tx`).
    pub ni_credits: i64,
}

impl SendCredits {
    /// What a send's peer and interface credits say.
    fn of(peer: &Credit, interface: &Credit) -> SendCredits {
        SendCredits {
            waited: peer.waited() + interface.waited(),
            peer_credits: peer.credits_left(),
            ni_credits: interface.credits_left(),
        }
    }
}

/// One network interface of a node.
pub struct Ni {
    nid: Nid,
    lnd: Arc<dyn Lnd>,
    credits: Arc<CreditGate>,
    peer_credits_max: u32,
    peers_max: usize,
    peers: PeerTable,
    fault: Option<Arc<dyn FaultHook>>,
    /// The node's fail points (`bulk.send`) and network rules, consulted on every send.
    fail: Arc<FailPoints>,
    /// The modeled wire, if the network has a model.
    wire: Option<Wire>,
    /// Traffic counters.
    pub counters: NiCounters,
}

/// What an interface's sends cross before the LND gets them.
enum Wire {
    /// Its own sending side, modeled ([`crate::link`]).
    Link(Link),
    /// The torus, hop by hop ([`crate::torus`]).
    Torus(TorusNetwork),
}

/// An interface's modeled wire: its own link, or the torus its network models.
#[derive(Debug, Clone)]
pub enum WireModel {
    /// A link of its own.
    Link(LinkModel),
    /// The shared torus.
    Torus(TorusNetwork),
}

/// Most peers [`Ni::link_down`] asks the kernel about: an interface is down only if none of
/// them can be routed to, so one peer on a subnet gone elsewhere does not take it down.
pub const LINK_PROBES_MAX: usize = 4;

impl fmt::Debug for Ni {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Ni")
            .field("nid", &self.nid)
            .field("lnd", &self.lnd)
            .finish()
    }
}

/// Credit settings of an interface.
#[derive(Debug, Clone, Copy)]
pub struct NiCredits {
    /// Sends in flight on the interface at once (LNet `credits`).
    pub credits_max: u32,
    /// Sends in flight to one peer at once (LNet `peer_credits`).
    pub peer_credits_max: u32,
    /// Peers the interface keeps credit state for.
    pub peers_max: usize,
}

impl Ni {
    /// An interface at `nid` sending through `lnd`, over a wire modeled by `wire` if given.
    pub fn new(
        nid: Nid,
        lnd: Arc<dyn Lnd>,
        credits: NiCredits,
        fault: Option<Arc<dyn FaultHook>>,
        fail: Arc<FailPoints>,
        wire: Option<WireModel>,
    ) -> Ni {
        Ni {
            nid,
            wire: wire.map(|model| match model {
                WireModel::Link(model) => Wire::Link(Link::new(model, Arc::clone(&lnd))),
                WireModel::Torus(torus) => Wire::Torus(torus),
            }),
            lnd,
            credits: CreditGate::new(credits.credits_max),
            peer_credits_max: credits.peer_credits_max,
            peers_max: credits.peers_max,
            peers: PeerTable::new(credits.peer_credits_max, credits.peers_max),
            fault,
            fail,
            counters: NiCounters::default(),
        }
    }

    /// This interface's NID.
    pub fn nid(&self) -> Nid {
        self.nid
    }

    fn peer_gate(&self, peer: Nid) -> Result<Arc<CreditGate>, FabricError> {
        self.peers.gate(peer).ok_or(FabricError::LimitReached {
            what: "peers per interface",
            max: self.peers_max as u64,
        })
    }

    /// Sends `message` to `next_hop` under credits. Returns once the LND has the message,
    /// with what its credits were (the time it queued, the counts it left); `notify`, if
    /// given, hears whether it left.
    pub async fn send(
        &self,
        next_hop: Nid,
        message: Message,
        notify: Option<oneshot::Sender<Result<(), FabricError>>>,
    ) -> Result<SendCredits, FabricError> {
        let peer_gate = self.peer_gate(next_hop)?;
        // Back-pressure lives here: a sender with no credit waits, and the credit counts go
        // negative by the length of the queue.
        let peer_credit = peer_gate.acquire().await;
        let ni_credit = self.credits.acquire().await;
        let taken = SendCredits::of(&peer_credit, &ni_credit);
        self.dispatch(
            next_hop,
            message,
            SendTicket::new(peer_credit, ni_credit, notify),
        );
        Ok(taken)
    }

    /// Sends `message` to `next_hop` now if a peer credit and an interface credit are both
    /// free (no one is queued for them), holding `hold` until the message has left; otherwise
    /// gives both back, for a send that waits.
    pub fn try_send(
        &self,
        next_hop: Nid,
        message: Message,
        hold: Hold,
    ) -> Result<SendCredits, Box<(Message, Hold)>> {
        let credits = self.peer_gate(next_hop).ok().and_then(|gate| {
            let peer = gate.try_acquire()?;
            Some((peer, self.credits.try_acquire()?))
        });
        let Some((peer_credit, ni_credit)) = credits else {
            return Err(Box::new((message, hold)));
        };
        let taken = SendCredits::of(&peer_credit, &ni_credit);
        let ticket = SendTicket::new(peer_credit, ni_credit, None).holding(hold);
        self.dispatch(next_hop, message, ticket);
        Ok(taken)
    }

    /// Sends `message` under the credits its `ticket` holds: counted, through the fault
    /// hooks, to the wire or the LND.
    fn dispatch(&self, next_hop: Nid, mut message: Message, ticket: SendTicket) {
        self.counters.send_count.fetch_add(1, Ordering::Relaxed);
        self.counters
            .send_bytes
            .fetch_add(message.payload.len() as u64, Ordering::Relaxed);
        let fault = match &self.fault {
            Some(hook) => hook.on_send(&message.header, message.payload.len()),
            None => self.operator_fault(&message),
        };
        match fault {
            Fault::None => self.transmit(next_hop, message, ticket),
            Fault::Drop => {
                // Lost on the wire: the sender cannot tell, so the send "completes".
                self.counters.drop_count.fetch_add(1, Ordering::Relaxed);
                ticket.complete();
            }
            Fault::Corrupt { byte } => {
                let mut payload = BytesMut::from(&message.payload[..]);
                if let Some(b) = payload.get_mut(byte) {
                    *b ^= 0x5A;
                }
                message.payload = payload.freeze();
                self.transmit(next_hop, message, ticket);
            }
            Fault::Delay(delay) => {
                // Delayed in flight: the credits stay held until it "arrives". (A delayed
                // message skips the modeled wire: the hook decides when it arrives.)
                let lnd = Arc::clone(&self.lnd);
                tokio::spawn(async move {
                    tokio::time::sleep(delay).await;
                    lnd.send(next_hop, message, ticket);
                });
            }
        }
    }

    /// What the operator's network rules and the `bulk.send` fail point do to `message`.
    fn operator_fault(&self, message: &Message) -> Fault {
        match self.fail.net().fate(&message.header) {
            NetFate::Pass => {}
            NetFate::Drop => return Fault::Drop,
            NetFate::Delay(delay) => return Fault::Delay(delay),
        }
        if !message.header.is_bulk() || message.payload.is_empty() {
            return Fault::None;
        }
        match self.fail.pass_frame(Site::BulkSend, true) {
            Ok(None) => Fault::None,
            Ok(Some(delay)) => Fault::Delay(delay),
            Err(Injected::Drop) => Fault::Drop,
            Err(Injected::Corrupt) => Fault::Corrupt {
                byte: message.payload.len() / 2,
            },
            // `bulk.send` takes no errno (refused when armed).
            Err(Injected::Errno(_)) => Fault::None,
        }
    }

    /// Hands `message` to the LND, over the modeled wire if there is one.
    fn transmit(&self, next_hop: Nid, message: Message, ticket: SendTicket) {
        match &self.wire {
            Some(Wire::Link(link)) => link.send(next_hop, message, ticket),
            Some(Wire::Torus(torus)) => {
                torus.send(self.nid, next_hop, message, ticket, Arc::clone(&self.lnd));
            }
            None => self.lnd.send(next_hop, message, ticket),
        }
    }

    /// Messages that queued for the modeled wire, and their time queued (zero without one).
    /// On a torus, the packets that waited for the node's injection port.
    pub fn link_waits(&self) -> (u64, std::time::Duration) {
        match &self.wire {
            Some(Wire::Link(l)) => {
                let c = l.counters();
                (
                    c.waits.load(Ordering::Relaxed),
                    std::time::Duration::from_nanos(c.waited_ns.load(Ordering::Relaxed)),
                )
            }
            Some(Wire::Torus(torus)) => torus.injection_waits(self.nid),
            None => (0, std::time::Duration::ZERO),
        }
    }

    /// Counters of the interface's own pool (LNet `nis`).
    pub fn credits(&self) -> CreditSnapshot {
        self.credits.snapshot()
    }

    /// Counters of one peer's pool, if the interface has sent to it.
    pub fn peer_snapshot(&self, peer: &Nid) -> Option<CreditSnapshot> {
        self.peers.snapshot(peer)
    }

    /// Credits each peer's pool starts with (LNet `peer_credits`).
    pub fn peer_credits_max(&self) -> u32 {
        self.peer_credits_max
    }

    /// Counters of each peer's pool (LNet `peers`), sorted by NID; peers idle for
    /// [`crate::peer_table::PEER_IDLE_MAX`] with nothing held are forgotten first.
    pub fn peers(&self) -> Vec<(Nid, CreditSnapshot)> {
        self.peers.snapshots()
    }

    /// Whether this interface has lost its network, as a router reports it in ping replies:
    /// for TCP, the kernel has no route from its address to any of the peers it has talked to
    /// (up to [`LINK_PROBES_MAX`] of them: the link is down, or the address gone); an interface
    /// with no such peer, or not on TCP, is up. One unconnected UDP socket per peer asked,
    /// asked to connect: no packet is sent.
    pub fn link_down(&self) -> bool {
        let Some(local) = self.nid.socket_addr() else {
            return false;
        };
        let peers: Vec<std::net::SocketAddr> = self
            .peers
            .some_peers(LINK_PROBES_MAX)
            .iter()
            .filter_map(Nid::socket_addr)
            .collect();
        if peers.is_empty() {
            return false;
        }
        peers.iter().all(|&peer| {
            match std::net::UdpSocket::bind(std::net::SocketAddr::new(local.ip(), 0)) {
                Ok(socket) => socket
                    .connect(peer)
                    .is_err_and(|e| e.kind() == std::io::ErrorKind::NetworkUnreachable),
                Err(e) => e.kind() == std::io::ErrorKind::AddrNotAvailable,
            }
        })
    }

    /// Forgets every low-water mark.
    pub fn reset_min(&self) {
        self.credits.reset_min();
        self.peers.reset_min();
    }

    /// What the interface's LND counted of the payloads it received: bytes received straight
    /// into place, and bytes copied in user space on the way.
    pub fn lnd_counters(&self) -> &LndCounters {
        self.lnd.counters()
    }

    /// Stops the LND.
    pub fn shutdown(&self) {
        self.lnd.shutdown();
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Mutex;

    use super::*;
    use crate::frame::{Header, Kind};
    use bytes::Bytes;

    /// An LND that keeps every ticket until the test lets the message "leave".
    #[derive(Debug, Default)]
    struct Held {
        tickets: Mutex<Vec<SendTicket>>,
        counters: LndCounters,
    }

    impl Lnd for Held {
        fn send(&self, _next_hop: Nid, _message: Message, ticket: SendTicket) {
            self.tickets.lock().unwrap().push(ticket);
        }
        fn shutdown(&self) {}
        fn counters(&self) -> &LndCounters {
            &self.counters
        }
    }

    /// An interface `me` over an LND that holds what it is given: 4 credits, 1 per peer,
    /// at most 8 peers.
    fn held_ni(me: Nid) -> (Arc<Held>, Ni) {
        let lnd = Arc::new(Held::default());
        let credits = NiCredits {
            credits_max: 4,
            peer_credits_max: 1,
            peers_max: 8,
        };
        let ni = Ni::new(
            me,
            Arc::clone(&lnd) as Arc<dyn Lnd>,
            credits,
            None,
            FailPoints::new(),
            None,
        );
        (lnd, ni)
    }

    #[tokio::test]
    async fn a_send_that_need_not_wait_holds_what_it_is_given_until_the_message_has_left() {
        let (me, peer): (Nid, Nid) = ("1@mem0".parse().unwrap(), "2@mem0".parse().unwrap());
        let (lnd, ni) = held_ni(me);
        let message = || Message::new(Header::new(Kind::Put, me, peer), Bytes::from_static(b"hi"));
        let buffer = Arc::new(());
        let sent = ni.try_send(peer, message(), Box::new(Arc::clone(&buffer)));
        assert!(sent.is_ok());
        assert_eq!(Arc::strong_count(&buffer), 2, "held while the LND has it");
        // The one peer credit is taken: the next is handed back, with what it held.
        let refused = ni
            .try_send(peer, message(), Box::new(Arc::clone(&buffer)))
            .expect_err("no peer credit is free");
        let (back, hold) = *refused;
        assert_eq!(back.payload, Bytes::from_static(b"hi"));
        drop(hold);
        assert_eq!(Arc::strong_count(&buffer), 2);
        // The message leaves: its buffer and its credits come back.
        lnd.tickets.lock().unwrap().pop().unwrap().complete();
        assert_eq!(
            Arc::strong_count(&buffer),
            1,
            "let go once the message left"
        );
        assert_eq!(ni.peer_snapshot(&peer).unwrap().credits, 1);
        assert!(ni.try_send(peer, message(), Box::new(())).is_ok());
    }

    /// LNet ages peers out: a peer the interface sent to once and never again is gone from
    /// `peers` (and so from `/metrics`) after the idle limit, once its message has left.
    #[tokio::test(start_paused = true)]
    async fn a_peer_that_stopped_talking_is_forgotten() {
        let me: Nid = "1@mem0".parse().unwrap();
        let (lnd, ni) = held_ni(me);
        for n in 2..5 {
            let peer = Nid::mem(n, 0);
            let message = Message::new(Header::new(Kind::Put, me, peer), Bytes::from_static(b"hi"));
            assert!(ni.try_send(peer, message, Box::new(())).is_ok());
        }
        assert_eq!(ni.peers().len(), 3);
        tokio::time::advance(crate::peer_table::PEER_IDLE_MAX * 2).await;
        assert_eq!(ni.peers().len(), 3, "their messages have not left");
        for ticket in lnd.tickets.lock().unwrap().drain(..) {
            ticket.complete();
        }
        assert_eq!(ni.peers(), [], "idle, nothing held: forgotten");
    }
}
