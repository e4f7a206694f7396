//! Many seeds at once: a range of seeds cut into blocks that worker threads take in turn,
//! each seed on a one-thread runtime of its own, so a run of a million seeds uses every core
//! and a block that is done can be recorded — a run stopped part way (Ctrl-C, a time limit)
//! resumes from the blocks it had not finished. Which blocks were done, and what they found,
//! is the caller's to keep ([`BlockDone`]); this module only runs.
//!
//! Seeds are independent: one seed's run draws everything from its own number, on its own
//! runtime and paused clock, so running them side by side changes no seed's run (the suite
//! runs its seed tests in parallel threads too).

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Range;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use crate::run::add_counts;
use crate::{SeedReport, SimConfig, run_seed};

/// Seeds per block by default: about ten seconds of one core's work, so a stopped run loses
/// little and the record of blocks stays small (2,000 lines for a million seeds).
pub const BLOCK_SEEDS_DEFAULT: u64 = 500;

/// A range of seeds and how to cut and share it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Sweep {
    /// The first seed.
    pub first: u64,
    /// How many seeds.
    pub seeds: u64,
    /// Worker threads (at least one).
    pub jobs: usize,
    /// Seeds per block (at least one).
    pub block_seeds: u64,
    /// Run the seeds with their logs off: a sweep reports what the oracle finds, and the
    /// nodes of a million seeds log every crash and partition they were told to have.
    pub quiet: bool,
}

/// What one block of seeds found.
#[derive(Debug, Clone)]
pub struct BlockDone {
    /// The block's seeds.
    pub seeds: Range<u64>,
    /// The seeds that failed, with what the oracle found.
    pub failed: Vec<SeedReport>,
    /// Seeds whose run panicked (a bug in the simulation or the code under it).
    pub panicked: Vec<u64>,
    /// Events by kind over the block's seeds: faults injected, crashes, operations.
    pub counts: BTreeMap<&'static str, u64>,
    /// The block's seeds' event digests folded in seed order: the same code gives the same
    /// digest, in any process and on any number of threads — two runs of a range, or a change
    /// meant to alter nothing, compare by it.
    pub digest: u64,
    /// Simulated time over the block's seeds.
    pub simulated: Duration,
    /// Wall time the block took on its worker.
    pub wall: Duration,
}

impl BlockDone {
    /// The failing seeds, panicked ones included, in order.
    pub fn failing_seeds(&self) -> Vec<u64> {
        let mut seeds: Vec<u64> = self.failed.iter().map(|r| r.seed).collect();
        seeds.extend(&self.panicked);
        seeds.sort_unstable();
        seeds
    }
}

impl Sweep {
    /// The blocks, in order: each starts at `first + k × block_seeds`, the last may be short.
    pub fn blocks(&self) -> Vec<Range<u64>> {
        let block = self.block_seeds.max(1);
        let end = self.first.saturating_add(self.seeds);
        let mut blocks = Vec::new();
        let mut start = self.first;
        while start < end {
            let stop = start.saturating_add(block).min(end);
            blocks.push(start..stop);
            start = stop;
        }
        blocks
    }

    /// Runs every block whose start is not in `done`, on `jobs` threads, calling `on_block`
    /// (from the worker that ran it) as each ends. Workers stop taking blocks once `stop` is
    /// set; a block under way then ends after its current seed and is not reported — it was
    /// not done. Returns once every worker has stopped.
    pub fn run(
        &self,
        config: &SimConfig,
        done: &BTreeSet<u64>,
        stop: &AtomicBool,
        on_block: &(dyn Fn(BlockDone) + Sync),
    ) {
        let todo: Vec<Range<u64>> = self
            .blocks()
            .into_iter()
            .filter(|block| !done.contains(&block.start))
            .collect();
        let next = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for _ in 0..self.jobs.max(1).min(todo.len().max(1)) {
                scope.spawn(|| {
                    loop {
                        if stop.load(Ordering::Relaxed) {
                            return;
                        }
                        let Some(block) = todo.get(next.fetch_add(1, Ordering::Relaxed)) else {
                            return;
                        };
                        let ran = if self.quiet {
                            let off = tracing::subscriber::NoSubscriber::default();
                            tracing::subscriber::with_default(off, || {
                                run_block(block.clone(), config, stop)
                            })
                        } else {
                            run_block(block.clone(), config, stop)
                        };
                        match ran {
                            Some(done) => on_block(done),
                            None => return,
                        }
                    }
                });
            }
        });
    }
}

