//! `Journal`: the task that runs a target's [`CommitPolicy`] against real files.
//!
//! Operations reach the task over a bounded channel after their own I/O is done; the task asks
//! the policy for a transno and a reply point, answers each operation's oneshot at exactly that
//! point, and performs the commits the policy decides on. One commit runs at a time. The
//! durability steps of a commit are spelled out in `run_commit`.

use super::checkpoint::Checkpoint;
use super::policy::{
    CommitGroup, CommitMode, CommitPolicy, Decision, Intent, PolicyConfig, Refusal,
};
use super::record::{HEADER_LEN, JournalEntry, OpRecord, RECORD_LEN};
use super::table::ObjectTable;
use crate::engine::{DiskEngine, EngineFile, EngineFuture, SyncKind};
use crate::error::{Result, StorageError};
use crate::ids::{ObjectId, Transno};
use crate::stop::StopFlag;
use bytes::Bytes;
use iopath_admin::metrics::HistogramSample;
use iopath_fabric::fail::{FailPoints, Site};
use iopath_fabric::histogram::LatencyHistogram;
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use tokio::sync::{OwnedSemaphorePermit, mpsc, oneshot, watch};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

/// Requests queued to the journal task at most (back-pressure beyond that).
const REQUESTS_MAX: usize = 1024;

/// A transno and the `last_committed` that went with it in the reply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Stamp {
    pub(crate) transno: Transno,
    pub(crate) last_committed: Transno,
}

/// Counters of the journal's work, for `lctl`-style views and benchmark reports.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct JournalCounters {
    /// Commits completed.
    pub commits: u64,
    /// Operation records committed.
    pub records_committed: u64,
    /// Object fdatasyncs issued by commits.
    pub data_syncs: u64,
    /// Checkpoints written.
    pub checkpoints: u64,
}

#[derive(Debug, Default)]
struct Counters {
    commits: AtomicU64,
    records_committed: AtomicU64,
    data_syncs: AtomicU64,
    checkpoints: AtomicU64,
    /// Each successful commit's time, from its start (steps A–C, and a checkpoint when one is
    /// due) to its completion.
    commit_latency: LatencyHistogram,
}

/// Makes an object's data durable: a commit's first step for each object an O_DIRECT write
/// left (the target's object files, which reopen a file they had closed).
pub(crate) trait SyncObjects: Send + Sync + std::fmt::Debug {
    /// fdatasyncs `object`'s file.
    fn sync_object(self: Arc<Self>, object: ObjectId) -> EngineFuture<()>;
}

/// Everything the journal task starts from.
#[derive(Debug)]
pub(crate) struct JournalSetup {
    pub(crate) target: u32,
    /// Engine of the journal file (another disk for an external journal).
    pub(crate) journal_engine: Arc<dyn DiskEngine>,
    /// The object files, for the fdatasyncs a commit starts with.
    pub(crate) objects: Arc<dyn SyncObjects>,
    pub(crate) file: Arc<EngineFile>,
    /// Where the next record goes (the end of the valid prefix).
    pub(crate) append_offset: u64,
    pub(crate) table: ObjectTable,
    pub(crate) last_committed: Transno,
    pub(crate) mode: CommitMode,
    pub(crate) policy: PolicyConfig,
    /// The checkpoint file and the directory holding it.
    pub(crate) checkpoint_path: PathBuf,
    /// Journal size that triggers a checkpoint.
    pub(crate) checkpoint_bytes: u64,
    pub(crate) stop: Arc<StopFlag>,
    /// The node's fail points: `oss.before_commit` and `oss.after_commit` are in the commit.
    pub(crate) fail: Arc<FailPoints>,
}

enum Request {
    Submit {
        intent: Intent,
        replay: Option<Transno>,
        permit: Option<OwnedSemaphorePermit>,
        reply: oneshot::Sender<Result<Stamp>>,
    },
    Flush {
        reply: oneshot::Sender<Result<Stamp>>,
    },
    Shutdown {
        reply: oneshot::Sender<Result<Transno>>,
    },
}

