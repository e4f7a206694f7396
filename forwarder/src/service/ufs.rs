//! The UFS path: the fyod moves the data itself. "The fyod allocates a buffer and uses the
//! Portals interface to copy the user file data from the compute node to its buffer in the
//! Service Node. The fyod then uses TOS system calls to write the file data to the UFS
//! file. The buffer allocated by the fyod is up to 128KB in size" (§2.3).
//!
//! One write, end to end:
//!
//! ```text
//! client: WRITE(handle, off, desc{17@mem0, r42, crc}) ─▶ fyod
//! fyod:   per 128 KiB chunk: take a pool buffer ─▶ bulk GET of the chunk from 17@mem0
//!         ─▶ cache: whole block → OST WRITE of the fyod's buffer (OSS pulls from the fyod)
//!                   small write → held in the cache (write-behind), acknowledged from memory
//!         ─▶ buffer back to the pool
//! reply:  bytes, checksum of everything pulled; no stamps: the fyod's OstClient keeps its own
//!         copy of each uncommitted storage write for replay, so the client's memory is free
//! ```
//!
//! A file's UFS calls are serialised on the fyod (a lock per file): a UFS file lives on one
//! storage target, where concurrent requests "queue up ... and be processed sequentially"
//! anyway (§3.3.1), and it keeps every flush of the cache in the order its writes were made.
//! Calls on different files run concurrently, bounded by the buffer pool.
//!
//! **Coherence.** Opening a file drops this fyod's cache of it (close-to-open). Under MUNIX a
//! call holds the file's token: if another fyod held it since this one did, the cache of the
//! file is dropped first, and a write's held-back bytes are flushed before the token goes
//! back. Under MASYNC fyods' caches are not kept coherent — the paper's "a record in a file
//! might end up containing partial data from each process".

use iopath_fabric::trace::Step;
use std::collections::HashMap;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use iopath_fabric::{BufferDescriptor, Nid, Node};
use iopath_mds::ObjectRef;
use iopath_proto::fyod as pb;
use tokio::sync::{OwnedMutexGuard, Semaphore, SemaphorePermit};

use super::backend::Backend;
use super::files::OpenFile;
use crate::error::{ForwarderError, Result};
use crate::limits::{FyodLimits, UFS_CHUNK_BYTES};
use crate::policy::cache::{CacheCounters, Flush, UfsCache, WriteDecision};
use crate::policy::token::Grant;
use crate::policy::ufs::chunks;

/// The UFS machinery of one fyod.
#[derive(Debug)]
pub(crate) struct Ufs {
    me: Nid,
    pool: Semaphore,
    buffers_max: u32,
    buffers_in_use: AtomicU32,
    buffers_in_use_peak: AtomicU32,
    cache: Mutex<UfsCache>,
    locks: Mutex<HashMap<u64, Arc<tokio::sync::Mutex<()>>>>,
    locks_max: usize,
    /// Bytes pulled from and pushed to compute nodes by this fyod.
    pub(crate) bytes_through: AtomicU64,
}

/// One pool buffer, in use until dropped.
struct Buffer<'a> {
    _permit: SemaphorePermit<'a>,
    in_use: &'a AtomicU32,
}

impl Drop for Buffer<'_> {
    fn drop(&mut self) {
        self.in_use.fetch_sub(1, Ordering::Relaxed);
    }
}

impl Ufs {
    pub(crate) fn new(me: Nid, limits: &FyodLimits) -> Ufs {
        Ufs {
            me,
            pool: Semaphore::new(limits.ufs_buffers_max.max(1) as usize),
            buffers_max: limits.ufs_buffers_max.max(1),
            buffers_in_use: AtomicU32::new(0),
            buffers_in_use_peak: AtomicU32::new(0),
            cache: Mutex::new(UfsCache::new(
                UFS_CHUNK_BYTES,
                limits.ufs_cache_blocks_max,
                limits.ufs_dirty_blocks_max,
            )),
            locks: Mutex::default(),
            locks_max: limits.open_files_max as usize,
            bytes_through: AtomicU64::new(0),
        }
    }

    /// (pool size, most buffers ever in use at once).
    pub(crate) fn buffers(&self) -> (u32, u32) {
        (
            self.buffers_max,
            self.buffers_in_use_peak.load(Ordering::Relaxed),
        )
    }

    pub(crate) fn cache_counters(&self) -> CacheCounters {
        self.cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .counters()
    }

