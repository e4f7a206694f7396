//! `ReplayWindow`: the client-replay window after a target restarts.
//!
//! In async mode a client keeps every request the target acknowledged but has not committed
//! (transno above `last_committed`). After a crash, the target comes back at `last_committed`
//! and opens a window in which those clients reconnect and replay. The rules:
//!
//! - Replays run in transno order across all clients, so the target ends in the state it had
//!   acknowledged. Each client sends its replays in increasing transno order, so the smallest
//!   queued transno may run once every client still replaying has queued something at or
//!   above it (or said it is done).
//! - Each `(client, xid)` runs once; a resent replay is answered, not re-executed. One sent
//!   again while its first copy still waits in the queue takes that copy's place: whoever
//!   sent the first has given up on it (its client replays again), and the new copy carries
//!   what the replay needs now (its data where its client holds it today).
//! - A replay at or below `last_committed` — the window's, as the restart found it — is
//!   already on disk: answered, not re-executed.
//! - After the window closes, a replay is answered only if one of those two rules answers it.
//!   Anything else never ran in this start and is lost — even if its transno is below the
//!   target's `last_committed` by then: higher transnos ran and committed without it, and
//!   "committed" would be a lie that drops an acknowledged write without a word.
//! - New (non-replay) requests wait until the window closes.
//! - When the window's time runs out, clients that have not finished are evicted: their queued
//!   replays are dropped and their uncommitted writes are gone, and the server says so.
//! - The window remembers whether it **may have dropped acknowledged writes**: it evicted a
//!   client, a known client came back with no memory of what it had been told was written
//!   ([`ReplayWindow::client_forgot`]), or a replay was refused or could not run. When it
//!   closes it says so ([`WindowEvent::Closed`]), and the target marks what no replay wrote
//!   again as lost ([`super::lost`]).
//!
//! Pure: no sockets, no clocks. The RPC side feeds it events with the time in milliseconds and
//! executes what [`ReplayWindow::next_ready`] hands out. The payload `P` is whatever the RPC
//! side needs to re-execute a request.

use crate::ids::Transno;
use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt;

/// A client's identity across a server restart (from its connection UUID or NID).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(pub u64);

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "client {}", self.0)
    }
}

/// A request's id, unique per client (ptlrpc's xid).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Xid(pub u64);

/// One replayed request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplayRequest<P> {
    /// Who sent it.
    pub client: ClientId,
    /// Its xid.
    pub xid: Xid,
    /// The transno the target gave it before the crash.
    pub transno: Transno,
    /// What to re-execute.
    pub payload: P,
}

/// The answer to a replay as it arrives.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayDecision {
    /// Queued; it runs when [`ReplayWindow::next_ready`] hands it out.
    Queued,
    /// At or below `last_committed`: already durable. Answer success without re-executing.
    AlreadyCommitted,
    /// This `(client, xid)` was seen already and has executed: answer it again, do not
    /// re-execute.
    Duplicate {
        /// The transno it was queued under.
        transno: Transno,
    },
    /// This `(client, xid)` was handed out and is executing now (a copy sent again while the
    /// first pulls its bytes): answer when it is done — ask the sender to try again.
    InProgress {
        /// Its transno.
        transno: Transno,
    },
    /// Not accepted; the reason says why.
    Refused(String),
}

/// Things the server must act on and report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WindowEvent {
    /// A client was evicted: its uncommitted writes are dropped.
    Evicted {
        /// The client.
        client: ClientId,
        /// Queued replays of it that were discarded.
        discarded_replays: usize,
        /// The message to log and show.
        message: String,
    },
    /// Recovery is over; new requests may be served.
    Closed {
        /// Replays handed out for execution.
        replayed: u64,
        /// Clients evicted.
        evicted: usize,
        /// Whether acknowledged writes may have been dropped (see
        /// [`ReplayWindow::writes_may_be_lost`]).
        writes_may_be_lost: bool,
    },
}

/// What the window knows about one client.
#[derive(Debug, Clone, Copy, Default)]
struct ClientState {
    /// It has sent anything since the restart.
    reconnected: bool,
    /// It said it has nothing more to replay.
    done: bool,
    /// Highest transno it has queued.
    last_queued: Transno,
}

