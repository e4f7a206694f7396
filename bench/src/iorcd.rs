//! IORCD's analyses (paper 002) over the sampler's records (`iopath_fabric::iorcd::Sample`):
//! each router's write and read congestion as time series, its correlation with bandwidth, and
//! the paper's rule for a degraded run — congestion that is *low* yet lasts more than two
//! samples, the mark of senders throttled by credits somewhere else (a healthy burst is high
//! and over within a sample or two).
//!
//! Two measures per direction, kept apart as the paper's section on LNET credit integration
//! asks. **Congestion** is the network-side backlog, the analogue of the Gemini counters: the
//! time messages queued to get out of the router onto the next network — for writes onto the
//! storage side, for reads onto the compute side. **Credit waits** are LNET's layer: the time
//! messages from the sending side queued for the router's per-peer router credits and its
//! buffer pools (network `*`, split between the directions by the bytes each forwarded). A
//! bottleneck behind the router shows as credit waits and long bursts while congestion stays
//! low — the paper's degraded signature — so the rule and the correlation read congestion, and
//! the credit waits are reported beside it.

pub mod experiment;

use std::collections::BTreeMap;

use iopath_fabric::iorcd::Sample;
use serde::Serialize;

/// Write or read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Direction {
    /// Towards storage.
    Write,
    /// Towards compute.
    Read,
}

/// One router's one interval, by direction.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Point {
    /// End of the interval, seconds since the Unix epoch.
    pub epoch: f64,
    /// The interval, seconds.
    pub interval_s: f64,
    /// Seconds messages queued to leave the router in this direction during the interval.
    pub congestion_s: f64,
    /// Seconds messages queued for router credits or buffers to enter in this direction.
    pub credit_wait_s: f64,
    /// Bytes forwarded in this direction during the interval.
    pub bytes: u64,
}

/// Each router's series per direction, in time order.
pub type Series = BTreeMap<(String, Direction), Vec<Point>>;

/// Groups `samples` into each router's write and read series; `storage_nets` names the networks
/// the storage servers are on.
pub fn series(samples: &[Sample], storage_nets: &[String]) -> Series {
    // One reading per router and epoch: its networks' records together.
    let mut readings: BTreeMap<(String, u64), Vec<&Sample>> = BTreeMap::new();
    for s in samples {
        readings
            .entry((s.router.clone(), s.epoch.to_bits()))
            .or_default()
            .push(s);
    }
    let mut out = Series::new();
    for ((router, _), records) in readings {
        let storage = |s: &&Sample| storage_nets.contains(&s.network);
        let mut write = Point {
            epoch: records[0].epoch,
            interval_s: records[0].interval_s,
            congestion_s: 0.0,
            credit_wait_s: 0.0,
            bytes: 0,
        };
        let mut read = write;
        let mut shared = 0.0;
        for s in &records {
            if s.network == "*" {
                shared += s.ingress_congestion_s;
            } else if storage(s) {
                // Out onto storage: writes; in from storage: reads.
                write.congestion_s += s.egress_congestion_s;
                write.bytes += s.bytes_out;
                read.credit_wait_s += s.ingress_congestion_s;
            } else {
                read.congestion_s += s.egress_congestion_s;
                read.bytes += s.bytes_out;
                write.credit_wait_s += s.ingress_congestion_s;
            }
        }
        let total = (write.bytes + read.bytes) as f64;
        if total > 0.0 {
            write.credit_wait_s += shared * write.bytes as f64 / total;
            read.credit_wait_s += shared * read.bytes as f64 / total;
        }
        out.entry((router.clone(), Direction::Write))
            .or_default()
            .push(write);
        out.entry((router, Direction::Read)).or_default().push(read);
    }
    out
}

/// Pearson's correlation coefficient of `x` and `y`; `None` with fewer than three pairs or no
/// variation.
pub fn pearson(x: &[f64], y: &[f64]) -> Option<f64> {
    use statrs::statistics::Statistics as _;
    let n = x.len().min(y.len());
    if n < 3 {
        return None;
    }
    let (x, y) = (&x[..n], &y[..n]);
    // r = cov(x, y) / (sd(x) sd(y)); the sample corrections cancel.
    let (sx, sy) = (x.std_dev(), y.std_dev());
    (sx > 0.0 && sy > 0.0).then(|| x.covariance(y) / (sx * sy))
}

