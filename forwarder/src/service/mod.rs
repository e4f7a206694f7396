//! The fyod as an RPC service on the fabric.
//!
//! A request on [`FYOD_PORTAL`] is decoded once, here; a call on an open file then goes
//! through the dispatcher (`dispatch`) — synchronous calls one at a time per fyod,
//! asynchronous calls one worker per open file — takes the file's MUNIX token if the file
//! was opened MUNIX (`tokens`), and runs the PFS (`pfs`) or UFS (`ufs`) path against
//! the backends (`backend`).
//!
//! - `backend`: the metadata service and the storage connections (per server, one for the
//!   fyod's own bytes and one for descriptor-named PFS I/O, kept and replayed by descriptor).
//! - `dispatch`: the scheduler at run time.
//! - `tokens`: the MUNIX token manager and how calls use it.
//! - `pfs` and `ufs`: the two ways of moving the bytes.
//! - `files`: the open-file table; [`stats`]: [`FyodStats`].
//! - [`wire`]: the portal and the opcodes, what a client and another fyod send.

mod backend;
mod dispatch;
mod files;
mod pfs;
pub mod stats;
mod tokens;
mod ufs;
pub mod wire;

pub use dispatch::ServiceNodeStats;

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use iopath_fabric::fail::Site;
use iopath_fabric::rpc::{Reply, Request, Service, ServiceError};
use iopath_fabric::{BufferDescriptor, Nid, Node};
use iopath_mds::wire::{layout_to_wire, stripe_from_wire};
use iopath_mds::{FileType, StripeRequest};
use iopath_ost_client::{ClientId, OscStats};
use iopath_proto::fyod as pb;
use prost::Message as _;
use tracing::{debug, info, warn};

use crate::error::{ForwarderError, Result};
use crate::limits::{CLIENTS_PER_FYOD_DEFAULT, FyodLimits, ServiceNode};
use crate::modes::{CallKind, FileSystem, IoMode};
use backend::{Backend, Direction};
use dispatch::Dispatch;
use files::{OpenFile, OpenFiles};
use tokens::Tokens;
use ufs::Ufs;

pub use stats::FyodStats;
pub use wire::{FYOD_PORTAL, opcode};

/// Permission bits of a file created without any asked for.
const MODE_DEFAULT: u32 = 0o644;

/// How to start a fyod.
#[derive(Debug, Clone)]
pub struct FyodConfig {
    /// The metadata service.
    pub mds: Nid,
    /// PFS or UFS.
    pub mode: FileSystem,
    /// Compute nodes this fyod serves at most (256, as yod allocates by default).
    pub clients_per_fyod: u32,
    /// The fyod's identity at the storage servers, stable across its restarts; `None`
    /// derives one from its NID.
    pub fyod_id: Option<u64>,
    /// The fyod that manages MUNIX tokens for every fyod of the file system; `None` (or this
    /// fyod's own NID) when it is this one. Every fyod sharing files must name the same one.
    pub token_home: Option<Nid>,
    /// Bounds.
    pub limits: FyodLimits,
    /// The node's osc counters (`osc.*.stats`, `osc.*.rpc_stats`): what the fyod asks of
    /// each storage target, under both its identities, is counted there. `None` counts
    /// nothing.
    pub osc_stats: Option<Arc<OscStats>>,
    /// A modeled service node under the fyod; `None`: the host's CPUs and memory.
    pub service_node: Option<ServiceNode>,
}

impl FyodConfig {
    /// A fyod in `mode` served by the metadata service at `mds`, with the defaults: 256
    /// compute nodes, its own token home, the default limits.
    pub fn new(mds: Nid, mode: FileSystem) -> FyodConfig {
        FyodConfig {
            mds,
            mode,
            clients_per_fyod: CLIENTS_PER_FYOD_DEFAULT,
            fyod_id: None,
            token_home: None,
            limits: FyodLimits::default(),
            osc_stats: None,
            service_node: None,
        }
    }

