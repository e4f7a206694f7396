//! The benchmark's writers: `threads` tasks, each writing its share of the requests in order,
//! one at a time (obdfilter-survey's threads each keep one request in flight).

use super::config::JournalBenchConfig;
use crate::error::{Result, StorageError};
use serde::{Deserialize, Serialize};
use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;
use tokio::task::JoinSet;
use tokio::time::Instant;

/// How often the progress callback is called while a phase runs.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// A progress report while a phase runs.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchProgress {
    /// The configuration being measured.
    pub phase: String,
    /// Which repetition (1-based).
    pub run: u32,
    /// Bytes acknowledged so far in this phase.
    pub bytes_done: u64,
    /// Bytes the phase writes.
    pub bytes_total: u64,
    /// Seconds since the phase started.
    pub elapsed_s: f64,
}

impl BenchProgress {
    /// A one-line rendering: `OST, internal journal, sync commits (run 1): 512/1024 MiB, 311.2 MiB/s`.
    pub fn line(&self) -> String {
        let mib_s = if self.elapsed_s > 0.0 {
            (self.bytes_done >> 20) as f64 / self.elapsed_s
        } else {
            0.0
        };
        format!(
            "{} (run {}): {}/{} MiB, {:.1} MiB/s",
            self.phase,
            self.run,
            self.bytes_done >> 20,
            self.bytes_total >> 20,
            mib_s
        )
    }
}

/// The requests of writer `thread`: a contiguous slice of all requests in object-major order,
/// as `(object index, offset)`.
pub(crate) fn thread_requests(
    config: &JournalBenchConfig,
    thread: usize,
) -> impl Iterator<Item = (usize, u64)> + use<> {
    let per_object = config.requests_per_object();
    let total = per_object * config.objects as u64;
    let threads = config.threads as u64;
    let start = total * thread as u64 / threads;
    let end = total * (thread as u64 + 1) / threads;
    let request_size = config.request_size_bytes as u64;
    (start..end).map(move |i| ((i / per_object) as usize, (i % per_object) * request_size))
}

/// Runs the writers: `write(object index, offset)` for every request, `threads` at a time,
/// calling `progress` every half second. Returns when every request is acknowledged.
pub(crate) async fn drive<W, F>(
    config: &JournalBenchConfig,
    phase: &str,
    run: u32,
    progress: &(dyn Fn(&BenchProgress) + Send + Sync),
    write: W,
) -> Result<()>
where
    W: Fn(usize, u64) -> F + Send + Sync + 'static,
    F: Future<Output = Result<()>> + Send + 'static,
{
    let write = Arc::new(write);
    let done = Arc::new(AtomicU64::new(0));
    let request_size = config.request_size_bytes as u64;
    let mut writers = JoinSet::new();
    for thread in 0..config.threads {
        let write = Arc::clone(&write);
        let done = Arc::clone(&done);
        let requests: Vec<(usize, u64)> = thread_requests(config, thread).collect();
        writers.spawn(async move {
            for (object, offset) in requests {
                write(object, offset).await?;
                done.fetch_add(request_size, Ordering::Relaxed);
            }
            Ok::<(), StorageError>(())
        });
    }
    let started = Instant::now();
    let report = |started: Instant| BenchProgress {
        phase: phase.to_string(),
        run,
        bytes_done: done.load(Ordering::Relaxed),
        bytes_total: config.total_bytes(),
        elapsed_s: started.elapsed().as_secs_f64(),
    };
    let mut ticker = tokio::time::interval(PROGRESS_INTERVAL);
    ticker.tick().await;
    // Bounded: ends when the last writer is joined; a failed writer ends it early (dropping
    // the JoinSet aborts the others).
    loop {
        tokio::select! {
            joined = writers.join_next() => match joined {
                None => break,
                Some(Ok(Ok(()))) => {}
                Some(Ok(Err(error))) => return Err(error),
                Some(Err(join_error)) => {
                    return Err(StorageError::io("run benchmark writer", phase, std::io::Error::other(join_error)));
                }
            },
            _ = ticker.tick() => progress(&report(started)),
        }
    }
    progress(&report(started));
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_is_written_once_in_object_order_per_thread() {
        for (threads, objects) in [(1, 1), (4, 4), (3, 2), (5, 7), (8, 1)] {
            let mut config = JournalBenchConfig::new("/tmp");
            config.threads = threads;
            config.objects = objects;
            config.request_size_bytes = 4096;
            config.bytes_per_object = 4096 * 10;
            let mut all: Vec<(usize, u64)> = (0..threads)
                .flat_map(|t| thread_requests(&config, t))
                .collect();
            assert_eq!(
                all.len() as u64,
                config.requests_per_object() * objects as u64
            );
            all.sort();
            all.dedup();
            assert_eq!(
                all.len() as u64,
                config.requests_per_object() * objects as u64,
                "no duplicates"
            );
            assert!(
                all.iter()
                    .all(|&(o, off)| o < objects && off < config.bytes_per_object)
            );
        }
    }
}
