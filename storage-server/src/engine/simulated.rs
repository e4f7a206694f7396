//! `SimulatedDisk`: the seeded simulation's disk — real files, plain calls on the caller's
//! thread, and a crash model.
//!
//! The simulation runs every node on one thread with tokio's paused clock, so the same seed
//! gives the same run only if nothing finishes on another thread: this engine does its
//! `pread`/`pwrite` right in the call (the futures it returns are already resolved) and says
//! [`DiskEngine::runs_inline`], so the target's other file-system calls run inline too.
//!
//! The crash model is a volatile write cache. A write reaches the file at once (a read sees
//! it, as from the page cache), but it is durable only once an `fsync` of its file follows.
//! [`SimulatedDisk::crash`] ends the server's life and decides, per file, what of the writes
//! made since that file's last fsync the disk kept: the first *k* of them (in the order they
//! were made) survive, the next may be torn at a sector boundary, the rest are undone — the
//! bytes they overwrote put back and the file cut to its size before them. Every engine handle
//! of the ended life fails every later call with EIO, so tasks of the crashed server that are
//! still running cannot write into the files the next life recovers from.
//!
//! What it does not model, and why it does not matter here: truncate and allocate are durable
//! at once (and first make the file's earlier writes durable, so an undo never reaches past a
//! cut); files created, renamed or removed through the file system (object files, the
//! checkpoint, the client list, the lost-ranges file) are durable at once — the target fsyncs
//! their directories before it relies on them, and that ordering is not what the simulation
//! tests. Writes go through the page cache (never O_DIRECT), so the target takes its
//! buffered-write path: data fdatasync'd before the reply.

use super::{DiskEngine, EngineFile, EngineFuture, SyncKind, WriteDone, check_transfer};
use bytes::Bytes;
use iopath_fabric::fault::SplitMix64;
use std::collections::BTreeMap;
use std::fs::OpenOptions;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

/// The granularity a torn write keeps: a sector.
pub const SECTOR_BYTES: u64 = 512;

/// One write since its file's last fsync, with what it overwrote (to undo it at a crash).
#[derive(Debug)]
struct Unsynced {
    offset: u64,
    length: u64,
    /// The bytes that were there before (shorter than `length` where the write went past the
    /// end of the file).
    before: Vec<u8>,
    /// The file's size before the write.
    size_before: u64,
}

#[derive(Debug, Default)]
struct DiskState {
    /// The server life the disk is attached to; handles of earlier lives are refused.
    life: u64,
    /// Writes not yet made durable, per file, in the order they were made.
    unsynced: BTreeMap<PathBuf, Vec<Unsynced>>,
}

/// What a crash did to the writes that were not durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CrashOutcome {
    /// Unsynced writes the disk kept whole.
    pub kept: u64,
    /// Unsynced writes the disk kept a prefix of.
    pub torn: u64,
    /// Unsynced writes undone.
    pub dropped: u64,
}

/// One server's disk across its crashes and restarts (see the module documentation). Hand a
/// server [`SimulatedDisk::engine`] at each start.
#[derive(Debug, Default)]
pub struct SimulatedDisk {
    state: Mutex<DiskState>,
}

impl SimulatedDisk {
    /// A disk with nothing unsynced, in its first life.
    pub fn new() -> Arc<SimulatedDisk> {
        Arc::new(SimulatedDisk::default())
    }

    /// An engine for the server's current life.
    pub fn engine(self: &Arc<Self>) -> Arc<dyn DiskEngine> {
        let life = self.lock().life;
        Arc::new(SimulatedEngine {
            disk: Arc::clone(self),
            life,
        })
    }

    /// Writes made and not yet fsync'd, over every file.
    pub fn unsynced_writes(&self) -> usize {
        self.lock().unsynced.values().map(Vec::len).sum()
    }