/// An interval is part of a burst when its router forwarded at least this fraction of the most
/// it forwarded in one interval in that direction: the control messages that trickle the other
/// way (GETs, replies) are not a phase of I/O.
pub const ACTIVE_FRACTION: f64 = 0.01;

/// A stretch of consecutive intervals in which a router forwarded data in one direction.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Burst {
    /// The router.
    pub router: String,
    /// Write or read.
    pub direction: Direction,
    /// Its intervals.
    pub points: Vec<Point>,
    /// Congestion per second of the burst: queued seconds over elapsed seconds.
    pub congestion: f64,
    /// Credit waits per second of the burst, likewise.
    pub credit_waits: f64,
    /// Flagged by the rule.
    pub degraded: bool,
}

/// The paper's rule, made exact: a burst is degraded when it lasts more than `samples_max`
/// intervals (the paper: two — a healthy phase may straddle two) and its congestion is below
/// `low` times the highest burst congestion in the same direction across the records (a
/// healthy burst's level).
pub fn bursts(series: &Series, samples_max: usize, low: f64) -> Vec<Burst> {
    let mut found = Vec::new();
    for ((router, direction), points) in series {
        let busiest = points.iter().map(|p| p.bytes).max().unwrap_or(0);
        let floor = ((busiest as f64 * ACTIVE_FRACTION) as u64).max(1);
        let mut current: Vec<Point> = Vec::new();
        let mut flush = |current: &mut Vec<Point>| {
            if !current.is_empty() {
                let queued: f64 = current.iter().map(|p| p.congestion_s).sum();
                let waited: f64 = current.iter().map(|p| p.credit_wait_s).sum();
                let elapsed = current.iter().map(|p| p.interval_s).sum::<f64>().max(1e-9);
                found.push(Burst {
                    router: router.clone(),
                    direction: *direction,
                    points: std::mem::take(current),
                    congestion: queued / elapsed,
                    credit_waits: waited / elapsed,
                    degraded: false,
                });
            }
        };
        for p in points {
            if p.bytes >= floor {
                current.push(*p);
            } else {
                flush(&mut current);
            }
        }
        flush(&mut current);
    }
    for direction in [Direction::Write, Direction::Read] {
        let healthy = found
            .iter()
            .filter(|b| b.direction == direction)
            .map(|b| b.congestion)
            .fold(0.0, f64::max);
        for b in found.iter_mut().filter(|b| b.direction == direction) {
            b.degraded = b.points.len() > samples_max && b.congestion < low * healthy;
        }
    }
    found
}

/// IORCD on a running stack's nodes, driven through their admin services: what `bench iorcd`
/// and `bench monitoring` turn on, off and read.
#[derive(Debug)]
pub struct Samplers {
    /// Each sampling node's name, the NID its records name it by, and its admin client.
    nodes: Vec<(String, String, iopath_admin::Client)>,
}

impl Samplers {
    /// Connects to the admin service of every node of `running` whose role is in `roles`.
    pub async fn connect(
        running: &iopath_stack::runtime::RunningStack,
        roles: &[iopath_stack::schema::RoleName],
    ) -> Result<Samplers, crate::error::BenchError> {
        let stack = running.stack();
        let mut nodes = Vec::new();
        for index in (0..stack.nodes.len()).filter(|&i| roles.contains(&stack.nodes[i].role.kind()))
        {
            let name = stack.nodes[index].name.clone();
            let addr =
                running
                    .admin_addr(index)
                    .ok_or_else(|| crate::error::BenchError::Refused {
                        why: format!("{name} has no admin service to drive its IORCD through"),
                    })?;
            let mut admin = iopath_admin::Client::connect(addr).await?;
            // Turning sampling on and off is a change: it needs the stack's secret.
            if let Some(secret) = running.admin_secret() {
                admin = admin.with_secret(secret.clone());
            }
            nodes.push((name, stack.nid_of(index, 0).to_string(), admin));
        }
        Ok(Samplers { nodes })
    }

    /// The sampling nodes' names, in stack order.
    pub fn names(&self) -> Vec<String> {
        self.nodes.iter().map(|(name, _, _)| name.clone()).collect()
    }

    /// Node names by the NID their records name them with.
    pub fn names_by_nid(&self) -> BTreeMap<String, String> {
        self.nodes
            .iter()
            .map(|(name, nid, _)| (nid.clone(), name.clone()))
            .collect()
    }

