//! `UringEngine`: io_uring rings, each driven by its own dedicated thread.
//!
//! A request travels: caller builds an `Op` → bounded channel to a ring thread → the thread
//! turns it into a submission queue entry → the kernel does the I/O → the completion comes
//! back on the ring → the thread answers the caller's oneshot. The caller's future never blocks
//! a runtime thread.
//!
//! A ring thread waits inside `io_uring_enter` for completions, so it cannot also wait on the
//! channel. Callers therefore ring a *doorbell* after queueing a request: an eventfd that the
//! thread keeps a read armed on, inside the ring. Writing it completes that read and wakes the
//! thread, which drains the channel and re-arms the read.

use super::aligned::{PooledBuf, SizedPools, is_direct_aligned};
use super::{
    DiskEngine, EngineFile, EngineFuture, SyncKind, WriteBuf, WriteDone, check_transfer,
    plan_read_direct, plan_write, read_pool,
};
use bytes::Bytes;
use io_uring::{IoUring, opcode, types};
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use tokio::sync::{mpsc, oneshot};

/// `user_data` of the doorbell read; request slots use their index.
const DOORBELL_TOKEN: u64 = u64::MAX;

/// The io_uring engine.
#[derive(Debug)]
pub struct UringEngine {
    /// One handle per ring thread.
    rings: Vec<Arc<Ring>>,
    /// Round-robin cursor over `rings`.
    next_ring: AtomicUsize,
    /// Where direct reads land.
    read_pool: Arc<SizedPools>,
}

impl UringEngine {
    /// Sets up `threads` rings (at least one) of `ring_entries` entries, each on its own thread.
    /// Each ring keeps at most `ring_entries - 1` requests in flight (one entry is the doorbell).
    /// Fails when the kernel refuses io_uring.
    pub fn new(ring_entries: u32, threads: usize) -> io::Result<UringEngine> {
        let ring_entries = ring_entries.clamp(2, 4096);
        let depth = ring_entries as usize - 1;
        let mut rings = Vec::new();
        for index in 0..threads.max(1) {
            let ring = IoUring::new(ring_entries)?;
            // SAFETY: eventfd returns a new descriptor or -1.
            let raw = unsafe { libc::eventfd(0, libc::EFD_CLOEXEC) };
            if raw < 0 {
                return Err(io::Error::last_os_error());
            }
            // SAFETY: `raw` is a fresh descriptor nobody else owns.
            let doorbell = unsafe { OwnedFd::from_raw_fd(raw) };
            let thread_doorbell = doorbell.try_clone()?;
            // The channel holds at most `depth` more requests than the ring: back-pressure
            // reaches callers as an awaiting `send`, never as unbounded memory.
            let (tx, rx) = mpsc::channel(depth);
            std::thread::Builder::new()
                .name(format!("iopath-uring-{index}"))
                .spawn(move || ring_main(ring, rx, thread_doorbell, depth))?;
            rings.push(Arc::new(Ring {
                tx: Some(tx),
                doorbell,
            }));
        }
        Ok(UringEngine {
            rings,
            next_ring: AtomicUsize::new(0),
            read_pool: read_pool(),
        })
    }

    /// Queues `op` on the next ring and resolves with its completion.
    fn submit(&self, op: Op) -> EngineFuture<Completion> {
        let index = self.next_ring.fetch_add(1, Ordering::Relaxed) % self.rings.len();
        let ring = Arc::clone(&self.rings[index]);
        Box::pin(async move {
            let (reply, completion) = oneshot::channel();
            let Some(tx) = ring.tx.as_ref() else {
                return Err(ring_stopped());
            };
            tx.send(Request { op, reply })
                .await
                .map_err(|_| ring_stopped())?;
            ring.ring_doorbell()?;
            completion.await.map_err(|_| ring_stopped())?
        })
    }
}

/// The caller's side of one ring thread.
#[derive(Debug)]
struct Ring {
    /// Requests to the thread; `None` only while dropping.
    tx: Option<mpsc::Sender<Request>>,
    /// The eventfd the thread keeps a read armed on.
    doorbell: OwnedFd,
}

impl Ring {
    /// Wakes the ring thread.
    fn ring_doorbell(&self) -> io::Result<()> {
        let one = 1u64.to_ne_bytes();
        // SAFETY: writes 8 bytes from a live buffer to a descriptor we own.
        let rc = unsafe { libc::write(self.doorbell.as_raw_fd(), one.as_ptr().cast(), one.len()) };
        if rc == 8 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }
}

