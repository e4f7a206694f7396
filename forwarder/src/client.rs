//! What a compute node calls: [`FyodClient`] (one per compute node and fyod) and
//! [`FyodFile`] (an open file at the fyod).
//!
//! A write registers the caller's bytes as a source region and sends the fyod only its
//! descriptor; a read registers a zeroed sink and sends its descriptor. The fyod (UFS) or the
//! storage servers (PFS) move the bytes. In PFS mode the write's region stays registered —
//! **pinned** — until every storage write it fed is committed, because a restarted storage
//! server pulls it again in replay; [`FyodClient::kept_bytes`] says how much that pins, and a
//! client over [`FyodClient::set_pinned_bytes_max`] asks the fyod to commit before writing
//! more. In UFS mode the fyod keeps its own copy and nothing stays pinned.
//!
//! Calls on one file carry a sequence number; the fyod runs them in that order however the
//! network delivers them. A call that fails in transit (no reply, so the fyod may or may not
//! have it) leaves a gap the fyod would wait for forever, so the handle then refuses further
//! calls ([`ForwarderError::HandleBroken`]): reopen the file.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use iopath_fabric::frame::status::errno;
use iopath_fabric::{ChecksumKind, Checksummed, FabricError, Nid, Node, SourceRegion};
use iopath_mds::wire::{layout_from_wire, stripe_to_wire};
use iopath_mds::{Layout, StripeRequest};
use iopath_proto::fyod as pb;
use prost::Message as _;

use crate::error::{ForwarderError, Result};
use crate::modes::{CallKind, FileSystem, IoMode};
use crate::policy::pins::PinTable;
use crate::service::{FYOD_PORTAL, FyodStats, opcode};

/// Bytes of PFS write buffers a client keeps pinned before it asks the fyod to commit.
pub const PINNED_BYTES_MAX_DEFAULT: u64 = 1 << 30;

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpenOptions {
    /// Create the file if it does not exist.
    pub create: bool,
    /// The layout to create it with; `None` inherits the directory's default.
    pub stripe: Option<StripeRequest>,
    /// MUNIX (atomic across fyods) or MASYNC.
    pub io_mode: IoMode,
    /// How the file's calls are served unless a call says otherwise.
    pub call: CallKind,
    /// Permission bits for a new file (0: 0644).
    pub permissions: u32,
}

impl Default for OpenOptions {
    fn default() -> Self {
        OpenOptions {
            create: false,
            stripe: None,
            io_mode: IoMode::Munix,
            call: CallKind::Sync,
            permissions: 0,
        }
    }
}

#[derive(Debug)]
struct ClientInner {
    node: Node,
    fyod: Nid,
    client_id: u64,
    checksum: ChecksumKind,
    file_system: FileSystem,
    request_max_bytes: u64,
    pins: Mutex<PinTable<SourceRegion>>,
    pinned_bytes_max: AtomicU64,
    /// The next open's id: from the clock, so a restarted node does not number its opens
    /// as its earlier life did.
    next_open_id: AtomicU64,
}

/// A compute node's connection to its fyod. Cheap to clone.
#[derive(Debug, Clone)]
pub struct FyodClient {
    inner: Arc<ClientInner>,
}

impl FyodClient {
    /// Connects to the fyod at `fyod` as compute node `client_id` (stable across this node's
    /// restarts), describing buffers with CRC32.
    pub async fn connect(node: Node, fyod: Nid, client_id: u64) -> Result<FyodClient> {
        FyodClient::connect_with_checksum(node, fyod, client_id, ChecksumKind::Crc32).await
    }

    /// [`FyodClient::connect`] describing buffers with `checksum`.
    pub async fn connect_with_checksum(
        node: Node,
        fyod: Nid,
        client_id: u64,
        checksum: ChecksumKind,
    ) -> Result<FyodClient> {
        let body = pb::ConnectRequest { client: client_id }
            .encode_to_vec()
            .into();
        let reply = node.call(fyod, FYOD_PORTAL, opcode::CONNECT, body).await?;
        // A call waiting on a fyod that restarted is sent again at once: the new start
        // answers EBADF for a handle it never gave, without an RPC timeout's wait.
        node.watch_restarts(fyod);
        let reply = pb::ConnectReply::decode(reply.as_ref())
            .map_err(|e| ForwarderError::malformed("connect reply", e.to_string()))?;
        let file_system = FileSystem::from_wire(reply.file_system).ok_or_else(|| {
            ForwarderError::malformed(
                "connect reply",
                format!("file system {}", reply.file_system),
            )
        })?;
        Ok(FyodClient {
            inner: Arc::new(ClientInner {
                node,
                fyod,
                client_id,
                checksum,
                file_system,
                request_max_bytes: reply.request_max_bytes,
                pins: Mutex::new(PinTable::new()),
                pinned_bytes_max: AtomicU64::new(PINNED_BYTES_MAX_DEFAULT),
                next_open_id: AtomicU64::new(first_open_id()),
            }),
        })
    }

