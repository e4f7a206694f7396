//! `Oss`: an object storage server hosting several targets by index.

use super::config::OstConfig;
use super::target::{Ost, OstEngines};
use crate::engine::modeled::{DiskModel, ModeledEngine};
use crate::engine::{DiskEngine, EngineConfig, open_engine};
use crate::error::{Result, StorageError};
use std::path::PathBuf;
use std::sync::Arc;

/// How to lay out and run a server's targets.
#[derive(Debug, Clone)]
pub struct OssConfig {
    /// Targets live in `root/ost<index>`.
    pub root: PathBuf,
    /// Number of targets.
    pub targets: u32,
    /// Settings every target starts from (`index` and `dir` are filled in per target).
    pub template: OstConfig,
    /// The real engine, shared by all targets.
    pub engine: EngineConfig,
    /// A modeled disk per target, if set (each target gets its own head).
    pub disk_model: Option<DiskModel>,
    /// External journals in `dir/ost<index>.journal`, if set.
    pub external_journal_dir: Option<PathBuf>,
}

/// An object storage server: N targets, addressed by index.
#[derive(Debug)]
pub struct Oss {
    targets: Vec<Arc<Ost>>,
}

impl Oss {
    /// Opens (formats or recovers) every target. Fails if any target fails: a server does
    /// not come up with part of its storage silently missing.
    pub async fn open(config: OssConfig) -> Result<Oss> {
        let engine = open_engine(&config.engine);
        let mut targets = Vec::with_capacity(config.targets as usize);
        for index in 0..config.targets {
            let mut target = config.template.clone();
            target.index = index;
            target.dir = config.root.join(format!("ost{index}"));
            target.external_journal = config
                .external_journal_dir
                .as_ref()
                .map(|dir| dir.join(format!("ost{index}.journal")));
            let data: Arc<dyn DiskEngine> = match config.disk_model {
                Some(model) => Arc::new(ModeledEngine::new(Arc::clone(&engine), model)?),
                None => Arc::clone(&engine),
            };
            targets.push(Arc::new(Ost::open(target, OstEngines::shared(data)).await?));
        }
        Ok(Oss { targets })
    }

    /// Hosts already opened targets (their indexes must be 0..n in order).
    pub fn from_targets(targets: Vec<Arc<Ost>>) -> Result<Oss> {
        for (position, target) in targets.iter().enumerate() {
            if target.index() as usize != position {
                return Err(StorageError::InvalidConfig {
                    reason: format!("target at position {position} has index {}", target.index()),
                });
            }
        }
        Ok(Oss { targets })
    }

    /// The target with this index.
    pub fn target(&self, index: u32) -> Result<&Arc<Ost>> {
        self.targets
            .get(index as usize)
            .ok_or(StorageError::NoSuchTarget {
                index,
                count: self.targets.len(),
            })
    }

    /// All targets, by index.
    pub fn targets(&self) -> &[Arc<Ost>] {
        &self.targets
    }

    /// `lctl set_param obdfilter.*.sync_journal=0|1`: every target at once.
    pub fn set_sync_journal(&self, sync: bool) {
        for target in &self.targets {
            target.set_sync_journal(sync);
        }
    }

    /// Commits and stops every target; the first error is returned after all were asked.
    pub async fn shutdown(&self) -> Result<()> {
        let mut first_error = None;
        for target in &self.targets {
            if let Err(error) = target.shutdown().await {
                first_error.get_or_insert(error);
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}
