//! [`IopathFs`]: the kernel's file-system calls, answered by the client library.
//!
//! Every call the kernel makes arrives on fuser's thread; it is answered from a task on the
//! client's tokio runtime, so many calls (reads and writes of several programs, or of one
//! program's several threads) are in flight at once, as a Lustre client's are. Nothing
//! takes a side door: a write is `File::write_at` — a buffer descriptor, a pull by each
//! storage server, checksums, the journal — and a read is `File::read_at`.
//!
//! The kernel's inode numbers are the metadata service's ([`crate::inodes`]); attributes are
//! asked and set by number. Mode, owner and times live at the metadata service. A write's
//! times are the client's, as a Lustre client's are: every write that lands moves the open
//! file's modification and change times here at once (a `stat` through this mount sees them),
//! and they reach the metadata service when the file is closed or synced — one change per
//! close of a written file, not one per write (Lustre's close carries them the same way). An
//! explicit time (`touch`, `utimensat`, `rsync -t`) set after the writes wins over them.
//!
//! Small writes are kept here, not sent at once ([`iopath_client::writeback::Dirty`], the
//! mount's write-back, as a Lustre client keeps dirty pages): a write of less than
//! [`WRITEBACK_WRITE_MAX_BYTES`] is copied into its inode's dirty extents and answered, and
//! the extents — adjacent writes merged, so a run of small writes becomes full RPCs — are sent
//! together, concurrently, when [`WRITEBACK_FLUSH_BYTES`] are dirty, and at every `fsync`,
//! close (`flush`), truncate, last release, unmount, and read that touches them. A send that
//! fails is kept dirty and its error given to the `fsync` or close, as a kernel's write-back
//! error is. Once sent, a write is kept for replay by the client library as any other. A
//! file opened `O_SYNC` or `O_DSYNC` is written through.
//!
//! A file this mount holds open when its last name goes is kept by the metadata service as
//! this mount's orphan, and dropped (objects and all) at its last release.
//!
//! What is not POSIX, and why, is in docs/mount.md: no locks, no mmap coherence between
//! mounts, an unlinked file kept only for the mount that unlinked it.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, TimeOrNow, WriteFlags,
};
use iopath_client::writeback::Dirty;
use iopath_client::{
    Client, ClientError, File, FileStat, Owner, SetAttributes, SpecialNode, StripeRequest,
};
use tokio::runtime::Handle;
use tracing::{debug, warn};

use crate::inodes::{Inodes, ROOT_INO};

/// The value, or its errno answered to the kernel and the call ended there.
macro_rules! or_reply {
    ($result:expr, $reply:ident) => {
        match $result {
            Ok(value) => value,
            Err(errno) => return $reply.error(errno),
        }
    };
}

/// How long the kernel may trust an attribute or a name before asking again. Short, because
/// other clients (other mounts, `lfs`, IOR) change the same files.
const TTL: Duration = Duration::from_secs(1);

/// The block size `statfs` counts in.
const BLOCK_BYTES: u32 = 4096;

/// The largest write the kernel sends in one call: a Lustre RPC's worth, so a program's
/// large writes reach the client library whole and become one RPC per object.
pub const MAX_WRITE_BYTES: u32 = 1 << 20;

/// Writes shorter than this are kept in the write-back and answered at once; longer ones
/// are full RPCs already and go straight to the servers.
pub const WRITEBACK_WRITE_MAX_BYTES: usize = 1 << 20;

/// When an inode's dirty bytes reach this, they are sent (a Lustre client's `max_dirty_mb`
/// per file, in small): enough to gather a few full RPCs, little enough that a crash of the
/// mount loses no more.
pub const WRITEBACK_FLUSH_BYTES: u64 = 4 << 20;

/// The mount's state: the client, the inode numbers the kernel holds, the open files.
#[derive(Debug)]
pub struct IopathFs {
    client: Client,
    runtime: Handle,
    shared: Arc<Shared>,
}

/// A directory's entries as opendir took them: inode number, type, name.
type Listing = Vec<(u64, FileType, String)>;

/// One open file handle: the client's file, and the inode it is open on.
#[derive(Debug, Clone)]
struct OpenHandle {
    file: File,
    ino: u64,
    open: Arc<OpenInode>,
}

/// What this mount knows of an inode it has open: how many handles, the times of writes it
/// made that the metadata service has not been told yet, and whether it lost its last name
/// while open.
#[derive(Debug, Default)]
struct OpenInode {
    /// Open handles (changed under [`Shared::open`]'s lock).
    handles: AtomicU64,
    /// Its last name was removed while this mount held it open: the metadata service keeps it
    /// as this mount's orphan, and the last release drops it (and its objects).
    orphaned: AtomicBool,
    /// One of its handles, for glimpsing its size when it has no name (through a fyod).
    any_file: Mutex<Option<File>>,
    /// When the latest write through this mount landed (ns since the epoch), if the metadata
    /// service has not been told: the file's modification and change time.
    written_ns: Mutex<Option<u64>>,
    /// Held while the metadata service is told of this inode's times or attributes, so a
    /// close's report and an explicit `utimensat` reach it in the order they were made.
    telling: tokio::sync::Mutex<()>,
    /// Its writes not sent yet (the write-back); held while they are sent, so a later write
    /// or read of the same bytes waits rather than overtakes them.
    dirty: tokio::sync::Mutex<Dirty>,
    /// The end of the furthest write made through this mount while open, cut by a truncate:
    /// the file is at least this long, whether or not the servers have those bytes yet.
    size_floor_bytes: AtomicU64,
}

