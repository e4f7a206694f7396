//! The UFS cache: a few 128 KiB blocks of files a UFS fyod serves — blocks read back from
//! storage (a read cache) and small writes held back before they go to storage
//! (write-behind). It stands in for TOS's memory-mapped file cache on the fyod's service node,
//! which made "UFS preferable to PFS when making small or unaligned file requests, especially
//! if the data will be re-used" (§2.3). PFS has no such cache ("there is no file system
//! buffering").
//!
//! Rules, each a decision this struct returns and the runtime carries out:
//!
//! - A write of a whole block goes **through** to storage; the block is then kept clean.
//! - A smaller write is **absorbed**: copied into the block and marked dirty, and acknowledged
//!   from the fyod's memory, as a Unix write lands in the page cache. A block's dirty bytes
//!   are one range: a write that neither overlaps nor touches it first **flushes** the old
//!   range. A block whose dirty range becomes the whole block is flushed at once.
//! - At most `dirty_max` blocks are dirty. A small write that would dirty one more goes
//!   through instead, so the bound is never exceeded and no flush ever concerns another file.
//! - Only clean blocks are evicted (least recently used first); `dirty_max < blocks_max`
//!   leaves room for one.
//! - fsync, close, size and the release of a MUNIX token flush the file's dirty blocks; a
//!   read that misses flushes its block's dirty bytes before it goes to storage.
//!
//! Every flush names only the file the caller is working on, and the runtime serialises a
//! file's UFS calls on the fyod, so storage sees each file's writes in the order they were
//! made. What write-behind gives up is the same as Unix's: a fyod that dies loses what it
//! had not flushed.

use std::collections::HashMap;
use std::ops::Range;

use bytes::Bytes;

/// Names a file in the cache (its inode number).
pub type FileKey = u64;

/// Bytes the runtime must write to storage: `data` at `offset_bytes` of `file`'s object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Flush {
    /// The file.
    pub file: FileKey,
    /// Where in the file (and its one object) the bytes go.
    pub offset_bytes: u64,
    /// The bytes.
    pub data: Bytes,
}

/// What to do with a write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteDecision {
    /// Write it to storage now, then tell the cache with [`UfsCache::wrote`].
    Through,
    /// It is in the cache; acknowledge it once the returned flushes are done.
    Absorbed,
}

/// What the cache has done, for the fyod's counters.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// Reads served from the cache.
    pub hits: u64,
    /// Reads that had to go to storage.
    pub misses: u64,
    /// Writes absorbed (acknowledged before reaching storage).
    pub absorbed: u64,
    /// Flushes handed to the runtime.
    pub flushes: u64,
}

#[derive(Debug)]
struct Block {
    /// `block_bytes` long; bytes outside `valid` mean nothing.
    data: Vec<u8>,
    /// The bytes known to equal storage, or newer (dirty). Always contains `dirty`.
    valid: Range<u64>,
    /// Bytes written here and not yet flushed.
    dirty: Option<Range<u64>>,
    /// When it was last used, on the cache's own counter.
    used: u64,
}

/// The cache. See the module documentation for its rules.
#[derive(Debug)]
pub struct UfsCache {
    block_bytes: u64,
    blocks_max: usize,
    dirty_max: usize,
    blocks: HashMap<(FileKey, u64), Block>,
    dirty_count: usize,
    clock: u64,
    counters: CacheCounters,
}

/// Whether two ranges overlap or touch end to start.
fn touches(a: &Range<u64>, b: &Range<u64>) -> bool {
    a.start <= b.end && b.start <= a.end
}

fn union(a: &Range<u64>, b: &Range<u64>) -> Range<u64> {
    a.start.min(b.start)..a.end.max(b.end)
}

impl UfsCache {
    /// A cache of at most `blocks_max` blocks of `block_bytes`, at most `dirty_max` of them
    /// dirty (0: no write-behind). Needs `dirty_max < blocks_max` unless both are 0.
    pub fn new(block_bytes: u64, blocks_max: u32, dirty_max: u32) -> UfsCache {
        assert!(block_bytes > 0, "blocks hold bytes");
        assert!(
            dirty_max < blocks_max || (blocks_max == 0 && dirty_max == 0),
            "dirty blocks ({dirty_max}) must leave a clean one to evict ({blocks_max} blocks)"
        );
        UfsCache {
            block_bytes,
            blocks_max: blocks_max as usize,
            dirty_max: dirty_max as usize,
            blocks: HashMap::new(),
            dirty_count: 0,
            clock: 0,
            counters: CacheCounters::default(),
        }
    }

