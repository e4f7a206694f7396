//! The storage server's families on `/metrics`, read from the counters `lctl` reads
//! (`obdfilter.*.stats` — its since-start tally, which a `stats=clear` does not reset, as a
//! Prometheus counter must never go back — `commits`, `last_committed`, `lost`) when a scrape
//! comes: operations
//! and bytes by target and operation, journal commits with a commit-latency histogram, and
//! recovery — whether each target is still waiting for its clients' replays, how long the
//! window has left, what startup replayed, and what was lost.

use std::sync::{Arc, Weak};

use iopath_admin::metrics::{Labels, counters, gauges, histograms};
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use super::OssService;
use crate::ost::counters::Op;

/// The OSS's collector.
#[derive(Debug)]
pub struct OssCollector {
    service: Weak<OssService>,
}

impl OssCollector {
    /// A collector reading `service`.
    pub fn new(service: &Arc<OssService>) -> OssCollector {
        OssCollector {
            service: Arc::downgrade(service),
        }
    }
}

impl Collector for OssCollector {
    /// Long (174 lines) on purpose: one family after another, as the fabric's collector is,
    /// in the order `/metrics` shows them.
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(service) = self.service.upgrade() else {
            return Ok(());
        };
        let oss = service.oss();
        let targets: Vec<_> = oss
            .targets()
            .iter()
            .map(|t| (oss.target_name(t.index()).to_string(), t))
            .collect();
        let by_target = |name: &String| vec![("target", name.clone())];
        let by_op = |name: &String, op: &str| vec![("target", name.clone()), ("op", op.to_owned())];

        // Operations: requests per operation, bytes read and written, time spent.
        let counted: Vec<_> = targets
            .iter()
            .map(|(n, t)| (n, t.counters_since_start()))
            .collect();
        // Every operation but the byte counts (their samples are the reads' and writes').
        let requests: Vec<Op> = Op::ALL
            .into_iter()
            .filter(|op| op.unit() != "bytes")
            .collect();
        counters(
            &mut encoder,
            "iopath_ost_operations",
            "Operations a target served, by operation (obdfilter stats' samples, counted since the server started: clearing the stats does not reset them).",
            counted.iter().flat_map(|(n, c)| {
                requests
                    .iter()
                    .map(move |op| (by_op(n, op.name()), c.counter(*op).samples))
            }),
        )?;
        counters(
            &mut encoder,
            "iopath_ost_io_bytes",
            "Bytes a target read or wrote for clients (obdfilter read_bytes, write_bytes).",
            counted.iter().flat_map(|(n, c)| {
                [
                    (by_op(n, "read"), c.counter(Op::ReadBytes).sum),
                    (by_op(n, "write"), c.counter(Op::WriteBytes).sum),
                ]
            }),
        )?;
        counters(
            &mut encoder,
            "iopath_ost_io_seconds",
            "Time reads and writes took at the target, arrival to reply, summed.",
            counted.iter().flat_map(|(n, c)| {
                [
                    (by_op(n, "read"), c.counter(Op::Read).sum as f64 / 1e6),
                    (by_op(n, "write"), c.counter(Op::Write).sum as f64 / 1e6),
                ]
            }),
        )?;

        // The journal.
        let stats: Vec<_> = targets.iter().map(|(n, t)| (n, t.stats())).collect();
        counters(
            &mut encoder,
            "iopath_journal_commits",
            "Journal commits completed.",
            stats.iter().map(|(n, s)| (by_target(n), s.journal.commits)),
        )?;
        counters(
            &mut encoder,
            "iopath_journal_records_committed",
            "Operation records committed by the journal.",
            stats
                .iter()
                .map(|(n, s)| (by_target(n), s.journal.records_committed)),
        )?;
        counters(
            &mut encoder,
            "iopath_journal_data_syncs",
            "Object fdatasyncs the journal's commits issued (ordered mode).",
            stats
                .iter()
                .map(|(n, s)| (by_target(n), s.journal.data_syncs)),
        )?;
        counters(
            &mut encoder,
            "iopath_journal_checkpoints",
            "Checkpoints the journal wrote.",
            stats
                .iter()
                .map(|(n, s)| (by_target(n), s.journal.checkpoints)),
        )?;
        histograms(
            &mut encoder,
            "iopath_journal_commit_duration_seconds",
            "Time each successful journal commit took, start to durable.",
            targets
                .iter()
                .map(|(n, t)| (by_target(n), t.commit_latency())),
        )?;
        gauges(
            &mut encoder,
            "iopath_ost_last_committed_transno",
            "The target's highest committed transno.",
            stats
                .iter()
                .map(|(n, s)| (by_target(n), s.last_committed.0 as f64)),
        )?;
        gauges(
            &mut encoder,
            "iopath_ost_objects",
            "Objects on the target.",
            stats.iter().map(|(n, s)| (by_target(n), s.objects as f64)),
        )?;
        gauges(
            &mut encoder,
            "iopath_ost_sync_journal",
            "1 if the target commits before replying (sync), 0 if after (async).",
            targets
                .iter()
                .map(|(n, t)| (by_target(n), f64::from(u8::from(t.sync_journal())))),
        )?;

        // Recovery.
        gauges(
            &mut encoder,
            "iopath_ost_recovering",
            "1 while the target waits for its clients' replays (new requests wait), else 0.",
            targets.iter().map(|(n, t)| {
                (
                    by_target(n),
                    f64::from(u8::from(service.recovering(t.index()))),
                )
            }),
        )?;
        gauges(
            &mut encoder,
            "iopath_oss_recovery_remaining_seconds",
            "Time left before the recovery window's deadline (0 when not recovering).",
            [(Labels::new(), service.recovery.remaining_ms() as f64 / 1e3)],
        )?;
        gauges(
            &mut encoder,
            "iopath_oss_known_clients",
            "Clients the server would wait for if it restarted now.",
            [(Labels::new(), service.clients.known().len() as f64)],
        )?;
        gauges(
            &mut encoder,
            "iopath_ost_startup_records_replayed",
            "Committed journal records startup applied on top of the checkpoint.",
            targets
                .iter()
                .map(|(n, t)| (by_target(n), t.recovery().records_replayed as f64)),
        )?;
        gauges(
            &mut encoder,
            "iopath_ost_lost_bytes",
            "Bytes acknowledged to clients that a restart dropped and no client replayed.",
            targets
                .iter()
                .map(|(n, t)| (by_target(n), t.lost_ranges().lost_bytes() as f64)),
        )?;

        // Bulk buffers.
        gauges(
            &mut encoder,
            "iopath_oss_bulk_pool_pages_max",
            "Pages of the server's bulk buffer pool.",
            [(Labels::new(), service.bulk_pool_pages as f64)],
        )?;
        gauges(
            &mut encoder,
            "iopath_oss_bulk_pool_pages_free",
            "Pages of the bulk buffer pool free now.",
            [(Labels::new(), service.bulk_pool.available_permits() as f64)],
        )
    }
}
