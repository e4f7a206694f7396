//! Planning: check an operation against the namespace and make every choice in it — the new
//! inode's number, a file's targets (round-robin or from its starting index) and object ids —
//! without changing anything.

use super::Namespace;
use super::inode::{
    Ino, Inode, InodeKind, MODE_MAX, Owner, ROOT_INO, SET_GROUP_ID, SYMLINK_TARGET_MAX_BYTES,
    SetAttributes, SpecialNode,
};
use super::op::{Keep, Mutation, Op, Outcome, Planned};
use crate::error::{MdsError, Result};
use crate::limits::PATH_DEPTH_MAX;
use crate::path::MdsPath;
use iopath_layout::{FIRST_OBJECT_ID, Layout, ObjectRef, StripeRequest};

impl Namespace {
    /// Checks `op` against the namespace at `time_ns` and decides it. Changes nothing: the
    /// caller logs the mutation, then [`Namespace::apply`]s it.
    pub fn plan(&self, op: &Op, time_ns: u64) -> Result<Planned> {
        match op {
            Op::Mkdir { path, mode, owner } => self.plan_mkdir(path, *mode, *owner, time_ns),
            Op::Create {
                path,
                mode,
                owner,
                stripe,
            } => self.plan_create(path, *mode, *owner, stripe, time_ns),
            Op::Unlink { path, keep } => self.plan_unlink(path, keep.as_ref(), time_ns),
            Op::Rmdir { path } => self.plan_rmdir(path, time_ns),
            Op::Rename {
                source,
                target,
                keep,
            } => self.plan_rename(source, target, keep.as_ref(), time_ns),
            Op::SetStripe { path, stripe } => self.plan_setstripe(path, stripe.as_ref(), time_ns),
            Op::SetAttr { ino, change } => self.plan_setattr(*ino, change, time_ns),
            Op::Link { ino, path } => self.plan_link(*ino, path, time_ns),
            Op::Symlink {
                path,
                target,
                owner,
            } => self.plan_symlink(path, target, *owner, time_ns),
            Op::Mknod {
                path,
                node,
                mode,
                rdev,
                owner,
            } => self.plan_mknod(path, *node, *mode, *rdev, *owner, time_ns),
            Op::DropOrphan { ino } => {
                if !self.state.orphans.contains_key(ino) {
                    return Err(MdsError::InvalidArgument {
                        why: format!("inode {ino} is not an orphan"),
                    });
                }
                Ok(Planned::Change(Mutation::DropOrphan { ino: *ino }))
            }
        }
    }

    fn plan_link(&self, ino: Ino, path: &MdsPath, time_ns: u64) -> Result<Planned> {
        let inode = self.inode_numbered(ino)?;
        if let InodeKind::Directory { .. } = inode.kind {
            return Err(MdsError::NotPermitted {
                why: format!("{path}: a directory cannot be given another name"),
            });
        }
        if inode.names == 0 {
            // Linux refuses to name again a file whose last name is gone.
            return Err(MdsError::NoSuchInode { ino });
        }
        if inode.names >= LINKS_MAX {
            return Err(MdsError::TooManyLinks { max: LINKS_MAX });
        }
        let Some((parent, name)) = self.new_entry_checked(path, false)? else {
            return Err(MdsError::Exists {
                path: path.to_string(),
            });
        };
        Ok(Planned::Change(Mutation::Link {
            parent,
            name: name.to_owned(),
            ino,
            time_ns,
        }))
    }

    fn plan_symlink(
        &self,
        path: &MdsPath,
        target: &str,
        owner: Owner,
        time_ns: u64,
    ) -> Result<Planned> {
        check_symlink_target(target)?;
        let Some((parent, name)) = self.new_entry(path)? else {
            return Err(MdsError::Exists {
                path: path.to_string(),
            });
        };
        let (_, owner) = self.inherit_group(parent, 0o777, owner, false);
        Ok(Planned::Change(Mutation::Symlink {
            parent,
            name: name.to_owned(),
            ino: self.state.next_ino,
            target: target.to_owned(),
            uid: owner.uid,
            gid: owner.gid,
            time_ns,
        }))
    }

