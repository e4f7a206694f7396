//! Journal records and the journal header: fixed-size, little-endian, CRC32 each.
//!
//! ```text
//! header (24 bytes): magic "IOPJRNL1" | version u32 | target u32 | reserved u32 (0) | crc32 u32
//! record (56 bytes): magic u32 | kind u8 | reserved [u8; 3] (0) | transno u64 | object u64
//!                    | offset u64 | length u64 | size_after u64 | reserved u32 (0) | crc32 u32
//! ```
//!
//! A transaction is a run of operation records followed by one commit record naming the first
//! and last transno of the run and how many records it holds. Only a transaction whose commit
//! record is in the journal counts: that is what makes torn tails recognisable.
//!
//! Decoding parses once into typed values and refuses anything a writer could not have
//! produced (wrong length, checksum, kind, non-zero reserved bytes, inconsistent fields).

use crate::ids::{ObjectId, Transno};
use std::fmt;

/// Size of the journal header.
pub const HEADER_LEN: usize = 24;
/// Size of every record.
pub const RECORD_LEN: usize = 56;
/// Journal format version.
pub const JOURNAL_VERSION: u32 = 1;

const HEADER_MAGIC: &[u8; 8] = b"IOPJRNL1";
/// Leading magic of every record ("IJRC" in memory order).
pub const RECORD_MAGIC: [u8; 4] = *b"IJRC";

/// The operations a journal record can describe.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Operation {
    /// An empty object was created.
    Create,
    /// `length` bytes were written at `offset`.
    Write,
    /// The object was truncated (or extended) to `size_after` bytes (Lustre's OST_PUNCH).
    Punch,
    /// The object was destroyed.
    Destroy,
}

impl Operation {
    fn code(self) -> u8 {
        match self {
            Operation::Create => 1,
            Operation::Write => 2,
            Operation::Punch => 3,
            Operation::Destroy => 4,
        }
    }
}

const COMMIT_CODE: u8 = 5;

/// One state change of one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OpRecord {
    /// Its transaction number.
    pub transno: Transno,
    /// What happened.
    pub operation: Operation,
    /// To which object.
    pub object: ObjectId,
    /// Extent start (writes), else 0.
    pub offset_bytes: u64,
    /// Extent length (writes), else 0.
    pub length_bytes: u64,
    /// Object size after the operation as the server saw it (0 for create and destroy).
    pub size_after_bytes: u64,
}

/// The record that closes a transaction: records `first..=last`, `count` of them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CommitRecord {
    /// Transno of the transaction's first record.
    pub first: Transno,
    /// Transno of its last record; after this record is durable, `last_committed >= last`.
    pub last: Transno,
    /// Number of operation records in the transaction.
    pub count: u32,
}

/// Anything that can sit in the journal after the header.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalEntry {
    /// An operation.
    Op(OpRecord),
    /// The end of a transaction.
    Commit(CommitRecord),
}

/// Why bytes are not a record. Used by the scanner to tell a torn tail from corruption, and
/// turned into the `reason` of a `JournalCorrupt` error.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordDefect {
    /// Fewer than [`RECORD_LEN`] bytes.
    Short {
        /// Bytes available.
        len: usize,
    },
    /// The magic is wrong.
    BadMagic,
    /// The CRC32 does not match.
    BadChecksum {
        /// Stored in the record.
        stored: u32,
        /// Computed over its bytes.
        computed: u32,
    },
    /// Unknown record kind.
    UnknownKind(u8),
    /// Well-formed bytes with impossible contents.
    Inconsistent(&'static str),
}

impl fmt::Display for RecordDefect {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordDefect::Short { len } => {
                write!(f, "incomplete record ({len} of {RECORD_LEN} bytes)")
            }
            RecordDefect::BadMagic => write!(f, "bad record magic"),
            RecordDefect::BadChecksum { stored, computed } => {
                write!(
                    f,
                    "checksum mismatch (stored {stored:#010x}, computed {computed:#010x})"
                )
            }
            RecordDefect::UnknownKind(kind) => write!(f, "unknown record kind {kind}"),
            RecordDefect::Inconsistent(what) => write!(f, "inconsistent record: {what}"),
        }
    }
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut raw = [0u8; 4];
    raw.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(raw)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut raw = [0u8; 8];
    raw.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(raw)
}

