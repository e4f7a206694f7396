//! A PFS fyod's connection to one storage server for **descriptor-named** I/O: OST WRITE and
//! READ requests whose buffer is a sub-descriptor of a compute node's memory, so the storage
//! server pulls from (or pushes into) the compute node itself.
//!
//! [`OstClient`](iopath_storage_server::service::OstClient) cannot do this: it registers its
//! own copy of the data. This link keeps the same replay story without a copy:
//!
//! - Every acknowledged write the target has not committed is kept — as its *descriptor*
//!   (target, transno → object, offset, descriptor), not its bytes.
//! - After a server restart the link reconnects and replays the kept writes in transno order;
//!   the server pulls the bytes again from the compute node. That is why the compute node
//!   keeps each PFS write's region registered until the fyod reports the write committed
//!   ([`crate::policy::pins`]). A compute node that dropped its region makes the replay fail,
//!   and the write is reported lost — never silently.
//!
//! The link connects under its own client id (the fyod's id with [`LINK_ID_BIT`] set), so the
//! server's recovery waits for it separately from the fyod's `OstClient`.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::frame::status::errno::{EINPROGRESS, ESTALE};
use iopath_fabric::{BufferDescriptor, FabricError, Nid, Node};
use iopath_proto::ost as pb;
use iopath_storage_server::service::{OST_PORTAL, is_connection_error, opcode};
use prost::Message as _;
use tracing::{info, warn};

/// Set in the fyod's id to name its descriptor link at a storage server.
pub const LINK_ID_BIT: u64 = 1 << 48;

/// How often, and how far apart, the link tries to reach a restarting server before giving
/// up (as `OstClient` does).
const RECONNECT_ATTEMPTS: u32 = 100;
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);

/// A kept write: where it went and the compute-node memory it came from.
#[derive(Debug, Clone, Copy)]
struct Kept {
    object: u64,
    offset: u64,
    buffer: BufferDescriptor,
}

#[derive(Debug, Default)]
struct State {
    boot_id: u64,
    /// By target (the server's own index): its highest committed transno.
    last_committed: HashMap<u32, u64>,
    /// By (target, transno): the replay order.
    kept: BTreeMap<(u32, u64), Kept>,
}

/// What a write or read answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LinkReply {
    /// The write's transno (0 for a read).
    pub transno: u64,
    /// The target's last committed transno.
    pub last_committed: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Checksum of the bytes moved.
    pub checksum: u32,
}

/// The link to one storage server.
#[derive(Debug)]
pub struct OstLink {
    node: Node,
    server: Nid,
    client: u64,
    state: Mutex<State>,
    replayed: AtomicU64,
}

impl OstLink {
    /// Connects to `server` as `client`.
    pub async fn connect(node: Node, server: Nid, client: u64) -> Result<OstLink, FabricError> {
        let link = OstLink {
            node,
            server,
            client,
            state: Mutex::default(),
            replayed: AtomicU64::new(0),
        };
        let reply = link.connect_once().await?;
        {
            let mut state = link.state.lock().expect("link state lock poisoned");
            state.boot_id = reply.boot_id;
            for target in &reply.targets {
                state
                    .last_committed
                    .insert(target.index, target.last_committed);
            }
        }
        if reply.recovering {
            // A new link has nothing to replay; tell the server not to wait for it.
            link.replay_done().await?;
        }
        Ok(link)
    }

    /// Writes replayed after server restarts, so far.
    pub fn replayed(&self) -> u64 {
        self.replayed.load(Ordering::Relaxed)
    }

    /// Writes kept for replay (descriptors only: the bytes stay on the compute nodes).
    pub fn kept_writes(&self) -> usize {
        self.state
            .lock()
            .expect("link state lock poisoned")
            .kept
            .len()
    }

    async fn connect_once(&self) -> Result<pb::ConnectReply, FabricError> {
        let body = pb::ConnectRequest {
            client: self.client,
        }
        .encode_to_vec()
        .into();
        let reply = self
            .node
            .call(self.server, OST_PORTAL, opcode::CONNECT, body)
            .await?;
        pb::ConnectReply::decode(reply.as_ref()).map_err(|_| FabricError::MalformedFrame {
            why: "undecodable CONNECT reply",
        })
    }

    async fn replay_done(&self) -> Result<(), FabricError> {
        let body = pb::ReplayDoneRequest {
            client: self.client,
        }
        .encode_to_vec()
        .into();
        self.node
            .call(self.server, OST_PORTAL, opcode::REPLAY_DONE, body)
            .await
            .map(drop)
    }

    fn decode(reply: &[u8]) -> Result<pb::OpReply, FabricError> {
        pb::OpReply::decode(reply).map_err(|_| FabricError::MalformedFrame {
            why: "undecodable OST reply",
        })
    }

    /// Sends one request; if the server is gone or restarting, reconnects, replays, and sends
    /// it again, for a bounded time.
    async fn call(&self, op: u32, body: Bytes) -> Result<pb::OpReply, FabricError> {
        let mut attempts = 0;
        loop {
            let error = match self
                .node
                .call(self.server, OST_PORTAL, op, body.clone())
                .await
            {
                Ok(reply) => {
                    let reply = Self::decode(&reply)?;
                    let known = self.state.lock().expect("link state lock poisoned").boot_id;
                    if reply.boot_id != 0 && reply.boot_id != known {
                        // The server restarted between our requests: replay before going on.
                        self.recover().await?;
                    }
                    return Ok(reply);
                }
                Err(error) => error,
            };
            let recovering =
                matches!(&error, FabricError::Remote { code, .. } if *code == EINPROGRESS);
            if !(recovering || is_connection_error(&error)) || attempts >= RECONNECT_ATTEMPTS {
                return Err(error);
            }
            attempts += 1;
            if !recovering {
                tokio::time::sleep(RECONNECT_PAUSE).await;
            }
            match self.recover().await {
                Ok(()) => {}
                Err(e) if is_connection_error(&e) => {}
                Err(e) => return Err(e),
            }
            if recovering {
                tokio::time::sleep(RECONNECT_PAUSE).await;
            }
        }
    }

