//! How one read or write becomes object RPCs, as a pure core: no sockets, no clocks.
//!
//! [`Layout::extents`] cuts a file extent into stripe-unit pieces. Sending each piece as an
//! RPC of its own would cost one round trip per stripe unit: a 64 MiB write in 64 KiB stripes
//! would be 1024 RPCs. ASCI Red's PFS instead hands each stripe file *packets* of up to 4 MiB
//! ("no more than 4MB per stripe file at a time", §2.4), and Lustre's OSC gathers a file's
//! pages into bulk RPCs of up to 4 MiB the same way. [`plan`] does that: consecutive pieces
//! that land back to back on one object are merged into one [`ObjectIo`] whose bytes are a
//! list of [`Segment`]s of the caller's buffer.
//!
//! ```text
//! file extent (stripe_count 2):  | a0 | b0 | a1 | b1 | a2 |
//! object 0 packet:  a0 a1 a2    (3 segments, one contiguous object range)
//! object 1 packet:  b0 b1       (2 segments)
//! ```
//!
//! Merging has a price: a packet of several segments must be gathered into one buffer
//! before it is sent (and scattered after it is read), a copy of every byte, where a packet
//! of one segment is a slice of the caller's buffer the server pulls from directly. So
//! [`Packing`] bounds the two cases separately: a packet of one segment grows up to 4 MiB
//! (one stripe, or a stripe longer than a packet), a gathered packet only up to 1 MiB — small
//! stripes are gathered to save round trips, stripes of 1 MiB and more go as they are.
//!
//! What names the bytes decides what may be merged. The client library's own buffer can be
//! gathered ([`Packing::DEFAULT`]). A fyod in PFS mode names the compute node's memory by a
//! *sub-descriptor* per packet, so a packet must be one run of that buffer and is never
//! gathered ([`Packing::DESCRIPTOR`]): each stripe unit (or a run of units contiguous on one
//! object, when there is only one object) goes as its own packet, cut at 4 MiB.
//!
//! [`scatter`] puts what a read packet returned back into the caller's buffer, and
//! [`visible_len`] says how much of a read is inside the file once its size is known.

use crate::layout::{Layout, LayoutError};

/// ASCI Red's PFS packet and Lustre's default bulk RPC: the most bytes one RPC moves to or
/// from one object. The operating system broke large requests "into packets of no more than
/// 4MB per stripe file at a time" (§2.4); a stripe unit larger than this goes as several.
pub const PACKET_BYTES_MAX: u64 = 4 << 20;

/// The largest packet gathered from several pieces of the caller's buffer (a copy).
pub const GATHER_BYTES_MAX: u64 = 1 << 20;

/// How large packets may grow.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packing {
    /// A packet that is one run of the caller's buffer.
    pub packet_max_bytes: u64,
    /// A packet gathered from several runs (at most `packet_max_bytes`; 0: never gathered).
    pub gather_max_bytes: u64,
}

impl Packing {
    /// 4 MiB packets, gathered ones up to 1 MiB.
    pub const DEFAULT: Packing = Packing {
        packet_max_bytes: PACKET_BYTES_MAX,
        gather_max_bytes: GATHER_BYTES_MAX,
    };

    /// 4 MiB packets, each one run of the caller's buffer: what a sub-descriptor can name.
    pub const DESCRIPTOR: Packing = Packing {
        packet_max_bytes: PACKET_BYTES_MAX,
        gather_max_bytes: 0,
    };

    /// Packets of up to `bytes`, gathered or not.
    pub fn uniform(bytes: u64) -> Packing {
        Packing {
            packet_max_bytes: bytes,
            gather_max_bytes: bytes,
        }
    }
}

/// A run of the caller's buffer that is contiguous in one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Segment {
    /// Where it starts in the caller's buffer.
    pub buffer_offset_bytes: u64,
    /// How long it is.
    pub length_bytes: u64,
}

/// One RPC: a contiguous byte range of one object, gathered from (or scattered to) the
/// caller's buffer by its segments, in object order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ObjectIo {
    /// Which object of the layout.
    pub object_index: u32,
    /// Where in the object the range starts.
    pub object_offset_bytes: u64,
    /// How long the range is: the sum of the segments' lengths.
    pub length_bytes: u64,
    /// The caller's bytes, in object order.
    pub segments: Vec<Segment>,
}