/// The replay window of one target.
#[derive(Debug)]
pub struct ReplayWindow<P> {
    last_committed: Transno,
    window_ms: u64,
    deadline_ms: u64,
    clients: BTreeMap<ClientId, ClientState>,
    evicted: Vec<ClientId>,
    queue: BTreeMap<Transno, ReplayRequest<P>>,
    /// Every `(client, xid)` accepted, with its transno.
    seen: HashMap<(ClientId, Xid), Transno>,
    replayed: u64,
    /// Highest transno handed out for execution.
    last_handed_out: Transno,
    /// The transno handed out and not finished yet: the window does not close under it.
    running: Option<Transno>,
    /// Transnos handed out whose execution failed: a copy sent again is told the write is
    /// lost, never that it was done.
    failed: BTreeSet<Transno>,
    /// Known clients that came back without the writes they had kept.
    forgotten: Vec<ClientId>,
    /// Replays of known clients refused, or that could not be executed.
    replays_lost: u64,
    closed: bool,
}

impl<P> ReplayWindow<P> {
    /// Opens a window at `now_ms` for `clients` (those the target knew before the crash),
    /// closing at the latest `window_ms` later.
    pub fn new(
        last_committed: Transno,
        clients: impl IntoIterator<Item = ClientId>,
        now_ms: u64,
        window_ms: u64,
    ) -> Self {
        let mut window = ReplayWindow {
            last_committed,
            window_ms,
            deadline_ms: now_ms.saturating_add(window_ms),
            clients: clients
                .into_iter()
                .map(|c| (c, ClientState::default()))
                .collect(),
            evicted: Vec::new(),
            queue: BTreeMap::new(),
            seen: HashMap::new(),
            replayed: 0,
            last_handed_out: last_committed,
            running: None,
            failed: BTreeSet::new(),
            forgotten: Vec::new(),
            replays_lost: 0,
            closed: false,
        };
        // No client to wait for: nothing to replay.
        window.closed = window.clients.is_empty();
        window
    }

    /// `last_committed` the window started from.
    pub fn last_committed(&self) -> Transno {
        self.last_committed
    }

    /// True once recovery is over.
    pub fn is_closed(&self) -> bool {
        self.closed
    }

    /// When [`ReplayWindow::tick`] must be called at the latest (clients still replaying get
    /// until one more window after this).
    pub fn deadline_ms(&self) -> Option<u64> {
        (!self.closed).then_some(self.deadline_ms)
    }

    /// Replays queued and not yet handed out.
    pub fn queued(&self) -> usize {
        self.queue.len()
    }

    /// Clients evicted so far.
    pub fn evicted(&self) -> &[ClientId] {
        &self.evicted
    }

    /// Whether acknowledged writes may have been dropped: a client was evicted, a known
    /// client came back without the writes it kept, or a replay was refused or could not run.
    /// If not, every acknowledged-but-uncommitted write was replayed.
    pub fn writes_may_be_lost(&self) -> bool {
        !self.evicted.is_empty() || !self.forgotten.is_empty() || self.replays_lost > 0
    }

    /// A known client connected again as a new incarnation that holds nothing from before (a
    /// process restarted under the same id): whatever it had been told was written and not
    /// committed is gone. It has nothing to replay, so it is done.
    pub fn client_forgot(&mut self, client: ClientId) {
        if let Some(state) = self.clients.get_mut(&client) {
            state.reconnected = true;
            state.done = true;
            if !self.forgotten.contains(&client) {
                self.forgotten.push(client);
            }
        }
    }

    /// A replay of a known client could not be executed (its bytes could not be pulled again:
    /// their owner let go of them): that acknowledged write is lost.
    pub fn replay_lost(&mut self, client: ClientId) {
        if self.clients.contains_key(&client) || self.evicted.contains(&client) {
            self.replays_lost += 1;
        }
    }

    /// A replayed request arrives.
    pub fn replay(&mut self, request: ReplayRequest<P>) -> ReplayDecision {
        let client = request.client;
        let decision = self.admit(request);
        if matches!(decision, ReplayDecision::Refused(_)) && !self.closed {
            // A write its client was told had happened, and it will not be executed.
            self.replay_lost(client);
        }
        decision
    }

