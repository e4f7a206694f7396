//! Recovery after an unclean restart, the runtime half: each target's pure
//! [`ReplayWindow`] with a driver that hands out replays' turns
//! in transno order, over the durable list of clients the server must wait for
//! ([`super::clients`]).
//!
//! Nothing here polls. Whoever changes a window — a replay queued or run, a client done, a
//! deadline reached — settles the windows at once (`Windows::settle`: evict at a deadline,
//! close a window with nothing left to wait for), and a target's driver sleeps until its
//! window changes. A timer wakes only at the deadline and at the hard deadline.
//!
//! A server that crashes in its window ([`Recovery::stop`]) ends its windows with it: its
//! drivers and timer stop, and nothing of that life evicts, closes or records anything after.
//! Its deadline would otherwise still come, and the dead life would take the clients it
//! waited for off the client list and record what its startup cut as lost — on the disk the
//! next life recovers from, while those clients replay to it.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iopath_fabric::rpc::ServiceError;
use tokio::sync::{Notify, oneshot};
use tokio::task::AbortHandle;
use tracing::{info, warn};

use crate::error::StorageError;
use crate::ids::{ObjectId, Transno};
use crate::ost::{OpReply, Oss, Ost};
use crate::recovery::lost::{ByteRange, WindowOutcome};
use crate::recovery::{ClientId, ReplayDecision, ReplayRequest, ReplayWindow, WindowEvent, Xid};
use crate::service::clients::ClientRegistry;

use iopath_fabric::frame::status::errno::{EAGAIN, EBUSY, ESHUTDOWN, ESTALE};

/// A queued replay: its request handler waits here for its turn. Nothing of its data is held
/// while it waits — the handler takes bulk-pool room and pulls only once its turn comes — so
/// replays queued behind a missing lower transno cannot starve that one of room.
#[derive(Debug)]
pub struct PendingReplay {
    turn: oneshot::Sender<ReplayTurn>,
    /// What the replayed write covers: lost if it cannot run.
    object: ObjectId,
    range: ByteRange,
}

/// A replay's turn at its target: the window handed it out, every lower transno has run, and
/// the target's driver hands out nothing more until this is dropped — executed, or failed —
/// so replays run one at a time in transno order.
#[derive(Debug)]
pub struct ReplayTurn {
    /// Tells the driver the replay is over, and whether it executed: sent by
    /// [`ReplayTurn::executed`], or as "not executed" when the turn is dropped without it.
    finished: Option<oneshot::Sender<bool>>,
}

impl ReplayTurn {
    /// The write executed: the next replay may run.
    pub fn executed(mut self) {
        if let Some(finished) = self.finished.take() {
            let _ = finished.send(true);
        }
    }
}

/// A turn let go without [`ReplayTurn::executed`]: the write did not run (its bytes could not
/// be pulled, the server is stopping, its handler went away), and is lost.
impl Drop for ReplayTurn {
    fn drop(&mut self) {
        if let Some(finished) = self.finished.take() {
            let _ = finished.send(false);
        }
    }
}

/// How a replayed write is admitted by its target's window.
#[derive(Debug)]
pub enum ReplayAdmission {
    /// Already committed, or seen before: answer with this, without executing it again.
    Answered(OpReply<()>),
    /// Its turn has come: execute it now, holding the turn until it is done.
    Turn(ReplayTurn),
}

#[derive(Debug)]
struct TargetRecovery {
    ost: Arc<Ost>,
    /// The target's window: none when this start opened none (a clean start, or no client to
    /// wait for). A closed window stays, to answer replays that come late by what it knows
    /// ran — never by the target's `last_committed`, which later transnos moved past them.
    window: Mutex<Option<ReplayWindow<PendingReplay>>>,
    wake: Notify,
}

impl TargetRecovery {
    /// The target's window, locked.
    fn lock_window(&self) -> std::sync::MutexGuard<'_, Option<ReplayWindow<PendingReplay>>> {
        self.window.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Whether the target's window is open.
    fn is_open(&self) -> bool {
        self.lock_window().as_ref().is_some_and(|w| !w.is_closed())
    }
}