/// The RPCs for the file extent `offset_bytes .. offset_bytes + length_bytes`: for each object
/// its pieces in object order, merged while they are back to back in the object and the
/// packet stays within `packing`'s bounds. Ordered by object, then by object offset. An empty
/// extent has none.
#[tracing::instrument(target = "walkthrough", level = "trace", name = "plan", skip_all)]
pub fn plan(
    layout: &Layout,
    offset_bytes: u64,
    length_bytes: u64,
    packing: Packing,
) -> Result<Vec<ObjectIo>, LayoutError> {
    let packet_max_bytes = packing.packet_max_bytes;
    let gather_max_bytes = packing.gather_max_bytes.min(packet_max_bytes);
    assert!(packet_max_bytes > 0, "packets hold at least one byte");
    // How long `io` may grow with a piece starting at `buffer_offset`: a packet stays one
    // segment up to the packet limit; one with (or about to get) a second is gathered.
    let limit = |io: &ObjectIo, buffer_offset: u64| match io.segments.as_slice() {
        [] => packet_max_bytes,
        [only] if only.buffer_offset_bytes + only.length_bytes == buffer_offset => packet_max_bytes,
        _ => gather_max_bytes,
    };
    let count = layout.stripe_count() as usize;
    // One packet being filled per object; finished packets per object, in object order.
    let mut open: Vec<Option<ObjectIo>> = vec![None; count];
    let mut done: Vec<Vec<ObjectIo>> = vec![Vec::new(); count];
    for extent in layout.extents(offset_bytes, length_bytes)? {
        let index = extent.object_index as usize;
        // A piece longer than a packet (stripes above 4 MiB) is cut into packet-sized parts.
        let mut taken = 0;
        while taken < extent.length_bytes {
            let object_offset = extent.object_offset_bytes + taken;
            let buffer_offset = extent.buffer_offset_bytes + taken;
            let left = extent.length_bytes - taken;
            let fits = open[index].as_ref().is_some_and(|io| {
                io.object_offset_bytes + io.length_bytes == object_offset
                    && io.length_bytes < limit(io, buffer_offset)
            });
            if !fits && let Some(full) = open[index].take() {
                done[index].push(full);
            }
            let io = open[index].get_or_insert_with(|| ObjectIo {
                object_index: extent.object_index,
                object_offset_bytes: object_offset,
                length_bytes: 0,
                segments: Vec::new(),
            });
            let length = left.min(limit(io, buffer_offset) - io.length_bytes);
            match io.segments.last_mut() {
                // Back to back in the buffer too (one stripe, or one long piece): one segment.
                Some(last) if last.buffer_offset_bytes + last.length_bytes == buffer_offset => {
                    last.length_bytes += length;
                }
                _ => io.segments.push(Segment {
                    buffer_offset_bytes: buffer_offset,
                    length_bytes: length,
                }),
            }
            io.length_bytes += length;
            taken += length;
        }
    }
    for (index, io) in open.into_iter().enumerate() {
        if let Some(io) = io {
            done[index].push(io);
        }
    }
    Ok(done.into_iter().flatten().collect())
}

impl ObjectIo {
    /// The packet's one run of the caller's buffer, if it is one (always, with
    /// [`Packing::DESCRIPTOR`]).
    pub fn single_segment(&self) -> Option<Segment> {
        match self.segments.as_slice() {
            [only] => Some(*only),
            _ => None,
        }
    }
}

/// Copies the bytes a read packet returned (`returned`, possibly fewer than the packet asked
/// for: the object ends early) into `buffer` by the packet's segments. Bytes the object did
/// not have are left as they are (zero in a fresh buffer: holes read as zeros). Returns
/// whether the packet came back short.
pub fn scatter(io: &ObjectIo, returned: &[u8], buffer: &mut [u8]) -> bool {
    assert!(
        returned.len() as u64 <= io.length_bytes,
        "a read returns at most what it asked for"
    );
    let mut from = 0usize;
    for segment in &io.segments {
        if from >= returned.len() {
            break;
        }
        let take = (segment.length_bytes as usize).min(returned.len() - from);
        let at = segment.buffer_offset_bytes as usize;
        buffer[at..at + take].copy_from_slice(&returned[from..from + take]);
        from += take;
    }
    (returned.len() as u64) < io.length_bytes
}

