//! Applying a decided mutation. Every precondition is checked before anything changes, so a
//! mutation that does not fit (a damaged or misordered log) is refused and leaves the
//! namespace as it was. Limits are not checked here: they were checked when the mutation was
//! planned, and a log must replay even if a later configuration lowers them.

use std::collections::BTreeMap;

use super::Namespace;
use super::inode::{Ino, Inode, InodeKind, MODE_MAX, Orphan, Owner, ROOT_INO};
use super::op::{Mutation, Outcome};
use crate::path::check_name;

/// Why a mutation does not fit the namespace.
type Refusal = String;

impl Namespace {
    /// Applies `mutation`. Refuses, changing nothing, one that does not fit the namespace.
    ///
    /// Long (280 lines) on purpose: one arm per kind of mutation, each a few checks and the
    /// change, so that every way the namespace changes is read in one place, in one order.
    pub fn apply(&mut self, mutation: &Mutation) -> Result<Outcome, Refusal> {
        match mutation {
            Mutation::Mkdir {
                parent,
                name,
                ino,
                mode,
                uid,
                gid,
                time_ns,
                default_stripe,
            } => {
                self.fits_new_entry(*parent, name, *ino, *mode)?;
                if let Some(stripe) = default_stripe {
                    stripe.check().map_err(|e| e.to_string())?;
                }
                let kind = InodeKind::Directory {
                    parent: *parent,
                    entries: BTreeMap::new(),
                    default_stripe: *default_stripe,
                    subdirectories: 0,
                };
                let owner = Owner {
                    uid: *uid,
                    gid: *gid,
                };
                Ok(Outcome::Created(self.insert(
                    *parent,
                    name,
                    *ino,
                    (*mode, owner),
                    *time_ns,
                    kind,
                )))
            }
            Mutation::Create {
                parent,
                name,
                ino,
                mode,
                uid,
                gid,
                time_ns,
                layout,
                round_robin_next,
            } => {
                self.fits_new_entry(*parent, name, *ino, *mode)?;
                // A `Layout` is valid by construction (and when read off the log).
                if layout.objects().iter().any(|o| o.object_id == u64::MAX) {
                    return Err("object id u64::MAX leaves no next id".into());
                }
                // Object ids are never reused: the next id on each target passes this file's.
                for object in layout.objects() {
                    let next = self
                        .state
                        .next_object_ids
                        .entry(object.target)
                        .or_insert(object.object_id + 1);
                    *next = (*next).max(object.object_id + 1);
                }
                self.state.round_robin_next = *round_robin_next;
                let kind = InodeKind::File {
                    layout: layout.clone(),
                };
                let owner = Owner {
                    uid: *uid,
                    gid: *gid,
                };
                Ok(Outcome::Created(self.insert(
                    *parent,
                    name,
                    *ino,
                    (*mode, owner),
                    *time_ns,
                    kind,
                )))
            }
            Mutation::Unlink {
                parent,
                name,
                ino,
                time_ns,
                orphan_owner,
            } => {
                if let InodeKind::Directory { .. } = self.entry_inode(*parent, name, *ino)?.kind {
                    return Err(format!("unlink of directory {ino}"));
                }
                self.entries_mut(*parent).remove(name.as_str());
                self.touch_directory(*parent, *time_ns);
                Ok(self.unname(*ino, *time_ns, orphan_owner.as_deref()))
            }
            Mutation::Link {
                parent,
                name,
                ino,
                time_ns,
            } => {
                self.dir(*parent)?;
                check_name(name).map_err(|_| format!("invalid name {name:?}"))?;
                if self.entries(*parent).contains_key(name) {
                    return Err(format!("{name:?} already exists in directory {parent}"));
                }
                match self.state.inodes.get(ino) {
                    None => return Err(format!("link to no inode {ino}")),
                    Some(inode) if matches!(inode.kind, InodeKind::Directory { .. }) => {
                        return Err(format!("link to directory {ino}"));
                    }
                    Some(inode) if inode.names == 0 => {
                        return Err(format!("link to orphan {ino}"));
                    }
                    Some(_) => {}
                }
                self.entries_mut(*parent).insert(name.clone(), *ino);
                self.touch_directory(*parent, *time_ns);
                let inode = self.state.inodes.get_mut(ino).expect("checked above");
                inode.names += 1;
                inode.ctime_ns = *time_ns;
                Ok(Outcome::Created(inode.attributes()))
            }
            Mutation::Symlink {
                parent,
                name,
                ino,
                target,
                uid,
                gid,
                time_ns,
            } => {
                self.fits_new_entry(*parent, name, *ino, 0o777)?;
                if target.is_empty() || target.contains('\0') {
                    return Err(format!("symbolic link target {target:?}"));
                }
                let kind = InodeKind::Symlink {
                    target: target.clone(),
                };
                let owner = Owner {
                    uid: *uid,
                    gid: *gid,
                };
                Ok(Outcome::Created(self.insert(
                    *parent,
                    name,
                    *ino,
                    (0o777, owner),
                    *time_ns,
                    kind,
                )))
            }
            Mutation::Mknod {
                parent,
                name,
                ino,
                node,
                rdev,
                mode,
                uid,
                gid,
                time_ns,
            } => {
                self.fits_new_entry(*parent, name, *ino, *mode)?;
                let kind = InodeKind::Special {
                    node: *node,
                    rdev: *rdev,
                };
                let owner = Owner {
                    uid: *uid,
                    gid: *gid,
                };
                Ok(Outcome::Created(self.insert(
                    *parent,
                    name,
                    *ino,
                    (*mode, owner),
                    *time_ns,
                    kind,
                )))
            }
            Mutation::DropOrphan { ino } => {
                if self.state.orphans.remove(ino).is_none() {
                    return Err(format!("inode {ino} is not an orphan"));
                }
                let inode = self
                    .state
                    .inodes
                    .remove(ino)
                    .ok_or_else(|| format!("orphan {ino} has no inode"))?;
                Ok(match inode.kind {
                    InodeKind::File { layout } => Outcome::Unlinked(layout),
                    _ => Outcome::Removed,
                })
            }
            Mutation::Rmdir {
                parent,
                name,
                ino,
                time_ns,
            } => {
                match &self.entry_inode(*parent, name, *ino)?.kind {
                    InodeKind::Directory { entries, .. } if entries.is_empty() => {}
                    _ => return Err(format!("rmdir of {ino}, not an empty directory")),
                }
                self.remove(*parent, name, *ino, *time_ns);
                Ok(Outcome::Removed)
            }
            Mutation::Rename {
                source_parent,
                source_name,
                target_parent,
                target_name,
                ino,
                replaced,
                time_ns,
                orphan_owner,
            } => self.apply_rename(
                (*source_parent, source_name),
                (*target_parent, target_name),
                (*ino, *replaced),
                *time_ns,
                orphan_owner.as_deref(),
            ),
            Mutation::SetStripe {
                dir,
                default_stripe,
                time_ns,
            } => {
                if let Some(stripe) = default_stripe {
                    stripe.check().map_err(|e| e.to_string())?;
                }
                let inode = self.dir_mut(*dir)?;
                let InodeKind::Directory {
                    default_stripe: slot,
                    ..
                } = &mut inode.kind
                else {
                    unreachable!("dir_mut returns directories");
                };
                *slot = *default_stripe;
                inode.ctime_ns = *time_ns;
                Ok(Outcome::StripeSet)
            }
            Mutation::SetAttr {
                ino,
                mode,
                uid,
                gid,
                atime_ns,
                mtime_ns,
                ctime_ns,
            } => {
                if mode.is_some_and(|m| m > MODE_MAX) {
                    return Err(format!("mode {mode:?} out of range"));
                }
                let inode = self
                    .state
                    .inodes
                    .get_mut(ino)
                    .ok_or_else(|| format!("no inode {ino}"))?;
                if let Some(mode) = mode {
                    inode.mode = *mode;
                }
                if uid.is_some() {
                    inode.uid = *uid;
                }
                if gid.is_some() {
                    inode.gid = *gid;
                }
                if atime_ns.is_some() {
                    inode.atime_ns = *atime_ns;
                } else if inode.atime_ns.is_none() {
                    // Kept apart from the mtime from now on, which may be about to change.
                    inode.atime_ns = Some(inode.mtime_ns);
                }
                if let Some(mtime) = mtime_ns {
                    inode.mtime_ns = *mtime;
                }
                inode.ctime_ns = *ctime_ns;
                Ok(Outcome::AttributesSet(inode.attributes()))
            }
        }
    }