impl Drop for Ring {
    fn drop(&mut self) {
        // Shutdown: close the channel first, then ring, so the thread wakes, sees the channel
        // closed, finishes what is in flight and exits.
        drop(self.tx.take());
        if let Err(error) = self.ring_doorbell() {
            tracing::warn!(%error, "could not wake io_uring thread for shutdown");
        }
    }
}

fn ring_stopped() -> io::Error {
    io::Error::other("io_uring thread has stopped")
}

/// One request on its way to or through a ring.
struct Request {
    op: Op,
    reply: oneshot::Sender<io::Result<Completion>>,
}

/// What the ring should do; holds the file and buffers alive until the kernel is done.
enum Op {
    Write {
        file: Arc<EngineFile>,
        offset: u64,
        buf: WriteBuf,
        direct: bool,
        done: usize,
    },
    Read {
        file: Arc<EngineFile>,
        offset: u64,
        buf: ReadBuf,
        direct: bool,
        filled: usize,
    },
    Fsync {
        file: Arc<EngineFile>,
        kind: SyncKind,
    },
    Allocate {
        file: Arc<EngineFile>,
        offset: u64,
        length: u64,
    },
}

/// Destination of a read: aligned for O_DIRECT, plain otherwise.
enum ReadBuf {
    Aligned(PooledBuf),
    Plain(Vec<u8>),
}

impl ReadBuf {
    fn len(&self) -> usize {
        match self {
            ReadBuf::Aligned(buf) => buf.len(),
            ReadBuf::Plain(buf) => buf.len(),
        }
    }

    fn as_mut_ptr(&mut self) -> *mut u8 {
        match self {
            ReadBuf::Aligned(buf) => buf.as_mut_ptr(),
            ReadBuf::Plain(buf) => buf.as_mut_ptr(),
        }
    }

    fn into_bytes(self, filled: usize) -> Bytes {
        match self {
            ReadBuf::Aligned(mut buf) => {
                buf.truncate(filled);
                buf.into_bytes()
            }
            ReadBuf::Plain(mut buf) => {
                buf.truncate(filled);
                Bytes::from(buf)
            }
        }
    }
}

/// What a finished request hands back.
enum Completion {
    Written(WriteDone),
    Read(Bytes),
    Done,
}

fn direct_or_buffered(file: &EngineFile, direct: bool) -> RawFd {
    match (direct, file.direct_file()) {
        (true, Some(direct_file)) => direct_file.as_raw_fd(),
        _ => file.buffered_fd(),
    }
}

impl Op {
    /// The submission entry for the op's next (or only) step.
    fn entry(&mut self, user_data: u64) -> io_uring::squeue::Entry {
        let entry = match self {
            Op::Write {
                file,
                offset,
                buf,
                direct,
                done,
            } => {
                let rest = &buf.as_slice()[*done..];
                let fd = types::Fd(direct_or_buffered(file, *direct));
                // Lengths fit: `check_transfer` capped them at 1 GiB.
                opcode::Write::new(fd, rest.as_ptr(), rest.len() as u32)
                    .offset(*offset + *done as u64)
                    .build()
            }
            Op::Read {
                file,
                offset,
                buf,
                direct,
                filled,
            } => {
                let fd = types::Fd(direct_or_buffered(file, *direct));
                let rest = buf.len() - *filled;
                // SAFETY: `filled <= len`, so the pointer stays inside the buffer.
                let ptr = unsafe { buf.as_mut_ptr().add(*filled) };
                opcode::Read::new(fd, ptr, rest as u32)
                    .offset(*offset + *filled as u64)
                    .build()
            }
            Op::Fsync { file, kind } => {
                let flags = match kind {
                    SyncKind::Data => types::FsyncFlags::DATASYNC,
                    SyncKind::All => types::FsyncFlags::empty(),
                };
                opcode::Fsync::new(types::Fd(file.buffered_fd()))
                    .flags(flags)
                    .build()
            }
            Op::Allocate {
                file,
                offset,
                length,
            } => opcode::Fallocate::new(types::Fd(file.buffered_fd()), *length)
                .offset(*offset)
                .build(),
        };
        entry.user_data(user_data)
    }