impl OpenInode {
    fn written(&self) -> Option<u64> {
        *self
            .written_ns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    fn take_written(&self) -> Option<u64> {
        self.written_ns
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
    }

    fn file(&self) -> Option<File> {
        self.any_file
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The file is at least `end_bytes` long (a write reached there).
    fn grew(&self, end_bytes: u64) {
        self.size_floor_bytes.fetch_max(end_bytes, Ordering::AcqRel);
    }

    /// The file was cut (or extended) to `size_bytes`.
    fn resized(&self, size_bytes: u64) {
        self.size_floor_bytes
            .fetch_min(size_bytes, Ordering::AcqRel);
    }

    /// Sends every dirty write through `file`; on failure the unsent ones stay dirty.
    async fn flush_dirty(&self, file: &File) -> Result<(), ClientError> {
        let mut dirty = self.dirty.lock().await;
        send_dirty(file, &mut dirty).await
    }

    /// A write landed at `now_ns`.
    fn wrote(&self, now_ns: u64) {
        let mut written = self
            .written_ns
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        *written = Some(written.map_or(now_ns, |t| t.max(now_ns)));
    }
}

#[derive(Debug)]
struct Shared {
    inodes: Mutex<Inodes>,
    files: Mutex<HashMap<u64, OpenHandle>>,
    /// The inodes with open handles, by number.
    open: Mutex<HashMap<u64, Arc<OpenInode>>>,
    dirs: Mutex<HashMap<u64, Listing>>,
    next_handle: AtomicU64,
    /// Who an inode whose owner was never recorded is shown as: the mounting user.
    uid: u32,
    gid: u32,
}

impl Shared {
    fn inodes(&self) -> std::sync::MutexGuard<'_, Inodes> {
        self.inodes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// A name of `ino` (its latest), for the calls that need one.
    fn path(&self, ino: INodeNo) -> Result<String, Errno> {
        self.inodes()
            .path(ino.0)
            .map(str::to_owned)
            .ok_or(Errno::ESTALE)
    }

    fn child(&self, parent: INodeNo, name: &OsStr) -> Result<String, Errno> {
        let name = name.to_str().ok_or(Errno::EINVAL)?;
        self.inodes()
            .child_path(parent.0, name)
            .ok_or(Errno::ENOENT)
    }

    fn handle_of(&self, fh: FileHandle) -> Result<OpenHandle, Errno> {
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&fh.0)
            .cloned()
            .ok_or(Errno::EBADF)
    }

    /// `ino`, if this mount holds it open: an unlink or rename that takes its last name asks
    /// the metadata service to keep it.
    fn held_open(&self, ino: Option<u64>) -> Option<u64> {
        ino.filter(|ino| self.open_inode(*ino).is_some())
    }

    /// The inode's open state, if this mount has it open.
    fn open_inode(&self, ino: u64) -> Option<Arc<OpenInode>> {
        self.open
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&ino)
            .cloned()
    }

    /// Registers `file`, open on `ino`, as a new handle.
    fn opened(&self, ino: u64, file: File) -> FileHandle {
        let open = {
            let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
            let state = open.entry(ino).or_default();
            state.handles.fetch_add(1, Ordering::Relaxed);
            state
                .any_file
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .get_or_insert_with(|| file.clone());
            Arc::clone(state)
        };
        let fh = self.next_handle.fetch_add(1, Ordering::Relaxed);
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(fh, OpenHandle { file, ino, open });
        FileHandle(fh)
    }

    /// The metadata service kept `keep` as this mount's orphan (if `orphaned`).
    fn orphaned(&self, keep: Option<u64>, orphaned: bool) {
        if let (Some(ino), true) = (keep, orphaned)
            && let Some(open) = self.open_inode(ino)
        {
            open.orphaned.store(true, Ordering::Release);
        }
    }

