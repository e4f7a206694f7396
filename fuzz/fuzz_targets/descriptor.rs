//! Any bytes into the buffer descriptor decoder (protobuf, then the typed parse): no panic,
//! and what is accepted is within the limits.
#![no_main]

use iopath_fabric::{BufferDescriptor, Limits};
use libfuzzer_sys::fuzz_target;
use prost::Message as _;

fuzz_target!(|data: &[u8]| {
    let limits = Limits::default();
    if let Ok(wire) = iopath_proto::fabric::BufferDescriptor::decode(data)
        && let Ok(desc) = BufferDescriptor::from_proto(&wire, &limits)
    {
        assert!(desc.length <= limits.bulk_max_bytes);
        assert!(desc.offset.checked_add(desc.length).is_some());
    }
});
