//! The OSS as an RPC service on the fabric: what clients and forwarders call.
//!
//! A write carries a buffer descriptor: the server takes room in its bulk pool, **pulls** the
//! bytes (verified against every chunk's and the descriptor's checksum by the fabric), writes
//! them through the target, and replies with the transno and `last_committed` — after the
//! commit in sync mode, once the data is on disk in async mode. A read **pushes** into the
//! client's descriptor. After an unclean restart each target opens a recovery window
//! ([`recovery`]) in which known clients replay their uncommitted writes, in transno order,
//! before new requests are served; what no client replays, when the window may have dropped
//! acknowledged writes, is marked lost on the target and refused to readers
//! ([`crate::recovery::lost`]). A client that is done sends DISCONNECT: every target commits and
//! the client is forgotten, so no restart waits for it.
//!
//! - [`errno_of`]: the errno a storage error travels as.
//! - [`clients`]: the persisted client list, a log with room kept past its end.
//! - [`recovery`]: the runtime around the pure replay window.
//! - [`params`]: `obdfilter.*` parameters on the admin tree.
//! - [`metrics`]: the same counters, and recovery, as Prometheus families for `/metrics`.
//! - [`role`]: `iopath oss`, an OSS as a process of its own.
//!
//! The client side — `OstClient`, the replay list — is its own crate, `iopath_ost_client`, so
//! that the client library and the fyod do not link the journal and the engines; the portal,
//! the opcodes and `Capacity` are the wire's, in `iopath_proto::ost`, and both sides take them
//! from there.

pub mod clients;
pub mod errno_of;
pub mod metrics;
pub mod params;
pub mod recovery;
pub mod role;

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::fail::Site;
use iopath_fabric::frame::status::errno;
use iopath_fabric::rpc::{Reply, Request, Service, ServiceError};
use iopath_fabric::trace::{self, Step, TraceId};
use iopath_fabric::{BufferDescriptor, Nid, Node};
use iopath_proto::ost as pb;
use prost::Message as _;
use tokio::sync::{Semaphore, SemaphorePermit};
use tracing::{info, warn};

use crate::engine::{DiskEngine, open_engine};
use crate::error::StorageError;
use crate::ids::{ObjectId, Transno};
use crate::ost::mmp::DirGuard;
use crate::ost::{OpReply, Oss};
use crate::recovery::lost::ByteRange;
use clients::ClientRegistry;
use recovery::{Recovery, ReplayAdmission};

pub use errno_of::storage_error;

pub use iopath_proto::ost::{PORTAL as OST_PORTAL, opcode};

/// Settings of the service (the targets' own settings live in [`crate::ost::OssConfig`]).
#[derive(Debug, Clone)]
pub struct ServiceConfig {
    /// How long known clients have to reconnect and replay after an unclean restart.
    pub recovery_window: Duration,
    /// Bytes of bulk the server holds at once for writes being pulled, whatever the number of
    /// clients: a write waits for room before its data is pulled.
    pub bulk_pool_bytes: u64,
    /// Distinct clients the server records (each is durable, and waited for in recovery).
    pub clients_max: usize,
}

impl Default for ServiceConfig {
    /// A 30 s recovery window, a 256 MiB bulk pool and 4096 clients.
    fn default() -> ServiceConfig {
        ServiceConfig {
            recovery_window: Duration::from_secs(30),
            bulk_pool_bytes: 256 << 20,
            clients_max: 4096,
        }
    }
}

/// Bulk pool accounting unit: permits are 4 KiB pages.
const POOL_PAGE_BYTES: u64 = 4096;

pub use iopath_proto::ost::UNANSWERED_WRITES_MAX;

/// The OSS service.
#[derive(Debug)]
pub struct OssService {
    oss: Arc<Oss>,
    /// Where the client list and the clean-shutdown marker live: the targets' root.
    state_dir: PathBuf,
    recovery: Recovery,
    clients: Arc<ClientRegistry>,
    bulk_pool: Semaphore,
    bulk_pool_pages: u64,
    boot_id: u64,
    /// The root's lock (multiple-mount protection), held until the server stops: no second
    /// server reads or rewrites this one's client list meanwhile.
    root_guard: std::sync::Mutex<Option<DirGuard>>,
}

