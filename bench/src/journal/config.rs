//! `JournalBenchConfig`: what the journal benchmark runs.

use std::path::PathBuf;

use iopath_storage_server::engine::EngineConfig;
use iopath_storage_server::engine::modeled::DiskModel;
use serde::{Deserialize, Serialize};

use crate::error::BenchError;
use crate::writers::Requests;

/// A modeled external journal device: the Spider paper's two hardware fixes for the seeks
/// that synchronous commits cost on a shared data-and-journal tier.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalDevice {
    /// Its name in the table ("SAS tier").
    pub name: String,
    /// The device.
    pub model: DiskModel,
    /// The paper's share of the baseline with the journal here, percent, if it measured one.
    #[serde(default)]
    pub paper_percent: Option<f64>,
}

impl JournalDevice {
    /// The paper's: an internal SAS tier and a network-attached solid-state device.
    pub fn paper() -> Vec<JournalDevice> {
        vec![
            JournalDevice {
                name: "SAS tier".into(),
                model: DiskModel::sas_journal(),
                paper_percent: Some(35.2),
            },
            JournalDevice {
                name: "solid-state device".into(),
                model: DiskModel::ssd(),
                paper_percent: Some(58.7),
            },
        ]
    }
}

/// The benchmark's parameters (obdfilter-survey's `thr`, `nobj`, `rsz`, `size`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JournalBenchConfig {
    /// A directory on the file system to measure; each phase works in a fresh temporary
    /// directory inside it and removes it afterwards.
    pub dir: PathBuf,
    /// Where the external journals' files go (a temporary directory inside). On a real disk an
    /// extra phase runs only when this is set (the external journal on another file system);
    /// with a modeled disk every device of `journal_devices` has its phase, in `dir` when this
    /// is unset (the device is modeled either way).
    pub external_journal_dir: Option<PathBuf>,
    /// Concurrent writers.
    pub threads: usize,
    /// Objects (files) written.
    pub objects: usize,
    /// Bytes per write request.
    pub request_size_bytes: usize,
    /// Bytes written to each object (rounded down to whole requests).
    pub bytes_per_object: u64,
    /// The real engine.
    pub engine: EngineConfig,
    /// A modeled disk for the data (and internal journal); `None` measures the real disk.
    pub disk_model: Option<DiskModel>,
    /// The modeled external journal devices, a sync phase each (with `disk_model`).
    pub journal_devices: Vec<JournalDevice>,
    /// Async mode's commit interval.
    pub commit_interval_ms: u64,
    /// Records per commit (async mode's count trigger).
    pub group_records_max: usize,
    /// Repetitions; each figure is the best of them (the paper took the best of 5).
    pub runs: u32,
}

impl JournalBenchConfig {
    /// Defaults in `dir`: 4 threads × 4 objects × 1 MiB requests, 256 MiB per object, real disk.
    pub fn new(dir: impl Into<PathBuf>) -> JournalBenchConfig {
        JournalBenchConfig {
            dir: dir.into(),
            external_journal_dir: None,
            threads: 4,
            objects: 4,
            request_size_bytes: 1 << 20,
            bytes_per_object: 256 << 20,
            engine: EngineConfig::default(),
            disk_model: None,
            journal_devices: JournalDevice::paper(),
            commit_interval_ms: 1000,
            group_records_max: 64,
            runs: 1,
        }
    }

    /// Requests per object.
    pub fn requests_per_object(&self) -> u64 {
        self.bytes_per_object / self.request_size_bytes.max(1) as u64
    }

    /// Bytes one phase writes.
    pub fn total_bytes(&self) -> u64 {
        self.requests().total_bytes()
    }

    /// Every phase's requests: the objects' requests split over the threads.
    pub fn requests(&self) -> Requests {
        Requests {
            files: self.objects,
            writers: self.threads,
            request_bytes: self.request_size_bytes as u64,
            requests_per_file: self.requests_per_object(),
        }
    }

    /// Checks the parameters.
    pub fn validate(&self) -> Result<(), BenchError> {
        let problem = if self.threads == 0 || self.threads > 1024 {
            Some("threads must be in 1..=1024".to_string())
        } else if self.objects == 0 || self.objects > 1 << 16 {
            Some("objects must be in 1..=65536".to_string())
        } else if self.request_size_bytes == 0 || self.request_size_bytes > 64 << 20 {
            Some("request size must be in 1 byte..=64 MiB".to_string())
        } else if self.requests_per_object() == 0 {
            Some("bytes per object must hold at least one request".to_string())
        } else if self.runs == 0 || self.runs > 100 {
            Some("runs must be in 1..=100".to_string())
        } else if self.group_records_max == 0 {
            Some("group_records_max must be at least 1".to_string())
        } else {
            None
        };
        if let Some(reason) = problem {
            return Err(BenchError::InvalidConfig { reason });
        }
        if let Some(model) = &self.disk_model {
            model.validate()?;
            for device in &self.journal_devices {
                device.model.validate()?;
            }
        }
        Ok(())
    }
}
