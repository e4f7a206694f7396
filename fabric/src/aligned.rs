//! Buffers for bulk data: [`AlignedBuf`], heap memory aligned for O_DIRECT and convertible
//! into `Bytes` without a copy, and [`BufferPool`], which hands such buffers out again once the
//! last `Bytes` pointing into one is dropped.
//!
//! Why a pool: a fresh 1 MiB buffer costs 256 page faults and a pass of zeroing by the kernel
//! before a byte is stored in it — about as much as copying the megabyte. A transport that
//! receives, a storage server that reads and a benchmark that fills buffers all take theirs
//! from a pool, so in steady state no bulk byte lands in memory the kernel has to provide
//! first. Pools keep a bounded number of free buffers; buffers in use are bounded by whoever
//! takes them (credits, the bulk pool, a task's transfers in flight).

use bytes::Bytes;
use std::alloc::{self, Layout};
use std::fmt;
use std::ptr::NonNull;
use std::sync::{Arc, Mutex, PoisonError, Weak};

/// The alignment O_DIRECT needs for buffer address, file offset and length. 4096 covers both
/// 512-byte and 4 KiB logical block sizes.
pub const DIRECT_ALIGN_BYTES: usize = 4096;

/// A heap buffer whose address is a multiple of [`DIRECT_ALIGN_BYTES`], zeroed when first
/// allocated (so every byte of it is always initialised).
///
/// Transports receive bulk payloads into these and the benchmark fills them, so that an object
/// write can go to the disk with O_DIRECT straight from the buffer the bytes arrived in. Turn
/// one into `Bytes` with [`AlignedBuf::into_bytes`]; the `Bytes` keeps the alignment.
pub struct AlignedBuf {
    ptr: NonNull<u8>,
    len: usize,
    layout: Layout,
}

// SAFETY: AlignedBuf uniquely owns its allocation, like a Box<[u8]>.
unsafe impl Send for AlignedBuf {}
// SAFETY: shared access only hands out `&[u8]`.
unsafe impl Sync for AlignedBuf {}

impl AlignedBuf {
    /// Allocates `len` zeroed bytes (at least one alignment unit is reserved so that an empty
    /// buffer is still a valid allocation).
    pub fn zeroed(len: usize) -> AlignedBuf {
        let capacity = len
            .max(DIRECT_ALIGN_BYTES)
            .next_multiple_of(DIRECT_ALIGN_BYTES);
        let layout = match Layout::from_size_align(capacity, DIRECT_ALIGN_BYTES) {
            Ok(layout) => layout,
            // Only reachable for sizes near isize::MAX, which no caller can hold in memory.
            Err(_) => panic!("aligned buffer of {len} bytes cannot be laid out"),
        };
        // SAFETY: the layout has a non-zero size.
        let raw = unsafe { alloc::alloc_zeroed(layout) };
        let Some(ptr) = NonNull::new(raw) else {
            alloc::handle_alloc_error(layout)
        };
        AlignedBuf { ptr, len, layout }
    }