    /// Handle `fh` is released; returns it, and whether it was its inode's last.
    fn released(&self, fh: FileHandle) -> Option<(OpenHandle, bool)> {
        let handle = self
            .files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&fh.0)?;
        let mut open = self.open.lock().unwrap_or_else(PoisonError::into_inner);
        let last = handle.open.handles.fetch_sub(1, Ordering::Relaxed) == 1;
        if last {
            open.remove(&handle.ino);
        }
        Some((handle, last))
    }

    /// The kernel's view of `stat`, numbered `ino`; the times of writes this mount made and
    /// has not reported yet stand in for the metadata service's.
    fn attr(&self, ino: u64, stat: &FileStat) -> FileAttr {
        let time = |ns: u64| UNIX_EPOCH + Duration::from_nanos(ns);
        let open = self.open_inode(ino);
        let written = open.as_ref().and_then(|open| open.written());
        // Writes still in the write-back (or just sent) count for the size.
        let size_bytes = open.map_or(stat.size_bytes, |open| {
            stat.size_bytes
                .max(open.size_floor_bytes.load(Ordering::Acquire))
        });
        let (mtime_ns, ctime_ns) = match written {
            Some(t) => (t.max(stat.mtime_ns), t.max(stat.ctime_ns)),
            None => (stat.mtime_ns, stat.ctime_ns),
        };
        let kind = kernel_type(stat.file_type);
        FileAttr {
            ino: INodeNo(ino),
            size: size_bytes,
            blocks: size_bytes.div_ceil(512),
            atime: time(stat.atime_ns),
            mtime: time(mtime_ns),
            ctime: time(ctime_ns),
            crtime: time(ctime_ns),
            kind,
            perm: (stat.mode & 0o7777) as u16,
            nlink: stat.links,
            uid: stat.uid.unwrap_or(self.uid),
            gid: stat.gid.unwrap_or(self.gid),
            // Linux's dev_t is 32 bits in FUSE's attributes.
            rdev: stat.rdev as u32,
            // What programs size their buffers by (`cp`, `stdio`): the stripe size, as
            // Lustre reports, so they write whole stripes.
            blksize: stat
                .layout
                .as_ref()
                .map_or(4096, |l| l.stripe_size_bytes().min(4 << 20) as u32),
            flags: 0,
        }
    }
}

/// The kernel's name for a file type.
fn kernel_type(file_type: iopath_client::FileType) -> FileType {
    use iopath_client::FileType as Mds;
    match file_type {
        Mds::Regular => FileType::RegularFile,
        Mds::Directory => FileType::Directory,
        Mds::Symlink => FileType::Symlink,
        Mds::Fifo => FileType::NamedPipe,
        Mds::Socket => FileType::Socket,
        Mds::CharDevice => FileType::CharDevice,
        Mds::BlockDevice => FileType::BlockDevice,
    }
}

/// Now, in ns since the epoch: the time a write or a `touch` is given, by this client's
/// clock (as a Lustre client gives its writes its own time).
fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

fn time_ns(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64)
}

/// The errno the kernel is given for a client error: the client's own, with the ones no
/// POSIX program expects from a file said as EIO.
pub fn posix_errno(error: &ClientError) -> Errno {
    let code = error.errno() as i32;
    match code {
        // A checksum that never matched, a malformed reply, a busy or recovering server, a
        // server that cannot be reached or has shut down: what a Lustre client's
        // programs see as EIO (the log says which).
        libc::EBADMSG
        | libc::EPROTO
        | libc::EBUSY
        | libc::EUSERS
        | libc::EINPROGRESS
        | libc::EHOSTUNREACH
        | libc::ETIMEDOUT
        | libc::ESHUTDOWN
        | libc::ENOTCONN => Errno::EIO,
        0 => Errno::EIO,
        code => Errno::from_i32(code),
    }
}

impl IopathFs {
    /// A file system answered by `client`, whose tasks run on `runtime`.
    pub fn new(client: Client, runtime: Handle) -> IopathFs {
        // SAFETY: getuid and getgid cannot fail and touch no memory.
        let (uid, gid) = unsafe { (libc::getuid(), libc::getgid()) };
        IopathFs {
            client,
            runtime,
            shared: Arc::new(Shared {
                inodes: Mutex::new(Inodes::new()),
                files: Mutex::new(HashMap::new()),
                open: Mutex::new(HashMap::new()),
                dirs: Mutex::new(HashMap::new()),
                next_handle: AtomicU64::new(1),
                uid,
                gid,
            }),
        }
    }