    fn plan_mknod(
        &self,
        path: &MdsPath,
        node: SpecialNode,
        mode: u32,
        rdev: u64,
        owner: Owner,
        time_ns: u64,
    ) -> Result<Planned> {
        check_mode(mode)?;
        let Some((parent, name)) = self.new_entry(path)? else {
            return Err(MdsError::Exists {
                path: path.to_string(),
            });
        };
        let rdev = match node {
            SpecialNode::CharDevice | SpecialNode::BlockDevice => rdev,
            SpecialNode::Fifo | SpecialNode::Socket => 0,
        };
        let (mode, owner) = self.inherit_group(parent, mode, owner, false);
        Ok(Planned::Change(Mutation::Mknod {
            parent,
            name: name.to_owned(),
            ino: self.state.next_ino,
            node,
            rdev,
            mode,
            uid: owner.uid,
            gid: owner.gid,
            time_ns,
        }))
    }

    fn plan_mkdir(&self, path: &MdsPath, mode: u32, owner: Owner, time_ns: u64) -> Result<Planned> {
        check_mode(mode)?;
        let Some((parent, name)) = self.new_entry(path)? else {
            return Err(MdsError::Exists {
                path: path.to_string(),
            });
        };
        let (mode, owner) = self.inherit_group(parent, mode, owner, true);
        Ok(Planned::Change(Mutation::Mkdir {
            parent,
            name: name.to_owned(),
            ino: self.state.next_ino,
            mode,
            uid: owner.uid,
            gid: owner.gid,
            time_ns,
            // New directories start with their parent's default, as in Lustre.
            default_stripe: self.own_default(parent),
        }))
    }

    fn plan_create(
        &self,
        path: &MdsPath,
        mode: u32,
        owner: Owner,
        stripe: &StripeRequest,
        time_ns: u64,
    ) -> Result<Planned> {
        check_mode(mode)?;
        stripe.check()?;
        let Some((parent, name)) = self.new_entry(path)? else {
            return Err(MdsError::Exists {
                path: path.to_string(),
            });
        };
        // Fields left to inherit come from the directory's default, then the file system's.
        let effective = stripe
            .inherit(&self.own_default(parent).unwrap_or(StripeRequest::INHERIT))
            .inherit(&self.file_system_default());
        let targets = &self.config.targets;
        let resolved = effective.resolve(targets)?;
        // Round-robin: a file with no starting target starts one position after the last such
        // file, so files of one stripe each spread over every target in turn.
        let (start, round_robin_next) = match resolved.start_position(targets) {
            Some(position) => (position, self.state.round_robin_next),
            None => (
                (self.state.round_robin_next % targets.len() as u64) as usize,
                self.state.round_robin_next.wrapping_add(1),
            ),
        };
        let mut objects = Vec::with_capacity(resolved.stripe_count as usize);
        for k in 0..resolved.stripe_count as usize {
            let target = targets[(start + k) % targets.len()];
            let object_id = self
                .state
                .next_object_ids
                .get(&target)
                .copied()
                .unwrap_or(FIRST_OBJECT_ID);
            if object_id == u64::MAX {
                return Err(MdsError::LimitReached {
                    what: "object ids on a target",
                    max: u64::MAX,
                });
            }
            objects.push(ObjectRef { target, object_id });
        }
        // Distinct targets (consecutive positions in a list of distinct indices), ids ≥ 1, a
        // resolved size: the layout core checks it all again.
        let layout = Layout::new(resolved.stripe_size_bytes, objects)?;
        let (mode, owner) = self.inherit_group(parent, mode, owner, false);
        Ok(Planned::Change(Mutation::Create {
            parent,
            name: name.to_owned(),
            ino: self.state.next_ino,
            mode,
            uid: owner.uid,
            gid: owner.gid,
            time_ns,
            layout,
            round_robin_next,
        }))
    }

