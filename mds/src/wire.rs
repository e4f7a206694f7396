//! Between the wire (`iopath_proto::mds`) and the typed values of this crate. Encoding is
//! plain; decoding a reply checks everything the service could not have sent, so callers get
//! typed values or [`MdsError::Malformed`].

use iopath_proto::mds as pb;

use crate::error::{MdsError, Result};
use crate::namespace::inode::{Attributes, DirEntry, FileType, SpecialNode};
use iopath_layout::{Layout, ObjectRef, StripeRequest};

/// Stripe values onto the wire.
pub fn stripe_to_wire(stripe: &StripeRequest) -> pb::StripeRequest {
    pb::StripeRequest {
        stripe_size_bytes: stripe.stripe_size_bytes,
        stripe_count: stripe.stripe_count,
        stripe_offset: stripe.stripe_offset,
    }
}

/// Stripe values off the wire; checked where they are used (they are a request).
pub fn stripe_from_wire(stripe: &pb::StripeRequest) -> StripeRequest {
    StripeRequest {
        stripe_size_bytes: stripe.stripe_size_bytes,
        stripe_count: stripe.stripe_count,
        stripe_offset: stripe.stripe_offset,
    }
}

/// A layout onto the wire, stating its count and offset as `lfs getstripe` shows them.
pub fn layout_to_wire(layout: &Layout) -> pb::Layout {
    pb::Layout {
        stripe_size_bytes: layout.stripe_size_bytes(),
        stripe_count: layout.stripe_count(),
        stripe_offset: layout.stripe_offset(),
        objects: layout
            .objects()
            .iter()
            .map(|o| pb::ObjectRef {
                target: o.target,
                object_id: o.object_id,
            })
            .collect(),
    }
}

/// A layout off the wire: its stated count and offset must agree with its objects, and it
/// must be a layout the service could have made.
pub fn layout_from_wire(layout: &pb::Layout) -> Result<Layout> {
    let objects = layout
        .objects
        .iter()
        .map(|o| ObjectRef {
            target: o.target,
            object_id: o.object_id,
        })
        .collect();
    Layout::from_parts(
        layout.stripe_size_bytes,
        layout.stripe_count,
        layout.stripe_offset,
        objects,
    )
    .map_err(|e| MdsError::Malformed {
        what: "layout",
        why: e.to_string(),
    })
}

/// A file type onto the wire.
pub fn file_type_to_wire(file_type: FileType) -> pb::FileType {
    match file_type {
        FileType::Regular => pb::FileType::Regular,
        FileType::Directory => pb::FileType::Directory,
        FileType::Symlink => pb::FileType::Symlink,
        FileType::Fifo => pb::FileType::Fifo,
        FileType::Socket => pb::FileType::Socket,
        FileType::CharDevice => pb::FileType::CharDevice,
        FileType::BlockDevice => pb::FileType::BlockDevice,
    }
}

/// A file type off the wire.
pub fn file_type_from_wire(value: i32) -> Result<FileType> {
    match pb::FileType::try_from(value) {
        Ok(pb::FileType::Regular) => Ok(FileType::Regular),
        Ok(pb::FileType::Directory) => Ok(FileType::Directory),
        Ok(pb::FileType::Symlink) => Ok(FileType::Symlink),
        Ok(pb::FileType::Fifo) => Ok(FileType::Fifo),
        Ok(pb::FileType::Socket) => Ok(FileType::Socket),
        Ok(pb::FileType::CharDevice) => Ok(FileType::CharDevice),
        Ok(pb::FileType::BlockDevice) => Ok(FileType::BlockDevice),
        Ok(pb::FileType::Unspecified) | Err(_) => Err(MdsError::Malformed {
            what: "file type",
            why: format!("{value} is no file type"),
        }),
    }
}

/// A special file's kind onto the wire.
pub fn special_to_wire(node: SpecialNode) -> pb::SpecialNode {
    match node {
        SpecialNode::Fifo => pb::SpecialNode::Fifo,
        SpecialNode::Socket => pb::SpecialNode::Socket,
        SpecialNode::CharDevice => pb::SpecialNode::CharDevice,
        SpecialNode::BlockDevice => pb::SpecialNode::BlockDevice,
    }
}