/// The caller's handle on a journal task. Dropping it aborts the task where it stands — no
/// final commit — which is exactly a crash as far as the disk is concerned.
#[derive(Debug)]
pub(crate) struct Journal {
    target: u32,
    tx: mpsc::Sender<Request>,
    mode: watch::Sender<CommitMode>,
    /// Highest committed transno, read by every reply: a load, where the watch below would
    /// take its lock.
    last_committed: Arc<AtomicU64>,
    /// The same `last_committed` as it moves, for whoever waits to see a transno committed
    /// (a traced async write); both are set together when a commit lands.
    committed: watch::Receiver<Transno>,
    counters: Arc<Counters>,
    task: JoinHandle<()>,
}

impl Drop for Journal {
    fn drop(&mut self) {
        self.task.abort();
    }
}

impl Journal {
    /// Starts the task.
    pub(crate) fn start(setup: JournalSetup) -> Journal {
        let (tx, rx) = mpsc::channel(REQUESTS_MAX);
        let (mode_tx, mode_rx) = watch::channel(setup.mode);
        let last_committed = Arc::new(AtomicU64::new(setup.last_committed.0));
        let counters = Arc::new(Counters::default());
        let (committed_tx, committed) = watch::channel(setup.last_committed);
        let target = setup.target;
        let task = JournalTask {
            policy: CommitPolicy::new(setup.policy, setup.mode, setup.last_committed),
            origin: Instant::now(),
            waiters: BTreeMap::new(),
            flushes: Vec::new(),
            shutdown: None,
            commit: None,
            in_flight_records: Vec::new(),
            commit_started: Instant::now(),
            last_committed: Arc::clone(&last_committed),
            committed: committed_tx,
            counters: Arc::clone(&counters),
            setup,
        };
        let task = tokio::spawn(task.run(rx, mode_rx));
        Journal {
            target,
            tx,
            mode: mode_tx,
            last_committed,
            committed,
            counters,
            task,
        }
    }

    fn stopped(&self, reason: &str) -> StorageError {
        StorageError::TargetStopped {
            target: self.target,
            reason: reason.to_string(),
        }
    }

    async fn request<T>(
        &self,
        make: impl FnOnce(oneshot::Sender<Result<T>>) -> Request,
    ) -> Result<T> {
        let (reply, answer) = oneshot::channel();
        self.tx
            .send(make(reply))
            .await
            .map_err(|_| self.stopped("journal task has ended"))?;
        answer
            .await
            .map_err(|_| self.stopped("journal task has ended"))?
    }

    /// Hands over an operation whose data step is done; resolves at its reply point.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "Journal::submit",
        skip_all
    )]
    pub(crate) async fn submit(
        &self,
        intent: Intent,
        replay: Option<Transno>,
        permit: Option<OwnedSemaphorePermit>,
    ) -> Result<Stamp> {
        self.request(|reply| Request::Submit {
            intent,
            replay,
            permit,
            reply,
        })
        .await
    }

    /// Commits everything handed over so far; resolves once it is durable.
    pub(crate) async fn flush(&self) -> Result<Stamp> {
        self.request(|reply| Request::Flush { reply }).await
    }

    /// Commits everything, then ends the task. Returns the final `last_committed`.
    pub(crate) async fn shutdown(&self) -> Result<Transno> {
        self.request(|reply| Request::Shutdown { reply }).await
    }

    /// Switches the commit mode; takes effect for operations handed over from now on.
    pub(crate) fn set_mode(&self, mode: CommitMode) {
        self.mode.send_replace(mode);
    }

    /// The current mode.
    pub(crate) fn mode(&self) -> CommitMode {
        *self.mode.borrow()
    }

    /// Highest committed transno.
    pub(crate) fn last_committed(&self) -> Transno {
        Transno(self.last_committed.load(Ordering::Acquire))
    }

    /// Waits until `transno` is committed; returns the `last_committed` that covered it, or
    /// `None` if the journal ended first.
    pub(crate) async fn committed(&self, transno: Transno) -> Option<Transno> {
        let mut committed = self.committed.clone();
        committed
            .wait_for(|last| *last >= transno)
            .await
            .ok()
            .map(|last| *last)
    }

    /// Counters so far.
    pub(crate) fn counters(&self) -> JournalCounters {
        JournalCounters {
            commits: self.counters.commits.load(Ordering::Relaxed),
            records_committed: self.counters.records_committed.load(Ordering::Relaxed),
            data_syncs: self.counters.data_syncs.load(Ordering::Relaxed),
            checkpoints: self.counters.checkpoints.load(Ordering::Relaxed),
        }
    }

    /// The times successful commits took so far, start to durable.
    pub(crate) fn commit_latency(&self) -> HistogramSample {
        self.counters.commit_latency.snapshot()
    }

    /// Stops the task at once, without committing (a simulated crash).
    pub(crate) fn abort(&self) {
        self.task.abort();
    }
}

