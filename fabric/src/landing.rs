//! Where a multi-chunk pull lands: one page-aligned buffer for the whole transfer, lent chunk
//! by chunk to whoever receives that chunk — LNet's GET naming its destination memory
//! descriptor, each REPLY's payload received straight into its place.
//!
//! The puller holds the [`Landing`]; the node holds a [`Lender`] in its table of transfers.
//! When an LND shows the node a REPLY's header, the node asks the lender for that chunk's
//! [`Place`]: sole, writable access to the chunk's bytes of the buffer. The LND reads the
//! payload into the place (TCP straight from the socket; the in-memory LND by one copy, since
//! its payloads are slices of the sender's memory) and hands the place back with the message.
//! The puller checks the chunk's checksum through the place and keeps the chunk, or drops the
//! place to ask for the chunk again. Once every chunk is kept, the buffer becomes the `Bytes`
//! handed on: contiguous and page aligned, so a storage server writes it with O_DIRECT as it
//! arrived, with no copy to assemble it and none to align it.
//!
//! # Why the unsafe code here is sound
//!
//! Places write into the buffer through a raw pointer, from any thread, while the buffer is
//! shared. Four rules, each kept under one lock and each tested below, make that sound:
//!
//! 1. **One place per chunk at a time.** A chunk is `Open`, `Lent` or `Kept`; only an `Open`
//!    chunk is lent, and chunks are disjoint ranges, so no two places ever overlap.
//! 2. **Kept is final.** A kept chunk is never lent again, and the puller reads a chunk only
//!    through the place it holds.
//! 3. **The memory outlives every place.** Each place holds the shared state, which owns the
//!    buffer; a place that outlives its transfer (a REPLY still being read when the puller
//!    gave up) keeps the memory alive, and the pool gets it back only after the last place is
//!    gone — so a late REPLY never writes into memory someone else owns now.
//! 4. **Handed on only when nothing can write.** The buffer becomes `Bytes` only when every
//!    chunk is kept (so no place exists) and the landing is closed (so none can be lent).

use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use bytes::Bytes;

use crate::aligned::PooledBuf;

/// Pulls up to this many bytes land in buffers from the node's pools; longer ones get a
/// buffer of their own, freed when done with.
pub const LANDING_POOLED_MAX_BYTES: usize = 16 << 20;
/// Free landing buffers a node keeps per size class for the next pulls. Buffers in use are
/// bounded by whoever pulls (a storage server's bulk pool, a forwarder's buffers).
pub const LANDING_POOL_KEPT_BYTES_MAX: u64 = 64 << 20;

/// Where one chunk of a landing stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Chunk {
    /// Not received yet (or received wrong and asked for again): may be lent.
    Open,
    /// Lent to one [`Place`], which is being filled or waits to be checked.
    Lent,
    /// Checked and kept by the puller: never lent again.
    Kept,
}

/// The part of a landing that places share, behind one lock.
struct State {
    chunks: Vec<Chunk>,
    /// Set when the puller has taken the buffer or given up: nothing more is lent.
    closed: bool,
    /// The memory; `None` once handed on as `Bytes`.
    buffer: Option<PooledBuf>,
}

/// What the landing, its lender and its places share.
struct Shared {
    /// The first byte of the buffer `state.buffer` owns (rule 3: valid while this lives).
    base: NonNull<u8>,
    /// Bytes in the transfer.
    len: usize,
    /// Bytes per chunk; the last chunk may be shorter.
    chunk_bytes: usize,
    /// Where the transfer starts in the owner's region: REPLYs name their chunk by region
    /// offset.
    region_offset: u64,
    state: Mutex<State>,
}

// SAFETY: `base` is only dereferenced through a `Place`, which has its chunk to itself (rules
// 1 and 2), or never again once the buffer is handed on (rule 4); everything else is behind
// the mutex. The buffer itself (`PooledBuf`) is Send and Sync.
unsafe impl Send for Shared {}
// SAFETY: as above: shared access reads or writes bytes only through a place's own chunk.
unsafe impl Sync for Shared {}

impl Shared {
    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The byte range of chunk `index`.
    fn range(&self, index: usize) -> std::ops::Range<usize> {
        let start = index * self.chunk_bytes;
        start..(start + self.chunk_bytes).min(self.len)
    }

    /// Lends chunk `index` if it is open (rule 1) and the landing is not closed.
    fn lend(self: &Arc<Self>, index: usize) -> Option<Place> {
        let mut state = self.lock();
        if state.closed || state.chunks.get(index) != Some(&Chunk::Open) {
            return None;
        }
        state.chunks[index] = Chunk::Lent;
        Some(Place {
            shared: Arc::clone(self),
            index,
        })
    }
}

