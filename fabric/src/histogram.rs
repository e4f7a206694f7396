//! A latency histogram in atomics: fixed bucket bounds, one `fetch_add` per bucket hit, so
//! every RPC a service executes and every journal commit can be counted on its way, and read
//! at scrape time as Prometheus's cumulative buckets. No clock here: the caller measures.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use iopath_lprocfs::families::HistogramSample;

/// The upper bounds of the buckets, in microseconds: 50 µs to 10 s, about ×2.5 apart — from
/// an in-memory RPC to a commit stuck behind a slow disk. Above the last is `+Inf`.
pub const LATENCY_BOUNDS_US: [u64; 16] = [
    50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 50_000, 100_000, 250_000, 500_000,
    1_000_000, 2_500_000, 10_000_000,
];

/// Counts of durations by bucket, their sum and their number.
#[derive(Debug, Default)]
pub struct LatencyHistogram {
    /// Per bucket, not cumulative; the last is above every bound.
    buckets: [AtomicU64; LATENCY_BOUNDS_US.len() + 1],
    sum_ns: AtomicU64,
    count: AtomicU64,
}

impl LatencyHistogram {
    /// Counts one duration.
    pub fn record(&self, duration: Duration) {
        // In nanoseconds: 50.9 µs is above the 50 µs bound, not in it.
        let ns = u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX);
        let bucket = LATENCY_BOUNDS_US.partition_point(|&bound| bound.saturating_mul(1000) < ns);
        self.buckets[bucket].fetch_add(1, Ordering::Relaxed);
        self.sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.count.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far, as a Prometheus histogram in seconds: cumulative buckets by upper
    /// bound, without `+Inf` (which is `count`). Read while others record, the count may be a little ahead of or
    /// behind the buckets; it is clamped so the buckets never exceed it.
    pub fn snapshot(&self) -> HistogramSample {
        let mut cumulative = 0;
        let mut buckets = Vec::with_capacity(LATENCY_BOUNDS_US.len());
        for (bound, bucket) in LATENCY_BOUNDS_US.iter().zip(&self.buckets) {
            cumulative += bucket.load(Ordering::Relaxed);
            buckets.push((*bound as f64 / 1e6, cumulative));
        }
        cumulative += self.buckets[LATENCY_BOUNDS_US.len()].load(Ordering::Relaxed);
        let count = self.count.load(Ordering::Relaxed).max(cumulative);
        HistogramSample {
            count,
            sum: self.sum_ns.load(Ordering::Relaxed) as f64 / 1e9,
            buckets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn durations_land_in_the_first_bucket_that_holds_them_and_buckets_accumulate() {
        let h = LatencyHistogram::default();
        h.record(Duration::from_micros(50)); // on the first bound: in it
        h.record(Duration::from_nanos(50_900)); // just above: the second
        h.record(Duration::from_millis(3)); // 2.5 ms < 3 ms <= 5 ms
        h.record(Duration::from_secs(60)); // above every bound: only +Inf
        let s = h.snapshot();
        assert_eq!(s.count, 4);
        assert_eq!(s.buckets[0], (0.00005, 1));
        assert_eq!(s.buckets[1], (0.0001, 2));
        assert_eq!(s.buckets[5], (0.0025, 2));
        assert_eq!(s.buckets[6], (0.005, 3));
        assert_eq!(s.buckets.last().unwrap(), &(10.0, 3));
        assert!((s.sum - 60.003_100_9).abs() < 1e-9, "{}", s.sum);
        // Cumulative: never decreasing, never above the count.
        assert!(s.buckets.windows(2).all(|w| w[0].1 <= w[1].1));
    }
}
