//! The torus's switch: one model of a torus crossed hop by hop, for nodes in several
//! processes.
//!
//! A torus is modeled by one task ([`super`]), because its links are shared: two senders in
//! different processes must queue for the same port. So the process that runs the model
//! serves it on a socket ([`TorusNetwork::serve`]), and a node in another process holds a
//! handle connected to it ([`TorusNetwork::connect`]). The handle tells the switch what it
//! sends (from which node to which, how many bytes); the switch's model cuts it into
//! packets and moves them over the ports with every other node's; when the last packet is
//! ejected it tells the handle, whose LND then sends the message, bytes and all, as it
//! would have without a model. So the pace is the model's, and only the model's state
//! crosses to the switch, never a payload.
//!
//! What this adds to the model: one round trip on loopback per message (tens of
//! microseconds, under a microsecond of modeled time at the time scales a torus needs), and
//! the LND's own send after the model has delivered. Link counters are kept where the model
//! runs ([`TorusNetwork::link_loads`] there); a connected handle's read zero.
//!
//! The protocol is fixed-size frames on one TCP connection per handle:
//!
//! - hello, handle to switch: [`MAGIC`], then the model's fingerprint (u64, big-endian): both
//!   sides must have built the same model from the same stack;
//! - the answer: [`MAGIC`] and one status byte ([`SAME_MODEL`], [`OTHER_MODEL`], [`FULL`]);
//! - a message, handle to switch: its number (u64), its bytes (u64), the sender's and the
//!   receiver's index among the model's nodes (u32 each);
//! - its end, switch to handle: the number and a status byte ([`EJECTED`], [`STOPPING`]).
//!
//! What a peer may make the switch hold is bounded: [`CONNECTIONS_MAX`] past the model's
//! nodes (one more is answered [`FULL`] at hello and closed), [`IN_FLIGHT_MAX`] messages per
//! connection of at most [`MESSAGE_BYTES_MAX`] each (a connection that goes past either is
//! closed: its node's credits would never let it).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::task::AbortOnDropHandle;

use super::{Injection, Onward, TorusModel, TorusNetwork, Via};
use crate::error::FabricError;
use crate::frame::{HEADER_BYTES, Message};
use crate::lnd::{Lnd, SendTicket};
use crate::nid::Nid;

/// The first bytes each side sends.
pub const MAGIC: [u8; 8] = *b"IOPTORS1";
/// A message's last packet is out: send it.
pub const EJECTED: u8 = 0;
/// The model is stopping: the message will not get through.
pub const STOPPING: u8 = 1;
/// Hello's answer: the handle's model is the switch's.
pub const SAME_MODEL: u8 = 0;
/// Hello's answer: the handle was built from another model (another stack file).
pub const OTHER_MODEL: u8 = 1;
/// Hello's answer: the switch serves all the connections it takes.
pub const FULL: u8 = 2;
/// Messages one connection may have in the model at once (its senders' credits keep it far
/// below: a node has at most its interface's credits in flight).
pub const IN_FLIGHT_MAX: usize = 16_384;
/// The largest message a handle may announce: a header and 16 MiB, sixteen times the
/// fabric's largest frame payload by default (the model builds a message's packets at once).
pub const MESSAGE_BYTES_MAX: u64 = HEADER_BYTES as u64 + (16 << 20);
/// Connections a switch takes beyond one per node of its model (restarted processes).
pub const CONNECTIONS_MAX: usize = 64;
/// How long a connection may take to say hello, and a handle to connect.
pub const HELLO_TIMEOUT: Duration = Duration::from_secs(10);

const HELLO_BYTES: usize = 16;
const ANSWER_BYTES: usize = 9;
const SEND_BYTES: usize = 24;
const DONE_BYTES: usize = 9;

/// A message's end, as the switch tells its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) id: u64,
    pub(crate) status: u8,
}

impl Done {
    fn frame(self) -> [u8; DONE_BYTES] {
        let mut frame = [0; DONE_BYTES];
        frame[..8].copy_from_slice(&self.id.to_be_bytes());
        frame[8] = self.status;
        frame
    }
}

/// A message waiting for the switch to say its last packet is out.
pub(crate) struct Held {
    pub(crate) to: Nid,
    pub(crate) message: Message,
    pub(crate) ticket: SendTicket,
    pub(crate) lnd: Arc<dyn Lnd>,
}

