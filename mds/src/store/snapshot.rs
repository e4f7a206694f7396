//! The snapshot's format: the whole namespace as of one log sequence number, checksummed.
//!
//! ```text
//! header (40 bytes): magic "IOPMDSS1" | version u32 | reserved u32 (0) | last_seq u64
//!                    | payload_len u64 | payload crc32 u32 | header crc32 u32 (of the 36
//!                    bytes before it)
//! payload:           the namespace state as JSON
//! ```
//!
//! A snapshot replaces the log records up to `last_seq`: restart loads it and replays only
//! the records after it.

/// Size of the snapshot header.
pub const HEADER_LEN: usize = 40;
/// Snapshot format version.
pub const SNAPSHOT_VERSION: u32 = 1;

const MAGIC: &[u8; 8] = b"IOPMDSS1";

/// The snapshot file for a namespace encoded as `payload`, covering records up to `last_seq`.
pub fn encode(last_seq: u64, payload: &[u8]) -> Vec<u8> {
    let mut bytes = Vec::with_capacity(HEADER_LEN + payload.len());
    bytes.extend_from_slice(MAGIC);
    bytes.extend_from_slice(&SNAPSHOT_VERSION.to_le_bytes());
    bytes.extend_from_slice(&0u32.to_le_bytes());
    bytes.extend_from_slice(&last_seq.to_le_bytes());
    bytes.extend_from_slice(&(payload.len() as u64).to_le_bytes());
    bytes.extend_from_slice(&crc32fast::hash(payload).to_le_bytes());
    let header_crc = crc32fast::hash(&bytes[..36]);
    bytes.extend_from_slice(&header_crc.to_le_bytes());
    bytes.extend_from_slice(payload);
    bytes
}

/// The `last_seq` and payload of a snapshot file, or what is wrong with it. Refuses trailing
/// bytes as firmly as missing ones.
pub fn decode(bytes: &[u8]) -> Result<(u64, &[u8]), String> {
    let header = bytes.get(..HEADER_LEN).ok_or_else(|| {
        format!(
            "{} bytes is shorter than the {HEADER_LEN}-byte header",
            bytes.len()
        )
    })?;
    if &header[..8] != MAGIC {
        return Err("not an iopath MDS snapshot (bad magic)".into());
    }
    let header_crc = u32::from_le_bytes(word(&header[36..40]));
    if header_crc != crc32fast::hash(&header[..36]) {
        return Err("header checksum mismatch".into());
    }
    let version = u32::from_le_bytes(word(&header[8..12]));
    if version != SNAPSHOT_VERSION {
        return Err(format!(
            "snapshot version {version}, this build reads {SNAPSHOT_VERSION}"
        ));
    }
    if header[12..16] != [0; 4] {
        return Err("reserved header bytes are not zero".into());
    }
    let last_seq = u64::from_le_bytes(dword(&header[16..24]));
    let payload_len = u64::from_le_bytes(dword(&header[24..32]));
    let payload = &bytes[HEADER_LEN..];
    if payload.len() as u64 != payload_len {
        return Err(format!(
            "payload is {} bytes, the header says {payload_len}",
            payload.len()
        ));
    }
    let stored = u32::from_le_bytes(word(&header[32..36]));
    let computed = crc32fast::hash(payload);
    if stored != computed {
        return Err(format!(
            "payload checksum mismatch: stored {stored:#010x}, computed {computed:#010x}"
        ));
    }
    Ok((last_seq, payload))
}

fn word(bytes: &[u8]) -> [u8; 4] {
    let mut w = [0u8; 4];
    w.copy_from_slice(bytes);
    w
}

fn dword(bytes: &[u8]) -> [u8; 8] {
    let mut w = [0u8; 8];
    w.copy_from_slice(bytes);
    w
}
