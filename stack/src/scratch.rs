//! [`ScratchDir`]: a temporary directory a command makes (a stack's storage, a disk baseline's
//! files, fio's working directory), removed when it is dropped — and listed while it lives, so
//! that a command interrupted by a signal can remove what is left ([`remove_left`]) even where
//! the directory's owner never got to drop it (a blocking task cut short by the end of the
//! process, a node process killed while writing into it).
//!
//! A benchmark interrupted after two seconds has already written gigabytes; leaving them in the
//! user's directory because Ctrl-C arrived is what this module is for.

use std::path::{Path, PathBuf};
use std::sync::Mutex;
use std::time::Duration;

/// The scratch directories of this process that are not yet removed.
static LIVING: Mutex<Vec<PathBuf>> = Mutex::new(Vec::new());

/// How many times [`remove_left`] tries a directory whose removal failed (a killed node
/// process may still be closing its files), and how long it waits between tries.
const REMOVE_TRIES_MAX: u32 = 5;
const REMOVE_RETRY_WAIT: Duration = Duration::from_millis(100);

/// A fresh directory named `<prefix>XXXXXX` inside `parent`, removed when dropped.
#[derive(Debug)]
pub struct ScratchDir {
    dir: Option<tempfile::TempDir>,
    path: PathBuf,
}

impl ScratchDir {
    /// Makes a fresh directory named `prefix` and random letters inside `parent`.
    pub fn new_in(parent: &Path, prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir_in(parent)?;
        Ok(Self::listed(dir))
    }

    /// Makes a fresh directory named `prefix` and random letters in the system's temporary
    /// directory.
    pub fn new(prefix: &str) -> std::io::Result<ScratchDir> {
        let dir = tempfile::Builder::new().prefix(prefix).tempdir()?;
        Ok(Self::listed(dir))
    }

    fn listed(dir: tempfile::TempDir) -> ScratchDir {
        // Absolute, so that a later change of directory cannot make the list name another.
        let path = std::path::absolute(dir.path()).unwrap_or_else(|_| dir.path().to_path_buf());
        living().push(path.clone());
        ScratchDir {
            dir: Some(dir),
            path,
        }
    }

    /// The directory.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Removes the directory now, saying why if it cannot.
    pub fn close(mut self) -> std::io::Result<()> {
        let removed = self.dir.take().map_or(Ok(()), tempfile::TempDir::close);
        if removed.is_ok() {
            living().retain(|p| p != &self.path);
        }
        removed
    }
}

impl Drop for ScratchDir {
    fn drop(&mut self) {
        // TempDir's drop removes the tree and says nothing if it cannot; a tree that is still
        // there stays listed for `remove_left`.
        drop(self.dir.take());
        if !self.path.exists() {
            living().retain(|p| p != &self.path);
        }
    }
}

fn living() -> std::sync::MutexGuard<'static, Vec<PathBuf>> {
    // A panic while the list was held leaves it as it was: still the list.
    LIVING
        .lock()
        .unwrap_or_else(std::sync::PoisonError::into_inner)
}

/// The scratch directories still present.
pub fn left() -> Vec<PathBuf> {
    living().iter().filter(|p| p.exists()).cloned().collect()
}

/// Removes every scratch directory still present, whoever holds it: what a command does as it
/// ends on a signal. Returns those it could not remove, each with the reason.
pub fn remove_left() -> Vec<(PathBuf, std::io::Error)> {
    let paths: Vec<PathBuf> = std::mem::take(&mut *living());
    remove_trees(paths)
}

/// Removes each tree, trying again a few times where a removal fails.
fn remove_trees(paths: Vec<PathBuf>) -> Vec<(PathBuf, std::io::Error)> {
    let mut failed = Vec::new();
    for path in paths {
        let mut tries = 0;
        loop {
            tries += 1;
            match std::fs::remove_dir_all(&path) {
                Ok(()) => break,
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => break,
                // A process killed while writing here may still be closing its files, and
                // a file made after the walk read its directory makes the last rmdir fail.
                Err(_) if tries < REMOVE_TRIES_MAX => std::thread::sleep(REMOVE_RETRY_WAIT),
                Err(e) => {
                    failed.push((path, e));
                    break;
                }
            }
        }
    }
    failed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dropped_scratch_dir_is_gone_and_no_longer_listed() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = ScratchDir::new_in(parent.path(), "iopath-t-").unwrap();
        let path = scratch.path().to_path_buf();
        std::fs::write(path.join("f"), b"x").unwrap();
        assert!(left().contains(&path));
        drop(scratch);
        assert!(!path.exists());
        assert!(!left().contains(&path));
    }

    #[test]
    fn a_directory_its_owner_never_dropped_stays_listed_and_is_removed() {
        let parent = tempfile::tempdir().unwrap();
        let scratch = ScratchDir::new_in(parent.path(), "iopath-t-").unwrap();
        let path = scratch.path().to_path_buf();
        std::fs::create_dir(path.join("sub")).unwrap();
        std::fs::write(path.join("sub/f"), b"x").unwrap();
        // As a task cut short by the end of the process: never dropped.
        std::mem::forget(scratch);
        assert!(left().contains(&path));
        // `remove_left` itself would take the other tests' directories too.
        living().retain(|p| p != &path);
        let failed = remove_trees(vec![path.clone()]);
        assert!(failed.is_empty(), "{failed:?}");
        assert!(!path.exists());
    }
}
