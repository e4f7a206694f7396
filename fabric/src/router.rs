//! The router personality of a node: forwarding messages between its networks under
//! **router buffer credits**, as an LNet router does.
//!
//! A message for another node that reaches a router must first get a buffer: one of the
//! *tiny* buffers (no payload), *small* ones (payload up to 4 KiB) or *large* ones (up to the
//! frame limit), and a credit from its sender's per-peer router credits (LNet's `rtr` column),
//! so one peer cannot take every buffer. Both are taken **before the payload is read**: a
//! message that finds none waits with its payload still in the socket — the TCP connection
//! stops being read — and the counts go negative by the number waiting. Memory a router holds
//! is therefore bounded by its buffers, whatever the offered load.

use std::sync::Arc;

use crate::frame::Header;
use crate::gate::{Credit, CreditGate, CreditSnapshot};
use crate::lnd::{Admit, Grant};
use crate::nid::Nid;
use crate::peer_table::PeerTable;

/// Largest payload a small buffer holds (one page, as LNet's small router buffers).
pub const SMALL_BUFFER_BYTES: u32 = 4096;

/// A router's buffer settings.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouterConfig {
    /// Buffers for messages without payload (LNet `tiny_router_buffers`).
    pub tiny_buffers: u32,
    /// Buffers for payloads up to [`SMALL_BUFFER_BYTES`] (LNet `small_router_buffers`).
    pub small_buffers: u32,
    /// Buffers for payloads up to the frame limit (LNet `large_router_buffers`).
    pub large_buffers: u32,
    /// Router buffers one peer may hold at once (LNet `peer_buffer_credits`).
    pub peer_buffer_credits: u32,
    /// Peers the router tracks.
    pub peers_max: usize,
    /// Whether the router verifies the checksum of every bulk chunk it forwards (as Spider's
    /// did), counting a mismatch and sending the chunk on for its receiver to refuse. Off, a
    /// garbled chunk is still caught where it lands; only the router's count of where it was
    /// garbled is lost. About 6% of a router's CPU at 1 MiB chunks over loopback TCP.
    pub check_checksums: bool,
}

impl Default for RouterConfig {
    /// LNet's defaults are sized for thousands of clients (2048 tiny, 16384 small, 1024 large
    /// per partition); a router on one machine holds far less: 64 large buffers of 1 MiB.
    fn default() -> Self {
        RouterConfig {
            tiny_buffers: 512,
            small_buffers: 512,
            large_buffers: 64,
            peer_buffer_credits: 16,
            peers_max: 4096,
            check_checksums: true,
        }
    }
}

/// The size classes of router buffers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BufferClass {
    /// No payload.
    Tiny,
    /// Up to [`SMALL_BUFFER_BYTES`].
    Small,
    /// Up to the frame limit.
    Large,
}

impl BufferClass {
    /// The class a payload of `bytes` needs.
    pub fn of(bytes: u32) -> BufferClass {
        match bytes {
            0 => BufferClass::Tiny,
            1..=SMALL_BUFFER_BYTES => BufferClass::Small,
            _ => BufferClass::Large,
        }
    }

    /// Its name in views and metrics: `tiny`, `small`, `large`.
    pub fn name(self) -> &'static str {
        match self {
            BufferClass::Tiny => "tiny",
            BufferClass::Small => "small",
            BufferClass::Large => "large",
        }
    }
}

/// A granted router buffer: a buffer credit and the sender's router credit, held until the
/// forwarded message has left.
#[derive(Debug)]
pub struct RouterBuffer {
    _peer: Credit,
    _buffer: Credit,
    /// The payload size this buffer was granted for.
    pub bytes: u32,
}

/// A router's pools.
#[derive(Debug)]
pub struct RouterBuffers {
    config: RouterConfig,
    /// Bytes a large buffer holds: the node's frame limit.
    large_bytes: u32,
    tiny: Arc<CreditGate>,
    small: Arc<CreditGate>,
    large: Arc<CreditGate>,
    peers: PeerTable,
}

impl RouterBuffers {
    /// Pools per `config`, large buffers holding `large_bytes` (the node's frame limit).
    pub fn new(config: RouterConfig, large_bytes: u32) -> RouterBuffers {
        RouterBuffers {
            config,
            large_bytes,
            tiny: CreditGate::new(config.tiny_buffers.max(1)),
            small: CreditGate::new(config.small_buffers.max(1)),
            large: CreditGate::new(config.large_buffers.max(1)),
            peers: PeerTable::new(config.peer_buffer_credits.max(1), config.peers_max),
        }
    }

    fn pool(&self, class: BufferClass) -> &Arc<CreditGate> {
        match class {
            BufferClass::Tiny => &self.tiny,
            BufferClass::Small => &self.small,
            BufferClass::Large => &self.large,
        }
    }

    /// A buffer for the message `header` announces, now or once one is free. The sender's
    /// router credit is taken first, then the buffer, in that order always.
    pub fn admit(&self, header: &Header) -> Admit {
        let Some(peer) = self.peers.gate(header.source) else {
            return Admit::Refuse("router tracks too many peers");
        };
        let pool = Arc::clone(self.pool(BufferClass::of(header.payload_len)));
        let bytes = header.payload_len;
        if let Some(peer_credit) = peer.try_acquire() {
            if let Some(buffer) = pool.try_acquire() {
                return Admit::Now(Grant::holding(RouterBuffer {
                    _peer: peer_credit,
                    _buffer: buffer,
                    bytes,
                }));
            }
            return Admit::Wait(Box::pin(async move {
                Grant::holding(RouterBuffer {
                    _peer: peer_credit,
                    _buffer: pool.acquire().await,
                    bytes,
                })
            }));
        }
        Admit::Wait(Box::pin(async move {
            let peer_credit = peer.acquire().await;
            Grant::holding(RouterBuffer {
                _peer: peer_credit,
                _buffer: pool.acquire().await,
                bytes,
            })
        }))
    }

    /// Whether bulk chunks are checked as they are forwarded.
    pub fn checks_checksums(&self) -> bool {
        self.config.check_checksums
    }

    /// Router buffers one peer may hold at once.
    pub fn peer_buffer_credits(&self) -> u32 {
        self.config.peer_buffer_credits
    }

    /// Counters of each pool: (class, buffer size, snapshot).
    pub fn pools(&self) -> [(BufferClass, u32, CreditSnapshot); 3] {
        [
            (BufferClass::Tiny, 0, self.tiny.snapshot()),
            (
                BufferClass::Small,
                SMALL_BUFFER_BYTES,
                self.small.snapshot(),
            ),
            (BufferClass::Large, self.large_bytes, self.large.snapshot()),
        ]
    }

    /// Counters of each peer's router credits, by NID; peers idle for
    /// [`crate::peer_table::PEER_IDLE_MAX`] with nothing held are forgotten first.
    pub fn peers(&self) -> Vec<(Nid, CreditSnapshot)> {
        self.peers.snapshots()
    }

    /// Router credits of one peer, if it has sent through us lately.
    pub fn peer_snapshot(&self, peer: &Nid) -> Option<CreditSnapshot> {
        self.peers.snapshot(peer)
    }
}