    /// Copies `data` into a new aligned buffer.
    pub fn copy_from(data: &[u8]) -> AlignedBuf {
        let mut buf = AlignedBuf::zeroed(data.len());
        buf.as_mut_slice().copy_from_slice(data);
        buf
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.len
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Shortens the visible length (the allocation stays).
    pub fn truncate(&mut self, len: usize) {
        self.len = self.len.min(len);
    }

    /// Bytes the allocation holds: the most [`AlignedBuf::set_len`] accepts.
    pub fn capacity(&self) -> usize {
        self.layout.size()
    }

    /// Sets the visible length to `len`, at most [`AlignedBuf::capacity`]. Bytes that come
    /// into view hold whatever was last stored there (zeros if nothing was).
    pub fn set_len(&mut self, len: usize) {
        assert!(
            len <= self.capacity(),
            "length {len} beyond an aligned buffer of {}",
            self.capacity()
        );
        self.len = len;
    }

    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        // SAFETY: ptr is valid for `layout.size() >= len` initialised bytes.
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr(), self.len) }
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: as above, and `&mut self` makes the access unique.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    /// Raw pointer for an I/O submission that writes into the buffer.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    /// Hands the buffer to `Bytes` without copying; the address stays aligned.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for AlignedBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Drop for AlignedBuf {
    fn drop(&mut self) {
        // SAFETY: allocated in `zeroed` with exactly this layout.
        unsafe { alloc::dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl fmt::Debug for AlignedBuf {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AlignedBuf")
            .field("len", &self.len)
            .finish()
    }
}

/// Free [`AlignedBuf`]s of one capacity, handed out again.
#[derive(Debug)]
pub struct BufferPool {
    capacity: usize,
    kept_max: usize,
    free: Mutex<Vec<AlignedBuf>>,
}

impl BufferPool {
    /// A pool of buffers of `capacity` bytes that keeps at most `kept_bytes_max` of free ones
    /// (and at least two buffers' worth).
    pub fn new(capacity: usize, kept_bytes_max: u64) -> Arc<BufferPool> {
        let capacity = capacity.max(1).next_multiple_of(DIRECT_ALIGN_BYTES);
        let kept_max = (kept_bytes_max / capacity as u64).max(2) as usize;
        Arc::new(BufferPool {
            capacity,
            kept_max,
            free: Mutex::new(Vec::new()),
        })
    }

    /// The capacity of every buffer of the pool.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// A buffer of `len` bytes (at most the pool's capacity): a free one if there is one,
    /// else a new one. Its bytes are not cleared: they hold what its last user left.
    pub fn take(self: &Arc<Self>, len: usize) -> PooledBuf {
        assert!(
            len <= self.capacity,
            "{len} bytes from a pool of {}-byte buffers",
            self.capacity
        );
        let reused = self.lock().pop();
        let mut buffer = reused.unwrap_or_else(|| AlignedBuf::zeroed(self.capacity));
        buffer.set_len(len);
        PooledBuf {
            buffer: Some(buffer),
            pool: Arc::downgrade(self),
        }
    }

    /// A buffer of `len` bytes: from the pool when it fits, else a new one of its own that is
    /// freed, not kept, when done with.
    pub fn take_any(self: &Arc<Self>, len: usize) -> PooledBuf {
        if len <= self.capacity {
            return self.take(len);
        }
        PooledBuf {
            buffer: Some(AlignedBuf::zeroed(len)),
            pool: Weak::new(),
        }
    }

    /// Free buffers held now.
    pub fn kept(&self) -> usize {
        self.lock().len()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<AlignedBuf>> {
        self.free.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn give_back(&self, buffer: AlignedBuf) {
        let mut free = self.lock();
        if free.len() < self.kept_max {
            free.push(buffer);
        }
    }
}

/// Pools in size classes a factor of four apart, from `smallest` up to `capacity`: a buffer
/// handed out is never more than four times the bytes asked for, so a small payload that its
/// receiver keeps does not hold a frame-sized buffer.
#[derive(Debug)]
pub struct SizedPools {
    classes: Vec<Arc<BufferPool>>,
}

impl SizedPools {
    /// Classes `smallest`, 4 × `smallest`, … up to `capacity`; each keeps at most
    /// `kept_bytes_max` of free buffers.
    pub fn new(smallest: usize, capacity: usize, kept_bytes_max: u64) -> SizedPools {
        let mut classes = Vec::new();
        let mut size = smallest.max(DIRECT_ALIGN_BYTES);
        // Bounded: the size grows fourfold up to the capacity.
        while size < capacity {
            classes.push(BufferPool::new(size, kept_bytes_max));
            size = size.saturating_mul(4);
        }
        classes.push(BufferPool::new(capacity, kept_bytes_max));
        SizedPools { classes }
    }

    /// The largest buffer the pools hold.
    pub fn capacity(&self) -> usize {
        self.classes.last().map_or(0, |pool| pool.capacity())
    }

    /// A buffer of `len` bytes from the smallest class that holds it (a buffer of its own
    /// beyond the largest).
    pub fn take(&self, len: usize) -> PooledBuf {
        match self.classes.iter().find(|pool| pool.capacity() >= len) {
            Some(pool) => pool.take(len),
            None => self
                .classes
                .last()
                .expect("at least one class")
                .take_any(len),
        }
    }
}

/// A buffer on loan from a [`BufferPool`]; it goes back when dropped, or — after
/// [`PooledBuf::into_bytes`] — when the last `Bytes` pointing into it is.
#[derive(Debug)]
pub struct PooledBuf {
    buffer: Option<AlignedBuf>,
    pool: Weak<BufferPool>,
}

impl PooledBuf {
    /// The bytes.
    pub fn as_slice(&self) -> &[u8] {
        self.buffer.as_ref().map_or(&[], AlignedBuf::as_slice)
    }

    /// The bytes, writable.
    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        self.buffer
            .as_mut()
            .map_or(&mut [], AlignedBuf::as_mut_slice)
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.as_slice().len()
    }

    /// True when the buffer holds no bytes.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Shortens the visible length.
    pub fn truncate(&mut self, len: usize) {
        if let Some(buffer) = self.buffer.as_mut() {
            buffer.truncate(len);
        }
    }

    /// Raw pointer for an I/O submission that writes into the buffer.
    pub fn as_mut_ptr(&mut self) -> *mut u8 {
        self.as_mut_slice().as_mut_ptr()
    }

    /// Hands the buffer to `Bytes` without copying; the address stays aligned, and the memory
    /// returns to the pool when the last `Bytes` pointing into it is dropped.
    pub fn into_bytes(self) -> Bytes {
        Bytes::from_owner(self)
    }
}

impl AsRef<[u8]> for PooledBuf {
    fn as_ref(&self) -> &[u8] {
        self.as_slice()
    }
}

impl Drop for PooledBuf {
    fn drop(&mut self) {
        if let (Some(buffer), Some(pool)) = (self.buffer.take(), self.pool.upgrade()) {
            pool.give_back(buffer);
        }
    }
}

/// True when an O_DIRECT transfer of `len` bytes at `offset` from/to `addr` is allowed.
pub fn is_direct_aligned(offset: u64, len: usize, addr: usize) -> bool {
    let align = DIRECT_ALIGN_BYTES as u64;
    len > 0
        && offset.is_multiple_of(align)
        && (len as u64).is_multiple_of(align)
        && addr.is_multiple_of(DIRECT_ALIGN_BYTES)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_are_aligned_and_survive_conversion_to_bytes() {
        for len in [0, 1, 4095, 4096, 1 << 20] {
            let mut buf = AlignedBuf::zeroed(len);
            assert_eq!(buf.len(), len);
            assert_eq!(buf.as_slice().as_ptr() as usize % DIRECT_ALIGN_BYTES, 0);
            if len > 0 {
                buf.as_mut_slice()[len - 1] = 7;
            }
            let bytes = buf.into_bytes();
            assert_eq!(bytes.len(), len);
            assert_eq!(bytes.as_ptr() as usize % DIRECT_ALIGN_BYTES, 0);
            if len > 0 {
                assert_eq!(bytes[len - 1], 7);
            }
        }
    }

    #[test]
    fn alignment_check_covers_offset_length_and_address() {
        assert!(is_direct_aligned(0, 4096, 8192));
        assert!(!is_direct_aligned(512, 4096, 8192));
        assert!(!is_direct_aligned(0, 4000, 8192));
        assert!(!is_direct_aligned(0, 4096, 8193));
        assert!(!is_direct_aligned(0, 0, 0));
    }

    #[test]
    fn pooled_buffers_come_back_when_the_last_bytes_go() {
        let pool = BufferPool::new(8192, 1 << 20);
        let mut a = pool.take(8192);
        a.as_mut_slice().fill(1);
        let a = a.into_bytes();
        assert_eq!(
            a.as_ptr() as usize % DIRECT_ALIGN_BYTES,
            0,
            "aligned for O_DIRECT"
        );
        let slice = a.slice(100..200);
        drop(a);
        assert_eq!(pool.kept(), 0, "a slice still holds the memory");
        drop(slice);
        assert_eq!(pool.kept(), 1);
        let b = pool.take(100);
        assert_eq!(b.len(), 100);
        assert_eq!(pool.kept(), 0, "the free buffer was handed out again");
        drop(b);
        assert_eq!(
            pool.kept(),
            1,
            "a buffer never turned into Bytes comes back too"
        );
    }

    #[test]
    fn sized_pools_hand_out_at_most_four_times_what_is_asked() {
        let pools = SizedPools::new(64 << 10, 1 << 20, 8 << 20);
        assert_eq!(pools.capacity(), 1 << 20);
        for len in [
            1,
            64 << 10,
            (64 << 10) + 1,
            256 << 10,
            (256 << 10) + 1,
            1 << 20,
        ] {
            let buffer = pools.take(len);
            assert_eq!(buffer.len(), len);
            let capacity = buffer.buffer.as_ref().unwrap().capacity();
            assert!(
                capacity >= len && capacity <= 4 * len.max(64 << 10),
                "{len}: {capacity}"
            );
        }
        assert_eq!(
            pools.take(2 << 20).len(),
            2 << 20,
            "beyond the largest: its own"
        );
    }

    #[test]
    fn a_pool_keeps_a_bounded_number_of_free_buffers() {
        let pool = BufferPool::new(1 << 20, 4 << 20);
        let held: Vec<PooledBuf> = (0..10).map(|_| pool.take(1 << 20)).collect();
        drop(held);
        assert_eq!(pool.kept(), 4);
        let gone = Arc::clone(&pool);
        let outlives = gone.take(10);
        drop((pool, gone));
        drop(outlives); // the pool is gone: the memory is simply freed
    }
}