    /// The fyod's NID.
    pub fn fyod(&self) -> Nid {
        self.inner.fyod
    }

    /// How the fyod stores files.
    pub fn file_system(&self) -> FileSystem {
        self.inner.file_system
    }

    /// Bytes of write buffers pinned until the storage commits them (PFS).
    pub fn kept_bytes(&self) -> u64 {
        self.inner
            .pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pinned_bytes()
    }

    /// Sets how many bytes may stay pinned before a write first asks the fyod to commit.
    pub fn set_pinned_bytes_max(&self, bytes: u64) {
        self.inner.pinned_bytes_max.store(bytes, Ordering::Relaxed);
    }

    /// Opens (or creates) `path` at the fyod.
    pub async fn open(&self, path: &str, options: OpenOptions) -> Result<FyodFile> {
        let request = pb::OpenRequest {
            client: self.inner.client_id,
            path: path.to_owned(),
            create: options.create,
            stripe: options.stripe.as_ref().map(stripe_to_wire),
            io_mode: options.io_mode.to_wire() as i32,
            call: options.call.to_wire() as i32,
            mode: options.permissions,
            open_id: self.inner.next_open_id.fetch_add(1, Ordering::Relaxed),
        };
        let body: Bytes = request.encode_to_vec().into();
        let reply = match self.call(opcode::OPEN, body.clone()).await {
            Err(ForwarderError::Fabric(FabricError::Remote { code, .. }))
                if code == errno::ENOTCONN =>
            {
                // The fyod restarted and forgot this compute node: connect again, then open —
                // the same open, its id too: if the earlier start created the file for it,
                // this one says so. (Handles of the earlier connection are gone; their calls
                // are refused.)
                self.reconnect().await?;
                self.call(opcode::OPEN, body).await?
            }
            reply => reply?,
        };
        let reply = pb::OpenReply::decode(reply.as_ref())
            .map_err(|e| ForwarderError::malformed("open reply", e.to_string()))?;
        let wire = reply
            .layout
            .ok_or_else(|| ForwarderError::malformed("open reply", "no layout"))?;
        let layout = layout_from_wire(&wire)?;
        Ok(FyodFile {
            inner: Arc::new(FileInner {
                client: self.clone(),
                handle: reply.handle,
                ino: reply.ino,
                created: reply.created,
                layout,
                call_default: options.call,
                next_seq: AtomicU64::new(0),
                broken: Mutex::new(None),
            }),
        })
    }

    /// The fyod's counters (sync calls in flight and their peak, among others).
    pub async fn stats(&self) -> Result<FyodStats> {
        let reply = self.call(opcode::STATS, Bytes::new()).await?;
        let reply = pb::StatsReply::decode(reply.as_ref())
            .map_err(|e| ForwarderError::malformed("stats reply", e.to_string()))?;
        FyodStats::from_wire(&reply)
    }

    /// The capacity of every storage target behind the fyod, in index order.
    pub async fn statfs(&self) -> Result<Vec<(u32, iopath_ost_client::Capacity)>> {
        let reply = self
            .call(opcode::STATFS, pb::StatfsRequest {}.encode_to_vec().into())
            .await?;
        let reply = pb::StatfsReply::decode(reply.as_ref())
            .map_err(|e| ForwarderError::malformed("statfs reply", e.to_string()))?;
        reply
            .targets
            .into_iter()
            .map(|t| {
                t.capacity
                    .map(|c| (t.target, iopath_ost_client::Capacity::from_wire(&c)))
                    .ok_or_else(|| {
                        ForwarderError::malformed("statfs reply", "a target without its capacity")
                    })
            })
            .collect()
    }

    /// Asks the fyod to commit every target this client has pinned memory for; the pinned
    /// regions are released.
    pub async fn commit(&self) -> Result<()> {
        let targets = self
            .inner
            .pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .targets();
        if targets.is_empty() {
            return Ok(());
        }
        let body = pb::CommitRequest { targets }.encode_to_vec().into();
        let reply = self.call(opcode::COMMIT, body).await?;
        self.note(&decode_call_reply(&reply)?.committed);
        Ok(())
    }

    /// Asks the fyod to commit `targets` (each once, all at once), whether or not this client
    /// has pinned memory for them: afterwards every write the fyod acknowledged to it is
    /// committed, in UFS mode too. Pinned regions the commit covers are released.
    pub async fn commit_targets(&self, targets: &[u32]) -> Result<()> {
        if targets.is_empty() {
            return Ok(());
        }
        let body = pb::CommitRequest {
            targets: targets.to_vec(),
        }
        .encode_to_vec()
        .into();
        let reply = self.call(opcode::COMMIT, body).await?;
        self.note(&decode_call_reply(&reply)?.committed);
        Ok(())
    }