    fn admit(&mut self, request: ReplayRequest<P>) -> ReplayDecision {
        if self.evicted.contains(&request.client) {
            return ReplayDecision::Refused(format!("{} was evicted", request.client));
        }
        let Some(state) = self.clients.get_mut(&request.client) else {
            return ReplayDecision::Refused(format!(
                "{} was not connected before the restart",
                request.client
            ));
        };
        state.reconnected = true;
        if let Some(&transno) = self.seen.get(&(request.client, request.xid)) {
            if let Some(queued) = self.queue.get_mut(&transno)
                && (queued.client, queued.xid) == (request.client, request.xid)
            {
                // Still waiting for its turn: the new copy takes the old one's place (the
                // old one's payload goes, and its sender is told so).
                queued.payload = request.payload;
                return ReplayDecision::Queued;
            }
            if self.running == Some(transno) {
                return ReplayDecision::InProgress { transno };
            }
            if self.failed.contains(&transno) {
                return ReplayDecision::Refused(format!(
                    "transno {transno} was handed out and could not be executed; the write is lost"
                ));
            }
            return ReplayDecision::Duplicate { transno };
        }
        if request.transno <= self.last_committed {
            return ReplayDecision::AlreadyCommitted;
        }
        if self.closed {
            return ReplayDecision::Refused(format!(
                "the recovery window is closed: transno {} was not committed before the restart \
                 (last_committed {}) and was not replayed in the window; the write is lost",
                request.transno, self.last_committed
            ));
        }
        if request.transno <= self.last_handed_out {
            return ReplayDecision::Refused(format!(
                "transno {} arrived after transno {} was already replayed",
                request.transno, self.last_handed_out
            ));
        }
        if state.done {
            return ReplayDecision::Refused(format!(
                "{} already finished replaying",
                request.client
            ));
        }
        if request.transno <= state.last_queued {
            return ReplayDecision::Refused(format!(
                "{} replayed transno {} after {}: replays must increase",
                request.client, request.transno, state.last_queued
            ));
        }
        if self.queue.contains_key(&request.transno) {
            return ReplayDecision::Refused(format!(
                "transno {} is already queued by another request",
                request.transno
            ));
        }
        state.last_queued = request.transno;
        self.seen
            .insert((request.client, request.xid), request.transno);
        self.queue.insert(request.transno, request);
        ReplayDecision::Queued
    }

    /// The client connected to the server this window belongs to: it is back, and gets until
    /// the hard deadline to finish, as one whose replays have begun.
    pub fn client_reconnected(&mut self, client: ClientId) {
        if let Some(state) = self.clients.get_mut(&client) {
            state.reconnected = true;
        }
    }

    /// The client has sent all its replays (ptlrpc's last-replay flag).
    pub fn client_done(&mut self, client: ClientId) {
        if let Some(state) = self.clients.get_mut(&client) {
            state.reconnected = true;
            state.done = true;
        }
    }

    /// The next replay to execute, if it may run now. Call until `None` after every event.
    pub fn next_ready(&mut self) -> Option<ReplayRequest<P>> {
        let (&transno, _) = self.queue.first_key_value()?;
        // Could a client still replaying send something smaller? Only a transno it has not
        // passed yet, above everything handed out, and below `transno` (which is the smallest
        // queued, so every such transno is free).
        let floor = self.last_handed_out;
        let blocked = self
            .clients
            .values()
            .any(|state| !state.done && state.last_queued.max(floor).0 + 1 < transno.0);
        if blocked {
            return None;
        }
        let (_, request) = self.queue.pop_first()?;
        self.replayed += 1;
        self.last_handed_out = request.transno;
        self.running = Some(request.transno);
        Some(request)
    }

    /// The replay handed out as `transno` is over: `executed`, or not (its bytes could not be
    /// pulled, its handler went away, the server is stopping) — then its write is lost.
    pub fn finished(&mut self, transno: Transno, executed: bool, client: ClientId) {
        if self.running == Some(transno) {
            self.running = None;
        }
        if !executed {
            self.failed.insert(transno);
            self.replay_lost(client);
        }
    }