    /// Off and cleared, then on at `interval`: records from now on only.
    pub async fn start(
        &self,
        interval: std::time::Duration,
    ) -> Result<(), crate::error::BenchError> {
        for (_, _, admin) in &self.nodes {
            admin.set_param("iorcd.interval_ms", "0").await?;
            admin.set_param("iorcd.samples", "").await?;
            admin
                .set_param("iorcd.interval_ms", &interval.as_millis().to_string())
                .await?;
        }
        Ok(())
    }

    /// Off; the records stay.
    pub async fn stop(&self) -> Result<(), crate::error::BenchError> {
        for (_, _, admin) in &self.nodes {
            admin.set_param("iorcd.interval_ms", "0").await?;
        }
        Ok(())
    }

    /// Forgets every node's records.
    pub async fn clear(&self) -> Result<(), crate::error::BenchError> {
        for (_, _, admin) in &self.nodes {
            admin.set_param("iorcd.samples", "").await?;
        }
        Ok(())
    }

    /// Every node's records so far.
    pub async fn samples(&self) -> Result<Vec<Sample>, crate::error::BenchError> {
        let mut all = Vec::new();
        for (name, _, admin) in &self.nodes {
            for value in admin.get_param("iorcd.samples").await? {
                all.extend(
                    parse(&value.value).map_err(|why| crate::error::BenchError::Tool {
                        what: format!("{name}'s IORCD records: {why}"),
                    })?,
                );
            }
        }
        Ok(all)
    }
}

/// Checks an IORCD sampling interval a benchmark is asked for, as `--interval-ms`.
pub fn check_interval(interval: std::time::Duration) -> Result<(), crate::error::BenchError> {
    let ms = interval.as_millis() as u64;
    if (iopath_fabric::iorcd::INTERVAL_MIN_MS..=INTERVAL_MAX_MS).contains(&ms) {
        return Ok(());
    }
    Err(crate::error::BenchError::BadOption {
        option: "--interval-ms".into(),
        why: format!(
            "{ms}: use {} to {INTERVAL_MAX_MS} (the paper's 30 s window would make a run take minutes)",
            iopath_fabric::iorcd::INTERVAL_MIN_MS
        ),
    })
}

/// The longest sampling interval a benchmark takes, milliseconds.
pub const INTERVAL_MAX_MS: u64 = 60_000;

/// Most records `iopath iorcd analyze` reads (a day at a 1 s interval on 20 routers' networks).
pub const RECORDS_MAX: usize = 4_000_000;
/// Largest records file it reads: its most records at about 400 bytes each.
pub const RECORDS_MAX_BYTES: u64 = RECORDS_MAX as u64 * 400;

/// Parses JSON Lines of records; an error names its line (from 1).
pub fn parse(text: &str) -> Result<Vec<Sample>, String> {
    let mut records = Vec::new();
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        if records.len() == RECORDS_MAX {
            return Err(format!("more than {RECORDS_MAX} records"));
        }
        let record: Sample = serde_json::from_str(line)
            .map_err(|e| format!("line {}: not an IORCD record: {e}", i + 1))?;
        records.push(record);
    }
    Ok(records)
}

/// How congestion followed bandwidth in one direction, over the intervals that moved bytes.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Correlation {
    /// Write or read.
    pub direction: Direction,
    /// Intervals with traffic in this direction, over every router.
    pub intervals: usize,
    /// Pearson's r of congestion (seconds queued per second) against bandwidth (MiB/s).
    pub pearson: Option<f64>,
}

/// What `iopath iorcd analyze` finds.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Analysis {
    /// The networks taken as the storage side.
    pub storage_nets: Vec<String>,
    /// Records read.
    pub records: usize,
    /// Per direction.
    pub correlations: Vec<Correlation>,
    /// Every burst, flagged or not.
    pub bursts: Vec<Burst>,
    /// The rule's parameters: more than this many intervals ...
    pub samples_max: usize,
    /// ... below this fraction of the highest burst's congestion.
    pub low: f64,
}