    /// Checks that the values fit together.
    pub fn validate(&self) -> Result<()> {
        let l = &self.limits;
        let problem = if self.clients_per_fyod == 0 {
            Some("clients_per_fyod must be at least 1".to_string())
        } else if l.open_files_max == 0 || l.calls_queued_max == 0 || l.reorder_window_calls == 0 {
            Some(
                "open_files_max, calls_queued_max and reorder_window_calls must be at least 1"
                    .into(),
            )
        } else if l.request_max_bytes == 0
            || l.pfs_pieces_in_flight_max == 0
            || l.ufs_buffers_max == 0
        {
            Some("request_max_bytes, pfs_pieces_in_flight_max and ufs_buffers_max must be at least 1".into())
        } else if !(l.ufs_dirty_blocks_max < l.ufs_cache_blocks_max
            || (l.ufs_cache_blocks_max == 0 && l.ufs_dirty_blocks_max == 0))
        {
            Some(format!(
                "ufs_dirty_blocks_max ({}) must be below ufs_cache_blocks_max ({})",
                l.ufs_dirty_blocks_max, l.ufs_cache_blocks_max
            ))
        } else if l.token_files_max == 0 || l.token_lease.is_zero() {
            Some("token_files_max and token_lease must be positive".into())
        } else if self
            .service_node
            .is_some_and(|n| n.cpus == 0 || n.threads_fit == Some(0))
        {
            Some("a modeled service node needs a CPU and room for a thread".into())
        } else {
            None
        };
        match problem {
            Some(why) => Err(ForwarderError::invalid("fyod configuration", why)),
            None => Ok(()),
        }
    }
}

/// A fyod: the RPC service on [`FYOD_PORTAL`].
#[derive(Debug)]
pub struct FyodService {
    node: Node,
    config: FyodConfig,
    backend: Arc<Backend>,
    dispatch: Dispatch,
    files: OpenFiles,
    /// Connected compute nodes, by id.
    clients: Mutex<HashMap<u64, Nid>>,
    tokens: Tokens,
    ufs: Ufs,
}

impl FyodService {
    /// Starts a fyod on `node`. It connects to the metadata service and every storage server
    /// at once, in the background, trying for a minute; they may start after it (a server not
    /// reached by then is connected when a call first needs it).
    pub async fn start(node: &Node, config: FyodConfig) -> Result<Arc<FyodService>> {
        FyodService::start_behind(node, config, |fyod| fyod as Arc<dyn Service>).await
    }

    /// [`FyodService::start`], with what `front` makes of the fyod serving [`FYOD_PORTAL`] in
    /// its place: a wrapper that passes every request on (the seeded simulation logs each one
    /// it executes).
    pub async fn start_behind(
        node: &Node,
        config: FyodConfig,
        front: impl FnOnce(Arc<FyodService>) -> Arc<dyn Service>,
    ) -> Result<Arc<FyodService>> {
        config.validate()?;
        let fyod_id = config
            .fyod_id
            .map_or_else(|| ClientId::of_fyod(node.nid()), ClientId::new);
        let service = Arc::new(FyodService {
            backend: Arc::new(Backend::new(
                node.clone(),
                config.mds,
                fyod_id,
                config.osc_stats.clone(),
            )),
            dispatch: Dispatch::new(&config.limits, config.service_node),
            files: OpenFiles::new(config.limits.open_files_max),
            clients: Mutex::default(),
            tokens: Tokens::new(node.clone(), config.token_home, &config.limits),
            ufs: Ufs::new(node.nid(), &config.limits),
            node: node.clone(),
            config,
        });
        node.register_service(FYOD_PORTAL, front(Arc::clone(&service)))?;
        service.backend.connect_all_soon();
        Ok(service)
    }

    /// Stops cleanly, before its node stops: every storage server it wrote to commits what it
    /// acknowledged to the fyod, and forgets the fyod, so a later restart of a server neither
    /// waits for it nor counts on what it kept.
    pub async fn shutdown(&self) -> Result<()> {
        self.backend.disconnect().await
    }

    /// The fyod's NID.
    pub fn nid(&self) -> Nid {
        self.node.nid()
    }

    /// Its configuration.
    pub fn config(&self) -> &FyodConfig {
        &self.config
    }

