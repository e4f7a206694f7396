//! ASCI Red's asynchronous calls: `iwrite`/`iread` return an [`IoHandle`] at once, `iodone`
//! polls it, `iowait` collects its [`IoResult`]; `cwrite`/`cread` are the same calls at the
//! file pointer, waited for ("write() ... is equivalent to the sequence iwrite(); iowait()").
//!
//! As on the TFLOPS system, which spawned one thread per file an fyod did asynchronous I/O
//! to, each open file gets one **worker** task the first time it is used asynchronously. The
//! worker takes its file's calls from a bounded queue and runs them one after another, so a
//! file sees its calls in the order they were issued (a later `iwrite` to the same bytes
//! wins); calls on different files run on different workers, concurrently. Within one call
//! the packets still go to every object in parallel.
//!
//! ```text
//! iwrite(f1) ─┐                      ┌─ worker f1: call, call, ...   (in order)
//! iwrite(f2) ─┼─ queue per file ─────┼─ worker f2: call, ...         (concurrent with f1)
//! iread(f1)  ─┘  (≤ 64 outstanding)  └─ ...
//! ```
//!
//! Through a fyod every call here is an asynchronous call there too (`CallKind::Async`): the
//! fyod runs it on its own worker for the file, concurrently with other files' calls, where a
//! synchronous `write_at` would wait its turn behind every other synchronous call the fyod
//! serves.
//!
//! A handle's result lives in a slot the worker fills; `iodone` looks at it, `iowait` waits
//! for it. If a worker stops without answering (a panic, a runtime shutting down), the slot
//! is filled with [`ClientError::WorkerStopped`] rather than left empty forever.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use iopath_fabric::Checksummed;
use iopath_forwarder::CallKind;
use tokio::sync::{Notify, mpsc};

use crate::error::ClientError;

/// What a worker runs a file's calls against — the file's core, in [`crate::file`]: its calls,
/// its file pointer, and the counters to count them in. A trait, so that this module needs
/// nothing of the module that hands it work.
pub(crate) trait Calls: Send + Sync + 'static {
    /// Writes `data` at `offset_bytes` as a `kind` call.
    fn write_at(
        &self,
        offset_bytes: u64,
        data: Checksummed,
        kind: CallKind,
    ) -> impl Future<Output = Result<u64, ClientError>> + Send;
    /// Reads up to `length_bytes` at `offset_bytes` as a `kind` call.
    fn read_at(
        &self,
        offset_bytes: u64,
        length_bytes: u64,
        kind: CallKind,
    ) -> impl Future<Output = Result<Bytes, ClientError>> + Send;
    /// The file pointer.
    fn position(&self) -> u64;
    /// Moves the file pointer.
    fn seek(&self, position: u64);
    /// The file's counters and its client's.
    fn counters(&self) -> [&AsyncCounters; 2];
}

/// The handle of one asynchronous call: pass it to [`crate::File::iodone`] and
/// [`crate::File::iowait`] of the file that issued it.
#[derive(Debug)]
pub struct IoHandle {
    pub(crate) file: u64,
    pub(crate) seq: u64,
    pub(crate) slot: Arc<Slot>,
}

impl IoHandle {
    /// Its sequence number within its file (calls are numbered from 0 as issued).
    pub fn seq(&self) -> u64 {
        self.seq
    }

    /// The number of the file that issued it.
    pub fn file(&self) -> u64 {
        self.file
    }
}

/// What a finished asynchronous call did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum IoResult {
    /// A write: how many bytes.
    Written(u64),
    /// A read: the bytes (fewer than asked at the end of the file).
    Read(Bytes),
}

impl IoResult {
    /// Bytes moved.
    pub fn bytes(&self) -> u64 {
        match self {
            IoResult::Written(n) => *n,
            IoResult::Read(data) => data.len() as u64,
        }
    }

    /// A read's bytes (`None` for a write).
    pub fn into_data(self) -> Option<Bytes> {
        match self {
            IoResult::Read(data) => Some(data),
            IoResult::Written(_) => None,
        }
    }
}

/// Where a call's result waits for `iowait`.
#[derive(Debug, Default)]
pub(crate) struct Slot {
    result: Mutex<Option<Result<IoResult, ClientError>>>,
    done: std::sync::atomic::AtomicBool,
    ready: Notify,
}

impl Slot {
    pub(crate) fn is_done(&self) -> bool {
        self.done.load(Ordering::Acquire)
    }

    fn fill(&self, result: Result<IoResult, ClientError>) {
        *self.result.lock().unwrap_or_else(PoisonError::into_inner) = Some(result);
        self.done.store(true, Ordering::Release);
        // `notify_one` keeps a permit if nobody waits yet: the waiter cannot miss it.
        self.ready.notify_one();
    }

    /// Waits for the result and takes it.
    pub(crate) async fn take(&self) -> Result<IoResult, ClientError> {
        // Bounded: each pass either returns or waits for the one `fill`, whose permit makes
        // the next pass find the result.
        loop {
            if let Some(result) = self
                .result
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .take()
            {
                return result;
            }
            self.ready.notified().await;
        }
    }
}

