//! The data oracle, a pure core: the history of every write the clients issued, and the
//! check of every read against it.
//!
//! Each object has one writer, which issues one request at a time, so its writes have an
//! order. For every word a read returns, the allowed values are:
//!
//! - the word of the **last acknowledged** write covering it — an acknowledged write must read
//!   back (in async mode too: the client kept it and replays it after a crash);
//! - the word of any covering write issued **after** that one and not acknowledged (it failed,
//!   but the server may have executed it before its reply was lost);
//! - where no acknowledged write covers it: zeros (a hole), or nothing (past the end of the
//!   object), or any covering write's word.
//!
//! Anything else — a word no write put there, an older version over a newer acknowledged one,
//! an acknowledged word missing — is a violation. A write the client was told was lost (its
//! server evicted it in recovery: the protocol's stated limit) counts as not acknowledged,
//! and so does every other write of that object's server life before it (the client was
//! told "writes were lost", not which bytes).
//!
//! A read the server refuses because it touches bytes it marked lost (its recovery window
//! evicted a client, and what its startup cut could have been acknowledged) is checked too:
//! the bytes it names must hold no acknowledged write its client was not told of. A window
//! that evicts anyone marks every byte its startup cut, which may include a write that failed
//! (the crash took its reply) — an over-statement the server makes on purpose, and allowed.
//!
//! A write through a fyod that its client was told may not have been kept — acknowledged,
//! not yet fsync'd, and then the handle it went through was gone (EBADF: the fyod crashed, or
//! the handle broke) — counts as a write that failed: it may or may not read back, and
//! a read of its object may fail.

use std::collections::BTreeMap;

use crate::pattern::{self, ObjectKey, WORD_BYTES};

/// What became of one write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Outcome {
    /// Sent; no answer yet.
    InFlight,
    /// The client was told it succeeded.
    Acknowledged,
    /// The client was told it failed (it may still have been executed).
    Failed,
    /// Acknowledged, then reported lost by the server's recovery (eviction): excused.
    ReportedLost,
    /// Acknowledged through a fyod, then its handle was gone before an fsync: it may or may
    /// not have been kept, as if it had failed.
    Unsure,
}

/// One write in an object's history.
#[derive(Debug, Clone)]
struct Write {
    version: u32,
    first_word: u64,
    words: u64,
    outcome: Outcome,
}

impl Write {
    fn covers(&self, word: u64) -> bool {
        (self.first_word..self.first_word + self.words).contains(&word)
    }
}

/// A read that returned what no history allows.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Violation {
    /// The object read.
    pub key: ObjectKey,
    /// The byte offset of the first bad word.
    pub offset: u64,
    /// What was wrong, for a person.
    pub what: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{} at byte {}: {}", self.key, self.offset, self.what)
    }
}

/// Every object's writes, in the order they were issued.
#[derive(Debug, Default)]
pub struct Oracle {
    objects: BTreeMap<ObjectKey, Vec<Write>>,
}

impl Oracle {
    /// An oracle that knows of no writes.
    pub fn new() -> Oracle {
        Oracle::default()
    }

    /// A write of `words` words at byte `offset` of `key` is about to be sent; its version
    /// (what its bytes are made from: [`pattern::bytes`]).
    pub fn begin_write(&mut self, key: ObjectKey, offset: u64, words: u64) -> u32 {
        assert_eq!(offset % WORD_BYTES, 0, "writes are whole words");
        let writes = self.objects.entry(key).or_default();
        let version = writes.len() as u32 + 1;
        writes.push(Write {
            version,
            first_word: offset / WORD_BYTES,
            words,
            outcome: Outcome::InFlight,
        });
        version
    }

    /// The client heard how write `version` of `key` ended.
    pub fn end_write(&mut self, key: ObjectKey, version: u32, outcome: Outcome) {
        if let Some(write) = self.write_mut(key, version) {
            write.outcome = outcome;
        }
    }

    /// The client was told acknowledged writes of `key` were lost: every acknowledged write
    /// of it is excused (see the module documentation).
    pub fn writes_reported_lost(&mut self, key: ObjectKey) {
        for write in self.objects.entry(key).or_default() {
            if write.outcome == Outcome::Acknowledged {
                write.outcome = Outcome::ReportedLost;
            }
        }
    }

    /// The client was told that writes `versions` of `key`, acknowledged, may not have been
    /// kept: each that is still acknowledged counts as one that failed.
    pub fn writes_maybe_lost(&mut self, key: ObjectKey, versions: &[u32]) {
        for version in versions {
            if let Some(write) = self.write_mut(key, *version)
                && write.outcome == Outcome::Acknowledged
            {
                write.outcome = Outcome::Unsure;
            }
        }
    }

