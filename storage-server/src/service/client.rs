//! The client side of the OST service: typed calls, and the **replay list** — every write the
//! server acknowledged but has not yet committed (async mode) is kept, data and all, until a
//! reply's `last_committed` covers its transno. After a server restart the client reconnects,
//! replays what it kept in transno order, and says it is done; a client that was evicted learns
//! which acknowledged writes were lost.

use std::collections::{BTreeMap, HashMap};
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::frame::status::errno;
use iopath_fabric::{ChecksumKind, Checksummed, FabricError, Nid, Node};
use iopath_proto::ost as pb;
use prost::Message as _;
use tracing::{info, warn};

use super::{OST_PORTAL, is_connection_error, opcode};

/// How often, and how long, a client tries to reach a restarting server before giving up.
const RECONNECT_ATTEMPTS: u32 = 100;
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);

/// The stamp every state-changing reply carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The operation's transno (0 for operations that change nothing).
    pub transno: u64,
    /// The target's highest committed transno when it replied.
    pub last_committed: u64,
}

/// An acknowledged write the server has not committed yet.
#[derive(Debug, Clone)]
struct Kept {
    object: u64,
    offset: u64,
    data: Bytes,
}

#[derive(Debug, Default)]
struct State {
    boot_id: u64,
    last_committed: HashMap<u32, u64>,
    /// By (target, transno): the replay order.
    kept: BTreeMap<(u32, u64), Kept>,
}

/// What a reconnect did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Whether the server had restarted since the last connect.
    pub restarted: bool,
    /// Writes replayed.
    pub replayed: u64,
    /// Kept writes the server no longer had and would not take back: lost.
    pub lost: Vec<(u32, u64)>,
}

/// A connection to one OSS.
#[derive(Debug)]
pub struct OstClient {
    node: Node,
    server: Nid,
    client: u64,
    checksum: ChecksumKind,
    state: Mutex<State>,
    kept_bytes: AtomicU64,
}

impl OstClient {
    /// Connects to the OSS at `server` as client `client` (an id that stays the same across
    /// restarts of this client).
    pub async fn connect(node: Node, server: Nid, client: u64) -> Result<OstClient, FabricError> {
        let me = OstClient {
            node,
            server,
            client,
            checksum: ChecksumKind::Crc32,
            state: Mutex::default(),
            kept_bytes: AtomicU64::new(0),
        };
        let reply = me.connect_once().await?;
        {
            let mut state = me.state.lock().expect("client state lock poisoned");
            state.boot_id = reply.boot_id;
            for target in &reply.targets {
                state
                    .last_committed
                    .insert(target.index, target.last_committed);
            }
        }
        if reply.recovering {
            // A fresh client has nothing to replay; tell the server not to wait for it.
            me.replay_done().await?;
        }
        Ok(me)
    }

    /// The server's NID.
    pub fn server(&self) -> Nid {
        self.server
    }

    /// Bytes of acknowledged-but-uncommitted writes this client holds for replay.
    pub fn kept_bytes(&self) -> u64 {
        self.kept_bytes.load(Ordering::Relaxed)
    }

    /// Acknowledged-but-uncommitted writes held for replay.
    pub fn kept_writes(&self) -> usize {
        self.state
            .lock()
            .expect("client state lock poisoned")
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

    /// Sends one request; if the server is gone or restarting, reconnects, replays, and sends
    /// it again, for a bounded time. Acknowledged writes the server lost (this client was
    /// evicted) are an error here, never silence.
    async fn call(&self, op: u32, body: Bytes) -> Result<pb::OpReply, FabricError> {
        let mut attempts = 0;
        loop {
            let error = match self
                .node
                .call(self.server, OST_PORTAL, op, body.clone())
                .await
            {
                Ok(reply) => {
                    let reply = pb::OpReply::decode(reply.as_ref()).map_err(|_| {
                        FabricError::MalformedFrame {
                            why: "undecodable OST reply",
                        }
                    })?;
                    let known = self
                        .state
                        .lock()
                        .expect("client state lock poisoned")
                        .boot_id;
                    if reply.boot_id != 0 && reply.boot_id != known {
                        // The server restarted between our requests without our noticing a
                        // failure: replay before trusting anything else.
                        self.recover().await?;
                    }
                    return Ok(reply);
                }
                Err(error) => error,
            };
            let recovering =
                matches!(&error, FabricError::Remote { code, .. } if *code == errno::EINPROGRESS);
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
                // Replayed; the window closes once every client has (or is evicted).
                tokio::time::sleep(RECONNECT_PAUSE).await;
            }
        }
    }