/// Analyses `samples`.
pub fn analyze(
    samples: &[Sample],
    storage_nets: &[String],
    samples_max: usize,
    low: f64,
) -> Analysis {
    let series = series(samples, storage_nets);
    let correlations = [Direction::Write, Direction::Read]
        .into_iter()
        .map(|direction| {
            let active: Vec<&Point> = series
                .iter()
                .filter(|((_, d), _)| *d == direction)
                .flat_map(|(_, points)| points)
                .filter(|p| p.bytes > 0 && p.interval_s > 0.0)
                .collect();
            let congestion: Vec<f64> = active
                .iter()
                .map(|p| p.congestion_s / p.interval_s)
                .collect();
            let bandwidth: Vec<f64> = active
                .iter()
                .map(|p| p.bytes as f64 / (1u64 << 20) as f64 / p.interval_s)
                .collect();
            Correlation {
                direction,
                intervals: active.len(),
                pearson: pearson(&congestion, &bandwidth),
            }
        })
        .collect();
    Analysis {
        storage_nets: storage_nets.to_vec(),
        records: samples.len(),
        correlations,
        bursts: bursts(&series, samples_max, low),
        samples_max,
        low,
    }
}

/// The analysis for people.
pub fn text(analysis: &Analysis) -> String {
    let mut out = format!(
        "{} records; storage side: {}\n\ncorrelation of congestion (s queued per s) with bandwidth (MiB/s), per interval with traffic:\n",
        analysis.records,
        analysis.storage_nets.join(", ")
    );
    for c in &analysis.correlations {
        out.push_str(&format!(
            "  {:<6} {:>6} intervals  r = {}\n",
            format!("{:?}", c.direction).to_lowercase(),
            c.intervals,
            c.pearson
                .map(|r| format!("{r:.3}"))
                .unwrap_or_else(|| "- (fewer than 3 intervals, or no variation)".into())
        ));
    }
    out.push_str(&format!(
        "\nbursts (consecutive intervals with traffic); degraded: more than {} intervals below {:.0}% of the highest burst's congestion\n",
        analysis.samples_max,
        analysis.low * 100.0
    ));
    out.push_str(&format!(
        "  {:<28} {:<6} {:>14} {:>9} {:>11} {:>12} {:>9}\n",
        "router", "dir", "start (epoch)", "intervals", "congestion", "credit waits", "degraded"
    ));
    for b in &analysis.bursts {
        out.push_str(&format!(
            "  {:<28} {:<6} {:>14.1} {:>9} {:>11.4} {:>12.4} {:>9}\n",
            b.router,
            format!("{:?}", b.direction).to_lowercase(),
            b.points.first().map_or(0.0, |p| p.epoch - p.interval_s),
            b.points.len(),
            b.congestion,
            b.credit_waits,
            if b.degraded { "DEGRADED" } else { "-" }
        ));
    }
    out.push_str(
        "  (congestion: seconds queued to leave the router per second; credit waits: seconds \
         queued for router credits and buffers to get in)\n",
    );
    out
}

