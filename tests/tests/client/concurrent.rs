//! Sixteen clients at once, each on its own node: a file per process, and one shared file
//! written in interleaved pieces that share stripe units and objects.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use std::sync::Arc;

use common::{KIB, MIB, Pattern, check, seed, stack, stripe};
use iopath_client::{Client, StripeRequest};

const CLIENTS: u64 = 16;

async fn clients(stack: &iopath_stack::testing::TestStack) -> Vec<Client> {
    let mut clients = Vec::new();
    for _ in 0..CLIENTS {
        clients.push(stack.client().await.unwrap());
    }
    clients
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_clients_write_a_file_each() {
    let stack = stack().await;
    let clients = clients(&stack).await;
    clients[0].mkdir("/fpp").await.unwrap();
    let pattern = Arc::new(Pattern::new(seed()));
    let mut tasks = Vec::new();
    for (rank, client) in clients.iter().cloned().enumerate() {
        let pattern = Arc::clone(&pattern);
        tasks.push(tokio::spawn(async move {
            let path = format!("/fpp/{rank}");
            // The default layout: one stripe, the MDS spreading files over the targets.
            let file = client.create(&path, StripeRequest::INHERIT).await.unwrap();
            let len = 3 * MIB + rank as u64 * 4097;
            let mut offset = 0;
            while offset < len {
                let n = (MIB - 1).min(len - offset);
                file.write_at(offset, pattern.bytes(offset, n))
                    .await
                    .unwrap();
                offset += n;
            }
            file.close().await.unwrap();
            (rank, path, len)
        }));
    }
    let mut targets_used = std::collections::BTreeSet::new();
    for task in tasks {
        let (rank, path, len) = task.await.unwrap();
        // Read by another client than the writer.
        let reader = &clients[(rank + 1) % clients.len()];
        let file = reader.open(&path).await.unwrap();
        targets_used.insert(file.layout().stripe_offset());
        assert_eq!(file.size().await.unwrap(), len, "{path}");
        check(
            &path,
            &file.read_at(0, len).await.unwrap(),
            &pattern.bytes(0, len),
        );
    }
    assert_eq!(
        targets_used.len(),
        4,
        "round-robin placement spreads the files over every target"
    );
    assert_eq!(
        clients[5].readdir("/fpp").await.unwrap().len(),
        CLIENTS as usize
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sixteen_clients_write_one_shared_file_in_interleaved_pieces() {
    let stack = stack().await;
    let clients = clients(&stack).await;
    clients[0]
        .create("/shared", stripe(64 * KIB, -1, -1))
        .await
        .unwrap();
    let pattern = Arc::new(Pattern::new(seed()));
    // IOR's segmented pattern: segment s holds every rank's piece in rank order. Pieces are
    // not stripe-aligned, so neighbours write different bytes of the same stripe units.
    let piece = 100_000u64;
    let segments = 4u64;
    let mut tasks = Vec::new();
    for (rank, client) in clients.iter().cloned().enumerate() {
        let pattern = Arc::clone(&pattern);
        tasks.push(tokio::spawn(async move {
            let file = client.open("/shared").await.unwrap();
            for segment in 0..segments {
                let offset = (segment * CLIENTS + rank as u64) * piece;
                file.write_at(offset, pattern.bytes(offset, piece))
                    .await
                    .unwrap();
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let len = segments * CLIENTS * piece;
    let reader = stack.client().await.unwrap();
    let file = reader.open("/shared").await.unwrap();
    assert_eq!(file.size().await.unwrap(), len);
    check(
        "shared file",
        &file.read_at(0, len).await.unwrap(),
        &pattern.bytes(0, len),
    );
}