    fn plan_unlink(&self, path: &MdsPath, keep: Option<&Keep>, time_ns: u64) -> Result<Planned> {
        let (parent, name, inode) =
            self.existing_entry(path)?
                .ok_or_else(|| MdsError::IsADirectory {
                    path: path.to_string(),
                })?;
        if let InodeKind::Directory { .. } = inode.kind {
            return Err(MdsError::IsADirectory {
                path: path.to_string(),
            });
        }
        Ok(Planned::Change(Mutation::Unlink {
            parent,
            name: name.to_owned(),
            ino: inode.ino,
            time_ns,
            orphan_owner: orphan_owner(keep, inode.ino),
        }))
    }

    fn plan_rmdir(&self, path: &MdsPath, time_ns: u64) -> Result<Planned> {
        let (parent, name, inode) =
            self.existing_entry(path)?
                .ok_or_else(|| MdsError::InvalidArgument {
                    why: "the root directory cannot be removed".into(),
                })?;
        match &inode.kind {
            InodeKind::File { .. } | InodeKind::Symlink { .. } | InodeKind::Special { .. } => {
                Err(MdsError::NotADirectory {
                    path: path.to_string(),
                })
            }
            InodeKind::Directory { entries, .. } if !entries.is_empty() => {
                Err(MdsError::NotEmpty {
                    path: path.to_string(),
                })
            }
            InodeKind::Directory { .. } => Ok(Planned::Change(Mutation::Rmdir {
                parent,
                name: name.to_owned(),
                ino: inode.ino,
                time_ns,
            })),
        }
    }

    fn plan_rename(
        &self,
        source: &MdsPath,
        target: &MdsPath,
        keep: Option<&Keep>,
        time_ns: u64,
    ) -> Result<Planned> {
        let root_refused = || MdsError::InvalidArgument {
            why: "the root directory cannot be renamed or replaced".into(),
        };
        let (source_parent, source_name, moving) =
            self.existing_entry(source)?.ok_or_else(root_refused)?;
        let (target_parent_path, target_name) = target.split_last().ok_or_else(root_refused)?;
        let target_parent = self.directory_ino(&target_parent_path)?;
        let unchanged = Planned::Unchanged(Outcome::Renamed {
            replaced: None,
            orphaned: false,
        });
        if source == target {
            // POSIX: renaming a name onto itself succeeds and does nothing.
            return Ok(unchanged);
        }
        let moving_dir = matches!(moving.kind, InodeKind::Directory { .. });
        if moving_dir && self.is_within(target_parent, moving.ino) {
            return Err(MdsError::InvalidArgument {
                why: format!("cannot move directory {source} into itself ({target})"),
            });
        }
        let existing = self.entries(target_parent).get(target_name).copied();
        if existing == Some(moving.ino) {
            // POSIX: two names of one file; the rename does nothing.
            return Ok(unchanged);
        }
        let replaced = match existing {
            Some(ino) => {
                let victim = self.inode(ino);
                let victim_dir = matches!(victim.kind, InodeKind::Directory { .. });
                match (moving_dir, victim_dir, &victim.kind) {
                    (false, true, _) => {
                        return Err(MdsError::IsADirectory {
                            path: target.to_string(),
                        });
                    }
                    (true, false, _) => {
                        return Err(MdsError::NotADirectory {
                            path: target.to_string(),
                        });
                    }
                    (true, true, InodeKind::Directory { entries, .. }) if !entries.is_empty() => {
                        return Err(MdsError::NotEmpty {
                            path: target.to_string(),
                        });
                    }
                    _ => Some(ino),
                }
            }
            None => {
                if target_parent != source_parent {
                    self.check_room(target_parent)?;
                }
                None
            }
        };
        if moving_dir && target_parent != source_parent {
            // Everything under the moved directory must stay within the depth limit.
            let deepest = self.depth(target_parent) + 1 + self.height(moving.ino);
            if deepest > PATH_DEPTH_MAX {
                return Err(MdsError::InvalidArgument {
                    why: format!(
                        "moving {source} to {target} would put entries {deepest} levels deep; the maximum is {PATH_DEPTH_MAX}"
                    ),
                });
            }
        }
        Ok(Planned::Change(Mutation::Rename {
            source_parent,
            source_name: source_name.to_owned(),
            target_parent,
            target_name: target_name.to_owned(),
            ino: moving.ino,
            replaced,
            time_ns,
            orphan_owner: replaced.and_then(|victim| orphan_owner(keep, victim)),
        }))
    }

