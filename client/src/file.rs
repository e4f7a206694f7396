//! [`File`]: an open file — its layout, its reads and writes, its file pointer, and its
//! asynchronous calls (see [`crate::aio`]).
//!
//! A file's size is not kept anywhere: the storage servers know how long each object is, and
//! [`File::size`] asks them (Lustre's glimpse). Reads of holes return zeros; a read that runs
//! past the end of the file is short, one that starts past it is empty.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use iopath_fabric::Checksummed;
use iopath_forwarder::{CallKind, FyodFile};
use iopath_ost_client::LossesTold;
use tokio::runtime::Handle;
use tokio::sync::mpsc;
use tracing::{Instrument as _, debug_span};

use crate::aio::{
    self, AsyncCounters, AsyncOp, AsyncStats, Calls, Completion, IoHandle, IoResult, Job, Slot,
};
use crate::config::{ASYNC_CALLS_PER_FILE_MAX, REQUEST_BYTES_MAX};
use crate::error::ClientError;
use crate::layout::Layout;
use crate::targets::Targets;

/// An open file. Cheap to clone: clones share the file pointer and the asynchronous-call
/// worker, like duplicated file descriptors.
#[derive(Debug, Clone)]
pub struct File {
    inner: Arc<FileInner>,
}

#[derive(Debug)]
struct FileInner {
    core: Arc<FileCore>,
    /// The queue into the file's worker, made at the first asynchronous call.
    worker: Mutex<Option<mpsc::Sender<Job>>>,
    next_seq: AtomicU64,
    /// Where the worker is spawned (the runtime the file was opened on).
    runtime: Handle,
}

/// Waits until the worker behind `sender` (if any) has run every call queued before now.
async fn drain(sender: Option<mpsc::Sender<Job>>, file: u64) -> Result<(), ClientError> {
    let Some(sender) = sender else {
        return Ok(());
    };
    let slot = Arc::new(Slot::default());
    let completion = Completion::new(Arc::clone(&slot), file, None);
    let job = Job {
        op: AsyncOp::Barrier,
        completion,
    };
    // Not counted among the outstanding calls, so a file with a full queue can still be
    // closed: this waits for room instead.
    if let Err(unsent) = sender.send(job).await {
        drop(unsent);
        return Err(ClientError::WorkerStopped { file });
    }
    slot.take().await.map(drop)
}

impl Drop for FileInner {
    /// The last handle to a file opened through a fyod went away without `close`: close it
    /// there anyway (after its queued calls), or the fyod would hold it open for good.
    fn drop(&mut self) {
        let DataPath::Fyod(file) = &self.core.data else {
            return;
        };
        if self.core.closed.swap(true, Ordering::AcqRel) {
            return;
        }
        let sender = self
            .worker
            .get_mut()
            .unwrap_or_else(PoisonError::into_inner)
            .take();
        let (file, id) = (file.clone(), self.core.id);
        self.runtime.spawn(async move {
            if let Err(error) = drain(sender, id).await {
                tracing::debug!(%error, "draining a dropped file");
            }
            if let Err(error) = file.close().await {
                tracing::debug!(%error, "closing a dropped file at the fyod");
            }
        });
    }
}

/// Where a file's bytes go.
#[derive(Debug, Clone)]
pub(crate) enum DataPath {
    /// Straight to the storage servers.
    Direct(Arc<Targets>),
    /// Through a fyod, as a handle open there.
    Fyod(FyodFile),
}

/// What a file's calls need, shared with its worker (which must not keep the queue's sender
/// alive, so it holds this and not the [`File`]).
#[derive(Debug)]
pub(crate) struct FileCore {
    id: u64,
    path: String,
    layout: Layout,
    data: DataPath,
    pointer: Mutex<u64>,
    /// Closed at the fyod (by `close`, or by the last handle's drop).
    closed: std::sync::atomic::AtomicBool,
    /// Asynchronous calls issued and not yet answered.
    pending: Arc<AtomicUsize>,
    /// Lost writes to the file's objects this handle has been told of by `fsync`.
    lost_told: LossesTold,
    pub(crate) async_counters: AsyncCounters,
    pub(crate) client_counters: Arc<AsyncCounters>,
}

