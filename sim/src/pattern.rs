//! The bytes the simulated clients write: every 8-byte word is a function of who wrote it,
//! where, and in which write, so the oracle can say of any word read which write (if any)
//! put it there.

use iopath_fabric::fault::SplitMix64;

/// Bytes per word of the pattern; every write and read is a whole number of words.
pub const WORD_BYTES: u64 = 8;

/// The object a word belongs to: which target holds it and its id there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ObjectKey {
    /// The target's file-system index.
    pub target: u32,
    /// The object's id on the target.
    pub object: u64,
}

impl std::fmt::Display for ObjectKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "object {} on target {}", self.object, self.target)
    }
}

/// The word that write `version` of `key` puts at word index `word` of the object. Never
/// zero, so a hole (zeros) is never mistaken for written data.
pub fn word(key: ObjectKey, version: u32, word: u64) -> u64 {
    let mut mix = SplitMix64(
        (u64::from(key.target) << 56)
            ^ (key.object << 40)
            ^ (u64::from(version) << 24)
            ^ word.wrapping_mul(0x9E37_79B9),
    );
    mix.next() | 1
}

/// The bytes of write `version` of `key` at byte `offset` (a multiple of [`WORD_BYTES`]),
/// `words` words long.
pub fn bytes(key: ObjectKey, version: u32, offset: u64, words: u64) -> Vec<u8> {
    let first = offset / WORD_BYTES;
    (first..first + words)
        .flat_map(|w| word(key, version, w).to_le_bytes())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn words_differ_by_version_object_and_place_and_are_never_zero() {
        let key = ObjectKey {
            target: 1,
            object: 7,
        };
        let other = ObjectKey {
            target: 0,
            object: 7,
        };
        let mut seen = std::collections::BTreeSet::new();
        for version in 0..20 {
            for w in 0..512 {
                for k in [key, other] {
                    let value = word(k, version, w);
                    assert_ne!(value, 0);
                    assert!(seen.insert(value), "{k} v{version} w{w} repeats a word");
                }
            }
        }
        assert_eq!(bytes(key, 3, 16, 2)[..8], word(key, 3, 2).to_le_bytes());
    }
}
