//! [`BufferPool`]: transfer buffers used again once the client library lets go of them, as IOR
//! reuses its one buffer per task. A fresh 1 MiB buffer costs 256 page faults and a pass of
//! zeroing before the pattern is even written; one that comes back from the pool costs
//! neither. Buffers are 4 KiB aligned, so the storage servers can write them with O_DIRECT
//! straight from the memory they pulled them into.

use std::sync::{Arc, Mutex, PoisonError, Weak};

use bytes::Bytes;
use iopath_storage_server::engine::aligned::AlignedBuf;

/// Most bytes of free buffers the pool keeps; beyond it a returned buffer is freed.
pub const POOL_KEPT_BYTES_MAX: u64 = 256 << 20;

/// Buffers of one size.
#[derive(Debug)]
pub struct BufferPool {
    size: usize,
    kept_max: usize,
    free: Mutex<Vec<AlignedBuf>>,
}

impl BufferPool {
    /// A pool of `size`-byte buffers.
    pub fn new(size: usize) -> Arc<BufferPool> {
        let kept_max = (POOL_KEPT_BYTES_MAX / size.max(1) as u64).max(2) as usize;
        Arc::new(BufferPool {
            size,
            kept_max,
            free: Mutex::new(Vec::new()),
        })
    }

    /// A buffer, filled by `fill`, as `Bytes`; its memory comes back to the pool when the
    /// last `Bytes` pointing into it is dropped.
    pub fn filled(self: &Arc<Self>, fill: impl FnOnce(&mut [u8])) -> Bytes {
        let reused = self
            .free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop();
        let mut buffer = reused.unwrap_or_else(|| AlignedBuf::zeroed(self.size));
        fill(buffer.as_mut_slice());
        Bytes::from_owner(Pooled {
            buffer: Some(buffer),
            pool: Arc::downgrade(self),
        })
    }

    /// Free buffers held now.
    pub fn kept(&self) -> usize {
        self.free
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// A buffer on loan from a pool.
#[derive(Debug)]
struct Pooled {
    buffer: Option<AlignedBuf>,
    pool: Weak<BufferPool>,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        self.buffer.as_ref().map_or(&[], AlignedBuf::as_slice)
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        let (Some(buffer), Some(pool)) = (self.buffer.take(), self.pool.upgrade()) else {
            return;
        };
        let mut free = pool.free.lock().unwrap_or_else(PoisonError::into_inner);
        if free.len() < pool.kept_max {
            free.push(buffer);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buffers_come_back_and_are_refilled() {
        let pool = BufferPool::new(8192);
        let a = pool.filled(|b| b.fill(1));
        assert_eq!(a.len(), 8192);
        assert_eq!(a.as_ptr() as usize % 4096, 0, "aligned for O_DIRECT");
        let slice = a.slice(100..200);
        drop(a);
        assert_eq!(pool.kept(), 0, "a slice still holds the memory");
        drop(slice);
        assert_eq!(pool.kept(), 1);
        let b = pool.filled(|b| b.fill(2));
        assert!(b.iter().all(|&x| x == 2));
        assert_eq!(pool.kept(), 0);
    }

    #[test]
    fn the_pool_keeps_a_bounded_number() {
        let pool = BufferPool::new(64 << 20);
        let held: Vec<Bytes> = (0..6).map(|_| pool.filled(|_| {})).collect();
        drop(held);
        assert_eq!(pool.kept(), (POOL_KEPT_BYTES_MAX / (64 << 20)) as usize);
    }
}
