//! The load a trace runs beside (`iopath trace --load WRITERS --nth N`): writers spread over
//! the client nodes, each streaming writes of the trace's size to a file of its own, one
//! request in flight each, as IOR's tasks do; and the request traced, the Nth the traced
//! client node issues, chosen where the writers issue their requests ([`NthRequest`]).
//!
//! The load stops by itself: once the traced write has returned, at each writer's share of
//! requests (`2 × N`), or at [`LOAD_TIME_MAX`], whichever comes first. Its files are removed
//! once the trace has read the traced write back.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use iopath_client::{Client, File, StripeRequest};
use iopath_fabric::trace::{self, TraceId};
use iopath_stack::describe::describe_size;
use serde::Serialize;
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::BenchError;

/// Most writers a load runs.
pub const LOAD_WRITERS_MAX: usize = 64;
/// The latest request that may be traced (`--nth`).
pub const NTH_MAX: u64 = 1024;
/// Each writer's share of requests, in multiples of `--nth`: the traced node's writers
/// together issue at least `N` requests before their shares run out.
pub const REQUESTS_PER_NTH: u64 = 2;
/// Most bytes of the writers' buffers together (one buffer of the trace's size each).
pub const LOAD_BUFFERS_MAX_BYTES: u64 = 1 << 30;
/// Most bytes the load may write, every writer's share together.
pub const LOAD_BYTES_MAX: u64 = 8 << 30;
/// The load stops here whatever else: a writer takes no request after it.
pub const LOAD_TIME_MAX: Duration = Duration::from_secs(120);

/// The load to trace beside.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoadConfig {
    /// Writers, spread over the client nodes in turn (writer `w` on node `w mod nodes`).
    pub writers: usize,
    /// The request traced: the Nth (from 1) the traced client node issues.
    pub nth: u64,
}

impl LoadConfig {
    /// Requests each writer writes at most.
    pub fn requests_per_writer(&self) -> u64 {
        REQUESTS_PER_NTH * self.nth
    }

    /// Refuses a load outside the bounds, naming the option.
    pub fn check(&self, size: u64) -> Result<(), BenchError> {
        let bad = |option: &str, why: String| {
            Err(BenchError::BadOption {
                option: option.into(),
                why,
            })
        };
        if !(1..=LOAD_WRITERS_MAX).contains(&self.writers) {
            return bad(
                "--load",
                format!(
                    "{} writers is outside 1 to {LOAD_WRITERS_MAX}",
                    self.writers
                ),
            );
        }
        if !(1..=NTH_MAX).contains(&self.nth) {
            return bad("--nth", format!("{} is outside 1 to {NTH_MAX}", self.nth));
        }
        let buffers = self.writers as u64 * size;
        if buffers > LOAD_BUFFERS_MAX_BYTES {
            return bad(
                "--load",
                format!(
                    "{} writers of {} each hold {} of buffers, above {}: fewer writers or a \
                     smaller --size",
                    self.writers,
                    describe_size(size),
                    describe_size(buffers),
                    describe_size(LOAD_BUFFERS_MAX_BYTES)
                ),
            );
        }
        let bytes = buffers * self.requests_per_writer();
        if bytes > LOAD_BYTES_MAX {
            return bad(
                "--load",
                format!(
                    "{} writers of {REQUESTS_PER_NTH} x {} requests of {} may write {}, above \
                     {}: fewer writers, an earlier --nth or a smaller --size",
                    self.writers,
                    self.nth,
                    describe_size(size),
                    describe_size(bytes),
                    describe_size(LOAD_BYTES_MAX)
                ),
            );
        }
        Ok(())
    }
}

/// The choice of the request traced: the Nth the traced node issues, counted where its
/// writers issue them, whichever writer it is.
#[derive(Debug)]
pub struct NthRequest {
    nth: u64,
    issued: AtomicU64,
}

impl NthRequest {
    /// Chooses the `nth` request (from 1).
    pub fn new(nth: u64) -> NthRequest {
        assert!(nth >= 1, "requests are counted from 1");
        NthRequest {
            nth,
            issued: AtomicU64::new(0),
        }
    }

    /// Counts one request about to be issued on the traced node: true for the Nth alone.
    pub fn issue(&self) -> bool {
        self.issued.fetch_add(1, Ordering::Relaxed) + 1 == self.nth
    }

