//! The object files a target holds open: at most `open_objects_max` of them, the least
//! recently used closed first.
//!
//! A real OST's objects are inodes of its backing file system, and an idle one costs no open
//! file. Here each object is a file with two descriptors (buffered and O_DIRECT), so a target
//! that kept every object open would need two descriptors per object it ever stored: a stack
//! of 4,096 tasks writing a file each, striped over eight targets, would hold 65,536. The
//! cache keeps the descriptors in use, and reopens an object on its next use after it was
//! closed. An operation under way holds its own `Arc` of the file, so closing one here never
//! closes a descriptor the kernel is still using: it closes when the operation ends.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;

use crate::engine::EngineFile;
use crate::ids::ObjectId;

/// Object files held open by one target, with their order of last use.
#[derive(Debug)]
pub(crate) struct OpenFiles {
    max: usize,
    /// Each open file and the tick of its last use.
    files: HashMap<ObjectId, (Arc<EngineFile>, u64)>,
    /// Last-use tick to object: the first entry is the least recently used.
    order: BTreeMap<u64, ObjectId>,
    tick: u64,
}

impl OpenFiles {
    /// Holds at most `max` (at least one) files open.
    pub(crate) fn new(max: usize) -> OpenFiles {
        OpenFiles {
            max: max.max(1),
            files: HashMap::new(),
            order: BTreeMap::new(),
            tick: 0,
        }
    }

    /// The open file of `object`, marked as just used; `None` when it is not open.
    pub(crate) fn get(&mut self, object: ObjectId) -> Option<Arc<EngineFile>> {
        let tick = self.next_tick();
        let (file, used) = self.files.get_mut(&object)?;
        self.order.remove(used);
        *used = tick;
        self.order.insert(tick, object);
        Some(Arc::clone(file))
    }

    /// Keeps `file` open as `object`'s, closing the least recently used beyond the limit.
    /// When another caller opened the object meanwhile, its file is kept and returned, so
    /// one object never has two open files here.
    pub(crate) fn insert(&mut self, object: ObjectId, file: Arc<EngineFile>) -> Arc<EngineFile> {
        if let Some(open) = self.get(object) {
            return open;
        }
        let tick = self.next_tick();
        self.files.insert(object, (Arc::clone(&file), tick));
        self.order.insert(tick, object);
        while self.files.len() > self.max {
            let Some((_, oldest)) = self.order.pop_first() else {
                break;
            };
            self.files.remove(&oldest);
        }
        file
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
    fn the_least_recently_used_file_is_closed_first() {
        let dir = tempfile::tempdir().unwrap();
        let mut open = OpenFiles::new(2);
        let (a, b, c) = (ObjectId(1), ObjectId(2), ObjectId(3));
        open.insert(a, file(dir.path(), "a"));
        open.insert(b, file(dir.path(), "b"));
        // a is used again, so b is now the least recently used.
        assert!(open.get(a).is_some());
        open.insert(c, file(dir.path(), "c"));
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
        let mut open = OpenFiles::new(4);
        let first = open.insert(ObjectId(7), file(dir.path(), "x"));
        let second = open.insert(ObjectId(7), file(dir.path(), "x"));
        assert!(Arc::ptr_eq(&first, &second));
        assert_eq!(open.len(), 1);
    }

    #[test]
    fn a_file_in_use_stays_open_after_it_is_closed_here() {
        let dir = tempfile::tempdir().unwrap();
        let mut open = OpenFiles::new(1);
        let in_use = open.insert(ObjectId(1), file(dir.path(), "a"));
        open.insert(ObjectId(2), file(dir.path(), "b"));
        assert!(open.get(ObjectId(1)).is_none());
        // The operation's Arc still holds the descriptor: it can be used.
        use std::os::unix::fs::FileExt;
        in_use
            .buffered_file()
            .write_all_at(b"still open", 0)
            .unwrap();
    }
}
