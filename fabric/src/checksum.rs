//! Checksums on bulk data: CRC32 (IEEE, crc32fast) by default, CRC32C (Castagnoli) when a
//! descriptor asks for it.
//!
//! A bulk transfer is checked twice: every chunk against the checksum its sender computed
//! (so a chunk corrupted on the wire is resent alone), and the whole transfer against the
//! descriptor's checksum, by combining the chunk checksums without another pass over the data.

use std::fmt;

use bytes::Bytes;

/// Which checksum a descriptor's `checksum` field holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum ChecksumKind {
    /// CRC32 (IEEE 802.3), as Lustre's default `checksum_type=crc32`.
    #[default]
    Crc32,
    /// CRC32C (Castagnoli), as Lustre's `crc32c`.
    Crc32c,
}

impl ChecksumKind {
    /// The code used in descriptors and frame flags.
    pub fn code(self) -> u32 {
        match self {
            ChecksumKind::Crc32 => 0,
            ChecksumKind::Crc32c => 1,
        }
    }

    /// Parses a code from the wire; `None` for a code this build does not know (the caller
    /// says so with `FabricError::UnsupportedChecksum`).
    pub fn from_code(code: u32) -> Option<Self> {
        match code {
            0 => Some(ChecksumKind::Crc32),
            1 => Some(ChecksumKind::Crc32c),
            _ => None,
        }
    }

    /// The checksum of `data`.
    pub fn compute(self, data: &[u8]) -> u32 {
        match self {
            ChecksumKind::Crc32 => crc32fast::hash(data),
            ChecksumKind::Crc32c => crc32c::crc32c(data),
        }
    }

    /// The checksum of `a ‖ data`, given the checksum `crc` of `a` (start from
    /// [`ChecksumKind::empty`]): a checksum taken piece by piece as the bytes are made.
    pub fn append(self, crc: u32, data: &[u8]) -> u32 {
        match self {
            ChecksumKind::Crc32 => {
                let mut hasher = crc32fast::Hasher::new_with_initial(crc);
                hasher.update(data);
                hasher.finalize()
            }
            ChecksumKind::Crc32c => crc32c::crc32c_append(crc, data),
        }
    }

    /// The checksum of `a ‖ b`, given the checksums of `a` and `b` and the length of `b`.
    pub fn combine(self, crc_a: u32, crc_b: u32, len_b: u64) -> u32 {
        match self {
            ChecksumKind::Crc32 => {
                let mut a = crc32fast::Hasher::new_with_initial_len(crc_a, 0);
                let b = crc32fast::Hasher::new_with_initial_len(crc_b, len_b);
                a.combine(&b);
                a.finalize()
            }
            ChecksumKind::Crc32c => crc32c::crc32c_combine(crc_a, crc_b, len_b as usize),
        }
    }

    /// The checksum of the empty string, the start of a [`ChecksumKind::combine`] chain.
    pub fn empty(self) -> u32 {
        0
    }
}

impl fmt::Display for ChecksumKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            ChecksumKind::Crc32 => "crc32",
            ChecksumKind::Crc32c => "crc32c",
        })
    }
}

impl std::str::FromStr for ChecksumKind {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "crc32" => Ok(ChecksumKind::Crc32),
            "crc32c" => Ok(ChecksumKind::Crc32c),
            other => Err(format!("unknown checksum {other:?} (known: crc32, crc32c)")),
        }
    }
}

/// Bytes to send, with their checksum when whoever made them has computed it already.
///
/// A producer that checksums its data piece by piece while making it — as IOR's pattern fill
/// does, while each piece is still in cache — spares the fabric a second pass over cold
/// memory when the bytes are described. The checksum is not taken on trust: the receiver
/// verifies every chunk, so a wrong one fails the transfer after its resends rather than
/// storing bad data.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Checksummed {
    data: Bytes,
    checksum: Option<(ChecksumKind, u32)>,
}

impl Checksummed {
    /// `data` whose `kind` checksum is `checksum`.
    pub fn new(data: Bytes, kind: ChecksumKind, checksum: u32) -> Checksummed {
        Checksummed {
            data,
            checksum: Some((kind, checksum)),
        }
    }

    /// The bytes, without the checksum.
    pub fn into_data(self) -> Bytes {
        self.data
    }

    /// Length in bytes.
    pub fn len(&self) -> usize {
        self.data.len()
    }

    /// True when there are no bytes.
    pub fn is_empty(&self) -> bool {
        self.data.is_empty()
    }

    /// The checksum of all the bytes and its kind, when known.
    pub fn known_checksum(&self) -> Option<(ChecksumKind, u32)> {
        self.checksum
    }
}

impl From<Bytes> for Checksummed {
    fn from(data: Bytes) -> Checksummed {
        Checksummed {
            data,
            checksum: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_values() {
        // The standard check value of each polynomial over "123456789".
        assert_eq!(ChecksumKind::Crc32.compute(b"123456789"), 0xCBF4_3926);
        assert_eq!(ChecksumKind::Crc32c.compute(b"123456789"), 0xE306_9283);
    }

    #[test]
    fn combining_chunks_equals_one_pass() {
        let data: Vec<u8> = (0..10_000u32).map(|i| (i * 31 % 251) as u8).collect();
        for kind in [ChecksumKind::Crc32, ChecksumKind::Crc32c] {
            for chunk in [1, 7, 1000, 4096, 10_000] {
                let mut crc = kind.empty();
                for piece in data.chunks(chunk) {
                    crc = kind.combine(crc, kind.compute(piece), piece.len() as u64);
                }
                assert_eq!(crc, kind.compute(&data), "{kind} chunk {chunk}");
            }
        }
    }
}
