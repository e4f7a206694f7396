//! The TCP LND: frames on raw TCP streams, one stream per ordered pair of nodes.
//!
//! A node sends only on connections it opened and receives only on connections it accepted,
//! so two nodes that start talking at once never race to share one socket. Every outgoing
//! connection starts with a HELLO naming the sender and the node it meant to reach; the
//! acceptor refuses a HELLO meant for someone else.
//!
//! Sending: one writer task per peer drains a queue whose capacity is the peer credit count —
//! a message is only queued while holding a peer credit, so the queue can never overflow.
//! Small frames are gathered into one buffer; a large payload goes out by `writev` straight from
//! the sender's `Bytes`, never copied in user space. A frame that finds its connection idle —
//! nothing queued, no write under way — is written by the task sending it, whatever its size,
//! with no hand-off to the writer: on a loopback hop in a VM, waking another task (often on
//! another, sleeping core) costs more than the write, and a router forwarding 1 MiB chunks then
//! reads and writes on one task, as a bare relay does. What the socket does not take at once is
//! written by a task of its own, which holds the connection until then.
//!
//! Receiving: one reader task per accepted connection reads into a growing buffer and splits
//! frames off it; a small payload is a slice of that buffer. The header is checked, payload
//! length included, and shown to the node ([`Deliver::admit`]) before any room is made for the
//! payload, and the node says where it goes:
//!
//! - a REPLY to one of the node's multi-chunk pulls is read straight into its chunk's place in
//!   the pull's landing (one page-aligned buffer for the whole transfer), so the pull is
//!   contiguous as it arrives, with nothing to assemble;
//! - any other large payload (bulk) is read into a page-aligned buffer from the node's pool:
//!   memory already faulted in and reused frame after frame, which a storage server can write
//!   with O_DIRECT as it is.
//!
//! Either way the only user-space copy is of what was read ahead along with the header (at
//! most [`READ_AHEAD_BYTES`] per frame), counted in [`LndCounters::copied_bytes`].

use std::collections::HashMap;
use std::io::IoSlice;
use std::net::SocketAddr;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError, Weak};
use std::time::Duration;

use bytes::{Buf, BufMut, Bytes, BytesMut};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tracing::{debug, warn};

use crate::aligned::SizedPools;
use crate::error::FabricError;
use crate::frame::{HEADER_BYTES, Header, Kind, Message};
use crate::lnd::{Admit, Deliver, Grant, Lnd, LndCounters, SendTicket};
use crate::nid::Nid;

/// How long a connection attempt may take.
const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);
/// Frames smaller than this are copied into the gather buffer; larger ones go by `writev`.
const GATHER_PAYLOAD_MAX_BYTES: usize = 16 * 1024;
/// How much the reader reads past the frame it needs: enough to take many small frames in
/// one call, little enough that the start of a large payload read along with its header (and
/// then copied into the payload's pooled buffer or its place) stays small. This is the most
/// of any payload that is copied in user space on the way in.
pub const READ_AHEAD_BYTES: usize = 16 * 1024;
/// Queued frames one writer gathers before it writes.
const GATHER_FRAMES_MAX: usize = 64;
/// Payloads at least this large are received into a pooled aligned buffer.
pub const POOLED_PAYLOAD_MIN_BYTES: usize = 64 * 1024;
/// Free receive buffers a node keeps per size class for the next payloads. A pool allocates
/// only when it has none free, so it never holds more than were in use at once; a payload
/// its receiver keeps holds its buffer (at most four times its size, by the classes) until
/// dropped, as any received bytes would.
pub const RECEIVE_POOL_KEPT_BYTES_MAX: u64 = 64 << 20;
/// While a large payload is being read, the reader is woken only once this much of it (or
/// all that is left) has arrived, not for every segment: wake-ups, not copies, are most of
/// what a loopback hop costs in a VM.
const PAYLOAD_WAKE_BYTES: usize = 256 * 1024;

/// Settings of a TCP interface.
#[derive(Debug, Clone)]
pub struct TcpSettings {
    /// Largest payload accepted in one frame.
    pub frame_payload_max_bytes: u32,
    /// Queue depth per peer: the peer credit count.
    pub peer_queue_max: usize,
    /// Accepted connections at once; more are refused.
    pub connections_max: usize,
}