    /// Time passes. At the deadline, clients that have not finished are evicted; once every
    /// client is done or evicted and nothing is left to hand out, the window closes.
    pub fn tick(&mut self, now_ms: u64) -> Vec<WindowEvent> {
        let mut events = Vec::new();
        if self.closed {
            return events;
        }
        // At the deadline, clients that never came back are evicted. A client that did come
        // back may be waiting on us — its next replay held until an absent client's transnos
        // are known to be gone — so it gets one more window to finish before it is evicted too.
        let hard_deadline_ms = self.deadline_ms.saturating_add(self.window_ms);
        if now_ms >= self.deadline_ms {
            let late: Vec<ClientId> = self
                .clients
                .iter()
                .filter(|(_, s)| !s.done && (!s.reconnected || now_ms >= hard_deadline_ms))
                .map(|(&c, _)| c)
                .collect();
            for client in late {
                let Some(state) = self.clients.remove(&client) else {
                    continue;
                };
                let before = self.queue.len();
                self.queue.retain(|_, request| request.client != client);
                let discarded_replays = before - self.queue.len();
                let (why, within_ms) = if state.reconnected {
                    ("did not finish replaying", self.window_ms.saturating_mul(2))
                } else {
                    ("did not reconnect", self.window_ms)
                };
                let message = format!(
                    "evicting {client}: {why} within {within_ms} ms; its uncommitted writes (transno above {}) are dropped ({discarded_replays} queued replays discarded)",
                    self.last_committed
                );
                self.evicted.push(client);
                events.push(WindowEvent::Evicted {
                    client,
                    discarded_replays,
                    message,
                });
            }
        }
        let all_done = self.clients.values().all(|s| s.done);
        if all_done && self.queue.is_empty() && self.running.is_none() {
            self.closed = true;
            events.push(WindowEvent::Closed {
                replayed: self.replayed,
                evicted: self.evicted.len(),
                writes_may_be_lost: self.writes_may_be_lost(),
            });
        }
        events
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: ClientId = ClientId(1);
    const B: ClientId = ClientId(2);
    const C: ClientId = ClientId(3);

    fn request(client: ClientId, xid: u64, transno: u64) -> ReplayRequest<&'static str> {
        ReplayRequest {
            client,
            xid: Xid(xid),
            transno: Transno(transno),
            payload: "write",
        }
    }

    /// Hands out and executes every replay that may run now, in order.
    fn drain(window: &mut ReplayWindow<&'static str>) -> Vec<u64> {
        let mut executed = Vec::new();
        while let Some(replay) = window.next_ready() {
            window.finished(replay.transno, true, replay.client);
            executed.push(replay.transno.0);
        }
        executed
    }

    #[test]
    fn a_copy_of_a_replay_that_is_executing_waits_and_one_that_failed_is_lost() {
        // Found by the seeded simulation (seed 7678): a replay's pull hung while its client
        // was cut off; the client sent the replay again, was answered "done" (seen before),
        // said it had replayed everything, and the window closed under the replay — which
        // never executed. Its transno went to a new write, and its bytes were forgotten.
        let mut window = ReplayWindow::new(Transno(3), [A], 0, 1000);
        assert_eq!(window.replay(request(A, 4, 4)), ReplayDecision::Queued);
        let running = window.next_ready().unwrap();
        assert_eq!(
            window.replay(request(A, 4, 4)),
            ReplayDecision::InProgress {
                transno: Transno(4)
            }
        );
        window.client_done(A);
        assert_eq!(
            window.tick(5),
            vec![],
            "not closed while the replay executes"
        );
        window.finished(running.transno, false, A);
        assert!(matches!(
            window.replay(request(A, 4, 4)),
            ReplayDecision::Refused(why) if why.contains("lost")
        ));
        assert_eq!(
            window.tick(6),
            vec![WindowEvent::Closed {
                replayed: 1,
                evicted: 0,
                writes_may_be_lost: true,
            }]
        );
    }

    #[test]
    fn replays_run_in_transno_order_across_clients() {
        let mut window = ReplayWindow::new(Transno(10), [A, B], 0, 1000);
        assert!(!window.is_closed());
        assert_eq!(window.replay(request(A, 1, 11)), ReplayDecision::Queued);
        assert_eq!(window.replay(request(A, 2, 14)), ReplayDecision::Queued);
        // 11 is the next transno there can be: it runs. B has said nothing and might still
        // send 12 or 13, so 14 waits.
        assert_eq!(drain(&mut window), [11]);
        assert_eq!(window.replay(request(B, 7, 12)), ReplayDecision::Queued);
        assert_eq!(drain(&mut window), [12]);
        assert_eq!(window.replay(request(B, 8, 13)), ReplayDecision::Queued);
        window.client_done(B);
        assert_eq!(drain(&mut window), [13, 14]);
        window.client_done(A);
        assert_eq!(
            window.tick(5),
            vec![WindowEvent::Closed {
                replayed: 4,
                evicted: 0,
                writes_may_be_lost: false,
            }]
        );
        assert!(window.is_closed());
        assert!(matches!(
            window.replay(request(A, 3, 15)),
            ReplayDecision::Refused(_)
        ));
    }