/// Recovery state of every target.
#[derive(Debug)]
pub struct Recovery {
    windows: Arc<Windows>,
    window: Duration,
    /// The drivers and the deadline timer, ended by [`Recovery::stop`].
    tasks: Vec<AbortHandle>,
}

/// Every target's window, shared by the request handlers, the drivers and the deadline timer;
/// each settles the windows after it changes one.
#[derive(Debug)]
struct Windows {
    targets: Vec<(u32, Arc<TargetRecovery>)>,
    /// When the windows opened: their time 0.
    started: tokio::time::Instant,
    registry: Arc<ClientRegistry>,
    /// The clients on the list when this server started, before any connected to it. A
    /// client that is not among them was evicted (or had disconnected, keeping nothing): what
    /// it kept is lost here, whatever its transnos.
    listed_at_start: Vec<u64>,
    /// Set when the server crashed: its windows act on nothing any more.
    stopped: AtomicBool,
}

impl Recovery {
    /// Opens a window on every target for `known` clients (none: no recovery) and starts the
    /// drivers and the deadline timer. A client a window evicts is taken off `registry` at
    /// once: it is not waited for again at the next restart, and a later connect gives it a
    /// new session.
    pub fn start(
        oss: &Arc<Oss>,
        known: Vec<u64>,
        window: Duration,
        registry: Arc<ClientRegistry>,
    ) -> Recovery {
        let window_ms = window.as_millis() as u64;
        let mut targets = Vec::new();
        for ost in oss.targets() {
            let state = (!known.is_empty()).then(|| {
                ReplayWindow::new(
                    ost.last_committed(),
                    known.iter().map(|c| ClientId(*c)),
                    0,
                    window_ms,
                )
            });
            if state.is_none() {
                // No window, so nobody will replay what startup cut: with no client to ask,
                // the cut may hold acknowledged writes (a window that never closed before a
                // clean stop), and is lost.
                let outcome = ost.close_recovery_now(true);
                report_closed(ost, &outcome);
                let ost = Arc::clone(ost);
                tokio::spawn(async move { persist(&ost).await });
            }
            let recovery = Arc::new(TargetRecovery {
                ost: Arc::clone(ost),
                window: Mutex::new(state),
                wake: Notify::new(),
            });
            targets.push((ost.index(), recovery));
        }
        let windows = Arc::new(Windows {
            targets,
            started: tokio::time::Instant::now(),
            listed_at_start: registry.known(),
            registry,
            stopped: AtomicBool::new(false),
        });
        let mut tasks = Vec::new();
        if !known.is_empty() {
            for (_, target) in &windows.targets {
                let driver = tokio::spawn(drive(Arc::clone(&windows), Arc::clone(target)));
                tasks.push(driver.abort_handle());
            }
            let timer = tokio::spawn(enforce_deadlines(Arc::clone(&windows), window));
            tasks.push(timer.abort_handle());
        }
        Recovery {
            windows,
            window,
            tasks,
        }
    }

    /// The server crashed: its windows end with it. The drivers and the deadline timer stop,
    /// queued replays are let go (their handlers answer to a node that is gone), and nothing
    /// of this life evicts a client, takes one off the client list or marks bytes lost from
    /// now on. The next life opens windows of its own, for the clients on the list, over what
    /// its own startup cut.
    pub fn stop(&self) {
        self.windows.stopped.store(true, Ordering::SeqCst);
        for task in &self.tasks {
            task.abort();
        }
        for (_, target) in &self.windows.targets {
            let ended = target
                .window
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take();
            drop(ended);
        }
    }

    fn target(&self, index: u32) -> Option<&Arc<TargetRecovery>> {
        self.windows
            .targets
            .iter()
            .find(|(i, _)| *i == index)
            .map(|(_, t)| t)
    }

