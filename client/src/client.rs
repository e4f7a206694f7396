//! [`Client`]: the namespace calls (to the metadata service) and the doors to files.
//!
//! Names and layouts come from the metadata service; data never passes through it. A create
//! is two steps, as in Lustre: the metadata service allocates the layout (which targets,
//! which object ids), then the client creates the objects on their storage servers. Unlink
//! and a rename that replaces a file are the reverse: the metadata service forgets the name
//! and hands back the layout, and the client destroys the objects.
//!
//! Through a fyod (`ClientConfig::forwarder`), as on ASCI Red, files are opened and created
//! at the fyod (which makes the objects) and every read, write, size and fsync is an RPC to
//! it carrying only a buffer descriptor; the client then talks to the storage servers only to
//! destroy the objects of a file it unlinks, connecting to them when it first needs to.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use iopath_fabric::{ChecksumKind, Nid, Node};
use iopath_forwarder::{CallKind, FyodClient, IoMode, OpenOptions};
use iopath_mds::{Attributes, DirEntry, FileType, MdsClient, Owner, SetAttributes, SpecialNode};
use iopath_ost_client::{ClientId, OscStats};
use tokio::sync::OnceCell;
use tracing::{Instrument as _, info_span, warn};

use crate::aio::{AsyncCounters, AsyncStats};
use crate::config::{CREATE_MODE, ClientConfig, MKDIR_MODE, STREAM_BUFFER_MAX_BYTES};
use crate::error::ClientError;
use crate::file::{DataPath, File};
use crate::layout::{FsName, Layout, StripeRequest};
use crate::stat::{self, FileStat, StripeInfo};
use crate::stream::BufferedStream;
use crate::targets::Targets;

/// A client of one file system: its metadata service and every storage server. Cheap to
/// clone; every clone is the same client.
#[derive(Debug, Clone)]
pub struct Client {
    inner: Arc<ClientInner>,
}

#[derive(Debug)]
pub(crate) struct ClientInner {
    node: Node,
    mds: MdsClient,
    client_id: ClientId,
    checksum: ChecksumKind,
    /// The targets the metadata service places layouts on: (OST index, server NID).
    target_list: Vec<(u32, Nid)>,
    /// The target indices alone, in the same order.
    target_indices: Vec<u32>,
    /// The file system's name, as the metadata service gives it: its targets are named
    /// after it (`iopath-OST0003`).
    fsname: FsName,
    /// Connections to the storage servers: made at connect when direct-attached, at first
    /// need (an unlink) through a fyod.
    targets: OnceCell<Arc<Targets>>,
    /// The node's osc counters, which the storage-server connections count into.
    osc_stats: Option<Arc<OscStats>>,
    /// The fyod reads and writes go through, if any.
    fyod: Option<FyodClient>,
    /// MUNIX or MASYNC for files opened through a fyod from now on.
    io_mode: Mutex<IoMode>,
    next_file: AtomicU64,
    pub(crate) async_counters: Arc<AsyncCounters>,
    /// Set by [`Client::close`].
    closed: AtomicBool,
}

impl ClientInner {
    /// Bytes acknowledged and not yet committed that this client holds for replay.
    fn kept_bytes(&self) -> u64 {
        let direct = self.targets.get().map_or(0, |t| t.kept_bytes());
        let fyod = self.fyod.as_ref().map_or(0, |f| f.kept_bytes());
        direct + fyod
    }
}

impl Drop for ClientInner {
    /// A client that ends without [`Client::close`] takes with it the only copy of the writes
    /// its servers acknowledged but have not committed: if a server crashes before it commits
    /// them, they are lost (and its readers are told so, with EIO). Say so now, loudly.
    fn drop(&mut self) {
        if self.closed.load(Ordering::Acquire) {
            return;
        }
        let kept = self.kept_bytes();
        if kept > 0 {
            let writes = self.targets.get().map_or(0, |t| t.kept_writes());
            warn!(
                client = %self.client_id,
                kept_bytes = kept,
                kept_writes = writes,
                "client dropped without close: it held {kept} bytes of acknowledged writes its servers had not committed; they are lost if a server crashes before its next commit (Client::close commits them first)"
            );
        }
    }
}

