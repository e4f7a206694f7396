//! What a client node's OST clients asked of one target, as Lustre's osc counts it, and the
//! text of its two files: `osc.*.stats` (each request's wait for its reply, the requests under
//! way, the bytes per read and write RPC, and each operation's time, in the layout of
//! `obdfilter.*.stats`) and `osc.*.rpc_stats` (read and write RPCs and pages under way, then
//! histograms of pages per RPC, RPCs in flight and object offset, read and write side by
//! side). A pure core: events in, tallies out — no clock, no lock; [`crate::stats`] holds one
//! per target and feeds it from the I/O path.

use std::time::SystemTime;

use iopath_admin::lprocfs::{self, Counter, CounterKind, Histogram, PAGE_BYTES, Rw};

use crate::wire::opcode;

/// An operation on a target, as osc's stats name it (ptlrpc's names of the OST opcodes).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OstOp {
    /// An object's size (`ost_getattr`).
    Getattr,
    /// A read RPC (`ost_read`).
    Read,
    /// A write RPC (`ost_write`), replays included.
    Write,
    /// An object created (`ost_create`).
    Create,
    /// An object destroyed (`ost_destroy`).
    Destroy,
    /// A truncate (`ost_punch`).
    Punch,
    /// A capacity query (`ost_statfs`).
    Statfs,
    /// A commit asked for (`ost_sync`).
    Sync,
}

impl OstOp {
    /// Every operation, in the order the stats file lists them (Lustre's opcode order).
    pub const ALL: [OstOp; 8] = [
        OstOp::Getattr,
        OstOp::Read,
        OstOp::Write,
        OstOp::Create,
        OstOp::Destroy,
        OstOp::Punch,
        OstOp::Statfs,
        OstOp::Sync,
    ];

    /// The operation an OST opcode asks for; `None` for the connection's own requests
    /// (connect, replay done, disconnect) and opcodes the service does not have.
    pub fn of(opcode: u32) -> Option<OstOp> {
        Some(match opcode {
            opcode::GETATTR => OstOp::Getattr,
            opcode::READ => OstOp::Read,
            opcode::WRITE => OstOp::Write,
            opcode::CREATE => OstOp::Create,
            opcode::DESTROY => OstOp::Destroy,
            opcode::PUNCH => OstOp::Punch,
            opcode::STATFS => OstOp::Statfs,
            opcode::SYNC => OstOp::Sync,
            _ => return None,
        })
    }

    /// Lustre's name.
    pub fn name(self) -> &'static str {
        match self {
            OstOp::Getattr => "ost_getattr",
            OstOp::Read => "ost_read",
            OstOp::Write => "ost_write",
            OstOp::Create => "ost_create",
            OstOp::Destroy => "ost_destroy",
            OstOp::Punch => "ost_punch",
            OstOp::Statfs => "ost_statfs",
            OstOp::Sync => "ost_sync",
        }
    }
}

/// `req_waittime`: each request's time from send to reply.
const WAITTIME: CounterKind = CounterKind {
    name: "req_waittime",
    unit: "usecs",
    values: true,
};
/// `req_active`: the requests to the target under way as each was sent, itself included.
const ACTIVE: CounterKind = CounterKind {
    name: "req_active",
    unit: "reqs",
    values: true,
};
/// `read_bytes` and `write_bytes`: the bytes each read and write RPC moved, by [`Rw`].
const BYTES: [CounterKind; 2] = [
    CounterKind {
        name: "read_bytes",
        unit: "bytes",
        values: true,
    },
    CounterKind {
        name: "write_bytes",
        unit: "bytes",
        values: true,
    },
];

