//! `PsyncEngine`: plain `pwrite`/`pread`/`fdatasync` on tokio's blocking threads.
//!
//! The teaching baseline — one system call per request, nothing clever — and the fallback where
//! io_uring is refused. A semaphore bounds how many calls run at once.

use super::aligned::SizedPools;
use super::{
    DiskEngine, EngineFile, EngineFuture, SyncKind, WriteDone, check_transfer, plan_read_direct,
    plan_write, read_pool,
};
use bytes::Bytes;
use std::io;
use std::os::fd::AsRawFd;
use std::os::unix::fs::FileExt;
use std::sync::Arc;
use tokio::sync::Semaphore;

/// The pread/pwrite engine.
#[derive(Debug, Clone)]
pub struct PsyncEngine {
    /// One permit per call allowed to block a thread at a time.
    permits: Arc<Semaphore>,
    /// Where direct reads land.
    read_pool: Arc<SizedPools>,
}

impl PsyncEngine {
    /// An engine that runs at most `threads` (at least one) calls at a time.
    pub fn new(threads: usize) -> PsyncEngine {
        PsyncEngine {
            permits: Arc::new(Semaphore::new(threads.max(1))),
            read_pool: read_pool(),
        }
    }

    /// Runs `call` on a blocking thread once a permit is free.
    fn run<T: Send + 'static>(
        &self,
        call: impl FnOnce() -> io::Result<T> + Send + 'static,
    ) -> EngineFuture<T> {
        let permits = Arc::clone(&self.permits);
        Box::pin(async move {
            let _permit = permits.acquire_owned().await.map_err(io::Error::other)?;
            tokio::task::spawn_blocking(call)
                .await
                .map_err(io::Error::other)?
        })
    }
}

impl DiskEngine for PsyncEngine {
    fn name(&self) -> String {
        "psync".to_string()
    }

    fn write_at(
        &self,
        file: &Arc<EngineFile>,
        offset: u64,
        data: Bytes,
    ) -> EngineFuture<WriteDone> {
        let file = Arc::clone(file);
        self.run(move || {
            check_transfer(data.len())?;
            let (buf, direct) = plan_write(&file, offset, data);
            let target = match (direct, file.direct_file()) {
                (true, Some(direct_file)) => direct_file,
                _ => file.buffered_file(),
            };
            target.write_all_at(buf.as_slice(), offset)?;
            Ok(WriteDone { direct })
        })
    }

    fn read_at(&self, file: &Arc<EngineFile>, offset: u64, length: usize) -> EngineFuture<Bytes> {
        let file = Arc::clone(file);
        let pool = Arc::clone(&self.read_pool);
        self.run(move || {
            check_transfer(length)?;
            if plan_read_direct(&file, offset, length) {
                // Not cleared: the read overwrites it, and only the bytes read are handed on.
                let mut buf = pool.take(length);
                let source = file.direct_file().unwrap_or(file.buffered_file());
                // A short read of a regular file means end of file.
                let count = source.read_at(buf.as_mut_slice(), offset)?;
                buf.truncate(count);
                return Ok(buf.into_bytes());
            }
            let mut buf = vec![0u8; length];
            let mut filled = 0;
            // Bounded: each pass either fills more bytes or stops at end of file.
            while filled < length {
                let count = file
                    .buffered_file()
                    .read_at(&mut buf[filled..], offset + filled as u64)?;
                if count == 0 {
                    break;
                }
                filled += count;
            }
            buf.truncate(filled);
            Ok(Bytes::from(buf))
        })
    }

    fn fsync(&self, file: &Arc<EngineFile>, kind: SyncKind) -> EngineFuture<()> {
        let file = Arc::clone(file);
        self.run(move || match kind {
            SyncKind::Data => file.buffered_file().sync_data(),
            SyncKind::All => file.buffered_file().sync_all(),
        })
    }

    fn truncate(&self, file: &Arc<EngineFile>, size_bytes: u64) -> EngineFuture<()> {
        let file = Arc::clone(file);
        self.run(move || file.buffered_file().set_len(size_bytes))
    }

    fn allocate(&self, file: &Arc<EngineFile>, offset: u64, length: u64) -> EngineFuture<()> {
        let file = Arc::clone(file);
        self.run(move || fallocate(&file, offset, length))
    }
}

/// `fallocate(fd, 0, offset, length)`.
pub(crate) fn fallocate(file: &EngineFile, offset: u64, length: u64) -> io::Result<()> {
    let (Ok(offset), Ok(length)) = (libc::off_t::try_from(offset), libc::off_t::try_from(length))
    else {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            "fallocate range out of range",
        ));
    };
    // SAFETY: a plain system call on a descriptor `file` keeps open.
    let rc = unsafe { libc::fallocate(file.buffered_file().as_raw_fd(), 0, offset, length) };
    if rc == 0 {
        Ok(())
    } else {
        Err(io::Error::last_os_error())
    }
}