impl ClientInner {
    /// The storage-server connections, made now if they are not yet.
    async fn targets(&self) -> Result<&Arc<Targets>, ClientError> {
        self.targets
            .get_or_try_init(|| async {
                Targets::connect(
                    &self.node,
                    self.client_id,
                    &self.target_list,
                    self.osc_stats.clone(),
                )
                .await
                .map(Arc::new)
            })
            .await
    }
}

impl Client {
    /// Connects: learns the targets and the file system's name from the metadata service,
    /// then connects to each storage server (one connection per server, shared by its
    /// targets, each pinged every second) — or, with `config.forwarder`, to that fyod instead.
    pub async fn connect(config: ClientConfig) -> Result<Client, ClientError> {
        let mds = MdsClient::new(config.node.clone(), config.mds);
        let list = mds
            .targets()
            .await
            .map_err(|e| ClientError::from_mds("(targets)", e))?;
        let target_list: Vec<(u32, Nid)> = list.targets.iter().map(|t| (t.index, t.nid)).collect();
        let targets = OnceCell::new();
        let fyod = match config.forwarder {
            Some(nid) => Some(
                FyodClient::connect_with_checksum(
                    config.node.clone(),
                    nid,
                    config.client_id.get(),
                    config.checksum,
                )
                .await
                .map_err(|source| ClientError::Forwarder {
                    path: format!("(connect to the fyod at {nid})"),
                    source,
                })?,
            ),
            None => {
                let connected = Targets::connect(
                    &config.node,
                    config.client_id,
                    &target_list,
                    config.osc_stats.clone(),
                )
                .await?;
                // Just made: nobody else can have set it.
                let _ = targets.set(Arc::new(connected));
                None
            }
        };
        Ok(Client {
            inner: Arc::new(ClientInner {
                node: config.node,
                mds,
                client_id: config.client_id,
                checksum: config.checksum,
                target_indices: target_list.iter().map(|&(index, _)| index).collect(),
                target_list,
                fsname: list.fsname,
                targets,
                osc_stats: config.osc_stats,
                fyod,
                io_mode: Mutex::new(IoMode::default()),
                next_file: AtomicU64::new(1),
                async_counters: Arc::default(),
                closed: AtomicBool::new(false),
            }),
        })
    }

    /// Sets MUNIX (the default: a file's reads and writes are atomic across fyods) or MASYNC
    /// for files this client opens through a fyod from now on. As on ASCI Red (yod's
    /// `-munix`/`-masync`) it is a choice for the whole application, not per file; it has no
    /// effect direct-attached.
    pub fn set_io_mode(&self, mode: IoMode) {
        *self
            .inner
            .io_mode
            .lock()
            .unwrap_or_else(PoisonError::into_inner) = mode;
    }