impl OssService {
    /// Opens (formats or recovers) the targets `targets` describes and serves them on
    /// `node`'s [`OST_PORTAL`]: the one way an OSS comes up — `iopath oss`, a stack's OSS node
    /// and every test stack use it. After an unclean stop (no clean-shutdown marker) each
    /// target opens a recovery window for the clients it knew.
    pub async fn open(
        node: &Node,
        targets: crate::ost::OssConfig,
        config: ServiceConfig,
    ) -> Result<Arc<OssService>, StorageError> {
        let engine = open_engine(&targets.engine);
        let itself = |service: Arc<OssService>| service as Arc<dyn Service>;
        OssService::open_on_engine(node, targets, engine, config, itself).await
    }

    /// [`OssService::open`] with the targets on `engine` rather than the one
    /// `targets.engine` names, served on the portal as `front` makes it: the service itself,
    /// or a wrapper that watches every request it executes. The seeded simulation runs a
    /// server this way, on its simulated disk, counting executions per xid.
    pub async fn open_on_engine(
        node: &Node,
        targets: crate::ost::OssConfig,
        engine: Arc<dyn DiskEngine>,
        config: ServiceConfig,
        front: impl FnOnce(Arc<OssService>) -> Arc<dyn Service>,
    ) -> Result<Arc<OssService>, StorageError> {
        let state_dir = targets.root.clone();
        // Before anything is read: a second server on this root would recover the targets
        // under the one serving them (`ost::mmp`). Each target takes its own directory too.
        let root_guard = DirGuard::lock(&state_dir, "a storage server's directory")?;
        let fail = Arc::clone(node.fail_points());
        let oss = Arc::new(Oss::open_on_engine(targets, engine, fail).await?);
        let boot_id = boot_id();
        let clients = Arc::new(ClientRegistry::open(
            &state_dir,
            config.clients_max,
            boot_id,
        )?);
        let clean = recovery::take_clean_marker(&state_dir)?;
        let known = if clean { Vec::new() } else { clients.known() };
        if !known.is_empty() {
            info!(clients = known.len(), window = ?config.recovery_window, "unclean restart: opening the recovery window");
        }
        let recovery = Recovery::start(&oss, known, config.recovery_window, Arc::clone(&clients));
        let pages = config.bulk_pool_bytes.div_ceil(POOL_PAGE_BYTES).max(1);
        let service = Arc::new(OssService {
            oss,
            state_dir,
            recovery,
            clients,
            bulk_pool: Semaphore::new(pages as usize),
            bulk_pool_pages: pages,
            boot_id,
            root_guard: std::sync::Mutex::new(Some(root_guard)),
        });
        node.register_service(OST_PORTAL, front(Arc::clone(&service)))
            .map_err(|e| StorageError::InvalidConfig {
                reason: e.to_string(),
            })?;
        Ok(service)
    }

    /// The targets.
    pub fn oss(&self) -> &Arc<Oss> {
        &self.oss
    }

    /// Stops cleanly: commits every target and leaves the marker that says no recovery is
    /// needed at the next start.
    pub async fn shutdown(&self) -> Result<(), StorageError> {
        self.oss.shutdown().await?;
        recovery::write_clean_marker(&self.state_dir)?;
        self.release_root();
        Ok(())
    }

    /// Lets go of the root's lock: the next server may open it.
    fn release_root(&self) {
        let guard = self
            .root_guard
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .take();
        if let Some(mut guard) = guard {
            guard.release();
        }
    }

    /// Stops at once without committing anything more: to the disks this looks like a crash
    /// (tests of recovery and replay; a real crash is SIGKILL). The recovery windows end too,
    /// as they would with the process: a dead life evicts no one and marks nothing lost.
    pub fn crash(&self) {
        self.recovery.stop();
        for target in self.oss.targets() {
            target.crash();
        }
        self.release_root();
    }

    /// Whether target `index` is still in recovery.
    pub fn recovering(&self, index: u32) -> bool {
        self.recovery.recovering(index)
    }

