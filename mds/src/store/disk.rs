//! [`StoreDisk`]: where the store's durability steps land — the log's appends, every fsync,
//! and the check that the server life doing them has not ended.
//!
//! Two disks: [`RealDisk`], the file system itself (production: the store runs on tokio's
//! blocking pool), and the seeded simulation's [`SimulatedDisk`](super::simulated), which
//! runs on the caller's thread and models what a crash keeps. Everything else the store does
//! to its files — reads at start, the snapshot's and fresh log's temporary files, renames —
//! goes to the file system directly on both.

use std::fmt;
use std::fs::File;
use std::io::{self, Write as _};
use std::path::Path;

/// The store's durability steps (see the module documentation).
pub trait StoreDisk: fmt::Debug + Send + Sync {
    /// Appends `bytes` to the open log at `path`: they reach the page cache, not the disk.
    fn append(&self, log: &mut File, path: &Path, bytes: &[u8]) -> io::Result<()>;

    /// `fdatasync` of `file` at `path`: what was appended to it is durable.
    fn sync_data(&self, file: &File, path: &Path) -> io::Result<()>;

    /// `fsync` of `file` at `path`: its data and metadata are durable.
    fn sync_all(&self, file: &File, path: &Path) -> io::Result<()>;

    /// `fsync` of directory `dir`: renames and creations in it are durable.
    fn sync_dir(&self, dir: &Path) -> io::Result<()>;

    /// Fails once the server life this disk handle belongs to has ended in a crash, so a task
    /// of a crashed server still running cannot change the files the next life recovers from.
    /// The real disk's handle never ends.
    fn alive(&self) -> io::Result<()> {
        Ok(())
    }

    /// Whether the store's calls run on the caller's thread instead of tokio's blocking pool.
    /// Only a simulation's disk says yes: on its one-thread runtime, work finishing on other
    /// threads would interleave with the rest in an order no seed decides.
    fn runs_inline(&self) -> bool {
        false
    }
}

/// The file system itself: every step as it says.
#[derive(Debug, Default, Clone, Copy)]
pub struct RealDisk;

impl StoreDisk for RealDisk {
    fn append(&self, log: &mut File, _path: &Path, bytes: &[u8]) -> io::Result<()> {
        log.write_all(bytes)
    }

    fn sync_data(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_data()
    }

    fn sync_all(&self, file: &File, _path: &Path) -> io::Result<()> {
        file.sync_all()
    }

    fn sync_dir(&self, dir: &Path) -> io::Result<()> {
        File::open(dir).and_then(|d| d.sync_all())
    }
}