impl FileCore {
    /// Writes as a `kind` call: through a fyod, `Sync` is `write()` (served one at a time per
    /// fyod) and `Async` is `cwrite()` (concurrent across files); direct-attached they are
    /// the same.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "FileCore::write_at",
        skip_all
    )]
    pub(crate) async fn write_at(
        &self,
        offset_bytes: u64,
        data: Checksummed,
        kind: CallKind,
    ) -> Result<u64, ClientError> {
        check_length("write", data.len() as u64)?;
        if data.is_empty() {
            // Nothing to send (the servers refuse empty writes); the offset is still checked.
            self.layout.extents(offset_bytes, 0)?;
            return Ok(0);
        }
        let span = debug_span!("write_at", path = %self.path, offset_bytes, length = data.len());
        match &self.data {
            DataPath::Direct(targets) => {
                targets
                    .write(&self.layout, offset_bytes, data)
                    .instrument(span)
                    .await
            }
            DataPath::Fyod(file) => {
                // The layout refuses an extent past the largest offset, as direct writes do.
                self.layout.extents(offset_bytes, data.len() as u64)?;
                file.write_at_with(offset_bytes, data, kind)
                    .instrument(span)
                    .await
                    .map_err(|e| ClientError::from_fyod(&self.path, e))
            }
        }
    }

    /// Reads as a `kind` call (see [`FileCore::write_at`]).
    pub(crate) async fn read_at(
        &self,
        offset_bytes: u64,
        length_bytes: u64,
        kind: CallKind,
    ) -> Result<Bytes, ClientError> {
        check_length("read", length_bytes)?;
        let span = debug_span!("read_at", path = %self.path, offset_bytes, length_bytes);
        match &self.data {
            DataPath::Direct(targets) => {
                targets
                    .read(&self.layout, offset_bytes, length_bytes)
                    .instrument(span)
                    .await
            }
            DataPath::Fyod(file) => {
                self.layout.extents(offset_bytes, length_bytes)?;
                file.read_at_with(offset_bytes, length_bytes, kind)
                    .instrument(span)
                    .await
                    .map_err(|e| ClientError::from_fyod(&self.path, e))
            }
        }
    }

    pub(crate) fn position(&self) -> u64 {
        *self.pointer.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn seek(&self, position: u64) {
        *self.pointer.lock().unwrap_or_else(PoisonError::into_inner) = position;
    }
}

impl Calls for FileCore {
    fn write_at(
        &self,
        offset_bytes: u64,
        data: Checksummed,
        kind: CallKind,
    ) -> impl Future<Output = Result<u64, ClientError>> + Send {
        FileCore::write_at(self, offset_bytes, data, kind)
    }

    fn read_at(
        &self,
        offset_bytes: u64,
        length_bytes: u64,
        kind: CallKind,
    ) -> impl Future<Output = Result<Bytes, ClientError>> + Send {
        FileCore::read_at(self, offset_bytes, length_bytes, kind)
    }

    fn position(&self) -> u64 {
        FileCore::position(self)
    }

    fn seek(&self, position: u64) {
        FileCore::seek(self, position);
    }

    fn counters(&self) -> [&AsyncCounters; 2] {
        [&self.async_counters, &self.client_counters]
    }
}

fn check_length(what: &'static str, bytes: u64) -> Result<(), ClientError> {
    if bytes > REQUEST_BYTES_MAX {
        return Err(ClientError::TooLarge {
            what,
            bytes,
            max_bytes: REQUEST_BYTES_MAX,
        });
    }
    Ok(())
}

impl File {
    pub(crate) fn new(
        client_counters: &Arc<AsyncCounters>,
        id: u64,
        path: &str,
        layout: Layout,
        data: DataPath,
    ) -> Result<File, ClientError> {
        let runtime = Handle::try_current().map_err(|e| {
            ClientError::Unsupported(format!("files need a tokio runtime to run on: {e}"))
        })?;
        Ok(File {
            inner: Arc::new(FileInner {
                core: Arc::new(FileCore {
                    id,
                    path: path.to_owned(),
                    layout,
                    data,
                    pointer: Mutex::new(0),
                    closed: Default::default(),
                    pending: Arc::default(),
                    lost_told: LossesTold::default(),
                    async_counters: AsyncCounters::default(),
                    client_counters: Arc::clone(client_counters),
                }),
                worker: Mutex::new(None),
                next_seq: AtomicU64::new(0),
                runtime,
            }),
        })
    }