    /// A 128 KiB buffer from the pool; waits while all are in use.
    async fn buffer(&self) -> Result<Buffer<'_>> {
        let permit = self
            .pool
            .acquire()
            .await
            .map_err(|_| ForwarderError::Fabric(iopath_fabric::FabricError::ShuttingDown))?;
        let now = self.buffers_in_use.fetch_add(1, Ordering::Relaxed) + 1;
        self.buffers_in_use_peak.fetch_max(now, Ordering::Relaxed);
        assert!(
            now <= self.buffers_max,
            "buffers in use never exceed the pool"
        );
        Ok(Buffer {
            _permit: permit,
            in_use: &self.buffers_in_use,
        })
    }

    /// Serialises the UFS calls of one file on this fyod.
    async fn lock(&self, ino: u64) -> OwnedMutexGuard<()> {
        let lock = {
            let mut locks = self.locks.lock().unwrap_or_else(PoisonError::into_inner);
            if locks.len() >= self.locks_max {
                // Forget locks nobody holds or waits for (the map holds the only reference).
                locks.retain(|_, lock| Arc::strong_count(lock) > 1);
            }
            Arc::clone(locks.entry(ino).or_default())
        };
        lock.lock_owned().await
    }

    /// Writes held-back bytes to storage, in order.
    async fn apply(&self, backend: &Backend, object: ObjectRef, flushes: Vec<Flush>) -> Result<()> {
        for flush in flushes {
            backend
                .write_bytes(object, flush.offset_bytes, flush.data)
                .await?;
        }
        Ok(())
    }

    /// Under MUNIX: drops the cache of the file if another fyod held its token since we did.
    async fn revalidate(
        &self,
        backend: &Backend,
        file: &OpenFile,
        token: Option<Grant>,
    ) -> Result<()> {
        if let Some(grant) = token
            && grant.previous != Some(self.me)
        {
            let flushes = self
                .cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .invalidate_file(file.ino);
            self.apply(backend, file.first_object(), flushes).await?;
        }
        Ok(())
    }

    async fn flush_file(&self, backend: &Backend, file: &OpenFile) -> Result<()> {
        let flushes = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .flush_file(file.ino);
        self.apply(backend, file.first_object(), flushes).await
    }

    /// Open: drop what this fyod cached of the file (close-to-open coherence).
    pub(crate) async fn open(&self, backend: &Backend, file: &OpenFile) -> Result<()> {
        let _file = self.lock(file.ino).await;
        let flushes = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .invalidate_file(file.ino);
        self.apply(backend, file.first_object(), flushes).await
    }

    /// A write: pulled chunk by chunk into pool buffers, then written through or held back.
    pub(crate) async fn write(
        &self,
        backend: &Backend,
        node: &Node,
        file: &OpenFile,
        offset: u64,
        buffer: BufferDescriptor,
        token: Option<Grant>,
    ) -> Result<pb::CallReply> {
        let _file = self.lock(file.ino).await;
        self.revalidate(backend, file, token).await?;
        let object = file.first_object();
        node.trace_log().record_current(|| {
            Step::new(
                "fyod",
                "buffer",
                format!(
                    "UFS write of {} B: the fyod pulls it from {} into its own {} KiB buffers, \
                     then writes target {} object {} itself",
                    buffer.length,
                    buffer.owner,
                    UFS_CHUNK_BYTES / 1024,
                    object.target,
                    object.object_id
                ),
            )
        });
        let kind = buffer.checksum_kind;
        let mut checksum = kind.empty();
        for chunk in chunks(offset, buffer.length, UFS_CHUNK_BYTES)? {
            let _buffer = self.buffer().await?;
            let desc = buffer
                .slice(chunk.buffer_offset_bytes, chunk.length_bytes)
                .ok_or_else(|| ForwarderError::invalid("buffer", "a chunk falls outside it"))?;
            // The fyod's copy, pulled from the compute node; the fabric checks every chunk.
            let (data, chunk_checksum) = node.bulk_get_checked(&desc).await?;
            self.bytes_through
                .fetch_add(data.len() as u64, Ordering::Relaxed);
            checksum = kind.combine(checksum, chunk_checksum, data.len() as u64);
            let (decision, flushes) = self
                .cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .write(file.ino, chunk.block, chunk.block_offset_bytes, &data);
            // Older held-back bytes of this file reach storage before this write's.
            self.apply(backend, object, flushes).await?;
            if decision == WriteDecision::Through {
                backend
                    .write_bytes(object, chunk.file_offset_bytes, data.clone())
                    .await?;
                self.cache
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .wrote(file.ino, chunk.block, chunk.block_offset_bytes, &data);
            }
        }
        if token.is_some() {
            // MUNIX: nothing stays held back once the token goes to another fyod.
            self.flush_file(backend, file).await?;
        }
        // Each chunk was verified as it arrived; the whole must be what the client described
        // (a client that changed its buffer during the call is caught here).
        if let Some(expected) = buffer.checksum
            && expected != checksum
        {
            return Err(ForwarderError::ChecksumMismatch {
                what: "UFS write (the bytes the fyod pulled)",
                expected,
                actual: checksum,
            });
        }
        Ok(pb::CallReply {
            bytes: buffer.length,
            checksum,
            ..pb::CallReply::default()
        })
    }

    /// A read: chunk by chunk from the cache or storage into a pool buffer, pushed to the
    /// client's sink. Stops at the end of the file.
    pub(crate) async fn read(
        &self,
        backend: &Backend,
        node: &Node,
        file: &OpenFile,
        offset: u64,
        sink: BufferDescriptor,
        token: Option<Grant>,
    ) -> Result<pb::CallReply> {
        let _file = self.lock(file.ino).await;
        self.revalidate(backend, file, token).await?;
        let object = file.first_object();
        let first_block = offset / UFS_CHUNK_BYTES;
        let later_dirty = self
            .cache
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .dirty_from(file.ino, first_block);
        if later_dirty {
            // Held-back bytes past the object's current end: storage must have them, or a
            // short read would end the file too early.
            self.flush_file(backend, file).await?;
        }
        let kind = sink.checksum_kind;
        let mut checksum = kind.empty();
        let mut visible = 0;
        for chunk in chunks(offset, sink.length, UFS_CHUNK_BYTES)? {
            let _buffer = self.buffer().await?;
            let start = chunk.block_offset_bytes;
            let cached = self
                .cache
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .read(file.ino, chunk.block, start..start + chunk.length_bytes);
            let data = match cached {
                Some(data) => data,
                None => {
                    let dirty = self
                        .cache
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .take_dirty(file.ino, chunk.block);
                    self.apply(backend, object, dirty.into_iter().collect())
                        .await?;
                    let block_start = chunk.block * UFS_CHUNK_BYTES;
                    let whole = backend
                        .read_bytes(object, block_start, UFS_CHUNK_BYTES)
                        .await?;
                    self.cache
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .fill(file.ino, chunk.block, &whole);
                    let end = (start + chunk.length_bytes).min(whole.len() as u64);
                    if start < end {
                        whole.slice(start as usize..end as usize)
                    } else {
                        Bytes::new()
                    }
                }
            };
            let got = data.len() as u64;
            if got > 0 {
                let desc = sink
                    .slice(chunk.buffer_offset_bytes, got)
                    .ok_or_else(|| ForwarderError::invalid("buffer", "a chunk falls outside it"))?;
                let pushed = node.bulk_put(&desc, data).await?;
                self.bytes_through.fetch_add(got, Ordering::Relaxed);
                checksum = kind.combine(checksum, pushed, got);
            }
            visible += got;
            if got < chunk.length_bytes {
                break; // the end of the file
            }
        }
        Ok(pb::CallReply {
            bytes: visible,
            checksum,
            ..pb::CallReply::default()
        })
    }

    /// fsync: held-back bytes to storage, then the target's journal committed.
    pub(crate) async fn fsync(&self, backend: &Backend, file: &OpenFile) -> Result<()> {
        let _file = self.lock(file.ino).await;
        self.flush_file(backend, file).await?;
        backend.sync_targets([file.first_object().target]).await?;
        backend.check_lost(file, &[file.first_object()])
    }

    /// close: held-back bytes to storage (not committed: close is not fsync).
    pub(crate) async fn close(&self, backend: &Backend, file: &OpenFile) -> Result<()> {
        let _file = self.lock(file.ino).await;
        self.flush_file(backend, file).await
    }

    /// Cuts or extends the file: held-back bytes to storage first (so none lands past the
    /// new end afterwards), then its one object.
    pub(crate) async fn truncate(
        &self,
        backend: &Backend,
        file: &OpenFile,
        size_bytes: u64,
    ) -> Result<()> {
        let _file = self.lock(file.ino).await;
        self.flush_file(backend, file).await?;
        backend
            .punch_objects(vec![(file.first_object(), size_bytes)])
            .await
    }

    /// The file's size: held-back bytes to storage, then its one object's size.
    pub(crate) async fn size(&self, backend: &Backend, file: &OpenFile) -> Result<u64> {
        let _file = self.lock(file.ino).await;
        self.flush_file(backend, file).await?;
        let sizes = backend.object_sizes(&[file.first_object()]).await?;
        Ok(sizes[0])
    }
}