    /// Whether target `index` is still in recovery (new requests must wait).
    pub fn recovering(&self, index: u32) -> bool {
        self.target(index).is_some_and(|t| t.is_open())
    }

    /// Replays queued at target `index`, waiting for their turn (0 out of recovery).
    pub fn replays_queued(&self, index: u32) -> usize {
        self.target(index).map_or(0, |t| {
            t.window
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .as_ref()
                .map_or(0, ReplayWindow::queued)
        })
    }

    /// Whether any target is in recovery.
    pub fn any_recovering(&self) -> bool {
        self.windows
            .targets
            .iter()
            .any(|(index, _)| self.recovering(*index))
    }

    /// Time left before the windows' deadline, when clients that never came back are
    /// evicted.
    pub fn remaining_ms(&self) -> u64 {
        if !self.any_recovering() {
            return 0;
        }
        self.window
            .saturating_sub(self.windows.started.elapsed())
            .as_millis() as u64
    }

    /// Time left before the windows close at the very latest: clients that came back and are
    /// still replaying get a second window after the deadline.
    pub fn hard_remaining_ms(&self) -> u64 {
        if !self.any_recovering() {
            return 0;
        }
        (2 * self.window)
            .saturating_sub(self.windows.started.elapsed())
            .as_millis() as u64
    }

    /// `client` connected to this start: it is back, on every target whose window waits for
    /// it, though it replays to one target after another. A window that saw nothing of it yet
    /// would evict it at the deadline while its replays to another target wait their turn.
    pub fn client_connected(&self, client: u64) {
        self.each_window(|window| window.client_reconnected(ClientId(client)));
    }

    /// `client`, back in the window, sent these writes — (target, object, range) — and had no
    /// answer: where startup cut their bytes, the cut is forgotten rather than left pending,
    /// so an eviction does not mark lost what nobody was told was written. The client sends
    /// each again once the window has closed. Only open windows take it: once a window has
    /// closed, what it marked lost stays lost.
    pub fn unanswered(&self, client: u64, writes: &[(u32, ObjectId, ByteRange)]) {
        for (index, target) in &self.windows.targets {
            if !target.is_open() {
                continue;
            }
            let mut forgotten = false;
            for &(_, object, range) in writes.iter().filter(|(t, ..)| t == index) {
                if target.ost.unanswered(object, range) {
                    forgotten = true;
                    info!(target = index, client, %object, %range, "a write its client never had an answer to: its cut bytes are not lost, the client sends it again");
                }
            }
            if forgotten {
                let ost = Arc::clone(&target.ost);
                tokio::spawn(async move { persist(&ost).await });
            }
        }
    }

    /// `client` has replayed everything it kept, on every target.
    pub fn client_done(&self, client: u64) {
        self.each_window(|window| window.client_done(ClientId(client)));
    }

    /// `client` came back as a new incarnation with nothing kept: whatever it had been told
    /// was written and not committed is gone (see [`ReplayWindow::client_forgot`]).
    pub fn client_forgot(&self, client: u64) {
        self.each_window(|window| window.client_forgot(ClientId(client)));
    }

    /// A replay of `client` to target `index` will not be executed (it was acknowledged under
    /// a session an eviction has ended): an acknowledged write is lost.
    pub fn replay_lost(&self, index: u32, client: u64) {
        if let Some(target) = self.target(index)
            && let Some(window) = target.lock_window().as_mut()
            && !window.is_closed()
        {
            window.replay_lost(ClientId(client));
        }
    }

    /// Applies `f` to every open window, wakes the drivers, and settles the windows: a
    /// client's news may have been the last thing a window waited for.
    fn each_window(&self, mut f: impl FnMut(&mut ReplayWindow<PendingReplay>)) {
        for (_, target) in &self.windows.targets {
            if let Some(window) = target.lock_window().as_mut()
                && !window.is_closed()
            {
                f(window);
            }
            target.wake.notify_one();
        }
        self.windows.settle();
    }

