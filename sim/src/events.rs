//! What happened in a simulated run, in order, at its simulated time: the record two runs of
//! one seed are compared by ([`EventLog::digest`]), and the counts the summary prints.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use tokio::time::Instant;

/// The run's events and their counts by kind.
#[derive(Debug)]
pub struct EventLog {
    start: Instant,
    inner: Mutex<Recorded>,
}

#[derive(Debug, Default)]
struct Recorded {
    lines: Vec<String>,
    counts: BTreeMap<&'static str, u64>,
}

impl EventLog {
    /// A log whose time zero is now (the simulated clock's now).
    pub fn new() -> EventLog {
        EventLog {
            start: Instant::now(),
            inner: Mutex::default(),
        }
    }

    /// Records an event of `kind` (a short fixed name, counted) with `detail`.
    pub fn record(&self, kind: &'static str, detail: impl std::fmt::Display) {
        let at = self.start.elapsed();
        let line = format!("{:>10.6} {kind} {detail}", at.as_secs_f64());
        let mut inner = self.lock();
        inner.lines.push(line);
        *inner.counts.entry(kind).or_default() += 1;
    }

    /// Events by kind.
    pub fn counts(&self) -> BTreeMap<&'static str, u64> {
        self.lock().counts.clone()
    }

    /// Every event line, in order.
    pub fn lines(&self) -> Vec<String> {
        self.lock().lines.clone()
    }

    /// A 64-bit FNV-1a hash of every event line in order: equal for two runs exactly when
    /// they did the same things at the same simulated times (up to a hash collision).
    pub fn digest(&self) -> u64 {
        let inner = self.lock();
        let mut hash = 0xcbf2_9ce4_8422_2325u64;
        for line in &inner.lines {
            for byte in line.bytes().chain([b'\n']) {
                hash ^= u64::from(byte);
                hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
            }
        }
        hash
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Recorded> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl Default for EventLog {
    fn default() -> Self {
        EventLog::new()
    }
}
