//! 64 compute nodes through 4 fyods (16 each, the fyods configured for exactly that), writing
//! file-per-process and one shared file, in PFS and UFS mode; then every node reads back
//! another node's data through its own fyod.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use crate::common;

use std::sync::Arc;

use common::{KIB, MIB, Options, Stack, pattern};
use iopath_forwarder::{CallKind, FileSystem, FyodClient, IoMode, OpenOptions};
use iopath_mds::StripeRequest;

const CLIENTS: u32 = 64;
const FYODS: u32 = 4;

async fn stack(mode: FileSystem) -> (Stack, Vec<FyodClient>) {
    let stack = Stack::start(Options {
        mode,
        fyods: FYODS,
        oss_count: 2,
        targets_per_oss: 2,
        clients_per_fyod: CLIENTS / FYODS,
        ..Options::default()
    })
    .await;
    let mut clients = Vec::new();
    for c in 0..CLIENTS {
        // Compute nodes share the fyods in blocks, as yod assigns them.
        clients.push(stack.client((c / (CLIENTS / FYODS)) as usize, c + 1).await);
    }
    (stack, clients)
}

fn options(mode: FileSystem, create: bool, c: u32) -> OpenOptions {
    OpenOptions {
        create,
        stripe: (mode == FileSystem::Pfs).then_some(StripeRequest {
            stripe_size_bytes: MIB,
            stripe_count: -1,
            stripe_offset: -1,
        }),
        // Shared files are written in disjoint parts: MASYNC, as the paper advises.
        io_mode: IoMode::Masync,
        // Half the nodes use read()/write(), half cread()/cwrite().
        call: if c.is_multiple_of(2) {
            CallKind::Sync
        } else {
            CallKind::Async
        },
        ..OpenOptions::default()
    }
}

/// Runs `work(c, client)` for every node at once and waits for all.
async fn all<F, Fut>(clients: &[FyodClient], work: F)
where
    F: Fn(u32, FyodClient) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut tasks = tokio::task::JoinSet::new();
    for (c, client) in clients.iter().enumerate() {
        tasks.spawn(work(c as u32, client.clone()));
    }
    while let Some(done) = tasks.join_next().await {
        done.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn file_per_process_from_64_nodes_through_4_fyods() {
    for mode in [FileSystem::Pfs, FileSystem::Ufs] {
        let (stack, clients) = stack(mode).await;
        let size = MIB + 3 * KIB;
        all(&clients, |c, client| async move {
            let file = client
                .open(&format!("/fpp.{c}"), options(mode, true, c))
                .await
                .unwrap();
            file.write_at(0, pattern(u64::from(c), size)).await.unwrap();
            file.close().await.unwrap();
        })
        .await;
        all(&clients, |c, client| async move {
            let other = (c + 17) % CLIENTS; // a node of another fyod
            let file = client
                .open(&format!("/fpp.{other}"), options(mode, false, c))
                .await
                .unwrap();
            assert_eq!(file.size().await.unwrap(), size);
            let back = file.read_at(0, size + 100).await.unwrap();
            assert_eq!(
                back,
                pattern(u64::from(other), size),
                "{mode}: /fpp.{other}"
            );
            file.fsync().await.unwrap();
            file.close().await.unwrap();
        })
        .await;
        for (f, fyod) in stack.fyods.iter().enumerate() {
            let stats = fyod.stats();
            println!(
                "{mode} FPP fyod {f}: {} clients, {} calls, sync peak {}, async peak {}, through fyod {} bytes",
                stats.clients_connected,
                stats.calls_completed,
                stats.sync_calls_in_flight_peak,
                stats.async_calls_in_flight_peak,
                stats.bytes_through_fyod
            );
            assert_eq!(stats.clients_connected, CLIENTS / FYODS);
            assert_eq!(stats.open_files, 0, "every file was closed");
            assert!(stats.sync_calls_in_flight_peak <= 1);
            if mode == FileSystem::Pfs {
                assert_eq!(stats.bytes_through_fyod, 0);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_shared_file_from_64_nodes_through_4_fyods() {
    for mode in [FileSystem::Pfs, FileSystem::Ufs] {
        let (stack, clients) = stack(mode).await;
        // Parts not aligned to stripes or 128 KiB blocks: neighbours share blocks.
        let part = 300 * KIB + 8;
        let first = clients[0]
            .open("/shared", options(mode, true, 0))
            .await
            .unwrap();
        first.close().await.unwrap();
        all(&clients, |c, client| async move {
            let file = client
                .open("/shared", options(mode, false, c))
                .await
                .unwrap();
            let offset = u64::from(c) * part;
            file.write_at(offset, pattern(u64::from(c), part))
                .await
                .unwrap();
            file.close().await.unwrap();
        })
        .await;
        let expected: Arc<Vec<u8>> = Arc::new(
            (0..CLIENTS)
                .flat_map(|c| pattern(u64::from(c), part).to_vec())
                .collect(),
        );
        all(&clients, |c, client| {
            let expected = Arc::clone(&expected);
            async move {
                let file = client
                    .open("/shared", options(mode, false, c))
                    .await
                    .unwrap();
                assert_eq!(file.size().await.unwrap(), u64::from(CLIENTS) * part);
                // The part of a node on another fyod, and one straddling two parts.
                let other = u64::from((c + 17) % CLIENTS);
                let back = file.read_at(other * part, part).await.unwrap();
                let start = (other * part) as usize;
                assert_eq!(
                    &back[..],
                    &expected[start..start + part as usize],
                    "{mode}: part {other}"
                );
                let straddle = other * part + part / 2;
                let back = file.read_at(straddle, part).await.unwrap();
                let start = straddle as usize;
                let end = (start + part as usize).min(expected.len());
                assert_eq!(
                    &back[..],
                    &expected[start..end],
                    "{mode}: across part {other}"
                );
                file.close().await.unwrap();
            }
        })
        .await;
        let whole = clients[0]
            .open("/shared", options(mode, false, 0))
            .await
            .unwrap()
            .read_at(0, u64::from(CLIENTS) * part)
            .await
            .unwrap();
        assert_eq!(&whole[..], &expected[..], "{mode}: the whole shared file");
        for (f, fyod) in stack.fyods.iter().enumerate() {
            let stats = fyod.stats();
            println!(
                "{mode} shared fyod {f}: {} calls, sync peak {}, async peak {}, storage requests {}",
                stats.calls_completed,
                stats.sync_calls_in_flight_peak,
                stats.async_calls_in_flight_peak,
                stats.ost_requests
            );
            assert!(stats.sync_calls_in_flight_peak <= 1);
        }
    }
}
