//! `run_journal_bench`: the phases of the journal benchmark.
//!
//! Each phase writes the same requests (threads × objects × request size) into a fresh
//! temporary directory on the file system under test, and its time runs until the data is
//! durable: the raw baseline ([`crate::raw`]) ends with an fdatasync of every file, the OST
//! phases with an OST `sync` (every acknowledged write committed). So every figure is "bytes
//! made durable per second", and the ratios say what the journal costs.

use std::path::Path;
use std::sync::Arc;

use bytes::Bytes;
use iopath_stack::scratch::ScratchDir;
use iopath_storage_server::ObjectId;
use iopath_storage_server::engine::aligned::AlignedBuf;
use iopath_storage_server::engine::modeled::{DiskModel, ModeledEngine};
use iopath_storage_server::engine::{DiskEngine, open_engine};
use iopath_storage_server::ost::{Ost, OstConfig, OstEngines};
use tokio::time::Instant;

use super::config::JournalBenchConfig;
use super::result::{BenchRow, JournalBenchResult};
use crate::error::BenchError;
use crate::raw::RawFiles;
use crate::writers::{self, BenchProgress, Phase as Label};

const SYNC: &str = "OST, internal journal, sync commits";
const ASYNC: &str = "OST, internal journal, async commits";
const EXTERNAL: &str = "OST, external journal, sync commits";

/// The Spider paper's table (003, FAST'10 slides: one DDN couplet, 28 tiers, 28 clients one
/// per OST), each internal-journal configuration's share of the block-level baseline, in
/// percent (the external journals' are their devices',
/// [`super::config::JournalDevice::paper_percent`]).
pub const PAPER_SYNC_PERCENT: f64 = 24.9;
/// The same, asynchronous commits.
pub const PAPER_ASYNC_PERCENT: f64 = 93.1;

/// Runs the benchmark. `progress` is called about twice a second while a phase runs and once
/// at its end.
pub async fn run_journal_bench(
    config: &JournalBenchConfig,
    progress: &(dyn Fn(&BenchProgress) + Send + Sync),
) -> Result<JournalBenchResult, BenchError> {
    config.validate()?;
    let real = open_engine(&config.engine);
    // The OST phases' one aligned buffer, shared by every request: the data is real bytes,
    // written for real, and its alignment lets every aligned request go O_DIRECT without a
    // copy. (The raw writer fills a buffer of the same bytes for each of its writers.)
    let mut buffer = AlignedBuf::zeroed(config.request_size_bytes);
    fill(buffer.as_mut_slice(), 0);
    let payload = buffer.into_bytes();

    let mut phases = vec![Phase::Raw, Phase::Ost(Mode::Sync), Phase::Ost(Mode::Async)];
    if config.disk_model.is_some() {
        // Each modeled journal device its phase; its files go to the external directory, or
        // beside the data (the device is modeled either way).
        phases
            .extend((0..config.journal_devices.len()).map(|d| Phase::Ost(Mode::External(Some(d)))));
    } else if config.external_journal_dir.is_some() {
        phases.push(Phase::Ost(Mode::External(None)));
    }
    let mut best: Vec<Option<BenchRow>> = vec![None; phases.len()];
    // Every run's rate of each configuration, in run order, for the plot of the runs.
    let mut every_run: Vec<Vec<f64>> = vec![Vec::new(); best.len()];
    for run in 1..=config.runs {
        // Each run starts with a different phase, so that no configuration always follows the
        // same one (the disk may still be absorbing the previous phase's deletes).
        for step in 0..phases.len() {
            let slot = (step + run as usize - 1) % phases.len();
            let mut row = match phases[slot] {
                Phase::Raw => raw_phase(config, &real, run, progress).await?,
                Phase::Ost(mode) => ost_phase(config, &real, &payload, run, mode, progress).await?,
            };
            row.paper_percent = phases[slot].paper_percent(config);
            every_run[slot].push(row.mib_s);
            if best[slot].as_ref().is_none_or(|b| row.mib_s > b.mib_s) {
                best[slot] = Some(row);
            }
        }
    }
    let mut rows: Vec<BenchRow> = best
        .into_iter()
        .zip(every_run)
        .filter_map(|(row, runs_mib_s)| row.map(|row| BenchRow { runs_mib_s, ..row }))
        .collect();
    let baseline = rows.first().map_or(0.0, |r| r.mib_s);
    for row in &mut rows {
        row.percent_of_baseline = if baseline > 0.0 {
            100.0 * row.mib_s / baseline
        } else {
            0.0
        };
    }
    Ok(JournalBenchResult::new(config, real.name(), rows))
}