    /// The server crashed: ends its life (its engines refuse every later call) and decides,
    /// with `rng`, what the disk kept of each file's unsynced writes.
    pub fn crash(&self, rng: &mut SplitMix64) -> io::Result<CrashOutcome> {
        let unsynced = {
            let mut state = self.lock();
            state.life += 1;
            std::mem::take(&mut state.unsynced)
        };
        let mut outcome = CrashOutcome::default();
        for (path, writes) in unsynced {
            let kept = (rng.next() % (writes.len() as u64 + 1)) as usize;
            outcome.kept += kept as u64;
            let mut lost = writes.into_iter().skip(kept);
            let Some(first_lost) = lost.next() else {
                continue;
            };
            let later: Vec<Unsynced> = lost.collect();
            // Undo the later ones newest first, so each puts back what the one before left.
            for write in later.iter().rev() {
                undo(&path, write, 0)?;
                outcome.dropped += 1;
            }
            let sectors = first_lost.length.div_ceil(SECTOR_BYTES);
            let sectors_kept = if rng.next().is_multiple_of(2) {
                0
            } else {
                rng.next() % sectors
            };
            undo(&path, &first_lost, sectors_kept * SECTOR_BYTES)?;
            if sectors_kept > 0 {
                outcome.torn += 1;
            } else {
                outcome.dropped += 1;
            }
        }
        Ok(outcome)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DiskState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Puts back what `write` overwrote in the file at `path`, beyond its first `keep` bytes, and
/// cuts the file to the size it had then (or to the end of what is kept). A file that no
/// longer exists (its object was destroyed) has nothing to undo.
fn undo(path: &Path, write: &Unsynced, keep: u64) -> io::Result<()> {
    let file = match OpenOptions::new().write(true).open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error),
    };
    let keep = keep.min(write.length);
    let before_len = write.before.len() as u64;
    if keep < before_len {
        file.write_all_at(&write.before[keep as usize..], write.offset + keep)?;
    }
    let size_after_undo = write.size_before.max(write.offset + keep);
    if file.metadata()?.len() > size_after_undo {
        file.set_len(size_after_undo)?;
    }
    Ok(())
}

/// A [`SimulatedDisk`]'s engine for one server life.
#[derive(Debug)]
struct SimulatedEngine {
    disk: Arc<SimulatedDisk>,
    life: u64,
}

impl SimulatedEngine {
    /// The disk's state, if this engine's life has not ended.
    fn alive(&self) -> io::Result<std::sync::MutexGuard<'_, DiskState>> {
        let state = self.disk.lock();
        if state.life != self.life {
            return Err(io::Error::other(format!(
                "simulated disk: life {} ended in a crash (the disk is in life {})",
                self.life, state.life
            )));
        }
        Ok(state)
    }

    fn write(&self, file: &EngineFile, offset: u64, data: &[u8]) -> io::Result<WriteDone> {
        check_transfer(data.len())?;
        let mut state = self.alive()?;
        let handle = file.buffered_file();
        let size_before = handle.metadata()?.len();
        let mut before = vec![0; data.len()];
        let read = read_up_to(handle, &mut before, offset)?;
        before.truncate(read);
        handle.write_all_at(data, offset)?;
        state
            .unsynced
            .entry(file.path().to_path_buf())
            .or_default()
            .push(Unsynced {
                offset,
                length: data.len() as u64,
                before,
                size_before,
            });
        Ok(WriteDone { direct: false })
    }

    fn read(&self, file: &EngineFile, offset: u64, length: usize) -> io::Result<Bytes> {
        check_transfer(length)?;
        let _alive = self.alive()?;
        let mut buf = vec![0; length];
        let read = read_up_to(file.buffered_file(), &mut buf, offset)?;
        buf.truncate(read);
        Ok(Bytes::from(buf))
    }

    /// Makes every write so far to `file` durable.
    fn sync(&self, file: &EngineFile) -> io::Result<()> {
        self.alive()?.unsynced.remove(file.path());
        Ok(())
    }

    fn set_size(&self, file: &EngineFile, size_bytes: u64, grow_only: bool) -> io::Result<()> {
        let mut state = self.alive()?;
        state.unsynced.remove(file.path());
        let handle = file.buffered_file();
        if !grow_only || handle.metadata()?.len() < size_bytes {
            handle.set_len(size_bytes)?;
        }
        Ok(())
    }
}

/// Reads into `buf` at `offset` until it is full or the file ends; the bytes read.
fn read_up_to(file: &std::fs::File, buf: &mut [u8], offset: u64) -> io::Result<usize> {
    let mut filled = 0;
    while filled < buf.len() {
        match file.read_at(&mut buf[filled..], offset + filled as u64) {
            Ok(0) => break,
            Ok(n) => filled += n,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
            Err(error) => return Err(error),
        }
    }
    Ok(filled)
}