    /// A replayed write arrives: queued in transno order, it waits here until the window hands
    /// it out (then it is this replay's [`ReplayTurn`]), or is answered at once if it is already
    /// committed or was seen before. The caller takes bulk room and pulls the data only with
    /// the turn in hand.
    pub async fn wait_for_turn(
        &self,
        index: u32,
        ost: &Arc<Ost>,
        client: u64,
        transno: u64,
        (object, range): (ObjectId, ByteRange),
    ) -> Result<ReplayAdmission, ServiceError> {
        let Some(target) = self.target(index) else {
            return Err(ServiceError::new(
                19,
                format!("no OST{index:04x} on this server"),
            ));
        };
        let (turn, turn_comes) = oneshot::channel();
        let decision = {
            let mut slot = target.window.lock().unwrap_or_else(PoisonError::into_inner);
            match slot.as_mut() {
                // Open, or closed: a closed window answers only what it knows ran.
                Some(window) => window.replay(ReplayRequest {
                    client: ClientId(client),
                    // One replay per transno: a resent replay is recognised by it.
                    xid: Xid(transno),
                    transno: Transno(transno),
                    payload: PendingReplay {
                        turn,
                        object,
                        range,
                    },
                }),
                // No window at this start. A client that was not on the list when it began
                // was evicted before: its transnos may have been given again since, to writes
                // that committed, so last_committed says nothing about its writes.
                None if !self.windows.listed_at_start.contains(&client) => {
                    ReplayDecision::Refused(format!(
                        "client {client} was not on the client list when this server started (it \
                         was evicted): its uncommitted write, transno {transno}, is lost"
                    ))
                }
                // A clean start committed everything before it stopped.
                None if Transno(transno) <= ost.last_committed() => {
                    ReplayDecision::AlreadyCommitted
                }
                None => ReplayDecision::Refused(format!(
                    "OST{index:04x} is out of recovery: transno {transno} is above last_committed {} and \
                     was not replayed in time; the write is lost (client {client} was evicted or came late)",
                    ost.last_committed().0
                )),
            }
        };
        let decision = match decision {
            // Committed, as far as last_committed says — unless its bytes are recorded lost: a
            // replay of it that could not run at an earlier start, whose window a crash ended,
            // left last_committed past a write that never ran. Its client is told, not that it
            // was done (seed 3000230).
            ReplayDecision::AlreadyCommitted => match ost.lost_in(object, range) {
                Some(lost) => ReplayDecision::Refused(format!(
                    "transno {transno} is below last_committed {}, but {} of its bytes in \
                     object {} were lost when this server restarted and no replay ran: the \
                     write is lost",
                    ost.last_committed().0,
                    lost.bytes(),
                    object
                )),
                None => ReplayDecision::AlreadyCommitted,
            },
            other => other,
        };
        match decision {
            ReplayDecision::Queued => {
                target.wake.notify_one();
                turn_comes
                    .await
                    .map(ReplayAdmission::Turn)
                    .map_err(|_| self.discarded(target, client))
            }
            ReplayDecision::InProgress { transno } => Err(ServiceError::new(
                EBUSY,
                format!(
                    "the replay of transno {transno} is executing (an earlier copy of this \
                     request): try again"
                ),
            )),
            ReplayDecision::AlreadyCommitted | ReplayDecision::Duplicate { .. } => {
                Ok(ReplayAdmission::Answered(OpReply {
                    value: (),
                    transno: Some(Transno(transno)),
                    last_committed: ost.last_committed(),
                }))
            }
            ReplayDecision::Refused(why) => Err(ServiceError::new(ESTALE, why)),
        }
    }
}