    /// Runs `work` on the runtime: fuser's thread goes back to the kernel at once.
    fn spawn<F>(&self, what: &'static str, work: impl FnOnce(Client, Arc<Shared>) -> F)
    where
        F: Future<Output = ()> + Send + 'static,
    {
        debug!(what, "fuse call");
        self.runtime
            .spawn(work(self.client.clone(), Arc::clone(&self.shared)));
    }
}

impl IopathFs {
    /// unlink (a name of a file, a link, a special file) or rmdir (an empty directory);
    /// either way the name is forgotten. A file this mount holds open that loses its last
    /// name is kept until its last release, as Lustre keeps orphans.
    fn remove(&self, directory: bool, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let path = or_reply!(self.shared.child(parent, name), reply);
        let what = if directory { "rmdir" } else { "unlink" };
        let keep = self.shared.held_open(self.shared.inodes().ino_of(&path));
        self.spawn(what, move |client, shared| async move {
            let removed = if directory {
                client.rmdir(&path).await.map(|()| false)
            } else {
                client.unlink_keeping(&path, keep).await
            };
            match removed {
                Ok(orphaned) => {
                    shared.inodes().unlinked(&path);
                    shared.orphaned(keep, orphaned);
                    reply.ok()
                }
                Err(e) => reply.error(failed(what, &path, &e)),
            }
        });
    }
}

/// A client error, logged with its whole sentence and turned into the errno the kernel gets.
fn failed(what: &str, path: &str, error: &ClientError) -> Errno {
    let errno = posix_errno(error);
    match error {
        ClientError::NotFound { .. } | ClientError::Exists { .. } => {
            debug!("{what} {path}: {error}")
        }
        _ => warn!("{what} {path}: {error}"),
    }
    errno
}

/// Looks `path` up and gives the kernel its number once more.
async fn entry_of(client: &Client, shared: &Shared, path: &str) -> Result<FileAttr, Errno> {
    let stat = client
        .stat(path)
        .await
        .map_err(|e| failed("stat", path, &e))?;
    Ok(entry(shared, path, &stat))
}

/// `stat`, found at `path`, given to the kernel as an entry: its number is held once more.
fn entry(shared: &Shared, path: &str, stat: &FileStat) -> FileAttr {
    shared.inodes().remember(stat.ino, path);
    shared.attr(stat.ino, stat)
}

/// Sends `dirty`'s extents through `file`, all at once (the client bounds the RPCs in flight
/// to each target), and waits for every one. The ones that fail are put back, under any
/// write made since; the first error is returned.
async fn send_dirty(file: &File, dirty: &mut Dirty) -> Result<(), ClientError> {
    if dirty.is_empty() {
        return Ok(());
    }
    let mut sends = tokio::task::JoinSet::new();
    for (offset, data) in dirty.take() {
        let file = file.clone();
        sends.spawn(async move {
            let result = file.write_at(offset, Bytes::from(data.clone())).await;
            (offset, data, result)
        });
    }
    let mut unsent = Vec::new();
    let mut first_error = None;
    while let Some(joined) = sends.join_next().await {
        match joined {
            Ok((_, _, Ok(_))) => {}
            Ok((offset, data, Err(e))) => {
                unsent.push((offset, data));
                first_error.get_or_insert(e);
            }
            // A send that panicked: the client library's bug, said as such.
            Err(e) => {
                first_error.get_or_insert(ClientError::TaskStopped {
                    what: "write-back write",
                    why: e.to_string(),
                });
            }
        }
    }
    if !unsent.is_empty() {
        dirty.restore(unsent);
    }
    first_error.map_or(Ok(()), Err)
}

/// Tells the metadata service the times of the writes this mount made to `ino` and has not
/// reported (a close, an fsync, the last release): one change, whatever the number of writes.
async fn report_writes(
    client: &Client,
    ino: u64,
    path: &str,
    open: &OpenInode,
) -> Result<(), Errno> {
    let _telling = open.telling.lock().await;
    let Some(written_ns) = open.take_written() else {
        return Ok(());
    };
    let change = SetAttributes {
        mtime_ns: Some(written_ns),
        ctime_ns: Some(written_ns),
        ..SetAttributes::default()
    };
    match client.set_attributes(ino, path, &change).await {
        Ok(_) => Ok(()),
        Err(e) => {
            // Not told: the next close or sync tries again.
            open.wrote(written_ns);
            Err(failed("report the times of the writes to", path, &e))
        }
    }
}

impl Filesystem for IopathFs {
    fn init(&mut self, _req: &Request, config: &mut KernelConfig) -> std::io::Result<()> {
        if let Err(nearest) = config.set_max_write(MAX_WRITE_BYTES) {
            let _ = config.set_max_write(nearest);
        }
        if let Err(nearest) = config.set_max_readahead(MAX_WRITE_BYTES) {
            let _ = config.set_max_readahead(nearest);
        }
        Ok(())
    }

    fn lookup(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEntry) {
        let path = or_reply!(self.shared.child(parent, name), reply);
        self.spawn("lookup", |client, shared| async move {
            match entry_of(&client, &shared, &path).await {
                Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
                Err(e) => reply.error(e),
            }
        });
    }

    fn forget(&self, _req: &Request, ino: INodeNo, nlookup: u64) {
        self.shared.inodes().forget(ino.0, nlookup);
    }