    /// Applies a completion result: `Ok(Some)` when finished, `Ok(None)` when another step must
    /// be submitted (short transfer), `Err` on failure.
    fn advance(&mut self, result: i32) -> io::Result<Option<()>> {
        if result < 0 {
            return Err(io::Error::from_raw_os_error(-result));
        }
        let count = result as usize;
        match self {
            Op::Write {
                offset,
                buf,
                direct,
                done,
                ..
            } => {
                if count == 0 {
                    return Err(io::Error::new(
                        io::ErrorKind::WriteZero,
                        "write made no progress",
                    ));
                }
                *done += count;
                let rest = buf.as_slice().len() - *done;
                if rest == 0 {
                    return Ok(Some(()));
                }
                // A short O_DIRECT write can leave an unaligned remainder: finish it buffered,
                // and stop calling the write direct.
                if *direct && !is_direct_aligned(*offset + *done as u64, rest, 0) {
                    *direct = false;
                }
                Ok(None)
            }
            Op::Read {
                buf,
                direct,
                filled,
                ..
            } => {
                *filled += count;
                // A short read of a regular file means end of file; a direct read cannot go on
                // from an unaligned position anyway.
                let finished = count == 0 || *filled == buf.len() || *direct;
                Ok(finished.then_some(()))
            }
            Op::Fsync { .. } | Op::Allocate { .. } => Ok(Some(())),
        }
    }

    fn into_completion(self) -> Completion {
        match self {
            Op::Write { direct, .. } => Completion::Written(WriteDone { direct }),
            Op::Read { buf, filled, .. } => Completion::Read(buf.into_bytes(filled)),
            Op::Fsync { .. } | Op::Allocate { .. } => Completion::Done,
        }
    }
}

/// The body of a ring thread. Runs until every caller handle is gone and nothing is in flight.
fn ring_main(mut ring: IoUring, mut rx: mpsc::Receiver<Request>, doorbell: OwnedFd, depth: usize) {
    // In-flight requests by slot; `user_data` is the slot index.
    let mut slots: Vec<Option<Request>> = (0..depth).map(|_| None).collect();
    let mut free: Vec<usize> = (0..depth).rev().collect();
    let mut bell_buf: Box<[u8; 8]> = Box::new([0; 8]);
    let mut bell_armed = false;
    let mut closing = false;
    let mut completions: Vec<(u64, i32)> = Vec::with_capacity(depth + 1);

    loop {
        // Keep a read armed on the doorbell so that a new request wakes us.
        if !bell_armed && !closing {
            let entry =
                opcode::Read::new(types::Fd(doorbell.as_raw_fd()), bell_buf.as_mut_ptr(), 8)
                    .build()
                    .user_data(DOORBELL_TOKEN);
            // SAFETY: `bell_buf` lives until the read completes (we only exit with it disarmed).
            if unsafe { ring.submission().push(&entry) }.is_err() {
                tracing::error!("io_uring submission queue full arming the doorbell");
            } else {
                bell_armed = true;
            }
        }
        // Admit queued requests while there is a free slot.
        while !closing && !free.is_empty() {
            match rx.try_recv() {
                Ok(mut request) => {
                    let Some(slot) = free.pop() else { break };
                    let entry = request.op.entry(slot as u64);
                    slots[slot] = Some(request);
                    // SAFETY: the op's buffers and file live in `slots[slot]` until completion.
                    if unsafe { ring.submission().push(&entry) }.is_err() {
                        finish(
                            &mut slots,
                            &mut free,
                            slot,
                            Err(io::Error::other("submission queue full")),
                        );
                    }
                }
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => closing = true,
            }
        }
        let in_flight = depth - free.len();
        if closing && in_flight == 0 && !bell_armed {
            return;
        }
        // Submit everything queued and sleep until at least one completion.
        match ring.submit_and_wait(1) {
            Ok(_) => {}
            Err(error) if error.raw_os_error() == Some(libc::EINTR) => continue,
            Err(error) if error.raw_os_error() == Some(libc::EBUSY) => {} // reap, then retry
            Err(error) => {
                tracing::error!(%error, "io_uring_enter failed; failing in-flight requests");
                for slot in 0..depth {
                    if slots[slot].is_some() {
                        finish(
                            &mut slots,
                            &mut free,
                            slot,
                            Err(io::Error::other(error.to_string())),
                        );
                    }
                }
                // A doorbell read may still be armed: leak its 8 bytes rather than free them
                // under the kernel.
                std::mem::forget(bell_buf);
                return;
            }
        }
        completions.clear();
        completions.extend(ring.completion().map(|cqe| (cqe.user_data(), cqe.result())));
        for &(token, result) in &completions {
            if token == DOORBELL_TOKEN {
                bell_armed = false;
                if rx.is_closed() {
                    closing = true;
                }
                continue;
            }
            let slot = token as usize;
            let Some(request) = slots.get_mut(slot).and_then(Option::as_mut) else {
                tracing::error!(slot, "completion for an empty io_uring slot");
                continue;
            };
            match request.op.advance(result) {
                Ok(Some(())) => finish(&mut slots, &mut free, slot, Ok(())),
                Ok(None) => {
                    let entry = request.op.entry(token);
                    // SAFETY: as above; the request stays in its slot.
                    if unsafe { ring.submission().push(&entry) }.is_err() {
                        finish(
                            &mut slots,
                            &mut free,
                            slot,
                            Err(io::Error::other("submission queue full")),
                        );
                    }
                }
                Err(error) => finish(&mut slots, &mut free, slot, Err(error)),
            }
        }
    }
}