/// A special file's kind off the wire (a request: refused as invalid if unknown).
pub fn special_from_wire(value: i32) -> Result<SpecialNode> {
    match pb::SpecialNode::try_from(value) {
        Ok(pb::SpecialNode::Fifo) => Ok(SpecialNode::Fifo),
        Ok(pb::SpecialNode::Socket) => Ok(SpecialNode::Socket),
        Ok(pb::SpecialNode::CharDevice) => Ok(SpecialNode::CharDevice),
        Ok(pb::SpecialNode::BlockDevice) => Ok(SpecialNode::BlockDevice),
        Ok(pb::SpecialNode::Unspecified) | Err(_) => Err(MdsError::InvalidArgument {
            why: format!("{value} is not a FIFO, a socket or a device node"),
        }),
    }
}

/// Attributes onto the wire.
pub fn attributes_to_wire(attributes: &Attributes) -> pb::Attributes {
    pb::Attributes {
        ino: attributes.ino,
        file_type: file_type_to_wire(attributes.file_type) as i32,
        mode: attributes.mode,
        uid: attributes.uid,
        gid: attributes.gid,
        atime_ns: attributes.atime_ns,
        links: attributes.links,
        ctime_ns: attributes.ctime_ns,
        mtime_ns: attributes.mtime_ns,
        layout: attributes.layout.as_ref().map(layout_to_wire),
        default_stripe: attributes.default_stripe.as_ref().map(stripe_to_wire),
        entries_count: attributes.entries_count,
        symlink_target: attributes.symlink_target.clone().unwrap_or_default(),
        rdev: attributes.rdev,
    }
}

/// Attributes off the wire: a file has a layout, a directory does not.
pub fn attributes_from_wire(attributes: Option<&pb::Attributes>) -> Result<Attributes> {
    let malformed = |why: &str| MdsError::Malformed {
        what: "attributes",
        why: why.to_owned(),
    };
    let a = attributes.ok_or_else(|| malformed("missing"))?;
    let file_type = file_type_from_wire(a.file_type)?;
    let layout = a.layout.as_ref().map(layout_from_wire).transpose()?;
    match (file_type, &layout) {
        (FileType::Regular, None) => return Err(malformed("a regular file without a layout")),
        (FileType::Regular, Some(_)) | (_, None) => {}
        (_, Some(_)) => return Err(malformed("a layout on what is not a regular file")),
    }
    let symlink_target = match (file_type, a.symlink_target.as_str()) {
        (FileType::Symlink, "") => return Err(malformed("a symbolic link without a target")),
        (FileType::Symlink, target) => Some(target.to_owned()),
        (_, "") => None,
        (_, _) => return Err(malformed("a target on what is not a symbolic link")),
    };
    Ok(Attributes {
        ino: a.ino,
        file_type,
        mode: a.mode,
        uid: a.uid,
        gid: a.gid,
        links: a.links,
        atime_ns: a.atime_ns,
        ctime_ns: a.ctime_ns,
        mtime_ns: a.mtime_ns,
        layout,
        default_stripe: a.default_stripe.as_ref().map(stripe_from_wire),
        entries_count: a.entries_count,
        symlink_target,
        rdev: a.rdev,
    })
}

/// A directory entry onto the wire.
pub fn entry_to_wire(entry: &DirEntry) -> pb::DirEntry {
    pb::DirEntry {
        name: entry.name.clone(),
        ino: entry.ino,
        file_type: file_type_to_wire(entry.file_type) as i32,
    }
}

/// A directory entry off the wire.
pub fn entry_from_wire(entry: &pb::DirEntry) -> Result<DirEntry> {
    Ok(DirEntry {
        name: entry.name.clone(),
        ino: entry.ino,
        file_type: file_type_from_wire(entry.file_type)?,
    })
}