    fn getattr(&self, _req: &Request, ino: INodeNo, _fh: Option<FileHandle>, reply: ReplyAttr) {
        let path = or_reply!(self.shared.path(ino), reply);
        let open = self.shared.open_inode(ino.0).and_then(|o| o.file());
        self.spawn("getattr", move |client, shared| async move {
            match client.stat_ino(ino.0, &path, open.as_ref()).await {
                Ok(stat) => reply.attr(&TTL, &shared.attr(ino.0, &stat)),
                Err(e) => reply.error(failed("stat", &path, &e)),
            }
        });
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        mode: Option<u32>,
        uid: Option<u32>,
        gid: Option<u32>,
        size: Option<u64>,
        atime: Option<TimeOrNow>,
        mtime: Option<TimeOrNow>,
        ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let path = or_reply!(self.shared.path(ino), reply);
        let handle = fh.and_then(|fh| self.shared.handle_of(fh).ok());
        let open = self.shared.open_inode(ino.0);
        self.spawn("setattr", move |client, shared| async move {
            let now = now_ns();
            let when = |time: TimeOrNow| match time {
                TimeOrNow::Now => now,
                TimeOrNow::SpecificTime(time) => time_ns(time),
            };
            let mut change = SetAttributes {
                mode: mode.map(|m| m & 0o7777),
                uid,
                gid,
                atime_ns: atime.map(when),
                mtime_ns: mtime.map(when),
                ctime_ns: ctime.map(time_ns),
            };
            // Told in order with this inode's reports of its writes.
            let _telling = match &open {
                Some(open) => Some(open.telling.lock().await),
                None => None,
            };
            if let Some(size) = size {
                let file = match handle {
                    Some(handle) => handle.file,
                    None => match client.open_ino(ino.0, &path).await {
                        Ok(file) => file,
                        Err(e) => return reply.error(failed("open", &path, &e)),
                    },
                };
                // The write-back's writes land before the cut, which then applies to them.
                let _dirty = match &open {
                    Some(open) => {
                        let mut dirty = open.dirty.lock().await;
                        if let Err(e) = send_dirty(&file, &mut dirty).await {
                            return reply.error(failed("write back", &path, &e));
                        }
                        Some(dirty)
                    }
                    None => None,
                };
                if let Err(e) = file.truncate(size).await {
                    return reply.error(failed("truncate", &path, &e));
                }
                if let Some(open) = &open {
                    open.resized(size);
                }
                // A truncation changes the file now (POSIX), unless a time is given too.
                change.mtime_ns.get_or_insert(now);
            }
            if let Some(open) = &open {
                // A time set now supersedes the writes' (`touch` after `echo >`); a change
                // of mode or owner carries them along, as they would be told at close.
                let written = open.take_written();
                if change.mtime_ns.is_none() {
                    change.mtime_ns = written;
                }
            }
            if change.mtime_ns.is_some() {
                change.ctime_ns.get_or_insert(now);
            }
            match client.set_attributes(ino.0, &path, &change).await {
                Ok(stat) => reply.attr(&TTL, &shared.attr(ino.0, &stat)),
                Err(e) => reply.error(failed("setattr", &path, &e)),
            }
        });
    }

    fn mkdir(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        reply: ReplyEntry,
    ) {
        let path = or_reply!(self.shared.child(parent, name), reply);
        let owner = Owner::new(req.uid(), req.gid());
        let mode = mode & !umask & 0o7777;
        self.spawn("mkdir", move |client, shared| async move {
            match client.mkdir_as(&path, mode, owner).await {
                Ok(stat) => reply.entry(&TTL, &entry(&shared, &path, &stat), Generation(0)),
                Err(e) => reply.error(failed("mkdir", &path, &e)),
            }
        });
    }

    fn unlink(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(false, parent, name, reply);
    }

    fn rmdir(&self, _req: &Request, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        self.remove(true, parent, name, reply);
    }

    fn rename(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        newparent: INodeNo,
        newname: &OsStr,
        flags: RenameFlags,
        reply: ReplyEmpty,
    ) {
        let (from, to) = match (
            self.shared.child(parent, name),
            self.shared.child(newparent, newname),
        ) {
            (Ok(from), Ok(to)) => (from, to),
            (Err(e), _) | (_, Err(e)) => return reply.error(e),
        };
        let no_replace = flags.contains(RenameFlags::RENAME_NOREPLACE);
        if !(flags - RenameFlags::RENAME_NOREPLACE).is_empty() {
            // RENAME_EXCHANGE, RENAME_WHITEOUT: the metadata service has no such rename.
            return reply.error(Errno::EINVAL);
        }
        let keep = self.shared.held_open(self.shared.inodes().ino_of(&to));
        self.spawn("rename", move |client, shared| async move {
            if no_replace {
                match client.stat(&to).await {
                    Ok(_) => return reply.error(Errno::EEXIST),
                    Err(ClientError::NotFound { .. }) => {}
                    Err(e) => return reply.error(failed("stat", &to, &e)),
                }
            }
            match client.rename_keeping(&from, &to, keep).await {
                Ok(orphaned) => {
                    shared.inodes().renamed(&from, &to);
                    shared.orphaned(keep, orphaned);
                    reply.ok()
                }
                Err(e) => reply.error(failed("rename", &format!("{from} -> {to}"), &e)),
            }
        });
    }

