//! `CommitPolicy`: when to commit the journal and when each operation may be answered.
//!
//! The pure core of the journal — no files, no clocks. The runtime feeds it events (an
//! operation's data step is done, a commit finished or failed, time passed, the mode changed)
//! with the current time in milliseconds, and it returns [`Decision`]s: reply to this
//! operation now, write and make durable this group of records, these transnos are committed,
//! stop.
//!
//! The two modes of the Spider paper:
//!
//! - **Sync** (`sync_journal=1`): data written → record written → record made durable → reply.
//!   Every operation waits for the commit that contains its record. Records that arrive while a
//!   commit is running join the next one (JBD's running/closed transactions), so concurrent
//!   writers share commits, but each reply still pays a journal commit.
//! - **Async** (`sync_journal=0`): reply as soon as the data is on disk; the record waits in
//!   memory and is committed with others when `group_records_max` records are pending or the
//!   oldest has waited `commit_interval_ms`, whichever comes first. Until then the client keeps
//!   the request for replay, which is why every reply carries `last_committed`.
//!
//! Whatever the mode, an operation whose effect cannot be undone by dropping a client's replay
//! (create, punch, destroy) asks for `commit_before_reply`, and an operation whose data is not
//! yet on disk is never answered before its commit. One commit runs at a time; groups are
//! committed in transno order, so `last_committed` only ever grows.

use super::record::{CommitRecord, OpRecord, Operation};
use crate::ids::{ObjectId, Transno};
use std::collections::{BTreeSet, VecDeque};

/// The journal's commit mode (`obdfilter.*.sync_journal`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CommitMode {
    /// Commit before every reply.
    Sync,
    /// Reply when the data is on disk, commit in groups later.
    Async,
}

/// Limits of the group commit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PolicyConfig {
    /// Most records in one commit; in async mode also the count that triggers a commit.
    pub group_records_max: usize,
    /// In async mode, the longest a record waits before its commit starts.
    pub commit_interval_ms: u64,
}

/// What the runtime tells the core about one state-changing operation whose own I/O is done.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Intent {
    /// The operation.
    pub operation: Operation,
    /// The object.
    pub object: ObjectId,
    /// Extent start (writes).
    pub offset_bytes: u64,
    /// Extent length (writes).
    pub length_bytes: u64,
    /// Object size after the operation.
    pub size_after_bytes: u64,
    /// The data has reached the disk (O_DIRECT write completed, or written and fdatasync'd).
    pub data_on_disk: bool,
    /// The object file must be fdatasync'd before the record is written (its size or block map
    /// changed without an fsync, e.g. an O_DIRECT append).
    pub needs_data_sync: bool,
    /// Reply only after the record is committed, whatever the mode.
    pub commit_before_reply: bool,
}

/// A group of records to commit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CommitGroup {
    /// Operation records, in transno order.
    pub records: Vec<OpRecord>,
    /// The record that closes the group.
    pub commit: CommitRecord,
    /// Object files to fdatasync before writing the records (ordered mode: data before the
    /// metadata that describes it).
    pub objects_to_sync: Vec<ObjectId>,
}

/// What the runtime must do.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Answer the operation with this transno now (its reply point is reached).
    Reply {
        /// The operation.
        transno: Transno,
    },
    /// Write this group: fdatasync its objects, write its records and commit record, fdatasync
    /// the journal, then report [`CommitPolicy::commit_done`] or [`CommitPolicy::commit_failed`].
    Commit(CommitGroup),
    /// Every transno up to `last_committed` is durable in the journal.
    Committed {
        /// The new last committed transno.
        last_committed: Transno,
    },
    /// A commit failed: the target is stopped. Answer these operations with an error.
    Stopped {
        /// Why.
        reason: String,
        /// Operations still waiting for a reply.
        unanswered: Vec<Transno>,
    },
}

/// Why the core refused an operation.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Refusal {
    /// The target has stopped.
    Stopped(String),
    /// A replay's transno is not above the last one assigned.
    OutOfOrder {
        /// The highest transno already assigned.
        last: Transno,
    },
}

/// A record waiting for its commit.
#[derive(Debug, Clone)]
struct Pending {
    record: OpRecord,
    needs_data_sync: bool,
    awaiting_reply: bool,
    arrived_ms: u64,
}

