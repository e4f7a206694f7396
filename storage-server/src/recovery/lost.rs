//! `LostRanges`: the bytes an unclean restart cut from a target, until a replay writes them
//! again — and, if none does, the bytes that are lost, so that no reader is served what recovery
//! dropped as if nothing happened.
//!
//! In async mode a write is acknowledged once its data is on disk, before its journal record
//! commits. A crash then leaves object files longer than their committed size, and recovery
//! cuts them back ([`crate::ost`] startup, step 4): the clients that were told "written" keep
//! those writes and replay them. A client that never replays them — it exited, crashed, or
//! came back with no memory of them — is evicted, and its writes are gone. Without this core
//! the target would then serve a shorter object, or zeros, and nobody would know.
//!
//! The rules, per object:
//!
//! - **Cut** (at startup, before the cut is made): the data extents between the committed size
//!   and the file's end become *pending*: somebody may replay them.
//! - **Written**: a write (a replay, or any later write) over a range removes it from pending
//!   and from lost: the bytes there are whatever that write put, and it was acknowledged or
//!   refused on its own. The record is rewritten for a change to either: a replay that
//!   commits and then meets another crash before its window closes must not be found pending
//!   again by the next start, which would mark it lost if that window evicted anyone. (If the
//!   replay had not committed, that start cuts its bytes again and they are pending anew.)
//! - **Punched** to a size: nothing at or past it is pending or lost any more. **Destroyed**:
//!   nothing of the object is.
//! - **Window closed**: if the window *may have dropped acknowledged writes* — it evicted a
//!   client, a client came back without the writes it had been told were done, or a replay
//!   could not be executed — every range still pending becomes *lost*. If not, every client
//!   that held acknowledged writes replayed them all, so what is left pending was never
//!   acknowledged (a write the crash caught before its reply: its client resends it, or was
//!   told it failed), and it is forgotten.
//! - A **read** or a **size** that touches a lost range is refused, naming the ranges.
//!
//! Lost ranges stay until a write covers them, a punch cuts them off, or the object is
//! destroyed: the file is marked until someone rewrites or removes it, across restarts (the
//! runtime keeps [`LostRanges::encode`] in the target's `lost` file).
//!
//! Pure: no files, no clocks. The target feeds it events and persists what it returns.

use std::collections::BTreeMap;
use std::fmt;

use crate::ids::ObjectId;

/// Most separate ranges kept per object and state; beyond it the ranges are merged into the
/// span that covers them all, which only ever says more is lost, never less.
pub const RANGES_PER_OBJECT_MAX: usize = 64;

/// A byte range `[start, end)` of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ByteRange {
    /// First byte.
    pub start: u64,
    /// One past the last byte.
    pub end: u64,
}

impl ByteRange {
    /// `[start, end)`; empty when `end <= start`.
    pub fn new(start: u64, end: u64) -> ByteRange {
        ByteRange {
            start,
            end: end.max(start),
        }
    }

    /// Its length in bytes.
    pub fn len(&self) -> u64 {
        self.end - self.start
    }

    /// True when it holds no byte.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }
}

impl fmt::Display for ByteRange {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "[{}, {})", self.start, self.end)
    }
}

/// Sorted, disjoint, non-adjacent, non-empty ranges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct RangeSet(Vec<ByteRange>);

impl RangeSet {
    fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    fn bytes(&self) -> u64 {
        self.0.iter().map(ByteRange::len).sum()
    }

    /// Adds `range`, merging what it touches; past [`RANGES_PER_OBJECT_MAX`] ranges, merges
    /// everything into one span.
    fn insert(&mut self, range: ByteRange) {
        if range.is_empty() {
            return;
        }
        let mut merged = range;
        let mut kept = Vec::with_capacity(self.0.len() + 1);
        for &r in &self.0 {
            if r.end < merged.start || r.start > merged.end {
                kept.push(r);
            } else {
                merged = ByteRange::new(merged.start.min(r.start), merged.end.max(r.end));
            }
        }
        let at = kept.partition_point(|r| r.start < merged.start);
        kept.insert(at, merged);
        if kept.len() > RANGES_PER_OBJECT_MAX {
            let span = ByteRange::new(kept[0].start, kept[kept.len() - 1].end);
            kept = vec![span];
        }
        self.0 = kept;
        self.check();
    }