/// Runs one block's seeds; `None` if `stop` was set before the last.
fn run_block(seeds: Range<u64>, config: &SimConfig, stop: &AtomicBool) -> Option<BlockDone> {
    let started = Instant::now();
    let mut block = BlockDone {
        seeds: seeds.clone(),
        failed: Vec::new(),
        panicked: Vec::new(),
        counts: BTreeMap::new(),
        digest: 0,
        simulated: Duration::ZERO,
        wall: Duration::ZERO,
    };
    for seed in seeds {
        if stop.load(Ordering::Relaxed) {
            return None;
        }
        // A panic is a finding like any other: the seed fails, the block goes on.
        match std::panic::catch_unwind(|| run_seed(seed, config)) {
            Ok(report) => {
                block.digest = fold_digest(block.digest, report.digest);
                add_counts(&mut block.counts, &report.events);
                block.simulated += report.simulated;
                if !report.passed() {
                    block.failed.push(report);
                }
            }
            Err(_) => {
                block.digest = fold_digest(block.digest, u64::MAX);
                block.panicked.push(seed);
            }
        }
    }
    block.wall = started.elapsed();
    Some(block)
}

/// `digest` with one more seed's folded in (order matters: a rotate, then a multiply).
fn fold_digest(digest: u64, seed_digest: u64) -> u64 {
    (digest.rotate_left(5) ^ seed_digest).wrapping_mul(0x0000_0100_0000_01b3)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Mutex;

    #[test]
    fn blocks_cover_the_range_once_and_the_last_may_be_short() {
        let sweep = Sweep {
            first: 10,
            seeds: 25,
            jobs: 3,
            block_seeds: 10,
            quiet: true,
        };
        assert_eq!(sweep.blocks(), vec![10..20, 20..30, 30..35]);
        let empty = Sweep { seeds: 0, ..sweep };
        assert!(empty.blocks().is_empty());
        let at_the_end = Sweep {
            first: u64::MAX - 3,
            seeds: 10,
            ..sweep
        };
        assert_eq!(at_the_end.blocks(), vec![u64::MAX - 3..u64::MAX]);
    }

    #[test]
    fn every_block_not_done_runs_once_over_the_workers() {
        let sweep = Sweep {
            first: 0,
            seeds: 6,
            jobs: 2,
            block_seeds: 2,
            quiet: true,
        };
        let config = SimConfig {
            ops_per_client: 2,
            other_roles: false,
            ..SimConfig::default()
        };
        let seen = Mutex::new(Vec::new());
        let done = BTreeSet::from([2]);
        sweep.run(&config, &done, &AtomicBool::new(false), &|block| {
            assert!(block.failed.is_empty(), "{:?}", block.failed);
            assert!(block.counts.get("write_ok").is_some_and(|&n| n > 0));
            seen.lock().unwrap().push((block.seeds, block.digest));
        });
        let mut seen = seen.into_inner().unwrap();
        seen.sort_by_key(|(block, _)| block.start);
        let blocks: Vec<_> = seen.iter().map(|(b, _)| b.clone()).collect();
        assert_eq!(blocks, vec![0..2, 4..6], "block 2..4 was done before");
        // The same seeds on one thread give the same digests.
        let again = Mutex::new(Vec::new());
        let one = Sweep { jobs: 1, ..sweep };
        one.run(&config, &done, &AtomicBool::new(false), &|block| {
            again.lock().unwrap().push((block.seeds, block.digest));
        });
        assert_eq!(again.into_inner().unwrap(), seen);
        // Stopped before it starts: nothing runs.
        let stopped = Mutex::new(0);
        sweep.run(&config, &BTreeSet::new(), &AtomicBool::new(true), &|_| {
            *stopped.lock().unwrap() += 1;
        });
        assert_eq!(*stopped.lock().unwrap(), 0);
    }
}
