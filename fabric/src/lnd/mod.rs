//! LNDs: the transports under the fabric, one per network type, as LNet's `socklnd` and
//! `ko2iblnd` are.
//!
//! An LND moves a [`Message`] to the next hop and hands what it receives to the node through
//! [`Deliver`]. It never waits for credits itself: by the time a message reaches
//! [`Lnd::send`] its sender holds an interface and a peer credit, carried in the
//! [`SendTicket`], and they come back when the LND completes the ticket — sent or failed.
//!
//! - [`mem`]: many nodes in one process; delivery is a function call, payloads are shared
//!   `Bytes`, nothing is copied — except into a place the receiver named (a pull's landing),
//!   which needs its own memory.
//! - [`tcp`]: a raw framed stream per ordered pair of nodes (see `docs/ARCHITECTURE.md` for why
//!   not a gRPC stream).

pub mod mem;
pub mod tcp;

use std::fmt;
use std::future::Future;
use std::pin::Pin;
use std::sync::atomic::AtomicU64;

use tokio::sync::oneshot;

use crate::error::FabricError;
use crate::frame::{Header, Message};
use crate::gate::Credit;
use crate::landing::Place;
use crate::nid::Nid;

/// Whatever the node keeps for a message from its header until it is done with it — a
/// router's buffer and its sender's router credit. An LND never looks inside: it carries it
/// from [`Deliver::admit`] to [`Deliver::deliver`] and, for a message a router sends on at
/// once, in the [`SendTicket`] until it has left; dropping it gives everything back.
pub type Hold = Box<dyn fmt::Debug + Send + Sync>;

/// What the node grants a message before its payload is read; handed back with the message.
#[derive(Debug, Default)]
pub struct Grant {
    /// Held for the message until the node is done with it (a router's buffer).
    pub hold: Option<Hold>,
    /// Where the payload goes, when the node named a place for it: the chunk of a pull's
    /// landing that this REPLY answers. The LND receives the payload into it — and then hands
    /// on the message with an empty payload and the filled place in this grant.
    pub place: Option<Place>,
}

impl Grant {
    /// A grant holding `hold` for the message.
    pub fn holding(hold: impl fmt::Debug + Send + Sync + 'static) -> Grant {
        Grant {
            hold: Some(Box::new(hold)),
            place: None,
        }
    }
}

/// What an LND counts of the payloads it receives: where their bytes went, and which ones it
/// copied in user space — the copies `lctl get_param stats` shows.
#[derive(Debug, Default)]
pub struct LndCounters {
    /// Payload bytes received into the place the node named for them (a pull's landing).
    pub placed_bytes: AtomicU64,
    /// Payload bytes the LND copied in user space on the way in: the part of a large TCP
    /// payload read ahead with its header, or an in-memory payload copied into its place.
    /// A TCP payload read straight from the socket is not counted: only the kernel copies it.
    pub copied_bytes: AtomicU64,
    /// Frames written to the connection by the task that sent them, not handed to the
    /// connection's writer (TCP: a small frame that found its connection idle).
    pub written_inline: AtomicU64,
}

/// The node's answer to a header, before the payload is taken in.
pub enum Admit {
    /// Take the payload now, with what the node granted for it.
    Now(Grant),
    /// Wait for this before reading the payload: a router is out of buffers. A TCP LND stops
    /// reading the connection meanwhile, so the sender feels the back-pressure.
    Wait(Pin<Box<dyn Future<Output = Grant> + Send>>),
    /// Read and discard the payload (counted by the node).
    Refuse(&'static str),
}

impl fmt::Debug for Admit {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Admit::Now(grant) => f.debug_tuple("Now").field(grant).finish(),
            Admit::Wait(_) => f.write_str("Wait"),
            Admit::Refuse(why) => f.debug_tuple("Refuse").field(why).finish(),
        }
    }
}

/// Where an LND hands the messages it receives. Implemented by the node; must not block:
/// anything that needs to wait is spawned or expressed as [`Admit::Wait`].
pub trait Deliver: Send + Sync + 'static {
    /// Called with each header before its payload is read.
    fn admit(&self, header: &Header) -> Admit;

    /// Takes one received message, with what [`Deliver::admit`] granted for it; `via` is the
    /// receiving interface's NID (for a message to forward, not its target).
    fn deliver(&self, via: Nid, message: Message, grant: Grant);
}

/// A transport for one network.
pub trait Lnd: Send + Sync + fmt::Debug + 'static {
    /// Starts moving `message` to `next_hop` — its target, or the router towards it — and
    /// completes `ticket` when the message has left (or failed). Never blocks.
    fn send(&self, next_hop: Nid, message: Message, ticket: SendTicket);

    /// Stops accepting and sending; connections close, queued messages fail.
    fn shutdown(&self);

    /// What it has counted of the payloads it received.
    fn counters(&self) -> &LndCounters;
}

/// The credits a message holds while an LND sends it, and who to tell when it is done.
///
/// Dropping a ticket without completing it counts as a failed send; either way the credits
/// return to their pools.
#[derive(Debug)]
pub struct SendTicket {
    credits: Option<(Credit, Credit)>,
    notify: Option<oneshot::Sender<Result<(), FabricError>>>,
    /// Held until the message has left, with the credits: a router's buffer.
    hold: Option<Hold>,
}

impl SendTicket {
    /// A ticket holding a peer credit and an interface credit.
    pub fn new(
        peer: Credit,
        interface: Credit,
        notify: Option<oneshot::Sender<Result<(), FabricError>>>,
    ) -> Self {
        SendTicket {
            credits: Some((peer, interface)),
            notify,
            hold: None,
        }
    }

    /// The same ticket, holding `hold` too until the message has left (or failed to).
    pub fn holding(mut self, hold: Hold) -> Self {
        self.hold = Some(hold);
        self
    }

    /// A ticket that holds no credit, for frames outside the credit system (HELLO) and tests.
    pub fn uncredited() -> Self {
        SendTicket {
            credits: None,
            notify: None,
            hold: None,
        }
    }

    /// The message left (or was lost on the wire, which the sender cannot tell apart).
    pub fn complete(mut self) {
        if let Some(notify) = self.notify.take() {
            let _ = notify.send(Ok(()));
        }
    }

    /// The message could not be sent.
    pub fn fail(mut self, error: FabricError) {
        if let Some(notify) = self.notify.take() {
            let _ = notify.send(Err(error));
        }
    }
}

impl Drop for SendTicket {
    fn drop(&mut self) {
        if let Some(notify) = self.notify.take() {
            let _ = notify.send(Err(FabricError::Io(
                "send abandoned by the transport".into(),
            )));
        }
        // The credits in `self.credits` return to their pools as they drop here: interface
        // credit first (it was taken last), then the peer credit.
        if let Some((peer, interface)) = self.credits.take() {
            drop(interface);
            drop(peer);
        }
        // Then what the sender held for the message (a router's buffer and its sender's
        // router credit), which may let the next message in.
        drop(self.hold.take());
    }
}
