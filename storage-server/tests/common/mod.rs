//! Helpers shared by the storage-server integration tests.
#![allow(dead_code)] // each test file uses a different subset
#![allow(clippy::unwrap_used)] // test helpers: a panic is a failed test

use bytes::Bytes;
use iopath_storage_server::engine::aligned::AlignedBuf;
use iopath_storage_server::engine::faulty::FaultyEngine;
use iopath_storage_server::engine::{DiskEngine, EngineConfig, EngineKind, open_engine};
use iopath_storage_server::ost::{Ost, OstConfig, OstEngines};
use std::path::Path;
use std::sync::Arc;

/// A target config in `dir` with small limits and a commit interval no test waits for.
pub fn config(dir: &Path, sync: bool) -> OstConfig {
    let mut config = OstConfig::new(0, dir.join("ost0"));
    config.sync_journal = sync;
    config.commit_interval_ms = 3_600_000;
    config.group_records_max = 1000;
    config.uncommitted_records_max = 1000;
    config.object_size_max_bytes = 1 << 20;
    config.io_size_max_bytes = 256 << 10;
    config.objects_max = 16;
    config
}

pub fn uring() -> Arc<dyn DiskEngine> {
    open_engine(&EngineConfig::default())
}

pub fn psync() -> Arc<dyn DiskEngine> {
    open_engine(&EngineConfig {
        kind: EngineKind::Psync,
        ..Default::default()
    })
}

pub async fn open(config: OstConfig) -> Ost {
    Ost::open(config, OstEngines::shared(uring()))
        .await
        .unwrap()
}

pub async fn open_faulty(config: OstConfig) -> (Ost, Arc<FaultyEngine>) {
    let faulty = Arc::new(FaultyEngine::new(uring()));
    let ost = Ost::open(config, OstEngines::shared(faulty.clone()))
        .await
        .unwrap();
    (ost, faulty)
}

/// `len` aligned bytes (so writes go O_DIRECT), all `seed`-derived.
pub fn block(seed: u8, len: usize) -> Bytes {
    let mut buf = AlignedBuf::zeroed(len);
    for (i, byte) in buf.as_mut_slice().iter_mut().enumerate() {
        *byte = seed.wrapping_mul(31).wrapping_add((i % 253) as u8);
    }
    buf.into_bytes()
}

/// A seed for a test, printed so a failure can be reproduced: `IOPATH_SEED` or the clock.
pub fn seed() -> u64 {
    let seed = std::env::var("IOPATH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("seed: {seed} (rerun with IOPATH_SEED={seed})");
    seed
}

/// A small deterministic generator (xorshift64*), enough to pick offsets and crash points.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.max(1))
    }

    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}
