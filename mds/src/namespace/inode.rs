//! Inodes: what the namespace holds for each file and directory, and the views of them that
//! leave the service.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use iopath_layout::{Layout, StripeRequest};

/// An inode number. Never reused: a new inode always gets the next one.
pub type Ino = u64;

/// The root directory's inode number.
pub const ROOT_INO: Ino = 1;

/// Largest permission bits accepted (`0o7777`: rwx for all three, setuid, setgid, sticky).
pub const MODE_MAX: u32 = 0o7777;

/// A file or a directory.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Inode {
    /// Its number.
    pub ino: Ino,
    /// File or directory, and what each holds.
    pub kind: InodeKind,
    /// Permission bits.
    pub mode: u32,
    /// When its attributes or, for a directory, its entries last changed (ns since the epoch).
    pub ctime_ns: u64,
    /// When its contents last changed as the MDS sees it: a directory's entries, a file's
    /// creation. (File data changes happen on the objects.)
    pub mtime_ns: u64,
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
    },
    /// A regular file. Its size is not kept: it lives on the objects.
    File {
        /// Its layout, fixed at creation.
        layout: Layout,
    },
}

impl Inode {
    /// File or directory.
    pub fn file_type(&self) -> FileType {
        match self.kind {
            InodeKind::Directory { .. } => FileType::Directory,
            InodeKind::File { .. } => FileType::Regular,
        }
    }

    /// The view stat returns.
    pub fn attributes(&self) -> Attributes {
        let (layout, default_stripe, entries_count) = match &self.kind {
            InodeKind::Directory {
                entries,
                default_stripe,
                ..
            } => (None, *default_stripe, entries.len() as u64),
            InodeKind::File { layout } => (Some(layout.clone()), None, 0),
        };
        Attributes {
            ino: self.ino,
            file_type: self.file_type(),
            mode: self.mode,
            ctime_ns: self.ctime_ns,
            mtime_ns: self.mtime_ns,
            layout,
            default_stripe,
            entries_count,
        }
    }
}

/// File or directory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum FileType {
    /// A regular file.
    Regular,
    /// A directory.
    Directory,
}

/// What stat returns. No size: clients glimpse it from the objects.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Attributes {
    /// Inode number.
    pub ino: Ino,
    /// File or directory.
    pub file_type: FileType,
    /// Permission bits.
    pub mode: u32,
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
}

/// One directory entry.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DirEntry {
    /// Its name.
    pub name: String,
    /// The inode it names.
    pub ino: Ino,
    /// File or directory.
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
