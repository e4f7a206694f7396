//! ASCI Red's asynchronous calls: `iwrite`/`iread` return at once, `iodone` polls, `iowait`
//! collects; a file's calls run in order, calls on different files run concurrently
//! (counted, not timed); `cwrite`/`cread` move the file pointer.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use bytes::Bytes;
use common::{KIB, MIB, Pattern, check, seed, stack, stripe};
use iopath_client::config::ASYNC_CALLS_PER_FILE_MAX;
use iopath_client::{ClientError, IoResult};

/// Calls on eight files overlap; calls on one file never do. On a current-thread runtime the
/// count is deterministic: `iwrite` only queues, so every call is queued before any worker
/// runs, and each worker starts its call (and counts it) before any reply can arrive.
#[tokio::test(flavor = "current_thread")]
async fn calls_run_concurrently_across_files_and_in_order_within_one() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    let mut files = Vec::new();
    for i in 0..8 {
        files.push(
            client
                .create(&format!("/a{i}"), stripe(MIB, 2, -1))
                .await
                .unwrap(),
        );
    }
    let mut handles = Vec::new();
    for (i, file) in files.iter().enumerate() {
        // Four calls per file, the last two to the same bytes: the later one must win.
        let base = i as u64 * 8 * MIB;
        handles.push((i, file.iwrite(0, pattern.bytes(base, 2 * MIB))));
        handles.push((
            i,
            file.iwrite(2 * MIB, pattern.bytes(base + 2 * MIB, 2 * MIB)),
        ));
        handles.push((
            i,
            file.iwrite(4 * MIB, Bytes::from(vec![0xee; MIB as usize])),
        ));
        handles.push((i, file.iwrite(4 * MIB, pattern.bytes(base + 4 * MIB, MIB))));
    }
    // Nothing has run yet: this task has not yielded since queueing.
    for (i, handle) in &handles {
        assert!(
            !files[*i].iodone(handle),
            "a call finished before its worker ran"
        );
    }
    for (i, handle) in handles {
        let result = files[i].iowait(handle).await.unwrap();
        assert!(matches!(result, IoResult::Written(n) if n == 2 * MIB || n == MIB));
    }
    let stats = client.async_stats();
    assert_eq!(stats.completed, 32);
    assert_eq!(stats.in_flight, 0);
    assert_eq!(
        stats.in_flight_peak, 8,
        "one call per file at a time, all files at once"
    );
    for (i, file) in files.iter().enumerate() {
        assert_eq!(
            file.async_stats().in_flight_peak,
            1,
            "a file's calls run one at a time"
        );
        let base = i as u64 * 8 * MIB;
        check(
            &format!("/a{i}"),
            &file.read_at(0, 5 * MIB).await.unwrap(),
            &pattern.bytes(base, 5 * MIB),
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn iread_after_iwrite_sees_it_and_iodone_turns_true() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    let file = client
        .create("/rw", stripe(64 * KIB, -1, -1))
        .await
        .unwrap();
    let write = file.iwrite(100, pattern.bytes(100, 3 * MIB));
    // Queued after the write on the same file: runs after it, so it sees the bytes.
    let read = file.iread(0, 4 * MIB);
    // Poll, as an application overlapping computation with I/O would; bounded.
    let mut polls = 0u32;
    while !file.iodone(&read) {
        polls += 1;
        assert!(polls < 1_000_000, "iread never finished");
        tokio::task::yield_now().await;
    }
    assert!(
        file.iodone(&write),
        "the earlier call on the file finished first"
    );
    assert_eq!(
        file.iowait(write).await.unwrap(),
        IoResult::Written(3 * MIB)
    );
    let data = file.iowait(read).await.unwrap().into_data().unwrap();
    let mut expected = vec![0u8; 100];
    expected.extend_from_slice(&pattern.bytes(100, 3 * MIB));
    check("iread", &data, &expected);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn cwrite_and_cread_move_the_file_pointer() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    let file = client.create("/c", stripe(64 * KIB, 2, -1)).await.unwrap();
    let mut offset = 0;
    for n in [1, 1000, 64 * KIB, 300_001, 7] {
        assert_eq!(file.cwrite(pattern.bytes(offset, n)).await.unwrap(), n);
        offset += n;
        assert_eq!(file.position(), offset);
    }
    file.seek(0);
    let mut read = Vec::new();
    // Bounded: each read moves the pointer or hits the end.
    loop {
        let chunk = file.cread(100_000).await.unwrap();
        if chunk.is_empty() {
            break;
        }
        read.extend_from_slice(&chunk);
        assert_eq!(file.position(), read.len() as u64);
    }
    check("cread", &read, &pattern.bytes(0, offset));
    // The pointer stops at the end of the file: a read there is empty and does not move it.
    assert!(file.cread(10).await.unwrap().is_empty());
    assert_eq!(file.position(), offset);
    // A clone shares the pointer, like a duplicated descriptor.
    let twin = file.clone();
    twin.seek(5);
    assert_eq!(file.position(), 5);
}

#[tokio::test(flavor = "current_thread")]
async fn handles_of_another_file_and_too_many_pending_calls_are_refused() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let a = client.create("/h1", stripe(0, 1, -1)).await.unwrap();
    let b = client.create("/h2", stripe(0, 1, -1)).await.unwrap();
    let handle = a.iwrite(0, Bytes::from_static(b"mine"));
    assert!(!b.iodone(&handle));
    match b.iowait(handle).await {
        Err(ClientError::UnknownHandle {
            handle_file, file, ..
        }) => {
            assert_eq!((handle_file, file), (a.id(), b.id()));
        }
        other => panic!("expected UnknownHandle, got {other:?}"),
    }
    // The refused wait harmed nothing: the call still ran.
    a.close().await.unwrap();
    let reopened = client.open("/h1").await.unwrap();
    assert_eq!(
        reopened.read_at(0, 10).await.unwrap(),
        Bytes::from_static(b"mine")
    );

    // Queue past the limit without yielding: the extra call fails at once, clearly, and
    // the queued ones still complete.
    let mut handles = Vec::new();
    for i in 0..ASYNC_CALLS_PER_FILE_MAX as u64 {
        handles.push(b.iwrite(i * 10, Bytes::from_static(b"0123456789")));
    }
    let extra = b.iwrite(0, Bytes::from_static(b"x"));
    assert!(b.iodone(&extra));
    match b.iowait(extra).await {
        Err(ClientError::TooManyPending { max, .. }) => assert_eq!(max, ASYNC_CALLS_PER_FILE_MAX),
        other => panic!("expected TooManyPending, got {other:?}"),
    }
    for handle in handles {
        assert_eq!(b.iowait(handle).await.unwrap(), IoResult::Written(10));
    }
    assert_eq!(
        b.size().await.unwrap(),
        ASYNC_CALLS_PER_FILE_MAX as u64 * 10
    );
    // Once they are collected there is room again.
    let again = b.iwrite(0, Bytes::from_static(b"y"));
    assert_eq!(b.iowait(again).await.unwrap(), IoResult::Written(1));
}

/// An asynchronous call that fails reports its error through `iowait`, and later calls on
/// the file still run.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_failed_call_reports_through_iowait_and_the_worker_goes_on() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let file = client.create("/fail", stripe(0, 1, -1)).await.unwrap();
    let bad = file.iwrite(u64::MAX - 1, Bytes::from_static(b"overflow"));
    let good = file.iwrite(0, Bytes::from_static(b"fine"));
    assert!(matches!(
        file.iowait(bad).await,
        Err(ClientError::Layout(_))
    ));
    assert_eq!(file.iowait(good).await.unwrap(), IoResult::Written(4));
    let too_big = file.iread(0, u64::MAX);
    assert!(matches!(
        file.iowait(too_big).await,
        Err(ClientError::TooLarge { .. })
    ));
}
