//! Disk I/O behind one trait.
//!
//! Every byte the storage server puts on or takes off a disk goes through a [`DiskEngine`]:
//!
//! - [`uring::UringEngine`] — io_uring rings on dedicated threads; O_DIRECT where the offset,
//!   length and buffer are aligned. The default.
//! - [`psync::PsyncEngine`] — plain `pread`/`pwrite`/`fdatasync` on blocking threads: the
//!   teaching baseline, and the fallback where io_uring setup is refused.
//! - [`modeled::ModeledEngine`] — wraps a real engine and adds modeled disk time (bandwidth, a
//!   seek whenever the head moves between data and journal) for experiments on any hardware.
//! - [`faulty::FaultyEngine`] — wraps a real engine and fails fsyncs or writes on command, for
//!   fault tests.
//! - [`simulated::SimulatedDisk`] — plain calls on the caller's thread with a crash model
//!   (unsynced writes live in a volatile cache a crash drops or tears), for the seeded
//!   simulation.
//!
//! [`open_engine`] (in [`open`]) starts the real engine a server is configured with.
//!
//! Engines return boxed futures so that OSTs can hold any of them as `Arc<dyn DiskEngine>` and
//! await completions from the tokio runtime while the I/O happens on other threads.

pub mod aligned;
pub mod faulty;
pub mod modeled;
pub mod open;
pub mod psync;
pub mod simulated;
pub mod uring;

use aligned::{AlignedBuf, SizedPools, is_direct_aligned};
use bytes::Bytes;
pub use open::{EngineConfig, EngineKind, open_engine};
use serde::{Deserialize, Serialize};
use std::fmt;
use std::fs::{File, OpenOptions};
use std::future::Future;
use std::io;
use std::os::fd::{AsRawFd, RawFd};
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;

/// The largest single transfer an engine accepts (io_uring lengths are 32-bit).
pub const TRANSFER_MAX_BYTES: usize = 1 << 30;

/// A pending engine operation. Created by a submit call, resolved when the I/O completes.
pub type EngineFuture<T> = Pin<Box<dyn Future<Output = io::Result<T>> + Send + 'static>>;

/// One way of doing disk I/O on open [`EngineFile`]s.
///
/// Contract for every engine:
/// - `write_at` writes all of `data` or fails; it reports whether the bytes went to the device
///   with O_DIRECT (so they are on disk when the future resolves) or into the page cache (so
///   they need an `fsync` before anyone may call them durable).
/// - `read_at` returns up to `length` bytes; fewer only at end of file.
/// - `fsync` returns only when the file's data (and, for [`SyncKind::All`], its metadata) is
///   on stable storage. An error here means the kernel may have dropped dirty pages: callers
///   must not retry and pretend, they must stop (see `Ost`).
pub trait DiskEngine: Send + Sync + fmt::Debug {
    /// Short name for logs and results: `io_uring`, `psync`, `modeled(io_uring)`.
    fn name(&self) -> String;

    /// Writes all of `data` at `offset`.
    fn write_at(&self, file: &Arc<EngineFile>, offset: u64, data: Bytes)
    -> EngineFuture<WriteDone>;

    /// Reads up to `length` bytes at `offset`.
    fn read_at(&self, file: &Arc<EngineFile>, offset: u64, length: usize) -> EngineFuture<Bytes>;

    /// Makes the file durable: `fdatasync` for [`SyncKind::Data`], `fsync` for [`SyncKind::All`].
    fn fsync(&self, file: &Arc<EngineFile>, kind: SyncKind) -> EngineFuture<()>;

    /// Sets the file's size (shrinking drops bytes, growing adds zeros).
    fn truncate(&self, file: &Arc<EngineFile>, size_bytes: u64) -> EngineFuture<()>;

    /// Reserves blocks for `length` bytes at `offset` (`fallocate`, mode 0).
    fn allocate(&self, file: &Arc<EngineFile>, offset: u64, length: u64) -> EngineFuture<()>;

    /// Whether the target's other file-system calls (opening files, recovery's scan,
    /// checkpoints, unlinks, directory fsyncs) run on the calling thread rather than on
    /// tokio's blocking pool; see [`blocking`]. Only a simulation's engine says yes: on a
    /// one-thread runtime, work finishing on other threads would interleave with the rest in
    /// an order no seed decides.
    fn runs_inline(&self) -> bool {
        false
    }
}

/// Runs a blocking file-system `call` where `engine` says such calls run: on tokio's blocking
/// pool (every real engine), or right here on the caller's thread (an engine that
/// [runs inline](DiskEngine::runs_inline), for a deterministic simulation).
pub async fn blocking<T: Send + 'static>(
    engine: &dyn DiskEngine,
    call: impl FnOnce() -> T + Send + 'static,
) -> io::Result<T> {
    if engine.runs_inline() {
        return Ok(call());
    }
    tokio::task::spawn_blocking(call)
        .await
        .map_err(io::Error::other)
}

/// How much of a file an fsync makes durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SyncKind {
    /// `fdatasync`: the data and the metadata needed to read it back (size, block map).
    Data,
    /// `fsync`: everything, including timestamps.
    All,
}

