//! [`IopathFs`]: the kernel's file-system calls, answered by the client library.
//!
//! Every call the kernel makes arrives on fuser's thread; it is answered from a task on the
//! client's tokio runtime, so many calls (reads and writes of several programs, or of one
//! program's several threads) are in flight at once, as a Lustre client's are. Nothing
//! takes a side door: a write is `File::write_at` — a buffer descriptor, a pull by each
//! storage server, checksums, the journal — and a read is `File::read_at`.
//!
//! What is not POSIX, and why, is in docs/mount.md: no locks, no mmap coherence between
//! mounts, mode, owner and times not stored, an unlinked file's data gone at once.

use std::collections::HashMap;
use std::ffi::OsStr;
use std::future::Future;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use fuser::{
    Errno, FileAttr, FileHandle, FileType, Filesystem, FopenFlags, Generation, INodeNo,
    KernelConfig, LockOwner, OpenFlags, RenameFlags, ReplyAttr, ReplyCreate, ReplyData,
    ReplyDirectory, ReplyEmpty, ReplyEntry, ReplyOpen, ReplyStatfs, ReplyWrite, ReplyXattr,
    Request, TimeOrNow, WriteFlags,
};
use iopath_client::{Client, ClientError, File, FileStat, StripeRequest};
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

/// The mount's state: the client, the inode numbers the kernel holds, the open files.
#[derive(Debug)]
pub struct IopathFs {
    client: Client,
    runtime: Handle,
    shared: Arc<Shared>,
}

/// A directory's entries as opendir took them: inode number, type, name.
type Listing = Vec<(u64, FileType, String)>;

#[derive(Debug)]
struct Shared {
    inodes: Mutex<Inodes>,
    files: Mutex<HashMap<u64, File>>,
    dirs: Mutex<HashMap<u64, Listing>>,
    next_handle: AtomicU64,
    uid: u32,
    gid: u32,
}