/// How many bytes of a read of `length_bytes` at `offset_bytes` lie inside a file of
/// `file_size_bytes`: the read is short at the end of the file, empty past it.
pub fn visible_len(offset_bytes: u64, length_bytes: u64, file_size_bytes: u64) -> u64 {
    file_size_bytes
        .saturating_sub(offset_bytes)
        .min(length_bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::layout::ObjectRef;

    const KIB: u64 = 1024;
    const MIB: u64 = 1024 * KIB;

    fn layout(stripe: u64, count: u32) -> Layout {
        let objects = (0..count)
            .map(|i| ObjectRef {
                target: i,
                object_id: 1,
            })
            .collect();
        Layout::new(stripe, objects).expect("valid layout")
    }

    fn seg(buffer_offset_bytes: u64, length_bytes: u64) -> Segment {
        Segment {
            buffer_offset_bytes,
            length_bytes,
        }
    }

    #[test]
    fn one_stripe_merges_into_packets() {
        let l = layout(64 * KIB, 1);
        let ios = plan(&l, 0, 300 * KIB, Packing::uniform(128 * KIB)).expect("plan");
        let ranges: Vec<_> = ios
            .iter()
            .map(|io| (io.object_offset_bytes, io.length_bytes, io.segments.clone()))
            .collect();
        assert_eq!(
            ranges,
            vec![
                (0, 128 * KIB, vec![seg(0, 128 * KIB)]),
                (128 * KIB, 128 * KIB, vec![seg(128 * KIB, 128 * KIB)]),
                (256 * KIB, 44 * KIB, vec![seg(256 * KIB, 44 * KIB)]),
            ]
        );
    }

    #[test]
    fn two_stripes_gather_alternate_units() {
        let l = layout(64 * KIB, 2);
        // Starts 10 KiB into unit 0, ends 6 KiB into unit 4.
        let ios = plan(&l, 10 * KIB, 256 * KIB, Packing::DEFAULT).expect("plan");
        assert_eq!(ios.len(), 2);
        assert_eq!(ios[0].object_index, 0);
        assert_eq!(ios[0].object_offset_bytes, 10 * KIB);
        assert_eq!(
            ios[0].segments,
            vec![
                seg(0, 54 * KIB),
                seg(118 * KIB, 64 * KIB),
                seg(246 * KIB, 10 * KIB)
            ]
        );
        assert_eq!(ios[0].length_bytes, 128 * KIB);
        assert_eq!(ios[1].object_index, 1);
        assert_eq!(ios[1].object_offset_bytes, 0);
        assert_eq!(
            ios[1].segments,
            vec![seg(54 * KIB, 64 * KIB), seg(182 * KIB, 64 * KIB)]
        );
    }

    #[test]
    fn megabyte_stripes_go_unpacked_and_small_ones_are_gathered_to_a_megabyte() {
        // 1 MiB stripes over 4 objects: every piece its own packet, one segment, no copy.
        let ios = plan(&layout(1 << 20, 4), 0, 16 << 20, Packing::DEFAULT).expect("plan");
        assert_eq!(ios.len(), 16);
        assert!(ios.iter().all(|io| io.segments.len() == 1));
        // 64 KiB stripes over 2 objects: gathered sixteen at a time into 1 MiB packets.
        let ios = plan(&layout(64 * KIB, 2), 0, 4 << 20, Packing::DEFAULT).expect("plan");
        assert_eq!(ios.len(), 4);
        assert!(
            ios.iter()
                .all(|io| io.segments.len() == 16 && io.length_bytes == 1 << 20)
        );
        // One object: contiguous in the buffer too, so 4 MiB packets of one segment.
        let ios = plan(&layout(64 * KIB, 1), 0, 8 << 20, Packing::DEFAULT).expect("plan");
        assert_eq!(ios.len(), 2);
        assert!(
            ios.iter()
                .all(|io| io.segments.len() == 1 && io.length_bytes == 4 << 20)
        );
    }

    #[test]
    fn stripes_above_a_packet_are_cut() {
        let l = layout(8 << 20, 1);
        let ios = plan(&l, 1, 9 << 20, Packing::DEFAULT).expect("plan");
        let lengths: Vec<_> = ios.iter().map(|io| io.length_bytes).collect();
        assert_eq!(lengths, vec![4 << 20, 4 << 20, 1 << 20]);
        assert_eq!(ios[1].object_offset_bytes, 1 + (4 << 20));
    }

    #[test]
    fn empty_extent_has_no_packets() {
        assert!(
            plan(&layout(64 * KIB, 3), 77, 0, Packing::uniform(4096))
                .expect("plan")
                .is_empty()
        );
    }

    /// Every byte of every extent is covered exactly once, at the object offset the layout
    /// puts it, and no packet exceeds its maximum — checked byte by byte on small cases.
    #[test]
    fn plans_cover_each_byte_once_where_the_layout_puts_it() {
        for count in 1..=4u32 {
            for stripe_units in [1u64, 2, 3] {
                let l = layout(stripe_units * 64 * KIB, count);
                let width = l.stripe_width_bytes();
                for (offset, length) in [
                    (0, 1),
                    (0, width),
                    (1, width * 3 - 2),
                    (width - 1, 2),
                    (12345, 3 * width + 777),
                ] {
                    for packing in [
                        Packing::uniform(64 * KIB),
                        Packing::uniform(100 * KIB),
                        Packing {
                            packet_max_bytes: 300 * KIB,
                            gather_max_bytes: 130 * KIB,
                        },
                        Packing::DEFAULT,
                    ] {
                        let ios = plan(&l, offset, length, packing).expect("plan");
                        let mut seen = vec![false; length as usize];
                        for io in &ios {
                            assert!(io.length_bytes <= packing.packet_max_bytes);
                            assert!(io.length_bytes > 0);
                            if io.segments.len() > 1 {
                                assert!(io.length_bytes <= packing.gather_max_bytes);
                            }
                            let mut object_offset = io.object_offset_bytes;
                            let mut sum = 0;
                            for s in &io.segments {
                                for b in 0..s.length_bytes {
                                    let at = s.buffer_offset_bytes + b;
                                    assert!(!seen[at as usize], "byte {at} twice");
                                    seen[at as usize] = true;
                                    let located = l.locate(offset + at);
                                    assert_eq!(located, (io.object_index, object_offset));
                                    object_offset += 1;
                                }
                                sum += s.length_bytes;
                            }
                            assert_eq!(sum, io.length_bytes);
                        }
                        assert!(seen.iter().all(|&s| s), "every byte covered");
                    }
                }
            }
        }
    }

    #[test]
    fn scatter_fills_segments_and_reports_short_packets() {
        let io = ObjectIo {
            object_index: 0,
            object_offset_bytes: 0,
            length_bytes: 6,
            segments: vec![seg(0, 2), seg(4, 2), seg(8, 2)],
        };
        let mut buffer = [0u8; 10];
        assert!(!scatter(&io, b"abcdef", &mut buffer));
        assert_eq!(&buffer, b"ab\0\0cd\0\0ef");
        let mut buffer = [0u8; 10];
        assert!(scatter(&io, b"abc", &mut buffer));
        assert_eq!(&buffer, b"ab\0\0c\0\0\0\0\0");
        let mut buffer = [7u8; 10];
        assert!(scatter(&io, b"", &mut buffer));
        assert_eq!(buffer, [7u8; 10]);
    }

    #[test]
    fn visible_len_is_short_at_eof_and_empty_past_it() {
        assert_eq!(visible_len(0, 10, 100), 10);
        assert_eq!(visible_len(95, 10, 100), 5);
        assert_eq!(visible_len(100, 10, 100), 0);
        assert_eq!(visible_len(200, 10, 100), 0);
        assert_eq!(visible_len(0, 0, 0), 0);
    }

    #[test]
    fn descriptor_packets_are_single_runs_of_the_buffer() {
        // Small stripes over two objects: the default gathers alternate units; a
        // sub-descriptor cannot, so every packet is one stripe unit's run.
        let l = layout(64 * KIB, 2);
        let ios = plan(&l, 10 * KIB, 256 * KIB, Packing::DESCRIPTOR).expect("plan");
        assert!(ios.iter().all(|io| io.single_segment().is_some()));
        let mut runs: Vec<Segment> = ios.iter().filter_map(ObjectIo::single_segment).collect();
        runs.sort_by_key(|r| r.buffer_offset_bytes);
        assert_eq!(
            runs,
            vec![
                seg(0, 54 * KIB),
                seg(54 * KIB, 64 * KIB),
                seg(118 * KIB, 64 * KIB),
                seg(182 * KIB, 64 * KIB),
                seg(246 * KIB, 10 * KIB),
            ],
            "together they name every byte once"
        );
        // One object: units are contiguous on it and in the buffer, so they go in 4 MiB runs.
        let l = layout(MIB, 1);
        let ios = plan(&l, 0, 9 * MIB, Packing::DESCRIPTOR).expect("plan");
        let lengths: Vec<u64> = ios.iter().map(|io| io.length_bytes).collect();
        assert_eq!(lengths, [4 * MIB, 4 * MIB, MIB]);
        assert!(ios.iter().all(|io| io.single_segment().is_some()));
    }
}