    /// Requests counted so far.
    pub fn issued(&self) -> u64 {
        self.issued.load(Ordering::Relaxed)
    }
}

/// What the load did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LoadSummary {
    /// Its writers.
    pub writers: usize,
    /// The client nodes they ran on, in writer order from the first.
    pub nodes: Vec<String>,
    /// The node the traced write came from.
    pub traced_node: String,
    /// Which of that node's requests was traced (from 1).
    pub nth: u64,
    /// Bytes per request.
    pub request_bytes: u64,
    /// Requests written, the traced one among them.
    pub requests: u64,
    /// Seconds from the first request to the last writer stopping.
    pub seconds: f64,
}

impl LoadSummary {
    /// The load in a sentence.
    pub fn describe(&self) -> String {
        format!(
            "{} writers on {} ({} writes, each writer to a file of its own, one in flight \
             each); the write traced is the {} {} issued; the load wrote {} in {} requests over \
             {:.2} s and stopped",
            self.writers,
            self.nodes.join(", "),
            describe_size(self.request_bytes),
            ordinal(self.nth),
            self.traced_node,
            describe_size(self.requests * self.request_bytes),
            self.requests,
            self.seconds
        )
    }
}

/// `1st`, `2nd`, `3rd`, `4th`, `11th`, `21st`.
pub(super) fn ordinal(n: u64) -> String {
    let suffix = match (n % 10, n % 100) {
        (_, 11..=13) => "th",
        (1, _) => "st",
        (2, _) => "nd",
        (3, _) => "rd",
        _ => "th",
    };
    format!("{n}{suffix}")
}

/// The traced write, as the load issued it.
#[derive(Debug)]
pub(super) struct TracedWrite {
    /// Its trace.
    pub id: TraceId,
    /// The file it wrote, and where.
    pub file: File,
    /// Its offset in the file.
    pub offset: u64,
    /// The bytes it wrote.
    pub data: Bytes,
    /// The client's time for it, call to return.
    pub seconds: f64,
}

/// What [`run`] leaves: the traced write, the summary, every writer's file (to close and
/// remove once the trace has read the traced write back).
pub(super) struct LoadRun {
    pub traced: TracedWrite,
    pub summary: LoadSummary,
    pub files: Vec<File>,
}

/// One writer's data: the same buffer for all its requests, a pattern of its own.
fn writer_data(writer: usize, size: u64) -> Bytes {
    let seed = 0x5A ^ (writer as u8).wrapping_mul(101);
    Bytes::from(
        (0..size)
            .map(|i| (i as u8).wrapping_mul(31) ^ seed)
            .collect::<Vec<u8>>(),
    )
}