/// A connection's write half, once its writer has connected and said HELLO; `None` before,
/// and again once the connection has ended. Whoever writes holds the lock for whole frames.
type WriteSlot = Arc<tokio::sync::Mutex<Option<OwnedWriteHalf>>>;

/// A peer's outgoing side: its writer task's queue, and the connection it writes to.
#[derive(Debug, Clone)]
struct Outgoing {
    queue: mpsc::Sender<(Message, SendTicket)>,
    write: WriteSlot,
}

/// A node's interface on a TCP network.
#[derive(Debug)]
pub struct TcpLnd {
    nid: Nid,
    settings: TcpSettings,
    peers: Mutex<HashMap<SocketAddr, Outgoing>>,
    /// Where large payloads are received.
    receive_pool: Arc<SizedPools>,
    /// Where received payloads went, and what was copied.
    counters: LndCounters,
    stop: watch::Sender<bool>,
}

/// Listeners bound before their node starts, by address: whoever picked a node's port keeps it
/// bound and hands the socket over ([`adopt`], [`hand_over`]), so that nothing else on the
/// machine can take the port between the choice and the node's start.
static ADOPTED: Mutex<std::collections::BTreeMap<SocketAddr, std::net::TcpListener>> =
    Mutex::new(std::collections::BTreeMap::new());

/// The environment variable through which a launcher names the listening sockets a child
/// process inherits: `ADDR=FD` pairs, comma-separated.
pub const HANDED_OVER_ENV: &str = "IOPATH_LISTEN_FDS";

/// Keeps `listener` for the [`BoundTcp::bind`] of its address in this process.
pub fn adopt(listener: std::net::TcpListener) -> std::io::Result<SocketAddr> {
    let addr = listener.local_addr()?;
    ADOPTED
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
        .insert(addr, listener);
    Ok(addr)
}

/// Lets the process `command` starts inherit `listeners`, named in [`HANDED_OVER_ENV`]; it
/// takes them with [`adopt_handed_over`]. The caller closes its own copies once the process
/// has started.
pub fn hand_over(command: &mut tokio::process::Command, listeners: &[std::net::TcpListener]) {
    use std::os::fd::AsRawFd;
    let pairs: Vec<(SocketAddr, i32)> = listeners
        .iter()
        .filter_map(|l| Some((l.local_addr().ok()?, l.as_raw_fd())))
        .collect();
    if pairs.is_empty() {
        return;
    }
    let named: Vec<String> = pairs.iter().map(|(a, fd)| format!("{a}={fd}")).collect();
    command.env(HANDED_OVER_ENV, named.join(","));
    let fds: Vec<i32> = pairs.iter().map(|&(_, fd)| fd).collect();
    // SAFETY: the closure runs in the child between fork and exec, and calls only fcntl, which
    // is async-signal-safe, on descriptors the parent holds open for the duration of the spawn.
    unsafe {
        command.pre_exec(move || {
            for &fd in &fds {
                let flags = libc::fcntl(fd, libc::F_GETFD);
                if flags < 0 || libc::fcntl(fd, libc::F_SETFD, flags & !libc::FD_CLOEXEC) < 0 {
                    return Err(std::io::Error::last_os_error());
                }
            }
            Ok(())
        });
    }
}

