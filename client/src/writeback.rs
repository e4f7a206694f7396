//! [`Dirty`]: a file's written bytes that have not been sent yet — the write-back of small
//! writes, a pure core (no I/O, no clock).
//!
//! A write of a few KiB costs a round trip to a storage server and the server's write, where
//! the program's own cost is a copy. So a mount keeps small writes here, as a Lustre client
//! keeps dirty pages, and sends them later in as few RPCs as their offsets allow: adjacent and
//! overlapping writes merge into one extent (a later write's bytes win), and an extent is sent
//! whole, one RPC per object it touches. They are sent when the file's dirty bytes reach a
//! bound, and at every `fsync`, close, truncate, and read that touches them. Once sent, a write
//! is kept for replay by the OST client as any other.
//!
//! Until it is sent, a write lives only in this process's memory — as a page-cache write lives
//! only in a kernel's — and a crash of the process loses it; `fsync` and close are where a
//! program learns it reached the servers.

use std::collections::BTreeMap;

/// The dirty bytes of one file: extents by offset, never overlapping, never adjacent (adjacent
/// ones are merged).
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Dirty {
    extents: BTreeMap<u64, Vec<u8>>,
    bytes: u64,
}

impl Dirty {
    /// Nothing dirty.
    pub fn new() -> Dirty {
        Dirty::default()
    }

    /// Whether nothing is dirty.
    pub fn is_empty(&self) -> bool {
        self.extents.is_empty()
    }

    /// How many bytes are dirty.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// How many extents (the RPCs a flush sends at least).
    pub fn extents(&self) -> usize {
        self.extents.len()
    }

    /// The end of the last dirty byte: the file is at least this long.
    pub fn end(&self) -> u64 {
        self.extents
            .iter()
            .next_back()
            .map_or(0, |(offset, data)| offset + data.len() as u64)
    }

    /// `data` written at `offset`: merged with every extent it overlaps or touches, its bytes
    /// over theirs.
    pub fn write(&mut self, offset: u64, data: &[u8]) {
        if data.is_empty() {
            return;
        }
        let end = offset + data.len() as u64;
        // Every extent that overlaps or touches [offset, end].
        let touching: Vec<u64> = self
            .extents
            .range(..=end)
            .rev()
            .take_while(|(start, bytes)| *start + bytes.len() as u64 >= offset)
            .map(|(start, _)| *start)
            .collect();
        let mut start = offset;
        let mut stop = end;
        for s in &touching {
            start = start.min(*s);
            stop = stop.max(s + self.extents[s].len() as u64);
        }
        let mut merged = vec![0u8; (stop - start) as usize];
        for s in touching {
            let old = self.extents.remove(&s).expect("just found");
            self.bytes -= old.len() as u64;
            let at = (s - start) as usize;
            merged[at..at + old.len()].copy_from_slice(&old);
        }
        let at = (offset - start) as usize;
        merged[at..at + data.len()].copy_from_slice(data);
        self.bytes += merged.len() as u64;
        self.extents.insert(start, merged);
    }

    /// Whether any dirty byte lies in `[offset, offset + length)`.
    pub fn overlaps(&self, offset: u64, length: u64) -> bool {
        let end = offset.saturating_add(length);
        self.extents
            .range(..end)
            .next_back()
            .is_some_and(|(start, data)| start + data.len() as u64 > offset)
    }

    /// The file was cut (or extended) to `size_bytes`: dirty bytes past it are dropped.
    pub fn truncate(&mut self, size_bytes: u64) {
        let past: Vec<u64> = self
            .extents
            .range(..)
            .filter(|(start, data)| *start + data.len() as u64 > size_bytes)
            .map(|(start, _)| *start)
            .collect();
        for start in past {
            let mut data = self.extents.remove(&start).expect("just found");
            self.bytes -= data.len() as u64;
            if start < size_bytes {
                data.truncate((size_bytes - start) as usize);
                self.bytes += data.len() as u64;
                self.extents.insert(start, data);
            }
        }
    }

