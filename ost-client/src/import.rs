//! [`Import`]: one client's connection to one storage server as Lustre's import is — which
//! server start it has replayed to, its session there, the replay under way, the recovery it
//! waits for, whether it is leaving or gone, and the writes it keeps for replay — as a pure
//! core. Events come in (a connect's reply, a write's acknowledgement, a replay's answer, a
//! failed call, a ping's turn, a disconnect); decisions go out (replay these writes to that
//! start, send this write again, these writes are lost, wait, give up). No sockets, clocks or
//! locks: [`crate::client::OstClient`] holds an `Import` under its lock and carries the
//! decisions out, and [`CallWait`] says how long a call keeps trying.
//!
//! Every state-changing decision that two races came from (a ping's CONNECT taken after a
//! DISCONNECT; an acknowledgement from a start that had crashed) is made here, in one place,
//! and tested against every event in every state (`tests` below).

use std::time::Duration;

use tokio::time::Instant;

use crate::replay::{Kept, KeptKey, Noted, ReplayList};

/// The stamp every state-changing reply carries.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Stamp {
    /// The operation's transno (0 for operations that change nothing).
    pub transno: u64,
    /// The target's highest committed transno when it replied.
    pub last_committed: u64,
}

/// An acknowledged write found lost in replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LostWrite {
    /// The target's index on its server.
    pub target: u32,
    /// The object written.
    pub object: u64,
    /// The write's transno.
    pub transno: u64,
}

/// What a CONNECT's reply says, as the import uses it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConnectFacts {
    /// The server start that answered.
    pub boot_id: u64,
    /// The session it has this client under (0: none).
    pub session: u64,
    /// Whether it is in its recovery window.
    pub recovering: bool,
    /// How long the window can last at most, as it says.
    pub recovery_hard_remaining: Duration,
    /// Each target's `last_committed`.
    pub targets: Vec<(u32, u64)>,
}

/// What a reconnect does next ([`Import::reconnected`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Round {
    /// The start it reached is the one replayed to already: nothing to replay.
    Known,
    /// A new start: replay `writes` to it, in this order, then say so (if it recovers).
    Replay {
        /// The start replayed to.
        to: u64,
        /// Every kept write, in transno order.
        writes: Vec<(KeptKey, Kept)>,
        /// Whether the server recovers (then the end of the replay is said).
        recovering: bool,
    },
}

/// How a replayed write was answered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReplayAnswer {
    /// Run (or found already committed): the target's `last_committed` then.
    Done {
        /// The target's `last_committed` in the reply.
        last_committed: u64,
    },
    /// The server will not take it back: it is lost.
    Lost,
    /// Another start refused it: the server restarted again.
    AnotherStart,
}

/// What the replay does after one write's answer ([`Import::replay_answered`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReplayStep {
    /// Go on with the next write; the reply's `last_committed` let these kept writes go.
    Next(Noted),
    /// Go on; this write is lost, must be said so, and was forgotten (if it was still kept).
    NextLost {
        /// The write.
        lost: LostWrite,
        /// Whether it was still kept (and now is not).
        forgotten: bool,
    },
    /// Start the round over, to the new start.
    RestartedAgain,
}

/// What a write's acknowledgement came to ([`Import::write_answered`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WriteAnswer {
    /// Noted: kept for replay (or already committed), and what a reply's `last_committed`
    /// let go.
    Noted(Noted),
    /// Acknowledged by a start that has ended (or is ending) before its commit: that start's
    /// crash took it, and no replay carries it. Send it again.
    SendAgain,
}

/// Why a call to the server failed, as far as waiting goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallFailure {
    /// The server recovers (`EINPROGRESS`): reconnect, replay, wait for the window.
    Recovering,
    /// Not reachable now (gone, restarting, no route).
    Unreachable,
    /// Anything else: the caller is told.
    Other,
}

/// What a call does after a failure ([`CallWait::failed`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallStep {
    /// Reconnect (and replay), then send again. `first_wait`: the first time this call waits
    /// for a recovery (say so once); `pause_first`: wait a little before reconnecting (a
    /// server not reachable now is not tried again at once).
    Retry {
        /// The first wait for this recovery: the runtime says once that it waits.
        first_wait: bool,
        /// Pause before the reconnect.
        pause_first: bool,
    },
    /// The server is still recovering after longer than its window can last.
    GiveUpRecovering,
    /// Tell the caller the error.
    GiveUp,
}

/// The limits a call waits within.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CallLimits {
    /// How long a call keeps trying a server it cannot reach.
    pub unreachable_for_max: Duration,
    /// The longest a call waits for a recovery, whatever the server says.
    pub recovery_wait_max: Duration,
}