/// Adopts the listening sockets this process inherited through [`HANDED_OVER_ENV`] (a node
/// process started by a stack); returns how many. Each must be a listening TCP socket bound to
/// the address it is named with.
pub fn adopt_handed_over() -> Result<usize, FabricError> {
    use std::os::fd::FromRawFd;
    static TAKEN: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
    let Ok(text) = std::env::var(HANDED_OVER_ENV) else {
        return Ok(0);
    };
    // Once: the descriptors are owned by whoever takes them first.
    if TAKEN.swap(true, Ordering::AcqRel) {
        return Ok(0);
    }
    let bad = |why: String| FabricError::Io(format!("{HANDED_OVER_ENV}={text:?}: {why}"));
    let mut count = 0;
    for pair in text.split(',').filter(|p| !p.is_empty()) {
        let (addr, fd) = pair
            .split_once('=')
            .ok_or_else(|| bad(format!("{pair:?} is not ADDR=FD")))?;
        let addr: SocketAddr = addr.parse().map_err(|e| bad(format!("{addr}: {e}")))?;
        let fd: i32 = fd.parse().map_err(|e| bad(format!("{fd}: {e}")))?;
        if fd < 3 {
            return Err(bad(format!("{fd} is a standard stream, not a socket")));
        }
        // SAFETY: the launcher handed this descriptor over for this process to own. It is not
        // closed (ManuallyDrop) unless it proves to be a socket bound to `addr`.
        let listener =
            std::mem::ManuallyDrop::new(unsafe { std::net::TcpListener::from_raw_fd(fd) });
        match listener.local_addr() {
            Ok(bound) if bound == addr => {}
            Ok(bound) => {
                return Err(bad(format!(
                    "descriptor {fd} is bound to {bound}, not {addr}"
                )));
            }
            Err(e) => return Err(bad(format!("descriptor {fd} is not a bound socket: {e}"))),
        }
        adopt(std::mem::ManuallyDrop::into_inner(listener)).map_err(|e| bad(e.to_string()))?;
        count += 1;
    }
    Ok(count)
}

/// A bound listener, waiting for the node that will receive from it.
#[derive(Debug)]
pub struct BoundTcp {
    listener: TcpListener,
    nid: Nid,
}

impl BoundTcp {
    /// Binds `nid`'s address — or takes the listener already bound there and handed over
    /// with [`adopt`]. Port 0 picks a free port; [`BoundTcp::nid`] then says which.
    pub async fn bind(nid: Nid) -> Result<BoundTcp, FabricError> {
        let addr = nid.socket_addr().ok_or_else(|| FabricError::BadNid {
            text: nid.to_string(),
            why: "a TCP interface needs an ip:port address".into(),
        })?;
        let adopted = ADOPTED
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .remove(&addr);
        let listener = match adopted {
            Some(listener) => listener
                .set_nonblocking(true)
                .and_then(|()| TcpListener::from_std(listener))
                .map_err(|e| {
                    FabricError::Io(format!("listen on the socket handed over for {addr}: {e}"))
                })?,
            None => TcpListener::bind(addr)
                .await
                .map_err(|e| FabricError::Io(format!("cannot listen on {addr}: {e}")))?,
        };
        let bound = listener.local_addr()?;
        Ok(BoundTcp {
            listener,
            nid: Nid::tcp(bound, nid.net.number),
        })
    }

    /// The NID with the port actually bound.
    pub fn nid(&self) -> Nid {
        self.nid
    }
}

impl TcpLnd {
    /// Starts accepting on `bound`, handing received messages to `node`; large payloads are
    /// received into buffers from `receive_pool` (of at least the frame limit).
    pub fn start(
        bound: BoundTcp,
        settings: TcpSettings,
        node: Weak<dyn Deliver>,
        receive_pool: Arc<SizedPools>,
    ) -> Arc<TcpLnd> {
        assert!(
            receive_pool.capacity() >= settings.frame_payload_max_bytes as usize,
            "receive buffers hold the largest frame"
        );
        let (stop, _) = watch::channel(false);
        let lnd = Arc::new(TcpLnd {
            nid: bound.nid,
            settings,
            peers: Mutex::new(HashMap::new()),
            receive_pool,
            counters: LndCounters::default(),
            stop,
        });
        tokio::spawn(accept_loop(bound.listener, Arc::clone(&lnd), node));
        lnd
    }

    fn writer_for(&self, addr: SocketAddr) -> Outgoing {
        let mut peers = self.peers.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(peer) = peers.get(&addr).filter(|p| !p.queue.is_closed()) {
            return peer.clone();
        }
        let (queue, rx) = mpsc::channel(self.settings.peer_queue_max.max(1));
        let peer = Outgoing {
            queue,
            write: WriteSlot::default(),
        };
        peers.insert(addr, peer.clone());
        tokio::spawn(writer_loop(
            self.nid,
            addr,
            rx,
            Arc::clone(&peer.write),
            self.stop.subscribe(),
        ));
        peer
    }

