//! The MUNIX token table: "the operating system maintains a token which only one process at
//! a time can own, so that one process will write to the file, then the other process will
//! get the token and overwrite the same offset" (§2.6). One fyod manages each file's token;
//! every MUNIX read and write, from any fyod, holds it for the length of the call, so two
//! calls on one file never interleave at byte level. MASYNC calls never ask.
//!
//! - A file has at most one holder; later askers wait in arrival order.
//! - A grant carries a **lease**: a holder that has not released by its end (a fyod that died
//!   holding it, or a caller that gave up) loses the token to the next waiter, so a file is
//!   never locked forever.
//! - A grant says which fyod held the token before ([`Grant::previous`]), so a fyod can tell
//!   whether another fyod may have changed the file since it last held it (and drop its UFS
//!   cache of the file).
//!
//! Time is a number of milliseconds the caller passes in; nothing here reads a clock.

use std::collections::{HashMap, VecDeque};

use iopath_fabric::Nid;

use crate::error::{ForwarderError, Result};

/// Who holds (or waits for) a token: an open file on a fyod.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Holder {
    /// The fyod.
    pub fyod: Nid,
    /// The open file's handle on that fyod.
    pub handle: u64,
    /// When that fyod started (microseconds since the epoch; 0: not said).
    pub start: u64,
}

/// At most this many fyods' latest starts are remembered (one entry per fyod NID; past it,
/// one is forgotten, and that fyod's next restart is found by its lease, as before).
const STARTS_REMEMBERED_MAX: usize = 1024;

/// A granted token.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Grant {
    /// Names the grant; the release must quote it.
    pub grant: u64,
    /// The fyod that held the token before this grant; `None` if nobody did or the table no
    /// longer remembers (treat as "someone else").
    pub previous: Option<Nid>,
}

/// The answer to an acquire.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Acquired {
    /// The token is the caller's.
    Granted(Grant),
    /// The caller waits; its ticket will be granted by a later release or expiry.
    Queued {
        /// Names the wait.
        ticket: u64,
    },
}

/// What [`TokenTable::note_start`] did about a fyod's earlier starts.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Restarted {
    /// Tokens taken from them: how many.
    pub passed_on: usize,
    /// The waiters those tokens went to, by file.
    pub wakes: Vec<(u64, Wake)>,
    /// Their waits, ended: by file, the ticket.
    pub cancelled: Vec<(u64, u64)>,
}

/// A waiter the table has just granted the token to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Wake {
    /// The waiter's ticket.
    pub ticket: u64,
    /// Its grant.
    pub grant: Grant,
}

#[derive(Debug, Clone, Copy)]
struct Held {
    holder: Holder,
    grant: u64,
    lease_end_ms: u64,
}

#[derive(Debug, Default)]
struct FileToken {
    held: Option<Held>,
    waiters: VecDeque<(u64, Holder)>,
    /// The fyod of the latest grant.
    last_fyod: Option<Nid>,
}

impl FileToken {
    fn idle(&self) -> bool {
        self.held.is_none() && self.waiters.is_empty()
    }
}

/// The token table of the files one fyod manages.
#[derive(Debug)]
pub struct TokenTable {
    files: HashMap<u64, FileToken>,
    /// Each fyod's latest start seen.
    starts: HashMap<Nid, u64>,
    next_id: u64,
    files_max: usize,
    waiters_max: usize,
    lease_ms: u64,
    waits: u64,
}

impl TokenTable {
    /// A table remembering at most `files_max` files, with at most `waiters_max` waiters per
    /// file and grants honoured for `lease_ms`.
    pub fn new(files_max: u32, waiters_max: u32, lease_ms: u64) -> TokenTable {
        assert!(files_max > 0 && lease_ms > 0, "a usable table");
        TokenTable {
            files: HashMap::new(),
            starts: HashMap::new(),
            next_id: 1,
            files_max: files_max as usize,
            waiters_max: waiters_max as usize,
            lease_ms,
            waits: 0,
        }
    }

    /// Acquisitions that had to wait, so far.
    pub fn waits(&self) -> u64 {
        self.waits
    }

    fn id(&mut self) -> u64 {
        let id = self.next_id;
        self.next_id += 1;
        id
    }

