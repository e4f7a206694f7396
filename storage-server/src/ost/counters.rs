//! A target's operation counters and I/O histograms, and their text in Lustre's layouts: the
//! `obdfilter.*.stats` file (a line per counter: samples, unit, min, max, sum, sum of squares)
//! and `obdfilter.*.brw_stats` (read and write histograms side by side: pages per bulk RPC,
//! discontiguous pages, disk I/Os in flight, I/O time, disk I/O size). A pure core: the target
//! tallies into it under a lock; nothing here reads a clock.

use std::time::{Duration, SystemTime};

/// Lustre's page, the unit of "pages per bulk".
pub const PAGE_BYTES: u64 = 4096;
/// Buckets of a histogram (Lustre's `OBD_HIST_MAX`).
pub const BUCKETS: usize = 32;

/// The operations a target counts, with Lustre's names and units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Op {
    /// Bytes per read (`read_bytes`, `[bytes]`).
    ReadBytes,
    /// Bytes per write (`write_bytes`, `[bytes]`).
    WriteBytes,
    /// A read's time at the target, arrival to reply (`read`, `[usecs]`).
    Read,
    /// A write's time at the target, arrival to reply — in sync mode the commit is in it
    /// (`write`, `[usecs]`).
    Write,
    /// Objects created (`create`, `[reqs]`).
    Create,
    /// Objects destroyed (`destroy`, `[reqs]`).
    Destroy,
    /// Truncates (`punch`, `[reqs]`).
    Punch,
    /// Commits asked for (`sync`, `[reqs]`).
    Sync,
    /// Attribute reads (`getattr`, `[reqs]`).
    Getattr,
    /// Capacity queries (`statfs`, `[reqs]`).
    Statfs,
}

impl Op {
    /// Every operation, in the order the stats file lists them.
    pub const ALL: [Op; 10] = [
        Op::ReadBytes,
        Op::WriteBytes,
        Op::Read,
        Op::Write,
        Op::Create,
        Op::Destroy,
        Op::Punch,
        Op::Sync,
        Op::Getattr,
        Op::Statfs,
    ];

    /// Lustre's name.
    pub fn name(self) -> &'static str {
        match self {
            Op::ReadBytes => "read_bytes",
            Op::WriteBytes => "write_bytes",
            Op::Read => "read",
            Op::Write => "write",
            Op::Create => "create",
            Op::Destroy => "destroy",
            Op::Punch => "punch",
            Op::Sync => "sync",
            Op::Getattr => "getattr",
            Op::Statfs => "statfs",
        }
    }

    /// Lustre's unit.
    pub fn unit(self) -> &'static str {
        match self {
            Op::ReadBytes | Op::WriteBytes => "bytes",
            Op::Read | Op::Write => "usecs",
            _ => "reqs",
        }
    }

    /// Whether the counter keeps min, max, sum and sum of squares (Lustre prints them for
    /// sizes and times; a request count is only its samples).
    fn has_values(self) -> bool {
        self.unit() != "reqs"
    }
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

/// Read or write, the two columns of brw_stats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Rw {
    /// The read column.
    Read = 0,
    /// The write column.
    Write = 1,
}

/// brw_stats' histograms, each a read and a write column.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct BrwStats {
    /// Pages (4 KiB, rounded up) per bulk RPC, log2 buckets.
    pub pages_per_bulk: [Histogram; 2],
    /// Disk I/Os under way on the target when one starts, itself included.
    pub in_flight: [Histogram; 2],
    /// Each disk I/O's time, milliseconds, log2 buckets.
    pub io_time_ms: [Histogram; 2],
    /// Each disk I/O's size, bytes, log2 buckets.
    pub io_size: [Histogram; 2],
}

/// A counter per operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpCounters([Counter; Op::ALL.len()]);

impl Default for OpCounters {
    fn default() -> Self {
        OpCounters([Counter::default(); Op::ALL.len()])
    }
}

impl OpCounters {
    /// Counts one `op`, with its value (bytes or microseconds; ignored for request counts).
    pub fn count(&mut self, op: Op, value: u64) {
        self.0[op as usize].add(value);
    }

    /// The counter of `op`.
    pub fn counter(&self, op: Op) -> Counter {
        self.0[op as usize]
    }
}

/// A target's counters since it started or was last cleared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetCounters {
    /// When counting began.
    pub since: SystemTime,
    ops: OpCounters,
    /// The I/O histograms.
    pub brw: BrwStats,
}

impl TargetCounters {
    /// Counters from zero, counting from `since`.
    pub fn new(since: SystemTime) -> TargetCounters {
        TargetCounters {
            since,
            ops: OpCounters::default(),
            brw: BrwStats::default(),
        }
    }

    /// Counts one `op`, with its value (bytes or microseconds; ignored for request counts).
    pub fn count(&mut self, op: Op, value: u64) {
        self.ops.count(op, value);
    }

    /// The counter of `op`.
    pub fn counter(&self, op: Op) -> Counter {
        self.ops.counter(op)
    }

