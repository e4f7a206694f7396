//! The client through a fyod (ASCI Red's path): the same files, calls and errors as
//! direct-attached, with every read and write an RPC to the fyod carrying only a buffer
//! descriptor. PFS fyods stripe (the storage servers pull from the client's memory); UFS fyods
//! keep each file on one target and move the bytes through their own buffers.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use std::sync::Arc;

use bytes::Bytes;
use common::{KIB, MIB, Pattern, check, seed, stripe};
use iopath_client::{ClientError, FileSystem, IoResult, StripeRequest};
use iopath_stack::testing::{TestStack, TestStackConfig};

async fn stack_with_fyods(fyods: u32, file_system: FileSystem) -> TestStack {
    TestStack::start(TestStackConfig {
        fyods,
        fyod_file_system: file_system,
        ..TestStackConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_round_trip_through_a_pfs_fyod() {
    let stack = stack_with_fyods(1, FileSystem::Pfs).await;
    let client = stack.client_through_fyod(0).await.unwrap();
    assert!(client.fyod().is_some());
    let pattern = Pattern::new(seed());
    for (n, (layout, offset, len)) in [
        ((64 * KIB, -1), 0, 1),
        ((64 * KIB, -1), 12_345, 3 * MIB + 7),
        ((MIB, 2), MIB - 1, 5 * MIB),
        ((4 * MIB, 1), 0, 16 * MIB),
    ]
    .into_iter()
    .enumerate()
    {
        let path = format!("/p{n}");
        let file = client
            .create(&path, stripe(layout.0, layout.1, -1))
            .await
            .unwrap();
        let data = pattern.bytes(offset, len);
        assert_eq!(file.write_at(offset, data.clone()).await.unwrap(), len);
        assert_eq!(file.size().await.unwrap(), offset + len, "{path}");
        check(&path, &file.read_at(offset, len).await.unwrap(), &data);
        // A hole before, a short read at the end, nothing past it.
        check(
            &format!("{path} hole"),
            &file.read_at(0, offset).await.unwrap(),
            &vec![0; offset as usize],
        );
        assert_eq!(file.read_at(offset + len - 1, 100).await.unwrap().len(), 1);
        assert!(file.read_at(offset + len, 100).await.unwrap().is_empty());
        assert_eq!(client.stat(&path).await.unwrap().size_bytes, offset + len);
        file.fsync().await.unwrap();
        file.close().await.unwrap();
        // The same bytes seen directly, by a client that talks to the storage servers.
        let direct = stack.client().await.unwrap();
        check(
            &format!("{path} direct"),
            &direct
                .open(&path)
                .await
                .unwrap()
                .read_at(offset, len)
                .await
                .unwrap(),
            &data,
        );
    }
    // Unlink destroys the objects through connections made for it.
    client.unlink("/p0").await.unwrap();
    assert!(matches!(
        client.open("/p0").await,
        Err(ClientError::NotFound { .. })
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn files_round_trip_through_a_ufs_fyod() {
    let stack = stack_with_fyods(1, FileSystem::Ufs).await;
    let client = stack.client_through_fyod(0).await.unwrap();
    let pattern = Pattern::new(seed());
    let file = client.create("/u", StripeRequest::INHERIT).await.unwrap();
    assert_eq!(
        file.layout().stripe_count(),
        1,
        "a UFS file lives on one target"
    );
    let len = 2 * MIB + 333;
    file.write_at(7, pattern.bytes(7, len)).await.unwrap();
    file.fsync().await.unwrap();
    check(
        "/u",
        &file.read_at(7, len).await.unwrap(),
        &pattern.bytes(7, len),
    );
    assert_eq!(file.size().await.unwrap(), 7 + len);
}

/// `iwrite`/`cwrite` are asynchronous calls at the fyod; `write_at` is a synchronous one,
/// which the fyod serves one at a time however many clients call at once. (That async calls
/// overlap is counted deterministically below.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sync_calls_are_serialised_at_the_fyod_and_async_calls_are_not() {
    let stack = stack_with_fyods(1, FileSystem::Pfs).await;
    let pattern = Arc::new(Pattern::new(seed()));
    let mut tasks = Vec::new();
    for rank in 0..8u64 {
        let client = stack.client_through_fyod(0).await.unwrap();
        let pattern = Arc::clone(&pattern);
        tasks.push(tokio::spawn(async move {
            let file = client
                .create(&format!("/s{rank}"), stripe(MIB, -1, -1))
                .await
                .unwrap();
            for c in 0..4 {
                file.write_at(c * MIB, pattern.bytes(c * MIB, MIB))
                    .await
                    .unwrap();
            }
            // The same again as asynchronous calls on a second file.
            let other = client
                .create(&format!("/a{rank}"), stripe(MIB, -1, -1))
                .await
                .unwrap();
            let handles: Vec<_> = (0..4)
                .map(|c| other.iwrite(c * MIB, pattern.bytes(c * MIB, MIB)))
                .collect();
            for handle in handles {
                assert_eq!(other.iowait(handle).await.unwrap(), IoResult::Written(MIB));
            }
            other.seek(4 * MIB);
            assert_eq!(other.cwrite(pattern.bytes(4 * MIB, 10)).await.unwrap(), 10);
            check(
                &format!("/a{rank}"),
                &other.read_at(0, 4 * MIB + 10).await.unwrap(),
                &pattern.bytes(0, 4 * MIB + 10),
            );
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let stats = stack.fyod(0).await.unwrap().stats();
    assert_eq!(
        stats.sync_calls_in_flight_peak, 1,
        "synchronous calls one at a time: {stats:?}"
    );
    println!("{stats:?}");
    // Eight clients' synchronous writes met at the fyod: some waited while one ran.
    assert!(stats.sync_calls_waiting_peak >= 1, "{stats:?}");
    assert!(stats.async_calls_in_flight_peak >= 1, "{stats:?}");
    assert!(stats.calls_completed >= 8 * (4 + 5 + 1), "{stats:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_through_a_fyod_gets_the_same_clear_errors() {
    let stack = stack_with_fyods(1, FileSystem::Pfs).await;
    let client = stack.client_through_fyod(0).await.unwrap();
    let file = client.create("/f", stripe(0, 2, -1)).await.unwrap();
    file.write_at(0, Bytes::from_static(b"intact"))
        .await
        .unwrap();
    assert!(matches!(
        client.open("/missing").await,
        Err(ClientError::NotFound { .. })
    ));
    assert!(matches!(
        client.create("/f", stripe(0, 1, -1)).await,
        Err(ClientError::Exists { .. })
    ));
    // As Lustre's MDS does, a stripe count past the targets is capped to them.
    let capped = client.create("/g", stripe(0, 9, -1)).await.unwrap();
    assert!(
        (1..9).contains(&capped.layout().stripe_count()),
        "{:?}",
        capped.layout()
    );
    client.mkdir("/d").await.unwrap();
    assert!(matches!(
        client.open("/d").await,
        Err(ClientError::IsADirectory { .. })
    ));
    assert!(matches!(
        file.read_at(u64::MAX - 1, 10).await,
        Err(ClientError::Layout(_))
    ));
    assert!(matches!(
        file.read_at(0, u64::MAX).await,
        Err(ClientError::TooLarge { .. })
    ));
    // The refused calls broke nothing: the handle still works and the bytes are there.
    assert_eq!(&file.read_at(0, 100).await.unwrap()[..], b"intact");
    assert_eq!(
        client.readdir("/").await.unwrap(),
        vec!["d".to_string(), "f".to_string(), "g".to_string()]
    );
}

/// Asynchronous calls on different files run at the fyod at once. Counted on a current-thread
/// runtime, where every `iwrite` is queued (and each file's worker sends its call) before any
/// reply can come back.
#[tokio::test(flavor = "current_thread")]
async fn async_calls_on_different_files_overlap_at_the_fyod() {
    let stack = stack_with_fyods(1, FileSystem::Pfs).await;
    let client = stack.client_through_fyod(0).await.unwrap();
    let pattern = Pattern::new(seed());
    let mut files = Vec::new();
    for i in 0..4 {
        files.push(
            client
                .create(&format!("/o{i}"), stripe(MIB, -1, -1))
                .await
                .unwrap(),
        );
    }
    let handles: Vec<_> = files
        .iter()
        .map(|f| f.iwrite(0, pattern.bytes(0, 4 * MIB)))
        .collect();
    for (file, handle) in files.iter().zip(handles) {
        assert_eq!(
            file.iowait(handle).await.unwrap(),
            IoResult::Written(4 * MIB)
        );
    }
    let stats = stack.fyod(0).await.unwrap().stats();
    println!("{stats:?}");
    assert_eq!(client.async_stats().in_flight_peak, 4);
    assert!(stats.async_calls_in_flight_peak >= 2, "{stats:?}");
}

/// The fyod holds a handle per open file: `stat` (which opens to learn the size) and a file
/// dropped without `close` leave none behind.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn no_handle_is_left_open_at_the_fyod() {
    let stack = stack_with_fyods(1, FileSystem::Pfs).await;
    let client = stack.client_through_fyod(0).await.unwrap();
    let file = client.create("/h", stripe(0, 2, -1)).await.unwrap();
    file.write_at(0, Bytes::from_static(b"abc")).await.unwrap();
    let fyod = stack.fyod(0).await.unwrap();
    assert_eq!(fyod.stats().open_files, 1);
    assert_eq!(client.stat("/h").await.unwrap().size_bytes, 3);
    assert_eq!(fyod.stats().open_files, 1, "stat closed what it opened");
    // Dropped with an asynchronous call still queued: the call runs, then the handle closes.
    let handle = file.iwrite(3, Bytes::from_static(b"def"));
    drop(handle);
    drop(file);
    let mut polls = 0u32;
    while fyod.stats().open_files != 0 {
        polls += 1;
        assert!(
            polls < 1_000_000,
            "the dropped file was never closed at the fyod"
        );
        tokio::task::yield_now().await;
    }
    let again = client.open("/h").await.unwrap();
    assert_eq!(&again.read_at(0, 10).await.unwrap()[..], b"abcdef");
    again.close().await.unwrap();
    assert_eq!(fyod.stats().open_files, 0);
}
