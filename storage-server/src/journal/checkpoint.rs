//! `Checkpoint`: the persisted last committed transno and the committed object table.
//!
//! When the journal grows past its limit, the journal task writes a checkpoint (temp file →
//! fsync → rename → fsync directory, so a crash leaves either the old or the new one) and then
//! empties the journal. Recovery starts from the checkpoint and applies only journal records
//! above its `last_committed`.
//!
//! ```text
//! magic "IOPCKPT1" | version u32 | target u32 | last_committed u64 | objects u64
//! | objects × (id u64, size u64) | crc32 u32
//! ```

use super::table::ObjectTable;
use crate::ids::{ObjectId, Transno};

const MAGIC: &[u8; 8] = b"IOPCKPT1";
const VERSION: u32 = 1;
const FIXED_LEN: usize = 8 + 4 + 4 + 8 + 8 + 4;
const OBJECT_LEN: usize = 16;

/// A target's committed state at one transno.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Checkpoint {
    /// The target it belongs to.
    pub target: u32,
    /// Every transaction up to this one is reflected in `table`.
    pub last_committed: Transno,
    /// Committed objects and sizes.
    pub table: ObjectTable,
}

impl Checkpoint {
    /// The checkpoint's bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(FIXED_LEN + OBJECT_LEN * self.table.len());
        out.extend_from_slice(MAGIC);
        out.extend_from_slice(&VERSION.to_le_bytes());
        out.extend_from_slice(&self.target.to_le_bytes());
        out.extend_from_slice(&self.last_committed.0.to_le_bytes());
        out.extend_from_slice(&(self.table.len() as u64).to_le_bytes());
        for (object, size) in self.table.iter() {
            out.extend_from_slice(&object.0.to_le_bytes());
            out.extend_from_slice(&size.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parses a checkpoint holding at most `objects_max` objects.
    pub fn decode(bytes: &[u8], objects_max: usize) -> Result<Checkpoint, String> {
        if bytes.len() < FIXED_LEN {
            return Err(format!(
                "{} bytes, shorter than the {FIXED_LEN}-byte minimum",
                bytes.len()
            ));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let stored = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        if stored != crc32fast::hash(body) {
            return Err("checksum mismatch".to_string());
        }
        if &body[..8] != MAGIC {
            return Err("bad magic".to_string());
        }
        let mut fields = Fields { bytes: body, at: 8 };
        let version = fields.u32();
        if version != VERSION {
            return Err(format!("version {version}, this server reads {VERSION}"));
        }
        let target = fields.u32();
        let last_committed = Transno(fields.u64());
        let count = fields.u64();
        let count = usize::try_from(count)
            .ok()
            .filter(|&c| c <= objects_max)
            .ok_or_else(|| format!("{count} objects, more than the limit of {objects_max}"))?;
        if body.len() != FIXED_LEN - 4 + count * OBJECT_LEN {
            return Err(format!(
                "length {} does not match {count} objects",
                bytes.len()
            ));
        }
        let mut table = ObjectTable::new();
        let mut previous = None;
        for _ in 0..count {
            let object = ObjectId(fields.u64());
            let size = fields.u64();
            if previous.is_some_and(|p| p >= object) {
                return Err("objects not in increasing id order".to_string());
            }
            previous = Some(object);
            table.insert(object, size);
        }
        Ok(Checkpoint {
            target,
            last_committed,
            table,
        })
    }
}

/// A cursor over length-checked bytes.
struct Fields<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl Fields<'_> {
    fn u32(&mut self) -> u32 {
        let mut raw = [0u8; 4];
        raw.copy_from_slice(&self.bytes[self.at..self.at + 4]);
        self.at += 4;
        u32::from_le_bytes(raw)
    }

    fn u64(&mut self) -> u64 {
        let mut raw = [0u8; 8];
        raw.copy_from_slice(&self.bytes[self.at..self.at + 8]);
        self.at += 8;
        u64::from_le_bytes(raw)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Checkpoint {
        let mut table = ObjectTable::new();
        table.insert(ObjectId(1), 10);
        table.insert(ObjectId(9), 1 << 40);
        Checkpoint {
            target: 2,
            last_committed: Transno(77),
            table,
        }
    }

    #[test]
    fn round_trips() {
        let bytes = sample().encode();
        assert_eq!(Checkpoint::decode(&bytes, 10), Ok(sample()));
        let empty = Checkpoint {
            target: 0,
            last_committed: Transno::ZERO,
            table: ObjectTable::new(),
        };
        assert_eq!(Checkpoint::decode(&empty.encode(), 0), Ok(empty));
    }

    #[test]
    fn damage_and_limits_are_refused() {
        let bytes = sample().encode();
        for at in 0..bytes.len() {
            let mut flipped = bytes.clone();
            flipped[at] ^= 0x10;
            assert!(Checkpoint::decode(&flipped, 10).is_err(), "byte {at}");
        }
        for cut in 0..bytes.len() {
            assert!(Checkpoint::decode(&bytes[..cut], 10).is_err(), "cut {cut}");
        }
        assert!(
            Checkpoint::decode(&bytes, 1)
                .unwrap_err()
                .contains("more than the limit")
        );
    }
}