    /// Tallies one bulk RPC of `bytes` in brw_stats' per-RPC histograms.
    pub fn bulk(&mut self, rw: Rw, bytes: u64) {
        let r = rw as usize;
        self.brw.pages_per_bulk[r].tally_log2(bytes.div_ceil(PAGE_BYTES));
    }

    /// Tallies one disk I/O of `bytes` that took `time`, started with `in_flight` disk I/Os
    /// under way (itself included).
    pub fn disk_io(&mut self, rw: Rw, bytes: u64, time: Duration, in_flight: u64) {
        let r = rw as usize;
        self.brw.io_size[r].tally_log2(bytes);
        self.brw.io_time_ms[r].tally_log2(time.as_millis() as u64);
        self.brw.in_flight[r].tally(in_flight);
    }
}

/// A target's counters: the operation counters since it started, which only grow (what
/// `/metrics` exports: a Prometheus counter must never go back), and everything since the last
/// clear (what `obdfilter.*.stats` and `brw_stats` show; writing `clear` starts them again, as
/// in Lustre).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Tallies {
    /// The operation counters since the target started.
    pub since_start: OpCounters,
    /// Since the last clear.
    pub since_clear: TargetCounters,
}

impl Tallies {
    /// Both from zero, from `now`.
    pub fn new(now: SystemTime) -> Tallies {
        Tallies {
            since_start: OpCounters::default(),
            since_clear: TargetCounters::new(now),
        }
    }

    /// [`TargetCounters::count`] in both.
    pub fn count(&mut self, op: Op, value: u64) {
        self.since_start.count(op, value);
        self.since_clear.count(op, value);
    }

    /// [`TargetCounters::bulk`] (brw_stats are since the clear only).
    pub fn bulk(&mut self, rw: Rw, bytes: u64) {
        self.since_clear.bulk(rw, bytes);
    }

    /// [`TargetCounters::disk_io`] (brw_stats are since the clear only).
    pub fn disk_io(&mut self, rw: Rw, bytes: u64, time: Duration, in_flight: u64) {
        self.since_clear.disk_io(rw, bytes, time, in_flight);
    }

    /// Starts the since-clear counters again from zero, at `now`.
    pub fn clear(&mut self, now: SystemTime) {
        self.since_clear = TargetCounters::new(now);
    }
}

/// Lustre's `secs.nsecs` of a time.
fn secs_nsecs(duration: Duration) -> String {
    format!("{}.{:09}", duration.as_secs(), duration.subsec_nanos())
}

/// The `stats` file at `now`: `snapshot_time`, `start_time`, `elapsed_time`, then a line per
/// counter with samples, as Lustre's `lprocfs_stats_seq_show` writes it.
pub fn stats_text(counters: &TargetCounters, now: SystemTime) -> String {
    let epoch = |t: SystemTime| t.duration_since(SystemTime::UNIX_EPOCH).unwrap_or_default();
    let mut out = format!(
        "{:<25} {} secs.nsecs\n",
        "snapshot_time",
        secs_nsecs(epoch(now))
    );
    out.push_str(&format!(
        "{:<25} {} secs.nsecs\n",
        "start_time",
        secs_nsecs(epoch(counters.since))
    ));
    out.push_str(&format!(
        "{:<25} {} secs.nsecs\n",
        "elapsed_time",
        secs_nsecs(now.duration_since(counters.since).unwrap_or_default())
    ));
    for op in Op::ALL {
        let c = counters.counter(op);
        if c.samples == 0 {
            continue;
        }
        out.push_str(&format!(
            "{:<25} {} samples [{}]",
            op.name(),
            c.samples,
            op.unit()
        ));
        if op.has_values() {
            out.push_str(&format!(" {} {} {} {}", c.min, c.max, c.sum, c.sumsq));
        }
        out.push('\n');
    }
    out
}

/// `a` as a whole percentage of `b` (Lustre's `pct`).
fn pct(a: u64, b: u64) -> u64 {
    (a * 100).checked_div(b).unwrap_or(0)
}

/// One section of brw_stats, as Lustre's `display_brw_stats`: bucket labels are the bucket
/// number (`scale` 0) or `scale << i` with K and M for thousands of units.
fn section(out: &mut String, name: &str, units: &str, hist: &[Histogram; 2], scale: u64) {
    let (read, write) = (&hist[0], &hist[1]);
    out.push_str(&format!("\n{:>26} read      |     write\n", " "));
    out.push_str(&format!(
        "{name:<22} {units:<5} % cum % |  {units:<11} % cum %\n"
    ));
    let (read_total, write_total) = (read.total(), write.total());
    let (mut read_cum, mut write_cum) = (0, 0);
    for i in 0..BUCKETS {
        let (r, w) = (read.buckets[i], write.buckets[i]);
        read_cum += r;
        write_cum += w;
        if read_cum == 0 && write_cum == 0 {
            continue;
        }
        let label = if scale == 0 {
            i.to_string()
        } else if i < 10 {
            (scale << i).to_string()
        } else if i < 20 {
            format!("{}K", scale << (i - 10))
        } else {
            format!("{}M", scale << (i - 20))
        };
        out.push_str(&format!(
            "{label}:\t\t{r:10} {:3} {:3}   | {w:4} {:3} {:3}\n",
            pct(r, read_total),
            pct(read_cum, read_total),
            pct(w, write_total),
            pct(write_cum, write_total)
        ));
        if read_cum == read_total && write_cum == write_total {
            break;
        }
    }
}

