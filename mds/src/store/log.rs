//! The operation log's format, and reading it back after a crash — pure functions over bytes.
//!
//! ```text
//! header (32 bytes): magic "IOPMDSL1" | version u32 | reserved u32 (0) | base_seq u64
//!                    | reserved u32 (0) | crc32 u32 (of the 28 bytes before it)
//! record:            magic "IMRC" | payload_len u32 | seq u64 | crc32 u32 | payload
//!                    (crc32 of magic, payload_len, seq and payload; payload is one mutation
//!                    as JSON, so `strings mds.log` shows a student what happened)
//! ```
//!
//! Integers are little-endian. Records carry consecutive sequence numbers from `base_seq`.
//!
//! Reading back, at the first record that does not verify (short, wrong magic, oversized,
//! checksum mismatch) the scanner asks: does an intact record start anywhere after this
//! point? If one does, acknowledged operations lie beyond the damage, and cutting the log
//! there would lose them: the log is corrupt and the service must not start. If none does,
//! the damage is a torn tail — the last append was cut short by the crash, its fsync never
//! returned, so nobody was told it happened — and it is cut off. (A bit flip inside the very
//! last record looks exactly like a torn tail and is treated as one.)

use std::ops::Range;

use crate::limits::LOG_RECORD_MAX_BYTES;

/// Size of the log header.
pub const HEADER_LEN: usize = 32;
/// Size of a record's fixed part, before its payload.
pub const RECORD_HEADER_LEN: usize = 20;
/// Log format version.
pub const LOG_VERSION: u32 = 1;

const HEADER_MAGIC: &[u8; 8] = b"IOPMDSL1";
const RECORD_MAGIC: &[u8; 4] = b"IMRC";

/// The header of a log whose first record is `base_seq`.
pub fn encode_header(base_seq: u64) -> [u8; HEADER_LEN] {
    let mut header = [0u8; HEADER_LEN];
    header[..8].copy_from_slice(HEADER_MAGIC);
    header[8..12].copy_from_slice(&LOG_VERSION.to_le_bytes());
    header[16..24].copy_from_slice(&base_seq.to_le_bytes());
    let crc = crc32fast::hash(&header[..28]);
    header[28..32].copy_from_slice(&crc.to_le_bytes());
    header
}

/// The `base_seq` of a log header, or what is wrong with it.
pub fn decode_header(bytes: &[u8]) -> Result<u64, String> {
    let header = bytes
        .get(..HEADER_LEN)
        .ok_or_else(|| format!("log header is {} bytes, {HEADER_LEN} expected", bytes.len()))?;
    if &header[..8] != HEADER_MAGIC {
        return Err("not an iopath MDS log (bad magic)".into());
    }
    let stored = u32_at(header, 28);
    let computed = crc32fast::hash(&header[..28]);
    if stored != computed {
        return Err(format!(
            "log header checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    let version = u32_at(header, 8);
    if version != LOG_VERSION {
        return Err(format!(
            "log version {version}, this build reads {LOG_VERSION}"
        ));
    }
    if u32_at(header, 12) != 0 || u32_at(header, 24) != 0 {
        return Err("reserved header bytes are not zero".into());
    }
    let base_seq = u64_at(header, 16);
    if base_seq == 0 {
        return Err("log base sequence is 0; sequences start at 1".into());
    }
    Ok(base_seq)
}

/// Record `seq` carrying `payload`, framed and checksummed.
pub fn encode_record(seq: u64, payload: &[u8]) -> Vec<u8> {
    assert!(
        payload.len() <= LOG_RECORD_MAX_BYTES as usize,
        "callers refuse oversized records before encoding"
    );
    let mut record = Vec::with_capacity(RECORD_HEADER_LEN + payload.len());
    record.extend_from_slice(RECORD_MAGIC);
    record.extend_from_slice(&(payload.len() as u32).to_le_bytes());
    record.extend_from_slice(&seq.to_le_bytes());
    let mut crc = crc32fast::Hasher::new();
    crc.update(&record[..16]);
    crc.update(payload);
    record.extend_from_slice(&crc.finalize().to_le_bytes());
    record.extend_from_slice(payload);
    record
}

/// One intact record found by [`scan`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScannedRecord {
    /// Its sequence number.
    pub seq: u64,
    /// Where it starts in the log.
    pub offset: u64,
    /// Where its payload lies in the scanned bytes.
    pub payload: Range<usize>,
}

/// What a torn tail looked like.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TornTail {
    /// Where it starts (= the log's valid length).
    pub offset: u64,
    /// How many bytes it has.
    pub bytes: u64,
    /// What was wrong with the record there.
    pub defect: String,
}

/// What [`scan`] found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogScan {
    /// The header's first sequence number.
    pub base_seq: u64,
    /// The intact records, in order, with consecutive sequence numbers from `base_seq`.
    pub records: Vec<ScannedRecord>,
    /// Bytes up to the end of the last intact record.
    pub valid_len: u64,
    /// The torn tail after `valid_len`, if any.
    pub torn: Option<TornTail>,
}

