//! [`Targets`]: the client's connections to the storage servers, one [`OstClient`] per OSS
//! shared by that server's targets, and the direct-attached data path over them.
//!
//! A request is planned into packets (`iopath_layout::plan`); each packet is one OST RPC carrying a
//! buffer descriptor (the [`OstClient`] registers the bytes and the server pulls them). The
//! packets of one request go out at once, to every object in parallel, each waiting for one
//! of its target's [`RPCS_IN_FLIGHT_PER_TARGET_MAX`] slots: a large request fans out over
//! the servers without flooding any one of them (PFS: "data from the application buffer fans
//! out across all affected I/O nodes in parallel").
//!
//! A packet waiting for its target's slot is a Lustre client's "pending" pages; with the
//! node's osc counters ([`OscStats`]) they show in `osc.*.rpc_stats`, and the [`OstClient`]
//! counts each RPC there as it sends it.
//!
//! A target's link (its server's connection, its RPC slots, its osc row) is made when the
//! client connects, on a file system of at most [`EAGER_SERVERS_MAX`] servers, and when the
//! client first uses it on a larger one: there a client of 672 targets that writes one file
//! of one stripe connects to one server, not 48, and holds one link, not 672.
//!
//! The [`OstClient`] keeps every acknowledged-but-uncommitted write until the server's
//! `last_committed` covers it, and after a server restart reconnects and replays them before
//! resending what was in flight; this layer sees only the final outcome.

use iopath_fabric::trace;
use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};
use iopath_admin::lprocfs::Rw;
use iopath_fabric::frame::status::errno;
use iopath_fabric::{Checksummed, FabricError, Nid, Node};
use iopath_layout::TargetMap;
use iopath_ost_client::{
    Capacity, ClientId, LossesTold, LostWrites, OscStats, OstClient, OstConnections, TargetStats,
};
use tokio::sync::{AcquireError, Semaphore, SemaphorePermit};
use tokio::task::JoinSet;
use tracing::debug;

use crate::config::RPCS_IN_FLIGHT_PER_TARGET_MAX;
use crate::error::ClientError;
use crate::layout::plan::{self, ObjectIo, Packing};
use crate::layout::{Layout, ObjectRef};

/// One target as the client reaches it.
#[derive(Debug, Clone)]
struct TargetLink {
    /// The connection to the server holding it.
    oss: Arc<OstClient>,
    /// Its RPC slots.
    rpcs: Arc<Semaphore>,
    /// The node's osc counters of it, if the node keeps them.
    osc: Option<Arc<TargetStats>>,
}

impl TargetLink {
    /// Waits for one of the target's RPC slots for a packet of `bytes`, its pages counted as
    /// pending meanwhile. (A closed semaphore is impossible: it lives as long as the link.)
    async fn slot(&self, rw: Rw, bytes: u64) -> Result<SemaphorePermit<'_>, AcquireError> {
        let _pending = self.osc.as_deref().map(|osc| osc.pending(rw, bytes));
        self.rpcs.acquire().await
    }
}

/// File systems of at most this many storage servers are connected to whole when a client
/// connects, as a Lustre client connects to every target at mount: a server restarted while
/// the client was away hears at once that it is back (and what it kept), and ends its
/// recovery without waiting out the window. Past it, a client connects to a server when it
/// first uses one of its targets, so that thousands of clients of a large file system do not
/// each hold, and ping every second, a connection to every server.
pub const EAGER_SERVERS_MAX: usize = 16;

/// Connections to the storage servers, by target index (see [`EAGER_SERVERS_MAX`] for when
/// each is made).
#[derive(Debug)]
pub struct Targets {
    /// One per server reached so far, pinged; what the pingers found lost.
    connections: OstConnections,
    /// The links made so far.
    links: Mutex<BTreeMap<u32, TargetLink>>,
}