    #[test]
    fn each_xid_runs_once_and_committed_replays_are_not_rerun() {
        let mut window = ReplayWindow::new(Transno(10), [A], 0, 1000);
        assert_eq!(
            window.replay(request(A, 1, 9)),
            ReplayDecision::AlreadyCommitted
        );
        assert_eq!(window.replay(request(A, 2, 11)), ReplayDecision::Queued);
        // Sent again while it waits: it takes its own place, and still runs once.
        assert_eq!(window.replay(request(A, 2, 11)), ReplayDecision::Queued);
        assert_eq!(window.queued(), 1);
        assert_eq!(drain(&mut window), [11]);
        assert_eq!(
            window.replay(request(A, 2, 11)),
            ReplayDecision::Duplicate {
                transno: Transno(11)
            }
        );
        assert!(drain(&mut window).is_empty());
    }

    #[test]
    fn a_replay_sent_again_while_queued_takes_the_queued_copys_place() {
        let mut window = ReplayWindow::new(Transno(10), [A, B], 0, 1000);
        let first = ReplayRequest {
            payload: "first copy",
            ..request(A, 1, 12)
        };
        let again = ReplayRequest {
            payload: "sent again",
            ..request(A, 1, 12)
        };
        assert_eq!(window.replay(first), ReplayDecision::Queued);
        // B might still send 11: 12 waits. Its sender gives up and replays again.
        assert!(window.next_ready().is_none());
        assert_eq!(window.replay(again), ReplayDecision::Queued);
        assert_eq!(window.queued(), 1, "one replay, not two");
        window.client_done(B);
        let ready = window.next_ready().expect("12 may run");
        assert_eq!(
            ready.payload, "sent again",
            "the copy whose sender still waits runs"
        );
        window.finished(ready.transno, true, ready.client);
        // Once it has run, a copy sent again is answered, not run.
        assert_eq!(
            window.replay(request(A, 1, 12)),
            ReplayDecision::Duplicate {
                transno: Transno(12)
            }
        );
    }

    #[test]
    fn bad_replays_are_refused_with_a_reason() {
        let mut window = ReplayWindow::new(Transno(10), [A, B], 0, 1000);
        assert!(
            matches!(window.replay(request(C, 1, 11)), ReplayDecision::Refused(r) if r.contains("not connected before"))
        );
        window.replay(request(A, 1, 12));
        assert!(
            matches!(window.replay(request(A, 2, 11)), ReplayDecision::Refused(r) if r.contains("must increase"))
        );
        assert!(
            matches!(window.replay(request(B, 1, 12)), ReplayDecision::Refused(r) if r.contains("already queued"))
        );
        window.client_done(B);
        assert!(
            matches!(window.replay(request(B, 2, 13)), ReplayDecision::Refused(r) if r.contains("finished"))
        );
        assert_eq!(drain(&mut window), [12]);
        assert!(
            matches!(window.replay(request(A, 3, 12)), ReplayDecision::Refused(r) if r.contains("already replayed"))
        );
    }

    #[test]
    fn clients_that_do_not_return_are_evicted_and_the_rest_replay() {
        let mut window = ReplayWindow::new(Transno(10), [A, B, C], 100, 1000);
        window.replay(request(A, 1, 11));
        window.replay(request(B, 1, 12));
        window.replay(request(B, 2, 15));
        window.client_done(A);
        // C never comes back; B never says it is done.
        assert_eq!(
            drain(&mut window),
            [11, 12],
            "15 waits: C might still send 13"
        );
        assert!(window.tick(1099).is_empty());
        // At the deadline only C, which never came back, is evicted; B is still replaying.
        let events = window.tick(1100);
        assert_eq!(events.len(), 1, "{events:?}");
        let WindowEvent::Evicted {
            client, message, ..
        } = &events[0]
        else {
            panic!("{events:?}")
        };
        assert_eq!(*client, C);
        assert!(
            message.contains("did not reconnect within 1000 ms"),
            "{message}"
        );
        assert_eq!(
            drain(&mut window),
            [15],
            "with C gone, nothing can come before 15"
        );
        // B never says it is done: one window later it is evicted too.
        assert!(window.tick(2099).is_empty());
        let events = window.tick(2100);
        assert_eq!(events.len(), 2, "{events:?}");
        let WindowEvent::Evicted {
            client,
            discarded_replays,
            message,
        } = &events[0]
        else {
            panic!("{events:?}")
        };
        assert_eq!((*client, *discarded_replays), (B, 0));
        assert_eq!(
            message,
            "evicting client 2: did not finish replaying within 2000 ms; its uncommitted writes (transno above 10) are dropped (0 queued replays discarded)"
        );
        assert_eq!(
            events[1],
            WindowEvent::Closed {
                replayed: 3,
                evicted: 2,
                writes_may_be_lost: true,
            }
        );
        assert_eq!(window.evicted(), [C, B]);
        assert!(matches!(
            window.replay(request(C, 1, 13)),
            ReplayDecision::Refused(_)
        ));
    }