/// An operation waiting for its reply point and/or its commit.
struct Waiter {
    reply: Option<oneshot::Sender<Result<Stamp>>>,
    /// One of the target's `uncommitted_records_max` permits, returned when the record commits.
    permit: Option<OwnedSemaphorePermit>,
}

/// What a finished commit reports.
struct CommitOutcome {
    append_offset: u64,
    data_syncs: u64,
    checkpointed: bool,
}

type CommitFuture =
    Pin<Box<dyn Future<Output = std::result::Result<CommitOutcome, String>> + Send>>;

struct JournalTask {
    setup: JournalSetup,
    policy: CommitPolicy,
    origin: Instant,
    waiters: BTreeMap<Transno, Waiter>,
    /// `sync` callers: answered once `last_committed` reaches their transno.
    flushes: Vec<(Transno, oneshot::Sender<Result<Stamp>>)>,
    shutdown: Option<(Transno, oneshot::Sender<Result<Transno>>)>,
    commit: Option<CommitFuture>,
    in_flight_records: Vec<OpRecord>,
    /// When the running commit started, for its latency.
    commit_started: Instant,
    last_committed: Arc<AtomicU64>,
    committed: watch::Sender<Transno>,
    counters: Arc<Counters>,
}

/// Waits for the running commit, or forever if there is none.
async fn running(commit: &mut Option<CommitFuture>) -> std::result::Result<CommitOutcome, String> {
    match commit {
        Some(future) => future.await,
        None => std::future::pending().await,
    }
}

impl JournalTask {
    fn now_ms(&self) -> u64 {
        self.origin.elapsed().as_millis() as u64
    }

    fn stopped_error(&self, reason: &str) -> StorageError {
        StorageError::TargetStopped {
            target: self.setup.target,
            reason: reason.to_string(),
        }
    }

    async fn run(mut self, mut rx: mpsc::Receiver<Request>, mut mode: watch::Receiver<CommitMode>) {
        // Bounded by the task's life: each pass handles one event, and the task ends on
        // shutdown, when every handle is gone, or when aborted.
        loop {
            let deadline = self
                .policy
                .next_deadline_ms()
                .map(|ms| self.origin + std::time::Duration::from_millis(ms));
            let decisions = tokio::select! {
                // A finished commit comes first: it releases replies and permits.
                biased;
                outcome = running(&mut self.commit) => {
                    self.commit = None;
                    self.commit_finished(outcome)
                }
                // A mode set before a request was sent applies to it: the mode comes before
                // the requests.
                changed = mode.changed() => {
                    if changed.is_err() {
                        return;
                    }
                    let mode = *mode.borrow_and_update();
                    tracing::info!(target_index = self.setup.target, ?mode, "journal commit mode changed");
                    self.policy.set_mode(self.now_ms(), mode)
                },
                request = rx.recv() => match request {
                    Some(request) => self.handle(request),
                    // Every handle is gone: stop where we stand, committing nothing more.
                    None => return,
                },
                // The oldest pending record's commit interval has run out.
                () = tokio::time::sleep_until(deadline.unwrap_or_else(Instant::now)), if deadline.is_some() => {
                    self.policy.tick(self.now_ms())
                }
            };
            self.execute(decisions);
            if self.shutdown_complete() {
                return;
            }
        }
    }

