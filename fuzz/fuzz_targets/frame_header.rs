//! Any bytes into the frame header decoder: no panic; what decodes re-encodes to itself and
//! respects the payload limit.
#![no_main]

use iopath_fabric::frame::{HEADER_BYTES, Header};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(header) = Header::decode(data, 1 << 20) {
        let mut again = Vec::new();
        header.encode(&mut again);
        assert_eq!(&again[..], &data[..HEADER_BYTES]);
        assert!(header.payload_len <= 1 << 20);
    }
});