impl JournalEntry {
    /// Appends the record's [`RECORD_LEN`] bytes to `out`.
    pub fn encode(&self, out: &mut Vec<u8>) {
        let start = out.len();
        let (kind, transno, object, offset, length, size) = match *self {
            JournalEntry::Op(r) => (
                r.operation.code(),
                r.transno.0,
                r.object.0,
                r.offset_bytes,
                r.length_bytes,
                r.size_after_bytes,
            ),
            JournalEntry::Commit(c) => (COMMIT_CODE, c.last.0, 0, c.first.0, u64::from(c.count), 0),
        };
        out.extend_from_slice(&RECORD_MAGIC);
        out.push(kind);
        out.extend_from_slice(&[0; 3]);
        for field in [transno, object, offset, length, size] {
            out.extend_from_slice(&field.to_le_bytes());
        }
        out.extend_from_slice(&0u32.to_le_bytes());
        let crc = crc32fast::hash(&out[start..]);
        out.extend_from_slice(&crc.to_le_bytes());
        debug_assert_eq!(out.len() - start, RECORD_LEN);
    }

    /// Parses exactly one record from `bytes` (which must be [`RECORD_LEN`] long).
    pub fn decode(bytes: &[u8]) -> Result<JournalEntry, RecordDefect> {
        if bytes.len() != RECORD_LEN {
            return Err(RecordDefect::Short { len: bytes.len() });
        }
        if bytes[0..4] != RECORD_MAGIC {
            return Err(RecordDefect::BadMagic);
        }
        let stored = u32_at(bytes, 52);
        let computed = crc32fast::hash(&bytes[..52]);
        if stored != computed {
            return Err(RecordDefect::BadChecksum { stored, computed });
        }
        if bytes[5..8] != [0; 3] || u32_at(bytes, 48) != 0 {
            return Err(RecordDefect::Inconsistent("reserved bytes are not zero"));
        }
        let transno = Transno(u64_at(bytes, 8));
        let object = ObjectId(u64_at(bytes, 16));
        let offset = u64_at(bytes, 24);
        let length = u64_at(bytes, 32);
        let size = u64_at(bytes, 40);
        if transno == Transno::ZERO {
            return Err(RecordDefect::Inconsistent("transno 0"));
        }
        let operation = match bytes[4] {
            1 => Operation::Create,
            2 => Operation::Write,
            3 => Operation::Punch,
            4 => Operation::Destroy,
            COMMIT_CODE => {
                let count = u32::try_from(length)
                    .map_err(|_| RecordDefect::Inconsistent("commit count too large"))?;
                let span = transno.0.checked_sub(offset);
                if object.0 != 0
                    || size != 0
                    || offset == 0
                    || count == 0
                    || span.is_none_or(|s| s < u64::from(count) - 1)
                {
                    return Err(RecordDefect::Inconsistent("commit record fields"));
                }
                return Ok(JournalEntry::Commit(CommitRecord {
                    first: Transno(offset),
                    last: transno,
                    count,
                }));
            }
            other => return Err(RecordDefect::UnknownKind(other)),
        };
        let consistent = match operation {
            Operation::Create | Operation::Destroy => offset == 0 && length == 0 && size == 0,
            Operation::Punch => offset == 0 && length == 0,
            Operation::Write => offset.checked_add(length).is_some_and(|end| end <= size),
        };
        if !consistent {
            return Err(RecordDefect::Inconsistent("operation fields"));
        }
        Ok(JournalEntry::Op(OpRecord {
            transno,
            operation,
            object,
            offset_bytes: offset,
            length_bytes: length,
            size_after_bytes: size,
        }))
    }
}

/// The first bytes of every journal: format and owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct JournalHeader {
    /// The index of the target this journal belongs to (an external journal must not be
    /// attached to the wrong OST).
    pub target: u32,
}