    /// Handles one request from an operation.
    fn handle(&mut self, request: Request) -> Vec<Decision> {
        let now_ms = self.now_ms();
        match request {
            Request::Submit {
                intent,
                replay,
                permit,
                reply,
            } => {
                if let Some(reason) = self.setup.stop.reason() {
                    let _ = reply.send(Err(self.stopped_error(&reason)));
                    return Vec::new();
                }
                let admitted = match replay {
                    None => self.policy.submit(now_ms, intent),
                    Some(transno) => self.policy.submit_replay(now_ms, transno, intent),
                };
                match admitted {
                    Ok((transno, decisions)) => {
                        self.waiters.insert(
                            transno,
                            Waiter {
                                reply: Some(reply),
                                permit,
                            },
                        );
                        decisions
                    }
                    Err(refusal) => {
                        let _ = reply.send(Err(self.refused(refusal, replay)));
                        Vec::new()
                    }
                }
            }
            Request::Flush { reply } => match self.policy.flush(now_ms) {
                Ok((target, decisions)) => {
                    let last_committed = self.policy.last_committed();
                    if target <= last_committed {
                        // Everything handed over is committed already.
                        let _ = reply.send(Ok(Stamp {
                            transno: target,
                            last_committed,
                        }));
                    } else {
                        self.flushes.push((target, reply));
                    }
                    decisions
                }
                Err(refusal) => {
                    let _ = reply.send(Err(self.refused(refusal, None)));
                    Vec::new()
                }
            },
            Request::Shutdown { reply } => match self.policy.flush(now_ms) {
                Ok((target, decisions)) => {
                    self.shutdown = Some((target, reply));
                    decisions
                }
                Err(refusal) => {
                    let _ = reply.send(Err(self.refused(refusal, None)));
                    Vec::new()
                }
            },
        }
    }

    fn refused(&self, refusal: Refusal, replay: Option<Transno>) -> StorageError {
        match refusal {
            Refusal::Stopped(reason) => self.stopped_error(&reason),
            Refusal::OutOfOrder { last } => StorageError::ReplayOutOfOrder {
                target: self.setup.target,
                transno: replay.map_or(0, |t| t.0),
                last: last.0,
            },
        }
    }

    /// True once a shutdown's last commit is durable (its caller has been answered).
    fn shutdown_complete(&mut self) -> bool {
        let last_committed = self.policy.last_committed();
        match self.shutdown.take() {
            Some((target, reply)) if target <= last_committed => {
                let _ = reply.send(Ok(last_committed));
                self.setup.stop.shut_down();
                true
            }
            Some((_, reply)) if self.policy.stopped().is_some() => {
                let reason = self.policy.stopped().unwrap_or_default().to_string();
                let _ = reply.send(Err(self.stopped_error(&reason)));
                true
            }
            other => {
                self.shutdown = other;
                false
            }
        }
    }

    /// Carries out the policy's decisions, in order.
    fn execute(&mut self, decisions: Vec<Decision>) {
        for decision in decisions {
            match decision {
                // The reply point: the operation's caller gets its transno and the current
                // last_committed. In async mode this fires as soon as the operation is handed
                // over (its data is already on disk); in sync mode, after `Committed` below.
                Decision::Reply { transno } => {
                    let stamp = Stamp {
                        transno,
                        last_committed: self.policy.last_committed(),
                    };
                    if let Some(reply) = self.waiters.get_mut(&transno).and_then(|w| w.reply.take())
                    {
                        let _ = reply.send(Ok(stamp));
                    }
                }
                Decision::Commit(group) => self.start_commit(group),
                Decision::Committed { last_committed } => {
                    self.last_committed
                        .store(last_committed.0, Ordering::Release);
                    self.committed.send_replace(last_committed);
                    for record in self.in_flight_records.drain(..) {
                        if let Err(reason) = self.setup.table.apply(&record) {
                            // The OST serialises operations per object, so this cannot happen;
                            // if it does, the next checkpoint would be wrong: stop instead.
                            tracing::error!(target_index = self.setup.target, %reason, "committed record does not fit the object table");
                            self.setup
                                .stop
                                .stop(format!("object table inconsistent: {reason}"));
                        }
                    }
                    // Committed records give their permits back (sync-mode replies still go
                    // out, as the Reply decisions that follow this one).
                    for (_, waiter) in self.waiters.range_mut(..=last_committed) {
                        waiter.permit = None;
                    }
                    let (done, waiting): (Vec<_>, Vec<_>) = self
                        .flushes
                        .drain(..)
                        .partition(|(target, _)| *target <= last_committed);
                    self.flushes = waiting;
                    for (target, reply) in done {
                        let _ = reply.send(Ok(Stamp {
                            transno: target,
                            last_committed,
                        }));
                    }
                }
                Decision::Stopped { reason, unanswered } => {
                    tracing::error!(target_index = self.setup.target, %reason, "journal commit failed; target stopped");
                    self.setup.stop.stop(reason.clone());
                    for transno in unanswered {
                        if let Some(reply) =
                            self.waiters.get_mut(&transno).and_then(|w| w.reply.take())
                        {
                            let _ = reply.send(Err(self.stopped_error(&reason)));
                        }
                    }
                    self.waiters.clear();
                    for (_, reply) in std::mem::take(&mut self.flushes) {
                        let _ = reply.send(Err(self.stopped_error(&reason)));
                    }
                }
            }
        }
        // Replies sent after a commit leave entries with neither reply nor permit behind.
        self.waiters
            .retain(|_, w| w.reply.is_some() || w.permit.is_some());
    }