/// One call's waiting: since when the server has been unreachable, and since when it has
/// been recovering, against the limits and the window the last connect was told of.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CallWait {
    unreachable_since: Option<Instant>,
    waiting_since: Option<Instant>,
}

impl CallWait {
    /// A failure at `now`; `recovery_until` is when the window closes at the latest, as the
    /// last connect was told ([`Import::recovery_until`]).
    pub fn failed(
        &mut self,
        failure: CallFailure,
        now: Instant,
        recovery_until: Option<Instant>,
        limits: CallLimits,
    ) -> CallStep {
        match failure {
            CallFailure::Recovering => {
                let since = *self.waiting_since.get_or_insert(now);
                // `until` is what the last connect was told: on the first EINPROGRESS it may
                // be an earlier start's, so only a reconnect's (after this) can end the wait.
                let gave_up = now.duration_since(since) >= limits.recovery_wait_max
                    || (now > since && recovery_until.is_some_and(|until| now >= until));
                if gave_up {
                    CallStep::GiveUpRecovering
                } else {
                    CallStep::Retry {
                        first_wait: now == since,
                        pause_first: false,
                    }
                }
            }
            CallFailure::Unreachable => {
                let since = *self.unreachable_since.get_or_insert(now);
                if now.duration_since(since) < limits.unreachable_for_max {
                    CallStep::Retry {
                        first_wait: false,
                        pause_first: true,
                    }
                } else {
                    CallStep::GiveUp
                }
            }
            CallFailure::Other => CallStep::GiveUp,
        }
    }

    /// Since when the call has waited for a recovery, if it has.
    pub fn waiting_since(&self) -> Option<Instant> {
        self.waiting_since
    }
}

/// One connection's state (see the module's documentation).
#[derive(Debug, Default)]
pub struct Import {
    /// The server start this client has replayed to (or first connected to). Set only once a
    /// replay to a new start is through: a replay cut short is done again at the next try.
    boot_id: u64,
    /// The session the server has this client under (0: none yet). It changes only when the
    /// server evicted this client and a later connect put it on its list again: then every
    /// write kept from the old session is lost.
    session: u64,
    /// The start a replay is under way to, from the moment it chose what to replay until it
    /// is through: a write acknowledged by an older start in that time is not among what it
    /// replays.
    replaying_to: Option<u64>,
    /// While the server recovers: when its window closes at the latest, as it last said.
    recovery_until: Option<Instant>,
    /// The server has forgotten this client (a disconnect went through).
    disconnected: bool,
    /// Disconnects under way: while any is, the pinger sends nothing.
    leaving: u32,
    /// Acknowledged writes not yet committed, and each target's `last_committed`.
    replay: ReplayList,
}

impl Import {
    /// A connection not yet made.
    pub fn new() -> Import {
        Import::default()
    }

    // What the runtime asks before it acts.

    /// Whether the server has forgotten this client: calls are refused.
    pub fn is_disconnected(&self) -> bool {
        self.disconnected
    }

    /// Whether a ping may reconnect now: not while a disconnect is under way or done (a
    /// CONNECT the server took after the DISCONNECT would put this client back on its list).
    pub fn may_ping(&self) -> bool {
        self.leaving == 0 && !self.disconnected
    }

    /// When the server's recovery window closes at the latest, as the last connect said.
    pub fn recovery_until(&self) -> Option<Instant> {
        self.recovery_until
    }

    /// What a replayed write names: the session it was acknowledged under, and the start it
    /// is meant for (the one being replayed to).
    pub fn replay_identity(&self) -> (u64, u64) {
        (self.session, self.replaying_to.unwrap_or(self.boot_id))
    }

    /// The start this client knows (replayed to, or first connected to).
    pub fn known_start(&self) -> u64 {
        self.boot_id
    }

    /// The writes kept for replay.
    pub fn replay(&self) -> &ReplayList {
        &self.replay
    }

    // Events.

    /// Any CONNECT's reply at `now`: how long a call may wait for the recovery it reports,
    /// as the server says (`hard_remaining`, already bounded and padded by the caller).
    pub fn connect_answered(&mut self, recovering: bool, hard_remaining: Duration, now: Instant) {
        self.recovery_until = recovering.then(|| now + hard_remaining);
    }

    /// The first connect went through: this start is the one known, under this session.
    pub fn first_connected(&mut self, reply: &ConnectFacts) {
        self.boot_id = reply.boot_id;
        self.session = reply.session;
        for &(target, last_committed) in &reply.targets {
            self.replay.committed(target, last_committed);
        }
    }

