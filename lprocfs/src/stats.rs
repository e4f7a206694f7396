//! Lustre's counter files, as its `lprocfs` writes them, for every component that shows one
//! (`obdfilter.*` on a storage server, `osc.*` on a client): the counters and histograms, the
//! `stats` layout (a line per counter: samples, unit, min, max, sum, sum of squares), and the
//! rows of the read and write histogram columns that `brw_stats` and `rpc_stats` print side by
//! side. A pure core: callers tally into these under their own lock; nothing here reads a
//! clock.

use std::time::{Duration, SystemTime};

/// Lustre's page, the unit of "pages per RPC".
pub const PAGE_BYTES: u64 = 4096;
/// Buckets of a histogram (Lustre's `OBD_HIST_MAX`).
pub const BUCKETS: usize = 32;

/// Read or write: the two columns of `brw_stats` and `rpc_stats`, and an index into a pair of
/// histograms (`[Histogram; 2]`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    /// The read column.
    Read = 0,
    /// The write column.
    Write = 1,
}

/// One counter: samples, and for sizes and times their min, max, sum and sum of squares.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Counter {
    /// Samples taken.
    pub samples: u64,
    /// Smallest value.
    pub min: u64,
    /// Largest value.
    pub max: u64,
    /// Sum of the values.
    pub sum: u64,
    /// Sum of their squares.
    pub sumsq: u128,
}

impl Counter {
    /// Adds a sample.
    pub fn add(&mut self, value: u64) {
        self.min = if self.samples == 0 {
            value
        } else {
            self.min.min(value)
        };
        self.max = self.max.max(value);
        self.samples += 1;
        self.sum = self.sum.saturating_add(value);
        self.sumsq = self
            .sumsq
            .saturating_add(u128::from(value) * u128::from(value));
    }
}

/// How a `stats` file shows one counter.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CounterKind {
    /// Lustre's name (`write_bytes`, `ost_write`).
    pub name: &'static str,
    /// Lustre's unit (`bytes`, `usecs`, `reqs`).
    pub unit: &'static str,
    /// Whether the line shows min, max, sum and sum of squares after the samples (Lustre keeps
    /// them for sizes, times and depths; a plain request count is only its samples).
    pub values: bool,
}

/// A histogram of [`BUCKETS`] buckets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Histogram {
    /// Counts per bucket.
    pub buckets: [u64; BUCKETS],
}

impl Default for Histogram {
    fn default() -> Self {
        Histogram {
            buckets: [0; BUCKETS],
        }
    }
}

impl Histogram {
    /// Counts `value` in the smallest bucket `i` with `2^i >= value` (Lustre's
    /// `lprocfs_oh_tally_log2`; 0 and 1 both land in bucket 0).
    pub fn tally_log2(&mut self, value: u64) {
        let bucket = if value <= 1 {
            0
        } else {
            (64 - (value - 1).leading_zeros()) as usize
        };
        self.buckets[bucket.min(BUCKETS - 1)] += 1;
    }

    /// Counts `value` in bucket `value` (Lustre's `lprocfs_oh_tally`), the last bucket taking
    /// everything above.
    pub fn tally(&mut self, value: u64) {
        self.buckets[(value as usize).min(BUCKETS - 1)] += 1;
    }

    /// Samples counted.
    pub fn total(&self) -> u64 {
        self.buckets.iter().sum()
    }
}

/// Lustre's `secs.nsecs` of a time.
pub fn secs_nsecs(duration: Duration) -> String {
    format!("{}.{:09}", duration.as_secs(), duration.subsec_nanos())
}

/// `time` as a duration since the epoch (zero for a time before it).
fn since_epoch(time: SystemTime) -> Duration {
    time.duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default()
}

/// A `stats` file at `now`, counting since `since`: `snapshot_time`, `start_time`,
/// `elapsed_time`, then a line per counter that has samples, as Lustre's
/// `lprocfs_stats_seq_show` writes it.
pub fn stats_text(
    since: SystemTime,
    now: SystemTime,
    counters: impl IntoIterator<Item = (CounterKind, Counter)>,
) -> String {
    let mut out = String::new();
    for (name, time) in [
        ("snapshot_time", since_epoch(now)),
        ("start_time", since_epoch(since)),
        (
            "elapsed_time",
            now.duration_since(since).unwrap_or_default(),
        ),
    ] {
        out.push_str(&format!("{name:<25} {} secs.nsecs\n", secs_nsecs(time)));
    }
    for (kind, c) in counters {
        if c.samples == 0 {
            continue;
        }
        out.push_str(&format!(
            "{:<25} {} samples [{}]",
            kind.name, c.samples, kind.unit
        ));
        if kind.values {
            out.push_str(&format!(" {} {} {} {}", c.min, c.max, c.sum, c.sumsq));
        }
        out.push('\n');
    }
    out
}

/// The first line of a histogram file (`brw_stats`, `rpc_stats`) at `now`.
pub fn snapshot_line(now: SystemTime) -> String {
    format!(
        "{:<22} {} (secs.nsecs)\n",
        "snapshot_time:",
        secs_nsecs(since_epoch(now))
    )
}

/// `a` as a whole percentage of `b` (Lustre's `pct`).
fn pct(a: u64, b: u64) -> u64 {
    (a * 100).checked_div(b).unwrap_or(0)
}