    /// Starts the commit of `group` in the background.
    fn start_commit(&mut self, group: CommitGroup) {
        assert!(self.commit.is_none(), "one commit at a time");
        let mut bytes = Vec::with_capacity((group.records.len() + 1) * RECORD_LEN);
        for record in &group.records {
            JournalEntry::Op(*record).encode(&mut bytes);
        }
        JournalEntry::Commit(group.commit).encode(&mut bytes);

        // Past the size limit, this commit also writes a checkpoint and empties the journal.
        let end = self.setup.append_offset + bytes.len() as u64;
        let checkpoint = (end > self.setup.checkpoint_bytes).then(|| {
            let mut table = self.setup.table.clone();
            for record in &group.records {
                // Inconsistencies are reported when the group is applied for real.
                let _ = table.apply(record);
            }
            Checkpoint {
                target: self.setup.target,
                last_committed: group.commit.last,
                table,
            }
            .encode()
        });
        self.in_flight_records = group.records;
        self.commit_started = Instant::now();
        self.commit = Some(Box::pin(run_commit(CommitJob {
            journal_engine: Arc::clone(&self.setup.journal_engine),
            objects: Arc::clone(&self.setup.objects),
            journal: Arc::clone(&self.setup.file),
            offset: self.setup.append_offset,
            bytes,
            sync_objects: group.objects_to_sync,
            checkpoint: checkpoint.map(|bytes| (bytes, self.setup.checkpoint_path.clone())),
            fail: Arc::clone(&self.setup.fail),
        })));
    }

    fn commit_finished(
        &mut self,
        outcome: std::result::Result<CommitOutcome, String>,
    ) -> Vec<Decision> {
        match outcome {
            Ok(outcome) => {
                self.setup.append_offset = outcome.append_offset;
                self.counters.commits.fetch_add(1, Ordering::Relaxed);
                self.counters
                    .commit_latency
                    .record(self.commit_started.elapsed());
                self.counters
                    .records_committed
                    .fetch_add(self.in_flight_records.len() as u64, Ordering::Relaxed);
                self.counters
                    .data_syncs
                    .fetch_add(outcome.data_syncs, Ordering::Relaxed);
                if outcome.checkpointed {
                    self.counters.checkpoints.fetch_add(1, Ordering::Relaxed);
                }
                self.policy.commit_done(self.now_ms())
            }
            Err(reason) => {
                self.in_flight_records.clear();
                self.policy.commit_failed(reason)
            }
        }
    }
}

/// The I/O of one commit.
struct CommitJob {
    journal_engine: Arc<dyn DiskEngine>,
    objects: Arc<dyn SyncObjects>,
    journal: Arc<EngineFile>,
    offset: u64,
    bytes: Vec<u8>,
    /// Objects whose O_DIRECT writes the records name: fdatasync'd first.
    sync_objects: Vec<ObjectId>,
    /// Checkpoint bytes and path, when this commit also checkpoints.
    checkpoint: Option<(Vec<u8>, PathBuf)>,
    /// Where `oss.before_commit` and `oss.after_commit` are asked.
    fail: Arc<FailPoints>,
}