    /// Writes `message` to `peer`'s connection from the sending task, if the
    /// connection is up and idle: nothing queued for its writer and no write under way.
    /// Gives the message back otherwise, with nothing written. A frame the socket takes only
    /// in part is finished by a task of its own, which holds the connection until then.
    ///
    /// Frames stay whole (whoever writes holds the connection), but not always in the order
    /// they were sent: this one can pass frames the writer has taken off its queue and not
    /// yet written. Nothing above depends on that order, as nothing does through a router.
    fn write_inline(
        &self,
        peer_nid: Nid,
        peer: &Outgoing,
        message: Message,
        ticket: SendTicket,
    ) -> Result<(), Box<(Message, SendTicket)>> {
        if peer.queue.capacity() != peer.queue.max_capacity() {
            return Err(Box::new((message, ticket)));
        }
        let Ok(mut slot) = Arc::clone(&peer.write).try_lock_owned() else {
            return Err(Box::new((message, ticket)));
        };
        // A closed queue: the writer found the connection gone, and the message fails (or
        // reconnects) by the queue's path.
        let Some(write) = slot.as_mut().filter(|_| !peer.queue.is_closed()) else {
            return Err(Box::new((message, ticket)));
        };
        // The header on the stack and the payload where it is: no copy, no allocation.
        let mut header = [0u8; HEADER_BYTES];
        message.header.encode(&mut &mut header[..]);
        let parts = [IoSlice::new(&header), IoSlice::new(&message.payload)];
        let written = match write.try_write_vectored(&parts) {
            Ok(written) => written,
            // Nothing written: the writer sends it, once the socket has room.
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {
                return Err(Box::new((message, ticket)));
            }
            Err(e) => {
                // The writer's read probe sees the connection end and closes the queue.
                ticket.fail(lost(peer_nid, &e));
                return Ok(());
            }
        };
        self.counters.written_inline.fetch_add(1, Ordering::Relaxed);
        if written == HEADER_BYTES + message.payload.len() {
            ticket.complete();
            return Ok(());
        }
        let mut rest = Bytes::copy_from_slice(&header).chain(message.payload);
        rest.advance(written);
        tokio::spawn(async move {
            let write = slot
                .as_mut()
                .expect("the write half was there and the lock is held");
            match write.write_all_buf(&mut rest).await {
                Ok(()) => ticket.complete(),
                Err(e) => ticket.fail(lost(peer_nid, &e)),
            }
        });
        Ok(())
    }
}

impl Lnd for TcpLnd {
    fn send(&self, next_hop: Nid, message: Message, ticket: SendTicket) {
        let target = next_hop;
        let Some(addr) = target.socket_addr() else {
            ticket.fail(FabricError::Unreachable {
                peer: target,
                why: "not a TCP NID".into(),
            });
            return;
        };
        if *self.stop.borrow() {
            ticket.fail(FabricError::ShuttingDown);
            return;
        }
        // A writer that died (connection refused or reset) leaves a closed queue behind;
        // `writer_for` replaces it, so the next message reconnects.
        let peer = self.writer_for(addr);
        let Err(back) = self.write_inline(target, &peer, message, ticket) else {
            return;
        };
        let (message, ticket) = *back;
        if let Err(err) = peer.queue.try_send((message, ticket)) {
            let (full, (_, ticket)) = match err {
                mpsc::error::TrySendError::Full(item) => (true, item),
                mpsc::error::TrySendError::Closed(item) => (false, item),
            };
            debug_assert!(
                !full,
                "peer queue overflow: more in flight than peer credits"
            );
            ticket.fail(FabricError::Unreachable {
                peer: target,
                why: if full {
                    "peer queue full".into()
                } else {
                    "connection closed".into()
                },
            });
        }
    }

    fn counters(&self) -> &LndCounters {
        &self.counters
    }

    fn shutdown(&self) {
        self.stop.send_replace(true);
        self.peers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
    }
}