    /// Its counters now.
    pub fn stats(&self) -> FyodStats {
        let scheduler = self.dispatch.stats();
        let cache = self.ufs.cache_counters();
        let (ufs_buffers_max, ufs_buffers_in_use_peak) = self.ufs.buffers();
        FyodStats {
            file_system: self.config.mode,
            clients_connected: self
                .clients
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len() as u32,
            open_files: self.files.count() as u32,
            sync_calls_in_flight: scheduler.sync_running,
            sync_calls_in_flight_peak: scheduler.sync_running_peak,
            sync_calls_waiting_peak: scheduler.sync_waiting_peak,
            async_calls_in_flight: scheduler.async_running,
            async_calls_in_flight_peak: scheduler.async_running_peak,
            calls_completed: scheduler.finished,
            token_waits: self.tokens.manager.waits(),
            bytes_through_fyod: self.ufs.bytes_through.load(Ordering::Relaxed),
            ufs_buffers_in_use_peak,
            ufs_buffers_max,
            ufs_cache_hits: cache.hits,
            ufs_cache_misses: cache.misses,
            ufs_writes_absorbed: cache.absorbed,
            ufs_flushes: cache.flushes,
            ost_requests: self.backend.ost_requests.load(Ordering::Relaxed),
            kept_bytes: self.backend.kept_bytes(),
            pfs_writes_replayed: self.backend.replayed(),
        }
    }

    /// What the modeled service node has done (all zero without one).
    pub fn service_node_stats(&self) -> ServiceNodeStats {
        self.dispatch.service_node_stats()
    }

    fn committed(&self) -> Vec<pb::Committed> {
        self.backend
            .committed()
            .into_iter()
            .map(|(target, last_committed)| pb::Committed {
                target,
                last_committed,
            })
            .collect()
    }

    async fn handle_request(self: Arc<Self>, request: Request) -> Result<Bytes> {
        let body = request.body.as_ref();
        let source = request.source;
        let reply: Bytes = match request.opcode {
            opcode::CONNECT => self
                .connect(source, decode(body)?)
                .await?
                .encode_to_vec()
                .into(),
            opcode::DISCONNECT => {
                let op: pb::DisconnectRequest = decode(body)?;
                // Only the node a client id connected from may disconnect it.
                let refused = {
                    let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
                    match clients.get(&op.client) {
                        Some(&nid) if nid != source => Some(nid),
                        _ => {
                            clients.remove(&op.client);
                            None
                        }
                    }
                };
                if let Some(nid) = refused {
                    return Err(ForwarderError::invalid(
                        "client",
                        format!("client {} is connected from {nid}, not {source}", op.client),
                    ));
                }
                // Its handles go with it: a broken or abandoned handle would otherwise keep
                // its place among the open files and its queued calls for good.
                self.close_files(self.files.remove_of_client(op.client))
                    .await;
                pb::CallReply::default().encode_to_vec().into()
            }
            opcode::OPEN => self
                .open(source, decode(body)?)
                .await?
                .encode_to_vec()
                .into(),
            opcode::WRITE => self
                .transfer(
                    source,
                    Direction::Write,
                    decode::<pb::WriteRequest>(body)?.into(),
                )
                .await?
                .encode_to_vec()
                .into(),
            opcode::READ => self
                .transfer(
                    source,
                    Direction::Read,
                    decode::<pb::ReadRequest>(body)?.into(),
                )
                .await?
                .encode_to_vec()
                .into(),
            opcode::FSYNC | opcode::CLOSE | opcode::SIZE | opcode::TRUNCATE => self
                .handle_call(source, request.opcode, decode(body)?)
                .await?
                .encode_to_vec()
                .into(),
            opcode::COMMIT => {
                let op: pb::CommitRequest = decode(body)?;
                // Each named target once, all at once; an unknown one is refused.
                self.backend.sync_targets(op.targets).await?;
                pb::CallReply {
                    committed: self.committed(),
                    ..pb::CallReply::default()
                }
                .encode_to_vec()
                .into()
            }
            opcode::STATS => self.stats().to_wire().encode_to_vec().into(),
            opcode::STATFS => pb::StatfsReply {
                targets: self
                    .backend
                    .statfs()
                    .await?
                    .into_iter()
                    .map(|(target, capacity)| pb::TargetStatfs {
                        target,
                        capacity: Some(capacity.to_wire()),
                    })
                    .collect(),
            }
            .encode_to_vec()
            .into(),
            opcode::TOKEN_ACQUIRE => {
                let op: pb::TokenAcquireRequest = decode(body)?;
                let holder = crate::policy::token::Holder {
                    fyod: source,
                    handle: op.handle,
                    start: op.start,
                };
                let grant = self.tokens.manager.acquire(op.ino, holder).await?;
                pb::TokenGrant {
                    grant: grant.grant,
                    previous_holder: grant.previous.map(|n| n.to_string()).unwrap_or_default(),
                }
                .encode_to_vec()
                .into()
            }
            opcode::TOKEN_RELEASE => {
                let op: pb::TokenReleaseRequest = decode(body)?;
                self.tokens.manager.release(op.ino, op.grant)?;
                pb::TokenReleaseReply {}.encode_to_vec().into()
            }
            other => {
                return Err(ForwarderError::invalid(
                    "opcode",
                    format!("the fyod service has no opcode {other}"),
                ));
            }
        };
        Ok(reply)
    }