    /// A reconnect's CONNECT was answered: the session is taken (if it changed, the server
    /// evicted this client since, and every kept write is lost: returned, and forgotten), and
    /// the round's plan made — nothing, or every kept write to the new start.
    pub fn reconnected(&mut self, reply: &ConnectFacts) -> (Round, Vec<LostWrite>) {
        let lost = self.take_session(reply.session);
        if self.boot_id == reply.boot_id {
            return (Round::Known, lost);
        }
        self.replaying_to = Some(reply.boot_id);
        let writes = self.replay.in_replay_order();
        let round = Round::Replay {
            to: reply.boot_id,
            writes,
            recovering: reply.recovering,
        };
        (round, lost)
    }

    /// Takes the session a connect's reply names; every kept write is lost if it changed.
    fn take_session(&mut self, session: u64) -> Vec<LostWrite> {
        let changed = self.session != 0 && session != 0 && session != self.session;
        self.session = session;
        if !changed || self.replay.is_empty() {
            return Vec::new();
        }
        let mut lost = Vec::new();
        for ((target, transno), write) in self.replay.in_replay_order() {
            self.replay.forget((target, transno));
            lost.push(LostWrite {
                target,
                object: write.object,
                transno,
            });
        }
        lost
    }

    /// A replayed write (`key`, of the round's writes) was answered.
    pub fn replay_answered(
        &mut self,
        key: KeptKey,
        object: u64,
        answer: ReplayAnswer,
    ) -> ReplayStep {
        let (target, transno) = key;
        match answer {
            ReplayAnswer::Done { last_committed } => {
                ReplayStep::Next(self.replay.note(target, 0, last_committed, None))
            }
            ReplayAnswer::Lost => ReplayStep::NextLost {
                lost: LostWrite {
                    target,
                    object,
                    transno,
                },
                forgotten: self.replay.forget(key).is_some(),
            },
            ReplayAnswer::AnotherStart => ReplayStep::RestartedAgain,
        }
    }

    /// The round's replay to `to` is through (and said, if the server recovers): that start
    /// is the one known now.
    pub fn round_through(&mut self, to: u64) {
        self.boot_id = to;
        self.replaying_to = None;
    }

    /// A round ended, through or not: no replay is under way. One cut short leaves the start
    /// known as it was, so the next try replays again.
    pub fn round_ended(&mut self) {
        self.replaying_to = None;
    }

