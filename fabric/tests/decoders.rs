//! Bounded randomized tests over every decoder, the same inputs the fuzz targets in `fuzz/`
//! explore without bound: no input may panic, and what decodes must re-encode to itself.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use iopath_fabric::fault::SplitMix64;
use iopath_fabric::frame::{HEADER_BYTES, Header, Kind};
use iopath_fabric::nid::NID_WIRE_BYTES;
use iopath_fabric::{BufferDescriptor, Limits, Nid};
use prost::Message as _;

const ROUNDS: usize = 200_000;

fn seed() -> u64 {
    let seed = std::env::var("IOPATH_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x1D0F_5EED);
    println!("seed {seed} (set IOPATH_SEED to repeat)");
    seed
}

/// A valid header with random fields, so mutations start near the valid space.
fn valid_header(rng: &mut SplitMix64) -> Vec<u8> {
    let mut header = Header::new(
        Kind::Put,
        Nid::mem(rng.next() as u32, 0),
        "127.0.0.1:7001@tcp1".parse().unwrap(),
    );
    header.match_bits = rng.next();
    header.length = (rng.next() % 4096) as u32;
    header.payload_len = header.length;
    let mut wire = Vec::new();
    header.encode(&mut wire);
    wire
}

#[test]
fn header_decoder_never_panics_and_round_trips() {
    let mut rng = SplitMix64(seed());
    let mut decoded = 0;
    for round in 0..ROUNDS {
        let mut bytes = valid_header(&mut rng);
        match round % 3 {
            0 => bytes.iter_mut().for_each(|b| *b = rng.next() as u8),
            1 => {
                for _ in 0..1 + rng.next() % 4 {
                    let i = (rng.next() % HEADER_BYTES as u64) as usize;
                    bytes[i] ^= 1 << (rng.next() % 8);
                }
            }
            _ => bytes.truncate((rng.next() % (HEADER_BYTES as u64 + 1)) as usize),
        }
        if let Ok(header) = Header::decode(&bytes, 1 << 20) {
            let mut again = Vec::new();
            header.encode(&mut again);
            assert_eq!(again, bytes[..HEADER_BYTES], "round {round}");
            assert!(header.payload_len <= 1 << 20);
            decoded += 1;
        }
    }
    assert!(
        decoded > 0,
        "mutations near valid headers sometimes stay valid"
    );
}

#[test]
fn nid_decoders_never_panic_and_round_trip() {
    let mut rng = SplitMix64(seed());
    for _ in 0..ROUNDS {
        let mut wire = [0u8; NID_WIRE_BYTES];
        Nid::mem(rng.next() as u32, rng.next() as u16).encode(&mut wire);
        let flips = rng.next() % 3;
        for _ in 0..flips {
            wire[(rng.next() % NID_WIRE_BYTES as u64) as usize] ^= 1 << (rng.next() % 8);
        }
        if let Ok(nid) = Nid::decode(&wire) {
            let mut again = [0u8; NID_WIRE_BYTES];
            nid.encode(&mut again);
            assert_eq!(again, wire);
        }
        let alphabet = b"0123456789.:@memtcp[]x-";
        let len = rng.next() % 24;
        let text: String = (0..len)
            .map(|_| alphabet[(rng.next() % alphabet.len() as u64) as usize] as char)
            .collect();
        if let Ok(nid) = text.parse::<Nid>() {
            assert_eq!(nid.to_string().parse::<Nid>().unwrap(), nid, "{text}");
        }
    }
}

#[test]
fn descriptor_decoder_never_panics() {
    let mut rng = SplitMix64(seed());
    let limits = Limits::default();
    let valid = iopath_proto::fabric::BufferDescriptor {
        owner: "17@mem0".into(),
        region: 3,
        offset: 10,
        length: 100,
        checksum: Some(5),
        checksum_kind: 0,
    }
    .encode_to_vec();
    for _ in 0..ROUNDS {
        let mut bytes = valid.clone();
        for _ in 0..1 + rng.next() % 3 {
            let i = (rng.next() % bytes.len() as u64) as usize;
            bytes[i] = rng.next() as u8;
        }
        bytes.truncate((rng.next() % (bytes.len() as u64 + 1)) as usize);
        if let Ok(wire) = iopath_proto::fabric::BufferDescriptor::decode(bytes.as_slice())
            && let Ok(desc) = BufferDescriptor::from_proto(&wire, &limits)
        {
            assert!(desc.length <= limits.bulk_max_bytes);
            assert!(desc.offset.checked_add(desc.length).is_some());
        }
    }
}

/// The fuzz targets' seed corpus (fuzz/seeds, written by `examples/fuzz_seeds.rs`) must stay
/// valid input as the formats change, or fuzzing silently starts from garbage again.
#[test]
fn the_fuzz_seed_corpus_still_decodes() {
    let seeds = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../fuzz/seeds");
    let files = |dir: &str| {
        let mut list: Vec<_> = std::fs::read_dir(seeds.join(dir))
            .unwrap()
            .map(|e| e.unwrap().path())
            .collect();
        list.sort();
        assert!(!list.is_empty(), "no seeds in fuzz/seeds/{dir}");
        list
    };
    for path in files("frame_header") {
        Header::decode(&std::fs::read(&path).unwrap(), 1 << 20)
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
    for path in files("nid") {
        let bytes = std::fs::read(&path).unwrap();
        if path.extension().is_some_and(|e| e == "bin") {
            Nid::decode(bytes.as_slice().try_into().unwrap())
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        } else {
            String::from_utf8(bytes)
                .unwrap()
                .parse::<Nid>()
                .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        }
    }
    for path in files("descriptor") {
        let wire = iopath_proto::fabric::BufferDescriptor::decode(
            std::fs::read(&path).unwrap().as_slice(),
        )
        .unwrap();
        BufferDescriptor::from_proto(&wire, &Limits::default())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    }
}