/// A commit's fail point: a delay stalls it, an abort kills the process, an errno fails the
/// commit (and so stops the target, as a journal I/O error does).
async fn commit_fail_point(fail: &FailPoints, site: Site) -> std::result::Result<(), String> {
    fail.pass(site)
        .await
        .map_err(|injected| injected.message(site))
}

/// Commits one group. Errors are strings: whatever failed, the target stops.
#[tracing::instrument(target = "walkthrough", level = "trace", name = "run_commit", skip_all)]
async fn run_commit(job: CommitJob) -> std::result::Result<CommitOutcome, String> {
    let journal_path = job.journal.path().display().to_string();
    // Before anything of the group is written: a process that aborts here leaves its records
    // nowhere, and the clients replay what they were told.
    commit_fail_point(&job.fail, Site::OssBeforeCommit).await?;

    // Durability step A (ordered mode, as ldiskfs): the data the records describe — including
    // the size and block map of O_DIRECT appends — is made durable before any record that
    // names it can be. The fdatasyncs run concurrently.
    let mut syncs = JoinSet::new();
    for &object in &job.sync_objects {
        let pending = Arc::clone(&job.objects).sync_object(object);
        syncs.spawn(async move {
            pending
                .await
                .map_err(|e| format!("fdatasync object {object}: {e}"))
        });
    }
    let data_syncs = job.sync_objects.len() as u64;
    // Bounded: one result per spawned sync.
    while let Some(joined) = syncs.join_next().await {
        joined.map_err(|e| format!("object sync task: {e}"))??;
    }

    // Durability step B: the records and the commit record are written to the journal file
    // (page cache; not yet durable).
    let end = job.offset + job.bytes.len() as u64;
    job.journal_engine
        .write_at(&job.journal, job.offset, Bytes::from(job.bytes))
        .await
        .map_err(|e| format!("write journal {journal_path}: {e}"))?;

    // Durability step C — the commit point: the journal is fdatasync'd. From here on the
    // group survives a crash, and `last_committed` may advance (the caller does that when this
    // future returns). In sync mode the replies go out right after.
    job.journal_engine
        .fsync(&job.journal, SyncKind::Data)
        .await
        .map_err(|e| format!("fdatasync journal {journal_path}: {e}"))?;
    commit_fail_point(&job.fail, Site::OssAfterCommit).await?;

    let Some((checkpoint, path)) = job.checkpoint else {
        return Ok(CommitOutcome {
            append_offset: end,
            data_syncs,
            checkpointed: false,
        });
    };
    // Checkpoint: the committed table replaces the journal's records. Written to a temporary
    // file, fsync'd, renamed over the old one, and the directory fsync'd: a crash leaves either
    // checkpoint whole. Only then is the journal emptied; records at or below the checkpoint's
    // transno left behind by a crash in between are skipped at recovery.
    crate::engine::blocking(&*job.journal_engine, move || {
        write_checkpoint(&path, &checkpoint)
    })
    .await
    .map_err(|e| format!("checkpoint task: {e}"))?
    .map_err(|e| format!("write checkpoint: {e}"))?;
    job.journal_engine
        .truncate(&job.journal, HEADER_LEN as u64)
        .await
        .map_err(|e| format!("empty journal {journal_path}: {e}"))?;
    job.journal_engine
        .fsync(&job.journal, SyncKind::Data)
        .await
        .map_err(|e| format!("fdatasync journal {journal_path}: {e}"))?;
    Ok(CommitOutcome {
        append_offset: HEADER_LEN as u64,
        data_syncs,
        checkpointed: true,
    })
}

/// Atomically replaces the checkpoint at `path` with `bytes`.
pub(crate) fn write_checkpoint(path: &std::path::Path, bytes: &[u8]) -> std::io::Result<()> {
    use std::io::Write;
    let temporary = path.with_extension("tmp");
    let mut file = std::fs::File::create(&temporary)?;
    file.write_all(bytes)?;
    file.sync_all()?;
    std::fs::rename(&temporary, path)?;
    let dir = path.parent().unwrap_or(std::path::Path::new("."));
    std::fs::File::open(dir)?.sync_all()
}