async fn accept_loop(listener: TcpListener, lnd: Arc<TcpLnd>, node: Weak<dyn Deliver>) {
    let mut stop = lnd.stop.subscribe();
    let open = Arc::new(());
    loop {
        // Either a new connection or the order to stop; stopping drops the listener.
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = stop.wait_for(|s| *s) => return,
        };
        let (stream, from) = match accepted {
            Ok(pair) => pair,
            Err(e) => {
                warn!(nid = %lnd.nid, "accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(10)).await;
                continue;
            }
        };
        // Each reader holds a clone of `open`; the count bounds connections at once.
        if Arc::strong_count(&open) > lnd.settings.connections_max {
            warn!(nid = %lnd.nid, %from, "refusing connection: {} open", lnd.settings.connections_max);
            continue;
        }
        let _ = stream.set_nodelay(true);
        // Nothing is written back on an accepted connection, but the write half is kept open
        // for its life: dropping it would send a FIN, which the opener reads as "peer gone".
        let (read, write) = stream.into_split();
        let token = Arc::clone(&open);
        let lnd = Arc::clone(&lnd);
        let node = node.clone();
        let stop = lnd.stop.subscribe();
        tokio::spawn(async move {
            let _open = (token, write);
            match read_loop(read, &lnd, node, stop).await {
                Ok(peer) => debug!(nid = %lnd.nid, %peer, "connection closed"),
                Err(e) => warn!(nid = %lnd.nid, %from, "closing connection: {e}"),
            }
        });
    }
}

/// Reads the HELLO, then frames until the peer closes or the node stops.
async fn read_loop(
    mut read: OwnedReadHalf,
    lnd: &TcpLnd,
    node: Weak<dyn Deliver>,
    mut stop: watch::Receiver<bool>,
) -> Result<Nid, FabricError> {
    let max = lnd.settings.frame_payload_max_bytes;
    let mut hello = [0u8; HEADER_BYTES];
    tokio::time::timeout(CONNECT_TIMEOUT, read.read_exact(&mut hello))
        .await
        .map_err(|_| FabricError::MalformedFrame {
            why: "no HELLO within the connect timeout",
        })??;
    let hello = Header::decode(&hello, 0)?;
    if hello.kind != Kind::Hello {
        return Err(FabricError::MalformedFrame {
            why: "first frame is not a HELLO",
        });
    }
    if hello.target != lnd.nid {
        return Err(FabricError::Unreachable {
            peer: hello.source,
            why: format!("it wanted {}, this is {}", hello.target, lnd.nid),
        });
    }
    let peer = hello.source;
    let mut buffer = BytesMut::with_capacity(2 * READ_AHEAD_BYTES);
    // The header whose payload is being read, with what the node granted for it.
    let mut admitted: Option<(Header, Grant)> = None;
    loop {
        // Split off every complete frame in the buffer.
        let wanted = loop {
            if admitted.is_none() {
                if buffer.len() < HEADER_BYTES {
                    break HEADER_BYTES;
                }
                let header = Header::decode(&buffer[..HEADER_BYTES], max)?;
                let Some(node) = node.upgrade() else {
                    return Ok(peer);
                };
                // Before the payload is taken in: a router may make us wait for a buffer,
                // and while we wait this connection is not read.
                let granted = match node.admit(&header) {
                    Admit::Now(granted) => granted,
                    Admit::Refuse(_) => Grant::default(),
                    Admit::Wait(granted) => tokio::select! {
                        granted = granted => granted,
                        _ = stop.wait_for(|s| *s) => return Ok(peer),
                    },
                };
                admitted = Some((header, granted));
            }
            let Some((header, grant)) = admitted.as_mut() else {
                unreachable!("admitted just above")
            };
            let payload_len = header.payload_len as usize;
            let total = HEADER_BYTES + payload_len;
            if grant
                .place
                .as_ref()
                .is_some_and(|place| place.len() != payload_len)
            {
                grant.place = None; // never lent so, but a place is filled whole or not at all
            }
            let payload = if let Some(place) = grant.place.as_mut() {
                // A REPLY to one of the node's pulls: straight into its place in the landing.
                buffer.advance(HEADER_BYTES);
                let dest = place.as_mut_slice();
                if !read_payload(&mut read, &mut buffer, dest, lnd, &mut stop).await? {
                    return Ok(peer);
                }
                lnd.counters
                    .placed_bytes
                    .fetch_add(payload_len as u64, Ordering::Relaxed);
                Bytes::new()
            } else if payload_len >= POOLED_PAYLOAD_MIN_BYTES {
                buffer.advance(HEADER_BYTES);
                let mut pooled = lnd.receive_pool.take(payload_len);
                let dest = pooled.as_mut_slice();
                if !read_payload(&mut read, &mut buffer, dest, lnd, &mut stop).await? {
                    return Ok(peer);
                }
                pooled.into_bytes()
            } else if buffer.len() < total {
                break total;
            } else {
                let mut frame = buffer.split_to(total).freeze();
                frame.advance(HEADER_BYTES);
                frame
            };
            let (header, granted) = admitted.take().expect("admitted just above");
            let Some(node) = node.upgrade() else {
                return Ok(peer);
            };
            node.deliver(lnd.nid, Message { header, payload }, granted);
        };
        // The rest of the pending frame (bounded by the checked header) and a little more.
        let limit = wanted - buffer.len() + READ_AHEAD_BYTES;
        buffer.reserve(limit);
        let mut limited = (&mut read).take(limit as u64);
        let read_bytes = tokio::select! {
            read_bytes = limited.read_buf(&mut buffer) => read_bytes?,
            _ = stop.wait_for(|s| *s) => return Ok(peer),
        };
        if read_bytes == 0 {
            if buffer.is_empty() && admitted.is_none() {
                return Ok(peer);
            }
            return Err(FabricError::MalformedFrame {
                why: "connection closed mid-frame",
            });
        }
    }
}