    /// Whether some acknowledged write of `key` was reported lost, or may not have been kept:
    /// a read of it may fail.
    pub fn has_reported_loss(&self, key: ObjectKey) -> bool {
        self.objects.get(&key).is_some_and(|w| {
            w.iter()
                .any(|w| matches!(w.outcome, Outcome::ReportedLost | Outcome::Unsure))
        })
    }

    /// Writes acknowledged so far, over every object.
    pub fn acknowledged(&self) -> usize {
        self.objects
            .values()
            .flatten()
            .filter(|w| w.outcome == Outcome::Acknowledged)
            .count()
    }

    fn write_mut(&mut self, key: ObjectKey, version: u32) -> Option<&mut Write> {
        self.objects
            .get_mut(&key)?
            .get_mut(version.checked_sub(1)? as usize)
    }

    /// Checks bytes of `key` a server refused to serve, saying they were lost: `ranges`, as
    /// `[start, end)` byte ranges. None may hold the last acknowledged write of a word — that
    /// write is gone, and its client was not told.
    pub fn check_lost(&self, key: ObjectKey, ranges: &[(u64, u64)]) -> Result<(), Violation> {
        let empty = Vec::new();
        let writes = self.objects.get(&key).unwrap_or(&empty);
        for &(start, end) in ranges {
            for word in start / WORD_BYTES..end.div_ceil(WORD_BYTES) {
                let acknowledged = writes
                    .iter()
                    .rfind(|w| w.covers(word) && w.outcome == Outcome::Acknowledged);
                if let Some(write) = acknowledged {
                    return Err(violation(
                        key,
                        word,
                        format!(
                            "the server says acknowledged write v{}'s bytes were lost, and its \
                             client was not told",
                            write.version
                        ),
                    ));
                }
            }
        }
        Ok(())
    }

    /// Checks `bytes` read at byte `offset` of `key`, where `asked` bytes were asked for
    /// (fewer came back at the end of the object).
    pub fn check_read(
        &self,
        key: ObjectKey,
        offset: u64,
        asked: u64,
        bytes: &[u8],
    ) -> Result<(), Violation> {
        assert_eq!(offset % WORD_BYTES, 0, "reads are whole words");
        let empty = Vec::new();
        let writes = self.objects.get(&key).unwrap_or(&empty);
        let first_word = offset / WORD_BYTES;
        for i in 0..asked / WORD_BYTES {
            let word = first_word + i;
            let start = (i * WORD_BYTES) as usize;
            let got = bytes
                .get(start..start + WORD_BYTES as usize)
                .map(|b| u64::from_le_bytes(b.try_into().expect("a word is 8 bytes")));
            if bytes.len() > start && got.is_none() {
                return Err(violation(key, word, "a read ended inside a word".into()));
            }
            check_word(key, writes, word, got)?;
        }
        Ok(())
    }
}

/// Checks one word read (`None`: past the end of the object) against the writes covering it.
fn check_word(
    key: ObjectKey,
    writes: &[Write],
    word: u64,
    got: Option<u64>,
) -> Result<(), Violation> {
    let covering: Vec<&Write> = writes.iter().filter(|w| w.covers(word)).collect();
    let last_acknowledged = covering
        .iter()
        .rposition(|w| w.outcome == Outcome::Acknowledged);
    let excused = covering.iter().any(|w| w.outcome == Outcome::ReportedLost);
    let candidates = match last_acknowledged {
        Some(last) => &covering[last..],
        None => &covering[..],
    };
    let hole_allowed = last_acknowledged.is_none() || excused;
    let matches = |value: u64| {
        if excused {
            covering
                .iter()
                .any(|w| pattern::word(key, w.version, word) == value)
        } else {
            candidates
                .iter()
                .any(|w| pattern::word(key, w.version, word) == value)
        }
    };
    let ok = match got {
        None | Some(0) => hole_allowed,
        Some(value) => matches(value),
    };
    if ok {
        return Ok(());
    }
    let expected = match last_acknowledged {
        Some(last) => format!(
            "acknowledged write v{} (or a later unacknowledged one)",
            covering[last].version
        ),
        None => "a hole or one of the writes issued there".into(),
    };
    let found = match got {
        None => "the object ended before it".to_string(),
        Some(0) => "zeros".to_string(),
        Some(value) => match writes
            .iter()
            .find(|w| pattern::word(key, w.version, word) == value)
        {
            Some(w) => format!("v{}'s word ({:?})", w.version, w.outcome),
            None => format!("{value:#018x}, which no write put there"),
        },
    };
    Err(violation(
        key,
        word,
        format!("expected {expected}, read {found}"),
    ))
}