/// One configuration of the table.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Phase {
    Raw,
    Ost(Mode),
}

impl Phase {
    /// The paper's share of the baseline for this configuration, if it measured one.
    fn paper_percent(self, config: &JournalBenchConfig) -> Option<f64> {
        match self {
            Phase::Raw => Some(100.0),
            Phase::Ost(Mode::Sync) => Some(PAPER_SYNC_PERCENT),
            Phase::Ost(Mode::Async) => Some(PAPER_ASYNC_PERCENT),
            Phase::Ost(Mode::External(Some(d))) => config.journal_devices.get(d)?.paper_percent,
            Phase::Ost(Mode::External(None)) => None,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Mode {
    Sync,
    Async,
    /// Sync commits to an external journal: on the modeled device `journal_devices[d]`, or
    /// (`None`, real disk) in `external_journal_dir` as it is.
    External(Option<usize>),
}

/// A phase's data engine, and the modeled disk inside it (for its seek count), if any.
type PhaseEngine = (Arc<dyn DiskEngine>, Option<Arc<ModeledEngine>>);

/// The bytes every write of the benchmark carries, whoever writes them.
pub(crate) fn fill(buffer: &mut [u8], _writer: usize) {
    for (i, byte) in buffer.iter_mut().enumerate() {
        *byte = (i % 251) as u8;
    }
}

/// The data engine of one phase: the real engine, or a fresh modeled disk over it.
fn phase_engine(
    real: &Arc<dyn DiskEngine>,
    model: Option<DiskModel>,
) -> Result<PhaseEngine, BenchError> {
    match model {
        None => Ok((Arc::clone(real), None)),
        Some(model) => {
            let modeled = Arc::new(ModeledEngine::new(Arc::clone(real), model)?);
            Ok((modeled.clone() as Arc<dyn DiskEngine>, Some(modeled)))
        }
    }
}

fn temp_dir(parent: &Path, prefix: &str) -> Result<ScratchDir, BenchError> {
    ScratchDir::new_in(parent, prefix).map_err(|e| {
        BenchError::system(
            format!("create benchmark directory {}", parent.display()),
            e,
        )
    })
}

fn row(configuration: &str, bytes: u64, seconds: f64) -> BenchRow {
    let seconds = seconds.max(1e-9);
    BenchRow {
        configuration: configuration.to_string(),
        mib_s: bytes as f64 / (1024.0 * 1024.0) / seconds,
        percent_of_baseline: 0.0,
        seconds,
        commits: 0,
        data_syncs: 0,
        seeks: None,
        runs_mib_s: Vec::new(),
        paper_percent: None,
        journal_device: None,
    }
}

/// The XDD-style baseline: the same requests straight into plain files through the engine,
/// O_DIRECT, no journal, by iopath's raw writer; each writer ends with an fdatasync of its
/// files.
async fn raw_phase(
    config: &JournalBenchConfig,
    real: &Arc<dyn DiskEngine>,
    run: u32,
    progress: &(dyn Fn(&BenchProgress) + Send + Sync),
) -> Result<BenchRow, BenchError> {
    let name = format!("block level (raw {} writer)", real.name());
    let (engine, modeled) = phase_engine(real, config.disk_model)?;
    let raw = RawFiles::create(
        engine,
        &config.dir,
        "iopath-bench-raw-",
        config.requests(),
        &fill,
    )
    .await?;
    let label = Label { name: &name, run };
    let written = raw.write(label, None, progress).await?;
    raw.remove()?;
    let label = format!(
        "block level (raw {} writer, {})",
        real.name(),
        written.how()
    );
    let mut row = row(&label, config.total_bytes(), written.seconds);
    row.seeks = modeled.map(|m| m.stats().seeks);
    Ok(row)
}

/// OST writes through the journal in one of its modes, ending with an OST sync.
async fn ost_phase(
    config: &JournalBenchConfig,
    real: &Arc<dyn DiskEngine>,
    payload: &Bytes,
    run: u32,
    mode: Mode,
    progress: &(dyn Fn(&BenchProgress) + Send + Sync),
) -> Result<BenchRow, BenchError> {
    let device = match mode {
        Mode::External(Some(d)) => config.journal_devices.get(d),
        _ => None,
    };
    let name = match (mode, device) {
        (Mode::Sync, _) => SYNC.to_owned(),
        (Mode::Async, _) => ASYNC.to_owned(),
        (Mode::External(_), Some(device)) => {
            format!("OST, external journal on {}, sync commits", device.name)
        }
        (Mode::External(_), None) => EXTERNAL.to_owned(),
    };
    let name = name.as_str();
    let dir = temp_dir(&config.dir, "iopath-bench-ost-")?;
    let external_dir = match mode {
        Mode::External(_) => Some(temp_dir(
            config
                .external_journal_dir
                .as_deref()
                .unwrap_or(&config.dir),
            "iopath-bench-journal-",
        )?),
        _ => None,
    };
    let (data, modeled) = phase_engine(real, config.disk_model)?;
    // An external journal is another device: a modeled one gets its own head.
    let journal = match device {
        Some(device) => phase_engine(real, Some(device.model))?.0,
        None => Arc::clone(&data),
    };
    let mut ost_config = OstConfig::new(0, dir.path().join("ost0"));
    ost_config.sync_journal = mode != Mode::Async;
    ost_config.commit_interval_ms = config.commit_interval_ms;
    ost_config.group_records_max = config.group_records_max;
    ost_config.uncommitted_records_max = ost_config
        .uncommitted_records_max
        .max(4 * config.group_records_max);
    ost_config.io_size_max_bytes = ost_config
        .io_size_max_bytes
        .max(config.request_size_bytes as u64);
    ost_config.external_journal = external_dir.as_ref().map(|d| d.path().join("journal"));
    let engines = OstEngines {
        data,
        journal,
        fail: iopath_fabric::fail::FailPoints::new(),
    };
    let ost = Arc::new(Ost::open(ost_config, engines).await?);
    for object in 0..config.objects {
        ost.create(ObjectId(object as u64)).await?;
    }
    let before = ost.stats().journal;
    let seeks_before = modeled.as_ref().map(|m| m.stats().seeks);
    let started = Instant::now();
    {
        let ost = Arc::clone(&ost);
        let payload = payload.clone();
        let write = move |_writer: usize, object: usize, offset: u64| {
            let ost = Arc::clone(&ost);
            let payload = payload.clone();
            async move {
                ost.write(ObjectId(object as u64), offset, payload).await?;
                Ok(())
            }
        };
        let label = Label { name, run };
        let done = |_writer: usize, _objects: Vec<usize>| async { Ok(()) };
        writers::drive(config.requests(), label, None, progress, write, done).await?;
    }
    // Durable means committed: the phase ends when the last acknowledged write is.
    ost.sync().await?;
    let mut row = row(name, config.total_bytes(), started.elapsed().as_secs_f64());
    let after = ost.stats().journal;
    row.commits = after.commits - before.commits;
    row.data_syncs = after.data_syncs - before.data_syncs;
    row.seeks = modeled
        .as_ref()
        .zip(seeks_before)
        .map(|(m, before)| m.stats().seeks - before);
    row.journal_device = match mode {
        Mode::External(_) => Some(device.map_or_else(|| "real".to_owned(), |d| d.name.clone())),
        _ => None,
    };
    ost.shutdown().await?;
    Ok(row)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::journal::config::JournalDevice;
    use iopath_storage_server::engine::{EngineConfig, EngineKind};

    /// On a modeled disk the benchmark reproduces the paper's shape: sync commits pay a seek
    /// pair per commit, async commits nearly nothing. Modeled time is paused tokio time.
    #[tokio::test(start_paused = true)]
    async fn modeled_disk_shows_the_sync_async_gap() {
        let dir = tempfile::tempdir().unwrap();
        let mut config = JournalBenchConfig::new(dir.path());
        config.threads = 1;
        config.objects = 2;
        config.request_size_bytes = 64 << 10;
        config.bytes_per_object = 64 * (64 << 10);
        config.engine = EngineConfig {
            kind: EngineKind::Psync,
            ..Default::default()
        };
        config.disk_model = Some(DiskModel {
            bandwidth_mib_s: 64.0,
            seek_ms: 4.0,
            commit_ms: 0.0,
        });
        config.group_records_max = 32;
        config.commit_interval_ms = 60_000;
        config.external_journal_dir = Some(dir.path().to_path_buf());
        // Two external journal devices: one costing 4 ms per commit, one 1.5 ms.
        config.journal_devices = vec![
            JournalDevice {
                name: "SAS tier".into(),
                model: DiskModel {
                    bandwidth_mib_s: 256.0,
                    seek_ms: 0.0,
                    commit_ms: 4.0,
                },
                paper_percent: Some(35.2),
            },
            JournalDevice {
                name: "solid-state device".into(),
                model: DiskModel {
                    bandwidth_mib_s: 1024.0,
                    seek_ms: 0.0,
                    commit_ms: 1.5,
                },
                paper_percent: Some(58.7),
            },
        ];
        config.runs = 2;
        let progress_lines = std::sync::Mutex::new(Vec::new());
        let result = run_journal_bench(&config, &|p: &BenchProgress| {
            progress_lines.lock().unwrap().push(p.line())
        })
        .await
        .unwrap();
        assert_eq!(result.disk, "modeled");
        assert_eq!(result.rows.len(), 5);
        // Each configuration's every run, the best of them its figure.
        for row in &result.rows {
            assert_eq!(row.runs_mib_s.len(), 2, "{}", row.configuration);
            assert_eq!(
                row.runs_mib_s.iter().copied().fold(0.0, f64::max),
                row.mib_s
            );
        }
        // 128 writes of 64 KiB at 64 MiB/s: 1 ms each, so the baseline is the model's 64 MiB/s.
        assert!(
            (result.baseline_mib_s - 64.0).abs() < 1.0,
            "{}",
            result.render_table()
        );
        // Sync: one commit per write, each moving the head to the journal and back (8 ms).
        let sync = &result.rows[1];
        assert_eq!(sync.commits, 128, "{}", result.render_table());
        assert!(result.sync_ratio < 0.2, "{}", result.render_table());
        // Async: a commit per 32 records.
        assert_eq!(result.rows[2].commits, 4, "{}", result.render_table());
        // Each async commit still moves the head twice (8 ms per 32 MiB-ms of data here).
        assert!(result.async_ratio > 0.75, "{}", result.render_table());
        assert!(
            result.async_ratio > 3.0 * result.sync_ratio,
            "{}",
            result.render_table()
        );
        // External journals: no seeks on the data disk, a commit per write, each paying its
        // device's commit cost: 1 ms of data and 4 ms (SAS) or 1.5 ms (SSD) per write. A
        // device idle for less than the timer's resolution (1 ms) counts as busy, so up to
        // 1 ms of each commit may be hidden behind the data's write.
        let [sas, ssd] = &result.external[..] else {
            panic!("two external rows: {}", result.render_table())
        };
        for (row, commit_ms) in [(&result.rows[3], 4.0), (&result.rows[4], 1.5)] {
            assert_eq!(row.seeks, Some(0), "{}", result.render_table());
            assert_eq!(row.commits, 128, "{}", result.render_table());
            let ratio = row.percent_of_baseline / 100.0;
            let (least, most) = (1.0 / (1.0 + commit_ms), 1.0 / commit_ms);
            assert!(
                (least * 0.98..=most * 1.02).contains(&ratio),
                "{ratio} not in {least}..{most}: {}",
                result.render_table()
            );
        }
        assert!(sas.ratio > result.sync_ratio && ssd.ratio > sas.ratio);
        assert_eq!(sas.device, "SAS tier");
        // The paper's figures sit beside each configuration.
        assert_eq!(result.rows[1].paper_percent, Some(24.9));
        assert_eq!(result.rows[4].paper_percent, Some(58.7));
        assert!(result.render_table().contains("% of base"));
        assert!(
            progress_lines
                .lock()
                .unwrap()
                .iter()
                .any(|l| l.contains("128/128") || l.contains("8/8 MiB"))
        );
        let json = serde_json::to_value(&result).unwrap();
        for key in [
            "baseline_mib_s",
            "sync_mib_s",
            "async_mib_s",
            "sync_ratio",
            "async_ratio",
            "disk",
        ] {
            assert!(json.get(key).is_some(), "{key}");
        }
    }
}
