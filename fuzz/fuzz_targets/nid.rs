//! Any bytes into both NID decoders (wire form and text): no panic, round trips.
#![no_main]

use iopath_fabric::Nid;
use iopath_fabric::nid::NID_WIRE_BYTES;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(wire) = <&[u8; NID_WIRE_BYTES]>::try_from(data)
        && let Ok(nid) = Nid::decode(wire)
    {
        let mut again = [0u8; NID_WIRE_BYTES];
        nid.encode(&mut again);
        assert_eq!(&again, wire);
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(nid) = text.parse::<Nid>()
    {
        assert_eq!(nid.to_string().parse::<Nid>().ok(), Some(nid));
    }
});
