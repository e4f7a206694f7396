//! The fyod's open files: what a handle names, and the table of them.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use iopath_fabric::Nid;
use iopath_layout::{Layout, ObjectRef};

use crate::error::{ForwarderError, Result};
use crate::modes::{CallKind, IoMode};

/// One open file: a client's handle at this fyod.
#[derive(Debug)]
pub(crate) struct OpenFile {
    /// The handle.
    pub(crate) handle: u64,
    /// The compute node that opened it (only it may use the handle).
    pub(crate) owner: Nid,
    /// The file's inode number: its MUNIX token and UFS cache key.
    pub(crate) ino: u64,
    /// Its layout (checked when it came off the wire).
    pub(crate) layout: Layout,
    /// MUNIX or MASYNC.
    pub(crate) io_mode: IoMode,
    /// How its calls are served when a call does not say.
    pub(crate) call_default: CallKind,
}

impl OpenFile {
    /// The first object: a UFS file's only one.
    pub(crate) fn first_object(&self) -> ObjectRef {
        self.layout.objects()[0]
    }
}

/// The table of open files.
#[derive(Debug)]
pub(crate) struct OpenFiles {
    files: Mutex<HashMap<u64, Arc<OpenFile>>>,
    next_handle: AtomicU64,
    open_files_max: usize,
}

impl OpenFiles {
    pub(crate) fn new(open_files_max: u32) -> OpenFiles {
        OpenFiles {
            files: Mutex::default(),
            next_handle: AtomicU64::new(1),
            open_files_max: open_files_max as usize,
        }
    }

    /// A fresh handle number.
    pub(crate) fn next_handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    /// Adds an open file, within the bound.
    pub(crate) fn insert(&self, file: Arc<OpenFile>) -> Result<()> {
        let mut files = self.files.lock().expect("open files lock poisoned");
        if files.len() >= self.open_files_max {
            return Err(ForwarderError::LimitReached {
                what: "open files at the fyod",
                max: self.open_files_max as u64,
            });
        }
        files.insert(file.handle, file);
        Ok(())
    }

    /// The file `handle` names, if `client` opened it.
    pub(crate) fn get(&self, handle: u64, client: Nid) -> Result<Arc<OpenFile>> {
        self.files
            .lock()
            .expect("open files lock poisoned")
            .get(&handle)
            .filter(|f| f.owner == client)
            .cloned()
            .ok_or(ForwarderError::NoSuchHandle { handle, client })
    }

    /// Forgets every file `client` opened; returns them.
    pub(crate) fn remove_owned(&self, client: Nid) -> Vec<Arc<OpenFile>> {
        let mut files = self.files.lock().expect("open files lock poisoned");
        let owned: Vec<u64> = files
            .values()
            .filter(|f| f.owner == client)
            .map(|f| f.handle)
            .collect();
        owned.iter().filter_map(|h| files.remove(h)).collect()
    }

    /// Forgets a closed file.
    pub(crate) fn remove(&self, handle: u64) {
        self.files
            .lock()
            .expect("open files lock poisoned")
            .remove(&handle);
    }

    /// Files open now.
    pub(crate) fn count(&self) -> usize {
        self.files.lock().expect("open files lock poisoned").len()
    }
}
