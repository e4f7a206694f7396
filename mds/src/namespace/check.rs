//! The namespace's invariants, checked after loading a snapshot and, in tests, after every
//! mutation.

use std::collections::{BTreeMap, HashSet};

use super::Namespace;
use super::inode::{InodeKind, MODE_MAX, ROOT_INO};
use crate::limits::PATH_DEPTH_MAX;
use crate::path::check_name;

impl Namespace {
    /// Checks what must always hold: the root is a directory that is its own parent; every
    /// entry has a valid name and names an existing inode; every other inode is named by
    /// exactly one entry; a directory's parent pointer names the directory holding it; every
    /// directory reaches the root within the depth limit; inode numbers are below `next_ino`;
    /// layouts are valid, objects are unique and below their target's next object id.
    pub fn check_invariants(&self) -> Result<(), String> {
        let inodes = &self.state.inodes;
        match inodes.get(&ROOT_INO).map(|r| &r.kind) {
            Some(InodeKind::Directory { parent, .. }) if *parent == ROOT_INO => {}
            _ => return Err("the root is missing, not a directory, or not its own parent".into()),
        }
        let mut named_by: BTreeMap<u64, u64> = BTreeMap::new();
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
                        if let Some(other) = named_by.insert(*child, ino) {
                            return Err(format!(
                                "inode {child} is named in directories {other} and {ino}"
                            ));
                        }
                        if let InodeKind::Directory { parent, .. } = child_inode.kind
                            && parent != ino
                        {
                            return Err(format!(
                                "directory {child} is in {ino} but its parent says {parent}"
                            ));
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
            }
        }
        if named_by.len() + 1 != inodes.len() {
            return Err(format!(
                "{} inodes but {} are named by an entry (plus the root)",
                inodes.len(),
                named_by.len()
            ));
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