impl Recovery {
    /// Why `client`'s replay, queued at `target`, was let go before its turn: this server
    /// crashed (`ESHUTDOWN`, which the client takes for a server gone: it replays again to the
    /// next start — the write is not lost), its client was evicted (`ESTALE`: the write is
    /// lost), or a copy sent again took its place (`EAGAIN`: nobody waits for this answer).
    fn discarded(&self, target: &TargetRecovery, client: u64) -> ServiceError {
        if self.windows.stopped.load(Ordering::SeqCst) {
            return ServiceError::new(
                ESHUTDOWN,
                "the server stopped before this replay's turn: replay to its next start",
            );
        }
        let evicted = target
            .lock_window()
            .as_ref()
            .is_some_and(|window| window.evicted().contains(&ClientId(client)));
        if evicted {
            ServiceError::new(ESTALE, "replay discarded: the client was evicted")
        } else {
            ServiceError::new(
                EAGAIN,
                "replay superseded: the client sent it again, and the new copy waits in its place",
            )
        }
    }
}

impl Windows {
    /// Applies the windows' rules now: at a deadline, evicts the clients that are late; a
    /// window with nothing left to wait for closes, and the target serves new requests. Called
    /// after every change instead of on a clock. Takes each window's lock in turn: the caller
    /// must hold none.
    fn settle(&self) {
        if self.stopped.load(Ordering::SeqCst) {
            // A crashed life decides nothing more: its clients replay to the next one.
            return;
        }
        let now_ms = self.started.elapsed().as_millis() as u64;
        for (index, target) in &self.targets {
            let mut slot = target.window.lock().unwrap_or_else(PoisonError::into_inner);
            let Some(window) = slot.as_mut().filter(|w| !w.is_closed()) else {
                continue;
            };
            let events = window.tick(now_ms);
            let changed = !events.is_empty();
            for event in events {
                self.act_on(*index, &target.ost, event);
            }
            drop(slot);
            if changed {
                // An eviction may free a replay that waited on the evicted client; a closed
                // window ends its driver.
                target.wake.notify_one();
            }
        }
    }

    /// Logs and carries out what a window's event says. Runs under that window's lock, so a
    /// closed target marks what was lost before any new request can be served.
    fn act_on(&self, index: u32, ost: &Arc<Ost>, event: WindowEvent) {
        match event {
            WindowEvent::Evicted {
                client, message, ..
            } => {
                warn!(target = index, "{message}");
                // Durable at once, not when every window has closed: a crash before then
                // would list the client again at the next start, under the session its
                // writes were acknowledged in, and that start would take its replays —
                // to a target where this one gave their transnos again to committed writes.
                if let Err(error) = self.registry.remove(&[client.0]) {
                    warn!(%error, "could not take an evicted client off the client list; the next restart waits for it again");
                }
                // Its acknowledged writes are gone: what is pending is lost now, not only when
                // the window closes, so a crash before then does not forget it.
                let outcome = ost.writes_dropped(None);
                report_closed(ost, &outcome);
                let ost = Arc::clone(ost);
                tokio::spawn(async move { persist(&ost).await });
            }
            WindowEvent::Closed {
                replayed,
                evicted,
                writes_may_be_lost,
            } => {
                info!(
                    target = index,
                    replayed, evicted, writes_may_be_lost, "recovery over: serving new requests"
                );
                let outcome = ost.close_recovery_now(writes_may_be_lost);
                report_closed(ost, &outcome);
                let ost = Arc::clone(ost);
                tokio::spawn(async move { persist(&ost).await });
            }
        }
    }

    fn any_open(&self) -> bool {
        self.targets.iter().any(|(_, target)| target.is_open())
    }
}

/// Sleeps until the windows' deadline (clients that never came back are evicted) and their
/// hard deadline (clients still replaying are too), settling them at each; ends early once
/// every window has closed.
async fn enforce_deadlines(windows: Arc<Windows>, window: Duration) {
    for deadline in [window, 2 * window] {
        if !windows.any_open() {
            return;
        }
        tokio::time::sleep_until(windows.started + deadline).await;
        windows.settle();
    }
}

