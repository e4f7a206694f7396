//! The object files a target holds open: at most `open_objects_max` of them, the least
//! recently used idle one closed first, and at most `open_objects_max` in use by operations.
//!
//! A real OST's objects are inodes of its backing file system, and an idle one costs no open
//! file. Here each object is a file with two descriptors (buffered and O_DIRECT), so a target
//! that kept every object open would need two descriptors per object it ever stored: a stack
//! of 4,096 tasks writing a file each, striped over eight targets, would hold 65,536. The
//! cache keeps the descriptors in use, and reopens an object on its next use after it was
//! closed.
//!
//! An operation holds its file as an [`InUse`], with one of the target's places for files in
//! use (a semaphore of `open_objects_max` permits, as a real OSS has a bounded pool of I/O
//! threads). The cache never closes a file an operation holds, and before an operation opens
//! a file it closes idle ones, least recently used first, until no more are idle than places
//! are free: idle files, files in use and files being opened together stay within the
//! places. Past that, only the journal holds files open: an O_DIRECT write's, until the
//! commit that fdatasyncs it (at most `uncommitted_records_max`), closed by the commit when
//! the cache let it go. Without the places, 18,688 tasks reading a file each at once from
//! 672 targets opened every file together and ran out of descriptors.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::sync::Arc;

use tokio::sync::OwnedSemaphorePermit;

use crate::engine::EngineFile;
use crate::ids::ObjectId;

/// An object's file, held open for one operation with one of its target's places for files
/// in use: the place comes back, and the cache may close the file, when the operation drops
/// it.
#[derive(Debug)]
pub(crate) struct InUse {
    held: Held,
    _place: OwnedSemaphorePermit,
}

impl InUse {
    pub(crate) fn new(held: Held, place: OwnedSemaphorePermit) -> InUse {
        InUse {
            held,
            _place: place,
        }
    }

    /// The file alone, to be kept past the operation (the journal keeps an O_DIRECT write's
    /// file until its commit): the cache may close its copy meanwhile, and the descriptors
    /// close when the last copy goes.
    pub(crate) fn file(&self) -> Arc<EngineFile> {
        Arc::clone(&self.held.file)
    }
}

impl Deref for InUse {
    type Target = Arc<EngineFile>;

    fn deref(&self) -> &Arc<EngineFile> {
        &self.held.file
    }
}

/// A cached file and a mark of its use: while a copy of the mark lives, the cache keeps the
/// file open.
#[derive(Debug, Clone)]
pub(crate) struct Held {
    file: Arc<EngineFile>,
    user: Arc<()>,
}

impl Held {
    /// The file.
    #[cfg(test)]
    pub(crate) fn file(&self) -> &Arc<EngineFile> {
        &self.file
    }
}

/// Object files held open by one target, with their order of last use.
#[derive(Debug, Default)]
pub(crate) struct OpenFiles {
    /// Each open file and the tick of its last use.
    files: HashMap<ObjectId, (Held, u64)>,
    /// Last-use tick to object: the first entry is the least recently used.
    order: BTreeMap<u64, ObjectId>,
    tick: u64,
}