/// One bucket of a read and a write histogram, side by side, with the percentages Lustre
/// prints beside each count.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HistogramRow {
    /// The bucket's number; each file labels it in its own way.
    pub bucket: usize,
    /// The read column's count in this bucket.
    pub read: u64,
    /// Its percentage of the read column.
    pub read_pct: u64,
    /// The read column's cumulative percentage up to this bucket.
    pub read_cum_pct: u64,
    /// The write column's count in this bucket.
    pub write: u64,
    /// Its percentage of the write column.
    pub write_pct: u64,
    /// The write column's cumulative percentage up to this bucket.
    pub write_cum_pct: u64,
}

/// The rows of a read and write pair of histograms, as Lustre's loops walk them: from the
/// first bucket (or, with `skip_leading_empty`, from the first bucket either column counted, as
/// `brw_stats` does) to the first bucket where both columns have reached their totals. Two
/// empty columns give one row of zeros without `skip_leading_empty` (as `rpc_stats` prints
/// them), none with it.
pub fn histogram_rows(pair: &[Histogram; 2], skip_leading_empty: bool) -> Vec<HistogramRow> {
    let [read, write] = pair;
    let (read_total, write_total) = (read.total(), write.total());
    let (mut read_cum, mut write_cum) = (0, 0);
    let mut rows = Vec::new();
    for bucket in 0..BUCKETS {
        let (r, w) = (read.buckets[bucket], write.buckets[bucket]);
        read_cum += r;
        write_cum += w;
        if skip_leading_empty && read_cum == 0 && write_cum == 0 {
            continue;
        }
        rows.push(HistogramRow {
            bucket,
            read: r,
            read_pct: pct(r, read_total),
            read_cum_pct: pct(read_cum, read_total),
            write: w,
            write_pct: pct(w, write_total),
            write_cum_pct: pct(write_cum, write_total),
        });
        if read_cum == read_total && write_cum == write_total {
            break;
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn log2_buckets_are_lustres() {
        let mut h = Histogram::default();
        for v in [0, 1, 2, 3, 4, 5, 256, 257, 1 << 40] {
            h.tally_log2(v);
        }
        assert_eq!(&h.buckets[..4], &[2, 1, 2, 1], "0,1 | 2 | 3,4 | 5");
        assert_eq!(h.buckets[8], 1, "256 pages");
        assert_eq!(h.buckets[9], 1, "257 rounds up to 512");
        assert_eq!(h.buckets[BUCKETS - 1], 1, "the last bucket takes the rest");
        assert_eq!(h.total(), 9);
        let mut linear = Histogram::default();
        for v in [0, 3, 3, 1000] {
            linear.tally(v);
        }
        assert_eq!(&linear.buckets[..4], &[1, 0, 0, 2]);
        assert_eq!(linear.buckets[BUCKETS - 1], 1);
    }

    #[test]
    fn counters_keep_min_max_sum_and_squares() {
        let mut c = Counter::default();
        for v in [4096, 1 << 20, 4096] {
            c.add(v);
        }
        assert_eq!(c.samples, 3);
        assert_eq!((c.min, c.max, c.sum), (4096, 1 << 20, (1 << 20) + 8192));
        assert_eq!(c.sumsq, 2 * 4096u128 * 4096 + (1u128 << 40));
    }

    #[test]
    fn a_stats_file_lists_counters_with_samples_and_values_only_where_kept() {
        let since = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut bytes = Counter::default();
        bytes.add(4096);
        let mut requests = Counter::default();
        requests.add(0);
        let kind = |name, unit, values| CounterKind { name, unit, values };
        let text = stats_text(
            since,
            since + Duration::from_nanos(1_500_000_001),
            [
                (kind("read_bytes", "bytes", true), bytes),
                (kind("ost_read", "usecs", true), Counter::default()),
                (kind("create", "reqs", false), requests),
            ],
        );
        assert_eq!(
            text,
            "snapshot_time             1700000001.500000001 secs.nsecs\n\
             start_time                1700000000.000000000 secs.nsecs\n\
             elapsed_time              1.500000001 secs.nsecs\n\
             read_bytes                1 samples [bytes] 4096 4096 4096 16777216\n\
             create                    1 samples [reqs]\n"
        );
        assert_eq!(
            snapshot_line(since),
            "snapshot_time:         1700000000.000000000 (secs.nsecs)\n"
        );
    }

    #[test]
    fn histogram_rows_run_to_where_both_columns_are_complete() {
        let mut pair = [Histogram::default(); 2];
        pair[Rw::Write as usize].buckets[2] = 3;
        pair[Rw::Write as usize].buckets[4] = 1;
        pair[Rw::Read as usize].buckets[3] = 2;
        let rows = histogram_rows(&pair, false);
        assert_eq!(rows.len(), 5, "buckets 0 to 4: {rows:?}");
        assert_eq!(
            rows[2],
            HistogramRow {
                bucket: 2,
                read: 0,
                read_pct: 0,
                read_cum_pct: 0,
                write: 3,
                write_pct: 75,
                write_cum_pct: 75,
            }
        );
        assert_eq!((rows[3].read_pct, rows[3].read_cum_pct), (100, 100));
        assert_eq!((rows[4].write_pct, rows[4].write_cum_pct), (25, 100));
        let skipped = histogram_rows(&pair, true);
        assert_eq!(skipped.first().map(|r| r.bucket), Some(2));
        assert_eq!(skipped.len(), 3);
        // Nothing counted: one row of zeros, or none.
        let empty = [Histogram::default(); 2];
        assert_eq!(histogram_rows(&empty, false).len(), 1);
        assert_eq!(histogram_rows(&empty, false)[0].write_cum_pct, 0);
        assert!(histogram_rows(&empty, true).is_empty());
    }
}