    fn apply_rename(
        &mut self,
        (source_parent, source_name): (Ino, &str),
        (target_parent, target_name): (Ino, &str),
        (ino, replaced): (Ino, Option<Ino>),
        time_ns: u64,
        orphan_owner: Option<&str>,
    ) -> Result<Outcome, Refusal> {
        // Check everything first.
        let moving_dir = matches!(
            self.entry_inode(source_parent, source_name, ino)?.kind,
            InodeKind::Directory { .. }
        );
        self.dir(target_parent)?;
        check_name(target_name).map_err(|_| format!("invalid name {target_name:?}"))?;
        if (source_parent, source_name) == (target_parent, target_name) {
            return Err("rename onto itself is never logged".into());
        }
        if moving_dir && self.is_within(target_parent, ino) {
            return Err(format!("rename would move directory {ino} into itself"));
        }
        let existing = self.entries(target_parent).get(target_name).copied();
        if existing != replaced {
            return Err(format!(
                "rename target {target_name:?} in {target_parent} holds {existing:?}, the log says {replaced:?}"
            ));
        }
        if let Some(victim) = replaced {
            if victim == ino {
                return Err("rename between two names of one inode is never logged".into());
            }
            match (&self.inode(victim).kind, moving_dir) {
                (InodeKind::Directory { entries, .. }, true) if entries.is_empty() => {}
                (InodeKind::Directory { .. }, _) | (_, true) => {
                    return Err(format!("rename cannot replace inode {victim}"));
                }
                _ => {}
            }
        }
        // Then change: unhook the source, drop what is replaced, hook in the target.
        self.entries_mut(source_parent).remove(source_name);
        let mut outcome = Outcome::Renamed {
            replaced: None,
            orphaned: false,
        };
        if let Some(victim) = replaced {
            if moving_dir {
                self.state.inodes.remove(&victim);
            } else {
                outcome = match self.unname(victim, time_ns, orphan_owner) {
                    Outcome::Unlinked(layout) => Outcome::Renamed {
                        replaced: Some(layout),
                        orphaned: false,
                    },
                    Outcome::Orphaned => Outcome::Renamed {
                        replaced: None,
                        orphaned: true,
                    },
                    _ => outcome,
                };
            }
        }
        if moving_dir {
            // The moved directory leaves its old parent's count; a directory it replaces
            // leaves the new parent's, where the moved one takes its place.
            self.count_subdirectory(source_parent, -1);
            if replaced.is_none() {
                self.count_subdirectory(target_parent, 1);
            }
        }
        self.entries_mut(target_parent)
            .insert(target_name.to_owned(), ino);
        let moved = self.state.inodes.get_mut(&ino).expect("checked above");
        moved.ctime_ns = time_ns;
        if let InodeKind::Directory { parent, .. } = &mut moved.kind {
            *parent = target_parent;
        }
        for dir in [source_parent, target_parent] {
            let inode = self.state.inodes.get_mut(&dir).expect("checked above");
            inode.mtime_ns = time_ns;
            inode.ctime_ns = time_ns;
        }
        Ok(outcome)
    }