/// The puller's end of a landing: it keeps checked chunks and, once all are kept, takes the
/// buffer as `Bytes`. Dropping it closes the landing (a failed transfer): nothing more is
/// lent, and the memory goes back once the last place still out is dropped.
pub struct Landing {
    shared: Arc<Shared>,
}

impl fmt::Debug for Landing {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Landing")
            .field("len", &self.shared.len)
            .field("chunk_bytes", &self.shared.chunk_bytes)
            .finish()
    }
}

impl Landing {
    /// A landing for a transfer of `buffer.len()` bytes in chunks of `chunk_bytes`, whose
    /// first byte is at `region_offset` in the owner's region. Every chunk starts open.
    pub fn new(mut buffer: PooledBuf, chunk_bytes: usize, region_offset: u64) -> Landing {
        assert!(chunk_bytes > 0, "chunks hold at least a byte");
        assert!(!buffer.is_empty(), "a landing holds at least a byte");
        let len = buffer.len();
        // The allocation does not move when `buffer` is moved into the state below.
        let base = NonNull::new(buffer.as_mut_ptr()).expect("a non-empty buffer has an address");
        let count = len.div_ceil(chunk_bytes);
        Landing {
            shared: Arc::new(Shared {
                base,
                len,
                chunk_bytes,
                region_offset,
                state: Mutex::new(State {
                    chunks: vec![Chunk::Open; count],
                    closed: false,
                    buffer: Some(buffer),
                }),
            }),
        }
    }

    /// Bytes in the transfer.
    pub fn len(&self) -> usize {
        self.shared.len
    }

    /// True when the transfer has no bytes (never: [`Landing::new`] refuses that).
    pub fn is_empty(&self) -> bool {
        self.shared.len == 0
    }

    /// Chunks in the transfer.
    pub fn chunks(&self) -> usize {
        self.shared.len.div_ceil(self.shared.chunk_bytes)
    }

    /// What the node keeps to lend places to the LNDs.
    pub fn lender(&self) -> Lender {
        Lender {
            shared: Arc::clone(&self.shared),
        }
    }

    /// Keeps the chunk `place` holds: its bytes are checked, and it is never lent again.
    pub fn keep(&mut self, place: Place) {
        assert!(
            Arc::ptr_eq(&place.shared, &self.shared),
            "a place is kept by the landing it was lent from"
        );
        let mut state = self.shared.lock();
        assert_eq!(
            state.chunks[place.index],
            Chunk::Lent,
            "a place's chunk is lent"
        );
        state.chunks[place.index] = Chunk::Kept;
        // `place` drops after the lock is released, and finds its chunk kept.
    }

    /// Copies `bytes`, which arrived as a payload of their own (already checked), into chunk
    /// `index` and keeps it. False — and nothing copied — when the chunk is lent to a receive
    /// still in progress or kept already, or `bytes` is not the chunk's length.
    pub fn copy_in(&mut self, index: usize, bytes: &[u8]) -> bool {
        if index >= self.chunks() || bytes.len() != self.shared.range(index).len() {
            return false;
        }
        let Some(mut place) = self.shared.lend(index) else {
            return false;
        };
        place.as_mut_slice().copy_from_slice(bytes);
        self.keep(place);
        true
    }

    /// The whole transfer, once every chunk is kept: the buffer itself, page aligned.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "Landing::into_bytes",
        skip_all
    )]
    pub fn into_bytes(self) -> Bytes {
        let mut state = self.shared.lock();
        assert!(
            state.chunks.iter().all(|c| *c == Chunk::Kept),
            "a landing is handed on only when every chunk is kept"
        );
        // Rule 4: every chunk kept means no place exists; closed means none will be lent.
        state.closed = true;
        let buffer = state.buffer.take().expect("handed on once");
        buffer.into_bytes()
    }
}

impl Drop for Landing {
    fn drop(&mut self) {
        // A landing dropped before `into_bytes` is a transfer that failed or was given up:
        // lend nothing more. Places still out keep the memory until they are dropped.
        self.shared.lock().closed = true;
    }
}

/// The node's end of a landing: it lends the place of a chunk whose REPLY is arriving.
#[derive(Clone)]
pub struct Lender {
    shared: Arc<Shared>,
}

impl fmt::Debug for Lender {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Lender")
            .field("len", &self.shared.len)
            .finish()
    }
}

impl Lender {
    /// The place for a payload of `len` bytes at `region_offset` in the owner's region: the
    /// chunk starting there, if `len` is exactly its length and it is open. `None` otherwise
    /// — the payload then arrives as bytes of its own, and the puller decides.
    pub fn lend(&self, region_offset: u64, len: usize) -> Option<Place> {
        let shared = &self.shared;
        let relative = usize::try_from(region_offset.checked_sub(shared.region_offset)?).ok()?;
        if !relative.is_multiple_of(shared.chunk_bytes) || relative >= shared.len {
            return None;
        }
        let index = relative / shared.chunk_bytes;
        if shared.range(index).len() != len {
            return None;
        }
        shared.lend(index)
    }
}