impl JournalHeader {
    /// The header's [`HEADER_LEN`] bytes.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(HEADER_LEN);
        out.extend_from_slice(HEADER_MAGIC);
        out.extend_from_slice(&JOURNAL_VERSION.to_le_bytes());
        out.extend_from_slice(&self.target.to_le_bytes());
        out.extend_from_slice(&0u32.to_le_bytes());
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    /// Parses the header at the start of `bytes`.
    pub fn decode(bytes: &[u8]) -> Result<JournalHeader, String> {
        let Some(header) = bytes.get(..HEADER_LEN) else {
            return Err(format!("journal shorter than its {HEADER_LEN}-byte header"));
        };
        if &header[..8] != HEADER_MAGIC {
            return Err("not an iopath journal (bad header magic)".to_string());
        }
        let stored = u32_at(header, 20);
        if stored != crc32fast::hash(&header[..20]) {
            return Err("header checksum mismatch".to_string());
        }
        let version = u32_at(header, 8);
        if version != JOURNAL_VERSION {
            return Err(format!(
                "journal version {version}, this server reads {JOURNAL_VERSION}"
            ));
        }
        if u32_at(header, 16) != 0 {
            return Err("header reserved bytes are not zero".to_string());
        }
        Ok(JournalHeader {
            target: u32_at(header, 12),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(transno: u64) -> JournalEntry {
        JournalEntry::Op(OpRecord {
            transno: Transno(transno),
            operation: Operation::Write,
            object: ObjectId(7),
            offset_bytes: 4096,
            length_bytes: 1 << 20,
            size_after_bytes: 4096 + (1 << 20),
        })
    }

    #[test]
    fn every_kind_round_trips() {
        let entries = [
            write(3),
            JournalEntry::Op(OpRecord {
                transno: Transno(4),
                operation: Operation::Create,
                object: ObjectId(u64::MAX),
                offset_bytes: 0,
                length_bytes: 0,
                size_after_bytes: 0,
            }),
            JournalEntry::Op(OpRecord {
                transno: Transno(5),
                operation: Operation::Punch,
                object: ObjectId(1),
                offset_bytes: 0,
                length_bytes: 0,
                size_after_bytes: 99,
            }),
            JournalEntry::Op(OpRecord {
                transno: Transno(6),
                operation: Operation::Destroy,
                object: ObjectId(1),
                offset_bytes: 0,
                length_bytes: 0,
                size_after_bytes: 0,
            }),
            JournalEntry::Commit(CommitRecord {
                first: Transno(3),
                last: Transno(6),
                count: 4,
            }),
        ];
        for entry in entries {
            let mut bytes = Vec::new();
            entry.encode(&mut bytes);
            assert_eq!(bytes.len(), RECORD_LEN);
            assert_eq!(JournalEntry::decode(&bytes), Ok(entry));
        }
    }

    #[test]
    fn every_single_bit_flip_is_rejected() {
        let mut bytes = Vec::new();
        write(9).encode(&mut bytes);
        for bit in 0..RECORD_LEN * 8 {
            let mut flipped = bytes.clone();
            flipped[bit / 8] ^= 1 << (bit % 8);
            assert!(JournalEntry::decode(&flipped).is_err(), "bit {bit}");
        }
    }

    /// Re-seals a record after editing its fields, so the semantic checks are what reject it.
    fn resealed(mut bytes: Vec<u8>) -> Vec<u8> {
        let crc = crc32fast::hash(&bytes[..52]);
        bytes[52..].copy_from_slice(&crc.to_le_bytes());
        bytes
    }

    #[test]
    fn malformed_records_get_a_clear_reason() {
        let mut good = Vec::new();
        write(9).encode(&mut good);
        let cases: Vec<(Vec<u8>, &str)> = vec![
            (good[..30].to_vec(), "incomplete record (30 of 56 bytes)"),
            (
                {
                    let mut b = good.clone();
                    b[0] = b'X';
                    b
                },
                "bad record magic",
            ),
            (
                resealed({
                    let mut b = good.clone();
                    b[4] = 42;
                    b
                }),
                "unknown record kind 42",
            ),
            (
                resealed({
                    let mut b = good.clone();
                    b[8..16].fill(0);
                    b
                }),
                "inconsistent record: transno 0",
            ),
            (
                resealed({
                    let mut b = good.clone();
                    b[40..48].fill(0);
                    b
                }),
                "inconsistent record: operation fields",
            ),
            (
                resealed({
                    let mut b = good.clone();
                    b[6] = 1;
                    b
                }),
                "inconsistent record: reserved bytes are not zero",
            ),
        ];
        for (bytes, reason) in cases {
            let defect = JournalEntry::decode(&bytes).unwrap_err();
            assert_eq!(defect.to_string(), reason);
        }
    }

    #[test]
    fn header_round_trips_and_rejects_foreign_files() {
        let bytes = JournalHeader { target: 3 }.encode();
        assert_eq!(
            JournalHeader::decode(&bytes),
            Ok(JournalHeader { target: 3 })
        );
        assert!(
            JournalHeader::decode(&bytes[..10])
                .unwrap_err()
                .contains("shorter")
        );
        assert!(
            JournalHeader::decode(b"#!/bin/sh\necho hello world!!!")
                .unwrap_err()
                .contains("magic")
        );
    }
}