    /// Tells the fyod this compute node is done (it stops counting towards the fyod's
    /// maximum).
    pub async fn disconnect(&self) -> Result<()> {
        let body = pb::DisconnectRequest {
            client: self.inner.client_id,
        }
        .encode_to_vec()
        .into();
        self.call(opcode::DISCONNECT, body).await.map(drop)
    }

    /// Connects to the fyod again under this node's client id (after the fyod restarted).
    async fn reconnect(&self) -> Result<()> {
        let body = pb::ConnectRequest {
            client: self.inner.client_id,
        }
        .encode_to_vec()
        .into();
        tracing::info!(fyod = %self.inner.fyod, client = self.inner.client_id, "the fyod forgot this compute node: connecting again");
        self.call(opcode::CONNECT, body).await.map(drop)
    }

    async fn call(&self, op: u32, body: Bytes) -> Result<Bytes> {
        Ok(self
            .inner
            .node
            .call(self.inner.fyod, FYOD_PORTAL, op, body)
            .await?)
    }

    /// Notes the fyod's view of commits; releases what no longer needs pinning.
    fn note(&self, committed: &[pb::Committed]) {
        let mut released = Vec::new();
        {
            let mut pins = self
                .inner
                .pins
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            for c in committed {
                released.extend(pins.note_committed(c.target, c.last_committed));
            }
        }
        // Unregistered here, outside the lock.
        drop(released);
    }
}

#[derive(Debug)]
struct FileInner {
    client: FyodClient,
    handle: u64,
    ino: u64,
    created: bool,
    layout: Layout,
    call_default: CallKind,
    next_seq: AtomicU64,
    /// Why the handle is unusable, once a call failed in transit.
    broken: Mutex<Option<String>>,
}

/// A file open at the fyod. Cheap to clone; clones share the handle and its call order.
#[derive(Debug, Clone)]
pub struct FyodFile {
    inner: Arc<FileInner>,
}

fn decode_call_reply(body: &[u8]) -> Result<pb::CallReply> {
    pb::CallReply::decode(body).map_err(|e| ForwarderError::malformed("call reply", e.to_string()))
}

impl FyodFile {
    /// The handle at the fyod.
    pub fn handle(&self) -> u64 {
        self.inner.handle
    }

    /// The file's inode number.
    pub fn ino(&self) -> u64 {
        self.inner.ino
    }

    /// Whether this open created the file.
    pub fn created(&self) -> bool {
        self.inner.created
    }

    /// The file's layout.
    pub fn layout(&self) -> &Layout {
        &self.inner.layout
    }

