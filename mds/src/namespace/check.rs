//! The namespace's invariants, checked after loading a snapshot and, in tests, after every
//! mutation.

use std::collections::{BTreeMap, HashSet};

use super::Namespace;
use super::inode::{InodeKind, MODE_MAX, ROOT_INO};
use crate::limits::PATH_DEPTH_MAX;
use crate::path::check_name;

impl Namespace {
    /// Checks what must always hold: the root is a directory that is its own parent; every
    /// entry has a valid name and names an existing inode; every other directory is named by
    /// exactly one entry, anything else by as many as it counts — none only for an orphan,
    /// which is a file; a directory's parent pointer names the directory holding it; every
    /// directory reaches the root within the depth limit; inode numbers are below `next_ino`;
    /// layouts are valid, objects are unique and below their target's next object id.
    pub fn check_invariants(&self) -> Result<(), String> {
        let inodes = &self.state.inodes;
        match inodes.get(&ROOT_INO).map(|r| &r.kind) {
            Some(InodeKind::Directory { parent, .. }) if *parent == ROOT_INO => {}
            _ => return Err("the root is missing, not a directory, or not its own parent".into()),
        }
        // How many entries name each inode, and the directory naming each directory.
        let mut names: BTreeMap<u64, u32> = BTreeMap::new();
        let mut directory_named_by: BTreeMap<u64, u64> = BTreeMap::new();
        let mut objects = HashSet::new();
        for (&ino, inode) in inodes {
            if inode.ino != ino {
                return Err(format!("inode {ino} says it is {}", inode.ino));
            }
            if ino >= self.state.next_ino {
                return Err(format!(
                    "inode {ino} is not below next_ino {}",
                    self.state.next_ino
                ));
            }
            if inode.mode > MODE_MAX {
                return Err(format!("inode {ino} has mode {:#o}", inode.mode));
            }
            match &inode.kind {
                InodeKind::Directory {
                    entries,
                    default_stripe,
                    subdirectories,
                    ..
                } => {
                    let counted = entries
                        .values()
                        .filter(|child| {
                            inodes
                                .get(child)
                                .is_some_and(|c| matches!(c.kind, InodeKind::Directory { .. }))
                        })
                        .count() as u64;
                    if counted != *subdirectories {
                        return Err(format!(
                            "directory {ino} counts {subdirectories} subdirectories and holds {counted}"
                        ));
                    }
                    if let Some(stripe) = default_stripe {
                        stripe
                            .check()
                            .map_err(|e| format!("directory {ino}: {e}"))?;
                    }
                    for (name, child) in entries {
                        check_name(name)
                            .map_err(|_| format!("directory {ino} has an invalid name {name:?}"))?;
                        let Some(child_inode) = inodes.get(child) else {
                            return Err(format!("{name:?} in directory {ino} names no inode"));
                        };
                        if *child == ROOT_INO {
                            return Err(format!("{name:?} in directory {ino} names the root"));
                        }
                        *names.entry(*child).or_default() += 1;
                        if let InodeKind::Directory { parent, .. } = child_inode.kind {
                            if let Some(other) = directory_named_by.insert(*child, ino) {
                                return Err(format!(
                                    "directory {child} is named in directories {other} and {ino}"
                                ));
                            }
                            if parent != ino {
                                return Err(format!(
                                    "directory {child} is in {ino} but its parent says {parent}"
                                ));
                            }
                        }
                    }
                }
                InodeKind::File { layout } => {
                    // A `Layout` is valid by construction: only what spans files is checked.
                    for object in layout.objects() {
                        if !objects.insert(*object) {
                            return Err(format!("file {ino} shares object {object:?}"));
                        }
                        let next = self.state.next_object_ids.get(&object.target).copied();
                        if next.is_none_or(|next| object.object_id >= next) {
                            return Err(format!(
                                "file {ino}'s object {object:?} is not below its target's next id {next:?}"
                            ));
                        }
                    }
                }
                InodeKind::Symlink { target } => {
                    if target.is_empty() || target.contains('\0') {
                        return Err(format!("symbolic link {ino} points to {target:?}"));
                    }
                }
                InodeKind::Special { .. } => {}
            }
        }
        // Every inode but the root and the orphans is named; a directory once, anything
        // else as often as it counts; an orphan is a file named by nothing.
        for (&ino, inode) in inodes {
            let named = names.get(&ino).copied().unwrap_or(0);
            let orphan = self.state.orphans.contains_key(&ino);
            let expected = match &inode.kind {
                _ if ino == ROOT_INO => 0,
                InodeKind::Directory { .. } => 1,
                _ => inode.names,
            };
            if named != expected || (ino == ROOT_INO && inode.names != 1) {
                return Err(format!(
                    "inode {ino} is named by {named} entries and counts {} names",
                    inode.names
                ));
            }
            if (named == 0 && ino != ROOT_INO) != orphan {
                return Err(format!(
                    "inode {ino} is named by {named} entries and {} an orphan",
                    if orphan { "is" } else { "is not" }
                ));
            }
            if orphan && !matches!(inode.kind, InodeKind::File { .. }) {
                return Err(format!("orphan {ino} is not a regular file"));
            }
        }
        if let Some(ino) = self.state.orphans.keys().find(|o| !inodes.contains_key(o)) {
            return Err(format!("orphan {ino} has no inode"));
        }
        // Every directory reaches the root by parent pointers within the depth limit.
        for (&ino, inode) in inodes {
            if !matches!(inode.kind, InodeKind::Directory { .. }) {
                continue;
            }
            let mut current = ino;
            let mut depth = 0;
            while current != ROOT_INO {
                current = self.parent(current);
                depth += 1;
                if depth > PATH_DEPTH_MAX {
                    return Err(format!(
                        "directory {ino} is deeper than {PATH_DEPTH_MAX} or in a cycle"
                    ));
                }
            }
        }
        Ok(())
    }
}