    fn plan_setstripe(
        &self,
        path: &MdsPath,
        stripe: Option<&StripeRequest>,
        time_ns: u64,
    ) -> Result<Planned> {
        let inode = self.lookup(path)?;
        if !matches!(inode.kind, InodeKind::Directory { .. }) {
            return Err(MdsError::InvalidStripe {
                why: format!(
                    "{path} is a file and a file's layout is fixed when it is created: set a \
                     directory's default, or create the file with this layout"
                ),
            });
        }
        let default_stripe = match stripe {
            None => None,
            // All fields "inherit" is no default at all.
            Some(s) if *s == StripeRequest::INHERIT => None,
            Some(s) => {
                s.check_against(&self.config.targets)?;
                Some(*s)
            }
        };
        Ok(Planned::Change(Mutation::SetStripe {
            dir: inode.ino,
            default_stripe,
            time_ns,
        }))
    }

    fn plan_setattr(&self, ino: Ino, change: &SetAttributes, time_ns: u64) -> Result<Planned> {
        self.inode_numbered(ino)?;
        if let Some(mode) = change.mode {
            check_mode(mode)?;
        }
        Ok(Planned::Change(Mutation::SetAttr {
            ino,
            mode: change.mode,
            uid: change.uid,
            gid: change.gid,
            atime_ns: change.atime_ns,
            mtime_ns: change.mtime_ns,
            ctime_ns: change.ctime_ns.unwrap_or(time_ns),
        }))
    }

    /// A new entry's mode and owner in directory `parent`: in a set-group-ID directory it
    /// takes the directory's group, and a new directory is set-group-ID too (as Linux and
    /// BSD do, so a shared project directory's files stay in its group).
    fn inherit_group(&self, parent: Ino, mode: u32, owner: Owner, directory: bool) -> (u32, Owner) {
        let parent = self.inode(parent);
        if parent.mode & SET_GROUP_ID == 0 {
            return (mode, owner);
        }
        let gid = parent.gid.or(owner.gid);
        let mode = if directory { mode | SET_GROUP_ID } else { mode };
        (mode, Owner { gid, ..owner })
    }

