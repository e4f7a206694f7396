//! The namespace as a pure core: plain structs, operations in, decisions and answers out. No
//! files, sockets or clocks: the caller passes the time, and persistence is the store's job.
//!
//! - [`inode`]: inodes and the views of them that leave the service.
//! - [`op`]: operations asked for, the mutations they are decided into, their outcomes.
//! - `plan`: [`Namespace::plan`] — checks an operation and makes every choice in it.
//! - `apply`: [`Namespace::apply`] — applies a decided mutation, refusing one that does not fit.
//! - `check`: [`Namespace::check_invariants`] — what must hold after every mutation.
//!
//! A change is planned, then logged by the store, then applied; reads ([`Namespace::stat`],
//! [`Namespace::readdir`], ...) go straight to the state.

pub mod inode;
pub mod op;

mod apply;
mod check;
mod plan;

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::{MdsError, Result};
use crate::limits::{MdsLimits, READDIR_PAGE_ENTRIES_MAX, TARGETS_MAX};
use crate::path::MdsPath;
use inode::{Attributes, DirEntry, DirPage, Ino, Inode, InodeKind, Orphan, ROOT_INO, StripeInfo};
use iopath_layout::StripeRequest;

/// What the namespace is configured with (not persisted: it comes from the stack file at
/// every start).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NamespaceConfig {
    /// Target indices, in the order round-robin placement walks them.
    pub targets: Vec<u32>,
    /// The file system's default layout; every field filled in (size and count non-zero).
    pub default_stripe: StripeRequest,
    /// Sizes of the namespace.
    pub limits: MdsLimits,
}

impl NamespaceConfig {
    /// `targets` with Lustre's default layout and the default limits.
    pub fn new(targets: Vec<u32>) -> NamespaceConfig {
        NamespaceConfig {
            targets,
            default_stripe: StripeRequest::LUSTRE_DEFAULT,
            limits: MdsLimits::default(),
        }
    }

    /// Checks the configuration: distinct targets, at most [`TARGETS_MAX`], a default layout
    /// with every field filled in that the targets can honour, non-zero limits.
    pub fn check(&self) -> Result<()> {
        let bad = |why: String| MdsError::InvalidArgument { why };
        if self.targets.len() > TARGETS_MAX {
            return Err(bad(format!(
                "{} targets configured; at most {TARGETS_MAX} are supported",
                self.targets.len()
            )));
        }
        for (i, target) in self.targets.iter().enumerate() {
            if self.targets[..i].contains(target) {
                return Err(bad(format!("target index {target} is configured twice")));
            }
        }
        let default = &self.default_stripe;
        default.check()?;
        if default.stripe_size_bytes == 0 || default.stripe_count == 0 {
            return Err(bad(
                "the default layout must give a stripe size and a stripe count".into(),
            ));
        }
        if !self.targets.is_empty() {
            default.check_against(&self.targets)?;
        }
        let limits = &self.limits;
        if limits.inodes_max < 1 || limits.entries_per_directory_max < 1 {
            return Err(bad("the namespace limits must be at least 1".into()));
        }
        if limits.snapshot_every_records < 1 {
            return Err(bad("snapshot_every_records must be at least 1".into()));
        }
        Ok(())
    }
}

/// Everything the namespace persists: what a snapshot holds.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct NamespaceState {
    /// Every inode, by number.
    pub inodes: BTreeMap<Ino, Inode>,
    /// The number the next inode gets.
    pub next_ino: Ino,
    /// The id the next object on each target gets (absent: [`iopath_layout::FIRST_OBJECT_ID`]).
    pub next_object_ids: BTreeMap<u32, u64>,
    /// Round-robin placement's cursor: the next file without a starting target starts at
    /// position `round_robin_next mod targets`.
    pub round_robin_next: u64,
    /// Inodes with no name left that a client still holds open, by number.
    #[serde(default)]
    pub orphans: BTreeMap<Ino, Orphan>,
}