/// An operation a file's worker runs.
#[derive(Debug)]
pub(crate) enum AsyncOp {
    /// `iwrite`.
    Write {
        /// File offset.
        offset_bytes: u64,
        /// The bytes.
        data: Checksummed,
    },
    /// `iread`.
    Read {
        /// File offset.
        offset_bytes: u64,
        /// How many bytes.
        length_bytes: u64,
    },
    /// `cwrite`: at the file pointer, which then moves past what was written.
    WriteAtPointer {
        /// The bytes.
        data: Checksummed,
    },
    /// `cread`: at the file pointer, which then moves past what was read.
    ReadAtPointer {
        /// How many bytes.
        length_bytes: u64,
    },
    /// Nothing: done when everything queued before it is (what `close` waits for).
    Barrier,
}

/// A queued call and the promise to answer it.
#[derive(Debug)]
pub(crate) struct Job {
    pub(crate) op: AsyncOp,
    pub(crate) completion: Completion,
}

/// Answers one call exactly once: with its result, or, if dropped unanswered, with
/// [`ClientError::WorkerStopped`]. Releases the call's place among the file's outstanding
/// calls when it answers.
#[derive(Debug)]
pub(crate) struct Completion {
    slot: Option<Arc<Slot>>,
    file: u64,
    /// The file's outstanding-call count, if this call holds a place in it.
    pending: Option<Arc<AtomicUsize>>,
}

impl Completion {
    pub(crate) fn new(slot: Arc<Slot>, file: u64, pending: Option<Arc<AtomicUsize>>) -> Self {
        Completion {
            slot: Some(slot),
            file,
            pending,
        }
    }

    pub(crate) fn finish(mut self, result: Result<IoResult, ClientError>) {
        self.answer(result);
    }

    fn answer(&mut self, result: Result<IoResult, ClientError>) {
        if let Some(slot) = self.slot.take() {
            if let Some(pending) = self.pending.take() {
                let before = pending.fetch_sub(1, Ordering::AcqRel);
                assert!(before > 0, "outstanding calls never go below zero");
            }
            slot.fill(result);
        }
    }
}

impl Drop for Completion {
    fn drop(&mut self) {
        let file = self.file;
        self.answer(Err(ClientError::WorkerStopped { file }));
    }
}

/// Counts of asynchronous calls running at once.
#[derive(Debug, Default)]
pub(crate) struct AsyncCounters {
    in_flight: AtomicUsize,
    in_flight_peak: AtomicUsize,
    completed: AtomicUsize,
}

/// A snapshot of a handle's or a client's asynchronous-call counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AsyncStats {
    /// Calls running right now (not counting those queued behind them).
    pub in_flight: usize,
    /// The most that ever ran at once.
    pub in_flight_peak: usize,
    /// Calls finished.
    pub completed: usize,
}

impl AsyncCounters {
    pub(crate) fn snapshot(&self) -> AsyncStats {
        AsyncStats {
            in_flight: self.in_flight.load(Ordering::Acquire),
            in_flight_peak: self.in_flight_peak.load(Ordering::Acquire),
            completed: self.completed.load(Ordering::Acquire),
        }
    }

    fn start(&self) {
        let now = self.in_flight.fetch_add(1, Ordering::AcqRel) + 1;
        self.in_flight_peak.fetch_max(now, Ordering::AcqRel);
    }

    fn end(&self) {
        let before = self.in_flight.fetch_sub(1, Ordering::AcqRel);
        assert!(before > 0, "calls in flight never go below zero");
        self.completed.fetch_add(1, Ordering::AcqRel);
    }
}

/// Counts one call as running on its file and its client while alive.
struct Running<'a> {
    counters: [&'a AsyncCounters; 2],
}

impl<'a> Running<'a> {
    fn start(file: &'a AsyncCounters, client: &'a AsyncCounters) -> Running<'a> {
        file.start();
        client.start();
        Running {
            counters: [file, client],
        }
    }
}

impl Drop for Running<'_> {
    fn drop(&mut self) {
        for counters in self.counters {
            counters.end();
        }
    }
}

/// The worker of one file: runs its calls in the order they were queued until every handle
/// to the file is gone and the queue is drained.
pub(crate) async fn worker<C: Calls>(core: Arc<C>, mut jobs: mpsc::Receiver<Job>) {
    while let Some(job) = jobs.recv().await {
        let result = match job.op {
            AsyncOp::Barrier => Ok(IoResult::Written(0)),
            op => {
                let [file, client] = core.counters();
                let _running = Running::start(file, client);
                run(&*core, op).await
            }
        };
        job.completion.finish(result);
    }
}

async fn run<C: Calls>(core: &C, op: AsyncOp) -> Result<IoResult, ClientError> {
    match op {
        AsyncOp::Write { offset_bytes, data } => core
            .write_at(offset_bytes, data, CallKind::Async)
            .await
            .map(IoResult::Written),
        AsyncOp::Read {
            offset_bytes,
            length_bytes,
        } => core
            .read_at(offset_bytes, length_bytes, CallKind::Async)
            .await
            .map(IoResult::Read),
        // The worker is the only one moving the pointer while calls run, and it runs one call
        // at a time: reading it here and moving it after is race-free for this file.
        AsyncOp::WriteAtPointer { data } => {
            let at = core.position();
            let written = core.write_at(at, data, CallKind::Async).await?;
            core.seek(at + written);
            Ok(IoResult::Written(written))
        }
        AsyncOp::ReadAtPointer { length_bytes } => {
            let at = core.position();
            let data = core.read_at(at, length_bytes, CallKind::Async).await?;
            core.seek(at + data.len() as u64);
            Ok(IoResult::Read(data))
        }
        AsyncOp::Barrier => Ok(IoResult::Written(0)),
    }
}