    /// Every extent, in offset order, to send; nothing is dirty after.
    pub fn take(&mut self) -> Vec<(u64, Vec<u8>)> {
        self.bytes = 0;
        std::mem::take(&mut self.extents).into_iter().collect()
    }

    /// Extents that could not be sent, back (a later write's bytes over them win).
    pub fn restore(&mut self, extents: Vec<(u64, Vec<u8>)>) {
        let newer = self.take();
        for (offset, data) in extents.into_iter().chain(newer) {
            self.write(offset, &data);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The bytes a model file holds after the same writes.
    fn model(writes: &[(u64, &[u8])]) -> BTreeMap<u64, u8> {
        let mut bytes = BTreeMap::new();
        for (offset, data) in writes {
            for (i, b) in data.iter().enumerate() {
                bytes.insert(offset + i as u64, *b);
            }
        }
        bytes
    }

    fn flatten(dirty: &Dirty) -> BTreeMap<u64, u8> {
        let mut bytes = BTreeMap::new();
        for (offset, data) in &dirty.extents {
            for (i, b) in data.iter().enumerate() {
                bytes.insert(offset + i as u64, *b);
            }
        }
        bytes
    }

    #[test]
    fn adjacent_and_overlapping_writes_merge_and_the_later_bytes_win() {
        let mut d = Dirty::new();
        d.write(4096, &[1; 4096]);
        d.write(0, &[2; 4096]);
        assert_eq!(d.extents(), 1, "adjacent: one extent, one RPC");
        d.write(10_000, &[3; 100]);
        assert_eq!(d.extents(), 2);
        d.write(8000, &[4; 2100]);
        assert_eq!(d.extents(), 1, "a write bridging two extents merges them");
        assert_eq!(d.bytes(), 10_100);
        assert_eq!(d.end(), 10_100);
        let expected = model(&[
            (4096, &[1; 4096]),
            (0, &[2; 4096]),
            (10_000, &[3; 100]),
            (8000, &[4; 2100]),
        ]);
        assert_eq!(flatten(&d), expected);
        assert!(d.overlaps(10_099, 1));
        assert!(!d.overlaps(10_100, 5));
        assert!(!d.overlaps(20_000, 5));
    }

    #[test]
    fn random_writes_agree_with_a_byte_map() {
        let mut state = 0x9E37_79B9_7F4A_7C15u64;
        let mut next = || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state
        };
        for _ in 0..50 {
            let mut d = Dirty::new();
            let mut writes: Vec<(u64, Vec<u8>)> = Vec::new();
            for _ in 0..40 {
                let offset = next() % 5000;
                let len = 1 + next() % 700;
                let byte = (next() % 251) as u8;
                let data = vec![byte; len as usize];
                d.write(offset, &data);
                writes.push((offset, data));
                let refs: Vec<(u64, &[u8])> =
                    writes.iter().map(|(o, b)| (*o, b.as_slice())).collect();
                assert_eq!(flatten(&d), model(&refs));
                assert_eq!(d.bytes(), flatten(&d).len() as u64);
                // Never overlapping, never adjacent.
                let mut last_end = None;
                for (start, data) in &d.extents {
                    if let Some(end) = last_end {
                        assert!(*start > end, "extents touch or overlap");
                    }
                    last_end = Some(start + data.len() as u64);
                }
            }
        }
    }

    #[test]
    fn truncate_cuts_dirty_bytes_and_take_and_restore_keep_newer_writes() {
        let mut d = Dirty::new();
        d.write(0, &[1; 100]);
        d.write(200, &[2; 100]);
        d.truncate(250);
        assert_eq!((d.bytes(), d.end()), (150, 250));
        d.truncate(50);
        assert_eq!((d.bytes(), d.end(), d.extents()), (50, 50, 1));
        let sent = d.take();
        assert!(d.is_empty() && d.bytes() == 0);
        d.write(10, &[9; 5]);
        // The send failed: back, under the write made since.
        d.restore(sent);
        let flat = flatten(&d);
        assert_eq!(flat.len(), 50);
        assert_eq!(flat[&10], 9);
        assert_eq!(flat[&0], 1);
    }
}