/// Damage that refuses the log: where it is and what it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Corruption {
    /// Byte offset of the damage.
    pub offset: u64,
    /// What is wrong.
    pub reason: String,
}

/// Reads a whole log: its intact records, and either a clean end, a torn tail to cut off, or
/// corruption that must stop the service.
pub fn scan(bytes: &[u8]) -> Result<LogScan, Corruption> {
    let base_seq = decode_header(bytes).map_err(|reason| Corruption { offset: 0, reason })?;
    let mut records = Vec::new();
    let mut position = HEADER_LEN;
    let mut expected_seq = base_seq;
    // Each pass consumes one record of at least RECORD_HEADER_LEN bytes, or ends the scan.
    while position < bytes.len() {
        match decode_record(bytes, position) {
            Ok((seq, payload)) => {
                if seq != expected_seq {
                    // The record verified, so it was written whole: a wrong sequence is not a
                    // torn write but a log that was spliced or damaged.
                    return Err(Corruption {
                        offset: position as u64,
                        reason: format!("record has sequence {seq}, {expected_seq} expected"),
                    });
                }
                records.push(ScannedRecord {
                    seq,
                    offset: position as u64,
                    payload: payload.clone(),
                });
                position = payload.end;
                expected_seq += 1;
            }
            Err(defect) => {
                if let Some(later) = intact_record_after(bytes, position) {
                    return Err(Corruption {
                        offset: position as u64,
                        reason: format!(
                            "{defect}, and an intact record follows at byte {later}: this is damage, not a torn tail"
                        ),
                    });
                }
                return Ok(LogScan {
                    base_seq,
                    records,
                    valid_len: position as u64,
                    torn: Some(TornTail {
                        offset: position as u64,
                        bytes: (bytes.len() - position) as u64,
                        defect,
                    }),
                });
            }
        }
    }
    Ok(LogScan {
        base_seq,
        records,
        valid_len: position as u64,
        torn: None,
    })
}

/// Decodes the record at `position`: its sequence and payload range, or its defect.
fn decode_record(bytes: &[u8], position: usize) -> Result<(u64, Range<usize>), String> {
    let Some(header) = bytes.get(position..position + RECORD_HEADER_LEN) else {
        return Err(format!(
            "record header cut short ({} of {RECORD_HEADER_LEN} bytes)",
            bytes.len() - position
        ));
    };
    if &header[..4] != RECORD_MAGIC {
        return Err("record magic missing".into());
    }
    let payload_len = u32_at(header, 4);
    if payload_len > LOG_RECORD_MAX_BYTES {
        return Err(format!(
            "record length {payload_len} exceeds the maximum of {LOG_RECORD_MAX_BYTES}"
        ));
    }
    let start = position + RECORD_HEADER_LEN;
    let end = start + payload_len as usize;
    let Some(payload) = bytes.get(start..end) else {
        return Err(format!(
            "record payload cut short ({} of {payload_len} bytes)",
            bytes.len() - start
        ));
    };
    let mut crc = crc32fast::Hasher::new();
    crc.update(&header[..16]);
    crc.update(payload);
    let computed = crc.finalize();
    let stored = u32_at(header, 16);
    if stored != computed {
        return Err(format!(
            "record checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    Ok((u64_at(header, 8), start..end))
}

/// The offset of the first intact record starting after `position`, if any. Visits each
/// byte once and verifies only where the record magic appears.
fn intact_record_after(bytes: &[u8], position: usize) -> Option<usize> {
    (position + 1..bytes.len().saturating_sub(RECORD_HEADER_LEN - 1))
        .filter(|&at| &bytes[at..at + 4] == RECORD_MAGIC)
        .find(|&at| decode_record(bytes, at).is_ok())
}

fn u32_at(bytes: &[u8], at: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[at..at + 4]);
    u32::from_le_bytes(word)
}

fn u64_at(bytes: &[u8], at: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[at..at + 8]);
    u64::from_le_bytes(word)
}