    /// A compute node connects. One that was connected already (it restarted without
    /// disconnecting, or moved) gets a new connection, and the handles of its earlier one are
    /// closed and freed — as Lustre evicts a client's old export when it reconnects with a new
    /// connection: nothing of the earlier process will use them again.
    async fn connect(&self, source: Nid, op: pb::ConnectRequest) -> Result<pb::ConnectReply> {
        let (earlier, clients_connected) = {
            let mut clients = self.clients.lock().unwrap_or_else(PoisonError::into_inner);
            if !clients.contains_key(&op.client)
                && clients.len() >= self.config.clients_per_fyod as usize
            {
                return Err(ForwarderError::TooManyClients {
                    max: self.config.clients_per_fyod,
                });
            }
            let earlier = clients.insert(op.client, source);
            (earlier, clients.len() as u32)
        };
        if let Some(earlier) = earlier {
            let closed = self.files.remove_of_client(op.client);
            if !closed.is_empty() {
                info!(
                    client = op.client,
                    %source,
                    %earlier,
                    handles = closed.len(),
                    "compute node connected again: closing its earlier connection's handles"
                );
            }
            self.files.retire(&closed);
            self.close_files(closed).await;
        }
        Ok(pb::ConnectReply {
            file_system: self.config.mode.to_wire() as i32,
            clients_max: self.config.clients_per_fyod,
            clients_connected,
            request_max_bytes: self.config.limits.request_max_bytes,
        })
    }

    /// Closes files a compute node left open (it disconnected, or connected again): a UFS
    /// file's write-behind is flushed, and each handle's call lane is closed.
    async fn close_files(&self, files: Vec<Arc<OpenFile>>) {
        for file in files {
            if self.config.mode == FileSystem::Ufs
                && let Err(error) = self.ufs.close(&self.backend, &file).await
            {
                warn!(%error, handle = file.handle, "flushing a departed client's file failed");
            }
            self.dispatch.close_lane(file.handle);
        }
    }