    /// The block size.
    pub fn block_bytes(&self) -> u64 {
        self.block_bytes
    }

    /// What the cache has done so far.
    pub fn counters(&self) -> CacheCounters {
        self.counters
    }

    /// Blocks held, and how many are dirty.
    pub fn occupancy(&self) -> (usize, usize) {
        (self.blocks.len(), self.dirty_count)
    }

    fn tick(&mut self) -> u64 {
        self.clock += 1;
        self.clock
    }

    fn check_range(&self, range: &Range<u64>) {
        assert!(
            range.start < range.end && range.end <= self.block_bytes,
            "range {range:?} inside a block of {} bytes",
            self.block_bytes
        );
    }

    fn flush_of(&mut self, file: FileKey, block: u64, range: Range<u64>) -> Flush {
        let data = &self.blocks[&(file, block)].data;
        self.counters.flushes += 1;
        Flush {
            file,
            offset_bytes: block * self.block_bytes + range.start,
            data: Bytes::copy_from_slice(&data[range.start as usize..range.end as usize]),
        }
    }

    /// Takes a block's dirty range as a flush (its bytes stay cached, now clean).
    fn take_dirty_range(&mut self, file: FileKey, block: u64) -> Option<Flush> {
        let range = self.blocks.get_mut(&(file, block))?.dirty.take()?;
        self.dirty_count -= 1;
        Some(self.flush_of(file, block, range))
    }

    /// Makes room for one more block by evicting the least recently used clean one; false if
    /// there is no room and no clean block.
    fn make_room(&mut self) -> bool {
        if self.blocks.len() < self.blocks_max {
            return true;
        }
        let victim = self
            .blocks
            .iter()
            .filter(|(_, b)| b.dirty.is_none())
            .min_by_key(|(_, b)| b.used)
            .map(|(key, _)| *key);
        match victim {
            Some(key) => {
                self.blocks.remove(&key);
                true
            }
            None => false,
        }
    }

    /// A read of `range` of a block: the bytes if the cache holds them all.
    pub fn read(&mut self, file: FileKey, block: u64, range: Range<u64>) -> Option<Bytes> {
        self.check_range(&range);
        let now = self.tick();
        let hit = self.blocks.get_mut(&(file, block)).and_then(|b| {
            (b.valid.start <= range.start && range.end <= b.valid.end).then(|| {
                b.used = now;
                Bytes::copy_from_slice(&b.data[range.start as usize..range.end as usize])
            })
        });
        match hit {
            Some(_) => self.counters.hits += 1,
            None => self.counters.misses += 1,
        }
        hit
    }

    /// A read missed: the block's dirty bytes, which must reach storage before the read
    /// goes there.
    pub fn take_dirty(&mut self, file: FileKey, block: u64) -> Option<Flush> {
        self.take_dirty_range(file, block)
    }

    /// What storage returned for the whole block (fewer bytes at the end of the object).
    /// The caller took the block's dirty bytes first.
    pub fn fill(&mut self, file: FileKey, block: u64, data: &[u8]) {
        assert!(data.len() as u64 <= self.block_bytes, "at most a block");
        let now = self.tick();
        if !self.blocks.contains_key(&(file, block)) && !self.make_room() {
            return;
        }
        let block_bytes = self.block_bytes as usize;
        let entry = self.blocks.entry((file, block)).or_insert_with(|| Block {
            data: vec![0; block_bytes],
            valid: 0..0,
            dirty: None,
            used: now,
        });
        assert!(entry.dirty.is_none(), "a read takes the dirty bytes first");
        entry.data[..data.len()].copy_from_slice(data);
        entry.valid = 0..data.len() as u64;
        entry.used = now;
    }

