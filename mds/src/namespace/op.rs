//! The namespace's events: operations asked for ([`Op`]), the decided changes the log records
//! ([`Mutation`]), and what each returns ([`Outcome`]).
//!
//! An [`Op`] names paths and leaves choices open (which targets, which object ids, which inode
//! number). Planning it against the current namespace makes every choice and yields a
//! [`Mutation`] that names only inode numbers and chosen values, so replaying the log gives
//! the same namespace whatever later versions of the planning rules would choose.

use serde::{Deserialize, Serialize};

use super::inode::{Attributes, Ino, Owner, SetAttributes};
use crate::path::MdsPath;
use iopath_layout::{Layout, StripeRequest};

/// A change to the namespace, as asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Op {
    /// Make a directory.
    Mkdir {
        /// Where.
        path: MdsPath,
        /// Its permission bits.
        mode: u32,
        /// Its owner and group.
        owner: Owner,
    },
    /// Create a regular file and choose its layout (fails if the name exists).
    Create {
        /// Where.
        path: MdsPath,
        /// Its permission bits.
        mode: u32,
        /// Its owner and group.
        owner: Owner,
        /// The layout asked for; inherited fields come from the directory's default.
        stripe: StripeRequest,
    },
    /// Remove a file; the outcome carries its layout so the caller can destroy its objects.
    Unlink {
        /// Which.
        path: MdsPath,
    },
    /// Remove an empty directory.
    Rmdir {
        /// Which.
        path: MdsPath,
    },
    /// Move `source` to `target`, replacing a file or empty directory there as POSIX does.
    Rename {
        /// What to move.
        source: MdsPath,
        /// Where to.
        target: MdsPath,
    },
    /// Set (or with `None` remove) a directory's default layout for new files.
    SetStripe {
        /// The directory.
        path: MdsPath,
        /// The default.
        stripe: Option<StripeRequest>,
    },
    /// Change inode `ino`'s attributes (`chmod`, `chown`, `utimensat`, a client's times).
    SetAttr {
        /// The inode (named by number: a client holds numbers, and an open file keeps its
        /// number whatever its names do).
        ino: Ino,
        /// What changes.
        change: SetAttributes,
    },
}

/// A decided change, as the operation log records it. Applying it makes no choices.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Mutation {
    /// A new directory `name` in `parent`, numbered `ino`.
    Mkdir {
        /// The parent directory.
        parent: Ino,
        /// The new entry's name.
        name: String,
        /// The new inode's number (always the next one).
        ino: Ino,
        /// Permission bits.
        mode: u32,
        /// Owner (absent from records written before owners were kept).
        #[serde(default)]
        uid: Option<u32>,
        /// Group.
        #[serde(default)]
        gid: Option<u32>,
        /// When.
        time_ns: u64,
        /// The default layout it starts with (copied from its parent).
        default_stripe: Option<StripeRequest>,
    },
    /// A new file `name` in `parent`, numbered `ino`, with its layout decided.
    Create {
        /// The parent directory.
        parent: Ino,
        /// The new entry's name.
        name: String,
        /// The new inode's number (always the next one).
        ino: Ino,
        /// Permission bits.
        mode: u32,
        /// Owner (absent from records written before owners were kept).
        #[serde(default)]
        uid: Option<u32>,
        /// Group.
        #[serde(default)]
        gid: Option<u32>,
        /// When.
        time_ns: u64,
        /// The layout, objects allocated.
        layout: Layout,
        /// The round-robin cursor after this file.
        round_robin_next: u64,
    },
    /// Entry `name` of `parent`, the file `ino`, removed.
    Unlink {
        /// The parent directory.
        parent: Ino,
        /// The entry.
        name: String,
        /// The file it named.
        ino: Ino,
        /// When.
        time_ns: u64,
    },
    /// Entry `name` of `parent`, the empty directory `ino`, removed.
    Rmdir {
        /// The parent directory.
        parent: Ino,
        /// The entry.
        name: String,
        /// The directory it named.
        ino: Ino,
        /// When.
        time_ns: u64,
    },
    /// Entry `source_name` of `source_parent` (inode `ino`) moved to `target_name` of
    /// `target_parent`, replacing inode `replaced` if there was one.
    Rename {
        /// Where it was.
        source_parent: Ino,
        /// Its old name.
        source_name: String,
        /// Where it goes.
        target_parent: Ino,
        /// Its new name.
        target_name: String,
        /// What moves.
        ino: Ino,
        /// What the new name named before, removed by the rename.
        replaced: Option<Ino>,
        /// When.
        time_ns: u64,
    },
    /// Directory `dir`'s default layout set (or removed).
    SetStripe {
        /// The directory.
        dir: Ino,
        /// The new default.
        default_stripe: Option<StripeRequest>,
        /// When.
        time_ns: u64,
    },
    /// Inode `ino`'s attributes changed: each `Some` field set, the change time set to
    /// `ctime_ns`.
    SetAttr {
        /// The inode.
        ino: Ino,
        /// New permission bits.
        mode: Option<u32>,
        /// New owner.
        uid: Option<u32>,
        /// New group.
        gid: Option<u32>,
        /// New access time.
        atime_ns: Option<u64>,
        /// New modification time.
        mtime_ns: Option<u64>,
        /// The change time.
        ctime_ns: u64,
    },
}

/// What planning decided.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Planned {
    /// A change to log and apply.
    Change(Mutation),
    /// Nothing changes (a rename onto itself); this is the answer.
    Unchanged(Outcome),
}

/// What a change returns to the caller (kept, for a resend, in the reply table).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum Outcome {
    /// A directory or file was made; its attributes (a file's carry its layout).
    Created(Attributes),
    /// A file was removed; its layout, for destroying its objects.
    Unlinked(Layout),
    /// A directory was removed.
    Removed,
    /// A rename happened; the layout of a file it replaced, if any.
    Renamed {
        /// The replaced file's layout.
        replaced: Option<Layout>,
    },
    /// A directory's default layout changed.
    StripeSet,
    /// An inode's attributes changed; its attributes now.
    AttributesSet(Attributes),
}
