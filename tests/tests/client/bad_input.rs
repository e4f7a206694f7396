//! Bad input gets a clear error and harms nothing stored: impossible stripe values, missing
//! files, directories used as files, reads past the end, lengths and offsets out of range.
//! Every test ends by reading back a file written before the bad calls.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use bytes::Bytes;
use common::{KIB, MIB, Pattern, check, seed, stack, stripe};
use iopath_client::config::REQUEST_BYTES_MAX;
use iopath_client::layout::{LayoutError, STRIPE_SIZE_MAX_BYTES};
use iopath_client::{Client, ClientError, File};
use iopath_stack::testing::TestStack;

/// A file with known contents, to check after each test that nothing was harmed.
async fn witness(client: &Client, pattern: &Pattern) -> File {
    let file = client
        .create("/witness", stripe(64 * KIB, -1, -1))
        .await
        .unwrap();
    file.write_at(0, pattern.bytes(0, MIB + 3)).await.unwrap();
    file
}

async fn witness_intact(stack: &TestStack, pattern: &Pattern) {
    let client = stack.client().await.unwrap();
    let file = client.open("/witness").await.unwrap();
    assert_eq!(file.size().await.unwrap(), MIB + 3);
    check(
        "witness",
        &file.read_at(0, 2 * MIB).await.unwrap(),
        &pattern.bytes(0, MIB + 3),
    );
    assert_eq!(
        client.readdir("/").await.unwrap(),
        vec!["d".to_string(), "witness".to_string()]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn impossible_stripes_are_refused_before_anything_is_created() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    witness(&client, &pattern).await;
    client.mkdir("/d").await.unwrap();
    let cases = [
        (stripe(1000, 1, -1), "not a multiple of 64 KiB"),
        (stripe(64 * KIB + 1, 1, -1), "not a multiple of 64 KiB"),
        (stripe(STRIPE_SIZE_MAX_BYTES + 64 * KIB, 1, -1), "too large"),
        (stripe(0, -2, -1), "a negative count other than -1"),
        (stripe(0, 1, 4), "a start index that is no target"),
        (stripe(0, 1, -7), "a negative start index other than -1"),
    ];
    for (request, what) in cases {
        let created = client.create("/bad", request).await;
        assert!(
            matches!(created, Err(ClientError::Layout(_))),
            "create with {what}: {created:?}"
        );
        let set = client.setstripe("/d", request).await;
        assert!(
            matches!(set, Err(ClientError::Layout(_))),
            "setstripe with {what}: {set:?}"
        );
        let set = client.setstripe("/new", request).await;
        assert!(
            matches!(set, Err(ClientError::Layout(_))),
            "setstripe of a new file with {what}"
        );
    }
    // The messages say what is wrong.
    let error = client.create("/bad", stripe(0, 1, 4)).await.unwrap_err();
    assert!(
        error
            .to_string()
            .starts_with("starting target index 4 is out of range"),
        "{error}"
    );
    let error = client
        .create("/bad", stripe(1000, 0, -1))
        .await
        .unwrap_err();
    assert!(matches!(
        error,
        ClientError::Layout(LayoutError::StripeSizeNotAligned {
            stripe_size_bytes: 1000
        })
    ));
    // The directory's default is untouched.
    match client.stripe_info("/d").await.unwrap() {
        iopath_client::StripeInfo::Directory { set_here, .. } => assert!(!set_here),
        other => panic!("a directory reported {other:?}"),
    }
    witness_intact(&stack, &pattern).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn missing_files_and_directories_used_as_files_get_clear_errors() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    witness(&client, &pattern).await;
    client.mkdir("/d").await.unwrap();
    assert!(
        matches!(client.open("/nope").await, Err(ClientError::NotFound { path }) if path == "/nope")
    );
    assert!(matches!(
        client.open("/d/nope").await,
        Err(ClientError::NotFound { .. })
    ));
    assert!(matches!(
        client.stat("/nope").await,
        Err(ClientError::NotFound { .. })
    ));
    assert!(matches!(
        client.unlink("/nope").await,
        Err(ClientError::NotFound { .. })
    ));
    assert!(matches!(
        client.readdir("/nope").await,
        Err(ClientError::NotFound { .. })
    ));
    assert!(matches!(
        client.getstripe("/nope").await,
        Err(ClientError::NotFound { .. })
    ));
    assert!(matches!(
        client.rename("/nope", "/x").await,
        Err(ClientError::NotFound { .. })
    ));
    assert!(matches!(
        client.open("/d").await,
        Err(ClientError::IsADirectory { .. })
    ));
    assert!(matches!(
        client.getstripe("/d").await,
        Err(ClientError::IsADirectory { .. })
    ));
    assert!(matches!(
        client.open("/witness/x").await,
        Err(ClientError::NotADirectory { .. })
    ));
    assert!(matches!(
        client.create("/witness", stripe(0, 0, -1)).await,
        Err(ClientError::Exists { .. })
    ));
    assert!(matches!(
        client.mkdir("/d").await,
        Err(ClientError::Exists { .. })
    ));
    // A regular file's layout is fixed at creation.
    assert!(matches!(
        client.setstripe("/witness", stripe(0, 2, -1)).await,
        Err(ClientError::Exists { .. })
    ));
    assert!(matches!(
        client.create("relative", stripe(0, 0, -1)).await,
        Err(ClientError::Invalid { .. })
    ));
    let error = client.open("/nope").await.unwrap_err();
    assert_eq!(error.to_string(), "/nope: no such file or directory");
    witness_intact(&stack, &pattern).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_past_the_end_are_short_or_empty_and_bad_lengths_are_refused() {
    let stack = stack().await;
    let client = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    let file = witness(&client, &pattern).await;
    client.mkdir("/d").await.unwrap();
    let size = MIB + 3;
    // Short at the end, empty past it, empty far past it.
    check(
        "tail",
        &file.read_at(size - 2, 100).await.unwrap(),
        &pattern.bytes(size - 2, 2),
    );
    assert!(file.read_at(size, 1).await.unwrap().is_empty());
    assert!(file.read_at(1 << 40, MIB).await.unwrap().is_empty());
    assert!(file.read_at(u64::MAX - 10, 5).await.unwrap().is_empty());
    // An extent that does not fit in a file offset.
    assert!(matches!(
        file.read_at(u64::MAX - 10, 100).await,
        Err(ClientError::Layout(LayoutError::ExtentOverflow { .. }))
    ));
    assert!(matches!(
        file.write_at(u64::MAX - 2, Bytes::from_static(b"overflow"))
            .await,
        Err(ClientError::Layout(LayoutError::ExtentOverflow { .. }))
    ));
    // Lengths above the per-call limit are refused before anything is allocated.
    assert!(matches!(
        file.read_at(0, REQUEST_BYTES_MAX + 1).await,
        Err(ClientError::TooLarge { .. })
    ));
    assert!(matches!(
        file.read_at(0, u64::MAX).await,
        Err(ClientError::TooLarge { .. })
    ));
    // Beyond the largest object the servers keep (1 TiB): the server says no, clearly.
    let far = file.write_at(1 << 50, Bytes::from_static(b"far")).await;
    assert!(
        matches!(far, Err(ClientError::Storage { op: "write", .. })),
        "{far:?}"
    );
    // An empty write writes nothing and changes nothing.
    assert_eq!(file.write_at(5, Bytes::new()).await.unwrap(), 0);
    assert_eq!(file.size().await.unwrap(), size);
    witness_intact(&stack, &pattern).await;
}

/// A file whose objects are gone (destroyed behind the client's back by an unlink from
/// another client) fails clearly on read, and its name is gone too.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_open_file_unlinked_by_another_client_fails_clearly() {
    let stack = stack().await;
    let a = stack.client().await.unwrap();
    let b = stack.client().await.unwrap();
    let pattern = Pattern::new(seed());
    witness(&a, &pattern).await;
    a.mkdir("/d").await.unwrap();
    let file = a.create("/gone", stripe(0, 2, -1)).await.unwrap();
    file.write_at(0, pattern.bytes(0, 1000)).await.unwrap();
    b.unlink("/gone").await.unwrap();
    let read = file.read_at(0, 10).await;
    assert!(
        matches!(read, Err(ClientError::Storage { op: "read", .. })),
        "{read:?}"
    );
    assert!(matches!(
        file.size().await,
        Err(ClientError::Storage { op: "getattr", .. })
    ));
    assert!(matches!(
        a.open("/gone").await,
        Err(ClientError::NotFound { .. })
    ));
    witness_intact(&stack, &pattern).await;
}