    async fn open(&self, source: Nid, op: pb::OpenRequest) -> Result<pb::OpenReply> {
        let connected = self
            .clients
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&op.client)
            == Some(&source);
        if !connected {
            return Err(ForwarderError::NotConnected {
                client: op.client,
                source_nid: source,
            });
        }
        let io_mode = IoMode::from_wire(op.io_mode)
            .ok_or_else(|| ForwarderError::invalid("I/O mode", format!("value {}", op.io_mode)))?;
        let call_default = CallKind::from_wire(op.call)
            .ok_or_else(|| ForwarderError::invalid("call kind", format!("value {}", op.call)))?
            .unwrap_or_default();
        let mut stripe = op
            .stripe
            .as_ref()
            .map(stripe_from_wire)
            .unwrap_or(StripeRequest::INHERIT);
        if self.config.mode == FileSystem::Ufs && op.create {
            // A UFS file lives on one target, whatever the directory's default says.
            if !matches!(stripe.stripe_count, 0 | 1) {
                return Err(ForwarderError::invalid(
                    "stripe count",
                    format!(
                        "{}: a UFS file lives on one target, so its stripe count is 1",
                        stripe.stripe_count
                    ),
                ));
            }
            stripe.stripe_count = 1;
        }
        let mode = if op.mode == 0 { MODE_DEFAULT } else { op.mode };
        // The compute node's open, which it sends again (to this fyod's next start too) if no
        // reply comes: the metadata service knows a create it made as that open's.
        let origin = (op.open_id != 0).then(|| iopath_mds::Origin {
            client: format!("compute node {}", op.client),
            request: op.open_id,
        });
        let (attributes, created) = self
            .backend
            .open(&op.path, op.create, stripe, mode, origin.as_ref())
            .await?;
        if attributes.file_type != FileType::Regular {
            return Err(ForwarderError::invalid(
                "path",
                format!("{}: not a regular file", op.path),
            ));
        }
        let layout = attributes.layout.ok_or_else(|| {
            ForwarderError::malformed("open reply", "a regular file without a layout")
        })?;
        if self.config.mode == FileSystem::Ufs && layout.stripe_count() != 1 {
            return Err(ForwarderError::invalid(
                "file",
                format!(
                    "{} is striped over {} targets; a UFS fyod serves single-target files",
                    op.path,
                    layout.stripe_count()
                ),
            ));
        }
        let file = Arc::new(OpenFile {
            handle: self.files.next_handle(),
            owner: source,
            client: op.client,
            ino: attributes.ino,
            layout,
            io_mode,
            call_default,
            lost_told: Default::default(),
        });
        if self.config.mode == FileSystem::Ufs {
            self.ufs.open(&self.backend, &file).await?;
        }
        self.files.insert(Arc::clone(&file))?;
        self.dispatch.open_lane(file.handle);
        debug!(path = %op.path, handle = file.handle, %io_mode, "opened");
        Ok(pb::OpenReply {
            handle: file.handle,
            ino: file.ino,
            layout: Some(layout_to_wire(&file.layout)),
            created,
        })
    }

    /// The call's kind for scheduling (an unknown value schedules as the handle's default and
    /// is refused when it runs, so the handle's order is kept).
    fn kind_of(file: &OpenFile, wire: i32) -> (CallKind, Result<()>) {
        match CallKind::from_wire(wire) {
            Some(kind) => (kind.unwrap_or(file.call_default), Ok(())),
            None => (
                file.call_default,
                Err(ForwarderError::invalid(
                    "call kind",
                    format!("value {wire}"),
                )),
            ),
        }
    }

    /// A descriptor from the wire, within the fyod's limits.
    fn buffer(
        &self,
        wire: Option<iopath_proto::fabric::BufferDescriptor>,
    ) -> Result<BufferDescriptor> {
        let wire = wire.ok_or_else(|| ForwarderError::malformed("call", "no buffer descriptor"))?;
        let buffer = BufferDescriptor::from_proto(&wire, self.node.limits())?;
        let max = self.config.limits.request_max_bytes;
        if buffer.length > max {
            return Err(ForwarderError::invalid(
                "buffer",
                format!(
                    "{} bytes exceeds the fyod's maximum of {max} per call",
                    buffer.length
                ),
            ));
        }
        Ok(buffer)
    }

    /// Runs `work` holding the file's MUNIX token (MASYNC: without one).
    async fn with_token<T, F>(
        &self,
        file: &OpenFile,
        work: impl FnOnce(Option<crate::policy::token::Grant>) -> F,
    ) -> Result<T>
    where
        F: std::future::Future<Output = Result<T>>,
    {
        let token = match file.io_mode {
            IoMode::Munix => Some(self.tokens.acquire(file.ino, file.handle).await?),
            IoMode::Masync => None,
        };
        let result = work(token.map(|t| t.grant)).await;
        if let Some(token) = token {
            self.tokens.release(token).await;
        }
        result
    }

    /// A write or a read: in its place in the handle's order, under the file's token, by PFS
    /// or UFS.
    async fn transfer(
        &self,
        source: Nid,
        direction: Direction,
        op: Transfer,
    ) -> Result<pb::CallReply> {
        let file = self.files.get(op.handle, source)?;
        let file: &OpenFile = &file;
        let (kind, kind_ok) = Self::kind_of(file, op.call);
        let mut reply = self
            .dispatch
            .run(file.handle, op.seq, kind, async {
                kind_ok?;
                // Checked inside the call, so a refused call still takes its place in order.
                let buffer = self.buffer(op.buffer)?;
                fail_point(&self.node, Site::FyodForward).await?;
                let in_flight = self.config.limits.pfs_pieces_in_flight_max as usize;
                let (backend, node, offset) = (&self.backend, &self.node, op.offset);
                self.with_token(file, |token| async move {
                    match (self.config.mode, direction) {
                        (FileSystem::Pfs, Direction::Write) => {
                            pfs::write(backend, file, offset, buffer, in_flight).await
                        }
                        (FileSystem::Pfs, Direction::Read) => {
                            pfs::read(backend, file, offset, buffer, in_flight).await
                        }
                        (FileSystem::Ufs, Direction::Write) => {
                            self.ufs
                                .write(backend, node, file, offset, buffer, token)
                                .await
                        }
                        (FileSystem::Ufs, Direction::Read) => {
                            self.ufs
                                .read(backend, node, file, offset, buffer, token)
                                .await
                        }
                    }
                })
                .await
            })
            .await?;
        reply.committed = self.committed();
        Ok(reply)
    }

    /// fsync, close, size, truncate.
    async fn handle_call(
        &self,
        source: Nid,
        opcode: u32,
        op: pb::HandleRequest,
    ) -> Result<pb::CallReply> {
        let file = self.files.get(op.handle, source)?;
        let (kind, kind_ok) = Self::kind_of(&file, op.call);
        let mut reply = self
            .dispatch
            .run(file.handle, op.seq, kind, async {
                kind_ok?;
                let mut reply = pb::CallReply::default();
                match (opcode, self.config.mode) {
                    (opcode::FSYNC, FileSystem::Pfs) => pfs::fsync(&self.backend, &file).await?,
                    (opcode::FSYNC, FileSystem::Ufs) => {
                        self.ufs.fsync(&self.backend, &file).await?
                    }
                    (opcode::SIZE, FileSystem::Pfs) => {
                        reply.size_bytes = pfs::size(&self.backend, &file).await?;
                    }
                    (opcode::SIZE, FileSystem::Ufs) => {
                        reply.size_bytes = self.ufs.size(&self.backend, &file).await?;
                    }
                    (opcode::TRUNCATE, FileSystem::Pfs) => {
                        pfs::truncate(&self.backend, &file, op.size).await?
                    }
                    (opcode::TRUNCATE, FileSystem::Ufs) => {
                        self.ufs.truncate(&self.backend, &file, op.size).await?
                    }
                    (_, mode) => {
                        // Close: the last call of the handle. Calls sent after it are refused.
                        if mode == FileSystem::Ufs {
                            self.ufs.close(&self.backend, &file).await?;
                        }
                        self.files.remove(file.handle);
                        self.dispatch.close_lane(file.handle);
                    }
                }
                Ok(reply)
            })
            .await?;
        reply.committed = self.committed();
        Ok(reply)
    }
}

