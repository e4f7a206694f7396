//! Writers with one request in flight each, as obdfilter-survey's threads and fio's jobs
//! (`iodepth=1`) keep: how a run's requests are split over them ([`Requests`]), the loop that
//! drives them (`drive`), and the progress they report ([`BenchProgress`]).

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::BenchError;

/// How often the progress callback is called while a phase runs.
const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// A run's requests and its writers: `files` files of `requests_per_file` requests of
/// `request_bytes` each, taken in file-major order and split into `writers` contiguous
/// shares, one per writer. With as many writers as files, writer `w` writes file `w` from its
/// start to its end, as an IOR task or a fio job does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Requests {
    /// Files written.
    pub files: usize,
    /// Writers, one request in flight each.
    pub writers: usize,
    /// Bytes per request.
    pub request_bytes: u64,
    /// Requests per file.
    pub requests_per_file: u64,
}

impl Requests {
    /// Every request of the run.
    pub fn count(&self) -> u64 {
        self.requests_per_file * self.files as u64
    }

    /// Bytes the whole run writes.
    pub fn total_bytes(&self) -> u64 {
        self.count() * self.request_bytes
    }

    /// The requests of `writer`, in order, as `(file index, offset)`: a contiguous slice of
    /// all requests in file-major order.
    pub fn of_writer(&self, writer: usize) -> impl Iterator<Item = (usize, u64)> + use<> {
        let per_file = self.requests_per_file;
        let total = self.count();
        let writers = self.writers.max(1) as u64;
        let start = total * writer as u64 / writers;
        let end = total * (writer as u64 + 1) / writers;
        let request_bytes = self.request_bytes;
        (start..end).map(move |i| ((i / per_file) as usize, (i % per_file) * request_bytes))
    }
}

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

/// Which phase a run of the writers is, for its progress reports.
#[derive(Debug, Clone, Copy)]
pub struct Phase<'a> {
    /// The configuration being measured.
    pub name: &'a str,
    /// Which repetition (1-based).
    pub run: u32,
}

/// Runs the writers: each calls `write(writer, file, offset)` for every request of its share,
/// one at a time, then `finish(writer, files)` with the files it wrote, in order; `progress`
/// is called every half second and once at the end. A writer that reaches `deadline` stops
/// taking requests and finishes. Returns the bytes written once every writer has finished.
pub(crate) async fn drive<W, WF, E, EF>(
    requests: Requests,
    phase: Phase<'_>,
    deadline: Option<Instant>,
    progress: &(dyn Fn(&BenchProgress) + Send + Sync),
    write: W,
    finish: E,
) -> Result<u64, BenchError>
where
    W: Fn(usize, usize, u64) -> WF + Send + Sync + 'static,
    WF: Future<Output = Result<(), BenchError>> + Send + 'static,
    E: Fn(usize, Vec<usize>) -> EF + Send + Sync + 'static,
    EF: Future<Output = Result<(), BenchError>> + Send + 'static,
{
    let (write, finish) = (Arc::new(write), Arc::new(finish));
    let done = Arc::new(AtomicU64::new(0));
    let mut writers = JoinSet::new();
    for writer in 0..requests.writers {
        let (write, finish, done) = (Arc::clone(&write), Arc::clone(&finish), Arc::clone(&done));
        let share = requests.of_writer(writer);
        writers.spawn(async move {
            let mut files: Vec<usize> = Vec::new();
            for (file, offset) in share {
                if deadline.is_some_and(|d| Instant::now() >= d) {
                    break;
                }
                write(writer, file, offset).await?;
                done.fetch_add(requests.request_bytes, Ordering::Relaxed);
                if files.last() != Some(&file) {
                    files.push(file);
                }
            }
            finish(writer, files).await
        });
    }
    let started = Instant::now();
    let report = |started: Instant| BenchProgress {
        phase: phase.name.to_owned(),
        run: phase.run,
        bytes_done: done.load(Ordering::Relaxed),
        bytes_total: requests.total_bytes(),
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
                    return Err(BenchError::tool(format!(
                        "run benchmark writer {}: {join_error}",
                        phase.name
                    )));
                }
            },
            _ = ticker.tick() => progress(&report(started)),
        }
    }
    progress(&report(started));
    Ok(done.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_request_is_written_once_in_object_order_per_thread() {
        for (writers, files) in [(1, 1), (4, 4), (3, 2), (5, 7), (8, 1)] {
            let requests = Requests {
                files,
                writers,
                request_bytes: 4096,
                requests_per_file: 10,
            };
            let mut all: Vec<(usize, u64)> =
                (0..writers).flat_map(|w| requests.of_writer(w)).collect();
            assert_eq!(all.len() as u64, requests.count());
            all.sort();
            all.dedup();
            assert_eq!(all.len() as u64, requests.count(), "no duplicates");
            assert!(
                all.iter()
                    .all(|&(f, off)| f < files && off < 4096 * requests.requests_per_file)
            );
        }
    }

    #[test]
    fn as_many_writers_as_files_give_each_writer_its_own_file_in_order() {
        let requests = Requests {
            files: 3,
            writers: 3,
            request_bytes: 8,
            requests_per_file: 4,
        };
        for w in 0..3 {
            let share: Vec<(usize, u64)> = requests.of_writer(w).collect();
            assert_eq!(share, vec![(w, 0), (w, 8), (w, 16), (w, 24)]);
        }
    }
}
