//! [`SimulatedDisk`]: the seeded simulation's disk under the metadata store — real files,
//! calls on the caller's thread, and a crash model.
//!
//! The simulation runs every node on one thread with tokio's paused clock, so the same seed
//! gives the same run only if nothing finishes on another thread: this disk says
//! [`StoreDisk::runs_inline`], and the service then runs the store's opening and its changes
//! right in the request's task instead of on the blocking pool.
//!
//! The crash model is a volatile write cache for the log. An append reaches the file at once
//! (a restart in the same life would read it), but it is durable only once an fsync of the
//! log follows. [`SimulatedDisk::crash`] ends the server's life and keeps, of the bytes
//! appended to each file since its last fsync, a prefix of a length the seed draws — all,
//! none, or a cut inside a record (a torn tail, which the store's start cuts off). Every
//! handle of the ended life then fails every call, so a task of the crashed server that is
//! still running cannot append to the log the next life recovers from.
//!
//! What it does not model, and why: a file written whole, fsync'd and renamed into place (the
//! snapshot, a fresh log) is durable at once, and so is a truncation — the store fsyncs
//! each of them and the directory before relying on them, and that ordering is not what the
//! simulation tests. fsyncs do not reach the real disk: the files are thrown away with the
//! run.

use std::collections::BTreeMap;
use std::fs::{File, OpenOptions};
use std::io::{self, Write as _};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, PoisonError};

use iopath_fabric::fault::SplitMix64;

use super::disk::StoreDisk;

#[derive(Debug, Default)]
struct DiskState {
    /// The server life the disk is attached to; handles of earlier lives are refused.
    life: u64,
    /// Per file appended to since its last fsync: its length at that fsync.
    unsynced: BTreeMap<PathBuf, u64>,
}

/// What a crash did to the bytes that were not durable.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct CrashOutcome {
    /// Bytes appended since the last fsync that the disk kept.
    pub kept_bytes: u64,
    /// Bytes appended since the last fsync that the disk lost.
    pub lost_bytes: u64,
}

/// One metadata server's disk across its crashes and restarts (see the module
/// documentation). Hand the store [`SimulatedDisk::handle`] at each start.
#[derive(Debug, Default)]
pub struct SimulatedDisk {
    state: Mutex<DiskState>,
}

impl SimulatedDisk {
    /// A disk with nothing unsynced, in its first life.
    pub fn new() -> Arc<SimulatedDisk> {
        Arc::new(SimulatedDisk::default())
    }

    /// A handle for the server's current life.
    pub fn handle(self: &Arc<Self>) -> Arc<dyn StoreDisk> {
        let life = self.lock().life;
        Arc::new(SimulatedHandle {
            disk: Arc::clone(self),
            life,
        })
    }

    /// Files appended to and not yet fsync'd.
    pub fn unsynced_files(&self) -> usize {
        self.lock().unsynced.len()
    }

    /// The server crashed: ends its life (its handles refuse every later call) and decides,
    /// with `rng`, how much of each file's unsynced bytes the disk kept.
    pub fn crash(&self, rng: &mut SplitMix64) -> io::Result<CrashOutcome> {
        let unsynced = {
            let mut state = self.lock();
            state.life += 1;
            std::mem::take(&mut state.unsynced)
        };
        let mut outcome = CrashOutcome::default();
        for (path, synced_len) in unsynced {
            let file = match OpenOptions::new().write(true).open(&path) {
                Ok(file) => file,
                // Replaced or removed since: nothing of it to undo.
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) => return Err(error),
            };
            let len = file.metadata()?.len();
            let appended = len.saturating_sub(synced_len);
            if appended == 0 {
                // Replaced since by a shorter file (a compaction's fresh log).
                continue;
            }
            let kept = rng.next() % (appended + 1);
            file.set_len(synced_len + kept)?;
            outcome.kept_bytes += kept;
            outcome.lost_bytes += appended - kept;
        }
        Ok(outcome)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, DiskState> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A [`SimulatedDisk`]'s handle for one server life.
#[derive(Debug)]
struct SimulatedHandle {
    disk: Arc<SimulatedDisk>,
    life: u64,
}

impl SimulatedHandle {
    /// The disk's state, if this handle's life has not ended.
    fn state(&self) -> io::Result<std::sync::MutexGuard<'_, DiskState>> {
        let state = self.disk.lock();
        if state.life != self.life {
            return Err(io::Error::other(format!(
                "simulated disk: life {} ended in a crash (the disk is in life {})",
                self.life, state.life
            )));
        }
        Ok(state)
    }
}

impl StoreDisk for SimulatedHandle {
    fn append(&self, log: &mut File, path: &Path, bytes: &[u8]) -> io::Result<()> {
        let mut state = self.state()?;
        if !state.unsynced.contains_key(path) {
            let synced_len = log.metadata()?.len();
            state.unsynced.insert(path.to_path_buf(), synced_len);
        }
        log.write_all(bytes)
    }

    fn sync_data(&self, _file: &File, path: &Path) -> io::Result<()> {
        self.state()?.unsynced.remove(path);
        Ok(())
    }

    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()> {
        self.sync_data(file, path)
    }

    fn sync_dir(&self, _dir: &Path) -> io::Result<()> {
        self.state().map(drop)
    }

    fn alive(&self) -> io::Result<()> {
        self.state().map(drop)
    }

    fn runs_inline(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used)] // tests

    use super::*;

    #[test]
    fn a_synced_append_survives_a_crash_and_an_unsynced_one_may_not() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("log");
        let disk = SimulatedDisk::new();
        let handle = disk.handle();
        let mut log = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .unwrap();
        handle.append(&mut log, &path, b"durable").unwrap();
        handle.sync_data(&log, &path).unwrap();
        handle.append(&mut log, &path, b"+volatile").unwrap();
        assert_eq!(disk.unsynced_files(), 1);
        // A seed that keeps none of the 9 unsynced bytes: the log is back at its synced length.
        let seed = (0..)
            .find(|&s| SplitMix64(s).next().is_multiple_of(10))
            .unwrap();
        let outcome = disk.crash(&mut SplitMix64(seed)).unwrap();
        assert_eq!(
            outcome,
            CrashOutcome {
                kept_bytes: 0,
                lost_bytes: 9
            }
        );
        assert_eq!(std::fs::read(&path).unwrap(), b"durable");
        assert_eq!(disk.unsynced_files(), 0);

        // The ended life's handle refuses everything; the next life's works.
        let stale = handle.append(&mut log, &path, b"late").unwrap_err();
        assert!(stale.to_string().contains("ended in a crash"), "{stale}");
        assert!(handle.alive().is_err());
        let next = disk.handle();
        next.alive().unwrap();
        assert!(next.runs_inline());
    }
}
