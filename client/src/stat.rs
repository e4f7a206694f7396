//! What `stat` and `getstripe` report: [`FileStat`] and [`StripeInfo`].

use iopath_mds::{Attributes, FileType};

use crate::error::ClientError;
use crate::layout::Layout;

/// What [`crate::Client::stat`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    /// A file's size, glimpsed from its objects; a symbolic link's target's length; 0 for
    /// anything else.
    pub size_bytes: u64,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// What it is.
    pub file_type: FileType,
    /// A file's layout.
    pub layout: Option<Layout>,
    /// Its inode number at the metadata service.
    pub ino: u64,
    /// Permission bits.
    pub mode: u32,
    /// Owner (`None`: not recorded, an inode from before owners were kept or made by a
    /// caller that did not say).
    pub uid: Option<u32>,
    /// Group (`None`: not recorded).
    pub gid: Option<u32>,
    /// Hard links.
    pub links: u32,
    /// Last access, as the metadata service keeps it (ns since the epoch).
    pub atime_ns: u64,
    /// Last change of its contents (ns since the epoch): a directory's entries, a file's
    /// last write that a client reported, or `utimensat`'s value.
    pub mtime_ns: u64,
    /// Last change of its attributes or contents (ns since the epoch).
    pub ctime_ns: u64,
    /// A directory's number of entries.
    pub entries_count: u64,
    /// A symbolic link's target.
    pub symlink_target: Option<String>,
    /// A device node's device number.
    pub rdev: u64,
}

/// What [`crate::Client::stripe_info`] reports: a file's layout or a directory's default for
/// new files — the metadata service's answer, as it gives it.
pub use iopath_mds::StripeInfo;

/// A stat without a size yet (the caller glimpses a file's).
pub(crate) fn stat_from_attributes(
    path: &str,
    attributes: &Attributes,
) -> Result<FileStat, ClientError> {
    let is_dir = attributes.file_type == FileType::Directory;
    let regular = attributes.file_type == FileType::Regular;
    let layout = match (&attributes.layout, regular) {
        (Some(layout), true) => Some(layout.clone()),
        (None, false) => None,
        (layout, _) => {
            return Err(ClientError::Malformed {
                what: "stat reply",
                why: format!(
                    "{path}: a {:?} {} a layout",
                    attributes.file_type,
                    if layout.is_some() { "with" } else { "without" }
                ),
            });
        }
    };
    Ok(FileStat {
        size_bytes: attributes
            .symlink_target
            .as_ref()
            .map_or(0, |target| target.len() as u64),
        is_dir,
        file_type: attributes.file_type,
        layout,
        ino: attributes.ino,
        mode: attributes.mode,
        uid: attributes.uid,
        gid: attributes.gid,
        links: attributes.links,
        atime_ns: attributes.atime_ns,
        mtime_ns: attributes.mtime_ns,
        ctime_ns: attributes.ctime_ns,
        entries_count: attributes.entries_count,
        symlink_target: attributes.symlink_target.clone(),
        rdev: attributes.rdev,
    })
}
