//! What `stat` and `getstripe` report: [`FileStat`] and [`StripeInfo`].

use iopath_mds::{Attributes, FileLayout, FileType};

use crate::error::ClientError;
use crate::layout::{Layout, ObjectRef, StripeRequest};

/// What [`crate::Client::stat`] reports.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FileStat {
    /// A file's size, glimpsed from its objects; 0 for a directory.
    pub size_bytes: u64,
    /// Whether it is a directory.
    pub is_dir: bool,
    /// A file's layout.
    pub layout: Option<Layout>,
    /// Its inode number at the metadata service.
    pub ino: u64,
    /// Permission bits.
    pub mode: u32,
    /// When it last changed as the metadata service sees it (ns since the epoch).
    pub mtime_ns: u64,
    /// A directory's number of entries.
    pub entries_count: u64,
}

/// What [`crate::Client::stripe_info`] reports: a file's layout or a directory's default.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StripeInfo {
    /// A regular file's layout.
    File(Layout),
    /// A directory's default for new files, every inherited field filled in (count may be
    /// -1 for "all targets", offset -1 for "any").
    Directory {
        /// The default.
        default_stripe: StripeRequest,
        /// Whether it was set on this directory rather than inherited.
        set_here: bool,
    },
}

/// The client's layout from the metadata service's (re-checked: it came off the wire).
pub(crate) fn layout_from_mds(file: &FileLayout) -> Result<Layout, ClientError> {
    let objects = file
        .objects
        .iter()
        .map(|o| ObjectRef {
            target: o.target,
            object_id: o.object_id,
        })
        .collect();
    Layout::new(file.stripe_size_bytes, objects).map_err(|e| ClientError::Malformed {
        what: "layout from the metadata service",
        why: e.to_string(),
    })
}

/// The metadata service's stripe request from the client's.
pub(crate) fn stripe_to_mds(stripe: &StripeRequest) -> iopath_mds::StripeRequest {
    iopath_mds::StripeRequest {
        stripe_size_bytes: stripe.stripe_size_bytes,
        stripe_count: stripe.stripe_count,
        stripe_offset: stripe.stripe_offset,
    }
}

/// The client's stripe request from the metadata service's.
pub(crate) fn stripe_from_mds(stripe: &iopath_mds::StripeRequest) -> StripeRequest {
    StripeRequest {
        stripe_size_bytes: stripe.stripe_size_bytes,
        stripe_count: stripe.stripe_count,
        stripe_offset: stripe.stripe_offset,
    }
}

/// A stat without a size yet (the caller glimpses a file's).
pub(crate) fn stat_from_attributes(
    path: &str,
    attributes: &Attributes,
) -> Result<FileStat, ClientError> {
    let is_dir = attributes.file_type == FileType::Directory;
    let layout = match (&attributes.layout, is_dir) {
        (Some(layout), false) => Some(layout_from_mds(layout)?),
        (None, true) => None,
        (layout, _) => {
            return Err(ClientError::Malformed {
                what: "stat reply",
                why: format!(
                    "{path}: a {} {} a layout",
                    if is_dir { "directory" } else { "file" },
                    if layout.is_some() { "with" } else { "without" }
                ),
            });
        }
    };
    Ok(FileStat {
        size_bytes: 0,
        is_dir,
        layout,
        ino: attributes.ino,
        mode: attributes.mode,
        mtime_ns: attributes.mtime_ns,
        entries_count: attributes.entries_count,
    })
}