/// Hands a target's replays their turns as the window releases them, one at a time, in transno
/// order: each turn is held by its request handler while it pulls and executes the write. It
/// sleeps until the window changes, and settles the windows after each replay (the last one
/// may close the window).
async fn drive(windows: Arc<Windows>, target: Arc<TargetRecovery>) {
    loop {
        let next = {
            let mut slot = target.window.lock().unwrap_or_else(PoisonError::into_inner);
            match slot.as_mut() {
                Some(window) if !window.is_closed() => window.next_ready(),
                // Closed (or ended by a crash): nothing more to hand out.
                _ => return,
            }
        };
        match next {
            Some(request) => {
                let (finished, done) = oneshot::channel();
                let turn = ReplayTurn {
                    finished: Some(finished),
                };
                let (transno, client) = (request.transno, request.client);
                let written = (request.payload.object, request.payload.range);
                // A handler gone before its turn drops the turn unsent: not executed.
                let _ = request.payload.turn.send(turn);
                // Resolves when the turn is over: the write executed, or did not.
                let executed = done.await.unwrap_or(false);
                if !executed {
                    warn!(
                        target = target.ost.index(),
                        %transno,
                        "a replay handed out could not be executed; the write is lost"
                    );
                    // Its bytes, and whatever else is pending, are lost — recorded before the
                    // next replay runs. A later transno that commits makes last_committed pass
                    // this one, and after a crash before the window closed the next start would
                    // answer this replay "already committed" and forget its range (seed
                    // 3000230: a read after the last recovery found the object short, silently).
                    let outcome = target.ost.writes_dropped(Some(written));
                    report_closed(&target.ost, &outcome);
                    persist(&target.ost).await;
                }
                if let Some(window) = target
                    .window
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .as_mut()
                {
                    window.finished(transno, executed, client);
                }
                windows.settle();
            }
            None => target.wake.notified().await,
        }
    }
}

/// Says what closing a target's window did to the bytes startup had cut.
fn report_closed(ost: &Ost, outcome: &WindowOutcome) {
    if !outcome.lost.is_empty() {
        let bytes: u64 = outcome.lost.iter().map(|(_, r)| r.len()).sum();
        let objects: Vec<String> = outcome
            .lost
            .iter()
            .map(|(object, range)| format!("{object} {range}"))
            .collect();
        warn!(
            target = ost.index(),
            bytes,
            "acknowledged writes were dropped and no client replayed them: {}; reads and sizes of those objects now fail with EIO until they are written again",
            objects.join(", ")
        );
    } else if outcome.forgotten_bytes > 0 {
        info!(
            target = ost.index(),
            bytes = outcome.forgotten_bytes,
            "every client replayed what it kept; the rest of the cut was never acknowledged"
        );
    }
}

/// Records a target's lost ranges after its window closed; a failure is logged (the record
/// on disk still says pending, which the next restart treats the same way).
async fn persist(ost: &Ost) {
    if let Err(error) = ost.persist_lost().await {
        warn!(target = ost.index(), %error, "could not record the lost ranges");
    }
}

/// Removes the clean-shutdown marker, returning whether it was there (then no recovery is
/// needed: every target committed everything before it stopped).
pub fn take_clean_marker(dir: &Path) -> Result<bool, StorageError> {
    let path = dir.join("clean-shutdown");
    match std::fs::remove_file(&path) {
        Ok(()) => {
            sync_dir(dir)?;
            Ok(true)
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(source) => Err(StorageError::Io {
            op: "remove",
            path,
            source,
        }),
    }
}

/// Leaves the clean-shutdown marker, durably.
pub fn write_clean_marker(dir: &Path) -> Result<(), StorageError> {
    let path = dir.join("clean-shutdown");
    let file = File::create(&path).map_err(|source| StorageError::Io {
        op: "create",
        path: path.clone(),
        source,
    })?;
    file.sync_all().map_err(|source| StorageError::Io {
        op: "fsync",
        path,
        source,
    })?;
    sync_dir(dir)
}

fn sync_dir(dir: &Path) -> Result<(), StorageError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| StorageError::Io {
            op: "fsync directory",
            path: dir.to_path_buf(),
            source,
        })
}
