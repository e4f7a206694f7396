//! The buffer descriptor: what an RPC carries instead of data.

use iopath_proto::fabric as pb;

use crate::checksum::ChecksumKind;
use crate::error::FabricError;
use crate::limits::Limits;
use crate::nid::Nid;

/// Names `length` bytes at `offset` in region `region` of node `owner`, with their checksum.
/// Parsed once from the wire ([`BufferDescriptor::from_proto`]) and checked against the
/// receiver's limits there.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct BufferDescriptor {
    /// The node holding the bytes.
    pub owner: Nid,
    /// The region on that node.
    pub region: u64,
    /// Start of the named bytes within the region.
    pub offset: u64,
    /// How many bytes.
    pub length: u64,
    /// Checksum of the named bytes, if known: the owner's describe sets it; a sink's
    /// descriptor and a sub-descriptor cut by a forwarder ([`BufferDescriptor::slice`]) have
    /// none, and then only each chunk is checked, against the owner's checksum of it.
    pub checksum: Option<u32>,
    /// Which checksum.
    pub checksum_kind: ChecksumKind,
}

impl BufferDescriptor {
    /// Parses a descriptor off the wire, refusing lengths over `limits.bulk_max_bytes`,
    /// offsets that overflow, and checksums this node does not accept.
    pub fn from_proto(wire: &pb::BufferDescriptor, limits: &Limits) -> Result<Self, FabricError> {
        let owner: Nid = wire.owner.parse()?;
        if wire.length > limits.bulk_max_bytes {
            return Err(FabricError::TooLarge {
                what: "buffer descriptor",
                bytes: wire.length,
                max_bytes: limits.bulk_max_bytes,
            });
        }
        if wire.offset.checked_add(wire.length).is_none() {
            return Err(FabricError::BadBulkAccess {
                region: wire.region,
                why: "offset + length overflows".into(),
            });
        }
        let checksum_kind = ChecksumKind::from_code(wire.checksum_kind).ok_or(
            FabricError::UnsupportedChecksum {
                code: wire.checksum_kind,
            },
        )?;
        if !limits.checksums_accepted.contains(&checksum_kind) {
            return Err(FabricError::ChecksumRefused {
                kind: checksum_kind,
            });
        }
        Ok(BufferDescriptor {
            owner,
            region: wire.region,
            offset: wire.offset,
            length: wire.length,
            checksum: wire.checksum,
            checksum_kind,
        })
    }

    /// The wire form.
    pub fn to_proto(&self) -> pb::BufferDescriptor {
        pb::BufferDescriptor {
            owner: self.owner.to_string(),
            region: self.region,
            offset: self.offset,
            length: self.length,
            checksum: self.checksum,
            checksum_kind: self.checksum_kind.code(),
        }
    }

    /// The sub-descriptor for `length` bytes at `offset` within this one, as a forwarder
    /// splits a request by stripe; `None` if out of range. Only the owner knows the checksum
    /// of the part, so the slice has none (the whole descriptor's is kept when the slice is
    /// the whole): its chunks are still verified against the owner's checksums as they arrive.
    pub fn slice(&self, offset: u64, length: u64) -> Option<BufferDescriptor> {
        let end = offset.checked_add(length)?;
        let whole = offset == 0 && length == self.length;
        (end <= self.length).then(|| BufferDescriptor {
            offset: self.offset + offset,
            length,
            checksum: if whole { self.checksum } else { None },
            ..*self
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire() -> pb::BufferDescriptor {
        pb::BufferDescriptor {
            owner: "17@mem0".into(),
            region: 42,
            offset: 100,
            length: 4096,
            checksum: Some(7),
            checksum_kind: 1,
        }
    }

    #[test]
    fn round_trips() {
        let limits = Limits::default();
        let desc = BufferDescriptor::from_proto(&wire(), &limits).unwrap();
        assert_eq!(desc.checksum_kind, ChecksumKind::Crc32c);
        assert_eq!(desc.to_proto(), wire());
    }

    #[test]
    fn refuses_bad_descriptors() {
        let limits = Limits {
            bulk_max_bytes: 4095,
            ..Limits::default()
        };
        assert!(matches!(
            BufferDescriptor::from_proto(&wire(), &limits),
            Err(FabricError::TooLarge { .. })
        ));
        let limits = Limits::default();
        let mut bad = wire();
        bad.owner = "seventeen".into();
        assert!(matches!(
            BufferDescriptor::from_proto(&bad, &limits),
            Err(FabricError::BadNid { .. })
        ));
        let mut bad = wire();
        bad.checksum_kind = 9;
        assert!(BufferDescriptor::from_proto(&bad, &limits).is_err());
        let mut bad = wire();
        bad.offset = u64::MAX;
        bad.length = 2;
        assert!(BufferDescriptor::from_proto(&bad, &limits).is_err());
        let only_crc32 = Limits {
            checksums_accepted: vec![ChecksumKind::Crc32],
            ..Limits::default()
        };
        assert!(matches!(
            BufferDescriptor::from_proto(&wire(), &only_crc32),
            Err(FabricError::ChecksumRefused { .. })
        ));
    }

    #[test]
    fn slices_stay_inside() {
        let desc = BufferDescriptor::from_proto(&wire(), &Limits::default()).unwrap();
        let sub = desc.slice(1000, 96).unwrap();
        assert_eq!((sub.offset, sub.length, sub.checksum), (1100, 96, None));
        assert_eq!(
            desc.slice(0, 4096).unwrap().checksum,
            Some(7),
            "the whole keeps its checksum"
        );
        assert!(desc.slice(4000, 97).is_none());
        assert!(desc.slice(u64::MAX, 2).is_none());
    }
}