/// The running commit.
#[derive(Debug, Clone)]
struct InFlight {
    last: Transno,
    awaiting_reply: Vec<Transno>,
}

/// The commit policy of one target.
#[derive(Debug, Clone)]
pub struct CommitPolicy {
    config: PolicyConfig,
    mode: CommitMode,
    last_assigned: Transno,
    last_committed: Transno,
    pending: VecDeque<Pending>,
    in_flight: Option<InFlight>,
    /// Commit everything up to here as soon as possible (a `sync` call).
    flush_target: Option<Transno>,
    stopped: Option<String>,
}

impl CommitPolicy {
    /// A policy resuming after `last_committed` (zero for a new target).
    pub fn new(config: PolicyConfig, mode: CommitMode, last_committed: Transno) -> CommitPolicy {
        assert!(
            config.group_records_max > 0,
            "a commit group holds at least one record"
        );
        CommitPolicy {
            config,
            mode,
            last_assigned: last_committed,
            last_committed,
            pending: VecDeque::new(),
            in_flight: None,
            flush_target: None,
            stopped: None,
        }
    }

    /// The current mode.
    pub fn mode(&self) -> CommitMode {
        self.mode
    }

    /// Highest transno whose commit is durable.
    pub fn last_committed(&self) -> Transno {
        self.last_committed
    }

    /// Records not yet committed (pending or in flight).
    pub fn uncommitted(&self) -> u64 {
        self.last_assigned.0 - self.last_committed.0
    }

    /// Why the target stopped, if it did.
    pub fn stopped(&self) -> Option<&str> {
        self.stopped.as_deref()
    }