/// One target's tallies since they were last cleared.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OscCounters {
    /// When counting began (the node started, or the last clear).
    pub since: SystemTime,
    /// Each request's time from send to reply, microseconds.
    pub waittime: Counter,
    /// The requests under way as each was sent, itself included.
    pub active: Counter,
    /// Bytes each completed read and write RPC moved, by [`Rw`].
    pub bytes: [Counter; 2],
    /// Each operation's time from send to reply, microseconds, by [`OstOp`].
    ops: [Counter; OstOp::ALL.len()],
    /// Pages (4 KiB, rounded up) per read and write RPC, log2 buckets.
    pub pages_per_rpc: [Histogram; 2],
    /// RPCs of the same direction under way as each was sent, itself included.
    pub rpcs_in_flight: [Histogram; 2],
    /// Each RPC's offset in its object, in pages, log2 buckets of `offset + 1` (Lustre's).
    pub offset: [Histogram; 2],
}

impl OscCounters {
    /// Counters from zero, counting from `since`.
    pub fn new(since: SystemTime) -> OscCounters {
        OscCounters {
            since,
            waittime: Counter::default(),
            active: Counter::default(),
            bytes: [Counter::default(); 2],
            ops: [Counter::default(); OstOp::ALL.len()],
            pages_per_rpc: [Histogram::default(); 2],
            rpcs_in_flight: [Histogram::default(); 2],
            offset: [Histogram::default(); 2],
        }
    }

    /// A read or write RPC of `bytes` at `offset_bytes` in its object was sent, with
    /// `in_flight` RPCs of its direction under way (itself included): rpc_stats' histograms,
    /// tallied as Lustre's `osc_build_rpc` tallies them.
    pub fn rpc_sent(&mut self, rw: Rw, bytes: u64, offset_bytes: u64, in_flight: u64) {
        let r = rw as usize;
        self.pages_per_rpc[r].tally_log2(bytes.div_ceil(PAGE_BYTES));
        self.rpcs_in_flight[r].tally(in_flight);
        self.offset[r].tally_log2(offset_bytes / PAGE_BYTES + 1);
    }

    /// A read or write RPC completed, having moved `bytes`.
    pub fn rpc_done(&mut self, rw: Rw, bytes: u64) {
        self.bytes[rw as usize].add(bytes);
    }

    /// The reply to an `op` request came `waited_us` after it was sent, which was with
    /// `active` requests to the target under way (itself included).
    pub fn replied(&mut self, op: OstOp, waited_us: u64, active: u64) {
        self.waittime.add(waited_us);
        self.active.add(active);
        self.ops[op as usize].add(waited_us);
    }

    /// The counter of `op`.
    pub fn op(&self, op: OstOp) -> Counter {
        self.ops[op as usize]
    }

    /// Starts the stats file's counters again from zero, counting from `now`
    /// (`osc.*.stats=clear`). rpc_stats' histograms stay: in Lustre each file clears its own.
    pub fn clear_stats(&mut self, now: SystemTime) {
        *self = OscCounters {
            pages_per_rpc: self.pages_per_rpc,
            rpcs_in_flight: self.rpcs_in_flight,
            offset: self.offset,
            ..OscCounters::new(now)
        };
    }

    /// Empties rpc_stats' histograms (`osc.*.rpc_stats=clear`); the stats file's counters
    /// stay.
    pub fn clear_histograms(&mut self) {
        self.pages_per_rpc = Default::default();
        self.rpcs_in_flight = Default::default();
        self.offset = Default::default();
    }
}

/// What is under way at one target now, which rpc_stats shows above its histograms (a clear
/// does not touch it: it is the present, not a tally).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct UnderWay {
    /// Read and write RPCs sent and not yet answered, by [`Rw`].
    pub rpcs: [u64; 2],
    /// Pages of read and write RPCs waiting for one of the target's RPC slots, by [`Rw`].
    pub pending_pages: [u64; 2],
}

