//! Inodes: what the namespace holds for each directory, file, symbolic link and special file
//! (FIFO, socket, device node), and the views of them that leave the service.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use iopath_layout::{Layout, StripeRequest};

/// An inode number. Never reused: a new inode always gets the next one.
pub type Ino = u64;

/// The root directory's inode number.
pub const ROOT_INO: Ino = 1;

/// Largest permission bits accepted (`0o7777`: rwx for all three, setuid, setgid, sticky).
pub const MODE_MAX: u32 = 0o7777;

/// The set-group-ID bit (`S_ISGID`): on a directory, new entries take its group.
pub const SET_GROUP_ID: u32 = 0o2000;

/// Longest symbolic link target accepted, in bytes (Linux's `PATH_MAX` less its NUL).
pub const SYMLINK_TARGET_MAX_BYTES: usize = 4095;

/// A directory, a file, a symbolic link or a special file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inode {
    /// Its number.
    pub ino: Ino,
    /// What it is, and what it holds.
    pub kind: InodeKind,
    /// How many entries name it (hard links), for all but directories: 0 for an orphan (a
    /// file unlinked while a client holds it open). Derived from the entries: not stored,
    /// counted again when a namespace is loaded.
    #[serde(skip)]
    pub names: u32,
    /// Permission bits.
    pub mode: u32,
    /// Its owner. `None` in a namespace written before owners were kept: a mount shows such
    /// an inode as its own user's, as it showed every inode then.
    #[serde(default)]
    pub uid: Option<u32>,
    /// Its group (`None`: as `uid`).
    #[serde(default)]
    pub gid: Option<u32>,
    /// When its attributes or, for a directory, its entries last changed (ns since the epoch).
    pub ctime_ns: u64,
    /// When its contents last changed: a directory's entries; a file's creation, truncation,
    /// or the last write a client reported (a client sets it when it closes a file it wrote,
    /// as a Lustre client's close carries its times), or `utimensat`'s value.
    pub mtime_ns: u64,
    /// When it was last read, as `utimensat` or its creation set it (mounts are `noatime`).
    /// `None` in a namespace written before access times were kept: its mtime stands in.
    #[serde(default)]
    pub atime_ns: Option<u64>,
}

/// What an inode is.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub enum InodeKind {
    /// A directory.
    Directory {
        /// The directory it is in (the root is its own parent).
        parent: Ino,
        /// Its entries, by name (ordered: readdir pages by name).
        entries: BTreeMap<String, Ino>,
        /// The default layout of files created in it, if one was set.
        default_stripe: Option<StripeRequest>,
        /// How many of its entries are directories (its link count is two more). Derived
        /// from the entries: not stored, counted again when a namespace is loaded.
        #[serde(skip)]
        subdirectories: u64,
    },
    /// A regular file. Its size is not kept: it lives on the objects.
    File {
        /// Its layout, fixed at creation.
        layout: Layout,
    },
    /// A symbolic link. The kernel follows it; the service never does (a path through one
    /// is not a directory).
    Symlink {
        /// What it points to, as given (1 to [`SYMLINK_TARGET_MAX_BYTES`] bytes, no NUL).
        target: String,
    },
    /// A FIFO, a socket or a device node: a name and attributes, whose I/O the kernel
    /// serves (a pipe's buffer, a socket, a device's driver) without the file system.
    Special {
        /// Which.
        node: SpecialNode,
        /// A device node's device number (Linux's `dev_t`); 0 for the others.
        rdev: u64,
    },
}

/// What a special file is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum SpecialNode {
    /// A named pipe (`mkfifo`).
    Fifo,
    /// A Unix domain socket's name (`bind`).
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

impl SpecialNode {
    /// Its file type.
    pub fn file_type(self) -> FileType {
        match self {
            SpecialNode::Fifo => FileType::Fifo,
            SpecialNode::Socket => FileType::Socket,
            SpecialNode::CharDevice => FileType::CharDevice,
            SpecialNode::BlockDevice => FileType::BlockDevice,
        }
    }
}

/// A file unlinked while a client held it open, kept (with its objects) until that client
/// closes it, as Lustre keeps orphans: its owner drops it then, or — if the owner is gone, a
/// crashed mount — whoever the service hands it to (see `crate::orphans`).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Orphan {
    /// The client that holds it open: its NID, as the service saw the unlink come from.
    pub owner: String,
    /// When it lost its last name.
    pub since_ns: u64,
}

impl Inode {
    /// What it is.
    pub fn file_type(&self) -> FileType {
        match self.kind {
            InodeKind::Directory { .. } => FileType::Directory,
            InodeKind::File { .. } => FileType::Regular,
            InodeKind::Symlink { .. } => FileType::Symlink,
            InodeKind::Special { node, .. } => node.file_type(),
        }
    }