impl Targets {
    /// The storage servers of `targets` (OST index, server NID), reached as `client` from
    /// `node` once each is first needed, counting in `osc_stats`, the node's osc counters, if
    /// given. A target has one index in the whole file system, the one layouts name and its
    /// server answers to.
    pub async fn connect(
        node: &Node,
        client: ClientId,
        targets: &[(u32, Nid)],
        osc_stats: Option<Arc<OscStats>>,
    ) -> Result<Targets, ClientError> {
        let map = TargetMap::new(targets.iter().copied())?;
        let connections =
            OstConnections::new(node.clone(), client, map, iopath_ost_client::ping::INTERVAL)
                .counted_in(osc_stats);
        let servers = connections.targets().servers().len();
        let targets = Targets {
            connections,
            links: Mutex::default(),
        };
        if servers <= EAGER_SERVERS_MAX {
            for index in targets.connections.targets().indices() {
                targets.link(index).await?;
            }
        }
        Ok(targets)
    }

    /// Target `index`'s link, made now (connecting to its server if this client has not yet)
    /// if it was not yet.
    async fn link(&self, index: u32) -> Result<TargetLink, ClientError> {
        if let Some(link) = self.lock_links().get(&index) {
            return Ok(link.clone());
        }
        if self.connections.targets().server(index).is_err() {
            return Err(ClientError::UnknownTarget { target: index });
        }
        let oss = self.connections.to_target(index).await?;
        let made = TargetLink {
            oss,
            rpcs: Arc::new(Semaphore::new(RPCS_IN_FLIGHT_PER_TARGET_MAX)),
            osc: self
                .connections
                .stats()
                .and_then(|stats| stats.target(index)),
        };
        // Another call may have made it meanwhile: the first one made is the one kept, so a
        // target has one set of RPC slots.
        Ok(self.lock_links().entry(index).or_insert(made).clone())
    }

    fn lock_links(&self) -> std::sync::MutexGuard<'_, BTreeMap<u32, TargetLink>> {
        self.links.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Acknowledged writes found lost after a server restart, so far.
    pub fn lost_writes(&self) -> Vec<LostWrites> {
        self.connections.lost_writes()
    }

    /// Fails if writes to `layout`'s objects were found lost (writes to other objects of the
    /// same servers do not concern this file) that the handle `told` keeps count for has not
    /// been told of.
    pub fn check_lost(&self, layout: &Layout, told: &LossesTold) -> Result<(), ClientError> {
        let lost = self.connections.lost_writes();
        let links = self.lock_links();
        let mut found = 0;
        let mut first = None;
        for object in layout.objects() {
            // A target never used has lost nothing of this client's.
            let Some(server) = links.get(&object.target).map(|l| l.oss.server()) else {
                continue;
            };
            let here: usize = lost
                .iter()
                .filter(|l| l.server == server)
                .map(|l| l.to_object(object.target, object.object_id))
                .sum();
            if here > 0 {
                found += here;
                first.get_or_insert(server);
            }
        }
        match (first, told.untold(found)) {
            (Some(server), count) if count > 0 => Err(ClientError::WritesLost {
                server: server.to_string(),
                count,
            }),
            _ => Ok(()),
        }
    }

    /// Bytes every connection holds for replay: acknowledged writes not yet committed.
    pub fn kept_bytes(&self) -> u64 {
        self.connections.kept_bytes()
    }

    /// Writes replayed to restarted storage servers, over every connection's life.
    pub fn replayed_writes(&self) -> u64 {
        self.connections.replayed()
    }

    /// Acknowledged writes not yet committed, over every connection.
    pub fn kept_writes(&self) -> usize {
        self.connections.kept_writes()
    }