/// One chunk of a landing, lent: the only way to its bytes until it is kept or dropped.
/// Dropping a place that was not kept opens the chunk again (a receive that failed, or bytes
/// that did not check out), to be received anew.
pub struct Place {
    shared: Arc<Shared>,
    index: usize,
}

impl fmt::Debug for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Place")
            .field("index", &self.index)
            .field("len", &self.len())
            .finish()
    }
}

impl Place {
    /// Which chunk of the transfer this is.
    pub fn index(&self) -> usize {
        self.index
    }

    /// Bytes in the chunk.
    pub fn len(&self) -> usize {
        self.shared.range(self.index).len()
    }

    /// True when the chunk holds no bytes (never: chunks hold at least one).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The chunk's bytes.
    pub fn as_slice(&self) -> &[u8] {
        let range = self.shared.range(self.index);
        // SAFETY: the range lies inside the buffer (`range` stops at `len`); the buffer is
        // alive while `self.shared` is (rule 3); this place is the only one of its chunk and
        // the puller reads a chunk only through its place (rules 1 and 2), so nothing writes
        // these bytes while the returned borrow of `self` lives.
        unsafe {
            std::slice::from_raw_parts(self.shared.base.as_ptr().add(range.start), range.len())
        }
    }

    /// The chunk's bytes, writable: where a receive puts the payload.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        let range = self.shared.range(self.index);
        // SAFETY: as in `as_slice`, and `&mut self` makes this the only borrow of the chunk.
        unsafe {
            std::slice::from_raw_parts_mut(self.shared.base.as_ptr().add(range.start), range.len())
        }
    }
}

