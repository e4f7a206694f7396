//! Transfer buffers, used again once the client library lets go of them, as IOR reuses its
//! one buffer per task: a fresh 1 MiB buffer costs 256 page faults and a pass of zeroing
//! before the pattern is even written; one from the fabric's [`BufferPool`] costs neither.
//! Buffers are 4 KiB aligned, so the storage servers can write them with O_DIRECT straight
//! from the memory they pulled them into.

use std::sync::Arc;

use bytes::Bytes;
use iopath_fabric::aligned::BufferPool;

/// Most bytes of free buffers the pool keeps; beyond it a returned buffer is freed.
pub const POOL_KEPT_BYTES_MAX: u64 = 256 << 20;

/// A pool of `size`-byte transfer buffers.
pub fn pool(size: usize) -> Arc<BufferPool> {
    BufferPool::new(size, POOL_KEPT_BYTES_MAX)
}

/// A buffer of `len` bytes (at most the pool's size), filled by `fill`, as `Bytes`; its
/// memory comes back to the pool when the last `Bytes` pointing into it is dropped.
pub fn filled(pool: &Arc<BufferPool>, len: usize, fill: impl FnOnce(&mut [u8])) -> Bytes {
    let mut buffer = pool.take(len);
    fill(buffer.as_mut_slice());
    buffer.into_bytes()
}
