//! The data IOR tasks (`iopath_bench::ior`) and the demo write, and the check of what comes
//! back: every 8-byte word says which task wrote it, in which repetition, and where — its
//! offset in the file with -l (IOR's storeFileOffset), else its offset in the transfer, since
//! without -l a task writes one buffer, filled once, at every offset, as IOR does. So a byte
//! that comes from the wrong task or an earlier repetition, is shifted or flipped, or is lost
//! to a hole, is always caught, and one that lands at the wrong file offset is caught with
//! -l. One XOR per word: filling and checking run at memory speed.

use iopath_client::ChecksumKind;

/// The seed every word starts from.
const SEED: u64 = 0x10ba_7d00_0000_0000;

/// The word that belongs at `file_offset` (a multiple of 8) when `task` wrote it in
/// repetition `repetition`.
pub fn word(task: u32, repetition: u32, file_offset: u64) -> u64 {
    debug_assert!(file_offset.is_multiple_of(8));
    key(task, repetition) ^ (file_offset / 8)
}

/// The bits of every word that name the writer: the word index (below 2^40 for files under
/// 8 TiB) is XORed into the rest.
fn key(task: u32, repetition: u32) -> u64 {
    SEED ^ (u64::from(repetition & 0xff) << 56) ^ (u64::from(task & 0xffff) << 40)
}

/// Bytes filled and checksummed at a time by [`fill_checksummed`]: small enough to still be in
/// the core's cache when the checksum reads them back.
const FILL_PIECE_BYTES: usize = 64 * 1024;

/// Fills `buffer` (a whole number of words) with what `task` writes at `file_offset`.
pub fn fill(buffer: &mut [u8], task: u32, repetition: u32, file_offset: u64) {
    assert!(
        buffer.len().is_multiple_of(8),
        "IOR buffers are whole words"
    );
    let key = key(task, repetition);
    let start = file_offset / 8;
    // SAFETY: every bit pattern is a valid u64; `align_to_mut` hands back only the aligned,
    // whole words in the middle, and the unaligned ends are filled byte-wise below.
    let (head, words, tail) = unsafe { buffer.align_to_mut::<u64>() };
    if !head.is_empty() || !tail.is_empty() {
        // An unaligned buffer (never one from the pool): the portable way.
        for (i, chunk) in buffer.chunks_exact_mut(8).enumerate() {
            chunk.copy_from_slice(&(key ^ (start + i as u64)).to_le_bytes());
        }
        return;
    }
    // Whole aligned words: a loop the compiler turns into vector stores.
    for (i, word) in words.iter_mut().enumerate() {
        *word = (key ^ (start + i as u64)).to_le();
    }
}

/// [`fill`], and the `kind` checksum of what was written, taken piece by piece while each
/// piece is still in cache — a pass over hot memory instead of a later one over cold.
pub fn fill_checksummed(
    buffer: &mut [u8],
    task: u32,
    repetition: u32,
    file_offset: u64,
    kind: ChecksumKind,
) -> u32 {
    let mut crc = kind.empty();
    let mut offset = file_offset;
    for piece in buffer.chunks_mut(FILL_PIECE_BYTES) {
        fill(piece, task, repetition, offset);
        crc = kind.append(crc, piece);
        offset += piece.len() as u64;
    }
    crc
}

/// Where data read back first differs from what was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Mismatch {
    /// The file offset of the first wrong word.
    pub file_offset: u64,
    /// What should be there.
    pub expected: u64,
    /// What is there (a short read's last partial word is padded with zeros).
    pub found: u64,
    /// Wrong words in the buffer.
    pub words_wrong: u64,
}

