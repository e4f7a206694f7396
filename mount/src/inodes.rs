//! [`Inodes`]: the names behind the inode numbers the kernel holds, a pure core with its own
//! tests.
//!
//! The kernel names files by inode number; this mount gives it the metadata service's own
//! numbers, which never change and are never used again, so `ls -i`, `find -inum`, `git`'s
//! index and every other mount agree on them, and a file keeps its number through renames.
//! Most calls are answered by number (`getattr`, `setattr`, `open`); the ones that name an
//! entry (`lookup`, `create`, `unlink`, `rename`) come as a directory's number and a name, and
//! the metadata service is asked by path — so this table keeps, for each number the kernel
//! holds, the names it was last seen under, and follows renames (a directory's whole subtree
//! moves with it). It counts how often the kernel was given each number and drops it when the
//! kernel has forgotten it. The root is always number 1.

use std::collections::HashMap;

/// The root directory's inode number, as FUSE fixes it (and the metadata service numbers
/// its root).
pub const ROOT_INO: u64 = 1;

/// The names of the numbers the kernel holds.
#[derive(Debug)]
pub struct Inodes {
    by_ino: HashMap<u64, Entry>,
    by_path: HashMap<String, u64>,
}

#[derive(Debug)]
struct Entry {
    /// The names it has as far as this mount has seen, the latest last.
    names: Vec<String>,
    /// The last name it was seen under, kept when that name goes (an open file that was
    /// unlinked): for messages, and for a fyod, which opens files by name.
    hint: String,
    /// How many times the kernel was given this number (by lookup, create, mkdir, ...).
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
        };
        table.by_ino.insert(
            ROOT_INO,
            Entry {
                names: vec!["/".to_owned()],
                hint: "/".to_owned(),
                lookups: 1,
            },
        );
        table.by_path.insert("/".to_owned(), ROOT_INO);
        table
    }

    /// A name of `ino` — its latest, or the last it had if it has none now — if the kernel
    /// still holds it.
    pub fn path(&self, ino: u64) -> Option<&str> {
        self.by_ino.get(&ino).map(|e| e.hint.as_str())
    }

    /// Whether `ino` still has a name this mount knows of (false once it was unlinked here).
    pub fn is_named(&self, ino: u64) -> bool {
        self.by_ino.get(&ino).is_some_and(|e| !e.names.is_empty())
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

    /// `ino` was given to the kernel once more, found at `path`.
    pub fn remember(&mut self, ino: u64, path: &str) {
        match self.by_path.insert(path.to_owned(), ino) {
            // A name that named another number before (replaced behind this mount's back,
            // by another client): that one no longer has it.
            Some(old) if old != ino => {
                if let Some(entry) = self.by_ino.get_mut(&old) {
                    entry.names.retain(|n| n != path);
                }
            }
            _ => {}
        }
        let entry = self.by_ino.entry(ino).or_insert_with(|| Entry {
            names: Vec::new(),
            hint: path.to_owned(),
            lookups: 0,
        });
        if ino != ROOT_INO {
            entry.lookups += 1;
        }
        entry.names.retain(|n| n != path);
        entry.names.push(path.to_owned());
        entry.hint = path.to_owned();
    }

    /// The kernel forgets `ino` `count` times; at zero the number and its names are gone
    /// from the table (never the root's).
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
            for name in entry.names {
                if self.by_path.get(&name) == Some(&ino) {
                    self.by_path.remove(&name);
                }
            }
        }
    }

    /// `path` no longer names anything (unlinked, removed). The number it named keeps its
    /// other names, and this one as its hint if it has none left.
    pub fn unlinked(&mut self, path: &str) {
        if let Some(ino) = self.by_path.remove(path)
            && let Some(entry) = self.by_ino.get_mut(&ino)
        {
            entry.names.retain(|n| n != path);
            if let Some(latest) = entry.names.last() {
                entry.hint = latest.clone();
            }
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
                for name in entry.names.iter_mut().filter(|n| **n == old) {
                    name.clone_from(&new);
                }
                if entry.hint == old {
                    entry.hint = new;
                }
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
    fn numbers_are_held_while_looked_up_and_gone_when_forgotten() {
        let mut t = Inodes::new();
        assert_eq!(t.path(ROOT_INO), Some("/"));
        t.remember(7, "/a");
        t.remember(7, "/a");
        assert_eq!(t.path(7), Some("/a"));
        assert_eq!(t.ino_of("/a"), Some(7));
        t.forget(7, 1);
        assert_eq!(t.path(7), Some("/a"), "looked up twice, forgotten once");
        t.forget(7, 1);
        assert_eq!(t.path(7), None);
        assert_eq!(t.ino_of("/a"), None, "its name goes with it");
        t.forget(ROOT_INO, 100);
        assert_eq!(t.path(ROOT_INO), Some("/"), "the root is never forgotten");
    }

    #[test]
    fn child_paths_are_one_component_under_a_held_directory() {
        let mut t = Inodes::new();
        assert_eq!(t.child_path(ROOT_INO, "x").as_deref(), Some("/x"));
        t.remember(5, "/d");
        assert_eq!(t.child_path(5, "x").as_deref(), Some("/d/x"));
        for bad in ["", ".", "..", "a/b"] {
            assert_eq!(t.child_path(5, bad), None, "{bad:?}");
        }
        assert_eq!(t.child_path(999, "x"), None, "an unknown parent");
    }

    #[test]
    fn a_renamed_directory_takes_its_subtree_and_replaces_the_target() {
        let mut t = Inodes::new();
        t.remember(2, "/d");
        t.remember(3, "/d/f");
        t.remember(4, "/d/e/g");
        t.remember(5, "/dd");
        t.remember(6, "/x");
        t.renamed("/d", "/x");
        assert_eq!(t.path(2), Some("/x"));
        assert_eq!(t.path(3), Some("/x/f"));
        assert_eq!(t.path(4), Some("/x/e/g"));
        assert_eq!(t.path(5), Some("/dd"), "a name that only starts the same");
        assert!(!t.is_named(6), "what /x was is unlinked");
        assert_eq!(t.path(6), Some("/x"), "its last name stays its hint");
        assert_eq!(t.ino_of("/x"), Some(2));
    }

    #[test]
    fn a_hard_link_keeps_its_number_when_one_of_its_names_goes() {
        let mut t = Inodes::new();
        t.remember(9, "/a");
        t.remember(9, "/b");
        assert_eq!(t.path(9), Some("/b"), "the latest name");
        t.unlinked("/b");
        assert!(t.is_named(9));
        assert_eq!(t.path(9), Some("/a"), "the name it still has");
        assert_eq!(t.ino_of("/b"), None);
        t.unlinked("/a");
        assert!(
            !t.is_named(9),
            "an open file unlinked keeps only its number"
        );
        assert_eq!(t.path(9), Some("/a"));
    }

    #[test]
    fn a_name_replaced_by_another_client_moves_to_the_new_number() {
        let mut t = Inodes::new();
        t.remember(3, "/f");
        t.remember(4, "/f");
        assert_eq!(t.ino_of("/f"), Some(4));
        assert!(!t.is_named(3));
        t.forget(3, 1);
        assert_eq!(
            t.ino_of("/f"),
            Some(4),
            "forgetting the old number keeps the name"
        );
        assert_eq!(t.len(), 2);
    }
}
