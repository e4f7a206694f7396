//! `JournalBenchResult`: the figures, serialisable, and the paper-style table.

use std::fmt::Write;

use iopath_storage_server::engine::modeled::DiskModel;
use serde::{Deserialize, Serialize};

use super::config::JournalBenchConfig;

/// One configuration's measurement (one line of the table).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BenchRow {
    /// What was measured ("block level (raw io_uring, O_DIRECT)", "OST, sync journal", ...).
    pub configuration: String,
    /// Best bandwidth over the runs, MiB/s.
    pub mib_s: f64,
    /// `mib_s` as a percentage of the baseline.
    pub percent_of_baseline: f64,
    /// Duration of the best run, seconds.
    pub seconds: f64,
    /// Journal commits in the best run (0 for the baseline).
    pub commits: u64,
    /// Object fdatasyncs issued by commits in the best run.
    pub data_syncs: u64,
    /// Modeled head seeks in the best run (modeled disk only).
    pub seeks: Option<u64>,
    /// Every run's bandwidth, MiB/s, in run order (`mib_s` is the greatest).
    #[serde(default)]
    pub runs_mib_s: Vec<f64>,
    /// The Spider paper's share of the baseline for this configuration, percent, if it
    /// measured one.
    #[serde(default)]
    pub paper_percent: Option<f64>,
    /// With an external journal, its device's name (`"real"`: a real directory, no model).
    #[serde(default)]
    pub journal_device: Option<String>,
}

/// One external journal configuration's figures.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ExternalResult {
    /// The device ("SAS tier"), or "real" for a real external directory.
    pub device: String,
    /// The modeled device, if modeled.
    pub model: Option<DiskModel>,
    /// OST writes with sync commits to it, MiB/s.
    pub mib_s: f64,
    /// `mib_s / baseline_mib_s`.
    pub ratio: f64,
}

/// The benchmark's outcome.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalBenchResult {
    /// `"real"` or `"modeled"`.
    pub disk: String,
    /// The real engine used (`io_uring` or `psync`, after any fallback).
    pub engine: String,
    /// Concurrent writers.
    pub threads: usize,
    /// Objects.
    pub objects: usize,
    /// Bytes per request.
    pub request_size_bytes: usize,
    /// Bytes per object.
    pub bytes_per_object: u64,
    /// Bytes written per phase.
    pub total_bytes: u64,
    /// Repetitions (figures are the best).
    pub runs: u32,
    /// Async commit interval.
    pub commit_interval_ms: u64,
    /// Records per commit.
    pub group_records_max: usize,
    /// Raw block baseline, MiB/s.
    pub baseline_mib_s: f64,
    /// OST writes with sync journal commits, MiB/s.
    pub sync_mib_s: f64,
    /// OST writes with async journal commits, MiB/s.
    pub async_mib_s: f64,
    /// `sync_mib_s / baseline_mib_s`.
    pub sync_ratio: f64,
    /// `async_mib_s / baseline_mib_s`.
    pub async_ratio: f64,
    /// OST writes with an external journal in sync mode, one per device measured.
    pub external: Vec<ExternalResult>,
    /// The modeled data disk, if modeled.
    pub disk_model: Option<DiskModel>,
    /// Where it ran.
    pub dir: String,
    /// Where the external journal was.
    pub external_journal_dir: Option<String>,
    /// Every configuration, in the paper's order.
    pub rows: Vec<BenchRow>,
}

impl JournalBenchResult {
    /// Assembles the result from the rows (baseline first, then sync, async, external).
    pub(crate) fn new(
        config: &JournalBenchConfig,
        engine: String,
        rows: Vec<BenchRow>,
    ) -> JournalBenchResult {
        let find = |prefix: &str| {
            rows.iter()
                .find(|r| r.configuration.starts_with(prefix))
                .map(|r| r.mib_s)
        };
        let baseline = find("block level").unwrap_or(0.0);
        let ratio = |x: f64| if baseline > 0.0 { x / baseline } else { 0.0 };
        let sync = find("OST, internal journal, sync").unwrap_or(0.0);
        let asynchronous = find("OST, internal journal, async").unwrap_or(0.0);
        let external = rows
            .iter()
            .filter_map(|r| {
                let device = r.journal_device.as_ref()?;
                Some(ExternalResult {
                    device: device.clone(),
                    model: config
                        .journal_devices
                        .iter()
                        .find(|d| &d.name == device)
                        .map(|d| d.model),
                    mib_s: r.mib_s,
                    ratio: ratio(r.mib_s),
                })
            })
            .collect();
        JournalBenchResult {
            disk: if config.disk_model.is_some() {
                "modeled"
            } else {
                "real"
            }
            .to_string(),
            engine,
            threads: config.threads,
            objects: config.objects,
            request_size_bytes: config.request_size_bytes,
            bytes_per_object: config.requests_per_object() * config.request_size_bytes as u64,
            total_bytes: config.total_bytes(),
            runs: config.runs,
            commit_interval_ms: config.commit_interval_ms,
            group_records_max: config.group_records_max,
            baseline_mib_s: baseline,
            sync_mib_s: sync,
            async_mib_s: asynchronous,
            sync_ratio: ratio(sync),
            async_ratio: ratio(asynchronous),
            external,
            disk_model: config.disk_model,
            dir: config.dir.display().to_string(),
            external_journal_dir: config
                .external_journal_dir
                .as_ref()
                .map(|d| d.display().to_string()),
            rows,
        }
    }

    /// The table, like the paper's: configuration, MiB/s, % of baseline.
    pub fn render_table(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(
            out,
            "journal benchmark: disk {} ({}), {} threads x {} objects x {} KiB requests, {} MiB per phase, best of {}",
            self.disk,
            self.engine,
            self.threads,
            self.objects,
            self.request_size_bytes / 1024,
            self.total_bytes >> 20,
            self.runs
        );
        let _ = writeln!(
            out,
            "{:<56} {:>10} {:>12} {:>8} {:>8} {:>8}",
            "configuration", "MiB/s", "% of base", "paper", "commits", "seeks"
        );
        for row in &self.rows {
            let seeks = row.seeks.map_or("-".to_string(), |s| s.to_string());
            let paper = row
                .paper_percent
                .map_or("-".to_string(), |p| format!("{p:.1}%"));
            let _ = writeln!(
                out,
                "{:<56} {:>10.1} {:>11.1}% {:>8} {:>8} {:>8}",
                row.configuration, row.mib_s, row.percent_of_baseline, paper, row.commits, seeks
            );
        }
        out
    }
}