/// The `stats` file at `now`, in the layout of `obdfilter.*.stats`: `req_waittime`,
/// `req_active`, `read_bytes`, `write_bytes`, then each operation, where it has samples.
pub fn stats_text(counters: &OscCounters, now: SystemTime) -> String {
    let lines = [
        (WAITTIME, counters.waittime),
        (ACTIVE, counters.active),
        (BYTES[0], counters.bytes[0]),
        (BYTES[1], counters.bytes[1]),
    ]
    .into_iter()
    .chain(OstOp::ALL.map(|op| {
        let kind = CounterKind {
            name: op.name(),
            unit: "usecs",
            values: true,
        };
        (kind, counters.op(op))
    }));
    lprocfs::stats_text(counters.since, now, lines)
}

/// One histogram section of rpc_stats, as Lustre's `osc_rpc_stats_seq_show` prints it:
/// `label` names each bucket.
fn section(out: &mut String, title: &str, pair: &[Histogram; 2], label: impl Fn(usize) -> u64) {
    out.push_str("\n\t\t\tread\t\t\twrite\n");
    out.push_str(&format!(
        "{title:<21} rpcs   % cum % |       rpcs   % cum %\n"
    ));
    for row in lprocfs::histogram_rows(pair, false) {
        out.push_str(&format!(
            "{}:\t\t{:10} {:3} {:3}   | {:10} {:3} {:3}\n",
            label(row.bucket),
            row.read,
            row.read_pct,
            row.read_cum_pct,
            row.write,
            row.write_pct,
            row.write_cum_pct
        ));
    }
}

