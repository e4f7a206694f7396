//! The PFS split: one client call cut by the file's stripe layout into storage requests, each
//! naming a **sub-descriptor** of the compute node's own buffer — so each storage server pulls
//! (write) or pushes (read) its part straight from or into the compute node, and the fyod
//! never touches the data (paper §2.4, Figure 1 right).
//!
//! ```text
//! client buffer (desc r42 on 17@torus0, 3 MiB at file offset 512 KiB), stripes 1 MiB × 2
//! |--p0 512K--|------p1 1M------|------p2 1M------|--p3 512K--|
//!   obj0 @512K    obj1 @0           obj0 @1M        obj1 @1M
//! each piece: desc.slice(buffer_offset, length) — no whole checksum, chunks still verified
//! ```
//!
//! The cutting is the one packet planner the client library uses too
//! ([`iopath_layout::plan()`]), with the packing a sub-descriptor allows
//! ([`Packing::DESCRIPTOR`]: each packet one run of the buffer, never gathered), cut at
//! [`PACKET_BYTES_MAX`] as the operating system sent "packets of no more than 4MB per stripe
//! file at a time".

use iopath_fabric::BufferDescriptor;
use iopath_layout::{Layout, ObjectRef, Packing};

use crate::error::{ForwarderError, Result};

pub use iopath_layout::PACKET_BYTES_MAX;

/// One storage request of a PFS call.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Piece {
    /// Which object of the layout (0-based, in stripe order).
    pub object_index: u32,
    /// The object: its target (file-system index) and its id there.
    pub object: ObjectRef,
    /// Where in the object the piece starts.
    pub object_offset_bytes: u64,
    /// Where in the file it starts.
    pub file_offset_bytes: u64,
    /// Where in the client's buffer it starts.
    pub buffer_offset_bytes: u64,
    /// The bytes of the client's buffer it names: a sub-descriptor of the call's.
    pub buffer: BufferDescriptor,
}

/// The storage requests for a call at file offset `offset_bytes` naming `buffer`, in buffer
/// order: one per run of the buffer that is contiguous on one object (a stripe unit, or more
/// when the file has one object), cut at `piece_max_bytes`. Together they name every byte of
/// `buffer` exactly once. An empty buffer has none.
pub fn split(
    layout: &Layout,
    offset_bytes: u64,
    buffer: &BufferDescriptor,
    piece_max_bytes: u64,
) -> Result<Vec<Piece>> {
    let packing = Packing {
        packet_max_bytes: piece_max_bytes,
        ..Packing::DESCRIPTOR
    };
    let mut pieces = Vec::new();
    for io in iopath_layout::plan(layout, offset_bytes, buffer.length, packing)? {
        let run = io
            .single_segment()
            .expect("descriptor packing never gathers: every packet is one run");
        let sub = buffer
            .slice(run.buffer_offset_bytes, run.length_bytes)
            .ok_or_else(|| {
                ForwarderError::invalid("buffer", "a piece falls outside the call's buffer")
            })?;
        pieces.push(Piece {
            object_index: io.object_index,
            object: layout.objects()[io.object_index as usize],
            object_offset_bytes: io.object_offset_bytes,
            file_offset_bytes: offset_bytes + run.buffer_offset_bytes,
            buffer_offset_bytes: run.buffer_offset_bytes,
            buffer: sub,
        });
    }
    // The planner orders by object; the call's checksum combines in buffer order.
    pieces.sort_by_key(|p| p.buffer_offset_bytes);
    Ok(pieces)
}

#[cfg(test)]
mod tests {
    use iopath_fabric::{ChecksumKind, Nid};

    use super::*;

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;

    fn map(stripe_size_bytes: u64, targets: &[u32]) -> Layout {
        let objects = targets
            .iter()
            .map(|&target| ObjectRef {
                target,
                object_id: 100 + u64::from(target),
            })
            .collect();
        Layout::new(stripe_size_bytes, objects).unwrap()
    }

    fn desc(region_offset: u64, length: u64) -> BufferDescriptor {
        BufferDescriptor {
            owner: Nid::mem(17, 0),
            region: 42,
            offset: region_offset,
            length,
            checksum: Some(0xdead_beef),
            checksum_kind: ChecksumKind::Crc32,
        }
    }