    /// Reconnects and replays; lost writes become an error.
    async fn recover(&self) -> Result<(), FabricError> {
        let report = self.reconnect_and_replay().await?;
        if report.lost.is_empty() {
            return Ok(());
        }
        Err(FabricError::Remote {
            peer: self.server,
            code: errno::ESTALE,
            message: format!(
                "evicted by {}: {} acknowledged but uncommitted writes were lost ({:?})",
                self.server,
                report.lost.len(),
                report.lost
            ),
        })
    }

    /// Notes a reply's stamp: keeps `data` if the write is not committed yet, and forgets kept
    /// writes the target has now committed.
    fn note(&self, target: u32, stamp: &pb::OpReply, kept: Option<Kept>) {
        let mut state = self.state.lock().expect("client state lock poisoned");
        let committed = state.last_committed.entry(target).or_insert(0);
        *committed = (*committed).max(stamp.last_committed);
        let committed = *committed;
        if let Some(kept) = kept
            && stamp.transno > committed
        {
            self.kept_bytes
                .fetch_add(kept.data.len() as u64, Ordering::Relaxed);
            state.kept.insert((target, stamp.transno), kept);
        }
        let done: Vec<(u32, u64)> = state
            .kept
            .range((target, 0)..=(target, committed))
            .map(|(k, _)| *k)
            .collect();
        for key in done {
            if let Some(k) = state.kept.remove(&key) {
                self.kept_bytes
                    .fetch_sub(k.data.len() as u64, Ordering::Relaxed);
            }
        }
    }

    /// Creates object `object` on `target`.
    pub async fn create(&self, target: u32, object: u64) -> Result<Stamp, FabricError> {
        let body = pb::ObjectRequest { target, object }.encode_to_vec().into();
        let reply = self.call(opcode::CREATE, body).await?;
        self.note(target, &reply, None);
        Ok(Stamp {
            transno: reply.transno,
            last_committed: reply.last_committed,
        })
    }

    /// Writes `data` at `offset`: the server pulls it from a region registered for the call.
    pub async fn write(
        &self,
        target: u32,
        object: u64,
        offset: u64,
        data: impl Into<Checksummed>,
    ) -> Result<Stamp, FabricError> {
        let data = data.into();
        // The region lives until the reply: the server pulls from it meanwhile.
        let region = self.node.regions().register_source(data.clone())?;
        let data = data.into_data();
        let buffer = Some(region.describe_all(self.checksum).to_proto());
        let request = pb::WriteRequest {
            target,
            object,
            offset,
            buffer,
            client: self.client,
            replay_transno: 0,
        };
        let reply = self
            .call(opcode::WRITE, request.encode_to_vec().into())
            .await?;
        self.note(
            target,
            &reply,
            Some(Kept {
                object,
                offset,
                data,
            }),
        );
        Ok(Stamp {
            transno: reply.transno,
            last_committed: reply.last_committed,
        })
    }

    /// Replays one kept write under its original transno (no reconnect loop: replays happen
    /// inside one).
    async fn replay_write(
        &self,
        target: u32,
        transno: u64,
        kept: &Kept,
    ) -> Result<pb::OpReply, FabricError> {
        let region = self.node.regions().register_source(kept.data.clone())?;
        let buffer = Some(region.describe_all(self.checksum).to_proto());
        let request = pb::WriteRequest {
            target,
            object: kept.object,
            offset: kept.offset,
            buffer,
            client: self.client,
            replay_transno: transno,
        };
        let reply = self
            .node
            .call(
                self.server,
                OST_PORTAL,
                opcode::WRITE,
                request.encode_to_vec().into(),
            )
            .await?;
        pb::OpReply::decode(reply.as_ref()).map_err(|_| FabricError::MalformedFrame {
            why: "undecodable OST reply",
        })
    }