    /// Removes `range`; true if anything was removed.
    fn remove(&mut self, range: ByteRange) -> bool {
        if range.is_empty() {
            return false;
        }
        let mut changed = false;
        let mut kept = Vec::with_capacity(self.0.len() + 1);
        for &r in &self.0 {
            if r.end <= range.start || r.start >= range.end {
                kept.push(r);
                continue;
            }
            changed = true;
            let before = ByteRange::new(r.start, range.start);
            let after = ByteRange::new(range.end, r.end);
            for part in [before, after] {
                if !part.is_empty() {
                    kept.push(part);
                }
            }
        }
        self.0 = kept;
        self.check();
        changed
    }

    /// The parts of `range` it holds.
    fn within(&self, range: ByteRange) -> Vec<ByteRange> {
        self.0
            .iter()
            .filter(|r| r.end > range.start && r.start < range.end)
            .map(|r| ByteRange::new(r.start.max(range.start), r.end.min(range.end)))
            .collect()
    }

    fn check(&self) {
        for pair in self.0.windows(2) {
            assert!(pair[0].end < pair[1].start, "ranges sorted and apart");
        }
        assert!(self.0.iter().all(|r| !r.is_empty()), "no empty range kept");
    }
}

/// What one object has pending and lost.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
struct ObjectRanges {
    pending: RangeSet,
    lost: RangeSet,
}

impl ObjectRanges {
    fn is_empty(&self) -> bool {
        self.pending.is_empty() && self.lost.is_empty()
    }
}

/// What closing a recovery window did.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct WindowOutcome {
    /// Ranges that became lost, by object.
    pub lost: Vec<(ObjectId, ByteRange)>,
    /// Bytes forgotten: cut, never replayed, and never acknowledged.
    pub forgotten_bytes: u64,
}

/// What a write, a punch or a destroy took out of an object's ranges.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Written {
    /// Some pending range is gone: a replay (or a later write) wrote it again.
    pub pending: bool,
    /// Some lost range is gone: its bytes were written again.
    pub lost: bool,
}

impl Written {
    /// Whether the record must be written again.
    pub fn changed(&self) -> bool {
        self.pending || self.lost
    }
}

/// A read or a size refused because of lost ranges.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostData {
    /// The object.
    pub object: ObjectId,
    /// Its lost ranges that the request touched.
    pub ranges: Vec<ByteRange>,
}

impl LostData {
    /// Bytes in the ranges.
    pub fn bytes(&self) -> u64 {
        self.ranges.iter().map(ByteRange::len).sum()
    }
}

/// Every object's pending and lost ranges on one target.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LostRanges {
    objects: BTreeMap<ObjectId, ObjectRanges>,
}

/// The first line of the persisted form.
const HEADER: &str = "# iopath lost ranges v1";

impl LostRanges {
    /// Nothing pending or lost.
    pub fn new() -> LostRanges {
        LostRanges::default()
    }

    /// True when nothing is pending or lost.
    pub fn is_empty(&self) -> bool {
        self.objects.is_empty()
    }

    /// True while some cut range waits for a replay.
    pub fn has_pending(&self) -> bool {
        self.objects.values().any(|o| !o.pending.is_empty())
    }

    /// The objects with anything pending or lost.
    pub fn objects(&self) -> Vec<ObjectId> {
        self.objects.keys().copied().collect()
    }

    /// Lost bytes on the target.
    pub fn lost_bytes(&self) -> u64 {
        self.objects.values().map(|o| o.lost.bytes()).sum()
    }

    /// Objects with lost bytes.
    pub fn lost_objects(&self) -> usize {
        self.objects.values().filter(|o| !o.lost.is_empty()).count()
    }