    /// The file's number within its client (what [`IoHandle::file`] names).
    pub fn id(&self) -> u64 {
        self.inner.core.id
    }

    /// The path it was opened by.
    pub fn path(&self) -> &str {
        &self.inner.core.path
    }

    /// Its layout.
    pub fn layout(&self) -> &Layout {
        &self.inner.core.layout
    }

    /// Writes `data` at `offset`; returns the bytes written (all of them, or an error).
    ///
    /// Through a fyod this is a synchronous call (`write()`): the fyod serves one at a time.
    ///
    /// `data` is `Bytes`, or [`Checksummed`] bytes whose checksum their maker computed already.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "File::write_at",
        skip_all
    )]
    pub async fn write_at(
        &self,
        offset: u64,
        data: impl Into<Checksummed>,
    ) -> Result<u64, ClientError> {
        self.inner
            .core
            .write_at(offset, data.into(), CallKind::Sync)
            .await
    }

    /// Reads up to `len` bytes at `offset`: short at the end of the file, empty past it,
    /// zeros in holes.
    pub async fn read_at(&self, offset: u64, len: u64) -> Result<Bytes, ClientError> {
        self.inner.core.read_at(offset, len, CallKind::Sync).await
    }

    /// The file's size, glimpsed from its objects (by the fyod, through one).
    pub async fn size(&self) -> Result<u64, ClientError> {
        let core = &self.inner.core;
        match &core.data {
            DataPath::Direct(targets) => targets.size(&core.layout).await,
            DataPath::Fyod(file) => file
                .size()
                .await
                .map_err(|e| ClientError::from_fyod(&core.path, e)),
        }
    }

    /// Cuts the file to `size_bytes`, or extends it with a hole (POSIX `ftruncate`): each
    /// object to its share, by this client or by the fyod.
    pub async fn truncate(&self, size_bytes: u64) -> Result<(), ClientError> {
        let core = &self.inner.core;
        match &core.data {
            DataPath::Direct(targets) => targets.truncate(&core.layout, size_bytes).await,
            DataPath::Fyod(file) => file
                .truncate(size_bytes)
                .await
                .map_err(|e| ClientError::from_fyod(&core.path, e)),
        }
    }
    /// Commits every target of the file: afterwards no write to it needs keeping for replay.
    /// Asynchronous calls still queued are not waited for (as POSIX `fsync` does not wait
    /// for `aio`): `iowait` them first.
    ///
    /// Fails with [`ClientError::WritesLost`] if a server holding the file's objects evicted
    /// this client after a restart and dropped writes it had acknowledged — once: the next
    /// `fsync` of this handle succeeds unless more were lost, as Linux reports a write-back
    /// error once to each open file. A handle opened after the loss is told once too, so a
    /// loss is never reported to nobody.
    pub async fn fsync(&self) -> Result<(), ClientError> {
        let core = &self.inner.core;
        match &core.data {
            DataPath::Direct(targets) => {
                targets.sync(&core.layout).await?;
                targets.check_lost(&core.layout, &core.lost_told)
            }
            DataPath::Fyod(file) => file
                .fsync()
                .await
                .map_err(|e| ClientError::from_fyod(&core.path, e)),
        }
    }

    /// Waits for every asynchronous call issued on the file so far, then lets go of this
    /// handle to it. Their results stay with their handles. Through a fyod this also closes
    /// the handle at the fyod, for every clone of this file.
    ///
    /// A file dropped without `close` is closed at the fyod in the background, once its
    /// queued calls are done.
    pub async fn close(self) -> Result<(), ClientError> {
        let sender = self
            .inner
            .worker
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone();
        drain(sender, self.id()).await?;
        let core = &self.inner.core;
        match &core.data {
            DataPath::Direct(_) => Ok(()),
            DataPath::Fyod(file) => {
                if core.closed.swap(true, Ordering::AcqRel) {
                    return Ok(());
                }
                file.clone()
                    .close()
                    .await
                    .map_err(|e| ClientError::from_fyod(&core.path, e))
            }
        }
    }

    /// The file pointer `cwrite` and `cread` use.
    pub fn position(&self) -> u64 {
        self.inner.core.position()
    }

    /// Moves the file pointer. Calls already queued that use it (`cwrite`, `cread`) see the
    /// new position when they run: seek when none is outstanding.
    pub fn seek(&self, position: u64) {
        self.inner.core.seek(position);
    }

    /// Starts writing `data` at `offset` and returns at once.
    pub fn iwrite(&self, offset: u64, data: impl Into<Checksummed>) -> IoHandle {
        self.submit(AsyncOp::Write {
            offset_bytes: offset,
            data: data.into(),
        })
    }

    /// Starts reading `len` bytes at `offset` and returns at once.
    pub fn iread(&self, offset: u64, len: u64) -> IoHandle {
        self.submit(AsyncOp::Read {
            offset_bytes: offset,
            length_bytes: len,
        })
    }

    /// Whether the call is finished (`iowait` will not wait). False for a handle this file
    /// did not issue: `iowait` says why.
    pub fn iodone(&self, handle: &IoHandle) -> bool {
        handle.file == self.id() && handle.slot.is_done()
    }

    /// Waits for the call to finish and returns what it did.
    pub async fn iowait(&self, handle: IoHandle) -> Result<IoResult, ClientError> {
        if handle.file != self.id() {
            return Err(ClientError::UnknownHandle {
                handle: handle.seq,
                handle_file: handle.file,
                file: self.id(),
            });
        }
        handle.slot.take().await
    }

    /// Writes `data` at the file pointer and moves it past them, as an asynchronous call
    /// waited for: in order with the file's other asynchronous calls.
    pub async fn cwrite(&self, data: impl Into<Checksummed>) -> Result<u64, ClientError> {
        let handle = self.submit(AsyncOp::WriteAtPointer { data: data.into() });
        self.iowait(handle).await.map(|r| r.bytes())
    }

    /// Reads up to `len` bytes at the file pointer and moves it past what was read.
    pub async fn cread(&self, len: u64) -> Result<Bytes, ClientError> {
        let handle = self.submit(AsyncOp::ReadAtPointer { length_bytes: len });
        let result = self.iowait(handle).await?;
        Ok(result.into_data().unwrap_or_default())
    }

    /// Asynchronous calls on this file running at once, now and at most (never more than
    /// one: a file's calls run in order).
    pub fn async_stats(&self) -> AsyncStats {
        self.inner.core.async_counters.snapshot()
    }

    /// Queues `op` on the file's worker (starting the worker on the first call).
    fn submit(&self, op: AsyncOp) -> IoHandle {
        let inner = &self.inner;
        let core = &inner.core;
        let seq = inner.next_seq.fetch_add(1, Ordering::Relaxed);
        let slot = Arc::new(Slot::default());
        let handle = IoHandle {
            file: core.id,
            seq,
            slot: Arc::clone(&slot),
        };
        let outstanding = core.pending.fetch_add(1, Ordering::AcqRel) + 1;
        let completion = Completion::new(slot, core.id, Some(Arc::clone(&core.pending)));
        if outstanding > ASYNC_CALLS_PER_FILE_MAX {
            completion.finish(Err(ClientError::TooManyPending {
                pending: outstanding - 1,
                max: ASYNC_CALLS_PER_FILE_MAX,
            }));
            return handle;
        }
        let sender = {
            let mut worker = inner.worker.lock().unwrap_or_else(PoisonError::into_inner);
            worker
                .get_or_insert_with(|| {
                    // Room for every outstanding call plus as many `close` barriers.
                    let (sender, jobs) = mpsc::channel(2 * ASYNC_CALLS_PER_FILE_MAX);
                    inner.runtime.spawn(aio::worker(Arc::clone(core), jobs));
                    sender
                })
                .clone()
        };
        if let Err(error) = sender.try_send(Job { op, completion }) {
            let (job, reason) = match error {
                mpsc::error::TrySendError::Full(job) => (
                    job,
                    ClientError::TooManyPending {
                        pending: outstanding - 1,
                        max: ASYNC_CALLS_PER_FILE_MAX,
                    },
                ),
                mpsc::error::TrySendError::Closed(job) => {
                    (job, ClientError::WorkerStopped { file: core.id })
                }
            };
            job.completion.finish(Err(reason));
        }
        handle
    }
}