/// Reads a payload into `slice` — a buffer from the node's pool, or the place the node named
/// for it: first what `buffer` already holds of it (read ahead with its header: the one copy
/// in user space, counted), then straight from the socket. False when the node stops first.
async fn read_payload(
    read: &mut OwnedReadHalf,
    buffer: &mut BytesMut,
    slice: &mut [u8],
    lnd: &TcpLnd,
    stop: &mut watch::Receiver<bool>,
) -> Result<bool, FabricError> {
    let len = slice.len();
    let buffered = buffer.len().min(len);
    slice[..buffered].copy_from_slice(&buffer[..buffered]);
    buffer.advance(buffered);
    lnd.counters
        .copied_bytes
        .fetch_add(buffered as u64, Ordering::Relaxed);
    let mut filled = buffered;
    let mut low_water = 1;
    // Bounded: every pass fills at least one byte of a payload of checked length, or ends.
    while filled < len {
        let wanted = (len - filled).min(PAYLOAD_WAKE_BYTES);
        if wanted != low_water {
            set_receive_low_water(read, wanted);
            low_water = wanted;
        }
        let read_bytes = tokio::select! {
            read_bytes = read.read(&mut slice[filled..]) => read_bytes?,
            _ = stop.wait_for(|s| *s) => return Ok(false),
        };
        if read_bytes == 0 {
            return Err(FabricError::MalformedFrame {
                why: "connection closed mid-frame",
            });
        }
        filled += read_bytes;
    }
    if low_water != 1 {
        set_receive_low_water(read, 1);
    }
    Ok(true)
}

/// Sets SO_RCVLOWAT: the socket reads as ready only once `bytes` are queued. Never more than
/// what is still to come, so a wait always ends. Best effort: a kernel that refuses it only
/// costs wake-ups.
fn set_receive_low_water(read: &OwnedReadHalf, bytes: usize) {
    use std::os::fd::AsRawFd;
    let value = libc::c_int::try_from(bytes).unwrap_or(libc::c_int::MAX);
    // SAFETY: a valid socket descriptor, a pointer to a c_int and its size.
    let result = unsafe {
        libc::setsockopt(
            read.as_ref().as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_RCVLOWAT,
            (&raw const value).cast(),
            std::mem::size_of::<libc::c_int>() as libc::socklen_t,
        )
    };
    if result != 0 {
        debug!("SO_RCVLOWAT {bytes}: {}", std::io::Error::last_os_error());
    }
}

