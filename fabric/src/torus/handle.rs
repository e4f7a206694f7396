//! A handle's side of the torus's switch ([`super::switch`]), and the protocol both sides
//! speak: the frames, their limits, a model's fingerprint, and the connection a node in
//! another process sends through. What the handle holds is the messages it waits on; their
//! bytes go by their own LND once the switch says the last packet is out.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::TcpStream;
use tokio::sync::mpsc;

use super::model::TorusModel;
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

pub(super) const HELLO_BYTES: usize = 16;
pub(super) const ANSWER_BYTES: usize = 9;
pub(super) const SEND_BYTES: usize = 24;
pub(super) const DONE_BYTES: usize = 9;

/// A message's end, as the switch tells its sender.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Done {
    pub(crate) id: u64,
    pub(crate) status: u8,
}

impl Done {
    pub(super) fn frame(self) -> [u8; DONE_BYTES] {
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

/// Hello's answer: [`MAGIC`] and `status`.
pub(super) fn answer(status: u8) -> [u8; ANSWER_BYTES] {
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
    /// Connects to the switch at `addr` and says hello with `model`'s fingerprint: a
    /// connection once the switch answers that it runs the same model.
    pub(super) async fn open(
        model: &TorusModel,
        addr: SocketAddr,
    ) -> Result<Connection, FabricError> {
        let unreachable = FabricError::Io;
        let stream = tokio::time::timeout(HELLO_TIMEOUT, TcpStream::connect(addr))
            .await
            .map_err(|_| unreachable(format!("the torus switch at {addr} did not answer")))?
            .map_err(|e| unreachable(format!("connect to the torus switch at {addr}: {e}")))?;
        stream.set_nodelay(true)?;
        let (mut reader, mut writer) = stream.into_split();
        let mut hello = [0; HELLO_BYTES];
        hello[..8].copy_from_slice(&MAGIC);
        hello[8..].copy_from_slice(&fingerprint(model).to_be_bytes());
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
        Ok(Connection {
            addr,
            frames,
            table,
            next: AtomicU64::new(0),
        })
    }

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