    /// A write's acknowledgement, from the start `answered_by` (0 or `None`: not said). Noted
    /// unless that start has ended (or is ending: a replay to the next is under way) and had
    /// not committed the write — then nothing is noted and it must be sent again. Decided
    /// here, where the replay chooses what it replays: a write is either among what the
    /// replay to the next start carries, or noted by no one.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "Import::write_answered",
        skip_all
    )]
    pub fn write_answered(
        &mut self,
        answered_by: Option<u64>,
        target: u32,
        stamp: Stamp,
        kept: Option<Kept>,
    ) -> WriteAnswer {
        if let Some(start) = answered_by.filter(|&start| start != 0) {
            let current = self.replaying_to.unwrap_or(self.boot_id);
            if start != current && stamp.transno > stamp.last_committed {
                return WriteAnswer::SendAgain;
            }
        }
        WriteAnswer::Noted(
            self.replay
                .note(target, stamp.transno, stamp.last_committed, kept),
        )
    }

    /// A disconnect began: the pinger stands aside until it ends.
    pub fn leaving_began(&mut self) {
        self.leaving += 1;
    }

    /// A disconnect ended, however it ended.
    pub fn leaving_ended(&mut self) {
        self.leaving = self.leaving.saturating_sub(1);
    }

    /// The disconnect went through: every target committed before the reply, so nothing
    /// kept is needed; the server has forgotten this client. Returns what was kept, per
    /// target, for the counters.
    pub fn disconnected(&mut self) -> Vec<(u32, u64)> {
        let kept = self.replay.kept_by_target();
        self.replay.clear();
        self.disconnected = true;
        kept
    }

    /// Lets go of everything kept (the connection is dropped). Returns what was kept, per
    /// target.
    pub fn forget_every_kept(&mut self) -> Vec<(u32, u64)> {
        let kept = self.replay.kept_by_target();
        self.replay.clear();
        kept
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::replay::KeptData;
    use bytes::Bytes;

    const A: u64 = 0xA;
    const B: u64 = 0xB;
    const C: u64 = 0xC;

    fn facts(boot_id: u64, session: u64, recovering: bool) -> ConnectFacts {
        ConnectFacts {
            boot_id,
            session,
            recovering,
            recovery_hard_remaining: Duration::from_secs(30),
            targets: vec![(0, 0)],
        }
    }

    fn kept(object: u64) -> Kept {
        Kept {
            object,
            offset: 0,
            data: KeptData::Data(Bytes::from_static(b"data")),
            trace: None,
        }
    }

    fn stamp(transno: u64, last_committed: u64) -> Stamp {
        Stamp {
            transno,
            last_committed,
        }
    }

    /// The states a connection is in, each built by the events that lead there: connected to
    /// start A under session 1 with two writes kept; replaying to B; leaving; disconnected.
    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum S {
        Connected,
        Replaying,
        Leaving,
        Disconnected,
    }

    const STATES: [S; 4] = [S::Connected, S::Replaying, S::Leaving, S::Disconnected];

    fn in_state(state: S) -> Import {
        let mut import = Import::new();
        import.first_connected(&facts(A, 1, false));
        for transno in [5, 6] {
            let noted = import.write_answered(Some(A), 0, stamp(transno, 4), Some(kept(transno)));
            assert!(matches!(noted, WriteAnswer::Noted(n) if n.kept));
        }
        match state {
            S::Connected => {}
            S::Replaying => {
                let (round, lost) = import.reconnected(&facts(B, 1, true));
                assert!(lost.is_empty());
                assert!(matches!(round, Round::Replay { to: B, .. }));
            }
            S::Leaving => import.leaving_began(),
            S::Disconnected => {
                import.leaving_began();
                import.disconnected();
                import.leaving_ended();
            }
        }
        import
    }

    /// Every event in every state: what it decides, and the state it leaves.
    #[test]
    fn every_event_in_every_state() {
        for state in STATES {
            let held = if state == S::Disconnected { 0 } else { 2 };

            // A ping's turn.
            let import = in_state(state);
            assert_eq!(
                import.may_ping(),
                state == S::Connected || state == S::Replaying,
                "{state:?}: ping"
            );
            assert_eq!(import.is_disconnected(), state == S::Disconnected);

            // A reconnect reaching the start known: nothing to replay — unless a replay to
            // B was under way (B is not known yet: it replays again).
            let mut import = in_state(state);
            let (round, lost) = import.reconnected(&facts(A, 1, false));
            assert!(lost.is_empty(), "{state:?}");
            assert_eq!(round, Round::Known, "{state:?}: A is known");

            // A reconnect reaching a new start: every kept write, in transno order.
            let mut import = in_state(state);
            let (round, lost) = import.reconnected(&facts(C, 1, true));
            assert!(lost.is_empty(), "{state:?}");
            match round {
                Round::Replay {
                    to,
                    writes,
                    recovering,
                } => {
                    assert_eq!((to, recovering), (C, true));
                    let keys: Vec<KeptKey> = writes.iter().map(|(k, _)| *k).collect();
                    let want: Vec<KeptKey> = [(0, 5), (0, 6)][..held].to_vec();
                    assert_eq!(keys, want, "{state:?}");
                }
                Round::Known => panic!("{state:?}: C is new"),
            }
            assert_eq!(import.replay_identity(), (1, C), "{state:?}");

            // A reconnect under another session: evicted, every kept write lost at once.
            let mut import = in_state(state);
            let (_, lost) = import.reconnected(&facts(C, 2, true));
            assert_eq!(lost.len(), held, "{state:?}: evicted");
            assert!(import.replay().is_empty());

            // A write's acknowledgement from the start known: kept.
            let mut import = in_state(state);
            let answer = import.write_answered(Some(A), 0, stamp(7, 4), Some(kept(7)));
            let expect_kept = state != S::Replaying;
            match answer {
                WriteAnswer::Noted(noted) => {
                    assert!(expect_kept, "{state:?}: A has ended while replaying to B");
                    assert!(noted.kept);
                }
                WriteAnswer::SendAgain => {
                    assert!(!expect_kept, "{state:?}: A is the start known");
                }
            }

            // From a start that ended, uncommitted: sent again, never kept. Committed there:
            // noted, and nothing to keep.
            let mut import = in_state(state);
            let old = if state == S::Replaying { A } else { C };
            assert_eq!(
                import.write_answered(Some(old), 0, stamp(8, 4), Some(kept(8))),
                WriteAnswer::SendAgain,
                "{state:?}"
            );
            match import.write_answered(Some(old), 0, stamp(8, 8), Some(kept(8))) {
                WriteAnswer::Noted(noted) => assert!(!noted.kept, "{state:?}"),
                WriteAnswer::SendAgain => panic!("{state:?}: committed where it was written"),
            }

            // A reply's last_committed lets kept writes go.
            let mut import = in_state(state);
            let answer = import.write_answered(None, 0, stamp(0, 6), None);
            assert!(matches!(answer, WriteAnswer::Noted(n) if n.forgotten.len() == held));

            // Replay answers.
            let mut import = in_state(state);
            match import.replay_answered((0, 5), 5, ReplayAnswer::Done { last_committed: 5 }) {
                ReplayStep::Next(noted) => assert_eq!(noted.forgotten.len(), held / 2),
                other => panic!("{state:?}: {other:?}"),
            }
            assert_eq!(import.replay().len(), held / 2, "{state:?}");
            assert_eq!(
                import.replay_answered((0, 6), 6, ReplayAnswer::Lost),
                ReplayStep::NextLost {
                    lost: LostWrite {
                        target: 0,
                        object: 6,
                        transno: 6
                    },
                    forgotten: held > 0,
                }
            );
            assert!(import.replay().is_empty(), "{state:?}");
            assert_eq!(
                import.replay_answered((0, 7), 7, ReplayAnswer::AnotherStart),
                ReplayStep::RestartedAgain
            );

            // The round through: the start is known. Ended without: not.
            let mut import = in_state(state);
            import.round_ended();
            assert_eq!(import.known_start(), A, "{state:?}");
            assert_eq!(import.replay_identity(), (1, A));
            import.round_through(C);
            assert_eq!(import.known_start(), C);
            assert_eq!(import.replay_identity(), (1, C));

            // Leaving: the pinger stands aside until the disconnect ends, however it ends.
            let mut import = in_state(state);
            import.leaving_began();
            assert!(!import.may_ping(), "{state:?}");
            import.leaving_ended();
            assert_eq!(
                import.may_ping(),
                state != S::Leaving && state != S::Disconnected
            );

            // A disconnect through: nothing kept, calls refused.
            let mut import = in_state(state);
            let kept_then: u64 = import.disconnected().iter().map(|(_, n)| n).sum();
            assert_eq!(kept_then, held as u64, "{state:?}");
            assert!(import.is_disconnected() && !import.may_ping());
        }
    }

    #[test]
    fn a_call_waits_for_a_recovery_within_its_window_and_an_unreachable_server_within_its_limit() {
        let limits = CallLimits {
            unreachable_for_max: Duration::from_secs(20),
            recovery_wait_max: Duration::from_secs(600),
        };
        let t0 = Instant::now();
        let s = Duration::from_secs;
        // Recovering: the first wait says so; it goes on until the window the last connect
        // was told of has passed, or the bound of our own.
        let mut wait = CallWait::default();
        let until = Some(t0 + s(30));
        let first = CallStep::Retry {
            first_wait: true,
            pause_first: false,
        };
        let again = CallStep::Retry {
            first_wait: false,
            pause_first: false,
        };
        assert_eq!(
            wait.failed(CallFailure::Recovering, t0, until, limits),
            first
        );
        assert_eq!(
            wait.failed(CallFailure::Recovering, t0 + s(29), until, limits),
            again
        );
        assert_eq!(
            wait.failed(CallFailure::Recovering, t0 + s(30), until, limits),
            CallStep::GiveUpRecovering
        );
        // An earlier start's window, told before the first EINPROGRESS, does not end it.
        let mut wait = CallWait::default();
        let past = Some(t0);
        assert_eq!(
            wait.failed(CallFailure::Recovering, t0, past, limits),
            first
        );
        // Without a window: the bound of our own.
        let mut wait = CallWait::default();
        assert_eq!(
            wait.failed(CallFailure::Recovering, t0, None, limits),
            first
        );
        assert_eq!(
            wait.failed(CallFailure::Recovering, t0 + s(600), None, limits),
            CallStep::GiveUpRecovering
        );
        // Unreachable: a pause, then again, for 20 s.
        let mut wait = CallWait::default();
        let pause = CallStep::Retry {
            first_wait: false,
            pause_first: true,
        };
        assert_eq!(
            wait.failed(CallFailure::Unreachable, t0, None, limits),
            pause
        );
        assert_eq!(
            wait.failed(CallFailure::Unreachable, t0 + s(19), None, limits),
            pause
        );
        assert_eq!(
            wait.failed(CallFailure::Unreachable, t0 + s(20), None, limits),
            CallStep::GiveUp
        );
        // Anything else: at once.
        let mut wait = CallWait::default();
        assert_eq!(
            wait.failed(CallFailure::Other, t0, None, limits),
            CallStep::GiveUp
        );
    }
}
