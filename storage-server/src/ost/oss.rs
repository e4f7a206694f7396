//! `Oss`: an object storage server hosting several targets by index.

use super::config::OstConfig;
use super::target::{Ost, OstEngines};
use crate::engine::modeled::{DiskModel, ModeledEngine};
use crate::engine::{DiskEngine, EngineConfig, open_engine};
use crate::error::{Result, StorageError};
use iopath_fabric::fail::FailPoints;
use iopath_layout::{FsName, TargetName};
use std::path::PathBuf;
use std::sync::Arc;

/// How to lay out and run a server's targets.
#[derive(Debug, Clone)]
pub struct OssConfig {
    /// Targets live in `root/ost<index>`; the server's client list and clean-shutdown marker
    /// in `root` itself.
    pub root: PathBuf,
    /// The file-system indices of the targets this server hosts (a stack deals them out to
    /// its servers in turn: `iopath-OST0000` on the first, `iopath-OST0001` on the second, ...).
    pub targets: Vec<u32>,
    /// Settings every target starts from (`index` and `dir` are filled in per target).
    pub template: OstConfig,
    /// The real engine, shared by all targets.
    pub engine: EngineConfig,
    /// A modeled disk per target, if set (each target gets its own head).
    pub disk_model: Option<DiskModel>,
    /// External journals in `dir/ost<index>.journal`, if set.
    pub external_journal_dir: Option<PathBuf>,
    /// The file system the targets belong to: they are named after it (`iopath-OST0003`) in
    /// the server's parameters and messages.
    pub fsname: FsName,
}

impl OssConfig {
    /// The indices `0..count`: a server that is the file system's only one.
    pub fn indices(count: u32) -> Vec<u32> {
        (0..count).collect()
    }
}

/// An object storage server: its targets, addressed by their file-system index.
#[derive(Debug)]
pub struct Oss {
    /// In increasing index order.
    targets: Vec<Arc<Ost>>,
    /// The file system they belong to.
    fsname: FsName,
}

impl Oss {
    /// Opens (formats or recovers) every target. Fails if any target fails: a server does
    /// not come up with part of its storage silently missing.
    pub async fn open(config: OssConfig) -> Result<Oss> {
        Oss::open_with_fail_points(config, FailPoints::new()).await
    }

    /// [`Oss::open`] with the fail points of the node it serves on (`oss.*` sites).
    pub async fn open_with_fail_points(config: OssConfig, fail: Arc<FailPoints>) -> Result<Oss> {
        let engine = open_engine(&config.engine);
        Oss::open_on_engine(config, engine, fail).await
    }

    /// [`Oss::open_with_fail_points`] on a given engine instead of the one `config.engine`
    /// names (the simulation's disk, a fault test's engine).
    pub async fn open_on_engine(
        config: OssConfig,
        engine: Arc<dyn DiskEngine>,
        fail: Arc<FailPoints>,
    ) -> Result<Oss> {
        check_indices(&config.targets)?;
        let mut targets = Vec::with_capacity(config.targets.len());
        let mut indices = config.targets.clone();
        indices.sort_unstable();
        for index in indices {
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
            let engines = OstEngines::shared(data).with_fail_points(Arc::clone(&fail));
            targets.push(Arc::new(Ost::open(target, engines).await?));
        }
        Ok(Oss {
            targets,
            fsname: config.fsname,
        })
    }

    /// Hosts already opened targets (each index once) of file system `fsname`.
    pub fn from_targets(mut targets: Vec<Arc<Ost>>, fsname: FsName) -> Result<Oss> {
        let indices: Vec<u32> = targets.iter().map(|t| t.index()).collect();
        check_indices(&indices)?;
        targets.sort_by_key(|t| t.index());
        Ok(Oss { targets, fsname })
    }

    /// The name of target `index` of its file system: `iopath-OST0003`.
    pub fn target_name(&self, index: u32) -> TargetName {
        self.fsname.ost(index)
    }

    /// The target with this file-system index.
    pub fn target(&self, index: u32) -> Result<&Arc<Ost>> {
        self.targets
            .binary_search_by_key(&index, |t| t.index())
            .map(|position| &self.targets[position])
            .map_err(|_| StorageError::NoSuchTarget {
                index,
                count: self.targets.len(),
            })
    }

    /// The file-system indices of the targets, in increasing order.
    pub fn indices(&self) -> Vec<u32> {
        self.targets.iter().map(|t| t.index()).collect()
    }

    /// All targets, in increasing index order.
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

/// A server hosts at least one target, each index once, each within a name's four
/// hexadecimal digits.
fn check_indices(indices: &[u32]) -> Result<()> {
    if indices.is_empty() {
        return Err(StorageError::InvalidConfig {
            reason: "a server hosts at least one target".into(),
        });
    }
    for (position, index) in indices.iter().enumerate() {
        // A target's name carries its index in four hexadecimal digits, as Lustre's does.
        if *index > iopath_layout::names::TARGET_NAME_INDEX_MAX {
            return Err(StorageError::InvalidConfig {
                reason: format!(
                    "target index {index} is above {}, the largest a target's name can carry",
                    iopath_layout::names::TARGET_NAME_INDEX_MAX
                ),
            });
        }
        if indices[..position].contains(index) {
            return Err(StorageError::InvalidConfig {
                reason: format!("target index {index} is given twice"),
            });
        }
    }
    Ok(())
}