/// Answers the request in `slot` and frees the slot.
fn finish(
    slots: &mut [Option<Request>],
    free: &mut Vec<usize>,
    slot: usize,
    outcome: io::Result<()>,
) {
    if let Some(request) = slots[slot].take() {
        let reply = outcome.map(|()| request.op.into_completion());
        // The caller may have given up waiting; the I/O is done either way.
        let _ = request.reply.send(reply);
        free.push(slot);
    }
}

fn unexpected() -> io::Error {
    io::Error::other("io_uring completion of the wrong kind")
}

impl DiskEngine for UringEngine {
    fn name(&self) -> String {
        "io_uring".to_string()
    }

    fn write_at(
        &self,
        file: &Arc<EngineFile>,
        offset: u64,
        data: Bytes,
    ) -> EngineFuture<WriteDone> {
        if let Err(error) = check_transfer(data.len()) {
            return Box::pin(async move { Err(error) });
        }
        if data.is_empty() {
            return Box::pin(async { Ok(WriteDone { direct: false }) });
        }
        let (buf, direct) = plan_write(file, offset, data);
        let pending = self.submit(Op::Write {
            file: Arc::clone(file),
            offset,
            buf,
            direct,
            done: 0,
        });
        Box::pin(async move {
            match pending.await? {
                Completion::Written(done) => Ok(done),
                _ => Err(unexpected()),
            }
        })
    }

    fn read_at(&self, file: &Arc<EngineFile>, offset: u64, length: usize) -> EngineFuture<Bytes> {
        if let Err(error) = check_transfer(length) {
            return Box::pin(async move { Err(error) });
        }
        if length == 0 {
            return Box::pin(async { Ok(Bytes::new()) });
        }
        let direct = plan_read_direct(file, offset, length);
        let buf = if direct {
            // Not cleared: the read overwrites it, and only the bytes read are handed on.
            ReadBuf::Aligned(self.read_pool.take(length))
        } else {
            ReadBuf::Plain(vec![0; length])
        };
        let pending = self.submit(Op::Read {
            file: Arc::clone(file),
            offset,
            buf,
            direct,
            filled: 0,
        });
        Box::pin(async move {
            match pending.await? {
                Completion::Read(bytes) => Ok(bytes),
                _ => Err(unexpected()),
            }
        })
    }

    fn fsync(&self, file: &Arc<EngineFile>, kind: SyncKind) -> EngineFuture<()> {
        let pending = self.submit(Op::Fsync {
            file: Arc::clone(file),
            kind,
        });
        Box::pin(async move { pending.await.map(|_| ()) })
    }

    fn truncate(&self, file: &Arc<EngineFile>, size_bytes: u64) -> EngineFuture<()> {
        // IORING_OP_FTRUNCATE needs Linux 6.9; a truncate is a rare metadata call, so it runs on
        // a blocking thread instead.
        let file = Arc::clone(file);
        Box::pin(async move {
            tokio::task::spawn_blocking(move || file.buffered_file().set_len(size_bytes))
                .await
                .map_err(io::Error::other)?
        })
    }

    fn allocate(&self, file: &Arc<EngineFile>, offset: u64, length: u64) -> EngineFuture<()> {
        let pending = self.submit(Op::Allocate {
            file: Arc::clone(file),
            offset,
            length,
        });
        Box::pin(async move { pending.await.map(|_| ()) })
    }
}