/// What a completed write did.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteDone {
    /// True when every byte went through the O_DIRECT descriptor: the data has reached the
    /// device, not just the page cache.
    pub direct: bool,
}

/// Which region of a disk a file lives in. Only the disk model cares: moving the head between
/// the data region and the journal costs a seek.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum FileRole {
    /// Object files and raw benchmark files.
    Data,
    /// The journal (and the checkpoint written next to it).
    Journal,
}

/// How to open a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OpenMode {
    /// Create it; fail if it exists.
    CreateNew,
    /// Create it if missing.
    Create,
    /// It must exist.
    Existing,
}

/// An open file as engines see it: a buffered descriptor, and an O_DIRECT descriptor where the
/// file system supports one. Both stay open until the last `Arc` (including those held by
/// in-flight operations) is dropped, so the kernel never sees a closed fd mid-operation.
#[derive(Debug)]
pub struct EngineFile {
    path: PathBuf,
    role: FileRole,
    buffered: File,
    direct: Option<File>,
}

impl EngineFile {
    /// Opens `path` read-write. With `direct_io`, also opens an O_DIRECT descriptor; a file
    /// system that refuses O_DIRECT (older tmpfs) leaves it out and every write goes buffered.
    /// Blocking: call from a blocking context or through [`EngineFile::open_async`].
    pub fn open(
        path: &Path,
        role: FileRole,
        mode: OpenMode,
        direct_io: bool,
    ) -> io::Result<EngineFile> {
        let mut options = OpenOptions::new();
        options.read(true).write(true);
        match mode {
            OpenMode::CreateNew => options.create_new(true),
            OpenMode::Create => options.create(true),
            OpenMode::Existing => &mut options,
        };
        let buffered = options.open(path)?;
        let direct = if direct_io {
            let mut direct_options = OpenOptions::new();
            direct_options
                .read(true)
                .write(true)
                .custom_flags(libc::O_DIRECT);
            match direct_options.open(path) {
                Ok(file) => Some(file),
                Err(error) if error.raw_os_error() == Some(libc::EINVAL) => {
                    tracing::debug!(path = %path.display(), "file system refuses O_DIRECT; writes stay buffered");
                    None
                }
                Err(error) => return Err(error),
            }
        } else {
            None
        };
        Ok(EngineFile {
            path: path.to_path_buf(),
            role,
            buffered,
            direct,
        })
    }

    /// [`EngineFile::open`] on a blocking thread.
    pub async fn open_async(
        path: PathBuf,
        role: FileRole,
        mode: OpenMode,
        direct_io: bool,
    ) -> io::Result<Arc<EngineFile>> {
        let opened =
            tokio::task::spawn_blocking(move || EngineFile::open(&path, role, mode, direct_io))
                .await
                .map_err(io::Error::other)??;
        Ok(Arc::new(opened))
    }

    /// The path it was opened at.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Its disk region.
    pub fn role(&self) -> FileRole {
        self.role
    }

    /// True when an O_DIRECT descriptor is open.
    pub fn has_direct(&self) -> bool {
        self.direct.is_some()
    }

    /// The buffered descriptor.
    pub fn buffered_fd(&self) -> RawFd {
        self.buffered.as_raw_fd()
    }

    /// The buffered `File`, for blocking engines.
    pub fn buffered_file(&self) -> &File {
        &self.buffered
    }

    /// The O_DIRECT `File`, if any.
    pub fn direct_file(&self) -> Option<&File> {
        self.direct.as_ref()
    }
}

/// The bytes of a planned write: the caller's `Bytes` when usable as they are, or an aligned
/// copy when only the buffer address stood between the request and O_DIRECT.
#[derive(Debug)]
pub(crate) enum WriteBuf {
    /// The caller's buffer.
    Shared(Bytes),
    /// An aligned copy of it.
    Aligned(AlignedBuf),
}

impl WriteBuf {
    pub(crate) fn as_slice(&self) -> &[u8] {
        match self {
            WriteBuf::Shared(bytes) => bytes,
            WriteBuf::Aligned(buf) => buf.as_slice(),
        }
    }
}

/// Decides how a write reaches the file: through O_DIRECT when the file has a direct descriptor
/// and offset and length are aligned (copying into an aligned buffer if only the address is
/// not), otherwise through the page cache.
pub(crate) fn plan_write(file: &EngineFile, offset: u64, data: Bytes) -> (WriteBuf, bool) {
    if file.direct.is_none() || !is_direct_aligned(offset, data.len(), 0) {
        return (WriteBuf::Shared(data), false);
    }
    if is_direct_aligned(offset, data.len(), data.as_ptr() as usize) {
        (WriteBuf::Shared(data), true)
    } else {
        // One memcpy (≈10 GB/s here) buys a write that needs no fdatasync before the reply.
        (WriteBuf::Aligned(AlignedBuf::copy_from(&data)), true)
    }
}