    /// Ends the session with every server, all at once: each commits its targets, so every
    /// write it acknowledged to this client is committed, and forgets the client (it is not
    /// waited for at the server's next restart). A server that restarted in between gets the
    /// kept writes replayed first. Fails if any server could not be reached, or lost writes:
    /// then they may not be durable, and the caller must say so.
    pub async fn disconnect(&self) -> Result<(), ClientError> {
        self.connections.disconnect().await?;
        if let Some(lost) = self.lost_writes().first() {
            return Err(ClientError::WritesLost {
                server: lost.server.to_string(),
                count: lost.writes.len(),
            });
        }
        Ok(())
    }

    /// The link of every object of `layout`, in stripe order: resolved before anything is
    /// sent, so a layout naming an unknown target fails whole, not halfway.
    async fn links_of(&self, layout: &Layout) -> Result<Vec<TargetLink>, ClientError> {
        let mut links = Vec::with_capacity(layout.objects().len());
        for object in layout.objects() {
            links.push(self.link(object.target).await?);
        }
        Ok(links)
    }

    /// Creates every object of `layout` on its target, in parallel.
    pub async fn create_objects(&self, layout: &Layout) -> Result<(), ClientError> {
        self.each_object(layout, "create", |oss, o| async move {
            oss.create(o.target, o.object_id).await.map(drop)
        })
        .await
    }

    /// Destroys every object of `layout`, in parallel; an object already gone is fine.
    pub async fn destroy_objects(&self, layout: &Layout) -> Result<(), ClientError> {
        self.each_object(layout, "destroy", |oss, o| async move {
            match oss.destroy(o.target, o.object_id).await {
                Err(FabricError::Remote { code, .. }) if code == errno::ENOENT => Ok(()),
                other => other.map(drop),
            }
        })
        .await
    }

