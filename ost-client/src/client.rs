//! [`OstClient`]: one connection to an OSS — typed calls, and the **replay list**: every write
//! the server acknowledged but has not yet committed (async mode) is kept
//! ([`crate::replay::ReplayList`]) until a reply's `last_committed` covers its transno. After a
//! server restart the client reconnects, replays what it kept in transno order, and says it is
//! done; a client that was evicted learns which acknowledged writes were lost.
//!
//! A kept write holds one of two things for the server to pull from again in replay:
//!
//! - **Its bytes.** [`OstClient::write`] registers a region of this client's own memory for
//!   the call and keeps the bytes; replay registers them again. [`OstClient::kept_bytes`] says
//!   how much memory that pins.
//! - **A descriptor of another node's memory.** [`OstClient::write_by_descriptor`] names a
//!   buffer the caller was handed (a PFS fyod hands on a sub-descriptor of a compute node's
//!   buffer), so the server pulls straight from its owner, and only the descriptor is kept; in
//!   replay the server pulls from the owner again. The owner must keep its region registered
//!   until the write is committed: an owner that dropped it makes the replay fail, and the
//!   write is reported lost — never silently.
//!
//! Both kinds share one transno-ordered list, one reconnect loop and one replay. A program
//! ends a connection with [`OstClient::disconnect`]: the server commits everything and forgets
//! the client.
//!
//! A connection made with the node's [`OscStats`] counts every request about a target there
//! (`osc.*.stats`), and every read and write RPC in rpc_stats' histograms, as it sends them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use iopath_admin::lprocfs::Rw;
use iopath_fabric::frame::status::errno;
use iopath_fabric::rpc::CallOptions;
use iopath_fabric::{BufferDescriptor, ChecksumKind, Checksummed, FabricError, Nid, Node};
use iopath_proto::ost as pb;
use prost::Message as _;
use tracing::{info, warn};

use crate::counters::OstOp;
use crate::id::ClientId;
use crate::import::{
    self, CallFailure, CallLimits, CallStep, CallWait, ConnectFacts, Import, LostWrite,
    ReplayAnswer, ReplayStep, Stamp, WriteAnswer,
};
use crate::replay::{Kept, KeptData};
use crate::stats::{OscStats, TargetStats};
use crate::unanswered::Unanswered;
use crate::wire::{OST_PORTAL, is_connection_error, opcode};
use iopath_fabric::trace::{self, Step};

/// How often a client tries to reach a starting server whose service is not registered yet.
const RECONNECT_ATTEMPTS: u32 = 100;
const RECONNECT_PAUSE: Duration = Duration::from_millis(200);
/// How long a call keeps trying a server it cannot reach (gone, restarting) before the
/// caller is told: a bound in time, not in tries, because a try against a dead peer can
/// itself take seconds (the fabric's resends). A server restarted within this is replayed
/// to as if nothing happened; one that stays down is an error (EIO through a mount) after
/// about this long, never a hang.
pub const UNREACHABLE_FOR_MAX: Duration = Duration::from_secs(20);
/// The longest a call waits for a server in recovery, whatever the server says its window
/// is: a bound of our own on what a peer tells us.
const RECOVERY_WAIT_MAX: Duration = Duration::from_secs(600);
/// Added to the time the server says its recovery can last, for the messages in between.
const RECOVERY_WAIT_SLACK: Duration = Duration::from_secs(2);
/// A reconnect's CONNECT waits for its reply this fraction of the RPC timeout (ptlrpc's
/// `obd_timeout / 20`): 0.5 s against the default 10 s.
const CONNECT_TIMEOUT_DIVISOR: u32 = 20;
/// How many times one reconnect starts its replay over because the server restarted again
/// before the replay was done: a bound of our own on a peer that keeps crashing.
const REPLAY_ROUNDS_MAX: u32 = 8;

impl Stamp {
    fn of(reply: &pb::OpReply) -> Stamp {
        Stamp {
            transno: reply.transno,
            last_committed: reply.last_committed,
        }
    }
}

/// What a descriptor-named write or read answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DescriptorReply {
    /// The write's transno (0 for a read).
    pub transno: u64,
    /// The target's last committed transno.
    pub last_committed: u64,
    /// Bytes moved.
    pub bytes: u64,
    /// Checksum of the bytes moved.
    pub checksum: u32,
}

/// A disconnect under way, counted in the import until it ends — however it ends: an error,
/// or its caller dropping it halfway. Then the pinger goes on.
struct Leaving<'a>(&'a OstClient);

impl<'a> Leaving<'a> {
    fn begin(client: &'a OstClient) -> Leaving<'a> {
        client.lock().leaving_began();
        Leaving(client)
    }
}

impl Drop for Leaving<'_> {
    fn drop(&mut self) {
        // Not a second panic while unwinding: a poisoned state still counts down.
        let mut import = self.0.state.lock().unwrap_or_else(PoisonError::into_inner);
        import.leaving_ended();
    }
}

/// What a reconnect did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ReplayReport {
    /// Whether the server had restarted since the last connect.
    pub restarted: bool,
    /// Writes replayed.
    pub replayed: u64,
    /// Kept writes the server no longer had and would not take back: lost.
    pub lost: Vec<LostWrite>,
}

