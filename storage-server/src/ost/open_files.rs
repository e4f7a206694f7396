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
//! places. A journal commit that fdatasyncs an object O_DIRECT wrote takes a place and the
//! file the same way ([`SyncObjects`]), so nothing holds a file between a write and its
//! commit. Without the places, 18,688 tasks reading a file each at once from 672 targets
//! opened every file together and ran out of descriptors.

use std::collections::{BTreeMap, HashMap};
use std::ops::Deref;
use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use crate::engine::{DiskEngine, EngineFile, EngineFuture, FileRole, OpenMode, SyncKind, blocking};
use crate::ids::ObjectId;
use crate::journal::runtime::SyncObjects;

/// A target's object files: the cache of open ones and the places for files in use.
#[derive(Debug)]
pub(crate) struct ObjectFiles {
    open: Mutex<OpenFiles>,
    /// `open_objects_max` places; an operation holds one while it uses its object's file.
    places: Arc<Semaphore>,
    /// The engine of the object files.
    engine: Arc<dyn DiskEngine>,
    /// Where they are (`O/`).
    dir: PathBuf,
    /// Open them with an O_DIRECT descriptor too.
    direct_io: bool,
}

impl ObjectFiles {
    /// The files of the objects in `dir`, at most `open_objects_max` (at least one) open.
    pub(crate) fn new(
        engine: Arc<dyn DiskEngine>,
        dir: PathBuf,
        direct_io: bool,
        open_objects_max: usize,
    ) -> ObjectFiles {
        ObjectFiles {
            open: Mutex::default(),
            places: Arc::new(Semaphore::new(open_objects_max.max(1))),
            engine,
            dir,
            direct_io,
        }
    }

    /// `object`'s file, opened again if the cache had closed it, once one of the places for
    /// files in use is free. Call with the object's lock held (shared or exclusive), or for
    /// an object whose destroy cannot unlink it meanwhile.
    pub(crate) async fn file(&self, object: ObjectId) -> std::io::Result<InUse> {
        let place = self.place().await?;
        let cached = self.lock().get(object);
        let held = match cached {
            Some(held) => held,
            None => {
                self.make_room_for_an_open();
                let file = self.open_file(object, OpenMode::Existing).await?;
                self.lock().insert(object, file)
            }
        };
        Ok(InUse::new(held, place))
    }

    /// Creates `object`'s file (it must not exist), and closes it again: the first use
    /// opens it.
    pub(crate) async fn create(&self, object: ObjectId) -> std::io::Result<()> {
        let _place = self.place().await?;
        self.make_room_for_an_open();
        self.open_file(object, OpenMode::CreateNew).await.map(drop)
    }

    /// Closes `object`'s file (it was destroyed).
    pub(crate) fn forget(&self, object: ObjectId) {
        self.lock().remove(object);
    }

    /// The path of `object`'s file.
    pub(crate) fn path(&self, object: ObjectId) -> PathBuf {
        self.dir.join(object.file_name())
    }

    /// One of the places for files in use, waited for.
    async fn place(&self) -> std::io::Result<OwnedSemaphorePermit> {
        Arc::clone(&self.places)
            .acquire_owned()
            .await
            .map_err(|_| std::io::Error::other("the places for object files in use are closed"))
    }

    /// Closes idle files until no more are idle than places are free, so that the files open
    /// (idle, in use, and the one the caller, holding a place, is about to open) stay within
    /// the places.
    fn make_room_for_an_open(&self) {
        self.lock()
            .close_idle_beyond(self.places.available_permits());
    }

    async fn open_file(
        &self,
        object: ObjectId,
        mode: OpenMode,
    ) -> std::io::Result<Arc<EngineFile>> {
        let (path, direct_io) = (self.path(object), self.direct_io);
        blocking(&*self.engine, move || {
            EngineFile::open(&path, FileRole::Data, mode, direct_io)
        })
        .await
        .and_then(|opened| opened)
        .map(Arc::new)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, OpenFiles> {
        self.open.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl SyncObjects for ObjectFiles {
    fn sync_object(self: Arc<Self>, object: ObjectId) -> EngineFuture<()> {
        Box::pin(async move {
            let synced = async {
                let file = self.file(object).await?;
                self.engine.fsync(&file, SyncKind::Data).await
            };
            // The target stops on this error: name the file, as every other I/O error does.
            synced.await.map_err(|e| {
                std::io::Error::new(e.kind(), format!("{}: {e}", self.path(object).display()))
            })
        })
    }
}

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