    /// Inode `ino` (not a directory) lost a name, already taken out of its directory: one
    /// name fewer and its change time moved; at its last, it is kept as `orphan_owner`'s
    /// orphan if that is set and it is a file (only files are held open), else removed.
    fn unname(&mut self, ino: Ino, time_ns: u64, orphan_owner: Option<&str>) -> Outcome {
        let inode = self
            .state
            .inodes
            .get_mut(&ino)
            .expect("callers check the entry names it");
        assert!(inode.names > 0, "an inode named by an entry counts it");
        inode.names -= 1;
        inode.ctime_ns = time_ns;
        if inode.names > 0 {
            return Outcome::Removed;
        }
        if let (Some(owner), InodeKind::File { .. }) = (orphan_owner, &inode.kind) {
            self.state.orphans.insert(
                ino,
                Orphan {
                    owner: owner.to_owned(),
                    since_ns: time_ns,
                },
            );
            return Outcome::Orphaned;
        }
        match self.state.inodes.remove(&ino).map(|i| i.kind) {
            Some(InodeKind::File { layout }) => Outcome::Unlinked(layout),
            _ => Outcome::Removed,
        }
    }

    /// Directory `dir`'s entries changed at `time_ns`.
    fn touch_directory(&mut self, dir: Ino, time_ns: u64) {
        let inode = self
            .state
            .inodes
            .get_mut(&dir)
            .expect("callers check the directory");
        inode.mtime_ns = time_ns;
        inode.ctime_ns = time_ns;
    }