    fn link(
        &self,
        _req: &Request,
        ino: INodeNo,
        newparent: INodeNo,
        newname: &OsStr,
        reply: ReplyEntry,
    ) {
        let path = or_reply!(self.shared.child(newparent, newname), reply);
        self.spawn("link", move |client, shared| async move {
            match client.link(ino.0, &path).await {
                Ok(stat) => reply.entry(&TTL, &entry(&shared, &path, &stat), Generation(0)),
                Err(e) => reply.error(failed("link", &path, &e)),
            }
        });
    }

    fn symlink(
        &self,
        req: &Request,
        parent: INodeNo,
        link_name: &OsStr,
        target: &std::path::Path,
        reply: ReplyEntry,
    ) {
        let path = or_reply!(self.shared.child(parent, link_name), reply);
        // The metadata service keeps names as text: a target that is not UTF-8 is refused.
        let target = or_reply!(target.to_str().ok_or(Errno::EINVAL), reply).to_owned();
        let owner = Owner::new(req.uid(), req.gid());
        self.spawn("symlink", move |client, shared| async move {
            match client.symlink(&path, &target, owner).await {
                Ok(stat) => reply.entry(&TTL, &entry(&shared, &path, &stat), Generation(0)),
                Err(e) => reply.error(failed("symlink", &path, &e)),
            }
        });
    }

    fn readlink(&self, _req: &Request, ino: INodeNo, reply: ReplyData) {
        let path = or_reply!(self.shared.path(ino), reply);
        self.spawn("readlink", move |client, _| async move {
            match client.stat_ino(ino.0, &path, None).await {
                Ok(stat) => match stat.symlink_target {
                    Some(target) => reply.data(target.as_bytes()),
                    None => reply.error(Errno::EINVAL),
                },
                Err(e) => reply.error(failed("readlink", &path, &e)),
            }
        });
    }

    fn mknod(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        rdev: u32,
        reply: ReplyEntry,
    ) {
        let path = or_reply!(self.shared.child(parent, name), reply);
        let owner = Owner::new(req.uid(), req.gid());
        let bits = mode & !umask & 0o7777;
        let node = match mode & libc::S_IFMT {
            libc::S_IFREG => None,
            libc::S_IFIFO => Some(SpecialNode::Fifo),
            libc::S_IFSOCK => Some(SpecialNode::Socket),
            libc::S_IFCHR => Some(SpecialNode::CharDevice),
            libc::S_IFBLK => Some(SpecialNode::BlockDevice),
            _ => return reply.error(Errno::EINVAL),
        };
        self.spawn("mknod", move |client, shared| async move {
            let made = match node {
                Some(node) => {
                    client
                        .mknod(&path, node, (bits, u64::from(rdev)), owner)
                        .await
                }
                // A regular file made by mknod(2): created, not opened.
                None => match client
                    .create_as(&path, StripeRequest::INHERIT, bits, owner)
                    .await
                {
                    Ok((file, stat)) => file.close().await.map(|()| stat),
                    Err(e) => Err(e),
                },
            };
            match made {
                Ok(stat) => reply.entry(&TTL, &entry(&shared, &path, &stat), Generation(0)),
                Err(e) => reply.error(failed("mknod", &path, &e)),
            }
        });
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let path = or_reply!(self.shared.path(ino), reply);
        self.spawn("open", move |client, shared| async move {
            match client.open_ino(ino.0, &path).await {
                Ok(file) => reply.opened(shared.opened(ino.0, file), FopenFlags::empty()),
                Err(e) => reply.error(failed("open", &path, &e)),
            }
        });
    }

    fn create(
        &self,
        req: &Request,
        parent: INodeNo,
        name: &OsStr,
        mode: u32,
        umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let path = or_reply!(self.shared.child(parent, name), reply);
        let exclusive = flags & libc::O_EXCL != 0;
        let owner = Owner::new(req.uid(), req.gid());
        let mode = mode & !umask & 0o7777;
        self.spawn("create", move |client, shared| async move {
            // A new file takes its directory's default layout (`lfs setstripe` on the
            // directory), as Lustre's do.
            let (file, attr) = match client
                .create_as(&path, StripeRequest::INHERIT, mode, owner)
                .await
            {
                Ok((file, stat)) => (file, entry(&shared, &path, &stat)),
                Err(ClientError::Exists { .. }) if !exclusive => {
                    let attr = match entry_of(&client, &shared, &path).await {
                        Ok(attr) => attr,
                        Err(e) => return reply.error(e),
                    };
                    match client.open_ino(attr.ino.0, &path).await {
                        Ok(file) => (file, attr),
                        Err(e) => return reply.error(failed("open", &path, &e)),
                    }
                }
                Err(e) => return reply.error(failed("create", &path, &e)),
            };
            let fh = shared.opened(attr.ino.0, file);
            reply.created(&TTL, &attr, Generation(0), fh, FopenFlags::empty())
        });
    }