/// Checks that `data`, read at `file_offset`, is what `task` wrote in `repetition`.
pub fn check(data: &[u8], task: u32, repetition: u32, file_offset: u64) -> Result<(), Mismatch> {
    assert!(file_offset.is_multiple_of(8), "IOR offsets are whole words");
    let key = key(task, repetition);
    let start = file_offset / 8;
    let mut first: Option<(usize, u64, u64)> = None;
    let mut wrong = 0u64;
    for (i, chunk) in data.chunks(8).enumerate() {
        let expected = key ^ (start + i as u64);
        let mut bytes = [0u8; 8];
        bytes[..chunk.len()].copy_from_slice(chunk);
        let found = u64::from_le_bytes(bytes);
        if chunk.len() != 8 || found != expected {
            wrong += 1;
            first.get_or_insert((i, expected, found));
        }
    }
    match first {
        None => Ok(()),
        Some((i, expected, found)) => Err(Mismatch {
            file_offset: file_offset + 8 * i as u64,
            expected,
            found,
            words_wrong: wrong,
        }),
    }
}

impl std::fmt::Display for Mismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "at file offset {}: expected {:#018x}, found {:#018x} ({} wrong words in this transfer)",
            self.file_offset, self.expected, self.found, self.words_wrong
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_fill_is_the_same_aligned_or_not_and_its_checksum_is_the_data_s() {
        let mut backing = vec![0u64; (1 << 17) + 2];
        // SAFETY: u64s are plain bytes; the view covers exactly the vector.
        let bytes = unsafe {
            std::slice::from_raw_parts_mut(backing.as_mut_ptr().cast::<u8>(), backing.len() * 8)
        };
        for len in [8, 4096, 64 * 1024, (1 << 20) + 8] {
            let aligned = &mut bytes[..len];
            fill(aligned, 5, 2, 4096);
            let expected = aligned.to_vec();
            let unaligned = &mut bytes[4..4 + len];
            fill(unaligned, 5, 2, 4096);
            assert_eq!(unaligned, &expected[..], "{len} bytes at an odd address");
            for kind in [ChecksumKind::Crc32, ChecksumKind::Crc32c] {
                let mut buffer = vec![0u8; len];
                let crc = fill_checksummed(&mut buffer, 5, 2, 4096, kind);
                assert_eq!(buffer, expected);
                assert_eq!(crc, kind.compute(&expected), "{kind} of {len} bytes");
            }
        }
    }

    #[test]
    fn what_is_filled_checks() {
        let mut buffer = vec![0u8; 4096];
        fill(&mut buffer, 3, 1, 1 << 20);
        assert_eq!(check(&buffer, 3, 1, 1 << 20), Ok(()));
    }

    #[test]
    fn the_wrong_task_offset_repetition_or_a_flipped_bit_is_caught() {
        let mut buffer = vec![0u8; 4096];
        fill(&mut buffer, 3, 1, 1 << 20);
        assert!(check(&buffer, 4, 1, 1 << 20).is_err());
        assert!(check(&buffer, 3, 2, 1 << 20).is_err());
        assert!(check(&buffer, 3, 1, (1 << 20) + 4096).is_err());
        let mut flipped = buffer.clone();
        flipped[1000] ^= 0x10;
        let m = check(&flipped, 3, 1, 1 << 20).unwrap_err();
        assert_eq!(m.file_offset, (1 << 20) + 1000 / 8 * 8);
        assert_eq!(m.words_wrong, 1);
        // A hole reads as zeros.
        let zeros = vec![0u8; 64];
        assert_eq!(check(&zeros, 0, 0, 0).unwrap_err().words_wrong, 8);
        // A short read is wrong in its missing part.
        assert!(check(&buffer[..4092], 3, 1, 1 << 20).is_err());
    }

    #[test]
    fn one_buffer_is_the_same_as_two_halves() {
        let mut whole = vec![0u8; 1024];
        fill(&mut whole, 7, 0, 8184);
        let mut halves = vec![0u8; 1024];
        let (a, b) = halves.split_at_mut(512);
        fill(a, 7, 0, 8184);
        fill(b, 7, 0, 8184 + 512);
        assert_eq!(whole, halves);
    }
}