    /// For a path that names a new entry: its parent directory and name, after checking the
    /// name is free and there is room (for a new inode too). `None` if the path is the root
    /// (which exists).
    fn new_entry<'p>(&self, path: &'p MdsPath) -> Result<Option<(Ino, &'p str)>> {
        self.new_entry_checked(path, true)
    }

    /// [`Namespace::new_entry`], checking room for a new inode only if `new_inode`.
    fn new_entry_checked<'p>(
        &self,
        path: &'p MdsPath,
        new_inode: bool,
    ) -> Result<Option<(Ino, &'p str)>> {
        let Some((parent_path, name)) = path.split_last() else {
            return Ok(None);
        };
        let parent = self.directory_ino(&parent_path)?;
        if self.entries(parent).contains_key(name) {
            return Err(MdsError::Exists {
                path: path.to_string(),
            });
        }
        self.check_room(parent)?;
        if new_inode && self.inodes_count() >= self.config.limits.inodes_max {
            return Err(MdsError::LimitReached {
                what: "inodes",
                max: self.config.limits.inodes_max,
            });
        }
        Ok(Some((parent, name)))
    }

    /// For a path that names an existing entry: its parent, name and inode. `None` for the
    /// root, which has no entry.
    fn existing_entry<'p>(&self, path: &'p MdsPath) -> Result<Option<(Ino, &'p str, &Inode)>> {
        let Some((parent_path, name)) = path.split_last() else {
            return Ok(None);
        };
        let parent = self.directory_ino(&parent_path)?;
        let ino = self
            .entries(parent)
            .get(name)
            .ok_or_else(|| MdsError::NotFound {
                path: path.to_string(),
            })?;
        Ok(Some((parent, name, self.inode(*ino))))
    }

    /// The directory at `path`.
    fn directory_ino(&self, path: &MdsPath) -> Result<Ino> {
        let inode = self.lookup(path)?;
        match inode.kind {
            InodeKind::Directory { .. } => Ok(inode.ino),
            _ => Err(MdsError::NotADirectory {
                path: path.to_string(),
            }),
        }
    }

    fn check_room(&self, dir: Ino) -> Result<()> {
        let max = self.config.limits.entries_per_directory_max;
        if self.entries(dir).len() as u64 >= max {
            return Err(MdsError::LimitReached {
                what: "entries in one directory",
                max,
            });
        }
        Ok(())
    }

    /// Whether `dir` is `ancestor` or lies below it. Walks parent pointers: at most the depth
    /// limit plus one steps in a consistent namespace, bounded by the inode count regardless.
    pub(super) fn is_within(&self, dir: Ino, ancestor: Ino) -> bool {
        let mut current = dir;
        for _ in 0..=self.state.inodes.len() {
            if current == ancestor {
                return true;
            }
            if current == ROOT_INO {
                return false;
            }
            current = self.parent(current);
        }
        unreachable!("parent pointers form a cycle; check_invariants forbids it")
    }

    /// How many components the path of directory `dir` has (0 for the root).
    fn depth(&self, dir: Ino) -> usize {
        let mut depth = 0;
        let mut current = dir;
        while current != ROOT_INO {
            assert!(
                depth <= self.state.inodes.len(),
                "parent pointers form a cycle"
            );
            current = self.parent(current);
            depth += 1;
        }
        depth
    }

    /// How many levels of entries lie below `dir` (0 for an empty directory).
    fn height(&self, dir: Ino) -> usize {
        // Depth-first with an explicit stack; visits each inode of the subtree once.
        let mut deepest = 0;
        let mut stack = vec![(dir, 0usize)];
        while let Some((ino, level)) = stack.pop() {
            deepest = deepest.max(level);
            if let InodeKind::Directory { entries, .. } = &self.inode(ino).kind {
                for child in entries.values() {
                    stack.push((*child, level + 1));
                }
            }
        }
        deepest
    }

    pub(super) fn entries(&self, dir: Ino) -> &std::collections::BTreeMap<String, Ino> {
        match &self.inode(dir).kind {
            InodeKind::Directory { entries, .. } => entries,
            _ => unreachable!("callers pass directories"),
        }
    }

    pub(super) fn parent(&self, dir: Ino) -> Ino {
        match &self.inode(dir).kind {
            InodeKind::Directory { parent, .. } => *parent,
            _ => unreachable!("only directories have parent pointers"),
        }
    }
}

fn check_mode(mode: u32) -> Result<()> {
    if mode > MODE_MAX {
        return Err(MdsError::InvalidArgument {
            why: format!("mode {mode:#o} has bits beyond {MODE_MAX:#o}"),
        });
    }
    Ok(())
}

/// Most names one inode may have (Linux's ext4 `EXT4_LINK_MAX`).
pub const LINKS_MAX: u32 = 65_000;

/// The owner to keep `ino` as an orphan for, if `keep` names it.
fn orphan_owner(keep: Option<&Keep>, ino: Ino) -> Option<String> {
    keep.filter(|k| k.ino == ino).map(|k| k.owner.clone())
}

fn check_symlink_target(target: &str) -> Result<()> {
    let why = if target.is_empty() {
        "a symbolic link's target cannot be empty"
    } else if target.len() > SYMLINK_TARGET_MAX_BYTES {
        "a symbolic link's target is longer than 4095 bytes"
    } else if target.contains('\0') {
        "a symbolic link's target cannot hold a NUL"
    } else {
        return Ok(());
    };
    Err(MdsError::InvalidArgument { why: why.into() })
}
