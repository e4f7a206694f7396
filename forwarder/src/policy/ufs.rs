//! The UFS chunker: a call cut into chunks of at most 128 KiB, each inside one 128 KiB-aligned
//! block of the file, which is both the fyod's transfer buffer and the cache's block. "The
//! fyod allocates a data buffer of up to 128KB and breaks up I/O requests into 128KB chunks"
//! (§3.3.1).
//!
//! ```text
//! file:   |   block 0 (128K)   |   block 1   |   block 2   |
//! call:           |<----------- 300 KiB ---------->|
//! chunks:         |  c0 (to 128K) |    c1 (128K)    | c2 |
//! ```

use crate::error::{ForwarderError, Result};

/// One chunk of a UFS call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Chunk {
    /// Where in the file (and in its one object) it starts.
    pub file_offset_bytes: u64,
    /// Where in the client's buffer it starts.
    pub buffer_offset_bytes: u64,
    /// How long it is: `1..=chunk_bytes`.
    pub length_bytes: u64,
    /// Which block of the file it lies in.
    pub block: u64,
    /// Where in that block it starts.
    pub block_offset_bytes: u64,
}

/// The chunks of a call, in file order (see [`chunks`]).
#[derive(Debug, Clone)]
pub struct Chunks {
    chunk_bytes: u64,
    start_bytes: u64,
    next_bytes: u64,
    end_bytes: u64,
}

/// The chunks of the call `offset_bytes .. offset_bytes + length_bytes`, each inside one
/// `chunk_bytes`-aligned block. An empty call has none.
pub fn chunks(offset_bytes: u64, length_bytes: u64, chunk_bytes: u64) -> Result<Chunks> {
    assert!(chunk_bytes > 0, "a chunk holds at least one byte");
    let end_bytes = offset_bytes.checked_add(length_bytes).ok_or_else(|| {
        ForwarderError::invalid(
            "extent",
            format!("{length_bytes} bytes at {offset_bytes} run past the largest file offset"),
        )
    })?;
    Ok(Chunks {
        chunk_bytes,
        start_bytes: offset_bytes,
        next_bytes: offset_bytes,
        end_bytes,
    })
}

impl Iterator for Chunks {
    type Item = Chunk;

    fn next(&mut self) -> Option<Chunk> {
        if self.next_bytes >= self.end_bytes {
            return None;
        }
        let block = self.next_bytes / self.chunk_bytes;
        let block_offset_bytes = self.next_bytes % self.chunk_bytes;
        let length_bytes =
            (self.chunk_bytes - block_offset_bytes).min(self.end_bytes - self.next_bytes);
        let chunk = Chunk {
            file_offset_bytes: self.next_bytes,
            buffer_offset_bytes: self.next_bytes - self.start_bytes,
            length_bytes,
            block,
            block_offset_bytes,
        };
        self.next_bytes += length_bytes;
        Some(chunk)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::limits::UFS_CHUNK_BYTES;

    #[test]
    fn chunks_cover_the_call_inside_aligned_blocks() {
        let c = UFS_CHUNK_BYTES;
        let points = [0, 1, c - 1, c, c + 1, 2 * c, 7 * c + 13];
        for offset in points {
            for length in points.into_iter().chain([40 * c + 9]) {
                let all: Vec<Chunk> = chunks(offset, length, c).unwrap().collect();
                let mut next = 0;
                for chunk in &all {
                    assert_eq!(chunk.buffer_offset_bytes, next);
                    assert_eq!(chunk.file_offset_bytes, offset + next);
                    assert!(chunk.length_bytes >= 1 && chunk.length_bytes <= c);
                    assert_eq!(chunk.block, chunk.file_offset_bytes / c);
                    assert_eq!(chunk.block_offset_bytes, chunk.file_offset_bytes % c);
                    assert!(chunk.block_offset_bytes + chunk.length_bytes <= c);
                    next += chunk.length_bytes;
                }
                assert_eq!(next, length);
                // As few chunks as the block boundaries allow.
                let blocks = if length == 0 {
                    0
                } else {
                    (offset + length - 1) / c - offset / c + 1
                };
                assert_eq!(all.len() as u64, blocks);
            }
        }
    }

    #[test]
    fn the_diagram() {
        let k = 1024;
        let all: Vec<(u64, u64)> = chunks(64 * k, 300 * k, 128 * k)
            .unwrap()
            .map(|c| (c.block, c.length_bytes))
            .collect();
        assert_eq!(all, [(0, 64 * k), (1, 128 * k), (2, 108 * k)]);
    }

    #[test]
    fn an_extent_past_the_largest_offset_is_refused() {
        assert!(chunks(u64::MAX, 2, UFS_CHUNK_BYTES).is_err());
        assert_eq!(chunks(u64::MAX, 0, UFS_CHUNK_BYTES).unwrap().count(), 0);
    }
}