/// The `brw_stats` file at `now`, in Lustre's layout.
pub fn brw_stats_text(counters: &TargetCounters, now: SystemTime) -> String {
    let since_epoch = now
        .duration_since(SystemTime::UNIX_EPOCH)
        .unwrap_or_default();
    let mut out = format!(
        "{:<22} {} (secs.nsecs)\n",
        "snapshot_time:",
        secs_nsecs(since_epoch)
    );
    let b = &counters.brw;
    section(&mut out, "pages per bulk r/w", "rpcs", &b.pages_per_bulk, 1);
    // An iopath bulk is one contiguous range: every RPC has 0 discontiguous pages, so the
    // section is the bulks counted, all in bucket 0.
    let contiguous = b.pages_per_bulk.each_ref().map(|h| {
        let mut all = Histogram::default();
        all.buckets[0] = h.total();
        all
    });
    section(&mut out, "discontiguous pages", "rpcs", &contiguous, 0);
    section(&mut out, "disk I/Os in flight", "ios", &b.in_flight, 0);
    section(&mut out, "I/O time (1/1000s)", "ios", &b.io_time_ms, 1);
    section(&mut out, "disk I/O size", "ios", &b.io_size, 1);
    out
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
    fn the_stats_file_reads_as_lustres() {
        let start = SystemTime::UNIX_EPOCH + Duration::from_secs(1_700_000_000);
        let mut counters = TargetCounters::new(start);
        counters.count(Op::WriteBytes, 1 << 20);
        counters.count(Op::WriteBytes, 4096);
        counters.count(Op::Write, 250);
        counters.count(Op::Write, 750);
        counters.count(Op::Create, 0);
        let now = start + Duration::from_millis(2500);
        let text = stats_text(&counters, now);
        assert_eq!(
            text,
            "snapshot_time             1700000002.500000000 secs.nsecs\n\
             start_time                1700000000.000000000 secs.nsecs\n\
             elapsed_time              2.500000000 secs.nsecs\n\
             write_bytes               2 samples [bytes] 4096 1048576 1052672 1099528404992\n\
             write                     2 samples [usecs] 250 750 1000 625000\n\
             create                    1 samples [reqs]\n"
        );
    }

    #[test]
    fn brw_stats_read_as_lustres_and_add_up_to_the_bytes() {
        let mut counters = TargetCounters::new(SystemTime::UNIX_EPOCH);
        // Three 1 MiB writes and one 4 KiB write; one 64 KiB read.
        for _ in 0..3 {
            counters.bulk(Rw::Write, 1 << 20);
            counters.disk_io(Rw::Write, 1 << 20, Duration::from_millis(3), 2);
        }
        counters.bulk(Rw::Write, 4096);
        counters.disk_io(Rw::Write, 4096, Duration::from_micros(300), 1);
        counters.bulk(Rw::Read, 64 << 10);
        counters.disk_io(Rw::Read, 64 << 10, Duration::from_millis(1), 1);
        let text = brw_stats_text(&counters, SystemTime::UNIX_EPOCH);
        let pages = text
            .split("\n\n")
            .find(|s| s.contains("pages per bulk r/w"))
            .unwrap();
        assert_eq!(
            pages,
            "                           read      |     write\n\
             pages per bulk r/w     rpcs  % cum % |  rpcs        % cum %\n\
             1:\t\t         0   0   0   |    1  25  25\n\
             2:\t\t         0   0   0   |    0   0  25\n\
             4:\t\t         0   0   0   |    0   0  25\n\
             8:\t\t         0   0   0   |    0   0  25\n\
             16:\t\t         1 100 100   |    0   0  25\n\
             32:\t\t         0   0 100   |    0   0  25\n\
             64:\t\t         0   0 100   |    0   0  25\n\
             128:\t\t         0   0 100   |    0   0  25\n\
             256:\t\t         0   0 100   |    3  75 100"
        );
        assert!(text.contains("disk I/O size          ios   % cum % |  ios         % cum %\n"));
        assert!(
            text.contains("4K:\t\t         0   0   0   |    1  25  25\n"),
            "{text}"
        );
        assert!(
            text.contains("1M:\t\t         0   0 100   |    3  75 100\n"),
            "{text}"
        );
        assert!(text.contains("I/O time (1/1000s)"), "{text}");
        // The write histogram adds up to the bytes written.
        let written: u64 = counters.brw.io_size[Rw::Write as usize]
            .buckets
            .iter()
            .enumerate()
            .map(|(i, n)| n << i)
            .sum();
        assert_eq!(written, 3 * (1 << 20) + 4096);
    }
}
