//! What the fyod talks to on its clients' behalf: the metadata service (opens and creates) and
//! the storage servers. Each storage server gets, on first use, two [`OstClient`] connections:
//!
//! - `ost`, under the fyod's id: object creation, getattr, sync, and UFS writes and reads of the
//!   fyod's own buffers — each uncommitted UFS write kept *with its bytes* for replay (what
//!   [`FyodStats::kept_bytes`](super::FyodStats::kept_bytes) counts).
//! - `link`, under the fyod's PFS link id ([`ClientId::pfs_link`]): PFS writes and reads by
//!   *sub-descriptor* of a compute node's memory ([`OstClient::write_by_descriptor`]), each
//!   uncommitted write kept as its descriptor, not its bytes. After a server restart the link
//!   replays them in transno order and the server pulls the bytes again from the compute node.
//!   That is why the compute node keeps each PFS write's region registered until the fyod
//!   reports the write committed ([`crate::policy::pins`]); a compute node that dropped its
//!   region makes the replay fail, and the write is reported lost — never silently.
//!
//! The link connects under its own client id, so the server's recovery waits for it separately
//! from the fyod's `ost` connection. The fyod's view of each target's `last_committed` — what
//! it tells clients so they can release pinned memory — is the highest either connection has
//! seen.

use std::collections::{BTreeMap, BTreeSet};
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use iopath_fabric::trace;
use iopath_fabric::{BufferDescriptor, FabricError, Nid, Node};
use iopath_layout::TargetMap;
use iopath_mds::error::errno::EEXIST;
use iopath_mds::{Attributes, MdsClient, ObjectRef, Origin, Owner, StripeRequest};
use iopath_ost_client::{ClientId, DescriptorReply, OscStats, OstClient, OstConnections};
use tokio::sync::OnceCell;
use tokio::task::JoinSet;

use crate::error::{ForwarderError, Result};
use crate::service::files::OpenFile;

/// Which way a descriptor-named transfer's bytes move.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Direction {
    /// The server pulls from the compute node.
    Write,
    /// The server pushes into the compute node.
    Read,
}

/// Both connections to the server holding one target.
#[derive(Debug)]
struct Server {
    /// Under the fyod's id: metadata-like calls and UFS I/O, kept by bytes.
    ost: Arc<OstClient>,
    /// Under the fyod's PFS link id: PFS I/O, kept by descriptor.
    link: Arc<OstClient>,
}

/// A target: its index (in the whole file system, the one its server answers to).
#[derive(Debug, Clone, Copy)]
struct StorageTarget {
    index: u32,
}

/// How long a starting fyod keeps trying to connect to every storage server before it leaves
/// each to the first call that needs it.
const CONNECT_AT_START_FOR: std::time::Duration = std::time::Duration::from_secs(60);

/// The fyod's two connection sets to the storage servers.
#[derive(Debug)]
struct Connections {
    /// Under the fyod's id.
    ost: OstConnections,
    /// Under its PFS link id ([`ClientId::pfs_link`]).
    link: OstConnections,
}

/// The fyod's backends.
#[derive(Debug)]
pub(crate) struct Backend {
    node: Node,
    mds: MdsClient,
    fyod_id: ClientId,
    /// Made once the metadata service has said what the targets are.
    connections: OnceCell<Connections>,
    committed: Mutex<BTreeMap<u32, u64>>,
    /// Storage requests sent.
    pub(crate) ost_requests: AtomicU64,
    /// The node's osc counters, which both connection sets count into, if it keeps them.
    osc_stats: Option<Arc<OscStats>>,
}

impl Backend {
    /// Backends reached from `node`, as storage client `fyod_id`, counted in `osc_stats`,
    /// the node's osc counters, if given.
    pub(crate) fn new(
        node: Node,
        mds: Nid,
        fyod_id: ClientId,
        osc_stats: Option<Arc<OscStats>>,
    ) -> Backend {
        Backend {
            mds: MdsClient::new(node.clone(), mds),
            node,
            fyod_id,
            connections: OnceCell::new(),
            committed: Mutex::default(),
            ost_requests: AtomicU64::new(0),
            osc_stats,
        }
    }