/// True when a read of `length` at `offset` can use the O_DIRECT descriptor (the engine then
/// reads into an [`AlignedBuf`]).
pub(crate) fn plan_read_direct(file: &EngineFile, offset: u64, length: usize) -> bool {
    file.direct.is_some() && is_direct_aligned(offset, length, 0)
}

/// Reads up to this size land in a buffer from the engine's pools.
pub(crate) const READ_POOL_BUFFER_BYTES: usize = 1 << 20;
/// The smallest of the pools' size classes (a factor of four apart up to
/// [`READ_POOL_BUFFER_BYTES`]): a 64 KiB read holds a 64 KiB buffer, not a megabyte, for as
/// long as its bytes are kept (a reply in flight, a task's check).
pub(crate) const READ_POOL_SMALLEST_BYTES: usize = 4096;
/// Free read buffers an engine keeps, per size class.
pub(crate) const READ_POOL_KEPT_BYTES_MAX: u64 = 16 << 20;

/// The pools an engine reads into: aligned for O_DIRECT, and memory already faulted in.
pub(crate) fn read_pool() -> Arc<SizedPools> {
    Arc::new(SizedPools::new(
        READ_POOL_SMALLEST_BYTES,
        READ_POOL_BUFFER_BYTES,
        READ_POOL_KEPT_BYTES_MAX,
    ))
}

/// Rejects transfers an engine cannot express.
pub(crate) fn check_transfer(length: usize) -> io::Result<()> {
    if length > TRANSFER_MAX_BYTES {
        return Err(io::Error::new(
            io::ErrorKind::InvalidInput,
            format!("transfer of {length} bytes exceeds the engine limit of {TRANSFER_MAX_BYTES}"),
        ));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The same behaviour from every real engine: round trips, O_DIRECT choice, EOF reads.
    async fn exercise(engine: Arc<dyn DiskEngine>) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let file = EngineFile::open_async(path.clone(), FileRole::Data, OpenMode::CreateNew, true)
            .await
            .unwrap();
        // Aligned write from an aligned buffer: O_DIRECT if the file system allows it.
        let mut buf = AlignedBuf::zeroed(8192);
        buf.as_mut_slice()
            .iter_mut()
            .enumerate()
            .for_each(|(i, b)| *b = (i % 251) as u8);
        let aligned = buf.into_bytes();
        let done = engine.write_at(&file, 0, aligned.clone()).await.unwrap();
        assert_eq!(done.direct, file.has_direct());
        // Unaligned address but aligned offset/length: copied, still direct.
        let unaligned = Bytes::from(vec![9u8; 4097]).slice(1..);
        let done = engine.write_at(&file, 8192, unaligned).await.unwrap();
        assert_eq!(done.direct, file.has_direct());
        // Unaligned offset: buffered.
        let done = engine
            .write_at(&file, 12288 + 3, Bytes::from_static(b"tail"))
            .await
            .unwrap();
        assert!(!done.direct);
        engine.fsync(&file, SyncKind::Data).await.unwrap();
        let back = engine.read_at(&file, 0, 8192).await.unwrap();
        assert_eq!(back, aligned);
        let back = engine.read_at(&file, 12288, 4096).await.unwrap();
        assert_eq!(&back[..], b"\0\0\0tail", "short read at end of file");
        let past_end = engine.read_at(&file, 1 << 20, 10).await.unwrap();
        assert!(past_end.is_empty());
        engine.truncate(&file, 100).await.unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 100);
        engine.allocate(&file, 0, 1 << 16).await.unwrap();
        engine.fsync(&file, SyncKind::All).await.unwrap();
        assert_eq!(std::fs::metadata(&path).unwrap().len(), 1 << 16);
        let big = engine.read_at(&file, 0, TRANSFER_MAX_BYTES + 1).await;
        assert_eq!(big.unwrap_err().kind(), io::ErrorKind::InvalidInput);
    }

    #[tokio::test]
    async fn psync_engine_round_trips() {
        exercise(open_engine(&EngineConfig {
            kind: EngineKind::Psync,
            ..Default::default()
        }))
        .await;
    }

    #[tokio::test]
    async fn uring_engine_round_trips() {
        let engine = open_engine(&EngineConfig::default());
        exercise(engine).await;
    }

    #[tokio::test]
    async fn uring_engine_handles_many_requests_in_flight() {
        let engine = open_engine(&EngineConfig {
            ring_entries: 4,
            ..Default::default()
        });
        let dir = tempfile::tempdir().unwrap();
        let file = EngineFile::open_async(
            dir.path().join("f"),
            FileRole::Data,
            OpenMode::CreateNew,
            true,
        )
        .await
        .unwrap();
        let writes: Vec<_> = (0..64u64)
            .map(|i| {
                tokio::spawn(engine.write_at(&file, i * 4096, Bytes::from(vec![i as u8; 4096])))
            })
            .collect();
        for write in writes {
            write.await.unwrap().unwrap();
        }
        for i in 0..64u64 {
            let back = engine.read_at(&file, i * 4096, 4096).await.unwrap();
            assert!(back.iter().all(|&b| b == i as u8));
        }
    }
}