    fn grant_to(&mut self, ino: u64, holder: Holder, now_ms: u64) -> Grant {
        let grant = self.id();
        let lease_end_ms = now_ms.saturating_add(self.lease_ms);
        let file = self.files.get_mut(&ino).expect("granting a known file");
        let previous = file.last_fyod.replace(holder.fyod);
        file.held = Some(Held {
            holder,
            grant,
            lease_end_ms,
        });
        Grant { grant, previous }
    }

    /// `holder` asks for `ino`'s token at `now_ms`.
    pub fn acquire(&mut self, ino: u64, holder: Holder, now_ms: u64) -> Result<Acquired> {
        if !self.files.contains_key(&ino) {
            if self.files.len() >= self.files_max {
                // Forget an idle file (its history only): its next grant says "unknown".
                let idle = self.files.iter().find(|(_, f)| f.idle()).map(|(k, _)| *k);
                match idle {
                    Some(key) => {
                        self.files.remove(&key);
                    }
                    None => {
                        return Err(ForwarderError::LimitReached {
                            what: "files with MUNIX tokens in use",
                            max: self.files_max as u64,
                        });
                    }
                }
            }
            self.files.insert(ino, FileToken::default());
        }
        let waiters_max = self.waiters_max;
        let file = self.files.get_mut(&ino).expect("inserted above");
        if file.idle() {
            return Ok(Acquired::Granted(self.grant_to(ino, holder, now_ms)));
        }
        if file.waiters.len() >= waiters_max {
            return Err(ForwarderError::LimitReached {
                what: "waiters for one file's MUNIX token",
                max: waiters_max as u64,
            });
        }
        let ticket = self.id();
        let file = self.files.get_mut(&ino).expect("inserted above");
        file.waiters.push_back((ticket, holder));
        self.waits += 1;
        Ok(Acquired::Queued { ticket })
    }

    /// Notes the start `holder` asks from, before its acquire. A start newer than any seen
    /// from its fyod means that fyod restarted, and its earlier starts are gone with whatever
    /// they held or waited for: the tokens they held pass on now (the wakes returned), and
    /// their waits end (the tickets returned) — instead of every waiter behind a dead holder
    /// waiting out its lease, and a dead waiter's grant a lease more. A start older than one
    /// seen since is itself gone (a late message): refused. A holder that does not say its
    /// start (0) changes nothing.
    pub fn note_start(&mut self, holder: Holder, now_ms: u64) -> Result<Restarted> {
        let mut restarted = Restarted::default();
        if holder.start == 0 {
            return Ok(restarted);
        }
        match self.starts.get(&holder.fyod).copied() {
            Some(latest) if holder.start < latest => {
                return Err(ForwarderError::invalid(
                    "token acquire",
                    format!(
                        "fyod {} asked from a start ({}) older than one it has made since ({latest}): that start is gone",
                        holder.fyod, holder.start
                    ),
                ));
            }
            Some(latest) if holder.start == latest => return Ok(restarted),
            Some(_) => {}
            None => {
                if self.starts.len() >= STARTS_REMEMBERED_MAX
                    && let Some(forget) = self.starts.keys().next().copied()
                {
                    self.starts.remove(&forget);
                }
            }
        }
        self.starts.insert(holder.fyod, holder.start);
        let earlier = |h: &Holder| h.fyod == holder.fyod && h.start != 0 && h.start < holder.start;
        let mut freed = Vec::new();
        for (&ino, file) in &mut self.files {
            file.waiters.retain(|(ticket, waiter)| {
                let gone = earlier(waiter);
                if gone {
                    restarted.cancelled.push((ino, *ticket));
                }
                !gone
            });
            if file.held.is_some_and(|held| earlier(&held.holder)) {
                file.held = None;
                freed.push(ino);
            }
        }
        freed.sort_unstable();
        for ino in freed {
            restarted.passed_on += 1;
            if let Some(wake) = self.pass_on(ino, now_ms) {
                restarted.wakes.push((ino, wake));
            }
        }
        if restarted.passed_on > 0 || !restarted.cancelled.is_empty() {
            tracing::info!(fyod = %holder.fyod, passed_on = restarted.passed_on, waits_ended = restarted.cancelled.len(), "a fyod restarted: the MUNIX tokens its earlier start held are passed on");
        }
        Ok(restarted)
    }

    /// Hands the token to the next waiter, if any.
    fn pass_on(&mut self, ino: u64, now_ms: u64) -> Option<Wake> {
        let file = self.files.get_mut(&ino)?;
        let (ticket, holder) = file.waiters.pop_front()?;
        let grant = self.grant_to(ino, holder, now_ms);
        Some(Wake { ticket, grant })
    }