    /// Everything a split must satisfy, checked byte-range by byte-range against the layout's
    /// own definition of where each file byte lives.
    fn check(map: &Layout, offset: u64, buffer: &BufferDescriptor, piece_max: u64) {
        let pieces = split(map, offset, buffer, piece_max).unwrap();
        let stripe = map.stripe_size_bytes();
        let count = u64::from(map.stripe_count());
        let mut expected_buffer_offset = 0;
        for piece in &pieces {
            // In buffer order, contiguous, covering everything once.
            assert_eq!(piece.buffer_offset_bytes, expected_buffer_offset);
            assert_eq!(piece.file_offset_bytes, offset + piece.buffer_offset_bytes);
            let length = piece.buffer.length;
            assert!(length > 0 && length <= piece_max);
            // A sub-descriptor of the caller's: same owner and region, inside it.
            assert_eq!(piece.buffer.owner, buffer.owner);
            assert_eq!(piece.buffer.region, buffer.region);
            assert_eq!(
                piece.buffer.offset,
                buffer.offset + piece.buffer_offset_bytes
            );
            assert_eq!(piece.buffer.checksum_kind, buffer.checksum_kind);
            let whole = pieces.len() == 1;
            assert_eq!(
                piece.buffer.checksum,
                if whole { buffer.checksum } else { None },
                "only the whole keeps the owner's checksum"
            );
            // One run on one object: its first and last bytes are where the round-robin rule
            // puts them, on the object it names. With several objects that is one stripe
            // unit; with one, consecutive units may share a piece.
            let unit = piece.file_offset_bytes / stripe;
            let last_unit = (piece.file_offset_bytes + length - 1) / stripe;
            if count > 1 {
                assert_eq!(last_unit, unit, "a piece stays inside one stripe unit");
            }
            assert_eq!(u64::from(piece.object_index), unit % count);
            assert_eq!(piece.object, map.objects()[piece.object_index as usize]);
            let row = unit / count;
            assert_eq!(
                piece.object_offset_bytes,
                row * stripe + piece.file_offset_bytes % stripe
            );
            assert_eq!(
                map.locate(piece.file_offset_bytes + length - 1),
                (piece.object_index, piece.object_offset_bytes + length - 1),
                "the last byte too is where the layout puts it"
            );
            expected_buffer_offset += length;
        }
        assert_eq!(expected_buffer_offset, buffer.length, "every byte once");
    }

    #[test]
    fn splits_cover_every_byte_once_on_the_right_object() {
        // Every stripe count 1..=4, stripe sizes 64 KiB and 128 KiB, offsets and lengths on and
        // off stripe boundaries, with and without a piece cap below the stripe size.
        let stripe_sizes = [64 * KIB, 128 * KIB];
        let points = |s: u64| [0, 1, s - 1, s, s + 1, 2 * s, 3 * s - 7, 5 * s + 3];
        for count in 1..=4u32 {
            let targets: Vec<u32> = (0..count).map(|t| (t + 2) % 4).collect();
            for &stripe in &stripe_sizes {
                let map = map(stripe, &targets);
                for offset in points(stripe) {
                    for length in points(stripe).into_iter().chain([9 * stripe + 5]) {
                        for piece_max in [stripe, stripe / 2, 4 * MIB, 1000] {
                            check(&map, offset, &desc(4096, length), piece_max);
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_buffer_inside_one_stripe_is_one_piece_with_the_owners_checksum() {
        let map = map(MIB, &[0, 1]);
        let pieces = split(&map, 10, &desc(0, 1000), MIB).unwrap();
        assert_eq!(pieces.len(), 1);
        assert_eq!(pieces[0].buffer, desc(0, 1000));
        assert_eq!(pieces[0].object_offset_bytes, 10);
        assert!(split(&map, 0, &desc(0, 0), MIB).unwrap().is_empty());
    }

    #[test]
    fn the_papers_example_four_pieces_over_two_objects() {
        let map = map(MIB, &[0, 1]);
        let pieces = split(&map, 512 * KIB, &desc(0, 3 * MIB), MIB).unwrap();
        let summary: Vec<(u32, u64, u64)> = pieces
            .iter()
            .map(|p| (p.object_index, p.object_offset_bytes, p.buffer.length))
            .collect();
        assert_eq!(
            summary,
            [
                (0, 512 * KIB, 512 * KIB),
                (1, 0, MIB),
                (0, MIB, MIB),
                (1, MIB, 512 * KIB)
            ]
        );
    }

    #[test]
    fn a_stripe_above_the_piece_cap_is_cut_into_packets() {
        let map = map(16 * MIB, &[3]);
        let pieces = split(&map, 0, &desc(0, 10 * MIB), 4 * MIB).unwrap();
        let lengths: Vec<u64> = pieces.iter().map(|p| p.buffer.length).collect();
        assert_eq!(lengths, [4 * MIB, 4 * MIB, 2 * MIB]);
        assert!(pieces.iter().all(|p| p.object.target == 3));
    }

    #[test]
    fn an_extent_past_the_largest_offset_is_refused() {
        let map = map(MIB, &[0]);
        assert!(matches!(
            split(&map, u64::MAX - 10, &desc(0, 100), MIB),
            Err(ForwarderError::Layout(_))
        ));
    }

    #[test]
    fn one_object_goes_in_packets_of_at_most_the_cap() {
        // A file on one target: its units are back to back on the object and in the buffer,
        // so they travel in runs of up to the cap, not one request per stripe.
        let map = map(MIB, &[2]);
        let pieces = split(&map, 0, &desc(0, 9 * MIB), PACKET_BYTES_MAX).unwrap();
        let lengths: Vec<u64> = pieces.iter().map(|p| p.buffer.length).collect();
        assert_eq!(lengths, [4 * MIB, 4 * MIB, MIB]);
    }
}