impl Shared {
    fn inodes(&self) -> std::sync::MutexGuard<'_, Inodes> {
        self.inodes.lock().unwrap_or_else(PoisonError::into_inner)
    }

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

    fn file(&self, fh: FileHandle) -> Result<File, Errno> {
        self.files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&fh.0)
            .cloned()
            .ok_or(Errno::EBADF)
    }

    fn handle(&self) -> u64 {
        self.next_handle.fetch_add(1, Ordering::Relaxed)
    }

    fn attr(&self, ino: u64, stat: &FileStat) -> FileAttr {
        let mtime = UNIX_EPOCH + Duration::from_nanos(stat.mtime_ns);
        let (kind, default_perm, nlink) = if stat.is_dir {
            (FileType::Directory, 0o755, 2)
        } else {
            (FileType::RegularFile, 0o644, 1)
        };
        let perm = (stat.mode & 0o7777) as u16;
        FileAttr {
            ino: INodeNo(ino),
            size: stat.size_bytes,
            blocks: stat.size_bytes.div_ceil(512),
            atime: mtime,
            mtime,
            ctime: mtime,
            crtime: mtime,
            kind,
            perm: if perm == 0 { default_perm } else { perm },
            nlink,
            uid: self.uid,
            gid: self.gid,
            rdev: 0,
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
    /// unlink (a file) or rmdir (an empty directory); either way the name is forgotten.
    fn remove(&self, directory: bool, parent: INodeNo, name: &OsStr, reply: ReplyEmpty) {
        let path = or_reply!(self.shared.child(parent, name), reply);
        let what = if directory { "rmdir" } else { "unlink" };
        self.spawn(what, move |client, shared| async move {
            let removed = if directory {
                client.rmdir(&path).await
            } else {
                client.unlink(&path).await
            };
            match removed {
                Ok(()) => {
                    shared.inodes().unlinked(&path);
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
    let ino = shared.inodes().remember(path);
    Ok(shared.attr(ino, &stat))
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
        self.spawn("getattr", move |client, shared| async move {
            match client.stat(&path).await {
                Ok(stat) => reply.attr(&TTL, &shared.attr(ino.0, &stat)),
                Err(e) => reply.error(failed("stat", &path, &e)),
            }
        });
    }

    fn setattr(
        &self,
        _req: &Request,
        ino: INodeNo,
        _mode: Option<u32>,
        _uid: Option<u32>,
        _gid: Option<u32>,
        size: Option<u64>,
        _atime: Option<TimeOrNow>,
        _mtime: Option<TimeOrNow>,
        _ctime: Option<SystemTime>,
        fh: Option<FileHandle>,
        _crtime: Option<SystemTime>,
        _chgtime: Option<SystemTime>,
        _bkuptime: Option<SystemTime>,
        _flags: Option<fuser::BsdFileFlags>,
        reply: ReplyAttr,
    ) {
        let path = or_reply!(self.shared.path(ino), reply);
        let open = fh.and_then(|fh| self.shared.file(fh).ok());
        self.spawn("setattr", move |client, shared| async move {
            // Only the size is stored: the metadata service keeps no mode, owner or times
            // (docs/mount.md); changing them succeeds and changes nothing, as on a file
            // system mounted without permissions.
            if let Some(size) = size {
                let file = match open {
                    Some(file) => file,
                    None => match client.open(&path).await {
                        Ok(file) => file,
                        Err(e) => return reply.error(failed("open", &path, &e)),
                    },
                };
                if let Err(e) = file.truncate(size).await {
                    return reply.error(failed("truncate", &path, &e));
                }
            }
            match client.stat(&path).await {
                Ok(stat) => reply.attr(&TTL, &shared.attr(ino.0, &stat)),
                Err(e) => reply.error(failed("stat", &path, &e)),
            }
        });
    }

    fn mkdir(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        reply: ReplyEntry,
    ) {
        let path = or_reply!(self.shared.child(parent, name), reply);
        self.spawn("mkdir", |client, shared| async move {
            if let Err(e) = client.mkdir(&path).await {
                return reply.error(failed("mkdir", &path, &e));
            }
            match entry_of(&client, &shared, &path).await {
                Ok(attr) => reply.entry(&TTL, &attr, Generation(0)),
                Err(e) => reply.error(e),
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
        self.spawn("rename", move |client, shared| async move {
            if no_replace {
                match client.stat(&to).await {
                    Ok(_) => return reply.error(Errno::EEXIST),
                    Err(ClientError::NotFound { .. }) => {}
                    Err(e) => return reply.error(failed("stat", &to, &e)),
                }
            }
            match client.rename(&from, &to).await {
                Ok(()) => {
                    shared.inodes().renamed(&from, &to);
                    reply.ok()
                }
                Err(e) => reply.error(failed("rename", &format!("{from} -> {to}"), &e)),
            }
        });
    }

    fn open(&self, _req: &Request, ino: INodeNo, _flags: OpenFlags, reply: ReplyOpen) {
        let path = or_reply!(self.shared.path(ino), reply);
        self.spawn("open", |client, shared| async move {
            match client.open(&path).await {
                Ok(file) => {
                    let fh = shared.handle();
                    shared
                        .files
                        .lock()
                        .unwrap_or_else(PoisonError::into_inner)
                        .insert(fh, file);
                    reply.opened(FileHandle(fh), FopenFlags::empty())
                }
                Err(e) => reply.error(failed("open", &path, &e)),
            }
        });
    }

    fn create(
        &self,
        _req: &Request,
        parent: INodeNo,
        name: &OsStr,
        _mode: u32,
        _umask: u32,
        flags: i32,
        reply: ReplyCreate,
    ) {
        let path = or_reply!(self.shared.child(parent, name), reply);
        let exclusive = flags & libc::O_EXCL != 0;
        self.spawn("create", move |client, shared| async move {
            // A new file takes its directory's default layout (`lfs setstripe` on the
            // directory), as Lustre's do.
            let file = match client.create(&path, StripeRequest::INHERIT).await {
                Ok(file) => file,
                Err(ClientError::Exists { .. }) if !exclusive => match client.open(&path).await {
                    Ok(file) => file,
                    Err(e) => return reply.error(failed("open", &path, &e)),
                },
                Err(e) => return reply.error(failed("create", &path, &e)),
            };
            let attr = match entry_of(&client, &shared, &path).await {
                Ok(attr) => attr,
                Err(e) => return reply.error(e),
            };
            let fh = shared.handle();
            shared
                .files
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(fh, file);
            reply.created(
                &TTL,
                &attr,
                Generation(0),
                FileHandle(fh),
                FopenFlags::empty(),
            )
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
        let file = or_reply!(self.shared.file(fh), reply);
        self.spawn("read", move |_, _| async move {
            match file.read_at(offset, u64::from(size)).await {
                Ok(bytes) => reply.data(&bytes),
                Err(e) => reply.error(failed("read", file.path(), &e)),
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
        _flags: OpenFlags,
        _lock_owner: Option<LockOwner>,
        reply: ReplyWrite,
    ) {
        let file = or_reply!(self.shared.file(fh), reply);
        // The kernel's buffer is lent for this call only: one copy into memory the storage
        // servers can pull from while the write is in flight (and the client keeps for
        // replay until it is committed).
        let data = Bytes::copy_from_slice(data);
        let len = data.len() as u32;
        self.spawn("write", move |_, _| async move {
            match file.write_at(offset, data).await {
                Ok(_) => reply.written(len),
                Err(e) => reply.error(failed("write", file.path(), &e)),
            }
        });
    }

    fn flush(
        &self,
        _req: &Request,
        _ino: INodeNo,
        _fh: FileHandle,
        _lock_owner: LockOwner,
        reply: ReplyEmpty,
    ) {
        // Every write was acknowledged before the program's write call returned; a close
        // commits nothing more (as on Lustre: close-to-open, not close-to-disk).
        reply.ok();
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
        let file = self
            .shared
            .files
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&fh.0);
        let Some(file) = file else {
            return reply.error(Errno::EBADF);
        };
        self.spawn("release", |_, _| async move {
            let path = file.path().to_owned();
            match file.close().await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(failed("close", &path, &e)),
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
        let file = or_reply!(self.shared.file(fh), reply);
        self.spawn("fsync", |_, _| async move {
            match file.fsync().await {
                Ok(()) => reply.ok(),
                Err(e) => reply.error(failed("fsync", file.path(), &e)),
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
            {
                let inodes = shared.inodes();
                for entry in entries {
                    let kind = match entry.file_type {
                        iopath_client::FileType::Directory => FileType::Directory,
                        iopath_client::FileType::Regular => FileType::RegularFile,
                    };
                    // The number `stat` gives, where the kernel holds one (so `ls -i` and
                    // `find -inum` agree with it); else the metadata service's own, a hint
                    // the kernel does not keep.
                    let child = crate::inodes::join(&path, &entry.name);
                    let ino = inodes.ino_of(&child).unwrap_or(entry.ino);
                    listing.push((ino, kind, entry.name));
                }
            }
            let fh = shared.handle();
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