    /// The holder of `grant` releases `ino`'s token: the waiter it passes to, if any. A grant
    /// that is no longer the holder's (its lease expired) is refused.
    pub fn release(&mut self, ino: u64, grant: u64, now_ms: u64) -> Result<Option<Wake>> {
        match self.files.get_mut(&ino) {
            Some(file) if file.held.is_some_and(|h| h.grant == grant) => {
                file.held = None;
                Ok(self.pass_on(ino, now_ms))
            }
            _ => Err(ForwarderError::invalid(
                "token release",
                format!(
                    "grant {grant} does not hold the token of inode {ino} (its lease may have expired)"
                ),
            )),
        }
    }

    /// A waiter gave up (its caller went away) before it was granted the token.
    pub fn cancel(&mut self, ino: u64, ticket: u64) {
        if let Some(file) = self.files.get_mut(&ino) {
            file.waiters.retain(|(t, _)| *t != ticket);
        }
    }

    /// If the holder's lease has ended by `now_ms`, takes the token from it and passes it on.
    pub fn expire(&mut self, ino: u64, now_ms: u64) -> Option<Wake> {
        let file = self.files.get_mut(&ino)?;
        let held = file.held?;
        if held.lease_end_ms > now_ms {
            return None;
        }
        tracing::warn!(ino, fyod = %held.holder.fyod, handle = held.holder.handle, "MUNIX token lease expired: passing the token on");
        file.held = None;
        self.pass_on(ino, now_ms)
    }

    /// When the current holder's lease ends, if the token is held.
    pub fn lease_end_ms(&self, ino: u64) -> Option<u64> {
        self.files.get(&ino)?.held.map(|h| h.lease_end_ms)
    }

