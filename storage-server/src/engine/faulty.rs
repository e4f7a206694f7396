//! `FaultyEngine`: a real engine that fails on command, for fault tests.
//!
//! The interesting failure is fsync: after a failed fsync Linux may already have dropped the
//! dirty pages, so a retry can "succeed" without the data ever reaching the disk. A target must
//! stop instead. This engine lets tests make that happen at a chosen point.

use super::{DiskEngine, EngineFile, EngineFuture, SyncKind, WriteDone};
use bytes::Bytes;
use std::io;
use std::sync::{Arc, Mutex, PoisonError};

/// Fault plan and counters.
#[derive(Debug, Default)]
struct Faults {
    /// Fsyncs still allowed to succeed; `None` = never fail.
    fsyncs_left: Option<u64>,
    /// Fsyncs seen.
    fsyncs: u64,
}

/// An engine that injects EIO into fsyncs.
#[derive(Debug)]
pub struct FaultyEngine {
    inner: Arc<dyn DiskEngine>,
    faults: Mutex<Faults>,
}

impl FaultyEngine {
    /// Wraps `inner`; no faults until asked.
    pub fn new(inner: Arc<dyn DiskEngine>) -> FaultyEngine {
        FaultyEngine {
            inner,
            faults: Mutex::new(Faults::default()),
        }
    }

    /// Lets `successes` more fsyncs through, then fails every later one with EIO.
    pub fn fail_fsyncs_after(&self, successes: u64) {
        self.lock().fsyncs_left = Some(successes);
    }

    /// Fsyncs seen so far (failed or not).
    pub fn fsyncs(&self) -> u64 {
        self.lock().fsyncs
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Faults> {
        self.faults.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Counts one call against a budget; true when it must fail.
fn spend(budget: &mut Option<u64>) -> bool {
    match budget {
        None => false,
        Some(0) => true,
        Some(left) => {
            *left -= 1;
            false
        }
    }
}

fn injected() -> io::Error {
    io::Error::from_raw_os_error(libc::EIO)
}

impl DiskEngine for FaultyEngine {
    fn name(&self) -> String {
        format!("faulty({})", self.inner.name())
    }

    fn write_at(
        &self,
        file: &Arc<EngineFile>,
        offset: u64,
        data: Bytes,
    ) -> EngineFuture<WriteDone> {
        self.inner.write_at(file, offset, data)
    }

    fn read_at(&self, file: &Arc<EngineFile>, offset: u64, length: usize) -> EngineFuture<Bytes> {
        self.inner.read_at(file, offset, length)
    }

    fn fsync(&self, file: &Arc<EngineFile>, kind: SyncKind) -> EngineFuture<()> {
        let fail = {
            let mut faults = self.lock();
            faults.fsyncs += 1;
            spend(&mut faults.fsyncs_left)
        };
        if fail {
            return Box::pin(async { Err(injected()) });
        }
        self.inner.fsync(file, kind)
    }

    fn truncate(&self, file: &Arc<EngineFile>, size_bytes: u64) -> EngineFuture<()> {
        self.inner.truncate(file, size_bytes)
    }

    fn allocate(&self, file: &Arc<EngineFile>, offset: u64, length: u64) -> EngineFuture<()> {
        self.inner.allocate(file, offset, length)
    }

    fn runs_inline(&self) -> bool {
        self.inner.runs_inline()
    }
}
