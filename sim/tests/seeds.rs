//! The simulation in the suite: a bounded set of seeds (or the one `IOPATH_SEED` names, with
//! its events printed), the same events from one seed run twice, and a planted bug caught.

use std::collections::BTreeMap;
use std::sync::Arc;

use bytes::Bytes;
use iopath_sim::run::add_counts;
use iopath_sim::{SimConfig, run_seed, seed_from_env};
use iopath_storage_server::engine::{
    DiskEngine, EngineFile, EngineFuture, FileRole, SyncKind, WriteDone,
};

/// Seeds the suite runs: 50 per test, four tests, so the test runner can spread them.
const SEEDS_PER_TEST: u64 = 50;

/// Runs the seeds of `range` (or only `IOPATH_SEED`, when set, with its events printed) and
/// fails naming every failing seed and how to replay it.
fn run_seeds(range: std::ops::Range<u64>) {
    let only = seed_from_env().expect("IOPATH_SEED");
    let config = SimConfig {
        keep_events: only.is_some(),
        ..SimConfig::default()
    };
    let seeds: Vec<u64> = only.map_or_else(|| range.collect(), |seed| vec![seed]);
    let mut failed = Vec::new();
    let mut counts = BTreeMap::new();
    for seed in seeds {
        let report = run_seed(seed, &config);
        for line in &report.lines {
            eprintln!("  {line}");
        }
        add_counts(&mut counts, &report.events);
        if !report.passed() {
            eprintln!("{report}");
            failed.push(report.seed);
        }
    }
    eprintln!("events: {counts:?}");
    assert!(
        failed.is_empty(),
        "failing seeds: {failed:?}; replay one with IOPATH_SEED=N"
    );
}

#[test]
fn seeds_0_to_49_keep_every_acknowledged_write() {
    run_seeds(0..SEEDS_PER_TEST);
}

#[test]
fn seeds_50_to_99_keep_every_acknowledged_write() {
    run_seeds(SEEDS_PER_TEST..2 * SEEDS_PER_TEST);
}

#[test]
fn seeds_100_to_149_keep_every_acknowledged_write() {
    run_seeds(2 * SEEDS_PER_TEST..3 * SEEDS_PER_TEST);
}

#[test]
fn seeds_150_to_199_keep_every_acknowledged_write() {
    run_seeds(3 * SEEDS_PER_TEST..4 * SEEDS_PER_TEST);
}

/// Seeds past the suite's range that found bugs (docs/simulation.md, "Findings"): each
/// failed until its fix, and is kept as a regression test of the whole path.
const FOUND_PAST_THE_SUITE: [u64; 8] = [1234, 1338, 1412, 2019, 2224, 4247, 7587, 7678];

#[test]
fn seeds_that_found_bugs_past_the_suite_keep_every_acknowledged_write() {
    for seed in FOUND_PAST_THE_SUITE {
        run_seeds(seed..seed + 1);
    }
}

#[test]
fn one_seed_run_twice_does_the_same_things_at_the_same_times() {
    let config = SimConfig {
        keep_events: true,
        ..SimConfig::default()
    };
    for seed in [3, 17, 4242] {
        let first = run_seed(seed, &config);
        let second = run_seed(seed, &config);
        assert!(first.passed(), "{first}");
        let faults: u64 = ["drop", "delay", "bit_flip", "partition", "server_crash"]
            .iter()
            .filter_map(|kind| first.events.get(kind))
            .sum();
        assert!(
            faults > 0,
            "seed {seed} injected no faults: {:?}",
            first.events
        );
        if first.digest != second.digest {
            let diverged = first
                .lines
                .iter()
                .zip(&second.lines)
                .position(|(a, b)| a != b)
                .unwrap_or(first.lines.len().min(second.lines.len()));
            panic!(
                "seed {seed} diverged at event {diverged}:\n  first:  {:?}\n  second: {:?}",
                first.lines.get(diverged),
                second.lines.get(diverged)
            );
        }
        assert_eq!(first.lines, second.lines);
    }
}

/// A planted bug: a disk that acknowledges every fourth data write without writing it.
#[derive(Debug)]
struct ForgetfulEngine {
    inner: Arc<dyn DiskEngine>,
    writes: std::sync::atomic::AtomicU64,
}

impl DiskEngine for ForgetfulEngine {
    fn name(&self) -> String {
        format!("forgetful({})", self.inner.name())
    }

    fn write_at(
        &self,
        file: &Arc<EngineFile>,
        offset: u64,
        data: Bytes,
    ) -> EngineFuture<WriteDone> {
        let n = self
            .writes
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        if file.role() == FileRole::Data && n % 4 == 3 {
            return Box::pin(std::future::ready(Ok(WriteDone { direct: false })));
        }
        self.inner.write_at(file, offset, data)
    }

    fn read_at(&self, file: &Arc<EngineFile>, offset: u64, length: usize) -> EngineFuture<Bytes> {
        self.inner.read_at(file, offset, length)
    }

    fn fsync(&self, file: &Arc<EngineFile>, kind: SyncKind) -> EngineFuture<()> {
        self.inner.fsync(file, kind)
    }

    fn truncate(&self, file: &Arc<EngineFile>, size_bytes: u64) -> EngineFuture<()> {
        self.inner.truncate(file, size_bytes)
    }

    fn allocate(&self, file: &Arc<EngineFile>, offset: u64, length: u64) -> EngineFuture<()> {
        self.inner.allocate(file, offset, length)
    }

    fn runs_inline(&self) -> bool {
        self.inner.runs_inline()
    }
}

fn forgetful(inner: Arc<dyn DiskEngine>) -> Arc<dyn DiskEngine> {
    Arc::new(ForgetfulEngine {
        inner,
        writes: Default::default(),
    })
}

#[test]
fn a_disk_that_acknowledges_writes_it_never_made_is_caught() {
    let config = SimConfig {
        engine_wrap: Some(forgetful),
        ..SimConfig::default()
    };
    let reports: Vec<_> = (0..5).map(|seed| run_seed(seed, &config)).collect();
    for report in &reports {
        assert!(
            !report.passed(),
            "seed {} missed the planted bug",
            report.seed
        );
    }
    let failure = &reports[0].failures[0];
    assert!(
        failure.contains("expected acknowledged write"),
        "the oracle names the lost write: {failure}"
    );
    assert!(
        reports[0].to_string().contains("IOPATH_SEED=0"),
        "{}",
        reports[0]
    );
}