impl NamespaceState {
    /// Counts what is derived from the entries and not stored: how many entries name each
    /// inode, and how many directories each directory holds.
    fn count_names(&mut self) {
        let mut names: BTreeMap<Ino, u32> = BTreeMap::new();
        let mut subdirectories: BTreeMap<Ino, u64> = BTreeMap::new();
        for (&ino, inode) in &self.inodes {
            if let InodeKind::Directory { entries, .. } = &inode.kind {
                for child in entries.values() {
                    *names.entry(*child).or_default() += 1;
                    if self
                        .inodes
                        .get(child)
                        .is_some_and(|c| matches!(c.kind, InodeKind::Directory { .. }))
                    {
                        *subdirectories.entry(ino).or_default() += 1;
                    }
                }
            }
        }
        for (ino, inode) in &mut self.inodes {
            inode.names = if *ino == ROOT_INO {
                1
            } else {
                names.get(ino).copied().unwrap_or(0)
            };
            if let InodeKind::Directory {
                subdirectories: count,
                ..
            } = &mut inode.kind
            {
                *count = subdirectories.get(ino).copied().unwrap_or(0);
            }
        }
    }

    /// A namespace holding only an empty root directory.
    pub fn fresh() -> NamespaceState {
        let root = Inode {
            ino: ROOT_INO,
            kind: InodeKind::Directory {
                parent: ROOT_INO,
                entries: BTreeMap::new(),
                default_stripe: None,
                subdirectories: 0,
            },
            names: 1,
            mode: 0o755,
            uid: None,
            gid: None,
            ctime_ns: 0,
            mtime_ns: 0,
            atime_ns: None,
        };
        NamespaceState {
            inodes: BTreeMap::from([(ROOT_INO, root)]),
            next_ino: ROOT_INO + 1,
            next_object_ids: BTreeMap::new(),
            round_robin_next: 0,
            orphans: BTreeMap::new(),
        }
    }
}

/// The namespace: its persisted state and its configuration.
#[derive(Debug, Clone)]
pub struct Namespace {
    state: NamespaceState,
    config: NamespaceConfig,
}

impl Namespace {
    /// A fresh namespace (only the root) under `config`.
    pub fn new(config: NamespaceConfig) -> Result<Namespace> {
        config.check()?;
        Ok(Namespace {
            state: NamespaceState::fresh(),
            config,
        })
    }

    /// A namespace from a persisted `state`, which must satisfy every invariant. What is
    /// derived and not stored (each directory's count of subdirectories) is counted here.
    pub fn from_state(mut state: NamespaceState, config: NamespaceConfig) -> Result<Namespace> {
        config.check()?;
        state.count_names();
        let namespace = Namespace { state, config };
        namespace
            .check_invariants()
            .map_err(|why| MdsError::InvalidArgument {
                why: format!("persisted namespace is inconsistent: {why}"),
            })?;
        Ok(namespace)
    }

    /// Its persisted state.
    pub fn state(&self) -> &NamespaceState {
        &self.state
    }

    /// Its configuration.
    pub fn config(&self) -> &NamespaceConfig {
        &self.config
    }

    /// How many inodes it holds (the root included).
    pub fn inodes_count(&self) -> u64 {
        self.state.inodes.len() as u64
    }

    /// The inode at `path`.
    pub fn lookup(&self, path: &MdsPath) -> Result<&Inode> {
        let mut inode = self.inode(ROOT_INO);
        for (depth, name) in path.components().iter().enumerate() {
            let InodeKind::Directory { entries, .. } = &inode.kind else {
                return Err(MdsError::NotADirectory {
                    path: path.prefix(depth).to_string(),
                });
            };
            let ino = entries.get(name).ok_or_else(|| MdsError::NotFound {
                path: path.to_string(),
            })?;
            inode = self.inode(*ino);
        }
        Ok(inode)
    }

    /// `path`'s attributes.
    pub fn stat(&self, path: &MdsPath) -> Result<Attributes> {
        self.lookup(path).map(Inode::attributes)
    }

    /// The attributes of the inode numbered `ino` (with a file's layout): what a client that
    /// holds the number asks, whatever the inode's names are now.
    pub fn stat_ino(&self, ino: Ino) -> Result<Attributes> {
        self.inode_numbered(ino).map(Inode::attributes)
    }