/// Connects to `addr`, sends the HELLO, then writes queued frames until told to stop.
async fn writer_loop(
    local: Nid,
    addr: SocketAddr,
    mut queue: mpsc::Receiver<(Message, SendTicket)>,
    slot: WriteSlot,
    mut stop: watch::Receiver<bool>,
) {
    let target = Nid::tcp(addr, local.net.number);
    let result = async {
        let stream = tokio::time::timeout(CONNECT_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| FabricError::Unreachable {
                peer: target,
                why: "connect timed out".into(),
            })?
            .map_err(|e| FabricError::Unreachable {
                peer: target,
                why: e.to_string(),
            })?;
        stream.set_nodelay(true)?;
        let (mut read, mut write) = stream.into_split();
        let mut gather = BytesMut::with_capacity(64 * 1024);
        Header::new(Kind::Hello, local, target).encode(&mut gather);
        write.write_all_buf(&mut gather).await?;
        // From now on senders may write frames to an idle connection themselves.
        *slot.lock().await = Some(write);
        let mut batch = Vec::with_capacity(GATHER_FRAMES_MAX);
        loop {
            // Nothing ever arrives on a connection we opened, so a read that ends means the
            // peer is gone (closed, crashed, restarted): stop now rather than at the next
            // write, so the next message reconnects.
            let mut probe = [0u8; 1];
            let first = tokio::select! {
                first = queue.recv() => first,
                _ = stop.wait_for(|s| *s) => None,
                _ = read.read(&mut probe) => {
                    return Err(FabricError::Unreachable { peer: target, why: "the peer closed the connection".into() });
                }
            };
            let Some(first) = first else { return Ok(()) };
            batch.push(first);
            while batch.len() < GATHER_FRAMES_MAX {
                match queue.try_recv() {
                    Ok(next) => batch.push(next),
                    Err(_) => break,
                }
            }
            let written = {
                let mut write = slot.lock().await;
                let write = write.as_mut().expect("the write half stays while the writer runs");
                write_batch(write, &mut gather, &batch).await
            };
            if let Err(e) = written {
                for (_, ticket) in batch.drain(..) {
                    ticket.fail(e.clone());
                }
                return Err(e);
            }
            for (_, ticket) in batch.drain(..) {
                ticket.complete();
            }
        }
    }
    .await;
    // Whatever is still queued fails now; its credits come back as the tickets complete. A
    // sender that finds the queue closed writes nothing inline either.
    queue.close();
    let error = match result {
        Ok(()) => FabricError::ShuttingDown,
        // A peer that closed its end went away on purpose (or exited); the next message
        // reconnects. Only failures say more.
        Err(e @ FabricError::Unreachable { .. }) => {
            debug!(%local, peer = %target, "connection closed: {e}");
            e
        }
        Err(e) => {
            warn!(%local, peer = %target, "connection lost: {e}");
            e
        }
    };
    while let Ok((_, ticket)) = queue.try_recv() {
        ticket.fail(error.clone());
    }
    // The socket goes once a sender finishing a frame has let go of it.
    slot.lock().await.take();
}

/// A write to `peer`'s connection failed: the connection is gone, as the RPC layer should hear
/// it (a resend reconnects).
fn lost(peer: Nid, error: &std::io::Error) -> FabricError {
    FabricError::Unreachable {
        peer,
        why: format!("write failed: {error}"),
    }
}

/// Writes a batch: small frames gathered into one buffer, large payloads by `writev`.
async fn write_batch(
    write: &mut OwnedWriteHalf,
    gather: &mut BytesMut,
    batch: &[(Message, SendTicket)],
) -> Result<(), FabricError> {
    for (message, _) in batch {
        message.header.encode(gather);
        if message.payload.len() <= GATHER_PAYLOAD_MAX_BYTES {
            gather.put_slice(&message.payload);
        } else {
            let mut frame = gather.split().freeze().chain(message.payload.clone());
            write.write_all_buf(&mut frame).await?;
        }
    }
    if !gather.is_empty() {
        write.write_all_buf(gather).await?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn a_handed_over_listener_is_the_one_the_node_listens_on() {
        let held = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = adopt(held).unwrap();
        // The adopted socket still holds the port: a fresh bind would fail.
        assert!(std::net::TcpListener::bind(addr).is_err());
        let bound = BoundTcp::bind(Nid::tcp(addr, 0)).await.unwrap();
        assert_eq!(bound.nid().socket_addr(), Some(addr));
        // Taken once: a second node on the address binds afresh, and finds it in use.
        assert!(BoundTcp::bind(Nid::tcp(addr, 0)).await.is_err());
    }
}