    /// The view stat returns.
    pub fn attributes(&self) -> Attributes {
        let (layout, default_stripe, entries_count, links) = match &self.kind {
            InodeKind::Directory {
                entries,
                default_stripe,
                subdirectories,
                ..
            } => (
                None,
                *default_stripe,
                entries.len() as u64,
                u32::try_from(subdirectories + 2).unwrap_or(u32::MAX),
            ),
            InodeKind::File { layout } => (Some(layout.clone()), None, 0, self.names),
            InodeKind::Symlink { .. } | InodeKind::Special { .. } => (None, None, 0, self.names),
        };
        let (symlink_target, rdev) = match &self.kind {
            InodeKind::Symlink { target } => (Some(target.clone()), 0),
            InodeKind::Special { rdev, .. } => (None, *rdev),
            _ => (None, 0),
        };
        Attributes {
            ino: self.ino,
            file_type: self.file_type(),
            mode: self.mode,
            uid: self.uid,
            gid: self.gid,
            links,
            atime_ns: self.atime_ns.unwrap_or(self.mtime_ns),
            ctime_ns: self.ctime_ns,
            mtime_ns: self.mtime_ns,
            layout,
            default_stripe,
            entries_count,
            symlink_target,
            rdev,
        }
    }
}

/// What an inode is, as `stat` and `readdir` say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileType {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
    /// A symbolic link.
    Symlink,
    /// A named pipe.
    Fifo,
    /// A socket.
    Socket,
    /// A character device.
    CharDevice,
    /// A block device.
    BlockDevice,
}

/// What stat returns. No size: clients glimpse it from the objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attributes {
    /// Inode number.
    pub ino: Ino,
    /// What it is.
    pub file_type: FileType,
    /// Permission bits.
    pub mode: u32,
    /// Owner (`None`: not recorded, see [`Inode::uid`]).
    #[serde(default)]
    pub uid: Option<u32>,
    /// Group (`None`: not recorded).
    #[serde(default)]
    pub gid: Option<u32>,
    /// Hard links: the entries naming it; a directory's is two more than the directories in
    /// it (its own `.`, and each one's `..`).
    #[serde(default = "one")]
    pub links: u32,
    /// Access time, ns since the epoch.
    #[serde(default)]
    pub atime_ns: u64,
    /// Change time, ns since the epoch.
    pub ctime_ns: u64,
    /// Modification time, ns since the epoch.
    pub mtime_ns: u64,
    /// A file's layout.
    pub layout: Option<Layout>,
    /// A directory's own default layout, if set.
    pub default_stripe: Option<StripeRequest>,
    /// A directory's number of entries.
    pub entries_count: u64,
    /// A symbolic link's target.
    #[serde(default)]
    pub symlink_target: Option<String>,
    /// A device node's device number.
    #[serde(default)]
    pub rdev: u64,
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Its name.
    pub name: String,
    /// The inode it names.
    pub ino: Ino,
    /// What it names.
    pub file_type: FileType,
}

/// One page of a directory listing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirPage {
    /// Entries in name order.
    pub entries: Vec<DirEntry>,
    /// Whether more entries follow the last one.
    pub more: bool,
}

/// What getstripe reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StripeInfo {
    /// A file's layout.
    File(Layout),
    /// A directory's effective default for new files.
    Directory {
        /// The default, every inherited field filled in (count may be -1, offset -1).
        default_stripe: StripeRequest,
        /// Whether it is set on this directory (false: inherited).
        set_here: bool,
    },
}

/// Serde's default link count, for attributes kept before link counts were: one.
fn one() -> u32 {
    1
}

/// A change of attributes (`chmod`, `chown`, `utimensat`, and the times a client reports for
/// the writes it made): every field left `None` is kept as it is. The change time always
/// moves.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct SetAttributes {
    /// New permission bits.
    pub mode: Option<u32>,
    /// New owner.
    pub uid: Option<u32>,
    /// New group.
    pub gid: Option<u32>,
    /// New access time (ns since the epoch).
    pub atime_ns: Option<u64>,
    /// New modification time.
    pub mtime_ns: Option<u64>,
    /// The change time to record; `None`: the time the service applies the change.
    pub ctime_ns: Option<u64>,
}

/// Who a new inode belongs to: its owner and group, each `None` where the asker does not
/// say (not recorded; a set-group-ID directory still gives its group).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Owner {
    /// Owner.
    pub uid: Option<u32>,
    /// Group.
    pub gid: Option<u32>,
}

impl Owner {
    /// Neither recorded.
    pub const UNRECORDED: Owner = Owner {
        uid: None,
        gid: None,
    };

    /// `uid` and `gid`, both recorded.
    pub fn new(uid: u32, gid: u32) -> Owner {
        Owner {
            uid: Some(uid),
            gid: Some(gid),
        }
    }
}