    /// The orphans: inodes with no name left that a client holds open.
    pub fn orphans(&self) -> &BTreeMap<Ino, Orphan> {
        &self.state.orphans
    }

    /// The inode numbered `ino`, or [`MdsError::NoSuchInode`].
    pub fn inode_numbered(&self, ino: Ino) -> Result<&Inode> {
        self.state
            .inodes
            .get(&ino)
            .ok_or(MdsError::NoSuchInode { ino })
    }

    /// A regular file's attributes, with its layout: what a client needs to do I/O on it.
    pub fn open(&self, path: &MdsPath) -> Result<Attributes> {
        let inode = self.lookup(path)?;
        match inode.kind {
            InodeKind::File { .. } => Ok(inode.attributes()),
            InodeKind::Directory { .. } => Err(MdsError::IsADirectory {
                path: path.to_string(),
            }),
            InodeKind::Symlink { .. } | InodeKind::Special { .. } => {
                Err(MdsError::InvalidArgument {
                    why: format!("{path} is not a regular file"),
                })
            }
        }
    }

    /// Up to `entries_max` entries of the directory at `path` whose names sort after `after`
    /// (`""` for the first page), capped at [`READDIR_PAGE_ENTRIES_MAX`].
    pub fn readdir(&self, path: &MdsPath, after: &str, entries_max: u32) -> Result<DirPage> {
        let entries = self.directory_entries(path)?;
        let page_max = match entries_max {
            0 => READDIR_PAGE_ENTRIES_MAX,
            n => n.min(READDIR_PAGE_ENTRIES_MAX),
        } as usize;
        let mut following = entries
            .range::<str, _>((std::ops::Bound::Excluded(after), std::ops::Bound::Unbounded))
            .map(|(name, ino)| DirEntry {
                name: name.clone(),
                ino: *ino,
                file_type: self.inode(*ino).file_type(),
            });
        let page: Vec<DirEntry> = following.by_ref().take(page_max).collect();
        let more = following.next().is_some();
        Ok(DirPage {
            entries: page,
            more,
        })
    }

    /// A file's layout, or a directory's effective default for new files.
    pub fn getstripe(&self, path: &MdsPath) -> Result<StripeInfo> {
        let inode = self.lookup(path)?;
        match &inode.kind {
            InodeKind::File { layout } => Ok(StripeInfo::File(layout.clone())),
            InodeKind::Symlink { .. } | InodeKind::Special { .. } => {
                Err(MdsError::InvalidArgument {
                    why: format!("{path} has no layout: it is not a regular file"),
                })
            }
            InodeKind::Directory { default_stripe, .. } => Ok(StripeInfo::Directory {
                default_stripe: default_stripe
                    .unwrap_or(StripeRequest::INHERIT)
                    .inherit(&self.file_system_default()),
                set_here: default_stripe.is_some(),
            }),
        }
    }

    /// The file system's default layout: the root's default, filled in from the configured one.
    pub fn file_system_default(&self) -> StripeRequest {
        self.own_default(ROOT_INO)
            .unwrap_or(StripeRequest::INHERIT)
            .inherit(&self.config.default_stripe)
    }

    fn own_default(&self, dir: Ino) -> Option<StripeRequest> {
        match &self.inode(dir).kind {
            InodeKind::Directory { default_stripe, .. } => *default_stripe,
            _ => None,
        }
    }

    fn directory_entries(&self, path: &MdsPath) -> Result<&BTreeMap<String, Ino>> {
        match &self.lookup(path)?.kind {
            InodeKind::Directory { entries, .. } => Ok(entries),
            _ => Err(MdsError::NotADirectory {
                path: path.to_string(),
            }),
        }
    }

    /// The inode numbered `ino`, which the caller knows exists (it came from an entry).
    fn inode(&self, ino: Ino) -> &Inode {
        self.state
            .inodes
            .get(&ino)
            .expect("every entry names an existing inode")
    }
}