/// The `rpc_stats` file at `now`, in Lustre's layout: what is under way, then pages per RPC,
/// RPCs in flight and offset, read and write side by side.
pub fn rpc_stats_text(counters: &OscCounters, under_way: UnderWay, now: SystemTime) -> String {
    let (read, write) = (Rw::Read as usize, Rw::Write as usize);
    let mut out = lprocfs::snapshot_line(now);
    out.push_str(&format!(
        "read RPCs in flight:  {}\n\
         write RPCs in flight: {}\n\
         pending write pages:  {}\n\
         pending read pages:   {}\n",
        under_way.rpcs[read],
        under_way.rpcs[write],
        under_way.pending_pages[write],
        under_way.pending_pages[read]
    ));
    section(&mut out, "pages per rpc", &counters.pages_per_rpc, |i| {
        1 << i
    });
    section(&mut out, "rpcs in flight", &counters.rpcs_in_flight, |i| {
        i as u64
    });
    // Bucket 0 is offset 0; bucket i holds offsets from 2^(i-1) pages.
    section(&mut out, "offset", &counters.offset, |i| {
        if i == 0 { 0 } else { 1 << (i - 1) }
    });
    out
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn rpcs_land_in_lustres_buckets() {
        let mut c = OscCounters::new(at(0));
        // Four 1 MiB writes at object offsets 0, 1, 2 and 3 MiB, one to four in flight; one
        // 4 KiB read at offset 12 KiB.
        for k in 0..4u64 {
            c.rpc_sent(Rw::Write, 1 << 20, k << 20, k + 1);
            c.rpc_done(Rw::Write, 1 << 20);
        }
        c.rpc_sent(Rw::Read, 4096, 12 << 10, 1);
        c.rpc_done(Rw::Read, 4096);
        let w = Rw::Write as usize;
        assert_eq!(c.pages_per_rpc[w].buckets[8], 4, "256 pages per RPC");
        assert_eq!(&c.rpcs_in_flight[w].buckets[..5], &[0, 1, 1, 1, 1]);
        // Offsets in pages 0, 256, 512, 768: log2 buckets of 1, 257, 513, 769.
        assert_eq!(c.offset[w].buckets[0], 1);
        assert_eq!(c.offset[w].buckets[9], 1);
        assert_eq!(c.offset[w].buckets[10], 2);
        // 12 KiB is page 3: bucket of 4, labelled 2 (offsets 2 and 3).
        assert_eq!(c.offset[Rw::Read as usize].buckets[2], 1);
        assert_eq!(c.bytes[w].sum, 4 << 20);
        assert_eq!(c.bytes[Rw::Read as usize].samples, 1);
    }

    #[test]
    fn the_stats_file_reads_as_lustres() {
        let mut c = OscCounters::new(at(1_700_000_000));
        c.replied(OstOp::Write, 300, 1);
        c.replied(OstOp::Write, 500, 2);
        c.replied(OstOp::Create, 100, 1);
        c.rpc_done(Rw::Write, 1 << 20);
        c.rpc_done(Rw::Write, 4096);
        let text = stats_text(&c, at(1_700_000_002));
        assert_eq!(
            text,
            "snapshot_time             1700000002.000000000 secs.nsecs\n\
             start_time                1700000000.000000000 secs.nsecs\n\
             elapsed_time              2.000000000 secs.nsecs\n\
             req_waittime              3 samples [usecs] 100 500 900 350000\n\
             req_active                3 samples [reqs] 1 2 4 6\n\
             write_bytes               2 samples [bytes] 4096 1048576 1052672 1099528404992\n\
             ost_write                 2 samples [usecs] 300 500 800 340000\n\
             ost_create                1 samples [usecs] 100 100 100 10000\n"
        );
    }

    #[test]
    fn the_rpc_stats_file_reads_as_lustres() {
        let mut c = OscCounters::new(at(0));
        c.rpc_sent(Rw::Write, 1 << 20, 0, 1);
        c.rpc_sent(Rw::Write, 1 << 20, 1 << 20, 2);
        c.rpc_sent(Rw::Write, 4096, 2 << 20, 2);
        c.rpc_sent(Rw::Read, 8192, 0, 1);
        let under_way = UnderWay {
            rpcs: [0, 2],
            pending_pages: [3, 512],
        };
        let text = rpc_stats_text(&c, under_way, at(1_700_000_000));
        let expected = "snapshot_time:         1700000000.000000000 (secs.nsecs)\n\
            read RPCs in flight:  0\n\
            write RPCs in flight: 2\n\
            pending write pages:  512\n\
            pending read pages:   3\n\
            \n\t\t\tread\t\t\twrite\n\
            pages per rpc         rpcs   % cum % |       rpcs   % cum %\n\
            1:\t\t         0   0   0   |          1  33  33\n\
            2:\t\t         1 100 100   |          0   0  33\n\
            4:\t\t         0   0 100   |          0   0  33\n\
            8:\t\t         0   0 100   |          0   0  33\n\
            16:\t\t         0   0 100   |          0   0  33\n\
            32:\t\t         0   0 100   |          0   0  33\n\
            64:\t\t         0   0 100   |          0   0  33\n\
            128:\t\t         0   0 100   |          0   0  33\n\
            256:\t\t         0   0 100   |          2  66 100\n\
            \n\t\t\tread\t\t\twrite\n\
            rpcs in flight        rpcs   % cum % |       rpcs   % cum %\n\
            0:\t\t         0   0   0   |          0   0   0\n\
            1:\t\t         1 100 100   |          1  33  33\n\
            2:\t\t         0   0 100   |          2  66 100\n\
            \n\t\t\tread\t\t\twrite\n\
            offset                rpcs   % cum % |       rpcs   % cum %\n";
        assert!(text.starts_with(expected), "{text}");
        let offsets: Vec<&str> = text[expected.len()..].lines().collect();
        assert_eq!(
            offsets,
            [
                "0:\t\t         1 100 100   |          1  33  33",
                "1:\t\t         0   0 100   |          0   0  33",
                "2:\t\t         0   0 100   |          0   0  33",
                "4:\t\t         0   0 100   |          0   0  33",
                "8:\t\t         0   0 100   |          0   0  33",
                "16:\t\t         0   0 100   |          0   0  33",
                "32:\t\t         0   0 100   |          0   0  33",
                "64:\t\t         0   0 100   |          0   0  33",
                "128:\t\t         0   0 100   |          0   0  33",
                "256:\t\t         0   0 100   |          1  33  66",
                "512:\t\t         0   0 100   |          1  33 100",
            ],
            "{text}"
        );
    }
}
