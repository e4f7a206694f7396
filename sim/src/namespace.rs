//! The namespace oracle, a pure core: every file the clients asked the metadata server to
//! create or remove, what they were told, and the check of what the server holds after the
//! final recovery.
//!
//! Each path is created at most once, by one client, one request at a time, so:
//!
//! - an **acknowledged create** must exist after the final recovery with the layout its
//!   client was given — unless an acknowledged unlink removed it since;
//! - an **acknowledged unlink** must stay gone;
//! - a create or unlink whose client was told it failed (a timeout: it may have run) may
//!   have happened or not; an unlink that may have happened leaves the file there with its
//!   layout, or gone;
//! - a create told EEXIST, or an unlink of an acknowledged create told ENOENT, is a
//!   violation at once: nobody else made or removed that path, so the server ran the request
//!   twice (a resend after a restart run again) and told the application its change failed
//!   when it was made.

use std::collections::BTreeMap;

use iopath_mds::Layout;

/// What the clients were told about one path.
#[derive(Debug, Clone, PartialEq, Eq)]
enum FileState {
    /// Created, acknowledged, with this layout.
    Created(Layout),
    /// A create was sent and not acknowledged: there or not.
    MaybeCreated,
    /// An acknowledged create's unlink was sent and not acknowledged: there with this layout,
    /// or gone.
    MaybeUnlinked(Layout),
    /// Unlinked, acknowledged: gone for good.
    Unlinked,
}

/// A namespace the metadata server should not have.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameViolation {
    /// The path.
    pub path: String,
    /// What was wrong, for a person.
    pub what: String,
}

impl std::fmt::Display for NameViolation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}", self.path, self.what)
    }
}

/// What the metadata server holds at a path after the final recovery.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Found {
    /// A regular file with this layout.
    File(Layout),
    /// Nothing (ENOENT).
    Missing,
}

/// Every path the clients created or removed, and what they were told.
#[derive(Debug, Default)]
pub struct NamespaceOracle {
    files: BTreeMap<String, FileState>,
}

fn violation(path: &str, what: String) -> NameViolation {
    NameViolation {
        path: path.to_owned(),
        what,
    }
}

impl NamespaceOracle {
    /// An oracle that knows of no files.
    pub fn new() -> NamespaceOracle {
        NamespaceOracle::default()
    }

    /// The create of `path` was acknowledged with `layout`.
    pub fn created(&mut self, path: &str, layout: Layout) {
        self.files
            .insert(path.to_owned(), FileState::Created(layout));
    }

    /// The create of `path` failed with `errno` (0: no answer, a timeout). EEXIST is a
    /// violation: nobody else creates this path.
    pub fn create_failed(&mut self, path: &str, errno: u32) -> Result<(), NameViolation> {
        self.files.insert(path.to_owned(), FileState::MaybeCreated);
        if errno == iopath_fabric::frame::status::errno::EEXIST {
            return Err(violation(
                path,
                "its only create was told EEXIST: the server ran it twice (a resend run again after a restart?)".into(),
            ));
        }
        Ok(())
    }

    /// The unlink of `path` was acknowledged with `layout` (the file's, for destroying its
    /// objects), which must be the one its create was given.
    pub fn unlinked(&mut self, path: &str, layout: &Layout) -> Result<(), NameViolation> {
        let before = self.files.insert(path.to_owned(), FileState::Unlinked);
        match before {
            Some(FileState::Created(created) | FileState::MaybeUnlinked(created))
                if created != *layout =>
            {
                Err(violation(
                    path,
                    format!("unlink answered layout {layout:?}, the create was given {created:?}"),
                ))
            }
            _ => Ok(()),
        }
    }

    /// The unlink of `path` failed with `errno` (0: no answer). ENOENT for a file whose
    /// create was acknowledged is a violation: nobody else removes it.
    pub fn unlink_failed(&mut self, path: &str, errno: u32) -> Result<(), NameViolation> {
        let Some(state) = self.files.get_mut(path) else {
            return Ok(());
        };
        let FileState::Created(layout) = state else {
            return Ok(());
        };
        *state = FileState::MaybeUnlinked(layout.clone());
        if errno == iopath_fabric::frame::status::errno::ENOENT {
            return Err(violation(
                path,
                "the unlink of an acknowledged create was told ENOENT: the server ran it twice (a resend run again after a restart?)".into(),
            ));
        }
        Ok(())
    }