    /// The I/O mode files are opened with through a fyod.
    pub fn io_mode(&self) -> IoMode {
        *self
            .inner
            .io_mode
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// The fyod connection, when reads and writes go through one.
    pub fn fyod(&self) -> Option<&FyodClient> {
        self.inner.fyod.as_ref()
    }

    /// The node it sends from.
    pub fn node(&self) -> &Node {
        &self.inner.node
    }

    /// Its id at the storage servers.
    pub fn client_id(&self) -> ClientId {
        self.inner.client_id
    }

    /// The checksum kind it was configured with.
    pub fn checksum(&self) -> ChecksumKind {
        self.inner.checksum
    }

    /// The fyod it sends reads and writes through, if any.
    pub fn forwarder(&self) -> Option<Nid> {
        self.inner.fyod.as_ref().map(FyodClient::fyod)
    }

    /// The metadata service's NID.
    pub fn mds(&self) -> Nid {
        self.inner.mds.server()
    }

    /// The target indices layouts are placed on, in the metadata service's order.
    pub fn targets(&self) -> &[u32] {
        &self.inner.target_indices
    }

    /// The file system's name (`iopath` unless its stack file names it), which its targets'
    /// names carry: `iopath-OST0003`.
    pub fn fsname(&self) -> &FsName {
        &self.inner.fsname
    }

    /// Makes directory `path` (mode 0755, its owner not recorded).
    pub async fn mkdir(&self, path: &str) -> Result<(), ClientError> {
        self.mkdir_as(path, MKDIR_MODE, Owner::UNRECORDED)
            .await
            .map(drop)
    }

    /// Makes directory `path` with permission bits `mode`, owned by `owner`; returns its
    /// attributes.
    pub async fn mkdir_as(
        &self,
        path: &str,
        mode: u32,
        owner: Owner,
    ) -> Result<FileStat, ClientError> {
        let attributes = self
            .inner
            .mds
            .mkdir_as(path, mode, owner)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        stat::stat_from_attributes(path, &attributes)
    }

    /// Removes the empty directory `path`.
    pub async fn rmdir(&self, path: &str) -> Result<(), ClientError> {
        self.inner
            .mds
            .rmdir(path)
            .await
            .map_err(|e| ClientError::from_mds(path, e))
    }

    /// Creates file `path` with a layout from `stripe` (zero fields inherit the directory's
    /// default), creates its objects on their targets, and opens it. Impossible stripe values
    /// are refused here, before any round trip. If an object cannot be created, the name is
    /// removed again and the objects made so far destroyed.
    pub async fn create(&self, path: &str, stripe: StripeRequest) -> Result<File, ClientError> {
        self.create_as(path, stripe, CREATE_MODE, Owner::UNRECORDED)
            .await
            .map(|(file, _)| file)
    }

    /// [`Client::create`], the new file's permission bits `mode` and its owner `owner`; with
    /// the open file, its attributes (size 0: it is new). Through a fyod, which creates with
    /// its default bits and no owner, they are set at the metadata service after it created
    /// the file.
    pub async fn create_as(
        &self,
        path: &str,
        stripe: StripeRequest,
        mode: u32,
        owner: Owner,
    ) -> Result<(File, FileStat), ClientError> {
        self.check_stripe(&stripe)?;
        let span = info_span!("create", path);
        if let Some(fyod) = &self.inner.fyod {
            // The fyod creates the name and the objects. Its open creates only if absent: a
            // file that was already there is refused here, as a direct create refuses it.
            let options = OpenOptions {
                create: true,
                stripe: Some(stripe),
                ..self.fyod_options()
            };
            let file = fyod
                .open(path, options)
                .instrument(span)
                .await
                .map_err(|e| ClientError::from_fyod(path, e))?;
            if !file.created() {
                if let Err(error) = file.close().await {
                    warn!(%error, path, "closing the handle of an existing file failed");
                }
                return Err(ClientError::Exists { path: path.into() });
            }
            let mds = &self.inner.mds;
            let attributes = async {
                let attributes = mds.stat(path).await?;
                if (mode, owner) == (CREATE_MODE, Owner::UNRECORDED) {
                    return Ok(attributes);
                }
                let change = SetAttributes {
                    mode: Some(mode),
                    uid: owner.uid,
                    gid: owner.gid,
                    ..SetAttributes::default()
                };
                mds.setattr(attributes.ino, &change).await
            }
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
            let stat = stat::stat_from_attributes(path, &attributes)?;
            return Ok((self.fyod_file(path, file)?, stat));
        }
        async {
            let attributes = self
                .inner
                .mds
                .create_for(path, (mode, owner), stripe, None)
                .await
                .map_err(|e| ClientError::from_mds(path, e))?;
            let layout = match &attributes.layout {
                Some(layout) => layout.clone(),
                None => {
                    return Err(ClientError::Malformed {
                        what: "create reply",
                        why: "no layout".into(),
                    });
                }
            };
            let stat = stat::stat_from_attributes(path, &attributes)?;
            let targets = self.inner.targets().await?;
            if let Err(error) = targets.create_objects(&layout).await {
                // Leave no name without objects behind; the error that matters is the first.
                warn!(%error, "creating the objects failed: removing the file again");
                if let Err(undo) = self.inner.mds.unlink(path).await.map(drop) {
                    warn!(error = %undo, "removing the name failed too");
                }
                if let Err(undo) = targets.destroy_objects(&layout).await {
                    warn!(error = %undo, "destroying the objects made so far failed too");
                }
                return Err(error);
            }
            let file = self.file(path, layout, DataPath::Direct(Arc::clone(targets)))?;
            Ok((file, stat))
        }
        .instrument(span)
        .await
    }

    /// Opens the existing file `path`.
    pub async fn open(&self, path: &str) -> Result<File, ClientError> {
        if let Some(fyod) = &self.inner.fyod {
            let file = fyod
                .open(path, self.fyod_options())
                .await
                .map_err(|e| ClientError::from_fyod(path, e))?;
            return self.fyod_file(path, file);
        }
        let attributes = self
            .inner
            .mds
            .open(path)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        self.direct_file(path, &attributes).await
    }

    /// A direct-attached file of `attributes`' layout; a directory or a layout missing is
    /// said so.
    async fn direct_file(&self, path: &str, attributes: &Attributes) -> Result<File, ClientError> {
        match &attributes.layout {
            Some(layout) => {
                let layout = layout.clone();
                let targets = Arc::clone(self.inner.targets().await?);
                self.file(path, layout, DataPath::Direct(targets))
            }
            None if attributes.file_type == FileType::Directory => {
                Err(ClientError::IsADirectory { path: path.into() })
            }
            None => Err(ClientError::Malformed {
                what: "open reply",
                why: format!("{path}: a file without a layout"),
            }),
        }
    }

    /// The attributes of `path`; a file's size is glimpsed from its objects.
    pub async fn stat(&self, path: &str) -> Result<FileStat, ClientError> {
        let attributes = self
            .inner
            .mds
            .stat(path)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        self.glimpsed(path, &attributes).await
    }

    /// The attributes of the inode numbered `ino` — what a mount holding the number asks,
    /// whatever its names are now — with a file's size glimpsed from its objects. `path` is
    /// a name it had: the error's, and the one a fyod opens it by to glimpse.
    ///
    /// `open`, a handle of it the caller holds, glimpses the size instead: through a fyod it
    /// is how a file with no name left (an orphan) is glimpsed.
    pub async fn stat_ino(
        &self,
        ino: u64,
        path: &str,
        open: Option<&File>,
    ) -> Result<FileStat, ClientError> {
        let attributes = self
            .inner
            .mds
            .stat_ino(ino)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        match open {
            Some(file) if attributes.layout.is_some() => {
                let mut stat = stat::stat_from_attributes(path, &attributes)?;
                stat.size_bytes = file.size().await?;
                Ok(stat)
            }
            _ => self.glimpsed(path, &attributes).await,
        }
    }

    /// Changes the attributes of the inode numbered `ino` (`path`: a name it had, for
    /// errors and a fyod's glimpse): `chmod`, `chown`, `utimensat`, and the times of writes
    /// a mount reports when the file is closed. Returns its attributes now, a file's size
    /// glimpsed.
    pub async fn set_attributes(
        &self,
        ino: u64,
        path: &str,
        change: &SetAttributes,
    ) -> Result<FileStat, ClientError> {
        let attributes = self
            .inner
            .mds
            .setattr(ino, change)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        self.glimpsed(path, &attributes).await
    }

    /// Opens the file numbered `ino` (`path`: a name it had, which a fyod opens it by).
    pub async fn open_ino(&self, ino: u64, path: &str) -> Result<File, ClientError> {
        if self.inner.fyod.is_some() {
            return self.open(path).await;
        }
        let attributes = self
            .inner
            .mds
            .stat_ino(ino)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        self.direct_file(path, &attributes).await
    }

    /// `attributes` as a [`FileStat`], a file's size glimpsed: direct-attached from the
    /// objects of the layout in hand; through a fyod by the fyod, on a handle opened by
    /// `path`.
    async fn glimpsed(&self, path: &str, attributes: &Attributes) -> Result<FileStat, ClientError> {
        let mut stat = stat::stat_from_attributes(path, attributes)?;
        let Some(layout) = &stat.layout else {
            return Ok(stat);
        };
        stat.size_bytes = if self.inner.fyod.is_some() {
            let file = self.open(path).await?;
            let size = file.size().await;
            file.close().await?;
            size?
        } else {
            self.inner.targets().await?.size(layout).await?
        };
        Ok(stat)
    }

    /// The names in directory `path`, in name order.
    pub async fn readdir(&self, path: &str) -> Result<Vec<String>, ClientError> {
        let entries = self
            .inner
            .mds
            .readdir(path)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        Ok(entries.into_iter().map(|e| e.name).collect())
    }

    /// The entries of directory `path`, in name order, each with its type and the metadata
    /// service's inode number (what a mount's `readdir` reports without a `stat` each).
    pub async fn readdir_entries(&self, path: &str) -> Result<Vec<DirEntry>, ClientError> {
        self.inner
            .mds
            .readdir(path)
            .await
            .map_err(|e| ClientError::from_mds(path, e))
    }

    /// Removes name `path` (a file, a symbolic link, a special file); a file that loses its
    /// last name loses its objects.
    pub async fn unlink(&self, path: &str) -> Result<(), ClientError> {
        self.unlink_keeping(path, None).await.map(drop)
    }

    /// [`Client::unlink`]; a file numbered `keep_ino` that loses its last name — the caller
    /// holds it open — is kept as this client's orphan, objects and all, until
    /// [`Client::drop_orphan`]. Returns whether it was.
    pub async fn unlink_keeping(
        &self,
        path: &str,
        keep_ino: Option<u64>,
    ) -> Result<bool, ClientError> {
        let removal = self
            .inner
            .mds
            .unlink_keeping(path, keep_ino)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        // The name is gone: from here a failure leaves only unreachable objects behind.
        if let Some(layout) = &removal.layout {
            self.inner.targets().await?.destroy_objects(layout).await?;
        }
        Ok(removal.orphaned)
    }

    /// Renames `from` to `to`; a file `to` replaces loses its objects if that was its last
    /// name.
    pub async fn rename(&self, from: &str, to: &str) -> Result<(), ClientError> {
        self.rename_keeping(from, to, None).await.map(drop)
    }

    /// [`Client::rename`]; a replaced file numbered `keep_ino` is kept as this client's
    /// orphan (see [`Client::unlink_keeping`]). Returns whether it was.
    pub async fn rename_keeping(
        &self,
        from: &str,
        to: &str,
        keep_ino: Option<u64>,
    ) -> Result<bool, ClientError> {
        let renamed = self
            .inner
            .mds
            .rename_keeping(from, to, keep_ino)
            .await
            .map_err(|e| ClientError::from_mds(from, e))?;
        if let Some(layout) = &renamed.replaced {
            self.inner.targets().await?.destroy_objects(layout).await?;
        }
        Ok(renamed.orphaned)
    }

    /// Forgets this client's orphan `ino` (it closed it) and destroys its objects.
    pub async fn drop_orphan(&self, ino: u64) -> Result<(), ClientError> {
        let what = format!("(orphan inode {ino})");
        let removal = self
            .inner
            .mds
            .drop_orphan(ino)
            .await
            .map_err(|e| ClientError::from_mds(&what, e))?;
        match &removal.layout {
            Some(layout) => self.inner.targets().await?.destroy_objects(layout).await,
            None => Ok(()),
        }
    }

    /// Cleans up the orphans the metadata service says are abandoned (their holders, crashed
    /// mounts, went silent): destroys their objects, then drops them. Returns how many it
    /// dropped. An orphan another client dropped meanwhile is skipped.
    pub async fn reap_orphans(&self) -> Result<usize, ClientError> {
        let abandoned = self
            .inner
            .mds
            .abandoned_orphans()
            .await
            .map_err(|e| ClientError::from_mds("(orphans)", e))?;
        let mut dropped = 0;
        for (ino, layout) in abandoned {
            // Objects first: an orphan dropped with its objects left would leak them.
            self.inner.targets().await?.destroy_objects(&layout).await?;
            match self.inner.mds.drop_orphan(ino).await {
                Ok(_) => dropped += 1,
                Err(e) if e.errno() == iopath_mds::error::errno::EINVAL => {}
                Err(e) => return Err(ClientError::from_mds("(orphans)", e)),
            }
        }
        Ok(dropped)
    }

    /// Gives inode `ino` (not a directory) another name, `path` (a hard link); returns its
    /// attributes (a file's size glimpsed).
    pub async fn link(&self, ino: u64, path: &str) -> Result<FileStat, ClientError> {
        let attributes = self
            .inner
            .mds
            .link(ino, path)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        self.glimpsed(path, &attributes).await
    }

    /// Makes symbolic link `path` pointing to `target`, owned by `owner`.
    pub async fn symlink(
        &self,
        path: &str,
        target: &str,
        owner: Owner,
    ) -> Result<FileStat, ClientError> {
        let attributes = self
            .inner
            .mds
            .symlink(path, target, owner)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        stat::stat_from_attributes(path, &attributes)
    }

    /// Makes a FIFO, socket or device node `path` with permission bits `mode` (and a
    /// device's number `rdev`), owned by `owner`. The kernel serves their I/O: the file
    /// system keeps only the name and the attributes.
    pub async fn mknod(
        &self,
        path: &str,
        node: SpecialNode,
        (mode, rdev): (u32, u64),
        owner: Owner,
    ) -> Result<FileStat, ClientError> {
        let attributes = self
            .inner
            .mds
            .mknod(path, node, (mode, rdev), owner)
            .await
            .map_err(|e| ClientError::from_mds(path, e))?;
        stat::stat_from_attributes(path, &attributes)
    }

    /// `lfs setstripe`: on a directory, sets the default layout of files created in it; on a
    /// path that does not exist, creates an empty file with that layout. A regular file's
    /// layout is fixed at creation: setstripe on one fails with `Exists`.
    pub async fn setstripe(&self, path: &str, stripe: StripeRequest) -> Result<(), ClientError> {
        self.check_stripe(&stripe)?;
        match self.inner.mds.stat(path).await {
            Ok(attributes) if attributes.file_type == FileType::Directory => self
                .inner
                .mds
                .setstripe(path, Some(stripe))
                .await
                .map_err(|e| ClientError::from_mds(path, e)),
            Ok(_) => Err(ClientError::Exists { path: path.into() }),
            Err(e) => match ClientError::from_mds(path, e) {
                ClientError::NotFound { .. } => self.create(path, stripe).await.map(drop),
                other => Err(other),
            },
        }
    }

    /// `lfs getstripe` of a file: its layout. A directory has none (see
    /// [`Client::stripe_info`] for its default).
    pub async fn getstripe(&self, path: &str) -> Result<Layout, ClientError> {
        match self.stripe_info(path).await? {
            StripeInfo::File(layout) => Ok(layout),
            StripeInfo::Directory { .. } => Err(ClientError::IsADirectory { path: path.into() }),
        }
    }

    /// A file's layout, or a directory's default for new files.
    pub async fn stripe_info(&self, path: &str) -> Result<StripeInfo, ClientError> {
        self.inner
            .mds
            .getstripe(path)
            .await
            .map_err(|e| ClientError::from_mds(path, e))
    }

    /// The capacity of every storage target, in index order (Lustre's `lfs df`; a mount's
    /// `statfs` is their sum): asked of the servers, or of the fyod behind which they are.
    pub async fn statfs(&self) -> Result<Vec<(u32, iopath_ost_client::Capacity)>, ClientError> {
        match &self.inner.fyod {
            Some(fyod) => fyod
                .statfs()
                .await
                .map_err(|e| ClientError::from_fyod("/", e)),
            None => self.inner.targets().await?.statfs().await,
        }
    }

    /// Memory pinned by writes the servers acknowledged but have not committed: what this
    /// client keeps to replay after a server restart.
    /// Through a fyod in PFS mode these are the write buffers the storage servers may pull
    /// again in replay (pinned until committed).
    pub fn kept_bytes(&self) -> u64 {
        self.inner.kept_bytes()
    }

    /// Writes this client replayed to storage servers that restarted (straight to them; a
    /// fyod replays its own).
    pub fn replayed_writes(&self) -> u64 {
        self.inner.targets.get().map_or(0, |t| t.replayed_writes())
    }

    /// Ends this client's session, as a program must before it exits: every write a server
    /// acknowledged is **committed** before this returns, and each server (and the fyod)
    /// forgets the client, so a server that restarts later neither waits for it nor needs
    /// anything it kept. Close (or `iowait`) files first; calls still queued are refused.
    ///
    /// Why: with async journals a reply means "on disk, not yet committed", and until the
    /// commit the client's memory holds the only copy a restarted server can replay. A client
    /// that exits without this takes that copy with it; if a server then crashes before its
    /// next commit, the writes are lost (and readers of those bytes get EIO). Dropping a
    /// client without `close` logs a warning saying how much it held.
    ///
    /// Through a fyod: the fyod lets go of this compute node's handles (flushing UFS
    /// write-behind), then commits every target. Bounded in time by the RPC layer's resends
    /// and a storage server's recovery window; on failure the error says what may not be
    /// durable. Closing twice is the same as once.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "Client::close",
        skip_all
    )]
    pub async fn close(&self) -> Result<(), ClientError> {
        if self.inner.closed.load(Ordering::Acquire) {
            return Ok(());
        }
        if let Some(fyod) = &self.inner.fyod {
            let fyod_error = |source| ClientError::Forwarder {
                path: format!("(close: disconnect from the fyod at {})", fyod.fyod()),
                source,
            };
            fyod.disconnect().await.map_err(fyod_error)?;
            fyod.commit_targets(&self.inner.target_indices)
                .await
                .map_err(|source| ClientError::Forwarder {
                    path: format!("(close: commit every target through {})", fyod.fyod()),
                    source,
                })?;
        }
        if let Some(targets) = self.inner.targets.get() {
            targets.disconnect().await?;
        }
        self.inner.closed.store(true, Ordering::Release);
        Ok(())
    }

    /// Acknowledged writes the servers lost (this client was evicted from a recovery), as
    /// found by the pinger.
    pub fn lost_writes(&self) -> Vec<iopath_ost_client::LostWrites> {
        self.inner
            .targets
            .get()
            .map_or_else(Vec::new, |t| t.lost_writes())
    }

    /// How many asynchronous calls run at once across this client's files, now and at most.
    pub fn async_stats(&self) -> AsyncStats {
        self.inner.async_counters.snapshot()
    }

    /// A stdio-like stream over `file` with a buffer of `buffer_size_bytes` (0: unbuffered).
    pub fn stream(
        &self,
        file: File,
        buffer_size_bytes: usize,
    ) -> Result<BufferedStream, ClientError> {
        if buffer_size_bytes > STREAM_BUFFER_MAX_BYTES {
            return Err(ClientError::TooLarge {
                what: "stream buffer",
                bytes: buffer_size_bytes as u64,
                max_bytes: STREAM_BUFFER_MAX_BYTES as u64,
            });
        }
        Ok(BufferedStream::new(file, buffer_size_bytes))
    }

    fn file(&self, path: &str, layout: Layout, data: DataPath) -> Result<File, ClientError> {
        let id = self.inner.next_file.fetch_add(1, Ordering::Relaxed);
        File::new(&self.inner.async_counters, id, path, layout, data)
    }

    fn fyod_file(&self, path: &str, file: iopath_forwarder::FyodFile) -> Result<File, ClientError> {
        let layout = file.layout().clone();
        self.file(path, layout, DataPath::Fyod(file))
    }

    /// How files are opened at the fyod: this client's I/O mode, synchronous calls unless a
    /// call is made asynchronously (`iwrite`, `cwrite`, ...), the fyod's default permission
    /// bits for new files (0644, as [`CREATE_MODE`]).
    fn fyod_options(&self) -> OpenOptions {
        OpenOptions {
            create: false,
            stripe: None,
            io_mode: self.io_mode(),
            call: CallKind::Sync,
            ..OpenOptions::default()
        }
    }

    /// Checks stripe values against this file system's targets before asking the metadata
    /// service (which checks them again: it decides).
    fn check_stripe(&self, stripe: &StripeRequest) -> Result<(), ClientError> {
        stripe.resolve(&self.inner.target_indices)?;
        Ok(())
    }
}