/// Runs the load on `clients` (a client per node, by name; the first is the traced node) and
/// traces the Nth write the first node issues. Files are `{prefix}-{writer}`, laid out as
/// `layout` asks.
pub(super) async fn run(
    clients: &[(String, Client)],
    config: LoadConfig,
    size: u64,
    layout: StripeRequest,
    prefix: &str,
) -> Result<LoadRun, BenchError> {
    assert!(!clients.is_empty(), "a load needs a client node");
    let io = |what: String, e: iopath_client::ClientError| BenchError::Io {
        what,
        why: e.to_string(),
    };
    let mut files = Vec::with_capacity(config.writers);
    for writer in 0..config.writers {
        let (_, client) = &clients[writer % clients.len()];
        let path = format!("{prefix}-{writer}");
        let file = client
            .create(&path, layout)
            .await
            .map_err(|e| io(format!("create the load's file {path}"), e))?;
        files.push(file);
    }
    let nth = Arc::new(NthRequest::new(config.nth));
    // Set once the traced write has returned: every writer stops before its next request.
    let stop = Arc::new(AtomicBool::new(false));
    let requests = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let deadline = started + LOAD_TIME_MAX;
    let mut writers = JoinSet::new();
    for (writer, file) in files.iter().enumerate() {
        let on_traced_node = writer % clients.len() == 0;
        let (file, nth, stop, requests) = (
            file.clone(),
            Arc::clone(&nth),
            Arc::clone(&stop),
            Arc::clone(&requests),
        );
        let data = writer_data(writer, size);
        let share = config.requests_per_writer();
        writers.spawn(async move {
            for request in 0..share {
                if stop.load(Ordering::Relaxed) || Instant::now() >= deadline {
                    break;
                }
                let offset = request * size;
                let what = || format!("the load's write to {} at {offset}", file.path());
                // The choice is made here, as the request is issued: the Nth of its node.
                if on_traced_node && nth.issue() {
                    let id = TraceId::fresh();
                    let issued = Instant::now();
                    trace::traced(id, file.write_at(offset, data.clone()))
                        .await
                        .map_err(|e| io(format!("the traced write ({})", what()), e))?;
                    let seconds = issued.elapsed().as_secs_f64();
                    requests.fetch_add(1, Ordering::Relaxed);
                    stop.store(true, Ordering::Relaxed);
                    return Ok(Some(TracedWrite {
                        id,
                        file,
                        offset,
                        data,
                        seconds,
                    }));
                }
                file.write_at(offset, data.clone())
                    .await
                    .map_err(|e| io(what(), e))?;
                requests.fetch_add(1, Ordering::Relaxed);
            }
            Ok(None)
        });
    }
    // Bounded: every writer ends at its share, the stop or the deadline; a failed writer ends
    // the load at once (dropping the set aborts the others).
    let mut traced = None;
    while let Some(joined) = writers.join_next().await {
        match joined {
            Ok(Ok(Some(write))) => traced = Some(write),
            Ok(Ok(None)) => {}
            Ok(Err(error)) => return Err(error),
            Err(join_error) => {
                return Err(BenchError::tool(format!(
                    "run the load's writer: {join_error}"
                )));
            }
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    let traced_node = clients[0].0.clone();
    let traced = traced.ok_or_else(|| BenchError::Refused {
        why: format!(
            "the load stopped before {traced_node} issued its {} write ({} issued in {seconds:.1} \
             s; each writer writes at most {} requests, for at most {} s)",
            ordinal(config.nth),
            nth.issued(),
            config.requests_per_writer(),
            LOAD_TIME_MAX.as_secs()
        ),
    })?;
    let nodes = clients
        .iter()
        .take(config.writers)
        .map(|(name, _)| name.clone())
        .collect();
    Ok(LoadRun {
        traced,
        summary: LoadSummary {
            writers: config.writers,
            nodes,
            traced_node,
            nth: config.nth,
            request_bytes: size,
            requests: requests.load(Ordering::Relaxed),
            seconds,
        },
        files,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_the_nth_request_is_chosen_whoever_issues_it() {
        let nth = Arc::new(NthRequest::new(5));
        let chosen = AtomicU64::new(0);
        std::thread::scope(|s| {
            for _ in 0..4 {
                s.spawn(|| {
                    for _ in 0..10 {
                        if nth.issue() {
                            chosen.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                });
            }
        });
        assert_eq!(chosen.load(Ordering::Relaxed), 1);
        assert_eq!(nth.issued(), 40);
        let first = NthRequest::new(1);
        assert!(first.issue() && !first.issue());
    }

    #[test]
    fn loads_outside_the_bounds_are_refused_with_the_option_named() {
        let ok = LoadConfig {
            writers: 16,
            nth: 8,
        };
        assert!(ok.check(1 << 20).is_ok());
        for (config, size, option) in [
            (LoadConfig { writers: 0, ..ok }, 1 << 20, "--load"),
            (LoadConfig { writers: 65, ..ok }, 1 << 20, "--load"),
            (LoadConfig { nth: 0, ..ok }, 1 << 20, "--nth"),
            (LoadConfig { nth: 1025, ..ok }, 1 << 20, "--nth"),
            // 64 writers of 64 MiB buffers: 4 GiB.
            (LoadConfig { writers: 64, ..ok }, 64 << 20, "--load"),
            // 16 writers x 2 x 1024 requests of 1 MiB: 32 GiB.
            (LoadConfig { nth: 1024, ..ok }, 1 << 20, "--load"),
        ] {
            let error = config.check(size).unwrap_err().to_string();
            assert!(error.starts_with(option), "{config:?}: {error}");
        }
    }

    #[test]
    fn ordinals_read_as_english() {
        let words: Vec<String> = [1, 2, 3, 4, 11, 12, 13, 21, 22, 101, 111]
            .into_iter()
            .map(ordinal)
            .collect();
        assert_eq!(
            words,
            [
                "1st", "2nd", "3rd", "4th", "11th", "12th", "13th", "21st", "22nd", "101st",
                "111th"
            ]
        );
    }
}
