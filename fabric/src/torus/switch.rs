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

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt, BufReader, BufWriter};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
use tokio::task::JoinSet;
use tokio_util::task::AbortOnDropHandle;

pub use super::handle::{
    CONNECTIONS_MAX, EJECTED, FULL, HELLO_TIMEOUT, IN_FLIGHT_MAX, MAGIC, MESSAGE_BYTES_MAX,
    OTHER_MODEL, SAME_MODEL, STOPPING, fingerprint,
};
use super::handle::{Connection, Done, HELLO_BYTES, SEND_BYTES, answer};
use super::model::TorusModel;
use super::{Injection, Onward, TorusNetwork, Via};
use crate::error::FabricError;

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
        let connection = Connection::open(&model, addr).await?;
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