    /// The file's size from its objects' sizes (Lustre's glimpse): a getattr per object, in
    /// parallel, then [`Layout::file_size_bytes`].
    pub async fn size(&self, layout: &Layout) -> Result<u64, ClientError> {
        let links = self.links_of(layout).await?;
        let mut set = JoinSet::new();
        for (index, (object, link)) in layout.objects().iter().copied().zip(links).enumerate() {
            set.spawn(trace::inherit(async move {
                let size = link.oss.getattr(object.target, object.object_id).await;
                (index, object, size)
            }));
        }
        let mut sizes = vec![0u64; layout.objects().len()];
        let mut first_error = None;
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((index, _, Ok(size))) => sizes[index] = size,
                Ok((_, object, Err(source))) => {
                    first_error.get_or_insert(storage("getattr", object, source));
                }
                Err(join) => {
                    first_error.get_or_insert(task_failed("getattr", join));
                }
            }
        }
        if let Some(error) = first_error {
            return Err(error);
        }
        Ok(layout.file_size_bytes(&sizes)?)
    }

    /// Cuts or extends the file to `size_bytes`: each object to the size it has in a file
    /// written densely up to there ([`Layout::object_size_bytes`]), all in parallel.
    pub async fn truncate(&self, layout: &Layout, size_bytes: u64) -> Result<(), ClientError> {
        let mut sizes = Vec::with_capacity(layout.objects().len());
        for (index, object) in layout.objects().iter().enumerate() {
            sizes.push((*object, layout.object_size_bytes(index as u32, size_bytes)?));
        }
        let sizes = Arc::new(sizes);
        self.each_object(layout, "truncate", |oss, o| {
            let sizes = Arc::clone(&sizes);
            async move {
                let size = sizes
                    .iter()
                    .find(|(object, _)| *object == o)
                    .map_or(0, |(_, size)| *size);
                oss.punch(o.target, o.object_id, size).await.map(drop)
            }
        })
        .await
    }

    /// The capacity of every target, in index order, asked of all at once.
    pub async fn statfs(&self) -> Result<Vec<(u32, Capacity)>, ClientError> {
        let targets = self.connections.targets().indices();
        let mut set = JoinSet::new();
        for &target in &targets {
            let oss = Arc::clone(&self.link(target).await?.oss);
            set.spawn(async move { (target, oss.statfs(target).await) });
        }
        let mut all = Vec::with_capacity(targets.len());
        while let Some(joined) = set.join_next().await {
            let (target, reply) = joined.map_err(|join| task_failed("statfs", join))?;
            let reply = reply.map_err(|source| ClientError::Storage {
                op: "statfs",
                target,
                object: 0,
                source,
            })?;
            all.push((target, reply));
        }
        all.sort_by_key(|(target, _)| *target);
        Ok(all)
    }

    /// Commits the journal of every target the layout uses: afterwards none of this file's
    /// writes needs to be kept for replay.
    pub async fn sync(&self, layout: &Layout) -> Result<(), ClientError> {
        self.each_object(layout, "sync", |oss, o| async move {
            oss.sync(o.target).await.map(drop)
        })
        .await
    }

    /// Writes `data` at file offset `offset_bytes`: one RPC per packet, every object in
    /// parallel. Returns once every packet is acknowledged (or the first failure, after the
    /// others have finished: nothing of this call is still in flight when it returns).
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "Targets::write",
        skip_all
    )]
    pub async fn write(
        &self,
        layout: &Layout,
        offset_bytes: u64,
        data: Checksummed,
    ) -> Result<u64, ClientError> {
        let length = data.len() as u64;
        let ios = plan::plan(layout, offset_bytes, length, Packing::DEFAULT)?;
        // A checksum that came with the data holds for a packet only if it is all of it.
        let whole = (ios.len() == 1).then(|| data.clone());
        let data = data.into_data();
        debug!(offset_bytes, length, packets = ios.len(), "write");
        let links = self.links_of(layout).await?;
        let mut set = JoinSet::new();
        for io in ios {
            let object = layout.objects()[io.object_index as usize];
            let link = links[io.object_index as usize].clone();
            let bytes = match &whole {
                Some(whole) if gather_is_whole(&io, whole.len()) => whole.clone(),
                _ => Checksummed::from(gather(&data, &io)),
            };
            set.spawn(trace::inherit(async move {
                let _slot = link.slot(Rw::Write, bytes.len() as u64).await;
                link.oss
                    .write(
                        object.target,
                        object.object_id,
                        io.object_offset_bytes,
                        bytes,
                    )
                    .await
                    .map(drop)
                    .map_err(|source| storage("write", object, source))
            }));
        }
        first_failure(&mut set, "write").await?;
        Ok(length)
    }

    /// Reads `length_bytes` at file offset `offset_bytes`: one RPC per packet, in parallel.
    /// Holes read as zeros. If any packet came back short, the file's size is glimpsed and
    /// the result cut at the end of the file (a read past it is empty).
    pub async fn read(
        &self,
        layout: &Layout,
        offset_bytes: u64,
        length_bytes: u64,
    ) -> Result<Bytes, ClientError> {
        let ios = plan::plan(layout, offset_bytes, length_bytes, Packing::DEFAULT)?;
        debug!(offset_bytes, length_bytes, packets = ios.len(), "read");
        if ios.is_empty() {
            return Ok(Bytes::new());
        }
        let links = self.links_of(layout).await?;
        let mut set = JoinSet::new();
        for io in ios {
            let object = layout.objects()[io.object_index as usize];
            let link = links[io.object_index as usize].clone();
            set.spawn(trace::inherit(async move {
                let _slot = link.slot(Rw::Read, io.length_bytes).await;
                let read = link
                    .oss
                    .read(
                        object.target,
                        object.object_id,
                        io.object_offset_bytes,
                        io.length_bytes,
                    )
                    .await
                    .map_err(|source| storage("read", object, source));
                (io, read)
            }));
        }
        let single = set.len() == 1;
        // Zeroed when first needed: whatever the objects do not have (holes, the end) reads
        // as zero.
        let mut buffer: Option<BytesMut> = None;
        let mut short = false;
        let mut first_error = None;
        while let Some(joined) = set.join_next().await {
            match joined {
                Ok((io, Ok(bytes))) => {
                    // One packet covering the whole request: its bytes are the answer.
                    if single && io.segments.len() == 1 && bytes.len() as u64 == length_bytes {
                        return Ok(bytes);
                    }
                    let buffer =
                        buffer.get_or_insert_with(|| BytesMut::zeroed(length_bytes as usize));
                    short |= plan::scatter(&io, &bytes, buffer);
                }
                Ok((_, Err(error))) => {
                    first_error.get_or_insert(error);
                }
                Err(join) => {
                    first_error.get_or_insert(task_failed("read", join));
                }
            }
        }
        if let Some(error) = first_error {
            return Err(error);
        }
        let mut buffer = buffer.unwrap_or_else(|| BytesMut::zeroed(length_bytes as usize));
        if short {
            // Some object ended inside the request: a hole, or the end of the file. Only the
            // file's size tells which.
            let size = self.size(layout).await?;
            buffer.truncate(plan::visible_len(offset_bytes, length_bytes, size) as usize);
        }
        Ok(buffer.freeze())
    }

    /// Runs `op` on every object of `layout` in parallel; the first failure after all finish.
    async fn each_object<F, Fut>(
        &self,
        layout: &Layout,
        what: &'static str,
        op: F,
    ) -> Result<(), ClientError>
    where
        F: Fn(Arc<OstClient>, ObjectRef) -> Fut,
        Fut: Future<Output = Result<(), FabricError>> + Send + 'static,
    {
        let links = self.links_of(layout).await?;
        let mut set = JoinSet::new();
        for (object, link) in layout.objects().iter().copied().zip(links) {
            let call = op(Arc::clone(&link.oss), object);
            set.spawn(trace::inherit(async move {
                let _slot = link.rpcs.acquire().await;
                call.await.map_err(|source| storage(what, object, source))
            }));
        }
        first_failure(&mut set, what).await
    }
}