    /// Replays queued at target `index` in its recovery window, waiting for their turn.
    pub fn replays_queued(&self, index: u32) -> usize {
        self.recovery.replays_queued(index)
    }

    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "OssService::stamp",
        skip_all
    )]
    fn stamp<T>(&self, reply: &OpReply<T>) -> pb::OpReply {
        pb::OpReply {
            transno: reply.transno.map(|t| t.0).unwrap_or(0),
            last_committed: reply.last_committed.0,
            boot_id: self.boot_id,
            ..pb::OpReply::default()
        }
    }

    fn check_open(&self, target: u32) -> Result<(), ServiceError> {
        if self.recovery.recovering(target) {
            // Not EBUSY, which the fabric retries on its own: the client must see this, to
            // reconnect and replay what it kept — recovery waits for exactly that.
            return Err(ServiceError::new(
                errno::EINPROGRESS,
                format!(
                    "{} is recovering: reconnect, replay, then try again",
                    self.oss.target_name(target)
                ),
            ));
        }
        Ok(())
    }

    async fn handle_request(self: Arc<Self>, request: Request) -> Result<Bytes, ServiceError> {
        let body = request.body.as_ref();
        let reply = match request.opcode {
            opcode::CONNECT => {
                let connect = decode::<pb::ConnectRequest>(body)?;
                let unanswered = unanswered_writes(&connect)?;
                // The client is recorded (and made durable) before it is told it is connected,
                // so a crash after this reply still waits for it in recovery.
                let session = self
                    .clients
                    .add(connect.client, request.source)
                    .map_err(storage_error)?;
                // What it has had no answer to first: its arrival may close a window.
                self.recovery.unanswered(connect.client, &unanswered);
                self.recovery.client_connected(connect.client);
                let targets = self
                    .oss
                    .targets()
                    .iter()
                    .map(|t| pb::TargetState {
                        index: t.index(),
                        last_committed: t.last_committed().0,
                        sync_journal: t.sync_journal(),
                    })
                    .collect();
                return Ok(pb::ConnectReply {
                    recovering: self.recovery.any_recovering(),
                    targets,
                    boot_id: self.boot_id,
                    recovery_remaining_ms: self.recovery.remaining_ms(),
                    recovery_hard_remaining_ms: self.recovery.hard_remaining_ms(),
                    session,
                }
                .encode_to_vec()
                .into());
            }
            opcode::REPLAY_DONE => {
                let done = decode::<pb::ReplayDoneRequest>(body)?;
                self.acts_for(done.client, request.source)?;
                self.check_boot(&done)?;
                if done.fresh {
                    self.recovery.client_forgot(done.client);
                } else {
                    self.recovery.client_done(done.client);
                }
                pb::OpReply {
                    boot_id: self.boot_id,
                    ..pb::OpReply::default()
                }
            }
            opcode::DISCONNECT => {
                let done = decode::<pb::DisconnectRequest>(body)?;
                self.acts_for(done.client, request.source)?;
                self.disconnect(done.client).await?
            }
            opcode::CREATE => {
                let op = decode::<pb::ObjectRequest>(body)?;
                self.check_open(op.target)?;
                let target = self.target(op.target)?;
                request.begin_effect()?;
                let reply = target
                    .create(ObjectId(op.object))
                    .await
                    .map_err(storage_error)?;
                self.stamp(&reply)
            }
            opcode::WRITE => {
                let op = decode::<pb::WriteRequest>(body)?;
                // Its client id decides whose replay it is, and who lost it if it fails.
                self.acts_for(op.client, request.source)?;
                self.write(&request, op).await?
            }
            opcode::READ => {
                self.read(&request.node, decode::<pb::ReadRequest>(body)?)
                    .await?
            }
            opcode::GETATTR => {
                let op = decode::<pb::ObjectRequest>(body)?;
                self.check_open(op.target)?;
                let reply = self
                    .target(op.target)?
                    .getattr(ObjectId(op.object))
                    .await
                    .map_err(storage_error)?;
                pb::OpReply {
                    size: reply.value.size_bytes,
                    ..self.stamp(&reply)
                }
            }
            opcode::PUNCH => {
                let op = decode::<pb::PunchRequest>(body)?;
                self.check_open(op.target)?;
                let target = self.target(op.target)?;
                request.begin_effect()?;
                let reply = target
                    .punch(ObjectId(op.object), op.size)
                    .await
                    .map_err(storage_error)?;
                self.stamp(&reply)
            }
            opcode::DESTROY => {
                let op = decode::<pb::ObjectRequest>(body)?;
                self.check_open(op.target)?;
                let target = self.target(op.target)?;
                request.begin_effect()?;
                let reply = target
                    .destroy(ObjectId(op.object))
                    .await
                    .map_err(storage_error)?;
                self.stamp(&reply)
            }
            opcode::SYNC => {
                let op = decode::<pb::SyncRequest>(body)?;
                self.check_open(op.target)?;
                let reply = self
                    .target(op.target)?
                    .sync()
                    .await
                    .map_err(storage_error)?;
                self.stamp(&reply)
            }
            opcode::STATFS => {
                let op = decode::<pb::StatfsRequest>(body)?;
                let ost = self.target(op.target)?;
                let c = ost.statfs().await.map_err(|e| {
                    ServiceError::new(
                        errno::EIO,
                        format!(
                            "statfs of {} ({}): {e}",
                            self.oss.target_name(op.target),
                            ost.dir().display()
                        ),
                    )
                })?;
                return Ok(c.to_wire().encode_to_vec().into());
            }
            other => {
                return Err(ServiceError::new(
                    errno::EOPNOTSUPP,
                    format!("the OST service has no opcode {other}"),
                ));
            }
        };
        Ok(reply.encode_to_vec().into())
    }

    /// Refuses a request from `source` whose body speaks for `client` when that client
    /// connected from another NID: the id in a body is the sender's word; the NID is the
    /// fabric's.
    fn acts_for(&self, client: u64, source: Nid) -> Result<(), ServiceError> {
        self.clients.check(client, source).map_err(|error| {
            warn!(%error, "refused a request acting for another client");
            storage_error(error)
        })
    }

    /// Refuses a REPLAY_DONE meant for another start of this server: sent to an earlier
    /// start and sent again by the fabric after that start crashed, it would tell this one
    /// that the client is done before it has replayed anything here — and the window would
    /// run the transnos above that client's, and close, without its writes.
    fn check_boot(&self, done: &pb::ReplayDoneRequest) -> Result<(), ServiceError> {
        if done.boot_id == self.boot_id {
            return Ok(());
        }
        warn!(
            client = done.client,
            "refused a replay-done meant for another start of this server"
        );
        Err(ServiceError::new(
            errno::ENOTCONN,
            format!(
                "client {} says it has replayed to server start {:#x}, not to this one ({:#x}): \
                 reconnect and replay",
                done.client, done.boot_id, self.boot_id
            ),
        ))
    }

    fn target(&self, index: u32) -> Result<&Arc<crate::ost::Ost>, ServiceError> {
        self.oss.target(index).map_err(storage_error)
    }

    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "OssService::write",
        skip_all
    )]
    async fn write(
        &self,
        request: &Request,
        op: pb::WriteRequest,
    ) -> Result<pb::OpReply, ServiceError> {
        let node = &request.node;
        let target = Arc::clone(self.target(op.target)?);
        let wire = op
            .buffer
            .as_ref()
            .ok_or_else(|| ServiceError::new(errno::EPROTO, "write without a buffer descriptor"))?;
        let desc = BufferDescriptor::from_proto(wire, node.limits())?;
        if desc.length > target.config().io_size_max_bytes {
            return Err(storage_error(StorageError::RequestTooLarge {
                target: op.target,
                length_bytes: desc.length,
                max_bytes: target.config().io_size_max_bytes,
            }));
        }
        if op.replay_transno != 0 {
            return self.replay(node, op, desc, &target).await;
        }
        self.check_open(op.target)?;
        let _room = self.bulk_room(desc.length).await?;
        // Pulled and checked against every chunk's checksum and the descriptor's; a corrupted
        // byte ends here, never in the object.
        // The checksum of what arrived comes from the verified chunks' (a forwarder's
        // sub-descriptor carries none of its own): the data is not read a second time.
        let (data, checksum) = node.bulk_get_checked(&desc).await?;
        // The pull can take long (its chunks resent through a failing path); a client that
        // gave up on this request meanwhile may have written the same place since. Its bytes
        // must not land after that.
        request.begin_effect()?;
        let (length, started) = (data.len(), std::time::Instant::now());
        let reply = target
            .write(ObjectId(op.object), op.offset, data)
            .await
            .map_err(storage_error)?;
        if let Some(id) = trace::current() {
            // The step that takes most of a write's time, said before the journal's.
            let what = format!(
                "{}: {length} B at offset {} of object {} written to the target's file and the \
                 record made, in {} µs",
                self.oss.target_name(op.target),
                op.offset,
                op.object,
                started.elapsed().as_micros()
            );
            node.trace_log()
                .record(id, Step::new("disk", "write", what));
            self.trace_journal(node, id, &target, op.target, &reply);
        }
        Ok(pb::OpReply {
            checksum,
            ..self.stamp(&reply)
        })
    }

    /// Room in the bulk pool for `length_bytes` of pulled data: however many clients write at
    /// once, the server holds at most `bulk_pool_bytes` of it. Released when dropped.
    async fn bulk_room(&self, length_bytes: u64) -> Result<SemaphorePermit<'_>, ServiceError> {
        let pages = length_bytes
            .div_ceil(POOL_PAGE_BYTES)
            .clamp(1, self.bulk_pool_pages) as u32;
        self.bulk_pool
            .acquire_many(pages)
            .await
            .map_err(|_| ServiceError::new(errno::ESHUTDOWN, "server stopping"))
    }

    /// A replayed write. It waits in its target's recovery window for its turn *before* it
    /// takes bulk room or pulls anything: replays queued behind a missing lower transno hold
    /// no room, so the missing one always finds some when it comes.
    async fn replay(
        &self,
        node: &Node,
        op: pb::WriteRequest,
        desc: BufferDescriptor,
        target: &Arc<crate::ost::Ost>,
    ) -> Result<pb::OpReply, ServiceError> {
        let transno = op.replay_transno;
        if op.replay_boot_id != 0 && op.replay_boot_id != self.boot_id {
            // Sent to a start that has ended (the fabric sent it again, to the same address):
            // run here, it could run ahead of lower transnos the client has yet to replay to
            // this start. The client replays to this one from its lowest.
            return Err(ServiceError::new(
                errno::ENOTCONN,
                format!(
                    "a replay of transno {transno} meant for server start {:x}; this is start                      {:x}: reconnect and replay to it",
                    op.replay_boot_id, self.boot_id
                ),
            ));
        }
        let session = self.clients.session(op.client);
        if op.replay_session != 0 && session.is_some_and(|s| s != 0 && s != op.replay_session) {
            // Evicted since the write was acknowledged, and put back on the list by a later
            // connect: what it kept from before is gone, whatever a window here waits for.
            self.recovery.replay_lost(op.target, op.client);
            return Err(ServiceError::new(
                errno::ESTALE,
                format!(
                    "client {} was evicted after this write was acknowledged (session {}, now \
                     {}): its uncommitted write, transno {transno}, is lost",
                    op.client,
                    op.replay_session,
                    session.unwrap_or(0)
                ),
            ));
        }
        let turn = match self
            .recovery
            .wait_for_turn(
                op.target,
                target,
                op.client,
                transno,
                (
                    ObjectId(op.object),
                    ByteRange::new(op.offset, op.offset.saturating_add(desc.length)),
                ),
            )
            .await?
        {
            ReplayAdmission::Answered(reply) => return Ok(self.stamp(&reply)),
            ReplayAdmission::Turn(turn) => turn,
        };
        // Its turn: every lower transno has run. Now room, then the pull, as for a new write.
        let _room = self.bulk_room(desc.length).await?;
        // A pull that fails (the bytes' owner let go of them, or cannot be reached) drops the
        // turn unexecuted: recovery counts the write lost, and a copy of this request sent
        // again is told so — never that it was done.
        let (data, checksum) = node.bulk_get_checked(&desc).await?;
        let reply = target
            .replay_write(Transno(transno), ObjectId(op.object), op.offset, data)
            .await
            .map_err(storage_error)?;
        // The next replay may run.
        turn.executed();
        if let Some(id) = trace::current() {
            self.trace_journal(node, id, target, op.target, &reply);
        }
        Ok(pb::OpReply {
            checksum,
            ..self.stamp(&reply)
        })
    }

    /// A traced write's journal record, and — in async mode — its commit when its group lands.
    fn trace_journal<T>(
        &self,
        node: &Node,
        id: TraceId,
        ost: &Arc<crate::ost::Ost>,
        index: u32,
        reply: &OpReply<T>,
    ) {
        let Some(transno) = reply.transno else { return };
        let name = self.oss.target_name(index);
        let last = reply.last_committed;
        if last >= transno {
            // A sync journal commits each write before replying; an async one may have landed
            // the write's group before the reply too.
            let journal = if ost.sync_journal() {
                "sync journal"
            } else {
                "async journal, its group already landed"
            };
            let what = format!(
                "{name}: record transno {transno} written and committed before the reply \
                 ({journal}): last_committed {last}"
            );
            node.trace_log()
                .record(id, Step::new("journal", "commit", what));
            return;
        }
        let what = format!(
            "{name}: record transno {transno} handed to the journal; the reply goes now with \
             last_committed {last}, the commit follows with the next group (async journal)"
        );
        node.trace_log()
            .record(id, Step::new("journal", "record", what));
        // Ends when the group commits or the target stops.
        let (node, ost) = (node.clone(), Arc::clone(ost));
        tokio::spawn(async move {
            if let Some(last) = ost.committed(transno).await {
                let what = format!(
                    "{name}: group commit made transno {transno} durable: last_committed {last}"
                );
                node.trace_log()
                    .record(id, Step::new("journal", "commit", what));
            }
        });
    }

    /// A client is done: every target is committed, so nothing it was told is written stays
    /// uncommitted, and then it is forgotten, durably, so the next restart does not wait for
    /// it. During recovery it must replay first (it is waited for).
    async fn disconnect(&self, client: u64) -> Result<pb::OpReply, ServiceError> {
        if self.recovery.any_recovering() {
            return Err(ServiceError::new(
                errno::EINPROGRESS,
                "the server is recovering: reconnect, replay, then disconnect",
            ));
        }
        // Every target at once; each commit is shared with whatever else is pending there.
        let mut syncs = tokio::task::JoinSet::new();
        for ost in self.oss.targets() {
            let ost = Arc::clone(ost);
            syncs.spawn(async move { ost.sync().await.map(drop) });
        }
        while let Some(synced) = syncs.join_next().await {
            synced
                .map_err(|e| ServiceError::new(errno::EIO, format!("commit task failed: {e}")))?
                .map_err(storage_error)?;
        }
        self.clients.remove(&[client]).map_err(storage_error)?;
        info!(client, "client disconnected: its writes are committed");
        Ok(pb::OpReply {
            boot_id: self.boot_id,
            ..pb::OpReply::default()
        })
    }

    async fn read(&self, node: &Node, op: pb::ReadRequest) -> Result<pb::OpReply, ServiceError> {
        self.check_open(op.target)?;
        let target = self.target(op.target)?;
        let wire = op
            .buffer
            .ok_or_else(|| ServiceError::new(errno::EPROTO, "read without a buffer descriptor"))?;
        let desc = BufferDescriptor::from_proto(&wire, node.limits())?;
        let reply = target
            .read(ObjectId(op.object), op.offset, desc.length)
            .await
            .map_err(storage_error)?;
        let data = reply.value.clone();
        // Fewer bytes at the end of the object: push only those.
        let pushed = BufferDescriptor {
            length: data.len() as u64,
            ..desc
        };
        let checksum = if data.is_empty() {
            0
        } else {
            node.bulk_put(&pushed, data.clone()).await?
        };
        Ok(pb::OpReply {
            bytes: data.len() as u64,
            checksum,
            ..self.stamp(&reply)
        })
    }
}