    /// Checks that a new inode `ino` named `name` fits in `parent`.
    fn fits_new_entry(&self, parent: Ino, name: &str, ino: Ino, mode: u32) -> Result<(), Refusal> {
        self.dir(parent)?;
        check_name(name).map_err(|_| format!("invalid name {name:?}"))?;
        if self.entries(parent).contains_key(name) {
            return Err(format!("{name:?} already exists in directory {parent}"));
        }
        if ino != self.state.next_ino {
            return Err(format!(
                "new inode {ino} is not the next inode number {}",
                self.state.next_ino
            ));
        }
        if mode > MODE_MAX {
            return Err(format!("mode {mode:#o} out of range"));
        }
        Ok(())
    }

    /// Adds inode `ino` as entry `name` of `parent`, after [`Namespace::fits_new_entry`].
    fn insert(
        &mut self,
        parent: Ino,
        name: &str,
        ino: Ino,
        (mode, owner): (u32, Owner),
        time_ns: u64,
        kind: InodeKind,
    ) -> super::inode::Attributes {
        let directory = matches!(kind, InodeKind::Directory { .. });
        let inode = Inode {
            ino,
            kind,
            names: 1,
            mode,
            uid: owner.uid,
            gid: owner.gid,
            ctime_ns: time_ns,
            mtime_ns: time_ns,
            atime_ns: Some(time_ns),
        };
        let attributes = inode.attributes();
        if directory {
            self.count_subdirectory(parent, 1);
        }
        self.state.inodes.insert(ino, inode);
        self.state.next_ino = ino + 1;
        self.entries_mut(parent).insert(name.to_owned(), ino);
        let parent = self
            .state
            .inodes
            .get_mut(&parent)
            .expect("checked by fits_new_entry");
        parent.mtime_ns = time_ns;
        parent.ctime_ns = time_ns;
        attributes
    }

    /// Removes entry `name` of `parent` and its inode `ino`, after checking both.
    fn remove(&mut self, parent: Ino, name: &str, ino: Ino, time_ns: u64) {
        assert!(ino != ROOT_INO, "the root has no entry to remove");
        self.entries_mut(parent).remove(name);
        let removed = self.state.inodes.remove(&ino);
        if removed.is_some_and(|inode| matches!(inode.kind, InodeKind::Directory { .. })) {
            self.count_subdirectory(parent, -1);
        }
        let parent = self
            .state
            .inodes
            .get_mut(&parent)
            .expect("checked by the caller");
        parent.mtime_ns = time_ns;
        parent.ctime_ns = time_ns;
    }

    /// The inode entry `name` of directory `parent` names, which must be `ino`.
    fn entry_inode(&self, parent: Ino, name: &str, ino: Ino) -> Result<&Inode, Refusal> {
        self.dir(parent)?;
        match self.entries(parent).get(name) {
            Some(found) if *found == ino => Ok(self.inode(ino)),
            found => Err(format!(
                "entry {name:?} of directory {parent} names {found:?}, the log says {ino}"
            )),
        }
    }

    fn dir(&self, ino: Ino) -> Result<&Inode, Refusal> {
        match self.state.inodes.get(&ino) {
            Some(
                inode @ Inode {
                    kind: InodeKind::Directory { .. },
                    ..
                },
            ) => Ok(inode),
            Some(_) => Err(format!("inode {ino} is not a directory")),
            None => Err(format!("no inode {ino}")),
        }
    }

    fn dir_mut(&mut self, ino: Ino) -> Result<&mut Inode, Refusal> {
        self.dir(ino)?;
        Ok(self.state.inodes.get_mut(&ino).expect("checked just above"))
    }

    /// Directory `dir` holds one directory more (`1`) or fewer (`-1`).
    fn count_subdirectory(&mut self, dir: Ino, change: i64) {
        match self.state.inodes.get_mut(&dir).map(|i| &mut i.kind) {
            Some(InodeKind::Directory { subdirectories, .. }) => {
                *subdirectories = subdirectories
                    .checked_add_signed(change)
                    .expect("a directory never holds fewer than no subdirectories");
            }
            _ => unreachable!("callers pass checked directories"),
        }
    }

    fn entries_mut(&mut self, dir: Ino) -> &mut BTreeMap<String, Ino> {
        match self.state.inodes.get_mut(&dir).map(|i| &mut i.kind) {
            Some(InodeKind::Directory { entries, .. }) => entries,
            _ => unreachable!("callers pass checked directories"),
        }
    }
}