/// A model's fingerprint: its torus, rates, time scale, packet size, and every node with its
/// coordinate and NIC, in order (FNV-1a over their text).
pub fn fingerprint(model: &TorusModel) -> u64 {
    let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
    let mut eat = |text: &str| {
        for byte in text.bytes().chain([0]) {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
    };
    eat(&format!(
        "{:?} {} {:?} {} {}",
        model.torus.dims(),
        model.link_bandwidth_bytes_s,
        model.hop_latency,
        model.time_scale,
        model.packet_bytes
    ));
    for node in &model.nodes {
        eat(&format!(
            "{} {:?} {}",
            node.nid, node.coord, node.nic_bandwidth_bytes_s
        ));
    }
    hash
}

/// A torus's model served to other processes; it stops serving (and closes its
/// connections) when dropped.
#[derive(Debug)]
pub struct Switch {
    addr: SocketAddr,
    _task: AbortOnDropHandle<()>,
}

impl Switch {
    /// The address handles connect to.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }
}

impl TorusNetwork {
    /// Serves this torus's model on `listener` to nodes in other processes
    /// ([`TorusNetwork::connect`]). Only the process that runs the model can.
    pub fn serve(&self, listener: TcpListener) -> Result<Switch, FabricError> {
        if matches!(self.via, Via::Switch(_)) {
            return Err(FabricError::Io(
                "this torus's model runs in another process: only that process can serve it".into(),
            ));
        }
        let addr = listener.local_addr()?;
        let torus = self.clone();
        let task = tokio::spawn(async move {
            let mut connections = JoinSet::new();
            let limit = torus.shared.model.nodes.len() + CONNECTIONS_MAX;
            loop {
                tokio::select! {
                    accepted = listener.accept() => match accepted {
                        Ok((stream, peer)) if connections.len() < limit => {
                            let torus = torus.clone();
                            connections.spawn(async move {
                                if let Err(why) = serve_one(torus, stream).await {
                                    tracing::warn!("torus switch: {peer}: {why}");
                                }
                            });
                        }
                        Ok((mut stream, peer)) => {
                            tracing::warn!(
                                "torus switch: {peer} refused: {limit} connections already"
                            );
                            let _ = stream.write_all(&answer(FULL)).await;
                        }
                        Err(e) => {
                            tracing::warn!("torus switch: accept: {e}");
                            tokio::time::sleep(Duration::from_millis(10)).await;
                        }
                    },
                    Some(_) = connections.join_next(), if !connections.is_empty() => {}
                }
            }
        });
        Ok(Switch {
            addr,
            _task: AbortOnDropHandle::new(task),
        })
    }

    /// A handle on `model`, which the switch at `addr` runs: this process's nodes on it send
    /// through it as they would through the model itself.
    pub async fn connect(model: TorusModel, addr: SocketAddr) -> Result<TorusNetwork, FabricError> {
        let unreachable = FabricError::Io;
        let stream = tokio::time::timeout(HELLO_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| unreachable(format!("the torus switch at {addr} did not answer")))?
            .map_err(|e| unreachable(format!("connect to the torus switch at {addr}: {e}")))?;
        stream.set_nodelay(true)?;
        let (mut reader, mut writer) = stream.into_split();
        let mut hello = [0; HELLO_BYTES];
        hello[..8].copy_from_slice(&MAGIC);
        hello[8..].copy_from_slice(&fingerprint(&model).to_be_bytes());
        writer.write_all(&hello).await?;
        let mut answer = [0; ANSWER_BYTES];
        tokio::time::timeout(HELLO_TIMEOUT, reader.read_exact(&mut answer))
            .await
            .map_err(|_| unreachable(format!("the torus switch at {addr} did not say hello")))?
            .map_err(|e| unreachable(format!("the torus switch at {addr}: {e}")))?;
        if answer[..8] != MAGIC {
            return Err(unreachable(format!("{addr} is not a torus switch")));
        }
        match answer[8] {
            SAME_MODEL => {}
            FULL => {
                return Err(unreachable(format!(
                    "the torus switch at {addr} serves all the connections it takes"
                )));
            }
            _ => {
                return Err(unreachable(format!(
                    "the torus switch at {addr} models another torus (not built from this stack)"
                )));
            }
        }
        let table = Arc::new(Mutex::new(Table::default()));
        let (frames, outgoing) = mpsc::unbounded_channel();
        tokio::spawn(write_frames(writer, outgoing, Arc::clone(&table), addr));
        tokio::spawn(read_done(reader, Arc::clone(&table), addr));
        let connection = Connection {
            addr,
            frames,
            table,
            next: AtomicU64::new(0),
        };
        Ok(TorusNetwork::switched(model, Arc::new(connection)))
    }
}

/// Serves one handle: hello, then its messages into the model and their ends back.
async fn serve_one(torus: TorusNetwork, stream: TcpStream) -> std::io::Result<()> {
    let Via::Engine(injections) = &torus.via else {
        return Ok(());
    };
    stream.set_nodelay(true)?;
    let (reader, writer) = stream.into_split();
    let mut reader = BufReader::new(reader);
    let mut writer = BufWriter::new(writer);
    let mut hello = [0; HELLO_BYTES];
    tokio::time::timeout(HELLO_TIMEOUT, reader.read_exact(&mut hello))
        .await
        .map_err(|_| std::io::Error::other("no hello"))??;
    if hello[..8] != MAGIC {
        return Err(std::io::Error::other("not a torus handle (no magic)"));
    }
    let same = hello[8..] == fingerprint(&torus.shared.model).to_be_bytes();
    writer
        .write_all(&answer(if same { SAME_MODEL } else { OTHER_MODEL }))
        .await?;
    writer.flush().await?;
    if !same {
        return Err(std::io::Error::other(
            "its model differs from this one (another stack file?)",
        ));
    }
    let (done, mut ends) = mpsc::unbounded_channel::<Done>();
    let in_flight = Arc::new(AtomicUsize::new(0));
    let counted = Arc::clone(&in_flight);
    // Aborted with this task (a switch dropped closes its connections).
    let mut write = AbortOnDropHandle::new(tokio::spawn(async move {
        while let Some(end) = ends.recv().await {
            writer.write_all(&end.frame()).await?;
            counted.fetch_sub(1, Ordering::Relaxed);
            while let Ok(end) = ends.try_recv() {
                writer.write_all(&end.frame()).await?;
                counted.fetch_sub(1, Ordering::Relaxed);
            }
            writer.flush().await?;
        }
        Ok::<_, std::io::Error>(())
    }));
    let nodes = &torus.shared.model.nodes;
    let result = loop {
        let mut frame = [0; SEND_BYTES];
        tokio::select! {
            read = reader.read_exact(&mut frame) => match read {
                Ok(_) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => break Ok(()),
                Err(e) => break Err(e),
            },
            written = &mut write => {
                // The handle stopped reading: nothing it sends can be answered.
                return written.unwrap_or(Ok(()));
            }
        }
        let word = |at: usize| u64::from_be_bytes(frame[at..at + 8].try_into().unwrap_or([0; 8]));
        let index = |at: usize| u32::from_be_bytes(frame[at..at + 4].try_into().unwrap_or([0; 4]));
        let (id, bytes, from, to) = (word(0), word(8), index(16) as usize, index(20) as usize);
        if from >= nodes.len() || to >= nodes.len() {
            break Err(std::io::Error::other(format!(
                "a message between nodes {from} and {to} of a torus of {} nodes",
                nodes.len()
            )));
        }
        if bytes > MESSAGE_BYTES_MAX {
            break Err(std::io::Error::other(format!(
                "a message of {bytes} bytes (at most {MESSAGE_BYTES_MAX})"
            )));
        }
        if in_flight.fetch_add(1, Ordering::Relaxed) >= IN_FLIGHT_MAX {
            break Err(std::io::Error::other(format!(
                "more than {IN_FLIGHT_MAX} messages in the model at once"
            )));
        }
        let onward = Onward::There {
            id,
            done: done.clone(),
        };
        if let Err(mpsc::error::SendError(injection)) = injections.send(Injection {
            from,
            to,
            bytes,
            onward,
        }) {
            injection.onward.fail(FabricError::ShuttingDown);
        }
    };
    // The model answers what is in it; the writer ends once the last answer is out.
    drop(done);
    let _ = write.await;
    result
}

/// Hello's answer: [`MAGIC`] and `status`.
fn answer(status: u8) -> [u8; ANSWER_BYTES] {
    let mut answer = [0; ANSWER_BYTES];
    answer[..8].copy_from_slice(&MAGIC);
    answer[8] = status;
    answer
}

/// A handle's connection to its switch.
pub(crate) struct Connection {
    addr: SocketAddr,
    frames: mpsc::UnboundedSender<[u8; SEND_BYTES]>,
    table: Arc<Mutex<Table>>,
    next: AtomicU64,
}

/// The messages a handle waits on, until the connection closes (then `closed` says why).
#[derive(Default)]
struct Table {
    held: HashMap<u64, Held>,
    closed: Option<String>,
}

impl Connection {
    /// Tells the switch of a message from node `from` to node `to` (indices in the model) of
    /// `bytes`, and holds it until the switch says its last packet is out.
    pub(crate) fn send(&self, (from, to): (usize, usize), bytes: u64, held: Held) {
        let id = self.next.fetch_add(1, Ordering::Relaxed);
        {
            let mut table = self.table.lock().unwrap_or_else(|e| e.into_inner());
            if let Some(why) = &table.closed {
                let why = why.clone();
                drop(table);
                held.ticket
                    .fail(FabricError::Unreachable { peer: held.to, why });
                return;
            }
            table.held.insert(id, held);
        }
        let mut frame = [0; SEND_BYTES];
        frame[..8].copy_from_slice(&id.to_be_bytes());
        frame[8..16].copy_from_slice(&bytes.to_be_bytes());
        frame[16..20].copy_from_slice(&(from as u32).to_be_bytes());
        frame[20..].copy_from_slice(&(to as u32).to_be_bytes());
        if self.frames.send(frame).is_err() {
            // The writer is gone, and with it the connection: this message fails with the rest.
            close(
                &self.table,
                format!("the torus switch at {} is gone", self.addr),
            );
        }
    }
}

async fn write_frames(
    writer: tokio::net::tcp::OwnedWriteHalf,
    mut frames: mpsc::UnboundedReceiver<[u8; SEND_BYTES]>,
    table: Arc<Mutex<Table>>,
    addr: SocketAddr,
) {
    let mut writer = BufWriter::new(writer);
    let written: std::io::Result<()> = async {
        while let Some(frame) = frames.recv().await {
            writer.write_all(&frame).await?;
            while let Ok(frame) = frames.try_recv() {
                writer.write_all(&frame).await?;
            }
            writer.flush().await?;
        }
        Ok(())
    }
    .await;
    match written {
        // Every handle is gone: the switch sees the end and closes its side.
        Ok(()) => {
            let _ = writer.shutdown().await;
        }
        // What the switch did not get will never be answered.
        Err(e) => close(&table, format!("the torus switch at {addr}: {e}")),
    }
}

/// The connection is gone, for `why`: every message it holds fails, and so does every later
/// send.
fn close(table: &Mutex<Table>, why: String) {
    let held: Vec<Held> = {
        let mut table = table.lock().unwrap_or_else(|e| e.into_inner());
        table.closed.get_or_insert(why.clone());
        table.held.drain().map(|(_, held)| held).collect()
    };
    for held in held {
        held.ticket.fail(FabricError::Unreachable {
            peer: held.to,
            why: why.clone(),
        });
    }
}

async fn read_done(
    reader: tokio::net::tcp::OwnedReadHalf,
    table: Arc<Mutex<Table>>,
    addr: SocketAddr,
) {
    let mut reader = BufReader::new(reader);
    let why = loop {
        let mut frame = [0; DONE_BYTES];
        if let Err(e) = reader.read_exact(&mut frame).await {
            break if e.kind() == std::io::ErrorKind::UnexpectedEof {
                format!("the torus switch at {addr} closed the connection")
            } else {
                format!("the torus switch at {addr}: {e}")
            };
        }
        let id = u64::from_be_bytes(frame[..8].try_into().unwrap_or([0; 8]));
        let held = table
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .held
            .remove(&id);
        let Some(held) = held else {
            continue;
        };
        match frame[8] {
            EJECTED => held.lnd.send(held.to, held.message, held.ticket),
            _ => held.ticket.fail(FabricError::Unreachable {
                peer: held.to,
                why: format!("the torus model at {addr} is stopping"),
            }),
        }
    };
    close(&table, why);
}