    /// Reads up to `length` bytes at `offset` (fewer at the end of the object).
    pub async fn read(
        &self,
        target: u32,
        object: u64,
        offset: u64,
        length: u64,
    ) -> Result<Bytes, FabricError> {
        let sink = self.node.regions().register_sink(length)?;
        let buffer = Some(sink.describe(0, length, self.checksum)?.to_proto());
        let body = pb::ReadRequest {
            target,
            object,
            offset,
            buffer,
        }
        .encode_to_vec()
        .into();
        let reply = self.call(opcode::READ, body).await?;
        let mut data = sink.into_bytes();
        data.truncate(reply.bytes as usize);
        // Checked right after it arrived: what we got is what the server sent.
        let actual = self.checksum.compute(&data);
        if reply.bytes > 0 && actual != reply.checksum {
            return Err(FabricError::ChecksumMismatch {
                peer: self.server,
                region: 0,
                expected: reply.checksum,
                actual,
                attempts: 1,
            });
        }
        Ok(data)
    }

    /// The object's size.
    pub async fn getattr(&self, target: u32, object: u64) -> Result<u64, FabricError> {
        let body = pb::ObjectRequest { target, object }.encode_to_vec().into();
        Ok(self.call(opcode::GETATTR, body).await?.size)
    }

    /// Truncates or extends the object to `size`.
    pub async fn punch(&self, target: u32, object: u64, size: u64) -> Result<Stamp, FabricError> {
        let body = pb::PunchRequest {
            target,
            object,
            size,
        }
        .encode_to_vec()
        .into();
        let reply = self.call(opcode::PUNCH, body).await?;
        self.note(target, &reply, None);
        Ok(Stamp {
            transno: reply.transno,
            last_committed: reply.last_committed,
        })
    }

    /// Removes the object.
    pub async fn destroy(&self, target: u32, object: u64) -> Result<Stamp, FabricError> {
        let body = pb::ObjectRequest { target, object }.encode_to_vec().into();
        let reply = self.call(opcode::DESTROY, body).await?;
        self.note(target, &reply, None);
        Ok(Stamp {
            transno: reply.transno,
            last_committed: reply.last_committed,
        })
    }

    /// Commits the target's journal: afterwards nothing this client kept for it is needed.
    pub async fn sync(&self, target: u32) -> Result<Stamp, FabricError> {
        let body = pb::SyncRequest { target }.encode_to_vec().into();
        let reply = self.call(opcode::SYNC, body).await?;
        self.note(target, &reply, None);
        Ok(Stamp {
            transno: reply.transno,
            last_committed: reply.last_committed,
        })
    }

    /// Reconnects; if the server restarted, replays every kept write in transno order and
    /// says it is done. Kept writes the server will not take back are reported as lost.
    pub async fn reconnect_and_replay(&self) -> Result<ReplayReport, FabricError> {
        let reply = self.connect_once().await?;
        let mut report = ReplayReport::default();
        let (restarted, kept) = {
            let mut state = self.state.lock().expect("client state lock poisoned");
            let restarted = state.boot_id != reply.boot_id;
            state.boot_id = reply.boot_id;
            (restarted, state.kept.clone())
        };
        if !restarted {
            return Ok(report);
        }
        report.restarted = true;
        info!(server = %self.server, kept = kept.len(), recovering = reply.recovering, "server restarted: replaying kept writes");
        for ((target, transno), write) in kept {
            match self.replay_write(target, transno, &write).await {
                Ok(stamp) => {
                    report.replayed += 1;
                    self.note(target, &stamp, None);
                }
                Err(FabricError::Remote { code, message, .. }) if code == errno::ESTALE => {
                    warn!(server = %self.server, target, transno, "kept write lost: {message}");
                    report.lost.push((target, transno));
                    let mut state = self.state.lock().expect("client state lock poisoned");
                    if let Some(k) = state.kept.remove(&(target, transno)) {
                        self.kept_bytes
                            .fetch_sub(k.data.len() as u64, Ordering::Relaxed);
                    }
                }
                Err(e) => return Err(e),
            }
        }
        if reply.recovering {
            self.replay_done().await?;
        }
        // The replayed writes are committed in order by the server as it recovers; their
        // replies carried last_committed, and `note` dropped what is now safe.
        Ok(report)
    }
}
