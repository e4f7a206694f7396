//! Which orphans are abandoned: a pure core — the clients heard from and when, in; the
//! orphans to hand out for cleaning, out. No clock of its own: the caller passes the time.
//!
//! An orphan is a file unlinked while a client held it open (a mount's `TemporaryFile`); its
//! holder drops it when it closes it. A holder that crashed never will. Lustre's MDS evicts
//! a client that stops pinging and closes what it held open; here every request a client
//! sends counts as its ping (a mount sends one every two seconds, to watch its stack), and
//! an orphan whose holder has not been heard from for [`ORPHAN_GRACE`] — counted from this
//! service's start at the earliest, since a restart hears from nobody yet — is abandoned.
//! The service holds no connections to the storage servers, so it does not destroy the
//! objects itself: it hands each abandoned orphan, with its layout, to a client that asks
//! (`OrphansRequest`), which destroys them and drops it; one handed out is not handed out
//! again for a grace period, so two clients do not clean the same one at once.

use std::collections::{BTreeMap, HashMap};
use std::time::{Duration, Instant};

use crate::namespace::inode::{Ino, Orphan};

/// How long a holder may go unheard before its orphans are abandoned: past a mount's
/// `UNREACHABLE_FOR_MAX` (20 s), after which it gives its stack up anyway.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(30);

/// Most clients remembered: past it, the one heard from longest ago is forgotten (it counts
/// as unheard since then).
pub const HEARD_CLIENTS_MAX: usize = 4096;

/// Most orphans handed out at once (in one reply).
pub const HANDED_PER_REPLY_MAX: usize = 64;

/// Who was heard from when, and which orphans were handed out when.
#[derive(Debug)]
pub struct OrphanWatch {
    grace: Duration,
    started: Instant,
    heard: HashMap<String, Instant>,
    handed: HashMap<Ino, Instant>,
}

impl OrphanWatch {
    /// A watch that started at `now`, abandoning orphans of holders unheard for `grace`.
    pub fn new(grace: Duration, now: Instant) -> OrphanWatch {
        OrphanWatch {
            grace,
            started: now,
            heard: HashMap::new(),
            handed: HashMap::new(),
        }
    }

    /// A request came from `client` at `now`.
    pub fn heard(&mut self, client: &str, now: Instant) {
        if let Some(last) = self.heard.get_mut(client) {
            *last = (*last).max(now);
            return;
        }
        if self.heard.len() >= HEARD_CLIENTS_MAX
            && let Some(oldest) = self
                .heard
                .iter()
                .min_by_key(|(_, t)| **t)
                .map(|(c, _)| c.clone())
        {
            self.heard.remove(&oldest);
        }
        self.heard.insert(client.to_owned(), now);
    }

    /// The orphans of `orphans` abandoned at `now` and not handed out within a grace period,
    /// at most [`HANDED_PER_REPLY_MAX`]: they count as handed out from now.
    pub fn abandoned(&mut self, orphans: &BTreeMap<Ino, Orphan>, now: Instant) -> Vec<Ino> {
        let grace = self.grace;
        self.handed
            .retain(|ino, at| orphans.contains_key(ino) && now.duration_since(*at) < grace);
        let mut found = Vec::new();
        for (ino, orphan) in orphans {
            if found.len() == HANDED_PER_REPLY_MAX {
                break;
            }
            let last = self
                .heard
                .get(&orphan.owner)
                .map_or(self.started, |t| (*t).max(self.started));
            if now.duration_since(last) >= grace && !self.handed.contains_key(ino) {
                found.push(*ino);
            }
        }
        for ino in &found {
            self.handed.insert(*ino, now);
        }
        found
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn orphans(owners: &[(Ino, &str)]) -> BTreeMap<Ino, Orphan> {
        owners
            .iter()
            .map(|(ino, owner)| {
                (
                    *ino,
                    Orphan {
                        owner: (*owner).to_owned(),
                        since_ns: 0,
                    },
                )
            })
            .collect()
    }

    #[test]
    fn an_orphan_is_abandoned_once_its_holder_is_unheard_for_the_grace_period() {
        let t0 = Instant::now();
        let grace = Duration::from_secs(30);
        let mut watch = OrphanWatch::new(grace, t0);
        let held = orphans(&[(7, "a@tcp"), (8, "b@tcp")]);
        watch.heard("a@tcp", t0 + Duration::from_secs(10));
        // Nobody is unheard for the grace period before the service has run that long.
        assert_eq!(
            watch.abandoned(&held, t0 + Duration::from_secs(29)),
            Vec::<Ino>::new()
        );
        // b was never heard from: its orphan is abandoned a grace period after the start.
        assert_eq!(
            watch.abandoned(&held, t0 + Duration::from_secs(30)),
            vec![8]
        );
        // a keeps talking: its orphan stays. b's, handed out once, is not handed out again
        // within the grace period; it is after it (its cleaner may have died).
        watch.heard("a@tcp", t0 + Duration::from_secs(35));
        assert_eq!(
            watch.abandoned(&held, t0 + Duration::from_secs(59)),
            Vec::<Ino>::new()
        );
        assert_eq!(
            watch.abandoned(&held, t0 + Duration::from_secs(61)),
            vec![8]
        );
        // a falls silent.
        assert_eq!(
            watch.abandoned(&held, t0 + Duration::from_secs(65)),
            vec![7]
        );
    }

    #[test]
    fn a_reply_hands_out_a_bounded_number_and_gone_orphans_are_forgotten() {
        let t0 = Instant::now();
        let mut watch = OrphanWatch::new(Duration::from_secs(1), t0);
        let many: Vec<(Ino, &str)> = (0..100).map(|i| (i, "gone@tcp")).collect();
        let held = orphans(&many);
        let later = t0 + Duration::from_secs(2);
        let first = watch.abandoned(&held, later);
        assert_eq!(first.len(), HANDED_PER_REPLY_MAX);
        let second = watch.abandoned(&held, later);
        assert_eq!(
            second.len(),
            100 - HANDED_PER_REPLY_MAX,
            "the rest, not the same"
        );
        assert!(first.iter().all(|i| !second.contains(i)));
        watch.abandoned(&BTreeMap::new(), later);
        assert!(watch.handed.is_empty(), "dropped orphans are forgotten");
    }

    #[test]
    fn the_clients_remembered_are_bounded() {
        let t0 = Instant::now();
        let mut watch = OrphanWatch::new(Duration::from_secs(1), t0);
        for i in 0..HEARD_CLIENTS_MAX + 10 {
            watch.heard(&format!("{i}@tcp"), t0 + Duration::from_millis(i as u64));
        }
        assert_eq!(watch.heard.len(), HEARD_CLIENTS_MAX);
        assert!(!watch.heard.contains_key("0@tcp"), "the oldest went first");
    }
}