fn violation(key: ObjectKey, word: u64, what: String) -> Violation {
    Violation {
        key,
        offset: word * WORD_BYTES,
        what,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: ObjectKey = ObjectKey {
        target: 0,
        object: 1,
    };

    fn written(oracle: &mut Oracle, offset: u64, words: u64, outcome: Outcome) -> Vec<u8> {
        let version = oracle.begin_write(KEY, offset, words);
        oracle.end_write(KEY, version, outcome);
        pattern::bytes(KEY, version, offset, words)
    }

    #[test]
    fn an_acknowledged_write_must_read_back_and_a_hole_before_it_is_fine() {
        let mut oracle = Oracle::new();
        let data = written(&mut oracle, 64, 8, Outcome::Acknowledged);
        let mut read = vec![0u8; 64];
        read.extend_from_slice(&data);
        assert_eq!(oracle.check_read(KEY, 0, 128, &read), Ok(()));
        let lost = oracle.check_read(KEY, 0, 128, &[0u8; 64]).unwrap_err();
        assert!(lost.what.contains("the object ended"), "{lost}");
        let zeros = oracle.check_read(KEY, 64, 64, &[0u8; 64]).unwrap_err();
        assert!(zeros.what.contains("read zeros"), "{zeros}");
    }

    #[test]
    fn an_older_version_over_a_newer_acknowledged_one_is_caught() {
        let mut oracle = Oracle::new();
        let old = written(&mut oracle, 0, 4, Outcome::Acknowledged);
        let new = written(&mut oracle, 0, 4, Outcome::Acknowledged);
        assert_eq!(oracle.check_read(KEY, 0, 32, &new), Ok(()));
        let stale = oracle.check_read(KEY, 0, 32, &old).unwrap_err();
        assert!(stale.what.contains("v1's word"), "{stale}");
    }

    #[test]
    fn a_failed_write_after_the_last_acknowledged_one_may_or_may_not_have_landed() {
        let mut oracle = Oracle::new();
        let acknowledged = written(&mut oracle, 0, 4, Outcome::Acknowledged);
        let failed = written(&mut oracle, 0, 4, Outcome::Failed);
        assert_eq!(oracle.check_read(KEY, 0, 32, &acknowledged), Ok(()));
        assert_eq!(oracle.check_read(KEY, 0, 32, &failed), Ok(()));
    }

    #[test]
    fn bytes_no_write_put_there_are_caught() {
        let mut oracle = Oracle::new();
        written(&mut oracle, 0, 4, Outcome::Failed);
        let mut garbage = pattern::bytes(KEY, 1, 0, 4);
        garbage[9] ^= 0x10;
        let flipped = oracle.check_read(KEY, 0, 32, &garbage).unwrap_err();
        assert_eq!(flipped.offset, 8);
        assert!(flipped.what.contains("no write put there"), "{flipped}");
    }

    #[test]
    fn bytes_marked_lost_may_not_hold_an_acknowledged_write_nobody_was_told_of() {
        let mut oracle = Oracle::new();
        written(&mut oracle, 0, 4, Outcome::Acknowledged);
        written(&mut oracle, 64, 4, Outcome::Failed);
        assert_eq!(
            oracle.check_lost(KEY, &[(64, 96)]),
            Ok(()),
            "a failed write's bytes"
        );
        assert_eq!(
            oracle.check_lost(KEY, &[(128, 4096)]),
            Ok(()),
            "never written"
        );
        let untold = oracle.check_lost(KEY, &[(16, 80)]).unwrap_err();
        assert_eq!(untold.offset, 16);
        assert!(untold.what.contains("v1"), "{untold}");
        oracle.writes_reported_lost(KEY);
        assert_eq!(oracle.check_lost(KEY, &[(0, 96)]), Ok(()), "told");
    }

    #[test]
    fn a_write_that_may_not_have_been_kept_may_read_back_or_not_but_an_fsynced_one_must() {
        let mut oracle = Oracle::new();
        let synced = written(&mut oracle, 0, 4, Outcome::Acknowledged);
        let unsure = written(&mut oracle, 0, 4, Outcome::Acknowledged);
        oracle.writes_maybe_lost(KEY, &[2]);
        assert!(oracle.has_reported_loss(KEY));
        assert_eq!(oracle.check_read(KEY, 0, 32, &synced), Ok(()));
        assert_eq!(oracle.check_read(KEY, 0, 32, &unsure), Ok(()));
        // The write before it was fsync'd: a hole there is still a loss.
        assert!(oracle.check_read(KEY, 0, 32, &[0u8; 32]).is_err());
    }

    #[test]
    fn a_reported_loss_excuses_the_missing_bytes() {
        let mut oracle = Oracle::new();
        written(&mut oracle, 0, 4, Outcome::Acknowledged);
        assert!(oracle.check_read(KEY, 0, 32, &[]).is_err());
        oracle.writes_reported_lost(KEY);
        assert!(oracle.has_reported_loss(KEY));
        assert_eq!(oracle.check_read(KEY, 0, 32, &[]), Ok(()));
    }
}