/// A connection to one OSS.
#[derive(Debug)]
pub struct OstClient {
    node: Node,
    server: Nid,
    client: ClientId,
    checksum: ChecksumKind,
    /// The connection's state and every decision about it: a pure core, under this lock.
    state: Mutex<Import>,
    replayed: AtomicU64,
    /// Every kept write found lost over this client's life, whoever's reconnect found it (a
    /// ping, or a call that met the restart): a file's fsync asks here whether its writes
    /// are among them. One entry per acknowledged write lost: bounded by what this client
    /// wrote, not by what a server says.
    lost: Mutex<Vec<LostWrite>>,
    /// Held through a reconnect and its replay, so that callers who notice a restart at once
    /// replay one after the other: the later ones find the new start replayed to.
    replaying: tokio::sync::Mutex<()>,
    /// New writes sent and not answered yet: named at every reconnect, so that a server that
    /// cut their bytes in its recovery does not count them lost.
    unanswered: Unanswered,
    /// The node's osc counters, if it keeps them: every request about a target is counted
    /// in that target's row.
    stats: Option<Arc<OscStats>>,
}

/// A client that goes takes what it kept with it: the node's osc counters stop counting it.
impl Drop for OstClient {
    fn drop(&mut self) {
        let kept = self
            .state
            .get_mut()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .forget_every_kept();
        self.kept_forgotten(&kept);
    }
}

impl OstClient {
    /// Connects to the OSS at `server` as client `client` (an id that stays the same across
    /// restarts of this client).
    pub async fn connect(
        node: Node,
        server: Nid,
        client: impl Into<ClientId>,
    ) -> Result<OstClient, FabricError> {
        OstClient::connect_counted(node, server, client, None).await
    }

    /// [`OstClient::connect`], counting what it asks of each target in `stats`, the node's
    /// osc counters, when given.
    pub async fn connect_counted(
        node: Node,
        server: Nid,
        client: impl Into<ClientId>,
        stats: Option<Arc<OscStats>>,
    ) -> Result<OstClient, FabricError> {
        let me = OstClient {
            node,
            server,
            client: client.into(),
            checksum: ChecksumKind::Crc32,
            state: Mutex::new(Import::new()),
            replayed: AtomicU64::new(0),
            lost: Mutex::default(),
            replaying: tokio::sync::Mutex::new(()),
            unanswered: Unanswered::default(),
            stats,
        };
        // A server whose node is up but whose service is not registered yet is starting
        // (it recovers its targets first): wait for it, bounded. Nothing listening at all is
        // an error at once.
        let mut attempts = 0;
        let reply = loop {
            match me.connect_once(CallOptions::default()).await {
                Err(error) if error.is_no_service() && attempts < RECONNECT_ATTEMPTS => {
                    attempts += 1;
                    tokio::time::sleep(RECONNECT_PAUSE).await;
                }
                other => break other?,
            }
        };
        me.lock().first_connected(&facts_of(&reply));
        if reply.recovering {
            // A fresh client has nothing to replay; tell the server not to wait for it. If the
            // server knew this id from before its restart, this is a new incarnation that has
            // forgotten what it was told was written: the server must count that as lost.
            match me.replay_done(true, reply.boot_id).await {
                // The server restarted again since it answered: the first call finds the new
                // start, replays (nothing) to it and says so there.
                Err(error) if is_another_start(&error) => {}
                other => other?,
            }
        }
        Ok(me)
    }

    /// The server's NID.
    pub fn server(&self) -> Nid {
        self.server
    }

    /// Bytes this client holds in its own memory for replay: the copies [`OstClient::write`]
    /// keeps. Writes kept by descriptor add nothing here — their bytes stay pinned in the
    /// memory of the node the descriptor names, and that node counts them.
    pub fn kept_bytes(&self) -> u64 {
        self.lock().replay().pinned_bytes()
    }

    /// Acknowledged-but-uncommitted writes held for replay, by bytes or by descriptor.
    pub fn kept_writes(&self) -> usize {
        self.lock().replay().len()
    }