    #[test]
    fn a_replaying_client_is_not_evicted_for_waiting_on_an_absent_one() {
        // A's 13 waits on B's possible 12; B never returns. A must survive the deadline.
        let mut window = ReplayWindow::new(Transno(10), [A, B], 0, 1000);
        window.replay(request(A, 1, 11));
        window.replay(request(A, 2, 13));
        assert_eq!(drain(&mut window), [11]);
        let events = window.tick(1000);
        assert!(
            matches!(&events[..], [WindowEvent::Evicted { client, .. }] if *client == B),
            "{events:?}"
        );
        assert_eq!(drain(&mut window), [13]);
        window.client_done(A);
        assert_eq!(
            window.tick(1001),
            [WindowEvent::Closed {
                replayed: 2,
                evicted: 1,
                writes_may_be_lost: true,
            }]
        );
    }

    #[test]
    fn a_client_back_without_its_writes_is_done_but_its_writes_may_be_lost() {
        let mut window = ReplayWindow::new(Transno(10), [A, B], 0, 1000);
        window.replay(request(A, 1, 11));
        window.client_done(A);
        // B restarted under the same id: it has nothing to replay, and whatever it was told
        // was written above 10 is gone.
        window.client_forgot(B);
        assert_eq!(drain(&mut window), [11], "nothing waits on B any more");
        assert!(window.writes_may_be_lost());
        assert_eq!(
            window.tick(1),
            [WindowEvent::Closed {
                replayed: 1,
                evicted: 0,
                writes_may_be_lost: true,
            }]
        );
        // A client the window never knew forgets nothing that was promised here.
        let mut window: ReplayWindow<&str> = ReplayWindow::new(Transno(10), [A], 0, 1000);
        window.client_forgot(C);
        assert!(!window.writes_may_be_lost());
    }

    #[test]
    fn a_refused_or_failed_replay_of_a_known_client_means_writes_may_be_lost() {
        let mut window = ReplayWindow::new(Transno(10), [A, B], 0, 1000);
        window.replay(request(A, 1, 12));
        assert!(!window.writes_may_be_lost());
        assert!(matches!(
            window.replay(request(A, 2, 11)),
            ReplayDecision::Refused(_)
        ));
        assert!(
            window.writes_may_be_lost(),
            "a refused replay is a lost write"
        );

        let mut window: ReplayWindow<&str> = ReplayWindow::new(Transno(10), [A, B], 0, 1000);
        window.replay_lost(C);
        assert!(!window.writes_may_be_lost(), "not a client of this window");
        window.replay_lost(B);
        assert!(
            window.writes_may_be_lost(),
            "B's bytes could not be pulled again"
        );
    }

    #[test]
    fn after_the_window_closes_only_what_it_knows_ran_is_answered_as_done() {
        let mut window = ReplayWindow::new(Transno(10), [A, B], 0, 1000);
        assert_eq!(window.replay(request(A, 1, 12)), ReplayDecision::Queued);
        window.client_done(A);
        // B says it is done without its transno 11 (say, its end of replay was meant for an
        // earlier start): 12 runs, and the window closes.
        window.client_done(B);
        assert_eq!(drain(&mut window), [12]);
        assert!(matches!(
            window.tick(1).as_slice(),
            [WindowEvent::Closed { .. }]
        ));
        // B's 11 comes late: it never ran, and the restart did not find it committed.
        assert!(
            matches!(window.replay(request(B, 1, 11)), ReplayDecision::Refused(r) if r.contains("lost")),
            "a replay that never ran is lost, not committed"
        );
        // What did run, sent again, and what was committed before the restart, are answered.
        assert_eq!(
            window.replay(request(A, 1, 12)),
            ReplayDecision::Duplicate {
                transno: Transno(12)
            }
        );
        assert_eq!(
            window.replay(request(B, 2, 9)),
            ReplayDecision::AlreadyCommitted
        );
        assert!(
            !window.writes_may_be_lost(),
            "closed: nothing more is counted"
        );
    }

    #[test]
    fn a_window_without_clients_is_closed_at_once() {
        let window: ReplayWindow<()> = ReplayWindow::new(Transno(3), [], 0, 1000);
        assert!(window.is_closed());
        assert_eq!(window.deadline_ms(), None);
    }
}
