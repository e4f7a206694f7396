//! Synchronous calls through one fyod are served one at a time; asynchronous calls run
//! concurrently, one worker per open file, in order within a file. Shown by the fyod's own
//! counters of calls in flight — counted, not timed.
//!
//! Each storage server's replies are delayed a little (a fault hook), so every call lasts
//! long enough for all the others to arrive while it runs.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;
use std::task::Poll;
use std::time::Duration;

use common::{MIB, Options, Stack, pattern, stamped, writers_of};
use iopath_fabric::fault::{Fault, FaultHook};
use iopath_fabric::frame::{Header, Kind, REPLY_PORTAL};
use iopath_forwarder::{CallKind, FileSystem, IoMode, OpenOptions};
use iopath_mds::StripeRequest;

/// Delays every RPC reply a storage server sends.
#[derive(Debug)]
struct SlowReplies(Duration);

impl FaultHook for SlowReplies {
    fn on_send(&self, header: &Header, _payload_len: usize) -> Fault {
        if header.kind == Kind::Put && header.portal == REPLY_PORTAL {
            Fault::Delay(self.0)
        } else {
            Fault::None
        }
    }
}

async fn slow_stack(mode: FileSystem) -> Stack {
    Stack::start(Options {
        mode,
        oss_fault: Some(Arc::new(SlowReplies(Duration::from_millis(10)))),
        ..Options::default()
    })
    .await
}

/// PFS files striped over every target; UFS files on one.
fn open(call: CallKind, mode: FileSystem) -> OpenOptions {
    OpenOptions {
        create: true,
        stripe: (mode == FileSystem::Pfs).then_some(StripeRequest {
            stripe_size_bytes: MIB,
            stripe_count: -1,
            stripe_offset: -1,
        }),
        io_mode: IoMode::Masync,
        call,
        ..OpenOptions::default()
    }
}

/// `clients` compute nodes on fyod 0, each writing 1 MiB to a file of its own, all at once,
/// with calls of `kind`.
async fn everyone_writes(stack: &Stack, clients: u32, kind: CallKind) {
    let mode = stack.options.mode;
    let mut tasks = tokio::task::JoinSet::new();
    for c in 0..clients {
        let client = stack
            .client(0, c + 1 + if kind == CallKind::Sync { 0 } else { 100 })
            .await;
        tasks.spawn(async move {
            let file = client
                .open(&format!("/{kind}-{c}"), open(kind, mode))
                .await
                .unwrap();
            let data = pattern(u64::from(c), MIB);
            file.write_at(0, data.clone()).await.unwrap();
            assert_eq!(file.read_at(0, MIB).await.unwrap(), data);
            file.close().await.unwrap();
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_calls_through_one_fyod_are_served_one_at_a_time() {
    for mode in [FileSystem::Pfs, FileSystem::Ufs] {
        let stack = slow_stack(mode).await;
        everyone_writes(&stack, 16, CallKind::Sync).await;
        let stats = stack.fyods[0].stats();
        println!(
            "{mode}: sync calls in flight peak {}, waiting peak {}, completed {}",
            stats.sync_calls_in_flight_peak, stats.sync_calls_waiting_peak, stats.calls_completed
        );
        assert_eq!(
            stats.sync_calls_in_flight_peak, 1,
            "{mode}: one sync call at a time"
        );
        assert!(
            stats.sync_calls_waiting_peak >= 2,
            "{mode}: others were waiting meanwhile ({})",
            stats.sync_calls_waiting_peak
        );
        assert_eq!(stats.async_calls_in_flight_peak, 0);
        assert_eq!(stats.sync_calls_in_flight, 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_calls_run_concurrently_one_worker_per_file() {
    for mode in [FileSystem::Pfs, FileSystem::Ufs] {
        let stack = slow_stack(mode).await;
        everyone_writes(&stack, 16, CallKind::Async).await;
        let stats = stack.fyods[0].stats();
        println!(
            "{mode}: async calls in flight peak {}, completed {}",
            stats.async_calls_in_flight_peak, stats.calls_completed
        );
        assert!(
            stats.async_calls_in_flight_peak > 1,
            "{mode}: async calls overlapped ({})",
            stats.async_calls_in_flight_peak
        );
        assert!(
            stats.async_calls_in_flight_peak <= 16,
            "at most one per open file"
        );
        assert_eq!(stats.sync_calls_in_flight_peak, 0);
    }
}

/// Polls every future once, in order (each takes its place in the file's order on its first
/// poll), then waits for all of them.
async fn start_in_order<T>(mut futures: Vec<Pin<Box<dyn Future<Output = T> + Send>>>) -> Vec<T> {
    let mut done: Vec<Option<T>> = futures.iter().map(|_| None).collect();
    std::future::poll_fn(|cx| {
        for (future, slot) in futures.iter_mut().zip(done.iter_mut()) {
            if slot.is_none()
                && let Poll::Ready(value) = future.as_mut().poll(cx)
            {
                *slot = Some(value);
            }
        }
        Poll::Ready(())
    })
    .await;
    let mut out = Vec::new();
    for (future, slot) in futures.into_iter().zip(done) {
        out.push(match slot {
            Some(value) => value,
            None => future.await,
        });
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn async_calls_on_one_file_run_in_the_order_they_were_made() {
    let stack = slow_stack(FileSystem::Pfs).await;
    let client = stack.client(0, 1).await;
    let file = client
        .open("/ordered", open(CallKind::Async, FileSystem::Pfs))
        .await
        .unwrap();
    // Ten overlapping writes of the same region, in flight together: the last made wins.
    let writes: Vec<Pin<Box<dyn Future<Output = u64> + Send>>> = (0..10u16)
        .map(|round| {
            let file = file.clone();
            Box::pin(async move { file.write_at(0, stamped(1, round, 2 * MIB)).await.unwrap() })
                as Pin<Box<dyn Future<Output = u64> + Send>>
        })
        .collect();
    start_in_order(writes).await;
    let back = file.read_at(0, 2 * MIB).await.unwrap();
    let writers = writers_of(&back);
    assert!(
        writers.iter().all(|w| *w == (1, 9)),
        "the tenth write is the last applied"
    );
    let stats = stack.fyods[0].stats();
    assert_eq!(
        stats.async_calls_in_flight_peak, 1,
        "one file: its worker runs one call at a time"
    );
}
