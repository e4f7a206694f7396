//! The namespace's events: operations asked for ([`Op`]), the decided changes the log records
//! ([`Mutation`]), and what each returns ([`Outcome`]).
//!
//! An [`Op`] names paths and leaves choices open (which targets, which object ids, which inode
//! number). Planning it against the current namespace makes every choice and yields a
//! [`Mutation`] that names only inode numbers and chosen values, so replaying the log gives
//! the same namespace whatever later versions of the planning rules would choose.

use serde::{Deserialize, Serialize};

use super::inode::{Attributes, Ino, Owner, SetAttributes, SpecialNode};
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
    /// Remove a name of a file, a symbolic link or a special file. When it was a file's last
    /// name the outcome carries its layout, so the caller can destroy its objects — unless
    /// the file is the one `keep` names, which its caller holds open: then it is kept as an
    /// orphan of `keep`'s owner, objects and all.
    Unlink {
        /// Which.
        path: MdsPath,
        /// A file the caller holds open, and who the caller is.
        keep: Option<Keep>,
    },
    /// Remove an empty directory.
    Rmdir {
        /// Which.
        path: MdsPath,
    },
    /// Move `source` to `target`, replacing a file or empty directory there as POSIX does
    /// (a file replaced that `keep` names is kept as an orphan, as by [`Op::Unlink`]).
    Rename {
        /// What to move.
        source: MdsPath,
        /// Where to.
        target: MdsPath,
        /// A file the caller holds open, and who the caller is.
        keep: Option<Keep>,
    },
    /// Give inode `ino` (not a directory) another name, `path` (a hard link).
    Link {
        /// The inode.
        ino: Ino,
        /// Its new name.
        path: MdsPath,
    },
    /// Make a symbolic link `path` pointing to `target`.
    Symlink {
        /// Where.
        path: MdsPath,
        /// What it points to.
        target: String,
        /// Its owner and group.
        owner: Owner,
    },
    /// Make a FIFO, a socket or a device node.
    Mknod {
        /// Where.
        path: MdsPath,
        /// Which.
        node: SpecialNode,
        /// Its permission bits.
        mode: u32,
        /// A device node's device number.
        rdev: u64,
        /// Its owner and group.
        owner: Owner,
    },
    /// Forget orphan `ino` (its holder closed it, or is gone); a file's outcome carries its
    /// layout, so the caller can destroy its objects.
    DropOrphan {
        /// The orphan.
        ino: Ino,
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

/// A file a client holds open, named in an unlink or a rename: if the change takes its last
/// name, it is kept as an orphan of `owner` instead of being removed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keep {
    /// The file.
    pub ino: Ino,
    /// Who holds it open (the client's NID, as the service sees its requests come).
    pub owner: String,
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
    /// Entry `name` of `parent`, naming `ino` (not a directory), removed. If it was the
    /// last name and `orphan_owner` is set, the inode is kept as that client's orphan; if it
    /// was the last and not, the inode is removed.
    Unlink {
        /// The parent directory.
        parent: Ino,
        /// The entry.
        name: String,
        /// The inode it named.
        ino: Ino,
        /// When.
        time_ns: u64,
        /// Who holds it open, if it is to be kept when it loses its last name.
        #[serde(default)]
        orphan_owner: Option<String>,
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
        /// Who holds `replaced` open, if it is to be kept when it loses its last name.
        #[serde(default)]
        orphan_owner: Option<String>,
    },
    /// Entry `name` of `parent` made for the existing inode `ino` (a hard link).
    Link {
        /// The directory.
        parent: Ino,
        /// The new entry's name.
        name: String,
        /// The inode it names.
        ino: Ino,
        /// When.
        time_ns: u64,
    },
    /// A new symbolic link `name` in `parent`, numbered `ino`.
    Symlink {
        /// The directory.
        parent: Ino,
        /// The new entry's name.
        name: String,
        /// The new inode's number (always the next one).
        ino: Ino,
        /// What it points to.
        target: String,
        /// Owner.
        uid: Option<u32>,
        /// Group.
        gid: Option<u32>,
        /// When.
        time_ns: u64,
    },
    /// A new special file `name` in `parent`, numbered `ino`.
    Mknod {
        /// The directory.
        parent: Ino,
        /// The new entry's name.
        name: String,
        /// The new inode's number (always the next one).
        ino: Ino,
        /// Which.
        node: SpecialNode,
        /// A device node's device number.
        rdev: u64,
        /// Permission bits.
        mode: u32,
        /// Owner.
        uid: Option<u32>,
        /// Group.
        gid: Option<u32>,
        /// When.
        time_ns: u64,
    },
    /// Orphan `ino` forgotten.
    DropOrphan {
        /// The orphan.
        ino: Ino,
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
    /// A file's last name was removed (or an orphan dropped); its layout, for destroying its
    /// objects.
    Unlinked(Layout),
    /// A name was removed and nothing is left to destroy: a directory, a symbolic link or
    /// special file, or a name of an inode that has others.
    Removed,
    /// A file's last name was removed and the file kept as an orphan: its holder drops it
    /// when it closes it.
    Orphaned,
    /// A rename happened; the layout of a file it replaced, if any.
    Renamed {
        /// The replaced file's layout, when the rename took its last name and it is not kept.
        replaced: Option<Layout>,
        /// Whether the replaced file was kept as an orphan.
        #[serde(default)]
        orphaned: bool,
    },
    /// A directory's default layout changed.
    StripeSet,
    /// An inode's attributes changed; its attributes now.
    AttributesSet(Attributes),
}
