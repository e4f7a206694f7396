//! An embedded stack's targets share this process's open-file limit: many tasks reading a file
//! each at once queue at their targets for a place rather than open every file together.
//! Jaguar's 18,688 tasks reading from 672 targets ran out of descriptors so; this is the same at
//! a size the suite can run, under a lowered limit. A file of its own: the limit is the whole
//! process's.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::sync::Arc;

use bytes::Bytes;
use iopath_client::StripeRequest;
use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::file::{NetworkEntry, NodeEntry, RoleName, StackFile};

/// Descriptors this process may hold in this test.
const OPEN_FILE_LIMIT: u64 = 1024;
/// Each target gets 1024 / 2 / 2 / 32 = 8 places; 32 targets × 24 reads want 768 files at once
/// (1,536 descriptors).
const TARGETS_PER_SERVER: usize = 8;
const SERVERS: usize = 4;
const TASKS: usize = 768;
/// Bytes each task writes and reads back.
const SIZE: usize = 64 << 10;
/// Longest the tasks may take.
const RUN_MAX: std::time::Duration = std::time::Duration::from_secs(120);

fn lower_the_open_file_limit(soft: u64) {
    let mut limit = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit and setrlimit read or write only the struct passed.
    unsafe {
        assert_eq!(libc::getrlimit(libc::RLIMIT_NOFILE, &mut limit), 0);
        limit.rlim_cur = soft.min(limit.rlim_max);
        assert_eq!(libc::setrlimit(libc::RLIMIT_NOFILE, &limit), 0);
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tasks_reading_more_files_at_once_than_the_limit_allows_queue_at_their_targets() {
    lower_the_open_file_limit(OPEN_FILE_LIMIT);
    // A slow modeled disk (64 MiB/s a target): each read holds its target's attention for a
    // millisecond, so the reads of one target are under way together.
    let stack = StackFile::named("many-readers")
        .stripe_size(1 << 20)
        .stripe_count(1)
        .network(NetworkEntry::named("mesh0"))
        .node(
            NodeEntry::new("c", RoleName::Client)
                .count(TASKS as u32)
                .nid("mesh0", 100),
        )
        .node(
            NodeEntry::new("oss", RoleName::Oss)
                .count(SERVERS as u32)
                .targets(TARGETS_PER_SERVER as u32)
                .nid("mesh0", 10)
                .disk_bandwidth(64 << 20),
        )
        .node(NodeEntry::new("mds", RoleName::Mds).nid("mesh0", 1))
        .check("many-readers")
        .unwrap();
    let storage = StorageDir::temporary("test-open-files", None).unwrap();
    let running = Arc::new(
        RunningStack::start(stack, Mode::Embedded, storage, None)
            .await
            .unwrap(),
    );
    let first = running.connect(running.clients()[0]).await.unwrap();
    first.mkdir("/many").await.unwrap();
    first.close().await.unwrap();

    let written = Arc::new(tokio::sync::Barrier::new(TASKS));
    let mut tasks = tokio::task::JoinSet::new();
    for index in 0..TASKS {
        let (running, written) = (Arc::clone(&running), Arc::clone(&written));
        tasks.spawn(async move {
            let run = async {
                let client = running
                    .connect(running.clients()[index])
                    .await
                    .map_err(|e| e.to_string())?;
                let path = format!("/many/f{index}");
                let data = Bytes::from(vec![(index % 251) as u8; SIZE]);
                let wrote = async {
                    let file = client.create(&path, StripeRequest::INHERIT).await?;
                    file.write_at(0, data.clone()).await?;
                    file.fsync().await?;
                    file.close().await
                }
                .await;
                // Every task reads at once (one whose write failed too comes, so that none
                // waits for it).
                written.wait().await;
                wrote.map_err(|e| format!("task {index}: write: {e}"))?;
                let read = async {
                    let file = client.open(&path).await?;
                    let read = file.read_at(0, SIZE as u64).await?;
                    file.close().await?;
                    client.close().await?;
                    Ok::<_, iopath_client::ClientError>(read)
                }
                .await
                .map_err(|e| format!("task {index}: read: {e}"))?;
                if read == data {
                    Ok(())
                } else {
                    Err(format!("task {index}: read other bytes"))
                }
            };
            run.await
        });
    }
    let mut failures = Vec::new();
    let all = async {
        while let Some(done) = tasks.join_next().await {
            if let Err(failure) = done.unwrap() {
                failures.push(failure);
            }
        }
    };
    // Nine seconds here with the places; without them, tasks wait on files that never open.
    assert!(
        tokio::time::timeout(RUN_MAX, all).await.is_ok(),
        "the tasks did not finish within {RUN_MAX:?}"
    );
    assert!(
        failures.is_empty(),
        "{} of {TASKS} tasks failed under a limit of {OPEN_FILE_LIMIT} descriptors, the first: {}",
        failures.len(),
        failures[0]
    );
    Arc::into_inner(running).unwrap().stop().await.unwrap();
}