    fn read(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        size: u32,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyData,
    ) {
        let handle = or_reply!(self.shared.handle_of(fh), reply);
        self.spawn("read", move |_, _| async move {
            {
                // Dirty bytes it would read are sent first: the servers hold the truth.
                let mut dirty = handle.open.dirty.lock().await;
                if dirty.overlaps(offset, u64::from(size))
                    && let Err(e) = send_dirty(&handle.file, &mut dirty).await
                {
                    return reply.error(failed("write back before a read", handle.file.path(), &e));
                }
            }
            match handle.file.read_at(offset, u64::from(size)).await {
                Ok(bytes) => reply.data(&bytes),
                Err(e) => reply.error(failed("read", handle.file.path(), &e)),
            }
        });
    }

    fn write(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        data: &[u8],
        _write_flags: WriteFlags,
        flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let handle = or_reply!(self.shared.handle_of(fh), reply);
        let len = data.len() as u32;
        let end = offset + u64::from(len);
        let write_through = data.len() >= WRITEBACK_WRITE_MAX_BYTES
            || flags.0 & (libc::O_SYNC | libc::O_DSYNC) != 0;
        if !write_through {
            // Kept: the kernel's buffer is lent for this call only, so it is copied into the
            // write-back, and sent with its neighbours later.
            let data = data.to_vec();
            self.spawn("write", move |_, _| async move {
                let mut dirty = handle.open.dirty.lock().await;
                dirty.write(offset, &data);
                handle.open.grew(end);
                handle.open.wrote(now_ns());
                if dirty.bytes() >= WRITEBACK_FLUSH_BYTES
                    && let Err(e) = send_dirty(&handle.file, &mut dirty).await
                {
                    // Kept dirty for the next try; the program learns of it now.
                    return reply.error(failed("write back", handle.file.path(), &e));
                }
                reply.written(len)
            });
            return;
        }
        // The kernel's buffer is lent for this call only: one copy into memory the storage
        // servers can pull from while the write is in flight (and the client keeps for
        // replay until it is committed).
        let data = Bytes::copy_from_slice(data);
        self.spawn("write", move |_, _| async move {
            // Dirty bytes go first, so that this write's bytes land over theirs.
            let mut dirty = handle.open.dirty.lock().await;
            if let Err(e) = send_dirty(&handle.file, &mut dirty).await {
                return reply.error(failed("write back", handle.file.path(), &e));
            }
            match handle.file.write_at(offset, data).await {
                Ok(_) => {
                    // The write landed: the file changed now.
                    handle.open.grew(end);
                    handle.open.wrote(now_ns());
                    reply.written(len)
                }
                Err(e) => reply.error(failed("write", handle.file.path(), &e)),
            }
        });
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // A close sends the write-back's writes and waits for the servers' acknowledgements,
        // but commits nothing more (as on Lustre: close-to-open, not close-to-disk). It tells
        // the metadata service the writes' times, so every client sees them after it.
        let handle = or_reply!(self.shared.handle_of(fh), reply);
        self.spawn("flush", move |client, _| async move {
            let path = handle.file.path().to_owned();
            if let Err(e) = handle.open.flush_dirty(&handle.file).await {
                return reply.error(failed("write back", &path, &e));
            }
            match report_writes(&client, handle.ino, &path, &handle.open).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        });
    }

    fn release(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        _flush: bool,
        reply: ReplyEmpty,
    ) {
        let Some((handle, last)) = self.shared.released(fh) else {
            return reply.error(Errno::EBADF);
        };
        self.spawn("release", move |client, _| async move {
            let path = handle.file.path().to_owned();
            let orphan = last && handle.open.orphaned.load(Ordering::Acquire);
            // Writes of a shared mapping may come after the last close's flush.
            if let Err(e) = handle.open.flush_dirty(&handle.file).await {
                if last {
                    let lost = handle.open.dirty.lock().await.bytes();
                    warn!("{path}: {lost} written bytes could not be sent and are lost: {e}");
                }
                return reply.error(failed("write back", &path, &e));
            }
            // Writes of a shared mapping may come after the last close's flush (an orphan's
            // times go with it).
            let reported = if orphan {
                Ok(())
            } else {
                report_writes(&client, handle.ino, &path, &handle.open).await
            };
            if let Err(e) = handle.file.close().await {
                return reply.error(failed("close", &path, &e));
            }
            if orphan {
                // Its last holder let go: the file and its objects go now.
                if let Err(e) = client.drop_orphan(handle.ino).await {
                    return reply.error(failed("drop the unlinked file", &path, &e));
                }
            }
            match reported {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        });
    }

    fn fsync(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _datasync: bool,
        reply: ReplyEmpty,
    ) {
        let handle = or_reply!(self.shared.handle_of(fh), reply);
        self.spawn("fsync", |client, _| async move {
            let path = handle.file.path().to_owned();
            if let Err(e) = handle.open.flush_dirty(&handle.file).await {
                return reply.error(failed("write back", &path, &e));
            }
            if let Err(e) = handle.file.fsync().await {
                return reply.error(failed("fsync", &path, &e));
            }
            match report_writes(&client, handle.ino, &path, &handle.open).await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(e),
            }
        });
    }

