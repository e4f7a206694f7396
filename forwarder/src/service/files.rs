//! The fyod's open files: what a handle names, and the table of them.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use iopath_fabric::Nid;
use iopath_layout::{Layout, ObjectRef};
use iopath_ost_client::LossesTold;

use crate::error::{ForwarderError, Result};
use crate::modes::{CallKind, IoMode};

/// One open file: a client's handle at this fyod.
#[derive(Debug)]
pub(crate) struct OpenFile {
    /// The handle.
    pub(crate) handle: u64,
    /// The compute node that opened it (only it may use the handle).
    pub(crate) owner: Nid,
    /// The compute node's id: its handles are closed when it disconnects, or when it connects
    /// again (it restarted without disconnecting).
    pub(crate) client: u64,
    /// The file's inode number: its MUNIX token and UFS cache key.
    pub(crate) ino: u64,
    /// Its layout (checked when it came off the wire).
    pub(crate) layout: Layout,
    /// MUNIX or MASYNC.
    pub(crate) io_mode: IoMode,
    /// How its calls are served when a call does not say.
    pub(crate) call_default: CallKind,
    /// Lost writes to its objects this handle has been told of (`Backend::check_lost`).
    pub(crate) lost_told: LossesTold,
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
    /// Handles closed because their compute node connected again, with its id, oldest first
    /// and at most `open_files_max` of them: a call still naming one is told why it is gone.
    retired: Mutex<VecDeque<(u64, u64)>>,
    /// Handles count up from [`first_handle`]: none names a file of another start.
    next_handle: AtomicU64,
    open_files_max: usize,
}

impl OpenFiles {
    pub(crate) fn new(open_files_max: u32) -> OpenFiles {
        OpenFiles {
            files: Mutex::default(),
            retired: Mutex::default(),
            next_handle: AtomicU64::new(first_handle()),
            open_files_max: open_files_max as usize,
        }
    }

    /// A fresh handle number.
    pub(crate) fn next_handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    /// Adds an open file, within the bound.
    pub(crate) fn insert(&self, file: Arc<OpenFile>) -> Result<()> {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
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
        let file = self
            .files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&handle)
            .filter(|f| f.owner == client)
            .cloned();
        file.ok_or_else(|| self.why_not_open(handle, client))
    }

    /// Why `handle` names no open file of `client`: closed when its compute node connected
    /// again, or never one of its own.
    fn why_not_open(&self, handle: u64, client: Nid) -> ForwarderError {
        let retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
        match retired.iter().find(|(h, _)| *h == handle) {
            Some(&(handle, client)) => ForwarderError::HandleOfEarlierConnection { handle, client },
            None => ForwarderError::NoSuchHandle { handle, client },
        }
    }

    /// Forgets every file compute node `client` opened; returns them, in the order they were
    /// opened.
    pub(crate) fn remove_of_client(&self, client: u64) -> Vec<Arc<OpenFile>> {
        let mut files = self.files.lock().unwrap_or_else(PoisonError::into_inner);
        let mut owned: Vec<u64> = files
            .values()
            .filter(|f| f.client == client)
            .map(|f| f.handle)
            .collect();
        owned.sort_unstable();
        owned.iter().filter_map(|h| files.remove(h)).collect()
    }

    /// Remembers that `closed` went because their compute node connected again, forgetting
    /// the oldest such handles beyond `open_files_max`.
    pub(crate) fn retire(&self, closed: &[Arc<OpenFile>]) {
        let mut retired = self.retired.lock().unwrap_or_else(PoisonError::into_inner);
        retired.extend(closed.iter().map(|f| (f.handle, f.client)));
        while retired.len() > self.open_files_max {
            retired.pop_front();
        }
    }

    /// Forgets a closed file.
    pub(crate) fn remove(&self, handle: u64) {
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&handle);
    }

    /// Files open now.
    pub(crate) fn count(&self) -> usize {
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }
}

/// The first handle of this start of the fyod: the microsecond clock's low 32 bits in the
/// high half, the count in the low half. A fyod keeps nothing across a restart, and its
/// compute nodes may still hold handles of the start before; numbered from 1 every time, such
/// a handle would name whatever file its node had opened since — and the call would run
/// there. Now it names nothing, and is refused with EBADF (two starts collide only if they
/// begin in the same microsecond of a 71-minute cycle, and then only on handles both gave).
fn first_handle() -> u64 {
    let micros = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_micros() as u64);
    ((micros & 0xFFFF_FFFF) << 32) | 1
}
