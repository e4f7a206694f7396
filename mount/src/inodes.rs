//! [`Inodes`]: the kernel's inode numbers for the paths the client library speaks, a pure
//! core with its own tests.
//!
//! The client library names files by path, as the metadata service does; the kernel names
//! them by inode number and counts how often it has been told each one (`lookup`), telling
//! the file system when it forgets them. This table hands out numbers on first sight, keeps
//! the kernel's count, follows renames (a directory's whole subtree moves with it) and
//! drops a number when the kernel has forgotten it. The root is always number 1.

use std::collections::HashMap;

/// The root directory's inode number, as FUSE fixes it.
pub const ROOT_INO: u64 = 1;

/// The paths the kernel knows, by inode number.
#[derive(Debug)]
pub struct Inodes {
    by_ino: HashMap<u64, Entry>,
    by_path: HashMap<String, u64>,
    next: u64,
}

#[derive(Debug)]
struct Entry {
    path: String,
    /// How many times the kernel was given this number (by lookup, create, mkdir).
    lookups: u64,
}

impl Default for Inodes {
    fn default() -> Self {
        Self::new()
    }
}

impl Inodes {
    /// A table that knows only the root, `/`.
    pub fn new() -> Inodes {
        let mut table = Inodes {
            by_ino: HashMap::new(),
            by_path: HashMap::new(),
            next: ROOT_INO + 1,
        };
        table.by_ino.insert(
            ROOT_INO,
            Entry {
                path: "/".to_owned(),
                lookups: 1,
            },
        );
        table.by_path.insert("/".to_owned(), ROOT_INO);
        table
    }

    /// The path of `ino`, if the kernel still holds it.
    pub fn path(&self, ino: u64) -> Option<&str> {
        self.by_ino.get(&ino).map(|e| e.path.as_str())
    }

    /// The number the kernel holds for `path`, if any.
    pub fn ino_of(&self, path: &str) -> Option<u64> {
        self.by_path.get(path).copied()
    }

    /// The path of `name` inside directory `parent`, if the kernel still holds `parent`
    /// and `name` is one path component.
    pub fn child_path(&self, parent: u64, name: &str) -> Option<String> {
        if name.is_empty() || name.contains('/') || name == "." || name == ".." {
            return None;
        }
        let parent = self.path(parent)?;
        Some(join(parent, name))
    }

    /// The number for `path`, given to the kernel once more: a new number on first sight.
    pub fn remember(&mut self, path: &str) -> u64 {
        if let Some(&ino) = self.by_path.get(path) {
            let entry = self.by_ino.get_mut(&ino).expect("the two maps agree");
            entry.lookups += 1;
            return ino;
        }
        let ino = self.next;
        self.next += 1;
        self.by_ino.insert(
            ino,
            Entry {
                path: path.to_owned(),
                lookups: 1,
            },
        );
        self.by_path.insert(path.to_owned(), ino);
        ino
    }

    /// The kernel forgets `ino` `count` times; at zero the number is gone (never the root).
    pub fn forget(&mut self, ino: u64, count: u64) {
        if ino == ROOT_INO {
            return;
        }
        let Some(entry) = self.by_ino.get_mut(&ino) else {
            return;
        };
        entry.lookups = entry.lookups.saturating_sub(count);
        if entry.lookups == 0 {
            let entry = self.by_ino.remove(&ino).expect("just seen");
            if self.by_path.get(&entry.path) == Some(&ino) {
                self.by_path.remove(&entry.path);
            }
        }
    }

    /// `path` no longer names anything (unlinked, removed): a number the kernel still holds
    /// keeps no path a later lookup could find, and a new file there gets a new number.
    pub fn unlinked(&mut self, path: &str) {
        if let Some(ino) = self.by_path.remove(path)
            && let Some(entry) = self.by_ino.get_mut(&ino)
        {
            // The kernel may still ask about it by number; it answers as the path did.
            entry.path = format!("{path}\u{0}unlinked");
        }
    }