impl Service for FyodService {
    fn op_name(&self, opcode: u32) -> Option<&'static str> {
        opcode::name(opcode)
    }

    fn handle(self: Arc<Self>, request: Request) -> Reply {
        Box::pin(async move {
            let node = request.node.clone();
            let reply = self.handle_request(request).await;
            // The call is done; its reply may yet stall, fail or be lost.
            fail_point(&node, Site::FyodReply).await?;
            reply.map_err(ServiceError::from)
        })
    }
}

/// Passes the fyod's fail point `site`: an errno fails the call with it (a drop loses the
/// reply, a delay stalls, an abort ends the process: see `iopath_fabric::fail`).
async fn fail_point(node: &Node, site: Site) -> Result<()> {
    node.fail_points()
        .pass(site)
        .await
        .map_err(|injected| ForwarderError::Fabric(injected.error(site)))
}

fn decode<M: prost::Message + Default>(body: &[u8]) -> Result<M> {
    M::decode(body).map_err(|e| ForwarderError::malformed("fyod request", e.to_string()))
}

/// A write or read request: the two have the same fields on the wire.
#[derive(Debug)]
struct Transfer {
    handle: u64,
    seq: u64,
    call: i32,
    offset: u64,
    buffer: Option<iopath_proto::fabric::BufferDescriptor>,
}

impl From<pb::WriteRequest> for Transfer {
    fn from(op: pb::WriteRequest) -> Transfer {
        let pb::WriteRequest {
            handle,
            seq,
            call,
            offset,
            buffer,
        } = op;
        Transfer {
            handle,
            seq,
            call,
            offset,
            buffer,
        }
    }
}

impl From<pb::ReadRequest> for Transfer {
    fn from(op: pb::ReadRequest) -> Transfer {
        let pb::ReadRequest {
            handle,
            seq,
            call,
            offset,
            buffer,
        } = op;
        Transfer {
            handle,
            seq,
            call,
            offset,
            buffer,
        }
    }
}
