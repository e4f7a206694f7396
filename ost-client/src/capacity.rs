//! [`Capacity`]: a storage target's space and inodes, as statvfs(3) reports the file system
//! under it — what the OST `STATFS` call carries, and what `lfs df` and a mount's `statfs`
//! show. One type for the server that measures it, the fyod that passes it on and the client
//! that sums it.

use iopath_proto::ost as pb;

/// The file system under one target, in bytes and files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Capacity {
    /// Its size.
    pub total_bytes: u64,
    /// Free.
    pub free_bytes: u64,
    /// Free to an unprivileged writer.
    pub available_bytes: u64,
    /// Inodes.
    pub files: u64,
    /// Free inodes.
    pub files_free: u64,
    /// The fragment size its block counts are in.
    pub block_bytes: u32,
    /// The longest file name.
    pub name_max: u32,
}

impl Capacity {
    /// As the wire carries it.
    pub fn to_wire(&self) -> pb::StatfsReply {
        pb::StatfsReply {
            total_bytes: self.total_bytes,
            free_bytes: self.free_bytes,
            available_bytes: self.available_bytes,
            files: self.files,
            files_free: self.files_free,
            block_bytes: self.block_bytes,
            name_max: self.name_max,
        }
    }

    /// From the wire.
    pub fn from_wire(reply: &pb::StatfsReply) -> Capacity {
        Capacity {
            total_bytes: reply.total_bytes,
            free_bytes: reply.free_bytes,
            available_bytes: reply.available_bytes,
            files: reply.files,
            files_free: reply.files_free,
            block_bytes: reply.block_bytes,
            name_max: reply.name_max,
        }
    }
}