    /// The connection sets, made when first needed: the file system's targets are asked of
    /// the metadata service once.
    async fn connections(&self) -> Result<&Connections> {
        self.connections
            .get_or_try_init(|| async {
                let list = self.mds.targets().await?;
                let targets = TargetMap::new(list.targets.iter().map(|t| (t.index, t.nid)))?;
                let set = |id| {
                    OstConnections::new(
                        self.node.clone(),
                        id,
                        targets.clone(),
                        iopath_ost_client::ping::INTERVAL,
                    )
                    .counted_in(self.osc_stats.clone())
                };
                Ok::<_, ForwarderError>(Connections {
                    ost: set(self.fyod_id),
                    link: set(self.fyod_id.pfs_link()),
                })
            })
            .await
    }

    async fn locate(&self, target: u32) -> Result<(StorageTarget, Arc<Server>)> {
        let connections = self.connections().await?;
        let server = Server {
            ost: connections.ost.to_target(target).await?,
            link: connections.link.to_target(target).await?,
        };
        Ok((StorageTarget { index: target }, Arc::new(server)))
    }

    fn note_committed(&self, target: u32, last_committed: u64) {
        let mut committed = self
            .committed
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let entry = committed.entry(target).or_insert(0);
        *entry = (*entry).max(last_committed);
    }

    /// The fyod's fabric node.
    pub(crate) fn node(&self) -> &Node {
        &self.node
    }

    /// Every target's last committed transno, as far as the fyod knows.
    pub(crate) fn committed(&self) -> Vec<(u32, u64)> {
        self.committed
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .map(|(t, c)| (*t, *c))
            .collect()
    }

    /// PFS writes replayed to restarted storage servers.
    pub(crate) fn replayed(&self) -> u64 {
        self.connections.get().map_or(0, |c| c.link.replayed())
    }

    /// Ends the fyod's sessions with every storage server it reached: each commits its
    /// targets and forgets the fyod (see [`OstClient::disconnect`]). The first failure, after
    /// all were tried.
    pub(crate) async fn disconnect(&self) -> Result<()> {
        let Some(connections) = self.connections.get() else {
            return Ok(());
        };
        let (ost, link) = tokio::join!(connections.ost.disconnect(), connections.link.disconnect());
        ost.and(link).map_err(Into::into)
    }

    /// Connects both sets to every storage server, on a task of its own, trying again each
    /// second for [`CONNECT_AT_START_FOR`] until the metadata service and the servers answer.
    /// A fyod that restarted thus tells each server at once that it kept nothing (a fresh
    /// client's end of replay), where it used to connect only when a call first needed the
    /// server — and a server restarted meanwhile waited its whole recovery window for the
    /// fyod's two ids, stalling every other client's calls that long. Ends early if the fyod
    /// goes.
    pub(crate) fn connect_all_soon(self: &Arc<Self>) {
        let backend = Arc::downgrade(self);
        tokio::spawn(async move {
            let started = tokio::time::Instant::now();
            // Bounded: one try a second, for CONNECT_AT_START_FOR.
            loop {
                let Some(backend) = backend.upgrade() else {
                    return;
                };
                if backend.node.is_shut_down() {
                    return;
                }
                match backend.connect_all().await {
                    Ok(()) => return,
                    Err(error) if started.elapsed() < CONNECT_AT_START_FOR => {
                        tracing::debug!(%error, "connecting to the storage servers at start: trying again");
                    }
                    Err(error) => {
                        tracing::warn!(%error, "could not connect to every storage server at start; each is connected when a call first needs it");
                        return;
                    }
                }
                drop(backend);
                tokio::time::sleep(std::time::Duration::from_secs(1)).await;
            }
        });
    }

    /// Connects both sets to every storage server now; the first failure.
    async fn connect_all(&self) -> Result<()> {
        let connections = self.connections().await?;
        connections.ost.connect_all().await?;
        connections.link.connect_all().await?;
        Ok(())
    }

    /// Bytes the fyod's own storage clients keep for replay (UFS writes' copies; the link's
    /// descriptors pin nothing here).
    pub(crate) fn kept_bytes(&self) -> u64 {
        self.connections.get().map_or(0, |c| c.ost.kept_bytes())
    }