impl OpenFiles {
    /// The open file of `object`, marked as just used and in use until the copy returned is
    /// dropped; `None` when it is not open.
    pub(crate) fn get(&mut self, object: ObjectId) -> Option<Held> {
        let tick = self.next_tick();
        let (held, used) = self.files.get_mut(&object)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, object);
        Some(held.clone())
    }

    /// Keeps `file` open as `object`'s, in use until the copy returned is dropped. When
    /// another caller opened the object meanwhile, its file is kept and returned, so one
    /// object never has two open files here.
    pub(crate) fn insert(&mut self, object: ObjectId, file: Arc<EngineFile>) -> Held {
        if let Some(open) = self.get(object) {
            return open;
        }
        let tick = self.next_tick();
        let held = Held {
            file,
            user: Arc::new(()),
        };
        self.files.insert(object, (held.clone(), tick));
        self.order.insert(tick, object);
        held
    }

    /// Closes the least recently used files no operation holds until at most `idle_max` are
    /// left.
    pub(crate) fn close_idle_beyond(&mut self, idle_max: usize) {
        let idle = |held: &Held| Arc::strong_count(&held.user) == 1;
        let mut surplus = self
            .files
            .values()
            .filter(|(held, _)| idle(held))
            .count()
            .saturating_sub(idle_max);
        let mut closing = Vec::with_capacity(surplus);
        for (&used, object) in &self.order {
            if surplus == 0 {
                break;
            }
            if idle(&self.files[object].0) {
                closing.push((used, *object));
                surplus -= 1;
            }
        }
        for (used, object) in closing {
            self.order.remove(&used);
            self.files.remove(&object);
        }
    }

    /// Closes `object`'s file (it was destroyed).
    pub(crate) fn remove(&mut self, object: ObjectId) {
        if let Some((_, used)) = self.files.remove(&object) {
            self.order.remove(&used);
        }
    }

    /// Files open now.
    #[cfg(test)]
    pub(crate) fn len(&self) -> usize {
        self.files.len()
    }

    fn next_tick(&mut self) -> u64 {
        self.tick += 1;
        self.tick
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{FileRole, OpenMode};

    fn file(dir: &std::path::Path, name: &str) -> Arc<EngineFile> {
        let path = dir.join(name);
        Arc::new(EngineFile::open(&path, FileRole::Data, OpenMode::Create, false).unwrap())
    }

    #[test]
    fn the_least_recently_used_idle_files_are_closed_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut open = OpenFiles::default();
        let (a, b, c) = (ObjectId(1), ObjectId(2), ObjectId(3));
        open.insert(a, file(dir.path(), "a"));
        open.insert(b, file(dir.path(), "b"));
        // a is used again, so b is now the least recently used.
        assert!(open.get(a).is_some());
        open.insert(c, file(dir.path(), "c"));
        open.close_idle_beyond(2);
        assert_eq!(open.len(), 2);
        assert!(open.get(b).is_none(), "b was the least recently used");
        assert!(open.get(a).is_some());
        assert!(open.get(c).is_some());
        open.remove(a);
        assert!(open.get(a).is_none());
        assert_eq!(open.len(), 1);
    }

    #[test]
    fn a_second_open_of_the_same_object_returns_the_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut open = OpenFiles::default();
        let first = open.insert(ObjectId(7), file(dir.path(), "x"));
        let second = open.insert(ObjectId(7), file(dir.path(), "x"));
        assert!(Arc::ptr_eq(first.file(), second.file()));
        assert_eq!(open.len(), 1);
    }

    #[test]
    fn a_file_in_use_is_not_closed_until_it_is_idle() {
        let dir = tempfile::tempdir().unwrap();
        let mut open = OpenFiles::default();
        let in_use = open.insert(ObjectId(1), file(dir.path(), "a"));
        drop(open.insert(ObjectId(2), file(dir.path(), "b")));
        // No idle file may stay, but the older one is in use: only the idle one goes.
        open.close_idle_beyond(0);
        assert_eq!(open.len(), 1);
        assert!(
            open.get(ObjectId(1))
                .is_some_and(|again| Arc::ptr_eq(again.file(), in_use.file())),
            "the file in use is still the object's one open file"
        );
        assert!(open.get(ObjectId(2)).is_none());
        // Once idle it goes too; a copy of the file alone (as the journal keeps) does not
        // keep it in the cache, and its descriptors stay usable until that copy goes.
        let file_alone = Arc::clone(in_use.file());
        drop(in_use);
        open.close_idle_beyond(0);
        assert_eq!(open.len(), 0);
        use std::os::unix::fs::FileExt;
        file_alone
            .buffered_file()
            .write_all_at(b"still open", 0)
            .unwrap();
    }
}