/// The time series as a plot: each router's congestion per direction over time.
pub fn figure(samples: &[Sample], analysis: &Analysis) -> iopath_plot::Figure {
    use iopath_plot::{Axis, Figure, Series};
    let series = series(samples, &analysis.storage_nets);
    let start = samples
        .iter()
        .map(|s| s.epoch - s.interval_s)
        .fold(f64::INFINITY, f64::min);
    let lines = series
        .iter()
        .map(|((router, direction), points)| {
            Series::line(
                format!("{router} {}", format!("{direction:?}").to_lowercase()),
                points
                    .iter()
                    .map(|p| (p.epoch - start, p.congestion_s / p.interval_s.max(1e-9))),
            )
        })
        .collect();
    let flagged = analysis.bursts.iter().filter(|b| b.degraded).count();
    Figure {
        title: format!(
            "Router congestion over time ({} records, {flagged} burst(s) flagged degraded)",
            analysis.records
        ),
        x: Axis::from_zero("time since the first sample (s)"),
        y: Axis::from_zero("congestion (seconds queued per second)"),
        y2: None,
        series: lines,
        rules: Vec::new(),
        footnote: "Measured: the time messages queued to leave each router onto the next network \
                   (send credits), sampled by IORCD on the router; write = onto the storage side, \
                   read = onto the compute side. LNET credit waits to get in are in the report, \
                   not drawn."
            .into(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iopath_fabric::iorcd::CreditView;

    fn sample(
        router: &str,
        network: &str,
        epoch: f64,
        egress: f64,
        ingress: f64,
        bytes: u64,
    ) -> Sample {
        Sample {
            host: "h".into(),
            router: router.into(),
            network: network.into(),
            epoch,
            interval_s: 1.0,
            egress_waits: 0,
            egress_congestion_s: egress,
            ingress_waits: 0,
            ingress_congestion_s: ingress,
            bytes_out: bytes,
            messages_out: 0,
            credits: CreditView {
                max: 8,
                tx: 8,
                min: 8,
                ..CreditView::default()
            },
        }
    }

    #[test]
    fn directions_follow_the_data() {
        let storage = vec!["o2ib0".to_owned()];
        // Writing: data in from the torus, out onto storage; the buffers' waits go with it.
        let samples = vec![
            sample("r0", "torus0", 1.0, 0.0, 0.30, 100),
            sample("r0", "o2ib0", 1.0, 0.20, 0.01, 9_900),
            sample("r0", "*", 1.0, 0.0, 0.50, 0),
        ];
        let s = series(&samples, &storage);
        let write = s[&("r0".into(), Direction::Write)][0];
        let read = s[&("r0".into(), Direction::Read)][0];
        assert_eq!(write.bytes, 9_900);
        assert_eq!(read.bytes, 100);
        // Congestion: waiting to leave onto the next network.
        assert_eq!(write.congestion_s, 0.20);
        assert_eq!(read.congestion_s, 0.0);
        // Credit waits: waiting to enter, router credits and (split by bytes) buffers.
        assert!(
            (write.credit_wait_s - (0.30 + 0.50 * 0.99)).abs() < 1e-9,
            "{write:?}"
        );
        assert!(
            (read.credit_wait_s - (0.01 + 0.50 * 0.01)).abs() < 1e-9,
            "{read:?}"
        );
    }

    #[test]
    fn pearson_is_pearson() {
        let x = [1.0, 2.0, 3.0, 4.0];
        assert!((pearson(&x, &[2.0, 4.0, 6.0, 8.0]).unwrap() - 1.0).abs() < 1e-12);
        assert!((pearson(&x, &[8.0, 6.0, 4.0, 2.0]).unwrap() + 1.0).abs() < 1e-12);
        assert_eq!(pearson(&x, &[1.0, 1.0, 1.0, 1.0]), None, "no variation");
        assert_eq!(pearson(&[1.0, 2.0], &[1.0, 2.0]), None, "too few");
        let r = pearson(&[1.0, 2.0, 3.0, 4.0, 5.0], &[1.0, 3.0, 2.0, 5.0, 4.0]).unwrap();
        assert!((r - 0.8).abs() < 1e-12, "{r}");
    }

    #[test]
    fn a_long_low_burst_is_degraded_and_a_short_high_one_is_not() {
        let storage = vec!["o2ib0".to_owned()];
        let mut samples = Vec::new();
        // A healthy write phase: one interval, high congestion.
        samples.push(sample("r0", "o2ib0", 1.0, 0.8, 0.0, 1 << 30));
        samples.push(sample("r0", "o2ib0", 2.0, 0.0, 0.0, 0));
        // A degraded one: five intervals, little congestion each.
        for t in 3..8 {
            samples.push(sample("r0", "o2ib0", f64::from(t), 0.05, 0.0, 64 << 20));
        }
        samples.push(sample("r0", "o2ib0", 8.0, 0.0, 0.0, 0));
        // Two intervals of low congestion: may have straddled a sample boundary; not flagged.
        samples.push(sample("r0", "o2ib0", 9.0, 0.05, 0.0, 64 << 20));
        samples.push(sample("r0", "o2ib0", 10.0, 0.05, 0.0, 64 << 20));
        // Control messages alone (under 1% of the busiest interval) are not a burst.
        samples.push(sample("r0", "o2ib0", 11.0, 0.0, 0.0, 0));
        samples.push(sample("r0", "o2ib0", 12.0, 0.0, 0.0, 4096));
        let found = bursts(&series(&samples, &storage), 2, 0.5);
        let writes: Vec<(usize, bool)> = found
            .iter()
            .filter(|b| b.direction == Direction::Write)
            .map(|b| (b.points.len(), b.degraded))
            .collect();
        assert_eq!(writes, vec![(1, false), (5, true), (2, false)]);
        // Long and high is not degraded either.
        let busy: Vec<Sample> = (1..6)
            .map(|t| sample("r1", "o2ib0", f64::from(t), 0.9, 0.0, 1 << 30))
            .collect();
        let found = bursts(&series(&busy, &storage), 2, 0.5);
        assert!(found.iter().all(|b| !b.degraded), "{found:?}");
    }
}