    /// Every path to look up after the final recovery.
    pub fn paths(&self) -> Vec<String> {
        self.files.keys().cloned().collect()
    }

    /// Checks what the server holds at `path` after the final recovery.
    pub fn check(&self, path: &str, found: &Found) -> Result<(), NameViolation> {
        let Some(state) = self.files.get(path) else {
            return Ok(());
        };
        let ok = match (state, found) {
            (FileState::Created(layout), Found::File(held)) => {
                if layout != held {
                    return Err(violation(
                        path,
                        format!("holds layout {held:?}, its create was given {layout:?}"),
                    ));
                }
                true
            }
            (FileState::Created(_), Found::Missing) => false,
            (FileState::MaybeUnlinked(layout), Found::File(held)) => layout == held,
            (FileState::MaybeCreated | FileState::MaybeUnlinked(_), _) => true,
            (FileState::Unlinked, Found::Missing) => true,
            (FileState::Unlinked, Found::File(_)) => false,
        };
        if ok {
            return Ok(());
        }
        let what = match state {
            FileState::Created(_) => "an acknowledged create is gone after the final recovery",
            FileState::Unlinked => "an acknowledged unlink came undone after the final recovery",
            _ => "holds a layout that is not the one its create was given",
        };
        Err(violation(path, what.into()))
    }

    /// Files whose create was acknowledged and that no unlink may have removed.
    pub fn created_files(&self) -> usize {
        self.files
            .values()
            .filter(|s| matches!(s, FileState::Created(_)))
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iopath_fabric::frame::status::errno::{EEXIST, ENOENT};
    use iopath_mds::ObjectRef;

    fn layout(object_id: u64) -> Layout {
        Layout::new(
            64 << 10,
            vec![ObjectRef {
                target: 0,
                object_id,
            }],
        )
        .expect("a layout")
    }

    #[test]
    fn an_acknowledged_create_must_stay_with_its_layout() {
        let mut names = NamespaceOracle::new();
        names.created("/a", layout(1));
        assert_eq!(names.check("/a", &Found::File(layout(1))), Ok(()));
        let other = names.check("/a", &Found::File(layout(2))).unwrap_err();
        assert!(other.what.contains("its create was given"), "{other}");
        let gone = names.check("/a", &Found::Missing).unwrap_err();
        assert!(gone.what.contains("is gone"), "{gone}");
        assert_eq!(names.created_files(), 1);
    }

    #[test]
    fn an_acknowledged_unlink_must_stay_gone_and_an_unanswered_one_may_go_either_way() {
        let mut names = NamespaceOracle::new();
        names.created("/a", layout(1));
        names.unlinked("/a", &layout(1)).unwrap();
        assert_eq!(names.check("/a", &Found::Missing), Ok(()));
        assert!(names.check("/a", &Found::File(layout(1))).is_err());
        names.created("/b", layout(2));
        names.unlink_failed("/b", 0).unwrap();
        assert_eq!(names.check("/b", &Found::Missing), Ok(()));
        assert_eq!(names.check("/b", &Found::File(layout(2))), Ok(()));
        assert!(names.check("/b", &Found::File(layout(3))).is_err());
        names.create_failed("/c", 0).unwrap();
        assert_eq!(names.check("/c", &Found::Missing), Ok(()));
        assert_eq!(names.check("/c", &Found::File(layout(4))), Ok(()));
    }

    #[test]
    fn a_change_run_twice_is_caught_by_what_the_client_was_told() {
        let mut names = NamespaceOracle::new();
        let twice = names.create_failed("/a", EEXIST).unwrap_err();
        assert!(twice.what.contains("EEXIST"), "{twice}");
        names.created("/b", layout(1));
        let twice = names.unlink_failed("/b", ENOENT).unwrap_err();
        assert!(twice.what.contains("ENOENT"), "{twice}");
        names.created("/c", layout(1));
        let wrong = names.unlinked("/c", &layout(2)).unwrap_err();
        assert!(wrong.what.contains("unlink answered"), "{wrong}");
    }
}