    /// A write of `data` at `offset_bytes` of a block: through to storage, or absorbed. The
    /// returned flushes must reach storage before the write is acknowledged (they hold older
    /// bytes of the same file).
    pub fn write(
        &mut self,
        file: FileKey,
        block: u64,
        offset_bytes: u64,
        data: &[u8],
    ) -> (WriteDecision, Vec<Flush>) {
        let range = offset_bytes..offset_bytes + data.len() as u64;
        self.check_range(&range);
        let through = (WriteDecision::Through, Vec::new());
        if range.end - range.start == self.block_bytes || self.dirty_max == 0 {
            return through;
        }
        let key = (file, block);
        let already_dirty = self.blocks.get(&key).is_some_and(|b| b.dirty.is_some());
        if !already_dirty && self.dirty_count >= self.dirty_max {
            return through;
        }
        if !self.blocks.contains_key(&key) && !self.make_room() {
            return through;
        }
        let now = self.tick();
        let block_bytes = self.block_bytes;
        let mut flushes = Vec::new();
        let apart = self
            .blocks
            .get(&key)
            .and_then(|b| b.dirty.as_ref())
            .is_some_and(|d| !touches(d, &range));
        if apart {
            flushes.extend(self.take_dirty_range(file, block));
        }
        let entry = self.blocks.entry(key).or_insert_with(|| Block {
            data: vec![0; block_bytes as usize],
            valid: 0..0,
            dirty: None,
            used: now,
        });
        entry.data[range.start as usize..range.end as usize].copy_from_slice(data);
        entry.valid = if entry.valid.is_empty() || !touches(&entry.valid, &range) {
            // Clean bytes apart from the write are forgotten: valid stays one range.
            range.clone()
        } else {
            union(&entry.valid, &range)
        };
        entry.dirty = Some(match entry.dirty.take() {
            Some(dirty) => union(&dirty, &range),
            None => {
                self.dirty_count += 1;
                range
            }
        });
        entry.used = now;
        self.counters.absorbed += 1;
        let whole = entry.dirty.as_ref().is_some_and(|d| *d == (0..block_bytes));
        if whole {
            flushes.extend(self.take_dirty_range(file, block));
        }
        (WriteDecision::Absorbed, flushes)
    }

    /// A write that went through has reached storage: the cache keeps its bytes, clean where
    /// they were clean (a whole-block write also supersedes any dirty bytes).
    pub fn wrote(&mut self, file: FileKey, block: u64, offset_bytes: u64, data: &[u8]) {
        let range = offset_bytes..offset_bytes + data.len() as u64;
        self.check_range(&range);
        let now = self.tick();
        let whole = range == (0..self.block_bytes);
        if !self.blocks.contains_key(&(file, block)) {
            // Only whole blocks are worth keeping for a later read.
            if !whole || !self.make_room() {
                return;
            }
            self.blocks.insert(
                (file, block),
                Block {
                    data: data.to_vec(),
                    valid: range,
                    dirty: None,
                    used: now,
                },
            );
            return;
        }
        let entry = self
            .blocks
            .get_mut(&(file, block))
            .expect("checked present above");
        entry.data[range.start as usize..range.end as usize].copy_from_slice(data);
        entry.used = now;
        if whole {
            entry.valid = range;
            if entry.dirty.take().is_some() {
                self.dirty_count -= 1;
            }
        } else if entry.valid.is_empty() {
            entry.valid = range;
        } else if touches(&entry.valid, &range) {
            entry.valid = union(&entry.valid, &range);
        } else if entry.dirty.is_none()
            && range.end - range.start > entry.valid.end - entry.valid.start
        {
            // Apart from what was valid: keep the longer of the two (dirty bytes, if any,
            // stay covered by keeping the old range).
            entry.valid = range;
        }
    }

    /// Whether `file` has dirty bytes in block `block` or after it: a read from there must
    /// flush them first, or a short read from storage would end the file too early.
    pub fn dirty_from(&self, file: FileKey, block: u64) -> bool {
        self.dirty_count > 0
            && self
                .blocks
                .iter()
                .any(|((f, b), entry)| *f == file && *b >= block && entry.dirty.is_some())
    }

