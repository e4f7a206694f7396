//! A target's operation counters and I/O histograms, and their text in Lustre's layouts: the
//! `obdfilter.*.stats` file (a line per counter: samples, unit, min, max, sum, sum of squares)
//! and `obdfilter.*.brw_stats` (read and write histograms side by side: pages per bulk RPC,
//! discontiguous pages, disk I/Os in flight, I/O time, disk I/O size). A pure core: the target
//! tallies into it under a lock; nothing here reads a clock.

use std::time::{Duration, SystemTime};

use iopath_admin::lprocfs::{self, CounterKind};
// The counters, histograms and columns every Lustre counter file shares (`osc.*` on clients
// too), named here as the target's own.
pub use iopath_admin::lprocfs::{BUCKETS, Counter, Histogram, PAGE_BYTES, Rw};

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

    /// How the stats file shows it: min, max, sum and sum of squares for sizes and times (as
    /// Lustre prints them), the samples alone for request counts.
    pub fn kind(self) -> CounterKind {
        CounterKind {
            name: self.name(),
            unit: self.unit(),
            values: self.unit() != "reqs",
        }
    }
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

/// The `stats` file at `now`: `snapshot_time`, `start_time`, `elapsed_time`, then a line per
/// counter with samples, as Lustre's `lprocfs_stats_seq_show` writes it.
pub fn stats_text(counters: &TargetCounters, now: SystemTime) -> String {
    lprocfs::stats_text(
        counters.since,
        now,
        Op::ALL.map(|op| (op.kind(), counters.counter(op))),
    )
}

/// One section of brw_stats, as Lustre's `display_brw_stats`: bucket labels are the bucket
/// number (`scale` 0) or `scale << i` with K and M for thousands of units.
fn section(out: &mut String, name: &str, units: &str, hist: &[Histogram; 2], scale: u64) {
    out.push_str(&format!("\n{:>26} read      |     write\n", " "));
    out.push_str(&format!(
        "{name:<22} {units:<5} % cum % |  {units:<11} % cum %\n"
    ));
    for row in lprocfs::histogram_rows(hist, true) {
        let i = row.bucket;
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
            "{label}:\t\t{:10} {:3} {:3}   | {:4} {:3} {:3}\n",
            row.read, row.read_pct, row.read_cum_pct, row.write, row.write_pct, row.write_cum_pct
        ));
    }
}

/// The `brw_stats` file at `now`, in Lustre's layout.
pub fn brw_stats_text(counters: &TargetCounters, now: SystemTime) -> String {
    let mut out = lprocfs::snapshot_line(now);
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
