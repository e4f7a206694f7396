//! [`StorageDir`]: where a stack keeps its state — a temporary directory removed at the end,
//! or a directory the user names and keeps.

use std::path::{Path, PathBuf};

use crate::error::StackError;

/// The root of a stack's storage: each node's state lives in `root/<node name>`.
#[derive(Debug)]
pub enum StorageDir {
    /// A temporary directory, removed when this is dropped (or, if the command is interrupted
    /// first, as it ends: see [`crate::scratch`]).
    Temporary(crate::scratch::ScratchDir),
    /// A directory that outlives the run.
    Kept(PathBuf),
}

impl StorageDir {
    /// A fresh temporary directory named `iopath-<what>-*` inside `parent` (the system's
    /// temporary directory when `None`).
    pub fn temporary(what: &str, parent: Option<&Path>) -> Result<StorageDir, StackError> {
        let prefix = format!("iopath-{what}-");
        let made = match parent {
            Some(parent) => {
                create_dir_under_existing(parent)?;
                crate::scratch::ScratchDir::new_in(parent, &prefix)
            }
            None => crate::scratch::ScratchDir::new(&prefix),
        };
        let dir = made.map_err(|e| {
            StackError::system(
                format!(
                    "create a temporary directory in {}",
                    parent
                        .map_or_else(std::env::temp_dir, Path::to_path_buf)
                        .display()
                ),
                e,
            )
        })?;
        Ok(StorageDir::Temporary(dir))
    }

    /// `dir`, created if absent, kept afterwards.
    pub fn kept(dir: &Path) -> Result<StorageDir, StackError> {
        create_dir_under_existing(dir)?;
        let dir = std::path::absolute(dir).unwrap_or_else(|_| dir.to_path_buf());
        Ok(StorageDir::Kept(dir))
    }

    /// The root.
    pub fn path(&self) -> &Path {
        match self {
            StorageDir::Temporary(t) => t.path(),
            StorageDir::Kept(p) => p,
        }
    }

    /// Where node `name` keeps its state.
    pub fn node(&self, name: &str) -> PathBuf {
        self.path().join(name)
    }

    /// Whether it is removed at the end.
    pub fn is_temporary(&self) -> bool {
        matches!(self, StorageDir::Temporary(_))
    }
}

/// Makes `dir` if it is missing, but only inside a directory that exists: a mistyped `--dir`
/// (`/data/iopth/run1`) is refused with the command that makes the chain on purpose, rather
/// than growing a tree of directories nobody asked for.
fn create_dir_under_existing(dir: &Path) -> Result<(), StackError> {
    if dir.is_dir() {
        return Ok(());
    }
    let parent = match dir.parent() {
        Some(p) if p.as_os_str().is_empty() => Path::new("."),
        Some(p) => p,
        None => Path::new("/"),
    };
    if !parent.is_dir() {
        return Err(StackError::BadOption {
            option: "--dir".into(),
            why: format!(
                "{}: its parent {} does not exist (make the chain on purpose: mkdir -p {})",
                dir.display(),
                parent.display(),
                dir.display()
            ),
        });
    }
    std::fs::create_dir(dir)
        .or_else(|e| {
            // Made meanwhile by someone else: fine.
            if e.kind() == std::io::ErrorKind::AlreadyExists && dir.is_dir() {
                Ok(())
            } else {
                Err(e)
            }
        })
        .map_err(|e| StackError::system(format!("create {}", dir.display()), e))
}