    /// `from` was renamed to `to`: it, and everything under it, now lives there. Whatever
    /// `to` named before is unlinked.
    pub fn renamed(&mut self, from: &str, to: &str) {
        self.unlinked(to);
        let prefix = format!("{from}/");
        let moved: Vec<(String, u64)> = self
            .by_path
            .iter()
            .filter(|(path, _)| path.as_str() == from || path.starts_with(&prefix))
            .map(|(path, &ino)| (path.clone(), ino))
            .collect();
        for (old, ino) in moved {
            let new = format!("{to}{}", &old[from.len()..]);
            self.by_path.remove(&old);
            self.by_path.insert(new.clone(), ino);
            if let Some(entry) = self.by_ino.get_mut(&ino) {
                entry.path = new;
            }
        }
    }

    /// How many numbers the kernel holds (the root included).
    pub fn len(&self) -> usize {
        self.by_ino.len()
    }

    /// Always false: the root is always held.
    pub fn is_empty(&self) -> bool {
        self.by_ino.is_empty()
    }
}

/// `parent` and `name` joined with one slash.
pub fn join(parent: &str, name: &str) -> String {
    if parent == "/" {
        format!("/{name}")
    } else {
        format!("{parent}/{name}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbers_are_stable_while_held_and_gone_when_forgotten() {
        let mut t = Inodes::new();
        assert_eq!(t.path(ROOT_INO), Some("/"));
        let a = t.remember("/a");
        assert_ne!(a, ROOT_INO);
        assert_eq!(t.remember("/a"), a, "the same path, the same number");
        assert_eq!(t.path(a), Some("/a"));
        t.forget(a, 1);
        assert_eq!(t.path(a), Some("/a"), "looked up twice, forgotten once");
        t.forget(a, 1);
        assert_eq!(t.path(a), None);
        let again = t.remember("/a");
        assert_ne!(again, a, "a forgotten number is not handed out again");
        t.forget(ROOT_INO, 100);
        assert_eq!(t.path(ROOT_INO), Some("/"), "the root is never forgotten");
    }

    #[test]
    fn child_paths_are_one_component_under_a_held_directory() {
        let mut t = Inodes::new();
        assert_eq!(t.child_path(ROOT_INO, "x").as_deref(), Some("/x"));
        let d = t.remember("/d");
        assert_eq!(t.child_path(d, "x").as_deref(), Some("/d/x"));
        for bad in ["", ".", "..", "a/b"] {
            assert_eq!(t.child_path(d, bad), None, "{bad:?}");
        }
        assert_eq!(t.child_path(999, "x"), None, "an unknown parent");
    }

    #[test]
    fn a_renamed_directory_takes_its_subtree_and_replaces_the_target() {
        let mut t = Inodes::new();
        let d = t.remember("/d");
        let f = t.remember("/d/f");
        let deep = t.remember("/d/e/g");
        let sibling = t.remember("/dd");
        let old_target = t.remember("/x");
        t.renamed("/d", "/x");
        assert_eq!(t.path(d), Some("/x"));
        assert_eq!(t.path(f), Some("/x/f"));
        assert_eq!(t.path(deep), Some("/x/e/g"));
        assert_eq!(
            t.path(sibling),
            Some("/dd"),
            "a name that only starts the same"
        );
        assert_ne!(t.path(old_target), Some("/x"), "what /x was is unlinked");
        assert_eq!(t.remember("/x"), d);
    }

    #[test]
    fn an_unlinked_name_gets_a_new_number_when_created_again() {
        let mut t = Inodes::new();
        let a = t.remember("/a");
        t.unlinked("/a");
        let b = t.remember("/a");
        assert_ne!(a, b);
        assert_eq!(
            t.len(),
            3,
            "the old number is held until the kernel forgets it"
        );
        t.forget(a, 1);
        assert_eq!(t.len(), 2);
        assert_eq!(t.path(b), Some("/a"));
    }
}