    /// Every dirty block of `file`, as flushes in file order; the blocks stay cached, clean.
    pub fn flush_file(&mut self, file: FileKey) -> Vec<Flush> {
        let mut blocks: Vec<u64> = self
            .blocks
            .iter()
            .filter(|((f, _), b)| *f == file && b.dirty.is_some())
            .map(|((_, block), _)| *block)
            .collect();
        blocks.sort_unstable();
        blocks
            .into_iter()
            .filter_map(|block| self.take_dirty_range(file, block))
            .collect()
    }

    /// Forgets `file` (another fyod may have changed it): its dirty blocks as flushes, then
    /// every block of it dropped.
    pub fn invalidate_file(&mut self, file: FileKey) -> Vec<Flush> {
        let flushes = self.flush_file(file);
        self.blocks.retain(|(f, _), _| *f != file);
        flushes
    }

    /// Checks what the cache believes; tests call it after every step.
    pub fn check_invariants(&self) {
        assert!(self.blocks.len() <= self.blocks_max, "blocks within bound");
        let dirty = self.blocks.values().filter(|b| b.dirty.is_some()).count();
        assert_eq!(dirty, self.dirty_count, "dirty count matches");
        assert!(dirty <= self.dirty_max, "dirty blocks within bound");
        for block in self.blocks.values() {
            assert_eq!(block.data.len() as u64, self.block_bytes);
            assert!(block.valid.end <= self.block_bytes);
            if let Some(dirty) = &block.dirty {
                assert!(!dirty.is_empty(), "a dirty range holds bytes");
                assert!(
                    block.valid.start <= dirty.start && dirty.end <= block.valid.end,
                    "valid {:?} contains dirty {dirty:?}",
                    block.valid
                );
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const B: u64 = 64;

    /// A model of storage plus the cache's promises: whatever sequence of reads, writes and
    /// flushes, a read from the cache returns the newest bytes, and storage after a flush of
    /// everything equals the model.
    struct Harness {
        cache: UfsCache,
        storage: HashMap<FileKey, Vec<u8>>,
        model: HashMap<FileKey, Vec<u8>>,
    }

    impl Harness {
        fn new(blocks_max: u32, dirty_max: u32) -> Harness {
            Harness {
                cache: UfsCache::new(B, blocks_max, dirty_max),
                storage: HashMap::new(),
                model: HashMap::new(),
            }
        }

        fn apply(&mut self, flush: &Flush) {
            let file = self.storage.entry(flush.file).or_default();
            let end = flush.offset_bytes as usize + flush.data.len();
            if file.len() < end {
                file.resize(end, 0);
            }
            file[flush.offset_bytes as usize..end].copy_from_slice(&flush.data);
        }

        fn write(&mut self, file: FileKey, offset: u64, data: &[u8]) {
            let model = self.model.entry(file).or_default();
            let end = offset as usize + data.len();
            if model.len() < end {
                model.resize(end, 0);
            }
            model[offset as usize..end].copy_from_slice(data);
            let block = offset / B;
            let (decision, flushes) = self.cache.write(file, block, offset % B, data);
            for flush in &flushes {
                assert_eq!(flush.file, file, "flushes concern only the caller's file");
                self.apply(flush);
            }
            if decision == WriteDecision::Through {
                self.apply(&Flush {
                    file,
                    offset_bytes: offset,
                    data: Bytes::copy_from_slice(data),
                });
                self.cache.wrote(file, block, offset % B, data);
            }
            self.cache.check_invariants();
        }

        /// Reads as the runtime does: the cache, else flush the block's dirty bytes and fill
        /// from storage.
        fn read(&mut self, file: FileKey, offset: u64, len: u64) -> Vec<u8> {
            let block = offset / B;
            let range = offset % B..offset % B + len;
            let bytes = match self.cache.read(file, block, range.clone()) {
                Some(bytes) => bytes.to_vec(),
                None => {
                    if let Some(flush) = self.cache.take_dirty(file, block) {
                        self.apply(&flush);
                    }
                    let stored = self.storage.get(&file).cloned().unwrap_or_default();
                    let start = (block * B) as usize;
                    let end = ((block + 1) * B).min(stored.len() as u64) as usize;
                    let whole = if start < end {
                        stored[start..end].to_vec()
                    } else {
                        Vec::new()
                    };
                    self.cache.fill(file, block, &whole);
                    let mut out = vec![0; len as usize];
                    for (i, byte) in out.iter_mut().enumerate() {
                        if let Some(b) = whole.get(range.start as usize + i) {
                            *byte = *b;
                        }
                    }
                    out
                }
            };
            self.cache.check_invariants();
            bytes
        }

        fn expected(&self, file: FileKey, offset: u64, len: u64) -> Vec<u8> {
            let model = self.model.get(&file).cloned().unwrap_or_default();
            (offset..offset + len)
                .map(|i| model.get(i as usize).copied().unwrap_or(0))
                .collect()
        }

        fn sync_all(&mut self) {
            for file in [1, 2, 3] {
                for flush in self.cache.flush_file(file) {
                    self.apply(&flush);
                }
            }
            self.cache.check_invariants();
            for (file, model) in &self.model {
                let stored = self.storage.get(file).cloned().unwrap_or_default();
                let mut padded = stored.clone();
                padded.resize(model.len().max(stored.len()), 0);
                assert_eq!(
                    &padded[..model.len()],
                    &model[..],
                    "storage equals the model"
                );
            }
        }
    }

    /// xorshift: enough to pick offsets.
    struct Rng(u64);
    impl Rng {
        fn below(&mut self, n: u64) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0 % n
        }
    }

    #[test]
    fn random_reads_and_writes_always_see_the_newest_bytes() {
        for seed in 1..=200u64 {
            for (blocks_max, dirty_max) in [(4, 2), (2, 1), (8, 0), (0, 0), (3, 2)] {
                let mut h = Harness::new(blocks_max, dirty_max);
                let mut rng = Rng(seed * 7919);
                for step in 0..120u64 {
                    let file = 1 + rng.below(3);
                    let offset = rng.below(6 * B);
                    let room = B - offset % B;
                    let len = 1 + rng.below(room);
                    if rng.below(3) == 0 {
                        let got = h.read(file, offset, len);
                        assert_eq!(
                            got,
                            h.expected(file, offset, len),
                            "seed {seed} step {step} bounds ({blocks_max},{dirty_max})"
                        );
                    } else {
                        let data: Vec<u8> = (0..len)
                            .map(|i| (step as u8).wrapping_add(i as u8) | 1)
                            .collect();
                        h.write(file, offset, &data);
                    }
                    if rng.below(17) == 0 {
                        let file = 1 + rng.below(3);
                        for flush in h.cache.invalidate_file(file) {
                            h.apply(&flush);
                        }
                    }
                }
                h.sync_all();
            }
        }
    }

    #[test]
    fn whole_blocks_go_through_and_are_kept_clean() {
        let mut cache = UfsCache::new(B, 4, 2);
        let data = [7u8; B as usize];
        let (decision, flushes) = cache.write(1, 0, 0, &data);
        assert_eq!((decision, flushes.len()), (WriteDecision::Through, 0));
        cache.wrote(1, 0, 0, &data);
        assert_eq!(cache.read(1, 0, 3..9).unwrap(), Bytes::from(vec![7u8; 6]));
        assert_eq!(cache.occupancy(), (1, 0));
    }

    #[test]
    fn small_writes_are_absorbed_and_merged_then_flushed_once() {
        let mut cache = UfsCache::new(B, 4, 2);
        assert_eq!(cache.write(1, 0, 0, &[1; 10]).0, WriteDecision::Absorbed);
        assert_eq!(cache.write(1, 0, 10, &[2; 10]).0, WriteDecision::Absorbed);
        assert_eq!(cache.occupancy(), (1, 1));
        let flushes = cache.flush_file(1);
        assert_eq!(flushes.len(), 1, "touching writes merge into one range");
        assert_eq!(flushes[0].offset_bytes, 0);
        assert_eq!(&flushes[0].data[..], &[[1u8; 10], [2u8; 10]].concat()[..]);
        assert_eq!(cache.occupancy(), (1, 0));
        assert_eq!(cache.counters().absorbed, 2);
    }

    #[test]
    fn a_write_apart_from_the_dirty_range_flushes_it_first() {
        let mut cache = UfsCache::new(B, 4, 2);
        cache.write(1, 2, 0, &[1; 4]);
        let (decision, flushes) = cache.write(1, 2, 40, &[2; 4]);
        assert_eq!(decision, WriteDecision::Absorbed);
        assert_eq!(flushes.len(), 1);
        assert_eq!((flushes[0].offset_bytes, flushes[0].data.len()), (2 * B, 4));
    }

    #[test]
    fn filling_a_block_by_small_writes_flushes_it_whole() {
        let mut cache = UfsCache::new(B, 4, 2);
        cache.write(1, 0, 0, &[1; 32]);
        let (_, flushes) = cache.write(1, 0, 32, &[2; 32]);
        assert_eq!(flushes.len(), 1);
        assert_eq!(flushes[0].data.len() as u64, B);
        assert_eq!(cache.occupancy(), (1, 0));
    }

    #[test]
    fn the_dirty_bound_turns_small_writes_into_write_through() {
        let mut cache = UfsCache::new(B, 4, 2);
        cache.write(1, 0, 0, &[1; 4]);
        cache.write(1, 1, 0, &[1; 4]);
        assert_eq!(cache.write(1, 2, 0, &[1; 4]).0, WriteDecision::Through);
        // A block already dirty still absorbs.
        assert_eq!(cache.write(1, 1, 4, &[1; 4]).0, WriteDecision::Absorbed);
        cache.check_invariants();
    }

    #[test]
    fn write_behind_off_means_every_write_goes_through() {
        let mut cache = UfsCache::new(B, 4, 0);
        assert_eq!(cache.write(1, 0, 0, &[1; 4]).0, WriteDecision::Through);
        assert_eq!(cache.occupancy(), (0, 0));
    }

    #[test]
    fn eviction_takes_the_least_recently_used_clean_block() {
        let mut cache = UfsCache::new(B, 2, 1);
        cache.fill(1, 0, &[1; B as usize]);
        cache.fill(1, 1, &[2; B as usize]);
        assert!(cache.read(1, 0, 0..1).is_some()); // block 0 is now the newer
        cache.fill(1, 2, &[3; B as usize]);
        assert!(cache.read(1, 1, 0..1).is_none(), "block 1 was evicted");
        assert!(cache.read(1, 0, 0..1).is_some());
        cache.check_invariants();
    }

    #[test]
    fn a_short_fill_serves_only_what_storage_had() {
        let mut cache = UfsCache::new(B, 2, 1);
        cache.fill(1, 0, &[5; 10]);
        assert!(cache.read(1, 0, 0..10).is_some());
        assert!(
            cache.read(1, 0, 5..11).is_none(),
            "past what storage returned: ask again"
        );
    }

    #[test]
    fn invalidating_returns_the_dirty_bytes_and_forgets_the_file() {
        let mut cache = UfsCache::new(B, 4, 2);
        cache.fill(1, 0, &[1; B as usize]);
        cache.write(1, 1, 3, &[9; 3]);
        cache.fill(2, 0, &[2; B as usize]);
        let flushes = cache.invalidate_file(1);
        assert_eq!(flushes.len(), 1);
        assert_eq!(flushes[0].offset_bytes, B + 3);
        assert!(cache.read(1, 0, 0..1).is_none());
        assert!(cache.read(2, 0, 0..1).is_some(), "other files stay");
        cache.check_invariants();
    }

    #[test]
    fn dirty_from_sees_only_this_files_later_blocks() {
        let mut cache = UfsCache::new(B, 4, 2);
        cache.write(1, 3, 0, &[1; 4]);
        cache.write(2, 9, 0, &[1; 4]);
        assert!(cache.dirty_from(1, 0) && cache.dirty_from(1, 3));
        assert!(!cache.dirty_from(1, 4));
        cache.flush_file(1);
        assert!(!cache.dirty_from(1, 0));
        assert!(cache.dirty_from(2, 9));
    }

    #[test]
    #[should_panic(expected = "must leave a clean one")]
    fn dirty_bound_must_leave_room() {
        let _ = UfsCache::new(B, 2, 2);
    }
}