impl Service for OssService {
    fn op_name(&self, opcode: u32) -> Option<&'static str> {
        opcode::name(opcode)
    }

    fn handle(self: Arc<Self>, request: Request) -> Reply {
        Box::pin(async move {
            let fail = Arc::clone(request.node.fail_points());
            let reply = self.handle_request(request).await;
            // The request is done (or failed); its reply may yet stall, fail or be lost.
            match fail.pass(Site::OssBeforeReply).await {
                Ok(()) => reply,
                Err(injected) => Err(injected.error(Site::OssBeforeReply).into()),
            }
        })
    }
}

/// The writes a CONNECT says its client has had no answer to, checked: at most
/// [`UNANSWERED_WRITES_MAX`], none empty or past the end of an object.
fn unanswered_writes(
    connect: &pb::ConnectRequest,
) -> Result<Vec<(u32, ObjectId, ByteRange)>, ServiceError> {
    if connect.unanswered.len() > UNANSWERED_WRITES_MAX {
        return Err(ServiceError::new(
            errno::EINVAL,
            format!(
                "CONNECT names {} unanswered writes; at most {UNANSWERED_WRITES_MAX} are taken",
                connect.unanswered.len()
            ),
        ));
    }
    connect
        .unanswered
        .iter()
        .map(|write| {
            let end = write
                .offset
                .checked_add(write.length)
                .filter(|_| write.length > 0)
                .ok_or_else(|| {
                    ServiceError::new(
                        errno::EINVAL,
                        format!(
                            "CONNECT names an unanswered write of {} bytes at {}: empty or past \
                             the largest offset",
                            write.length, write.offset
                        ),
                    )
                })?;
            Ok((
                write.target,
                ObjectId(write.object),
                ByteRange::new(write.offset, end),
            ))
        })
        .collect()
}

fn decode<M: prost::Message + Default>(body: &[u8]) -> Result<M, ServiceError> {
    M::decode(body)
        .map_err(|e| ServiceError::new(errno::EPROTO, format!("malformed OST request: {e}")))
}

/// A fresh id for this server start: time and pid, so two starts never share one.
fn boot_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    nanos ^ (u64::from(std::process::id()) << 48) | 1
}