    /// Sends one call in the handle's order; a failure in transit breaks the handle.
    async fn call(&self, op: u32, body: impl FnOnce(u64) -> Bytes) -> Result<pb::CallReply> {
        if let Some(why) = self
            .inner
            .broken
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
        {
            return Err(ForwarderError::HandleBroken {
                handle: self.inner.handle,
                why,
            });
        }
        // The number is taken only now, right before the call leaves.
        let seq = self.inner.next_seq.fetch_add(1, Ordering::Relaxed);
        let client = &self.inner.client;
        let result = client
            .inner
            .node
            .call(client.inner.fyod, FYOD_PORTAL, op, body(seq))
            .await;
        let reply = match result {
            Ok(reply) => reply,
            // The fyod answered: the call took its place in order.
            Err(error @ FabricError::Remote { .. }) => return Err(error.into()),
            Err(error) => {
                *self
                    .inner
                    .broken
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner) = Some(error.to_string());
                return Err(error.into());
            }
        };
        let reply = decode_call_reply(&reply)?;
        client.note(&reply.committed);
        Ok(reply)
    }

    fn check_length(&self, length: u64) -> Result<()> {
        let max = self.inner.client.inner.request_max_bytes;
        if length > max {
            return Err(ForwarderError::invalid(
                "length",
                format!("{length} bytes exceeds the fyod's maximum of {max} per call"),
            ));
        }
        Ok(())
    }

    /// Writes `data` at `offset`, served as the file's default call kind. Returns the bytes
    /// written.
    pub async fn write_at(&self, offset: u64, data: impl Into<Checksummed>) -> Result<u64> {
        self.write_at_with(offset, data, self.inner.call_default)
            .await
    }

    /// Writes `data` at `offset` as a `kind` call (`Sync`: write(); `Async`: cwrite()).
    pub async fn write_at_with(
        &self,
        offset: u64,
        data: impl Into<Checksummed>,
        kind: CallKind,
    ) -> Result<u64> {
        let data = data.into();
        let length = data.len() as u64;
        self.check_length(length)?;
        offset.checked_add(length).ok_or_else(|| {
            ForwarderError::invalid("offset", format!("{length} bytes at {offset} overflow"))
        })?;
        let client = &self.inner.client;
        let over = client.kept_bytes().saturating_add(length)
            > client.inner.pinned_bytes_max.load(Ordering::Relaxed);
        if over {
            client.commit().await?;
        }
        // The bytes stay here; the fyod or the storage servers pull them by this descriptor.
        let region = client.inner.node.regions().register_source(data)?;
        let buffer = region.describe_all(client.inner.checksum);
        let handle = self.inner.handle;
        let reply = self
            .call(opcode::WRITE, |seq| {
                pb::WriteRequest {
                    handle,
                    seq,
                    call: kind.to_wire() as i32,
                    offset,
                    buffer: Some(buffer.to_proto()),
                }
                .encode_to_vec()
                .into()
            })
            .await?;
        // What the storage received is what we described.
        if let Some(expected) = buffer.checksum
            && reply.checksum != expected
        {
            return Err(ForwarderError::ChecksumMismatch {
                what: "write (as received by the storage)",
                expected,
                actual: reply.checksum,
            });
        }
        let stamps: Vec<(u32, u64)> = reply.stamps.iter().map(|s| (s.target, s.transno)).collect();
        let unpinned = client
            .inner
            .pins
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pin(region, length, &stamps);
        drop(unpinned);
        Ok(reply.bytes)
    }

    /// Reads up to `length` bytes at `offset`, served as the file's default call kind: fewer
    /// at the end of the file, zeros in holes.
    pub async fn read_at(&self, offset: u64, length: u64) -> Result<Bytes> {
        self.read_at_with(offset, length, self.inner.call_default)
            .await
    }

    /// Reads as a `kind` call (`Sync`: read(); `Async`: cread()).
    pub async fn read_at_with(&self, offset: u64, length: u64, kind: CallKind) -> Result<Bytes> {
        self.check_length(length)?;
        offset.checked_add(length).ok_or_else(|| {
            ForwarderError::invalid("offset", format!("{length} bytes at {offset} overflow"))
        })?;
        let client = &self.inner.client;
        let sink = client.inner.node.regions().register_sink(length)?;
        let buffer = sink.describe(0, length, client.inner.checksum)?;
        let handle = self.inner.handle;
        let reply = self
            .call(opcode::READ, |seq| {
                pb::ReadRequest {
                    handle,
                    seq,
                    call: kind.to_wire() as i32,
                    offset,
                    buffer: Some(buffer.to_proto()),
                }
                .encode_to_vec()
                .into()
            })
            .await?;
        if reply.bytes > length {
            return Err(ForwarderError::malformed(
                "read reply",
                format!("{} bytes returned for {length} asked", reply.bytes),
            ));
        }
        let mut data = sink.into_bytes();
        data.truncate(reply.bytes as usize);
        // Checked right after it arrived: what we hold is what the file holds.
        let actual = client.inner.checksum.compute(&data);
        if actual != reply.checksum {
            return Err(ForwarderError::ChecksumMismatch {
                what: "read",
                expected: reply.checksum,
                actual,
            });
        }
        Ok(data)
    }

    fn handle_call(&self, seq: u64) -> Bytes {
        pb::HandleRequest {
            handle: self.inner.handle,
            seq,
            call: self.inner.call_default.to_wire() as i32,
            size: 0,
        }
        .encode_to_vec()
        .into()
    }

    /// Cuts the file to `size_bytes`, or extends it with a hole.
    pub async fn truncate(&self, size_bytes: u64) -> Result<()> {
        self.call(opcode::TRUNCATE, |seq| {
            pb::HandleRequest {
                handle: self.inner.handle,
                seq,
                call: self.inner.call_default.to_wire() as i32,
                size: size_bytes,
            }
            .encode_to_vec()
            .into()
        })
        .await
        .map(drop)
    }

    /// The file's size (glimpsed from its objects).
    pub async fn size(&self) -> Result<u64> {
        let reply = self.call(opcode::SIZE, |seq| self.handle_call(seq)).await?;
        Ok(reply.size_bytes)
    }

    /// Commits the file's data: afterwards it survives a storage server crash, and nothing
    /// this file's writes pinned stays pinned.
    pub async fn fsync(&self) -> Result<()> {
        self.call(opcode::FSYNC, |seq| self.handle_call(seq))
            .await
            .map(drop)
    }

    /// Closes the handle (not a commit: use [`FyodFile::fsync`]). Calls on clones of this
    /// file afterwards are refused by the fyod.
    pub async fn close(self) -> Result<()> {
        self.call(opcode::CLOSE, |seq| self.handle_call(seq))
            .await
            .map(drop)
    }
}

/// The first open id of a compute node's connection: its microsecond clock, as xids start.
fn first_open_id() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros() as u64)
        .max(1)
}