    /// Startup cut `range` of `object` (it held data past the committed size).
    pub fn cut(&mut self, object: ObjectId, range: ByteRange) {
        if range.is_empty() {
            return;
        }
        self.objects
            .entry(object)
            .or_default()
            .pending
            .insert(range);
    }

    /// A write put new bytes in `range` of `object`. Returns what changed: the runtime
    /// records the ranges again if anything did.
    pub fn written(&mut self, object: ObjectId, range: ByteRange) -> Written {
        let Some(ranges) = self.objects.get_mut(&object) else {
            return Written::default();
        };
        let written = Written {
            pending: ranges.pending.remove(range),
            lost: ranges.lost.remove(range),
        };
        self.prune(object);
        written
    }

    /// A client that came back to the window says it sent a write over `range` of `object`
    /// and never had an answer: nobody was told those bytes were written, so what startup cut
    /// there is not pending a replay — it is forgotten, and the client sends the write again
    /// once the window has closed. Without this, a window that evicts anyone would mark the
    /// bytes lost, and every read of them fail, though no write over them was ever
    /// acknowledged (the simulation, seed 5086626: a fyod's write whose reply the crash lost,
    /// and the fyod crashed itself before sending it again). Bytes already lost stay lost: an
    /// acknowledged write of someone else's may have been among them. Returns whether anything
    /// pending was forgotten.
    pub fn unanswered(&mut self, object: ObjectId, range: ByteRange) -> bool {
        let Some(ranges) = self.objects.get_mut(&object) else {
            return false;
        };
        let forgotten = ranges.pending.remove(range);
        self.prune(object);
        forgotten
    }

    /// `object` was cut or extended to `size_bytes`: nothing at or past it is pending or lost.
    /// Returns what changed.
    pub fn punched(&mut self, object: ObjectId, size_bytes: u64) -> Written {
        self.written(object, ByteRange::new(size_bytes, u64::MAX))
    }

    /// `object` is gone. Returns what changed.
    pub fn destroyed(&mut self, object: ObjectId) -> Written {
        self.objects
            .remove(&object)
            .map_or(Written::default(), |ranges| Written {
                pending: !ranges.pending.is_empty(),
                lost: !ranges.lost.is_empty(),
            })
    }

    /// A replay of `range` of `object`, a write acknowledged before the crash, could not run:
    /// those bytes are lost, whatever the cut found there (a crash may have dropped them before
    /// the cut saw them). A later write over them takes them out again.
    pub fn replay_failed(&mut self, object: ObjectId, range: ByteRange) {
        if range.is_empty() {
            return;
        }
        self.objects.entry(object).or_default().lost.insert(range);
    }

    /// The window learned that it dropped an acknowledged write (a replay failed, a client was
    /// evicted) before it closed: everything pending is lost now, as the close would make it,
    /// and a replay still to come takes its own range out again. Said at once so that the
    /// record says so before anything else runs: a crash before the window closes must not
    /// let the next start, whose own window may drop nothing, forget those ranges (found by
    /// the simulation, seed 3000230).
    pub fn writes_dropped(&mut self) -> WindowOutcome {
        self.window_closed(true)
    }

    /// The recovery window closed. `writes_may_be_lost`: it evicted a client, a client came
    /// back without its writes, or a replay could not run. Then whatever is still pending is
    /// lost; otherwise it was never acknowledged and is forgotten.
    pub fn window_closed(&mut self, writes_may_be_lost: bool) -> WindowOutcome {
        let mut outcome = WindowOutcome::default();
        for (&object, ranges) in &mut self.objects {
            let pending = std::mem::take(&mut ranges.pending);
            if writes_may_be_lost {
                for &range in &pending.0 {
                    ranges.lost.insert(range);
                    outcome.lost.push((object, range));
                }
            } else {
                outcome.forgotten_bytes += pending.bytes();
            }
        }
        self.objects.retain(|_, ranges| !ranges.is_empty());
        outcome
    }

