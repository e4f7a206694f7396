//! Writes the seed corpus of the fuzz targets in `fuzz/seeds/`: one valid input of each kind
//! for every decoder, so fuzzing starts past the magic numbers and the framing.
//! Run: `cargo run -p iopath-fabric --example fuzz_seeds -- fuzz/seeds`

use std::path::PathBuf;

use iopath_fabric::frame::{Header, Kind};
use iopath_fabric::nid::NID_WIRE_BYTES;
use iopath_fabric::{BufferDescriptor, ChecksumKind, Nid};
use prost::Message as _;

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let root = PathBuf::from(
        std::env::args()
            .nth(1)
            .unwrap_or_else(|| "fuzz/seeds".into()),
    );
    for dir in ["frame_header", "nid", "descriptor"] {
        std::fs::create_dir_all(root.join(dir))?;
    }
    let source: Nid = "17@mem0".parse()?;
    let target: Nid = "127.0.0.1:7001@tcp1".parse()?;
    for (name, kind) in [
        ("put", Kind::Put),
        ("ack", Kind::Ack),
        ("get", Kind::Get),
        ("reply", Kind::Reply),
        ("hello", Kind::Hello),
    ] {
        let mut header = Header::new(kind, source, target);
        header.portal = 40;
        header.match_bits = 42;
        if matches!(kind, Kind::Put | Kind::Reply) {
            header.length = 4096;
            header.payload_len = 4096;
        }
        let mut wire = Vec::new();
        header.encode(&mut wire);
        std::fs::write(root.join("frame_header").join(name), &wire)?;
    }
    for (name, nid) in [
        ("mem", source),
        ("tcp", target),
        ("gni", "3180@gni101".parse()?),
    ] {
        let mut wire = [0u8; NID_WIRE_BYTES];
        nid.encode(&mut wire);
        std::fs::write(root.join("nid").join(format!("{name}.bin")), wire)?;
        std::fs::write(
            root.join("nid").join(format!("{name}.txt")),
            nid.to_string(),
        )?;
    }
    let desc = BufferDescriptor {
        owner: source,
        region: 7,
        offset: 4096,
        length: 1 << 20,
        checksum: Some(0xCBF4_3926),
        checksum_kind: ChecksumKind::Crc32c,
    };
    std::fs::write(
        root.join("descriptor").join("crc32c"),
        desc.to_proto().encode_to_vec(),
    )?;
    let slice = BufferDescriptor {
        checksum: None,
        ..desc
    };
    std::fs::write(
        root.join("descriptor").join("slice"),
        slice.to_proto().encode_to_vec(),
    )?;
    Ok(())
}