    /// The id this client connected as.
    pub fn client_id(&self) -> ClientId {
        self.client
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Import> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Writes replayed after server restarts over this client's life (each reconnect's own
    /// count is in its [`ReplayReport`]).
    pub fn replayed(&self) -> u64 {
        self.replayed.load(Ordering::Relaxed)
    }

    async fn connect_once(&self, options: CallOptions) -> Result<pb::ConnectReply, FabricError> {
        self.check_connected()?;
        let body = pb::ConnectRequest {
            client: self.client.get(),
            unanswered: self.unanswered.now(),
        }
        .encode_to_vec()
        .into();
        let reply = self
            .send_with(None, opcode::CONNECT, body, options, &mut false)
            .await?;
        let reply =
            pb::ConnectReply::decode(reply.as_ref()).map_err(|_| FabricError::MalformedFrame {
                why: "undecodable CONNECT reply",
            })?;
        // How long a call may wait for the recovery, as the server says, within our own bound.
        let hard_remaining = Duration::from_millis(reply.recovery_hard_remaining_ms)
            .min(RECOVERY_WAIT_MAX)
            + RECOVERY_WAIT_SLACK;
        self.lock().connect_answered(
            reply.recovering,
            hard_remaining,
            tokio::time::Instant::now(),
        );
        Ok(reply)
    }

    /// Refuses calls after [`OstClient::disconnect`]: the server has forgotten this client.
    fn check_connected(&self) -> Result<(), FabricError> {
        if self.lock().is_disconnected() {
            return Err(FabricError::Remote {
                peer: self.server,
                code: errno::ENOTCONN,
                message: format!(
                    "client {} has disconnected from {}",
                    self.client, self.server
                ),
            });
        }
        Ok(())
    }

    /// Whether [`OstClient::disconnect`] has run.
    pub fn is_disconnected(&self) -> bool {
        self.lock().is_disconnected()
    }

    /// Tells the server start `boot_id` that this client has replayed all it kept to it
    /// (`fresh`: it is new, or a new incarnation that kept nothing). Another start refuses it
    /// ([`is_another_start`]).
    async fn replay_done(&self, fresh: bool, boot_id: u64) -> Result<(), FabricError> {
        let body = pb::ReplayDoneRequest {
            client: self.client.get(),
            fresh,
            boot_id,
        }
        .encode_to_vec()
        .into();
        self.send(None, opcode::REPLAY_DONE, body).await.map(drop)
    }

    /// The node's osc counters of `target`, if it keeps them.
    fn target_stats(&self, target: u32) -> Option<Arc<TargetStats>> {
        self.stats.as_deref()?.target(target)
    }

    /// Tells the node's osc counters that this client's replay list for `target` grew by
    /// `added` and shrank by `removed`.
    fn kept_changed(&self, target: u32, added: usize, removed: usize) {
        if let Some(stats) = self.target_stats(target) {
            stats.kept_changed(added as u64, removed as u64);
        }
    }

    /// Tells the osc counters that the kept writes `kept` (a count per target) were let go.
    fn kept_forgotten(&self, kept: &[(u32, u64)]) {
        for &(target, count) in kept {
            self.kept_changed(target, 0, count as usize);
        }
    }

    /// Sends one request to the server and waits for its reply: the one place requests
    /// leave. A request about `target` is counted in the node's osc counters of it (when the
    /// node keeps them) as under way until it ends, and its wait once a reply comes — an
    /// error reply is a reply too; a timeout is not.
    /// Sends one request once (the fabric resends it on a timeout).
    async fn send(&self, target: Option<u32>, op: u32, body: Bytes) -> Result<Bytes, FabricError> {
        self.send_with(target, op, body, CallOptions::default(), &mut false)
            .await
    }

    /// [`OstClient::send`]; `sent_again` is set if the request went out more than once.
    async fn send_noting_resends(
        &self,
        target: Option<u32>,
        op: u32,
        body: Bytes,
        sent_again: &mut bool,
    ) -> Result<Bytes, FabricError> {
        self.send_with(target, op, body, CallOptions::default(), sent_again)
            .await
    }

    /// [`OstClient::send_noting_resends`] with the fabric's `options` (a replay's resends).
    async fn send_with(
        &self,
        target: Option<u32>,
        op: u32,
        body: Bytes,
        options: CallOptions,
        sent_again: &mut bool,
    ) -> Result<Bytes, FabricError> {
        let stats = target.and_then(|t| self.target_stats(t));
        let counted = match (stats.as_deref(), OstOp::of(op)) {
            (Some(stats), Some(op)) => Some((stats.request(), op)),
            _ => None,
        };
        let mut sends = 0;
        let reply = self
            .node
            .call_counting_sends(self.server, OST_PORTAL, op, body, options, &mut sends)
            .await;
        *sent_again |= sends > 1;
        if let Some((request, op)) = counted
            && matches!(&reply, Ok(_) | Err(FabricError::Remote { .. }))
        {
            request.replied(op);
        }
        reply
    }

    fn decode(reply: &[u8]) -> Result<pb::OpReply, FabricError> {
        pb::OpReply::decode(reply).map_err(|_| FabricError::MalformedFrame {
            why: "undecodable OST reply",
        })
    }

    /// Sends one request (about `target`, if it names one); if the server is gone or
    /// restarting, reconnects, replays, and sends it again, for a bounded time. Acknowledged
    /// writes the server lost (this client was evicted, or a descriptor's owner dropped its
    /// memory) are an error here, never silence.
    ///
    /// A server in its recovery window answers `EINPROGRESS` until every client it knew has
    /// replayed or been evicted: the call waits as long as the server says the window can
    /// last (its hard deadline, bounded by [`RECOVERY_WAIT_MAX`]), and says once that it waits.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "OstClient::call",
        skip_all
    )]
    async fn call(
        &self,
        target: Option<u32>,
        op: u32,
        body: Bytes,
    ) -> Result<pb::OpReply, FabricError> {
        self.call_noting_resends(target, op, body, &mut false).await
    }

    /// [`OstClient::call`], setting `sent_again` when the request went out more than once: the
    /// fabric sent it again after a timeout (to a server that may have restarted meanwhile),
    /// or this loop sent it under a new xid after a lost connection or a restart. An earlier
    /// sending may then have executed, and the server's saved replies cannot tell.
    async fn call_noting_resends(
        &self,
        target: Option<u32>,
        op: u32,
        body: Bytes,
        sent_again: &mut bool,
    ) -> Result<pb::OpReply, FabricError> {
        self.check_connected()?;
        let mut wait = CallWait::default();
        let limits = CallLimits {
            unreachable_for_max: UNREACHABLE_FOR_MAX,
            recovery_wait_max: RECOVERY_WAIT_MAX,
        };
        loop {
            let error = match self
                .send_noting_resends(target, op, body.clone(), sent_again)
                .await
            {
                Ok(reply) => {
                    let reply = Self::decode(&reply)?;
                    let known = self.lock().known_start();
                    if reply.boot_id != 0 && reply.boot_id != known {
                        // The server restarted between our requests without our noticing a
                        // failure: replay before trusting anything else.
                        self.recover().await?;
                    }
                    return Ok(reply);
                }
                Err(error) => error,
            };
            let failure = if matches!(&error, FabricError::Remote { code, .. } if *code == errno::EINPROGRESS)
            {
                CallFailure::Recovering
            } else if is_connection_error(&error) {
                CallFailure::Unreachable
            } else {
                CallFailure::Other
            };
            let now = tokio::time::Instant::now();
            let until = self.lock().recovery_until();
            let pause_first = match wait.failed(failure, now, until, limits) {
                CallStep::GiveUp => return Err(error),
                CallStep::GiveUpRecovering => {
                    let since = wait.waiting_since().unwrap_or(now);
                    return Err(FabricError::Remote {
                        peer: self.server,
                        code: errno::EINPROGRESS,
                        message: format!(
                            "{} is still recovering after {:.0} s, longer than its recovery window can last",
                            self.server,
                            now.duration_since(since).as_secs_f64()
                        ),
                    });
                }
                CallStep::Retry {
                    first_wait,
                    pause_first,
                } => {
                    if first_wait {
                        // How long the window can last is known once this client has
                        // connected to the new start (the reconnect below).
                        match until.filter(|&until| until > now) {
                            Some(until) => {
                                let left = until.saturating_duration_since(now).as_secs();
                                warn!(server = %self.server, "the server restarted and is recovering its clients' writes: waiting for it (at most {left} s)");
                            }
                            None => {
                                warn!(server = %self.server, "the server restarted and is recovering its clients' writes: reconnecting to replay ours");
                            }
                        }
                    }
                    pause_first
                }
            };
            if pause_first {
                tokio::time::sleep(RECONNECT_PAUSE).await;
            }
            match self.recover().await {
                Ok(()) => {}
                Err(e) if is_connection_error(&e) => {}
                Err(e) => return Err(e),
            }
            if failure == CallFailure::Recovering {
                // Replayed; the window closes once every client has (or is evicted).
                tokio::time::sleep(RECONNECT_PAUSE).await;
            }
            *sent_again = true;
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
                "{} acknowledged but uncommitted writes were lost in replay to {} ({:?})",
                report.lost.len(),
                self.server,
                report.lost
            ),
        })
    }

    /// Notes a reply's stamp: keeps the write if it is not committed yet, and forgets kept
    /// writes the target has now committed.
    fn note(&self, target: u32, stamp: Stamp, kept: Option<Kept>) {
        self.note_answered_by(None, target, stamp, kept);
    }

    /// [`OstClient::note`] for a write's reply from the server start `answered_by` — unless
    /// that start has ended (or is ending: a replay to the next start is under way) and had
    /// not committed the write. Then nothing is noted, false is returned, and the write must
    /// be sent again. Decided under the state lock, where a replay chooses what it replays: a
    /// write is either among what the replay to the next start carries, or noted by no one.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "OstClient::note_answered_by",
        skip_all
    )]
    fn note_answered_by(
        &self,
        answered_by: Option<u64>,
        target: u32,
        stamp: Stamp,
        kept: Option<Kept>,
    ) -> bool {
        let traced = kept.as_ref().and_then(|k| k.trace);
        let (noted, committed) = {
            let mut import = self.lock();
            match import.write_answered(answered_by, target, stamp, kept) {
                WriteAnswer::SendAgain => return false,
                WriteAnswer::Noted(noted) => (noted, import.replay().last_committed(target)),
            }
        };
        self.noted(target, traced, stamp, noted, committed);
        true
    }

    /// Counts and traces what a note did: `noted` of `target`, whose `last_committed` is
    /// `committed` now; `traced`, the acknowledged write's trace, if it was traced.
    fn noted(
        &self,
        target: u32,
        traced: Option<iopath_fabric::trace::TraceId>,
        stamp: Stamp,
        noted: crate::replay::Noted,
        committed: u64,
    ) {
        // A note keeps and forgets writes of `target` alone.
        self.kept_changed(target, usize::from(noted.kept), noted.forgotten.len());
        let forgotten = noted.forgotten;
        let log = self.node.trace_log();
        if let Some(id) = traced {
            let (what, detail) = if stamp.transno > committed {
                (
                    "keep",
                    format!(
                        "{} acknowledged the write on target {target} as transno {} with \
                         last_committed {}: kept for replay until a reply says it is committed",
                        self.server, stamp.transno, stamp.last_committed
                    ),
                )
            } else {
                (
                    "release",
                    format!(
                        "{} acknowledged the write on target {target} as transno {}, already \
                         committed (last_committed {committed}): nothing kept for replay",
                        self.server, stamp.transno
                    ),
                )
            };
            log.record(id, Step::new("osc", what, detail));
        }
        for ((target, transno), kept) in forgotten {
            if let Some(id) = kept.trace {
                let detail = format!(
                    "{} says target {target} has committed through {committed}: transno \
                     {transno} leaves the replay list",
                    self.server
                );
                log.record(id, Step::new("osc", "release", detail));
            }
        }
    }

    /// The target committed up to `last_committed`, learned another way (a sync through
    /// another connection): forgets the kept writes that covers.
    pub fn note_committed(&self, target: u32, last_committed: u64) {
        let stamp = Stamp {
            transno: 0,
            last_committed,
        };
        self.note(target, stamp, None);
    }

    /// Sends a state-changing request and notes its stamp.
    async fn call_noted(&self, target: u32, op: u32, body: Bytes) -> Result<Stamp, FabricError> {
        let stamp = Stamp::of(&self.call(Some(target), op, body).await?);
        self.note(target, stamp, None);
        Ok(stamp)
    }

    /// Creates object `object` on `target`. A create sent again under a new xid (its earlier
    /// attempt's replies were lost or came too late, or the server was recovering) may find
    /// the object there: made by that attempt, or by whoever else ensures the same file's
    /// objects (a fyod opening a file another made), and durable either way (a create commits
    /// before its reply). What was asked for is done, so it is answered as done — with no
    /// transno of its own, and the `last_committed` already known. (The server makes a create
    /// of an id still being created wait for that create to end.)
    pub async fn create(&self, target: u32, object: u64) -> Result<Stamp, FabricError> {
        let body: Bytes = pb::ObjectRequest { target, object }.encode_to_vec().into();
        let mut sent_again = false;
        match self
            .call_noting_resends(Some(target), opcode::CREATE, body, &mut sent_again)
            .await
        {
            Ok(reply) => {
                let stamp = Stamp::of(&reply);
                self.note(target, stamp, None);
                Ok(stamp)
            }
            Err(FabricError::Remote { code, .. }) if code == errno::EEXIST && sent_again => {
                info!(server = %self.server, target, object, "a create sent again found its object: answered as done");
                Ok(Stamp {
                    transno: 0,
                    last_committed: self.lock().replay().last_committed(target),
                })
            }
            Err(error) => Err(error),
        }
    }

    /// The WRITE request for `buffer`; `replay_transno` is 0 for a new write. A replay names
    /// the session it was acknowledged under and the server start it is meant for (the one
    /// this client is replaying to).
    fn write_request(
        &self,
        target: u32,
        object: u64,
        offset: u64,
        buffer: BufferDescriptor,
        replay_transno: u64,
    ) -> Bytes {
        let (replay_session, replay_boot_id) = if replay_transno == 0 {
            (0, 0)
        } else {
            self.lock().replay_identity()
        };
        pb::WriteRequest {
            target,
            object,
            offset,
            buffer: Some(buffer.to_proto()),
            client: self.client.get(),
            replay_transno,
            replay_session,
            replay_boot_id,
        }
        .encode_to_vec()
        .into()
    }

    /// Sends a new write the server pulls from `buffer`, and keeps it as `data` until the
    /// target commits it.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "OstClient::write_kept",
        skip_all
    )]
    async fn write_kept(
        &self,
        target: u32,
        kept: Kept,
        buffer: BufferDescriptor,
    ) -> Result<pb::OpReply, FabricError> {
        let body = self.write_request(target, kept.object, kept.offset, buffer, 0);
        // In flight, for rpc_stats, until the reply (replays are the server's catching up,
        // not new RPCs: they are counted as requests only).
        let stats = self.target_stats(target);
        let rpc = stats
            .as_deref()
            .map(|stats| stats.rpc(Rw::Write, buffer.length, kept.offset));
        // Unanswered until the loop ends: a reconnect meanwhile names it to the server.
        let under_way = self
            .unanswered
            .sent(target, kept.object, kept.offset, buffer.length);
        let mut answers_from_ended_starts = 0;
        let reply = loop {
            let reply = self.call(Some(target), opcode::WRITE, body.clone()).await?;
            let answered_by = Some(reply.boot_id);
            if self.note_answered_by(answered_by, target, Stamp::of(&reply), Some(kept.clone())) {
                break reply;
            }
            // Acknowledged by a start that has ended (its answer was late in the network, or
            // came while a replay to the next start was under way), before its commit: that
            // start's crash took the write, and no replay carried it, for it was not kept
            // yet. Send it again, to the start running now.
            answers_from_ended_starts += 1;
            if answers_from_ended_starts > REPLAY_ROUNDS_MAX {
                return Err(FabricError::Remote {
                    peer: self.server,
                    code: errno::ENOTCONN,
                    message: format!(
                        "{} acknowledged a write from a start that had ended, \
                         {REPLAY_ROUNDS_MAX} times in a row",
                        self.server
                    ),
                });
            }
            info!(server = %self.server, target, transno = reply.transno, "a write was acknowledged by a server start that has ended, before its commit: sending it again");
        };
        drop(under_way);
        if let Some(rpc) = rpc {
            rpc.done(buffer.length);
        }
        Ok(reply)
    }

    /// Writes `data` at `offset`: the server pulls it from a region registered for the call.
    /// The bytes are kept here until committed ([`OstClient::kept_bytes`]).
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "OstClient::write",
        skip_all
    )]
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
        let buffer = region.describe_all(self.checksum);
        let kept = Kept {
            object,
            offset,
            data: KeptData::Data(data.into_data()),
            trace: trace::current(),
        };
        let reply = self.write_kept(target, kept, buffer).await?;
        drop(region);
        Ok(Stamp::of(&reply))
    }

    /// Writes the bytes `buffer` names — another node's memory — at `offset` of `object` on
    /// `target`: the server pulls them from the buffer's owner. Only the descriptor is kept,
    /// so the owner must keep its region registered until the write is committed: replay
    /// pulls from it again.
    pub async fn write_by_descriptor(
        &self,
        target: u32,
        object: u64,
        offset: u64,
        buffer: BufferDescriptor,
    ) -> Result<DescriptorReply, FabricError> {
        let kept = Kept {
            object,
            offset,
            data: KeptData::Descriptor(buffer),
            trace: trace::current(),
        };
        let reply = self.write_kept(target, kept, buffer).await?;
        Ok(DescriptorReply {
            transno: reply.transno,
            last_committed: reply.last_committed,
            bytes: buffer.length,
            checksum: reply.checksum,
        })
    }

    /// The fabric's options for a reconnect's CONNECT (the pinger's, or a call's that found
    /// the server gone or restarted): one send, answered within a twentieth of the RPC
    /// timeout, as ptlrpc's connects are (`INITIAL_CONNECT_TIMEOUT`, `obd_timeout / 20`, sent
    /// with `rq_no_resend`). A reconnect holds this connection's replay mutex; one whose
    /// CONNECT was lost (a router cannot reach a server that is down, and drops it) must not
    /// keep every call that found the restart waiting a full RPC timeout behind it — the
    /// next ping or call tries again.
    fn reconnect_options(&self) -> CallOptions {
        CallOptions {
            timeout: Some(self.node.limits().rpc_timeout / CONNECT_TIMEOUT_DIVISOR),
            resends_max: Some(0),
        }
    }

    /// The fabric's options for a replay to a server whose window can last `hard_remaining`:
    /// resends for as long as that (bounded by [`RECOVERY_WAIT_MAX`]). A replay waits in the
    /// window for its turn — behind an absent client's lower transno, up to the window's
    /// end — and must not be given up on meanwhile: the server would run the copy it holds
    /// and find its bytes gone, as a replay's bytes live only as long as its call.
    fn replay_options(&self, hard_remaining: Duration) -> CallOptions {
        let limits = self.node.limits();
        let wait = hard_remaining.min(RECOVERY_WAIT_MAX) + RECOVERY_WAIT_SLACK;
        let per_send_ms = limits.rpc_timeout.as_millis().max(1);
        let sends = u32::try_from(wait.as_millis() / per_send_ms + 1).unwrap_or(u32::MAX);
        CallOptions {
            timeout: None,
            resends_max: Some(sends.max(limits.rpc_resends_max)),
        }
    }

    /// Replays one kept write under its original transno (no reconnect loop: replays happen
    /// inside one), with `options` for the fabric ([`OstClient::replay_options`]).
    async fn replay_write(
        &self,
        target: u32,
        transno: u64,
        kept: &Kept,
        options: CallOptions,
    ) -> Result<pb::OpReply, FabricError> {
        // Kept bytes are registered again and live until the reply (`_region`); a descriptor
        // names memory its owner still holds, or the pull fails.
        let (buffer, _region) = match &kept.data {
            KeptData::Data(data) => {
                let region = self.node.regions().register_source(data.clone())?;
                (region.describe_all(self.checksum), Some(region))
            }
            KeptData::Descriptor(buffer) => (*buffer, None),
        };
        let body = self.write_request(target, kept.object, kept.offset, buffer, transno);
        let reply = self
            .send_with(Some(target), opcode::WRITE, body, options, &mut false)
            .await?;
        Self::decode(&reply)
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
        let stats = self.target_stats(target);
        let rpc = stats
            .as_deref()
            .map(|stats| stats.rpc(Rw::Read, length, offset));
        let reply = self.call(Some(target), opcode::READ, body).await?;
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
        if let Some(rpc) = rpc {
            rpc.done(reply.bytes);
        }
        // The reply says what the target has committed: kept writes it covers can go.
        self.note_committed(target, reply.last_committed);
        Ok(data)
    }

    /// Reads up to `buffer.length` bytes at `offset` of `object` on `target` into the memory
    /// `buffer` names: the server pushes them to the buffer's owner.
    pub async fn read_by_descriptor(
        &self,
        target: u32,
        object: u64,
        offset: u64,
        buffer: BufferDescriptor,
    ) -> Result<DescriptorReply, FabricError> {
        let body = pb::ReadRequest {
            target,
            object,
            offset,
            buffer: Some(buffer.to_proto()),
        }
        .encode_to_vec()
        .into();
        let stats = self.target_stats(target);
        let rpc = stats
            .as_deref()
            .map(|stats| stats.rpc(Rw::Read, buffer.length, offset));
        let reply = self.call(Some(target), opcode::READ, body).await?;
        if reply.bytes > buffer.length {
            return Err(FabricError::MalformedFrame {
                why: "OST read reply claims more bytes than asked",
            });
        }
        if let Some(rpc) = rpc {
            rpc.done(reply.bytes);
        }
        self.note_committed(target, reply.last_committed);
        Ok(DescriptorReply {
            transno: 0,
            last_committed: reply.last_committed,
            bytes: reply.bytes,
            checksum: reply.checksum,
        })
    }

    /// The object's size.
    pub async fn getattr(&self, target: u32, object: u64) -> Result<u64, FabricError> {
        let body = pb::ObjectRequest { target, object }.encode_to_vec().into();
        Ok(self.call(Some(target), opcode::GETATTR, body).await?.size)
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
        self.call_noted(target, opcode::PUNCH, body).await
    }

    /// Removes the object.
    pub async fn destroy(&self, target: u32, object: u64) -> Result<Stamp, FabricError> {
        let body = pb::ObjectRequest { target, object }.encode_to_vec().into();
        self.call_noted(target, opcode::DESTROY, body).await
    }

    /// The capacity of the file system under `target` (`lfs df`, a mount's statfs). It
    /// changes nothing, so it is sent once, without the reconnect and replay of the calls
    /// that do.
    pub async fn statfs(&self, target: u32) -> Result<crate::Capacity, FabricError> {
        self.check_connected()?;
        let body = pb::StatfsRequest { target }.encode_to_vec().into();
        let reply = self.send(Some(target), opcode::STATFS, body).await?;
        pb::StatfsReply::decode(&reply[..])
            .map(|r| crate::Capacity::from_wire(&r))
            .map_err(|_| FabricError::MalformedFrame {
                why: "undecodable OST statfs reply",
            })
    }

    /// Commits the target's journal: afterwards nothing this client kept for it is needed.
    pub async fn sync(&self, target: u32) -> Result<Stamp, FabricError> {
        let body = pb::SyncRequest { target }.encode_to_vec().into();
        self.call_noted(target, opcode::SYNC, body).await
    }

    /// Ends this client's session with the server: the server commits every target, so every
    /// write it acknowledged to this client is committed, and forgets the client, so a later
    /// restart of the server does not wait for it. Afterwards nothing is kept for replay, and
    /// calls (and the pinger's reconnects) are refused.
    ///
    /// If the server restarted in between, the kept writes are replayed first (the call waits
    /// for the recovery); writes the server lost are an error (`ESTALE`), never silence.
    ///
    /// The pinger stands aside first, as Lustre deactivates an import before its disconnect:
    /// a ping's CONNECT that the server took after the DISCONNECT would put this client back
    /// on its list under a new session, and the ping, seeing the session change while the
    /// writes are still kept, would count every one of them lost.
    pub async fn disconnect(&self) -> Result<(), FabricError> {
        let body = pb::DisconnectRequest {
            client: self.client.get(),
        }
        .encode_to_vec()
        .into();
        let _leaving = Leaving::begin(self);
        // A ping already under way ends first; the later ones see `leaving` and send nothing.
        drop(self.replaying.lock().await);
        self.call(None, opcode::DISCONNECT, body).await?;
        // Every target committed before the reply: nothing kept is needed any more.
        let kept = self.lock().disconnected();
        self.kept_forgotten(&kept);
        Ok(())
    }

    /// Reconnects; if the server restarted, replays every kept write in transno order and
    /// says it is done. Kept writes the server will not take back are reported as lost. If
    /// the server restarts again before the replay is done (its new start refuses the end of
    /// a replay meant for the old one), the replay starts over, to the new start — a bounded
    /// number of times.
    pub async fn reconnect_and_replay(&self) -> Result<ReplayReport, FabricError> {
        let _one_at_a_time = self.replaying.lock().await;
        self.replay_holding_the_turn().await
    }

    /// The pinger's reconnect ([`crate::ping()`]): [`OstClient::reconnect_and_replay`], or
    /// `None`, with nothing sent, once [`OstClient::disconnect`] has begun (or is done).
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "OstClient::ping",
        skip_all
    )]
    pub async fn ping(&self) -> Option<Result<ReplayReport, FabricError>> {
        let _one_at_a_time = self.replaying.lock().await;
        if !self.lock().may_ping() {
            return None;
        }
        Some(self.replay_holding_the_turn().await)
    }

    /// Reconnects and replays, for a caller that holds `replaying`.
    async fn replay_holding_the_turn(&self) -> Result<ReplayReport, FabricError> {
        let result = self.replay_rounds().await;
        self.lock().round_ended();
        result
    }

    /// Writes found lost, in `report` and in this client's record — at once, so that a
    /// reconnect that fails after finding them (its report is dropped with the error) cannot
    /// make them silent: they are no longer kept, and nothing else would say so.
    fn found_lost(&self, report: &mut ReplayReport, lost: impl IntoIterator<Item = LostWrite>) {
        let start = report.lost.len();
        report.lost.extend(lost);
        self.lost
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .extend_from_slice(&report.lost[start..]);
    }

    /// Every kept write found lost so far, by any reconnect of this client's: the ones its
    /// caller was told of, and the ones a ping found with nobody's call waiting.
    pub fn lost_writes(&self) -> Vec<LostWrite> {
        self.lost
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The rounds of [`OstClient::reconnect_and_replay`].
    async fn replay_rounds(&self) -> Result<ReplayReport, FabricError> {
        let mut report = ReplayReport::default();
        for _ in 0..REPLAY_ROUNDS_MAX {
            match self.replay_round(&mut report).await? {
                Round::Done => return Ok(report),
                Round::RestartedAgain => {
                    info!(server = %self.server, "the server restarted again during the replay: replaying to its new start");
                }
            }
        }
        Err(FabricError::Remote {
            peer: self.server,
            code: errno::ENOTCONN,
            message: format!(
                "{} restarted again during each of {REPLAY_ROUNDS_MAX} replays in a row",
                self.server
            ),
        })
    }

    /// One reconnect and, if the server restarted, one replay of every kept write to the
    /// start it reached, adding what it did to `report`. The start counts as replayed to only
    /// once all of it is through: a replay cut short (a timeout, a lost message) leaves the
    /// old boot id, so the next try replays again instead of taking the start for known —
    /// and the window evicting this client for writes it never saw.
    async fn replay_round(&self, report: &mut ReplayReport) -> Result<Round, FabricError> {
        let reply = self.connect_once(self.reconnect_options()).await?;
        let (plan, evicted_lost) = self.lock().reconnected(&facts_of(&reply));
        // Evicted since (the session changed): every kept write was lost, each is reported
        // and none replayed.
        let evicted = !evicted_lost.is_empty();
        if evicted {
            warn!(server = %self.server, kept = evicted_lost.len(), "evicted: every kept write is lost");
            let mut by_target: Vec<(u32, u64)> = Vec::new();
            for lost in &evicted_lost {
                match by_target.last_mut() {
                    Some((t, n)) if *t == lost.target => *n += 1,
                    _ => by_target.push((lost.target, 1)),
                }
            }
            self.kept_forgotten(&by_target);
            self.found_lost(report, evicted_lost);
        }
        let (to, writes, recovering) = match plan {
            import::Round::Known => return Ok(Round::Done),
            import::Round::Replay {
                to,
                writes,
                recovering,
            } => (to, writes, recovering),
        };
        report.restarted = true;
        info!(server = %self.server, kept = writes.len(), recovering, "server restarted: replaying kept writes");
        for ((target, transno), write) in writes {
            let options =
                self.replay_options(Duration::from_millis(reply.recovery_hard_remaining_ms));
            let answer = match self.replay_write(target, transno, &write, options).await {
                Ok(stamp) => {
                    report.replayed += 1;
                    self.replayed.fetch_add(1, Ordering::Relaxed);
                    ReplayAnswer::Done {
                        last_committed: stamp.last_committed,
                    }
                }
                // Evicted, or a descriptor's memory is gone: the acknowledged write is lost.
                // Say so.
                Err(FabricError::Remote { code, message, .. }) if write.data.lost_by(code) => {
                    warn!(server = %self.server, target, transno, "kept write lost: {message}");
                    ReplayAnswer::Lost
                }
                // Another start refused a replay meant for the one this round reached: the
                // server restarted again. Replay to the new start, from the lowest transno.
                Err(error) if is_another_start(&error) => ReplayAnswer::AnotherStart,
                Err(e) => return Err(e),
            };
            let step = self
                .lock()
                .replay_answered((target, transno), write.object, answer);
            match step {
                ReplayStep::Next(noted) => {
                    let committed = self.lock().replay().last_committed(target);
                    let stamp = Stamp {
                        transno: 0,
                        last_committed: committed,
                    };
                    self.noted(target, None, stamp, noted, committed);
                }
                ReplayStep::NextLost { lost, forgotten } => {
                    self.found_lost(report, [lost]);
                    if forgotten {
                        self.kept_changed(target, 0, 1);
                    }
                }
                ReplayStep::RestartedAgain => return Ok(Round::RestartedAgain),
            }
        }
        if recovering {
            // Writes lost to an eviction are, to this start's window, writes a client came
            // back without: it must count them lost.
            match self.replay_done(evicted, to).await {
                Err(error) if is_another_start(&error) => return Ok(Round::RestartedAgain),
                other => other?,
            }
        }
        self.lock().round_through(to);
        // Requests still waiting for a reply went to the start that is gone: they go again
        // now, not at their timeout (ptlrpc resends an import's requests once it is back).
        let resent = self.node.resend_calls_to(self.server);
        if resent > 0 {
            info!(server = %self.server, resent, "replayed: requests in flight to the old start sent again");
        }
        // The replayed writes are committed in order by the server as it recovers; their
        // replies carried last_committed, and `note` dropped what is now safe.
        Ok(Round::Done)
    }
}

/// What a CONNECT's reply says, as the import uses it.
fn facts_of(reply: &pb::ConnectReply) -> ConnectFacts {
    ConnectFacts {
        boot_id: reply.boot_id,
        session: reply.session,
        recovering: reply.recovering,
        recovery_hard_remaining: Duration::from_millis(reply.recovery_hard_remaining_ms),
        targets: reply
            .targets
            .iter()
            .map(|t| (t.index, t.last_committed))
            .collect(),
    }
}

/// How one round of [`OstClient::reconnect_and_replay`] ended.
enum Round {
    /// Replayed and said so to the start it connected to (or there was nothing to replay).
    Done,
    /// That start is gone: another refused the end of the replay. Replay again, to it.
    RestartedAgain,
}

/// Whether `error`, the answer to a replay or a REPLAY_DONE, is a server start refusing what was
/// meant for another (`ENOTCONN`): the server restarted since this client connected, and the
/// client must replay to the new start.
fn is_another_start(error: &FabricError) -> bool {
    matches!(error, FabricError::Remote { code, .. } if *code == errno::ENOTCONN)
}