    /// The lost ranges of `object` inside `range`, if any: a read of it must be refused.
    pub fn lost_in(&self, object: ObjectId, range: ByteRange) -> Option<LostData> {
        let ranges = self.objects.get(&object)?.lost.within(range);
        (!ranges.is_empty()).then_some(LostData { object, ranges })
    }

    /// All lost ranges of `object`, if any: its size is not what was acknowledged.
    pub fn lost_of(&self, object: ObjectId) -> Option<LostData> {
        self.lost_in(object, ByteRange::new(0, u64::MAX))
    }

    fn prune(&mut self, object: ObjectId) {
        if self
            .objects
            .get(&object)
            .is_some_and(ObjectRanges::is_empty)
        {
            self.objects.remove(&object);
        }
    }

    /// The persisted form: a header, then a line per range (`pending|lost OBJECT START END`),
    /// then `end COUNT CRC32` over the lines before it, so a damaged file is never taken for a
    /// shorter one.
    pub fn encode(&self) -> String {
        let mut text = format!("{HEADER}\n");
        let mut count = 0u64;
        for (object, ranges) in &self.objects {
            for (state, set) in [("pending", &ranges.pending), ("lost", &ranges.lost)] {
                for range in &set.0 {
                    text.push_str(&format!(
                        "{state} {} {} {}\n",
                        object.0, range.start, range.end
                    ));
                    count += 1;
                }
            }
        }
        let crc = crc32fast::hash(text.as_bytes());
        text.push_str(&format!("end {count} {crc:08x}\n"));
        text
    }

