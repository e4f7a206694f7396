//! Helpers shared by the client's integration tests: a stack, stripe requests, and a data
//! pattern defined on file offsets so any piece of any file can be checked on its own.
#![allow(dead_code)] // each test file uses a different subset
#![allow(clippy::unwrap_used)] // test helpers: a panic is a failed test

use bytes::Bytes;
use iopath_client::StripeRequest;
use iopath_stack::testing::{TestStack, TestStackConfig};

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;

/// The pattern's period: not a power of two, so a piece landing one stripe (or one packet)
/// off in a file reads back different bytes.
const PERIOD: usize = (MIB + 7) as usize;

/// File contents as a function of the file offset: byte `o` is `base[o % PERIOD]`, with
/// `base` drawn from a seed. Built with copies, so gigabytes are cheap even unoptimised.
pub struct Pattern {
    base: Vec<u8>,
}

impl Pattern {
    pub fn new(seed: u64) -> Pattern {
        let mut state = seed.max(1);
        let mut base = Vec::with_capacity(PERIOD + 8);
        while base.len() < PERIOD {
            // xorshift64*
            state ^= state >> 12;
            state ^= state << 25;
            state ^= state >> 27;
            base.extend_from_slice(&state.wrapping_mul(0x2545_f491_4f6c_dd1d).to_le_bytes());
        }
        base.truncate(PERIOD);
        Pattern { base }
    }

    /// The bytes of file extent `offset .. offset + len`.
    pub fn bytes(&self, offset: u64, len: u64) -> Bytes {
        let mut out = Vec::with_capacity(len as usize);
        let mut at = (offset % PERIOD as u64) as usize;
        while out.len() < len as usize {
            let take = (PERIOD - at).min(len as usize - out.len());
            out.extend_from_slice(&self.base[at..at + take]);
            at = 0;
        }
        Bytes::from(out)
    }
}

/// Compares without printing megabytes: the first differing byte and the lengths.
pub fn check(what: &str, got: &[u8], expected: &[u8]) {
    if got == expected {
        return;
    }
    let first = got
        .iter()
        .zip(expected)
        .position(|(a, b)| a != b)
        .unwrap_or(got.len().min(expected.len()));
    panic!(
        "{what}: got {} bytes, expected {}; first difference at byte {first} (got {:?}, expected {:?})",
        got.len(),
        expected.len(),
        got.get(first),
        expected.get(first)
    );
}

pub fn stripe(size: u64, count: i64, offset: i64) -> StripeRequest {
    StripeRequest {
        stripe_size_bytes: size,
        stripe_count: count,
        stripe_offset: offset,
    }
}

/// The default stack: two servers with two targets each, async journals.
pub async fn stack() -> TestStack {
    TestStack::start(TestStackConfig::default()).await.unwrap()
}

/// A seed for a test, printed so a failure can be reproduced: `IOPATH_SEED` or the clock.
pub fn seed() -> u64 {
    let seed = std::env::var("IOPATH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(1, |d| d.as_nanos() as u64)
        });
    println!("seed: {seed} (rerun with IOPATH_SEED={seed})");
    seed
}
