//! The whole path's suite again with every server a process on loopback TCP: round trips over
//! the layouts, 64 compute nodes through 4 fyods (a file each, and one shared file), MUNIX
//! writes never torn, synchronous calls one at a time at each fyod (counted by the fyods),
//! and a storage server killed and restarted mid-run with async commits, after which every
//! acknowledged byte reads back. The in-process versions of these live beside the client and
//! the forwarder; here the bytes cross real sockets between real processes. (IOR's tasks
//! ending just before both storage servers are killed is in `bench/tests/processes.rs`.)

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use iopath_client::{Client, File, IoMode, StripeRequest};

use iopath_stack::schema::StackFile;
use iopath_stack::testing::processes::{client, commits_only_when_forced, launcher, preset, start};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

type Outcome = Result<(), String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

/// The byte at file offset `offset` of data made with `seed`.
fn byte_at(seed: u64, offset: u64) -> u8 {
    (offset
        .wrapping_mul(0x9E37_79B9_7F4A_7C15)
        .wrapping_add(seed)
        >> 56) as u8
}

fn bytes(seed: u64, offset: u64, len: u64) -> Bytes {
    (offset..offset + len).map(|o| byte_at(seed, o)).collect()
}

/// Compares `got` with what `seed` wrote at `offset`; names the first difference.
fn same(what: &str, got: &[u8], seed: u64, offset: u64, len: u64) -> Outcome {
    if got.len() as u64 != len {
        return Err(format!("{what}: {} bytes read, {len} expected", got.len()));
    }
    match (0..len).find(|&i| got[i as usize] != byte_at(seed, offset + i)) {
        None => Ok(()),
        Some(i) => Err(format!(
            "{what}: first wrong byte at file offset {}",
            offset + i
        )),
    }
}

fn stripe(size: u64, count: i64) -> StripeRequest {
    StripeRequest {
        stripe_size_bytes: size,
        stripe_count: count,
        stripe_offset: -1,
    }
}

/// Files of 0 bytes to 16 MiB, at offsets that leave a hole in front, over stripe counts 1,
/// 2 and all and stripe sizes 64 KiB to 4 MiB — through fyods (asci-red-mini, PFS) and
/// direct-attached (spider-mini) — written by one compute node, read by another.
pub async fn round_trips() -> Outcome {
    for name in ["asci-red-mini", "spider-mini"] {
        let running = start(&preset(name)?, "test-suite-rt").await?;
        let writer = client(&running, 0).await?;
        let reader = client(&running, 7).await?;
        writer.mkdir("/rt").await.map_err(err)?;
        let layouts = [(64 * KIB, 1), (MIB, 2), (4 * MIB, -1)];
        let extents = [
            (0, 0),
            (0, 1),
            (12_345, 3 * MIB + 4097),
            (5 * MIB, 16 * MIB),
        ];
        for (i, &(size, count)) in layouts.iter().enumerate() {
            for (j, &(offset, len)) in extents.iter().enumerate() {
                let path = format!("/rt/f{i}.{j}");
                let seed = (i * 10 + j) as u64;
                let file = writer
                    .create(&path, stripe(size, count))
                    .await
                    .map_err(err)?;
                if len > 0 {
                    file.write_at(offset, bytes(seed, offset, len))
                        .await
                        .map_err(err)?;
                }
                file.close().await.map_err(err)?;
                let end = if len == 0 { 0 } else { offset + len };
                let back = reader.open(&path).await.map_err(err)?;
                let size_seen = back.size().await.map_err(err)?;
                if size_seen != end {
                    return Err(format!("{name} {path}: size {size_seen}, {end} expected"));
                }
                let data = back.read_at(0, end + MIB).await.map_err(err)?;
                if data.len() as u64 != end {
                    return Err(format!("{name} {path}: read {} bytes of {end}", data.len()));
                }
                let (hole, written) = data.split_at(offset.min(end) as usize);
                if hole.iter().any(|&b| b != 0) {
                    return Err(format!("{name} {path}: the hole does not read as zeros"));
                }
                same(&format!("{name} {path}"), written, seed, offset, len)?;
                back.close().await.map_err(err)?;
            }
        }
        running.stop().await.map_err(err)?;
    }
    Ok(())
}