    /// The current holder.
    pub fn holder(&self, ino: u64) -> Option<Holder> {
        self.files.get(&ino)?.held.map(|h| h.holder)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn h(fyod: u32, handle: u64) -> Holder {
        Holder {
            fyod: Nid::mem(fyod, 0),
            handle,
            start: 0,
        }
    }

    fn started(fyod: u32, handle: u64, start: u64) -> Holder {
        Holder {
            start,
            ..h(fyod, handle)
        }
    }

    #[test]
    fn a_restarted_fyod_frees_what_its_earlier_start_held_and_waited_for() {
        // Found by the fyods soak: a fyod killed while it held a file's token (the home being
        // another fyod) kept every later caller of that file waiting its lease (30 s), and a
        // wait of its own that was granted next, one lease more (60 s).
        let mut t = TokenTable::new(8, 8, 30_000);
        let old = |handle| started(1, handle, 100);
        granted(t.acquire(5, old(1), 0).unwrap());
        assert!(matches!(
            t.acquire(5, old(2), 1).unwrap(),
            Acquired::Queued { .. }
        ));
        granted(t.acquire(6, old(3), 2).unwrap());
        let other = started(2, 9, 50);
        let Acquired::Queued { ticket } = t.acquire(6, other, 3).unwrap() else {
            panic!("file 6 is held");
        };
        // Fyod 1 comes back: its first acquire says a new start.
        let new = started(1, 4, 200);
        let restarted = t.note_start(new, 10).unwrap();
        assert_eq!(restarted.passed_on, 2, "both tokens of the old start");
        assert_eq!(restarted.cancelled.len(), 1, "and its wait on file 5");
        assert_eq!(restarted.wakes.len(), 1, "file 6 goes to fyod 2 at once");
        assert_eq!(restarted.wakes[0].0, 6);
        assert_eq!(restarted.wakes[0].1.ticket, ticket);
        assert_eq!(t.holder(6), Some(other));
        // File 5 is free: the new start gets it without waiting out a lease.
        granted(t.acquire(5, new, 11).unwrap());
        // The same start again changes nothing; a late message from the old start is refused.
        assert_eq!(t.note_start(new, 12).unwrap(), Restarted::default());
        assert!(t.note_start(old(7), 13).is_err());
        assert_eq!(t.holder(5), Some(new));
        // Another fyod's first start is not a restart of anyone's.
        assert_eq!(
            t.note_start(started(3, 1, 10), 14).unwrap(),
            Restarted::default()
        );
        assert_eq!(t.holder(6), Some(other));
    }

    fn granted(a: Acquired) -> Grant {
        match a {
            Acquired::Granted(g) => g,
            other => panic!("expected a grant, got {other:?}"),
        }
    }

    fn queued(a: Acquired) -> u64 {
        match a {
            Acquired::Queued { ticket } => ticket,
            other => panic!("expected to wait, got {other:?}"),
        }
    }

    #[test]
    fn one_holder_at_a_time_in_arrival_order() {
        let mut t = TokenTable::new(16, 16, 1000);
        let g1 = granted(t.acquire(5, h(1, 1), 0).unwrap());
        assert_eq!(g1.previous, None);
        let w2 = queued(t.acquire(5, h(2, 1), 0).unwrap());
        let w3 = queued(t.acquire(5, h(1, 2), 0).unwrap());
        // Another file is independent.
        granted(t.acquire(6, h(2, 9), 0).unwrap());
        let wake = t.release(5, g1.grant, 1).unwrap().unwrap();
        assert_eq!(wake.ticket, w2);
        assert_eq!(wake.grant.previous, Some(Nid::mem(1, 0)));
        assert_eq!(t.holder(5), Some(h(2, 1)));
        let wake = t.release(5, wake.grant.grant, 2).unwrap().unwrap();
        assert_eq!(wake.ticket, w3);
        assert_eq!(wake.grant.previous, Some(Nid::mem(2, 0)));
        assert_eq!(t.release(5, wake.grant.grant, 3).unwrap(), None);
        assert_eq!(t.holder(5), None);
        assert_eq!(t.waits(), 2);
        // The history survives while the table remembers the file.
        let again = granted(t.acquire(5, h(1, 3), 4).unwrap());
        assert_eq!(again.previous, Some(Nid::mem(1, 0)));
    }

    #[test]
    fn a_stale_release_is_refused_and_changes_nothing() {
        let mut t = TokenTable::new(16, 16, 1000);
        let g = granted(t.acquire(5, h(1, 1), 0).unwrap());
        assert!(t.release(5, g.grant + 100, 0).is_err());
        assert!(t.release(6, g.grant, 0).is_err());
        assert_eq!(t.holder(5), Some(h(1, 1)));
    }

    #[test]
    fn an_expired_lease_passes_the_token_on() {
        let mut t = TokenTable::new(16, 16, 1000);
        let g = granted(t.acquire(5, h(1, 1), 0).unwrap());
        let w = queued(t.acquire(5, h(2, 1), 10).unwrap());
        assert_eq!(t.lease_end_ms(5), Some(1000));
        assert_eq!(t.expire(5, 999), None, "not yet");
        let wake = t.expire(5, 1000).unwrap();
        assert_eq!(wake.ticket, w);
        assert!(
            t.release(5, g.grant, 1001).is_err(),
            "the old holder lost it"
        );
        assert_eq!(t.lease_end_ms(5), Some(2000));
    }

    #[test]
    fn a_cancelled_waiter_is_skipped() {
        let mut t = TokenTable::new(16, 16, 1000);
        let g = granted(t.acquire(5, h(1, 1), 0).unwrap());
        let w2 = queued(t.acquire(5, h(2, 1), 0).unwrap());
        let w3 = queued(t.acquire(5, h(3, 1), 0).unwrap());
        t.cancel(5, w2);
        assert_eq!(t.release(5, g.grant, 1).unwrap().unwrap().ticket, w3);
    }

    #[test]
    fn bounds_are_enforced() {
        let mut t = TokenTable::new(2, 1, 1000);
        let g = granted(t.acquire(1, h(1, 1), 0).unwrap());
        queued(t.acquire(1, h(1, 2), 0).unwrap());
        assert!(matches!(
            t.acquire(1, h(1, 3), 0),
            Err(ForwarderError::LimitReached { .. })
        ));
        granted(t.acquire(2, h(1, 4), 0).unwrap());
        assert!(
            matches!(
                t.acquire(3, h(1, 5), 0),
                Err(ForwarderError::LimitReached { .. })
            ),
            "both remembered files are busy"
        );
        let wake = t.release(1, g.grant, 0).unwrap().unwrap();
        t.release(1, wake.grant.grant, 0).unwrap();
        // File 1 is idle now: it is forgotten to make room, and its next grant says so.
        let g3 = granted(t.acquire(3, h(1, 6), 0).unwrap());
        t.release(3, g3.grant, 0).unwrap();
        assert_eq!(granted(t.acquire(1, h(2, 7), 0).unwrap()).previous, None);
    }
}