    /// Notes a reply's commit, keeps an uncommitted write, forgets what is now committed.
    fn note(&self, target: u32, transno: u64, last_committed: u64, kept: Option<Kept>) {
        let mut state = self.state.lock().expect("link state lock poisoned");
        let committed = state.last_committed.entry(target).or_insert(0);
        *committed = (*committed).max(last_committed);
        let committed = *committed;
        if let Some(kept) = kept
            && transno > committed
        {
            state.kept.insert((target, transno), kept);
        }
        let done: Vec<(u32, u64)> = state
            .kept
            .range((target, 0)..=(target, committed))
            .map(|(k, _)| *k)
            .collect();
        for key in done {
            state.kept.remove(&key);
        }
    }

    /// The target committed up to `last_committed` (learned another way, e.g. a sync through
    /// the fyod's `OstClient`).
    pub fn note_committed(&self, target: u32, last_committed: u64) {
        self.note(target, 0, last_committed, None);
    }

    /// Writes the bytes `buffer` names at `offset` of `object` on `target`: the server pulls
    /// them from the buffer's owner.
    pub async fn write(
        &self,
        target: u32,
        object: u64,
        offset: u64,
        buffer: BufferDescriptor,
    ) -> Result<LinkReply, FabricError> {
        let request = pb::WriteRequest {
            target,
            object,
            offset,
            buffer: Some(buffer.to_proto()),
            client: self.client,
            replay_transno: 0,
        };
        let reply = self
            .call(opcode::WRITE, request.encode_to_vec().into())
            .await?;
        self.note(
            target,
            reply.transno,
            reply.last_committed,
            Some(Kept {
                object,
                offset,
                buffer,
            }),
        );
        Ok(LinkReply {
            transno: reply.transno,
            last_committed: reply.last_committed,
            bytes: buffer.length,
            checksum: reply.checksum,
        })
    }

    /// Reads up to `buffer.length` bytes at `offset` of `object` on `target` into the memory
    /// `buffer` names: the server pushes them to the buffer's owner.
    pub async fn read(
        &self,
        target: u32,
        object: u64,
        offset: u64,
        buffer: BufferDescriptor,
    ) -> Result<LinkReply, FabricError> {
        let request = pb::ReadRequest {
            target,
            object,
            offset,
            buffer: Some(buffer.to_proto()),
        };
        let reply = self
            .call(opcode::READ, request.encode_to_vec().into())
            .await?;
        if reply.bytes > buffer.length {
            return Err(FabricError::MalformedFrame {
                why: "OST read reply claims more bytes than asked",
            });
        }
        self.note(target, 0, reply.last_committed, None);
        Ok(LinkReply {
            transno: 0,
            last_committed: reply.last_committed,
            bytes: reply.bytes,
            checksum: reply.checksum,
        })
    }

    /// Reconnects; if the server restarted, replays every kept write in transno order, and
    /// says it is done. Writes the server will not take back are an error naming them.
    async fn recover(&self) -> Result<(), FabricError> {
        let reply = self.connect_once().await?;
        let (restarted, kept) = {
            let mut state = self.state.lock().expect("link state lock poisoned");
            let restarted = state.boot_id != reply.boot_id;
            state.boot_id = reply.boot_id;
            (restarted, state.kept.clone())
        };
        if !restarted {
            return Ok(());
        }
        info!(server = %self.server, kept = kept.len(), "storage server restarted: replaying kept PFS writes");
        let mut lost = Vec::new();
        for ((target, transno), write) in kept {
            let request = pb::WriteRequest {
                target,
                object: write.object,
                offset: write.offset,
                buffer: Some(write.buffer.to_proto()),
                client: self.client,
                replay_transno: transno,
            };
            let result = self
                .node
                .call(
                    self.server,
                    OST_PORTAL,
                    opcode::WRITE,
                    request.encode_to_vec().into(),
                )
                .await;
            match result {
                Ok(body) => {
                    self.replayed.fetch_add(1, Ordering::Relaxed);
                    let stamp = Self::decode(&body)?;
                    self.note(target, 0, stamp.last_committed, None);
                }
                // The server evicted us, or the compute node no longer has the region: the
                // acknowledged write is gone. Say so.
                Err(FabricError::Remote { code, message, .. })
                    if code == ESTALE || code == iopath_fabric::frame::status::errno::ENOENT =>
                {
                    warn!(server = %self.server, target, transno, "kept PFS write lost: {message}");
                    lost.push((target, transno));
                    self.state
                        .lock()
                        .expect("link state lock poisoned")
                        .kept
                        .remove(&(target, transno));
                }
                Err(e) => return Err(e),
            }
        }
        if reply.recovering {
            self.replay_done().await?;
        }
        if lost.is_empty() {
            return Ok(());
        }
        Err(FabricError::Remote {
            peer: self.server,
            code: ESTALE,
            message: format!(
                "{} acknowledged but uncommitted PFS writes were lost in replay ({lost:?})",
                lost.len()
            ),
        })
    }
}