/// asci-red-mini grown to 64 compute nodes and 4 fyods.
fn sixty_four_through_four() -> Result<StackFile, String> {
    let mut file = preset("asci-red-mini")?;
    for (name, count) in [("c", 64), ("fyod", 4)] {
        let node = file
            .node_mut(name)
            .ok_or_else(|| format!("asci-red-mini has no node {name} any more"))?;
        node.count = Some(count);
    }
    Ok(file)
}

/// Words naming their writer and round, to tell whole writes from torn ones.
fn stamped(writer: u16, round: u16, len: u64) -> Bytes {
    let word = (u64::from(writer) << 16 | u64::from(round)).to_le_bytes();
    (0..len / 8).flat_map(|_| word).collect()
}

fn writers_of(data: &[u8]) -> Vec<u64> {
    data.chunks_exact(8)
        .map(|w| u64::from_le_bytes(w.try_into().expect("8 bytes")))
        .collect()
}

/// 64 compute nodes through 4 fyods (PFS): a file each, then one shared file in sections,
/// every byte read back by another node; each fyod served its synchronous calls one at a time
/// (its own count); then MUNIX writers on every fyod overwrite one striped region, and every
/// read sees one whole write.
pub async fn sixty_four_nodes_through_four_fyods() -> Outcome {
    let running = start(&sixty_four_through_four()?, "test-suite-64").await?;
    let mut clients = Vec::new();
    for index in 0..64 {
        clients.push(Arc::new(client(&running, index).await?));
    }
    clients[0].mkdir("/fpp").await.map_err(err)?;
    let shared = clients[0]
        .create("/shared", stripe(MIB, -1))
        .await
        .map_err(err)?;
    shared.close().await.map_err(err)?;

    let mut tasks = tokio::task::JoinSet::new();
    for (rank, c) in clients.iter().enumerate() {
        let c = Arc::clone(c);
        tasks.spawn(async move {
            let rank = rank as u64;
            let file = c
                .create(&format!("/fpp/f{rank}"), stripe(MIB, -1))
                .await
                .map_err(err)?;
            for k in 0..2 {
                // write_at: a synchronous call, which the fyod serves one at a time.
                file.write_at(k * MIB, bytes(rank, k * MIB, MIB))
                    .await
                    .map_err(err)?;
            }
            file.close().await.map_err(err)?;
            let section = 256 * KIB;
            let shared = c.open("/shared").await.map_err(err)?;
            shared
                .write_at(rank * section, bytes(1000, rank * section, section))
                .await
                .map_err(err)?;
            shared.close().await.map_err(err)
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(err)??;
    }
    for rank in 0..64u64 {
        let reader = &clients[((rank + 17) % 64) as usize];
        let file = reader.open(&format!("/fpp/f{rank}")).await.map_err(err)?;
        let data = file.read_at(0, 2 * MIB).await.map_err(err)?;
        same(&format!("/fpp/f{rank}"), &data, rank, 0, 2 * MIB)?;
    }
    let whole = clients[63].open("/shared").await.map_err(err)?;
    let data = whole.read_at(0, 64 * 256 * KIB).await.map_err(err)?;
    same("/shared", &data, 1000, 0, 64 * 256 * KIB)?;

    // Each fyod's own count of synchronous calls at once. Clients 0, 16, 32 and 48 are on
    // the four fyods (a block of 16 each).
    let mut waited = 0;
    for first in [0, 16, 32, 48] {
        let fyod = clients[first].fyod().ok_or("a client without a fyod")?;
        let stats = fyod.stats().await.map_err(err)?;
        if stats.sync_calls_in_flight_peak != 1 {
            return Err(format!("a fyod ran synchronous calls at once: {stats:?}"));
        }
        waited += stats.sync_calls_waiting_peak;
    }
    if waited == 0 {
        return Err("no synchronous call ever waited for another at any fyod".into());
    }

    // MUNIX: eight writers across the four fyods overwrite the same four stripes.
    let region = 4 * MIB;
    let hot = clients[0]
        .create("/hot", stripe(MIB, -1))
        .await
        .map_err(err)?;
    hot.close().await.map_err(err)?;
    let mut tasks = tokio::task::JoinSet::new();
    for w in 0..8u16 {
        let c = Arc::clone(&clients[usize::from(w) * 8]);
        tasks.spawn(async move {
            c.set_io_mode(IoMode::Munix);
            let file = c.open("/hot").await.map_err(err)?;
            for round in 0..3u16 {
                let handle = file.iwrite(0, stamped(w + 1, round, region));
                file.iowait(handle).await.map_err(err)?;
                let seen = writers_of(&file.read_at(0, region).await.map_err(err)?);
                if seen.iter().any(|x| *x != seen[0]) {
                    return Err(format!("writer {w}: a MUNIX read saw a torn write"));
                }
            }
            file.close().await.map_err(err)
        });
    }
    while let Some(done) = tasks.join_next().await {
        done.map_err(err)??;
    }
    running.stop().await.map_err(err)
}

/// A storage server of spider-mini (direct-attached, async journals) is killed while four
/// compute nodes write and is started again on the same addresses and disk: the clients
/// replay what they kept and resend what was lost in flight, and every acknowledged byte
/// reads back, by its writer and by a node that never saw the crash.
pub async fn a_storage_server_killed_mid_run() -> Outcome {
    // No commit by time: what the kill finds uncommitted is what the clients must replay.
    let mut running = start(&commits_only_when_forced()?, "test-suite-crash").await?;
    let writers = 4u64;
    let calls = 16u64;
    let mut files: Vec<Arc<File>> = Vec::new();
    let mut clients = Vec::new();
    for rank in 0..writers {
        let c = client(&running, rank as usize).await?;
        let file = c
            .create(&format!("/r{rank}"), stripe(MIB, -1))
            .await
            .map_err(err)?;
        files.push(Arc::new(file));
        clients.push(c);
    }
    let acknowledged = Arc::new(AtomicU64::new(0));
    let mut tasks = tokio::task::JoinSet::new();
    for (rank, file) in files.iter().enumerate() {
        let (file, acknowledged) = (Arc::clone(file), Arc::clone(&acknowledged));
        tasks.spawn(async move {
            let seed = rank as u64;
            for c in 0..calls {
                file.write_at(c * MIB, bytes(seed, c * MIB, MIB))
                    .await
                    .map_err(|e| format!("/r{rank} call {c}: {e}"))?;
                acknowledged.fetch_add(1, Ordering::Relaxed);
            }
            Ok::<(), String>(())
        });
    }
    // Bounded wait for the run to be under way, then the crash.
    for _ in 0..1000 {
        if acknowledged.load(Ordering::Relaxed) >= writers * 3 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let kept: u64 = clients.iter().map(Client::kept_bytes).sum();
    if kept == 0 {
        return Err("nothing acknowledged and uncommitted was kept before the crash".into());
    }
    running.crash_node("oss0").await.map_err(err)?;
    tokio::time::sleep(Duration::from_millis(200)).await;
    running
        .restart_node("oss0", &launcher()?)
        .await
        .map_err(err)?;
    while let Some(done) = tasks.join_next().await {
        done.map_err(err)??;
    }
    let fresh = client(&running, 7).await?;
    for (rank, file) in files.iter().enumerate() {
        let seed = rank as u64;
        let data = file.read_at(0, calls * MIB).await.map_err(err)?;
        same(
            &format!("/r{rank} by its writer"),
            &data,
            seed,
            0,
            calls * MIB,
        )?;
        let other = fresh.open(&format!("/r{rank}")).await.map_err(err)?;
        let data = other.read_at(0, calls * MIB).await.map_err(err)?;
        same(
            &format!("/r{rank} by another node"),
            &data,
            seed,
            0,
            calls * MIB,
        )?;
    }
    for file in &files {
        file.fsync().await.map_err(err)?;
    }
    let kept: u64 = clients.iter().map(Client::kept_bytes).sum();
    if kept != 0 {
        return Err(format!("{kept} bytes still kept after fsync"));
    }
    drop(files);
    running.stop().await.map_err(err)
}