    fn opendir(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let path = or_reply!(self.shared.path(ino), reply);
        // The listing is taken once, at opendir, and served from memory to every readdir
        // of this handle: offsets stay valid however the directory changes meanwhile.
        self.spawn("opendir", move |client, shared| async move {
            let entries = match client.readdir_entries(&path).await {
                Ok(entries) => entries,
                Err(e) => return reply.error(failed("readdir", &path, &e)),
            };
            let parent = match path.rsplit_once('/') {
                Some(("", _)) | None => "/".to_owned(),
                Some((parent, _)) => parent.to_owned(),
            };
            let mut listing = Vec::with_capacity(entries.len() + 2);
            {
                let inodes = shared.inodes();
                let parent_ino = if ino.0 == ROOT_INO {
                    ROOT_INO
                } else {
                    // A number the kernel does not hold yet is fine: it looks it up.
                    inodes.ino_of(&parent).unwrap_or(ROOT_INO)
                };
                listing.push((ino.0, FileType::Directory, ".".to_owned()));
                listing.push((parent_ino, FileType::Directory, "..".to_owned()));
            }
            for entry in entries {
                let kind = kernel_type(entry.file_type);
                // The metadata service's number, the one `stat` gives.
                listing.push((entry.ino, kind, entry.name));
            }
            let fh = shared.next_handle.fetch_add(1, Ordering::Relaxed);
            shared
                .dirs
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(fh, listing);
            reply.opened(FileHandle(fh), FopenFlags::empty())
        });
    }

    fn readdir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        offset: u64,
        mut reply: ReplyDirectory,
    ) {
        let dirs = self
            .shared
            .dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let Some(listing) = dirs.get(&fh.0) else {
            return reply.error(Errno::EBADF);
        };
        for (index, (ino, kind, name)) in listing.iter().enumerate().skip(offset as usize) {
            if reply.add(INodeNo(*ino), index as u64 + 1, *kind, name) {
                break;
            }
        }
        reply.ok();
    }

    fn releasedir(
        &self,
        _req: &Request,
        _ino: INodeNo,
        fh: FileHandle,
        _flags: OpenFlags,
        reply: ReplyEmpty,
    ) {
        self.shared
            .dirs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&fh.0);
        reply.ok();
    }

    fn fallocate(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _offset: u64,
        _length: u64,
        _mode: i32,
        reply: ReplyEmpty,
    ) {
        // Objects have no preallocation: programs that ask (fio, cp) are told so and write
        // instead, as on file systems without it.
        reply.error(Errno::EOPNOTSUPP);
    }

    fn ioctl(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _flags: fuser::IoctlFlags,
        _cmd: u32,
        _in_data: &[u8],
        _out_size: u32,
        reply: fuser::ReplyIoctl,
    ) {
        // A file here is no terminal or device (programs ask: isatty is TCGETS).
        reply.error(Errno::ENOTTY);
    }

    // Extended attributes are not kept (Lustre keeps its layout in `lustre.lov`; here
    // `iopath lfs getstripe` reads it): every program that asks is told they are not
    // supported, which `cp -a` and `tar` take in their stride.
    fn getxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _size: u32,
        reply: ReplyXattr,
    ) {
        reply.error(Errno::ENOTSUP);
    }

    fn listxattr(&self, _req: &Request, _ino: INodeNo, size: u32, reply: ReplyXattr) {
        // No attributes: an empty list (its size when asked for the size).
        if size == 0 {
            reply.size(0)
        } else {
            reply.data(&[])
        }
    }

    fn setxattr(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _name: &OsStr,
        _value: &[u8],
        _flags: i32,
        _position: u32,
        reply: ReplyEmpty,
    ) {
        reply.error(Errno::ENOTSUP);
    }

    fn removexattr(&self, _req: &Request, _ino: INodeNo, _name: &OsStr, reply: ReplyEmpty) {
        reply.error(Errno::ENOTSUP);
    }

    fn statfs(&self, _req: &Request, _ino: INodeNo, reply: ReplyStatfs) {
        // The file system's capacity is its targets' together, as `df` on a Lustre client
        // shows (`lfs df` shows each).
        self.spawn("statfs", |client, _| async move {
            let targets = match client.statfs().await {
                Ok(t) => t,
                Err(e) => return reply.error(failed("statfs", "/", &e)),
            };
            let block = u64::from(BLOCK_BYTES);
            let sum = |f: fn(&iopath_client::Capacity) -> u64| {
                targets.iter().map(|(_, c)| f(c)).sum::<u64>()
            };
            let name_max = targets.iter().map(|(_, c)| c.name_max).min().unwrap_or(255);
            reply.statfs(
                sum(|t| t.total_bytes) / block,
                sum(|t| t.free_bytes) / block,
                sum(|t| t.available_bytes) / block,
                sum(|t| t.files),
                sum(|t| t.files_free),
                BLOCK_BYTES,
                name_max,
                BLOCK_BYTES,
            )
        });
    }
}