    /// An operation's data step is done: assign its transno and decide its reply point.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "CommitPolicy::submit",
        skip_all
    )]
    pub fn submit(
        &mut self,
        now_ms: u64,
        intent: Intent,
    ) -> Result<(Transno, Vec<Decision>), Refusal> {
        let transno = self.last_assigned.next();
        self.admit(now_ms, transno, intent)
    }

    /// A client replays an operation under its original transno, which must be above every
    /// transno assigned so far (replays are applied in transno order).
    pub fn submit_replay(
        &mut self,
        now_ms: u64,
        transno: Transno,
        intent: Intent,
    ) -> Result<(Transno, Vec<Decision>), Refusal> {
        if transno <= self.last_assigned {
            return Err(Refusal::OutOfOrder {
                last: self.last_assigned,
            });
        }
        self.admit(now_ms, transno, intent)
    }

    fn admit(
        &mut self,
        now_ms: u64,
        transno: Transno,
        intent: Intent,
    ) -> Result<(Transno, Vec<Decision>), Refusal> {
        if let Some(reason) = &self.stopped {
            return Err(Refusal::Stopped(reason.clone()));
        }
        assert!(
            transno > self.last_assigned,
            "transnos are handed out in increasing order"
        );
        self.last_assigned = transno;
        // The reply point. Async mode answers now — but only for data already on disk and for
        // operations that do not insist on their commit.
        let awaiting_reply =
            self.mode == CommitMode::Sync || intent.commit_before_reply || !intent.data_on_disk;
        self.pending.push_back(Pending {
            record: OpRecord {
                transno,
                operation: intent.operation,
                object: intent.object,
                offset_bytes: intent.offset_bytes,
                length_bytes: intent.length_bytes,
                size_after_bytes: intent.size_after_bytes,
            },
            needs_data_sync: intent.needs_data_sync,
            awaiting_reply,
            arrived_ms: now_ms,
        });
        let mut decisions = Vec::new();
        if !awaiting_reply {
            decisions.push(Decision::Reply { transno });
        }
        self.maybe_start_commit(now_ms, &mut decisions);
        Ok((transno, decisions))
    }

    /// Asks for everything assigned so far to be committed (`sync`). Returns the transno to
    /// wait for: the caller is answered once `last_committed` reaches it.
    pub fn flush(&mut self, now_ms: u64) -> Result<(Transno, Vec<Decision>), Refusal> {
        if let Some(reason) = &self.stopped {
            return Err(Refusal::Stopped(reason.clone()));
        }
        let target = self.last_assigned;
        let mut decisions = Vec::new();
        if target > self.last_committed {
            self.flush_target = Some(self.flush_target.map_or(target, |t| t.max(target)));
            self.maybe_start_commit(now_ms, &mut decisions);
        }
        Ok((target, decisions))
    }

    /// Time passed: start a commit if the oldest pending record has waited long enough.
    pub fn tick(&mut self, now_ms: u64) -> Vec<Decision> {
        let mut decisions = Vec::new();
        self.maybe_start_commit(now_ms, &mut decisions);
        decisions
    }

    /// Switches mode. Switching to sync commits what is pending at once.
    pub fn set_mode(&mut self, now_ms: u64, mode: CommitMode) -> Vec<Decision> {
        self.mode = mode;
        self.tick(now_ms)
    }

    /// The running commit is durable.
    pub fn commit_done(&mut self, now_ms: u64) -> Vec<Decision> {
        let Some(flight) = self.in_flight.take() else {
            panic!("commit_done without a commit in flight");
        };
        assert!(
            flight.last > self.last_committed,
            "last_committed only grows"
        );
        self.last_committed = flight.last;
        if self.flush_target.is_some_and(|t| t <= self.last_committed) {
            self.flush_target = None;
        }
        // Committed first, so that replies carry the new last_committed.
        let mut decisions = vec![Decision::Committed {
            last_committed: self.last_committed,
        }];
        decisions.extend(
            flight
                .awaiting_reply
                .into_iter()
                .map(|transno| Decision::Reply { transno }),
        );
        self.maybe_start_commit(now_ms, &mut decisions);
        decisions
    }

    /// The running commit failed (an fsync or write error). The target stops: nothing more is
    /// committed, every waiting operation gets an error, every later one is refused.
    pub fn commit_failed(&mut self, reason: String) -> Vec<Decision> {
        let mut unanswered: Vec<Transno> = self
            .in_flight
            .take()
            .map(|f| f.awaiting_reply)
            .unwrap_or_default();
        unanswered.extend(
            self.pending
                .iter()
                .filter(|p| p.awaiting_reply)
                .map(|p| p.record.transno),
        );
        self.pending.clear();
        self.flush_target = None;
        self.stopped = Some(reason.clone());
        vec![Decision::Stopped { reason, unanswered }]
    }

    /// When the runtime should call [`CommitPolicy::tick`] next, if ever.
    pub fn next_deadline_ms(&self) -> Option<u64> {
        if self.stopped.is_some() || self.in_flight.is_some() {
            return None;
        }
        self.pending
            .front()
            .map(|p| p.arrived_ms + self.config.commit_interval_ms)
    }

    /// Starts the next commit if none is running and one is due.
    fn maybe_start_commit(&mut self, now_ms: u64, decisions: &mut Vec<Decision>) {
        if self.stopped.is_some() || self.in_flight.is_some() {
            return;
        }
        let Some(oldest) = self.pending.front() else {
            return;
        };
        let due = self.mode == CommitMode::Sync
            || self.pending.len() >= self.config.group_records_max
            || now_ms >= oldest.arrived_ms + self.config.commit_interval_ms
            || self.flush_target.is_some()
            || self.pending.iter().any(|p| p.awaiting_reply);
        if !due {
            return;
        }
        let take = self.pending.len().min(self.config.group_records_max);
        let group: Vec<Pending> = self.pending.drain(..take).collect();
        let objects_to_sync: BTreeSet<ObjectId> = group
            .iter()
            .filter(|p| p.needs_data_sync)
            .map(|p| p.record.object)
            .collect();
        let records: Vec<OpRecord> = group.iter().map(|p| p.record).collect();
        let first = records[0].transno;
        let last = records[records.len() - 1].transno;
        self.in_flight = Some(InFlight {
            last,
            awaiting_reply: group
                .iter()
                .filter(|p| p.awaiting_reply)
                .map(|p| p.record.transno)
                .collect(),
        });
        decisions.push(Decision::Commit(CommitGroup {
            commit: CommitRecord {
                first,
                last,
                count: u32::try_from(records.len()).unwrap_or(u32::MAX),
            },
            records,
            objects_to_sync: objects_to_sync.into_iter().collect(),
        }));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const CONFIG: PolicyConfig = PolicyConfig {
        group_records_max: 4,
        commit_interval_ms: 100,
    };

    fn write(object: u64, direct: bool) -> Intent {
        Intent {
            operation: Operation::Write,
            object: ObjectId(object),
            offset_bytes: 0,
            length_bytes: 4096,
            size_after_bytes: 4096,
            data_on_disk: true,
            needs_data_sync: direct,
            commit_before_reply: false,
        }
    }

    fn replies(decisions: &[Decision]) -> Vec<u64> {
        decisions
            .iter()
            .filter_map(|d| match d {
                Decision::Reply { transno } => Some(transno.0),
                _ => None,
            })
            .collect()
    }

    fn commit(decisions: &[Decision]) -> Option<&CommitGroup> {
        decisions.iter().find_map(|d| match d {
            Decision::Commit(group) => Some(group),
            _ => None,
        })
    }

    #[test]
    fn sync_mode_replies_only_after_the_commit() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Sync, Transno::ZERO);
        let (t1, decisions) = policy.submit(0, write(1, true)).unwrap();
        assert_eq!(t1, Transno(1));
        assert!(
            replies(&decisions).is_empty(),
            "nothing acknowledged before durable"
        );
        let group = commit(&decisions).unwrap();
        assert_eq!(group.objects_to_sync, [ObjectId(1)]);
        assert_eq!(
            group.commit,
            CommitRecord {
                first: t1,
                last: t1,
                count: 1
            }
        );
        // Two more arrive while the commit runs: they wait, unanswered, for the next commit.
        let (_, d2) = policy.submit(1, write(2, false)).unwrap();
        let (_, d3) = policy.submit(2, write(2, true)).unwrap();
        assert!(d2.is_empty() && d3.is_empty());
        let done = policy.commit_done(3);
        assert_eq!(done[0], Decision::Committed { last_committed: t1 });
        assert_eq!(replies(&done), [1]);
        // ...and the next commit takes both at once (group commit).
        let next = commit(&done).unwrap();
        assert_eq!(next.records.len(), 2);
        assert_eq!(next.objects_to_sync, [ObjectId(2)]);
        let done = policy.commit_done(4);
        assert_eq!(replies(&done), [2, 3]);
        assert_eq!(policy.last_committed(), Transno(3));
        assert_eq!(policy.next_deadline_ms(), None);
    }

    #[test]
    fn async_mode_replies_at_once_and_commits_every_n_records() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Async, Transno(10));
        for i in 1..=3 {
            let (transno, decisions) = policy.submit(i, write(1, true)).unwrap();
            assert_eq!(
                replies(&decisions),
                [transno.0],
                "reply once data is on disk"
            );
            assert!(commit(&decisions).is_none());
        }
        assert_eq!(policy.uncommitted(), 3);
        let (_, decisions) = policy.submit(4, write(1, true)).unwrap();
        let group = commit(&decisions).expect("the fourth record fills the group");
        assert_eq!(
            group
                .records
                .iter()
                .map(|r| r.transno.0)
                .collect::<Vec<_>>(),
            [11, 12, 13, 14]
        );
        let done = policy.commit_done(5);
        assert_eq!(
            done,
            vec![Decision::Committed {
                last_committed: Transno(14)
            }]
        );
    }

    #[test]
    fn async_mode_commits_when_the_interval_expires() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Async, Transno::ZERO);
        policy.submit(1000, write(1, true)).unwrap();
        policy.submit(1050, write(1, true)).unwrap();
        assert_eq!(
            policy.next_deadline_ms(),
            Some(1100),
            "the oldest record's deadline"
        );
        assert!(policy.tick(1099).is_empty());
        let decisions = policy.tick(1100);
        assert_eq!(commit(&decisions).unwrap().records.len(), 2);
        assert_eq!(
            policy.next_deadline_ms(),
            None,
            "nothing to time while a commit runs"
        );
    }

    #[test]
    fn async_mode_never_answers_data_that_is_not_on_disk() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Async, Transno::ZERO);
        let intent = Intent {
            data_on_disk: false,
            ..write(1, true)
        };
        let (_, decisions) = policy.submit(0, intent).unwrap();
        assert!(replies(&decisions).is_empty());
        assert!(
            commit(&decisions).is_some(),
            "a waiting reply makes the commit due"
        );
        assert_eq!(replies(&policy.commit_done(1)), [1]);
    }

    #[test]
    fn metadata_operations_commit_before_reply_in_async_mode() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Async, Transno::ZERO);
        let (_, a) = policy.submit(0, write(1, true)).unwrap();
        assert_eq!(replies(&a), [1]);
        let create = Intent {
            operation: Operation::Create,
            object: ObjectId(2),
            offset_bytes: 0,
            length_bytes: 0,
            size_after_bytes: 0,
            data_on_disk: true,
            needs_data_sync: false,
            commit_before_reply: true,
        };
        let (_, b) = policy.submit(1, create).unwrap();
        assert!(replies(&b).is_empty());
        assert_eq!(
            commit(&b).unwrap().records.len(),
            2,
            "takes the pending write along"
        );
        assert_eq!(replies(&policy.commit_done(2)), [2]);
    }

    #[test]
    fn switching_modes_at_runtime() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Async, Transno::ZERO);
        policy.submit(0, write(1, true)).unwrap();
        let decisions = policy.set_mode(1, CommitMode::Sync);
        assert_eq!(policy.mode(), CommitMode::Sync);
        assert_eq!(
            commit(&decisions).unwrap().records.len(),
            1,
            "pending records commit at once"
        );
        let (_, d) = policy.submit(2, write(1, true)).unwrap();
        assert!(replies(&d).is_empty());
        policy.commit_done(3);
        policy.commit_done(4);
        policy.set_mode(5, CommitMode::Async);
        let (_, d) = policy.submit(6, write(1, true)).unwrap();
        assert_eq!(replies(&d), [3]);
    }

    #[test]
    fn flush_commits_everything_assigned_so_far() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Async, Transno::ZERO);
        let (target, decisions) = policy.flush(0).unwrap();
        assert_eq!(target, Transno::ZERO);
        assert!(decisions.is_empty(), "nothing to commit");
        policy.submit(0, write(1, true)).unwrap();
        let (target, decisions) = policy.flush(1).unwrap();
        assert_eq!(target, Transno(1));
        assert!(commit(&decisions).is_some());
        policy.commit_done(2);
        assert_eq!(policy.last_committed(), target);
    }

    #[test]
    fn groups_are_capped_and_committed_in_order() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Sync, Transno::ZERO);
        policy.submit(0, write(1, false)).unwrap();
        for i in 1..=9 {
            policy.submit(i, write(1, false)).unwrap();
        }
        let mut committed = vec![];
        let mut decisions = policy.commit_done(10);
        // Bounded: each commit takes at least one of the ten records.
        for _ in 0..10 {
            let Some(group) = commit(&decisions).cloned() else {
                break;
            };
            assert!(group.records.len() <= CONFIG.group_records_max);
            committed.extend(group.records.iter().map(|r| r.transno.0));
            decisions = policy.commit_done(11);
        }
        assert_eq!(committed, (2..=10).collect::<Vec<_>>());
        assert_eq!(policy.last_committed(), Transno(10));
    }

    #[test]
    fn a_failed_commit_stops_the_target() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Sync, Transno::ZERO);
        policy.submit(0, write(1, true)).unwrap();
        policy.submit(1, write(1, true)).unwrap();
        let decisions = policy.commit_failed("fsync journal: EIO".to_string());
        assert_eq!(
            decisions,
            vec![Decision::Stopped {
                reason: "fsync journal: EIO".to_string(),
                unanswered: vec![Transno(1), Transno(2)],
            }]
        );
        assert_eq!(policy.last_committed(), Transno::ZERO, "nothing pretended");
        assert_eq!(
            policy.submit(2, write(1, true)),
            Err(Refusal::Stopped("fsync journal: EIO".to_string()))
        );
        assert!(policy.flush(3).is_err());
        assert_eq!(policy.next_deadline_ms(), None);
    }

    #[test]
    fn replays_keep_their_transno_and_must_increase() {
        let mut policy = CommitPolicy::new(CONFIG, CommitMode::Async, Transno(5));
        let (t, _) = policy.submit_replay(0, Transno(8), write(1, true)).unwrap();
        assert_eq!(t, Transno(8));
        assert_eq!(
            policy.submit_replay(0, Transno(8), write(1, true)),
            Err(Refusal::OutOfOrder { last: Transno(8) })
        );
        let (t, _) = policy.submit(0, write(1, true)).unwrap();
        assert_eq!(t, Transno(9), "new operations continue after the replays");
    }
}