impl Drop for Place {
    fn drop(&mut self) {
        let mut state = self.shared.lock();
        match state.chunks[self.index] {
            // Kept: the puller has it. Lent: not kept, so it is open to be received again.
            Chunk::Kept => {}
            Chunk::Lent => state.chunks[self.index] = Chunk::Open,
            Chunk::Open => unreachable!("a place's chunk is lent or kept"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::aligned::{BufferPool, DIRECT_ALIGN_BYTES};

    const CHUNK: usize = 4096;

    /// A landing of `len` bytes at region offset 100, from `pool`.
    fn landing(pool: &Arc<BufferPool>, len: usize) -> Landing {
        Landing::new(pool.take(len), CHUNK, 100)
    }

    fn fill(place: &mut Place, byte: u8) {
        place.as_mut_slice().fill(byte);
    }

    #[test]
    fn each_chunk_is_lent_to_one_place_at_a_time() {
        let pool = BufferPool::new(4 * CHUNK, 1 << 20);
        let landing = landing(&pool, 3 * CHUNK + 10);
        let lender = landing.lender();
        let first = lender.lend(100, CHUNK).expect("an open chunk is lent");
        assert!(lender.lend(100, CHUNK).is_none(), "rule 1: not twice");
        let last = lender
            .lend(100 + 3 * CHUNK as u64, 10)
            .expect("the short last chunk");
        assert_eq!((first.index(), last.index()), (0, 3));
        assert_eq!(last.len(), 10);
        drop(first);
        assert!(
            lender.lend(100, CHUNK).is_some(),
            "a place dropped unkept opens its chunk again"
        );
    }

    #[test]
    fn only_a_chunk_start_with_the_chunks_exact_length_gets_a_place() {
        let pool = BufferPool::new(4 * CHUNK, 1 << 20);
        let landing = landing(&pool, 2 * CHUNK + 10);
        let lender = landing.lender();
        assert!(lender.lend(99, CHUNK).is_none(), "before the transfer");
        assert!(lender.lend(101, CHUNK).is_none(), "not a chunk's start");
        assert!(lender.lend(100, CHUNK - 1).is_none(), "short");
        assert!(lender.lend(100, CHUNK + 1).is_none(), "long");
        assert!(
            lender.lend(100 + 2 * CHUNK as u64, CHUNK).is_none(),
            "past the end"
        );
        assert!(
            lender.lend(100 + 3 * CHUNK as u64, 10).is_none(),
            "no such chunk"
        );
        assert!(lender.lend(u64::MAX, 10).is_none());
        assert!(lender.lend(100 + 2 * CHUNK as u64, 10).is_some());
    }

    #[test]
    fn kept_chunks_are_never_lent_again_and_the_whole_is_what_places_wrote() {
        let pool = BufferPool::new(4 * CHUNK, 1 << 20);
        let mut landing = landing(&pool, 3 * CHUNK + 10);
        let lender = landing.lender();
        // Chunks arrive out of order; one arrives wrong and is received again.
        for (index, byte) in [(2usize, 3u8), (0, 1), (3, 4)] {
            let mut place = lender
                .lend(100 + (index * CHUNK) as u64, landing_len(index))
                .unwrap();
            fill(&mut place, byte);
            landing.keep(place);
            assert!(
                lender
                    .lend(100 + (index * CHUNK) as u64, landing_len(index))
                    .is_none(),
                "rule 2: kept is final"
            );
        }
        let mut wrong = lender.lend(100 + CHUNK as u64, CHUNK).unwrap();
        fill(&mut wrong, 0xEE);
        drop(wrong);
        assert!(
            !landing.copy_in(2, &[9; CHUNK]),
            "a kept chunk takes no copy either"
        );
        assert!(
            landing.copy_in(1, &[2; CHUNK]),
            "an open chunk takes a copy"
        );
        let whole = landing.into_bytes();
        assert_eq!(
            whole.as_ptr() as usize % DIRECT_ALIGN_BYTES,
            0,
            "page aligned"
        );
        assert_eq!(whole.len(), 3 * CHUNK + 10);
        for (index, byte) in [(0usize, 1u8), (1, 2), (2, 3)] {
            assert!(
                whole[index * CHUNK..(index + 1) * CHUNK]
                    .iter()
                    .all(|b| *b == byte)
            );
        }
        assert!(whole[3 * CHUNK..].iter().all(|b| *b == 4));
        assert!(
            lender.lend(100, CHUNK).is_none(),
            "rule 4: nothing is lent once handed on"
        );
    }

    fn landing_len(index: usize) -> usize {
        if index == 3 { 10 } else { CHUNK }
    }

    #[test]
    fn a_chunk_being_received_takes_no_copy() {
        let pool = BufferPool::new(4 * CHUNK, 1 << 20);
        let mut landing = landing(&pool, 2 * CHUNK);
        let lender = landing.lender();
        let place = lender.lend(100, CHUNK).unwrap();
        assert!(!landing.copy_in(0, &[1; CHUNK]), "lent to a receive");
        assert!(!landing.copy_in(1, &[1; CHUNK - 1]), "wrong length");
        assert!(!landing.copy_in(2, &[1; CHUNK]), "no such chunk");
        drop(place);
        assert!(landing.copy_in(0, &[1; CHUNK]));
    }

    #[test]
    fn a_place_that_outlives_its_failed_transfer_keeps_the_memory_from_the_pool() {
        let pool = BufferPool::new(4 * CHUNK, 1 << 20);
        let landing = landing(&pool, 2 * CHUNK);
        let lender = landing.lender();
        let mut late = lender.lend(100, CHUNK).unwrap();
        drop(landing); // the transfer failed while a REPLY was still being read
        assert!(
            lender.lend(100 + CHUNK as u64, CHUNK).is_none(),
            "a closed landing lends nothing"
        );
        drop(lender);
        fill(&mut late, 7); // still its own memory: nobody else has it
        assert_eq!(pool.kept(), 0, "rule 3: the pool does not have it back yet");
        let other = pool.take(CHUNK);
        assert_ne!(
            other.as_slice().as_ptr(),
            late.as_slice().as_ptr(),
            "and cannot hand it out"
        );
        drop(other);
        drop(late);
        assert_eq!(pool.kept(), 2, "back once the last place is gone");
    }

    #[test]
    fn places_fill_their_chunks_from_many_threads_at_once() {
        let pool = BufferPool::new(64 * CHUNK, 1 << 20);
        let mut landing = landing(&pool, 64 * CHUNK);
        let lender = landing.lender();
        let places: Vec<Place> = (0..64)
            .map(|i| lender.lend(100 + (i * CHUNK) as u64, CHUNK).unwrap())
            .collect();
        let filled: Vec<Place> = std::thread::scope(|scope| {
            let handles: Vec<_> = places
                .into_iter()
                .map(|mut place| {
                    scope.spawn(move || {
                        let byte = place.index() as u8;
                        fill(&mut place, byte);
                        place
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for place in filled {
            assert!(place.as_slice().iter().all(|b| *b == place.index() as u8));
            landing.keep(place);
        }
        let whole = landing.into_bytes();
        for (index, chunk) in whole.chunks(CHUNK).enumerate() {
            assert!(chunk.iter().all(|b| *b == index as u8));
        }
    }

    #[test]
    #[should_panic(expected = "every chunk is kept")]
    fn handing_on_a_landing_with_a_chunk_missing_is_a_bug() {
        let pool = BufferPool::new(4 * CHUNK, 1 << 20);
        let landing = landing(&pool, 2 * CHUNK);
        let _place = landing.lender().lend(100, CHUNK);
        let _ = landing.into_bytes();
    }
}