/// The bytes of one packet: a slice of the caller's buffer when it is one segment (no copy:
/// the server pulls straight from the caller's memory), gathered into one buffer otherwise.
fn gather(data: &Bytes, io: &ObjectIo) -> Bytes {
    if let [one] = io.segments.as_slice() {
        let start = one.buffer_offset_bytes as usize;
        return data.slice(start..start + one.length_bytes as usize);
    }
    let mut packet = BytesMut::with_capacity(io.length_bytes as usize);
    for segment in &io.segments {
        let start = segment.buffer_offset_bytes as usize;
        packet.extend_from_slice(&data[start..start + segment.length_bytes as usize]);
    }
    packet.freeze()
}

/// True when packet `io` is the caller's whole buffer of `len` bytes, in order.
fn gather_is_whole(io: &ObjectIo, len: usize) -> bool {
    matches!(io.segments.as_slice(), [one]
        if one.buffer_offset_bytes == 0 && one.length_bytes == len as u64)
}

/// Waits for every task; the first failure, if any.
async fn first_failure(
    set: &mut JoinSet<Result<(), ClientError>>,
    what: &'static str,
) -> Result<(), ClientError> {
    let mut first_error = None;
    while let Some(joined) = set.join_next().await {
        match joined {
            Ok(Ok(())) => {}
            Ok(Err(error)) => {
                first_error.get_or_insert(error);
            }
            Err(join) => {
                first_error.get_or_insert(task_failed(what, join));
            }
        }
    }
    first_error.map_or(Ok(()), Err)
}

fn storage(op: &'static str, object: ObjectRef, source: FabricError) -> ClientError {
    ClientError::Storage {
        op,
        target: object.target,
        object: object.object_id,
        source,
    }
}

fn task_failed(what: &'static str, join: tokio::task::JoinError) -> ClientError {
    ClientError::TaskStopped {
        what,
        why: join.to_string(),
    }
}