    /// Parses [`LostRanges::encode`]'s form; any defect is an error saying where.
    pub fn decode(text: &str) -> Result<LostRanges, String> {
        let body_end = text
            .trim_end_matches('\n')
            .rfind('\n')
            .map(|i| i + 1)
            .ok_or("no end line")?;
        let (body, end) = text.split_at(body_end);
        let mut lines = body.lines();
        if lines.next() != Some(HEADER) {
            return Err(format!("first line is not {HEADER:?}"));
        }
        let end_fields: Vec<&str> = end.split_whitespace().collect();
        let (count, crc) = match end_fields.as_slice() {
            ["end", count, crc] => (
                count.parse::<u64>().map_err(|_| "end line: bad count")?,
                u32::from_str_radix(crc, 16).map_err(|_| "end line: bad checksum")?,
            ),
            _ => return Err(format!("last line {end:?} is not `end COUNT CRC32`")),
        };
        if crc32fast::hash(body.as_bytes()) != crc {
            return Err("checksum does not match the lines before it".into());
        }
        let mut ranges = LostRanges::new();
        let mut seen = 0u64;
        for (number, line) in lines.enumerate() {
            let bad = |why: &str| format!("line {}: {why}: {line:?}", number + 2);
            let fields: Vec<&str> = line.split_whitespace().collect();
            let [state, object, start, end] = fields.as_slice() else {
                return Err(bad("expected `pending|lost OBJECT START END`"));
            };
            let object = ObjectId(object.parse().map_err(|_| bad("bad object"))?);
            let start: u64 = start.parse().map_err(|_| bad("bad start"))?;
            let end: u64 = end.parse().map_err(|_| bad("bad end"))?;
            if end <= start {
                return Err(bad("empty range"));
            }
            let entry = ranges.objects.entry(object).or_default();
            let range = ByteRange::new(start, end);
            match *state {
                "pending" => entry.pending.insert(range),
                "lost" => entry.lost.insert(range),
                _ => return Err(bad("unknown state")),
            }
            seen += 1;
        }
        if seen != count {
            return Err(format!("{seen} ranges, the end line says {count}"));
        }
        Ok(ranges)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const A: ObjectId = ObjectId(7);
    const B: ObjectId = ObjectId(8);
    const MIB: u64 = 1 << 20;

    fn r(start: u64, end: u64) -> ByteRange {
        ByteRange::new(start, end)
    }

    #[test]
    fn a_cut_nobody_replays_is_lost_when_writes_may_have_been_dropped() {
        let mut lost = LostRanges::new();
        lost.cut(A, r(0, MIB));
        assert!(lost.has_pending());
        assert_eq!(lost.lost_of(A), None, "pending is not lost yet");
        let outcome = lost.window_closed(true);
        assert_eq!(outcome.lost, vec![(A, r(0, MIB))]);
        assert!(!lost.has_pending());
        assert_eq!(
            lost.lost_in(A, r(4096, 8192)),
            Some(LostData {
                object: A,
                ranges: vec![r(4096, 8192)]
            })
        );
        assert_eq!(lost.lost_in(A, r(MIB, 2 * MIB)), None, "past the cut");
        assert_eq!(lost.lost_in(B, r(0, MIB)), None, "another object");
        assert_eq!(lost.lost_bytes(), MIB);
    }

    #[test]
    fn an_unanswered_write_takes_its_range_out_of_pending_but_not_out_of_lost() {
        let mut lost = LostRanges::new();
        lost.cut(A, r(0, 3 * 4096));
        lost.cut(B, r(0, 4096));
        assert!(lost.unanswered(A, r(0, 2 * 4096)), "its bytes were pending");
        assert!(
            !lost.unanswered(A, r(MIB, 2 * MIB)),
            "nothing pending there"
        );
        let outcome = lost.window_closed(true);
        assert_eq!(
            outcome.lost,
            vec![(A, r(2 * 4096, 3 * 4096)), (B, r(0, 4096))],
            "only what no unanswered write covered is lost"
        );
        assert_eq!(lost.lost_in(A, r(0, 2 * 4096)), None);
        // Once lost, an unanswered write does not clear it: whose bytes they were is unknown.
        assert!(!lost.unanswered(B, r(0, 4096)));
        assert_eq!(lost.lost_bytes(), 2 * 4096);
    }

    #[test]
    fn a_failed_replay_loses_its_range_and_what_is_pending_at_once() {
        let mut lost = LostRanges::new();
        lost.cut(A, r(0, MIB));
        // A replay of bytes the cut never saw (a crash dropped them first) fails.
        lost.replay_failed(B, r(MIB, 2 * MIB));
        let outcome = lost.writes_dropped();
        assert_eq!(outcome.lost, vec![(A, r(0, MIB))]);
        assert!(!lost.has_pending());
        assert_eq!(lost.lost_bytes(), 2 * MIB);
        // A replay still to come in the same window writes its range back.
        assert!(lost.written(A, r(0, MIB)).lost);
        assert_eq!(lost.lost_of(A), None);
        // A window that then closes with nothing dropped forgets nothing already lost: the
        // next start's window (seed 3000230) does not take it back.
        lost.window_closed(false);
        assert_eq!(lost.lost_of(B).map(|l| l.bytes()), Some(MIB));
    }

    #[test]
    fn a_cut_is_forgotten_when_every_client_replayed_everything() {
        let mut lost = LostRanges::new();
        lost.cut(A, r(0, MIB));
        let outcome = lost.window_closed(false);
        assert!(outcome.lost.is_empty());
        assert_eq!(outcome.forgotten_bytes, MIB);
        assert!(lost.is_empty());
    }

    #[test]
    fn replays_take_their_ranges_out_of_pending() {
        let mut lost = LostRanges::new();
        lost.cut(A, r(0, 3 * MIB));
        assert_eq!(
            lost.written(A, r(MIB, 2 * MIB)),
            Written {
                pending: true,
                lost: false
            },
            "a pending range changed, no lost one"
        );
        assert!(
            !lost.written(B, r(0, MIB)).changed(),
            "nothing of B was cut"
        );
        let outcome = lost.window_closed(true);
        assert_eq!(outcome.lost, vec![(A, r(0, MIB)), (A, r(2 * MIB, 3 * MIB))]);
    }

    #[test]
    fn a_rewrite_clears_lost_bytes_and_says_so() {
        let mut lost = LostRanges::new();
        lost.cut(A, r(0, 2 * MIB));
        lost.window_closed(true);
        assert!(lost.written(A, r(0, MIB)).lost);
        assert_eq!(
            lost.lost_of(A).map(|l| l.ranges),
            Some(vec![r(MIB, 2 * MIB)])
        );
        assert!(
            !lost.written(A, r(4 * MIB, 5 * MIB)).changed(),
            "elsewhere: no change"
        );
        assert!(lost.written(A, r(MIB - 1, 2 * MIB + 1)).lost);
        assert!(lost.is_empty(), "an object with nothing left is dropped");
    }

    #[test]
    fn a_punch_cuts_lost_ranges_off_and_a_destroy_forgets_the_object() {
        let mut lost = LostRanges::new();
        lost.cut(A, r(MIB, 3 * MIB));
        lost.cut(B, r(0, MIB));
        lost.window_closed(true);
        assert!(lost.punched(A, 2 * MIB).lost);
        assert_eq!(
            lost.lost_of(A).map(|l| l.ranges),
            Some(vec![r(MIB, 2 * MIB)])
        );
        assert!(!lost.punched(A, 5 * MIB).changed(), "growing cuts nothing");
        assert!(lost.destroyed(B).lost);
        assert!(!lost.destroyed(B).changed(), "gone already");
        assert_eq!(lost.lost_objects(), 1);
    }

    #[test]
    fn ranges_merge_and_split_exactly() {
        let mut set = RangeSet::default();
        set.insert(r(10, 20));
        set.insert(r(30, 40));
        set.insert(r(20, 30)); // touching both: one range
        assert_eq!(set.0, vec![r(10, 40)]);
        assert!(set.remove(r(15, 25)));
        assert_eq!(set.0, vec![r(10, 15), r(25, 40)]);
        assert!(!set.remove(r(15, 25)), "already gone");
        assert!(!set.remove(r(0, 0)), "an empty range removes nothing");
        set.insert(r(0, 0));
        assert_eq!(
            set.0,
            vec![r(10, 15), r(25, 40)],
            "an empty range adds nothing"
        );
        assert_eq!(set.within(r(12, 30)), vec![r(12, 15), r(25, 30)]);
        assert_eq!(set.bytes(), 20);
    }

    #[test]
    fn too_many_fragments_become_one_span_which_only_says_more() {
        let mut set = RangeSet::default();
        for i in 0..=RANGES_PER_OBJECT_MAX as u64 {
            set.insert(r(i * 10, i * 10 + 5));
        }
        assert_eq!(set.0, vec![r(0, RANGES_PER_OBJECT_MAX as u64 * 10 + 5)]);
    }

    #[test]
    fn the_persisted_form_round_trips_and_refuses_damage() {
        let mut lost = LostRanges::new();
        lost.cut(A, r(0, MIB));
        lost.window_closed(true);
        lost.cut(B, r(4096, 8192));
        let text = lost.encode();
        assert_eq!(LostRanges::decode(&text), Ok(lost.clone()));
        assert_eq!(
            LostRanges::decode(&LostRanges::new().encode()),
            Ok(LostRanges::new())
        );
        // One digit changed: the checksum catches it.
        let damaged = text.replacen("lost 7 0", "lost 7 1", 1);
        assert!(
            LostRanges::decode(&damaged)
                .unwrap_err()
                .contains("checksum")
        );
        // A line dropped, checksum recomputed by hand: the count catches it.
        let mut lines: Vec<&str> = text.lines().collect();
        lines.remove(1);
        let body = format!("{}\n", lines[..lines.len() - 1].join("\n"));
        let forged = format!("{body}end 2 {:08x}\n", crc32fast::hash(body.as_bytes()));
        assert!(
            LostRanges::decode(&forged)
                .unwrap_err()
                .contains("end line says 2")
        );
        assert!(LostRanges::decode("").is_err());
        assert!(LostRanges::decode("garbage\nend 0 0\n").is_err());
    }
}