fn ready<T: Send + 'static>(result: io::Result<T>) -> EngineFuture<T> {
    Box::pin(std::future::ready(result))
}

impl DiskEngine for SimulatedEngine {
    fn name(&self) -> String {
        "simulated".into()
    }

    fn write_at(
        &self,
        file: &Arc<EngineFile>,
        offset: u64,
        data: Bytes,
    ) -> EngineFuture<WriteDone> {
        ready(self.write(file, offset, &data))
    }

    fn read_at(&self, file: &Arc<EngineFile>, offset: u64, length: usize) -> EngineFuture<Bytes> {
        ready(self.read(file, offset, length))
    }

    fn fsync(&self, file: &Arc<EngineFile>, _kind: SyncKind) -> EngineFuture<()> {
        ready(self.sync(file))
    }

    fn truncate(&self, file: &Arc<EngineFile>, size_bytes: u64) -> EngineFuture<()> {
        ready(self.set_size(file, size_bytes, false))
    }

    fn allocate(&self, file: &Arc<EngineFile>, offset: u64, length: u64) -> EngineFuture<()> {
        ready(self.set_size(file, offset.saturating_add(length), true))
    }

    fn runs_inline(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{FileRole, OpenMode};

    fn open(dir: &Path, name: &str) -> Arc<EngineFile> {
        Arc::new(
            EngineFile::open(&dir.join(name), FileRole::Data, OpenMode::Create, false).unwrap(),
        )
    }

    #[tokio::test]
    async fn a_synced_write_survives_a_crash_and_an_unsynced_one_may_not() {
        let dir = tempfile::tempdir().unwrap();
        let disk = SimulatedDisk::new();
        let engine = disk.engine();
        let file = open(dir.path(), "f");
        engine
            .write_at(&file, 0, Bytes::from(vec![1u8; 4096]))
            .await
            .unwrap();
        engine.fsync(&file, SyncKind::Data).await.unwrap();
        engine
            .write_at(&file, 4096, Bytes::from(vec![2u8; 4096]))
            .await
            .unwrap();
        assert_eq!(disk.unsynced_writes(), 1);
        // Seeds until one drops the write whole: the file is cut back to its synced size.
        let mut seed = 0;
        loop {
            let mut probe = SplitMix64(seed);
            let kept = probe.next() % 2;
            let torn = probe.next() % 2 == 1;
            if kept == 0 && !torn {
                break;
            }
            seed += 1;
        }
        let outcome = disk.crash(&mut SplitMix64(seed)).unwrap();
        assert_eq!(outcome.dropped, 1);
        assert_eq!(
            std::fs::read(dir.path().join("f")).unwrap(),
            vec![1u8; 4096]
        );
        let stale = engine.read_at(&file, 0, 10).await.unwrap_err();
        assert!(stale.to_string().contains("ended in a crash"), "{stale}");
        let next = disk.engine();
        let file = open(dir.path(), "f");
        assert_eq!(next.read_at(&file, 0, 8192).await.unwrap().len(), 4096);
    }

    #[tokio::test]
    async fn a_torn_write_keeps_whole_sectors_of_the_new_bytes_and_the_old_bytes_after() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        let disk = SimulatedDisk::new();
        let mut outcomes = CrashOutcome::default();
        for seed in 0..64 {
            std::fs::write(&path, vec![1u8; 8192]).unwrap(); // durable: not through the engine
            let engine = disk.engine();
            let file = open(dir.path(), "f");
            engine
                .write_at(&file, 0, Bytes::from(vec![2u8; 8192]))
                .await
                .unwrap();
            let outcome = disk.crash(&mut SplitMix64(seed)).unwrap();
            let bytes = std::fs::read(&path).unwrap();
            assert_eq!(bytes.len(), 8192);
            let new = bytes.iter().take_while(|&&b| b == 2).count();
            assert_eq!(new % SECTOR_BYTES as usize, 0, "a tear falls on a sector");
            assert!(
                bytes[new..].iter().all(|&b| b == 1),
                "old bytes after the tear"
            );
            outcomes.kept += outcome.kept;
            outcomes.torn += outcome.torn;
            outcomes.dropped += outcome.dropped;
        }
        assert!(
            outcomes.kept > 0 && outcomes.torn > 0 && outcomes.dropped > 0,
            "64 seeds keep, tear and drop the write: {outcomes:?}"
        );
    }
}