    /// Opens `path`, creating it first if asked and absent — for `origin`, the compute
    /// node's open, if it names one. Returns its attributes and whether this call (or the
    /// same open, sent to an earlier start of this fyod) created it. Makes sure every object
    /// of its layout exists: a file another fyod has just created may not have its objects
    /// yet.
    pub(crate) async fn open(
        &self,
        path: &str,
        create: bool,
        stripe: StripeRequest,
        mode: u32,
        origin: Option<&Origin>,
    ) -> Result<(Attributes, bool)> {
        let (attributes, created) = if create {
            match self
                .mds
                .create_for(path, (mode, Owner::UNRECORDED), stripe, origin)
                .await
            {
                Ok(attributes) => (attributes, true),
                Err(e) if e.errno() == EEXIST => (self.mds.open(path).await?, false),
                Err(e) => return Err(e.into()),
            }
        } else {
            (self.mds.open(path).await?, false)
        };
        if let Some(layout) = &attributes.layout {
            self.ensure_objects(layout.objects()).await?;
        }
        Ok((attributes, created))
    }

    /// Runs `call` for every key on its target's server, all at once, and returns each key
    /// with its outcome, in key order, once every call has finished. Every key's target is
    /// located first, so an unknown target fails before anything is sent. Keys are few: the
    /// objects of one layout or distinct targets, both bounded by the target map.
    async fn on_each<K, R, Fut>(
        &self,
        keys: impl IntoIterator<Item = K>,
        target_of: impl Fn(&K) -> u32,
        call: impl Fn(Arc<Server>, StorageTarget, K) -> Fut,
    ) -> Result<Vec<(K, std::result::Result<R, FabricError>)>>
    where
        K: Clone + Send + 'static,
        R: Send + 'static,
        Fut: Future<Output = std::result::Result<R, FabricError>> + Send + 'static,
    {
        let mut located = Vec::new();
        for key in keys {
            let (location, server) = self.locate(target_of(&key)).await?;
            located.push((key, location, server));
        }
        let mut calls = JoinSet::new();
        for (index, (key, location, server)) in located.into_iter().enumerate() {
            self.ost_requests.fetch_add(1, Ordering::Relaxed);
            let pending = call(server, location, key.clone());
            calls.spawn(trace::inherit(async move { (index, key, pending.await) }));
        }
        let mut outcomes = Vec::with_capacity(calls.len());
        // Bounded: one result per key.
        while let Some(joined) = calls.join_next().await {
            // The tasks are never aborted: a join error is a panic, passed on as one.
            outcomes.push(joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())));
        }
        outcomes.sort_unstable_by_key(|(index, ..)| *index);
        Ok(outcomes
            .into_iter()
            .map(|(_, key, outcome)| (key, outcome))
            .collect())
    }

    /// Creates every object in `objects` that does not exist yet, on all their targets at
    /// once: each create waits for its target's commit, and a file's open should wait for
    /// one commit, not one per stripe.
    async fn ensure_objects(&self, objects: &[ObjectRef]) -> Result<()> {
        let created = self
            .on_each(
                objects.iter().copied(),
                |o| o.target,
                |server, location, o| async move {
                    server.ost.create(location.index, o.object_id).await
                },
            )
            .await?;
        for (object, outcome) in created {
            match outcome {
                Ok(stamp) => self.note_committed(object.target, stamp.last_committed),
                Err(e) if e.errno() == EEXIST => {}
                Err(e) => return Err(e.into()),
            }
        }
        Ok(())
    }

    /// PFS I/O by descriptor: the server holding `object` pulls `buffer` (a compute node's
    /// memory) for a write, or pushes into it for a read.
    pub(crate) async fn by_descriptor(
        &self,
        direction: Direction,
        object: ObjectRef,
        offset: u64,
        buffer: BufferDescriptor,
    ) -> Result<DescriptorReply> {
        let (location, server) = self.locate(object.target).await?;
        self.ost_requests.fetch_add(1, Ordering::Relaxed);
        let (target, id) = (location.index, object.object_id);
        let reply = match direction {
            Direction::Write => {
                server
                    .link
                    .write_by_descriptor(target, id, offset, buffer)
                    .await?
            }
            Direction::Read => {
                server
                    .link
                    .read_by_descriptor(target, id, offset, buffer)
                    .await?
            }
        };
        self.note_committed(object.target, reply.last_committed);
        Ok(reply)
    }

    /// UFS write of the fyod's own buffer; the `ost` connection keeps its bytes for replay.
    pub(crate) async fn write_bytes(
        &self,
        object: ObjectRef,
        offset: u64,
        data: Bytes,
    ) -> Result<()> {
        let (location, server) = self.locate(object.target).await?;
        self.ost_requests.fetch_add(1, Ordering::Relaxed);
        let stamp = server
            .ost
            .write(location.index, object.object_id, offset, data)
            .await?;
        self.note_committed(object.target, stamp.last_committed);
        Ok(())
    }

    /// UFS read into the fyod's own buffer.
    pub(crate) async fn read_bytes(
        &self,
        object: ObjectRef,
        offset: u64,
        length: u64,
    ) -> Result<Bytes> {
        let (location, server) = self.locate(object.target).await?;
        self.ost_requests.fetch_add(1, Ordering::Relaxed);
        Ok(server
            .ost
            .read(location.index, object.object_id, offset, length)
            .await?)
    }

    /// The sizes of `objects`, asked of their servers all at once, in order.
    pub(crate) async fn object_sizes(&self, objects: &[ObjectRef]) -> Result<Vec<u64>> {
        let sizes = self
            .on_each(
                objects.iter().copied(),
                |o| o.target,
                |server, location, o| async move {
                    server.ost.getattr(location.index, o.object_id).await
                },
            )
            .await?;
        sizes
            .into_iter()
            .map(|(_, size)| size.map_err(Into::into))
            .collect()
    }

    /// Cuts or extends each object to its size, all at once.
    pub(crate) async fn punch_objects(&self, objects: Vec<(ObjectRef, u64)>) -> Result<()> {
        let punched = self
            .on_each(
                objects,
                |(o, _)| o.target,
                |server, location, (o, size)| async move {
                    server.ost.punch(location.index, o.object_id, size).await
                },
            )
            .await?;
        for (_, stamp) in punched {
            stamp?;
        }
        Ok(())
    }

    /// The capacity of every target of the file system, asked of all at once, in index
    /// order.
    pub(crate) async fn statfs(&self) -> Result<Vec<(u32, iopath_ost_client::Capacity)>> {
        let list = self.mds.targets().await?;
        let indices: Vec<u32> = list.targets.iter().map(|t| t.index).collect();
        let all = self
            .on_each(
                indices,
                |t| *t,
                |server, location, _| async move { server.ost.statfs(location.index).await },
            )
            .await?;
        all.into_iter()
            .map(|(target, capacity)| Ok((target, capacity?)))
            .collect()
    }

    /// Fails if acknowledged writes to `objects` were found lost that `file`'s handle has not
    /// been told of: a connection's pinger replayed what the fyod kept to a restarted server,
    /// which would not take it back. Nobody's call was waiting then, so the file's next fsync
    /// says so.
    pub(crate) fn check_lost(&self, file: &OpenFile, objects: &[ObjectRef]) -> Result<()> {
        let Some(connections) = self.connections.get() else {
            return Ok(());
        };
        let lost = connections.ost.lost_writes();
        let lost_links = connections.link.lost_writes();
        let mut found = 0;
        let mut first = None;
        for lost in lost.iter().chain(&lost_links) {
            for object in objects {
                let here = lost.to_object(object.target, object.object_id);
                if here > 0 {
                    found += here;
                    first.get_or_insert((lost.server, *object));
                }
            }
        }
        match (first, file.lost_told.untold(found)) {
            (Some((server, object)), count) if count > 0 => Err(ForwarderError::WritesLost {
                server,
                target: object.target,
                object: object.object_id,
                count,
            }),
            _ => Ok(()),
        }
    }

    /// Commits the journals of `targets` (each once, however often named; an unknown one
    /// fails before anything is sent), all at once; afterwards everything written to them is
    /// durable.
    pub(crate) async fn sync_targets(&self, targets: impl IntoIterator<Item = u32>) -> Result<()> {
        let distinct: BTreeSet<u32> = targets.into_iter().collect();
        let synced = self
            .on_each(
                distinct,
                |t| *t,
                |server, location, _| async move {
                    let stamp = server.ost.sync(location.index).await?;
                    // The link's kept descriptors up to here are durable too.
                    server
                        .link
                        .note_committed(location.index, stamp.last_committed);
                    Ok(stamp)
                },
            )
            .await?;
        for (target, stamp) in synced {
            self.note_committed(target, stamp?.last_committed);
        }
        Ok(())
    }
}
