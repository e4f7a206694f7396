//! The stripe layout core: table-driven cases worked out by hand, then a bounded randomized
//! check against a naive model that stripes a file one byte at a time.
//!
//! The randomized check prints its seed; set `IOPATH_LAYOUT_SEED` to replay one.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use iopath_layout::{
    Layout, LayoutError, ObjectExtent, ObjectRef, STRIPE_COUNT_MAX, STRIPE_SIZE_DEFAULT_BYTES,
    STRIPE_SIZE_MAX_BYTES, StripeRequest, StripeSettings,
};

const KIB: u64 = 1024;
const MIB: u64 = 1024 * KIB;

/// A layout over `count` objects on targets `start, start+1, ..` (mod `targets`).
fn layout(stripe_size_bytes: u64, count: u32, start: u32, targets: u32) -> Layout {
    let objects = (0..count)
        .map(|i| ObjectRef {
            target: (start + i) % targets,
            object_id: 100 + u64::from(i),
        })
        .collect();
    Layout::new(stripe_size_bytes, objects).unwrap()
}

/// (object index, object offset, length, file offset, buffer offset)
type Piece = (u32, u64, u64, u64, u64);

fn pieces(layout: &Layout, offset: u64, length: u64) -> Vec<Piece> {
    layout
        .extents(offset, length)
        .unwrap()
        .map(|e: ObjectExtent| {
            (
                e.object_index,
                e.object_offset_bytes,
                e.length_bytes,
                e.file_offset_bytes,
                e.buffer_offset_bytes,
            )
        })
        .collect()
}

#[test]
fn extents_worked_by_hand() {
    struct Case {
        what: &'static str,
        stripe_size_bytes: u64,
        count: u32,
        offset: u64,
        length: u64,
        expected: Vec<Piece>,
    }
    let cases = vec![
        Case {
            what: "empty extent",
            stripe_size_bytes: MIB,
            count: 4,
            offset: 5 * MIB + 3,
            length: 0,
            expected: vec![],
        },
        Case {
            what: "count 1: one piece per stripe unit, contiguous in the object",
            stripe_size_bytes: MIB,
            count: 1,
            offset: 0,
            length: 3 * MIB,
            expected: vec![
                (0, 0, MIB, 0, 0),
                (0, MIB, MIB, MIB, MIB),
                (0, 2 * MIB, MIB, 2 * MIB, 2 * MIB),
            ],
        },
        Case {
            what: "count 1, unaligned inside one unit",
            stripe_size_bytes: 64 * KIB,
            count: 1,
            offset: 70_000,
            length: 100,
            expected: vec![(0, 70_000, 100, 70_000, 0)],
        },
        Case {
            what: "count 2, 64 KiB, unaligned across three units",
            stripe_size_bytes: 64 * KIB,
            count: 2,
            offset: 100,
            length: 200_000,
            expected: vec![
                (0, 100, 65_436, 100, 0),
                (1, 0, 65_536, 65_536, 65_436),
                (0, 65_536, 65_536, 131_072, 130_972),
                (1, 65_536, 3_492, 196_608, 196_508),
            ],
        },
        Case {
            what: "count 4, 1 MiB: one full row from a row boundary (the PFS optimal request)",
            stripe_size_bytes: MIB,
            count: 4,
            offset: 4 * MIB,
            length: 4 * MIB,
            expected: vec![
                (0, MIB, MIB, 4 * MIB, 0),
                (1, MIB, MIB, 5 * MIB, MIB),
                (2, MIB, MIB, 6 * MIB, 2 * MIB),
                (3, MIB, MIB, 7 * MIB, 3 * MIB),
            ],
        },
        Case {
            what: "count 4, 1 MiB: straddling a row boundary mid-unit",
            stripe_size_bytes: MIB,
            count: 4,
            offset: 3 * MIB + MIB / 2,
            length: 2 * MIB,
            expected: vec![
                (3, MIB / 2, MIB / 2, 3 * MIB + MIB / 2, 0),
                (0, MIB, MIB, 4 * MIB, MIB / 2),
                (1, MIB, MIB / 2, 5 * MIB, 3 * MIB / 2),
            ],
        },
        Case {
            what: "count 3, 4 MiB, one byte at the last byte of object 2's first unit",
            stripe_size_bytes: 4 * MIB,
            count: 3,
            offset: 12 * MIB - 1,
            length: 1,
            expected: vec![(2, 4 * MIB - 1, 1, 12 * MIB - 1, 0)],
        },
        Case {
            what: "count 3, 4 MiB, second row",
            stripe_size_bytes: 4 * MIB,
            count: 3,
            offset: 13 * MIB,
            length: 4 * MIB,
            expected: vec![
                (0, 5 * MIB, 3 * MIB, 13 * MIB, 0),
                (1, 4 * MIB, MIB, 16 * MIB, 3 * MIB),
            ],
        },
        Case {
            what: "near the top of the offset space",
            stripe_size_bytes: MIB,
            count: 2,
            offset: u64::MAX - 10,
            length: 10,
            expected: vec![(
                1,
                (u64::MAX / MIB / 2) * MIB + (MIB - 11),
                10,
                u64::MAX - 10,
                0,
            )],
        },
    ];
    for case in cases {
        let l = layout(case.stripe_size_bytes, case.count, 0, case.count);
        assert_eq!(
            pieces(&l, case.offset, case.length),
            case.expected,
            "{}",
            case.what
        );
    }
}

#[test]
fn extents_that_overflow_are_refused() {
    let l = layout(MIB, 2, 0, 2);
    assert_eq!(
        l.extents(u64::MAX - 10, 11).unwrap_err(),
        LayoutError::ExtentOverflow {
            offset_bytes: u64::MAX - 10,
            length_bytes: 11
        }
    );
}

#[test]
fn inverse_worked_by_hand() {
    let l = layout(MIB, 4, 2, 4);
    let cases: &[(u32, u64, u64)] = &[
        (0, 0, 0),
        (1, 0, MIB),
        (3, MIB - 1, 4 * MIB - 1),
        (0, MIB, 4 * MIB),
        (2, MIB + 17, 6 * MIB + 17),
        (3, 10 * MIB + 5, 43 * MIB + 5),
    ];
    for &(index, object_offset, file_offset) in cases {
        assert_eq!(l.file_offset(index, object_offset).unwrap(), file_offset);
        assert_eq!(l.locate(file_offset), (index, object_offset));
    }
    assert_eq!(
        l.file_offset(4, 0).unwrap_err(),
        LayoutError::NoSuchObject {
            object_index: 4,
            stripe_count: 4
        }
    );
    assert!(matches!(
        l.file_offset(3, u64::MAX - 1).unwrap_err(),
        LayoutError::ObjectOffsetOverflow { .. }
    ));
}

#[test]
fn glimpsed_size_worked_by_hand() {
    let l = layout(MIB, 4, 0, 4);
    let cases: &[(&str, [u64; 4], u64)] = &[
        ("empty file", [0, 0, 0, 0], 0),
        ("one byte", [1, 0, 0, 0], 1),
        ("first unit full", [MIB, 0, 0, 0], MIB),
        (
            "hole before one byte on the last object",
            [MIB, 0, 0, 1],
            3 * MIB + 1,
        ),
        ("only the last object", [0, 0, 0, 7], 3 * MIB + 7),
        ("one full row", [MIB, MIB, MIB, MIB], 4 * MIB),
        (
            "object 0 into its second row",
            [2 * MIB, MIB, MIB, MIB],
            5 * MIB,
        ),
        (
            "object 0 one byte into row 1, object 3 full row 0",
            [MIB + 1, 0, 0, MIB],
            4 * MIB + 1,
        ),
        (
            "object 1 in row 2, others empty (holes)",
            [0, 2 * MIB + 5, 0, 0],
            9 * MIB + 5,
        ),
    ];
    for (what, sizes, expected) in cases {
        assert_eq!(l.file_size_bytes(sizes).unwrap(), *expected, "{what}");
    }
    assert_eq!(
        l.file_size_bytes(&[1, 2]).unwrap_err(),
        LayoutError::ObjectSizesMismatch {
            sizes_count: 2,
            stripe_count: 4
        }
    );
}

#[test]
fn object_sizes_worked_by_hand() {
    let l = layout(MIB, 3, 0, 3);
    let cases: &[(u64, [u64; 3])] = &[
        (0, [0, 0, 0]),
        (1, [1, 0, 0]),
        (MIB, [MIB, 0, 0]),
        (MIB + 1, [MIB, 1, 0]),
        (3 * MIB, [MIB, MIB, MIB]),
        (3 * MIB + 5, [MIB + 5, MIB, MIB]),
        (8 * MIB + 2, [3 * MIB, 3 * MIB, 2 * MIB + 2]),
    ];
    for (file_size, expected) in cases {
        for index in 0..3 {
            assert_eq!(
                l.object_size_bytes(index, *file_size).unwrap(),
                expected[index as usize],
                "object {index} of a {file_size}-byte file"
            );
        }
        // Glimpsing a densely written file gives its size back.
        assert_eq!(l.file_size_bytes(expected).unwrap(), *file_size);
    }
}

#[test]
fn layouts_are_checked_when_built() {
    let o = |target| ObjectRef {
        target,
        object_id: 1,
    };
    let cases: Vec<(&str, u64, Vec<ObjectRef>, LayoutError)> = vec![
        (
            "zero stripe size",
            0,
            vec![o(0)],
            LayoutError::StripeSizeNotAligned {
                stripe_size_bytes: 0,
            },
        ),
        (
            "stripe size not a multiple of 64 KiB",
            MIB + 4096,
            vec![o(0)],
            LayoutError::StripeSizeNotAligned {
                stripe_size_bytes: MIB + 4096,
            },
        ),
        (
            "stripe size of 4 GiB",
            4 << 30,
            vec![o(0)],
            LayoutError::StripeSizeTooLarge {
                stripe_size_bytes: 4 << 30,
            },
        ),
        (
            "no objects",
            MIB,
            vec![],
            LayoutError::ObjectCountInvalid { objects_count: 0 },
        ),
        (
            "two objects on one target",
            MIB,
            vec![o(3), o(1), o(3)],
            LayoutError::TargetRepeated {
                target: 3,
                first: 0,
                second: 2,
            },
        ),
        (
            "more than the maximum stripe count",
            MIB,
            (0..=STRIPE_COUNT_MAX).map(o).collect(),
            LayoutError::ObjectCountInvalid {
                objects_count: STRIPE_COUNT_MAX as usize + 1,
            },
        ),
    ];
    for (what, size, objects, expected) in cases {
        assert_eq!(Layout::new(size, objects).unwrap_err(), expected, "{what}");
    }
    assert_eq!(
        Layout::new(
            MIB,
            vec![
                o(0),
                ObjectRef {
                    target: 1,
                    object_id: 0
                }
            ]
        )
        .unwrap_err(),
        LayoutError::ObjectIdZero { object_index: 1 },
        "object id 0 names no object"
    );
    let largest = Layout::new(
        STRIPE_SIZE_MAX_BYTES,
        (0..STRIPE_COUNT_MAX).map(o).collect(),
    );
    assert_eq!(largest.unwrap().stripe_count(), STRIPE_COUNT_MAX);

    let l = Layout::from_parts(MIB, 2, 5, vec![o(5), o(6)]).unwrap();
    assert_eq!((l.stripe_count(), l.stripe_offset()), (2, 5));
    assert_eq!(
        l.to_string(),
        "stripe_count: 2 stripe_size: 1048576 pattern: raid0 stripe_offset: 5"
    );
    assert_eq!(
        Layout::from_parts(MIB, 3, 5, vec![o(5), o(6)]).unwrap_err(),
        LayoutError::StripeCountMismatch {
            stripe_count: 3,
            objects_count: 2
        }
    );
    assert_eq!(
        Layout::from_parts(MIB, 2, 6, vec![o(5), o(6)]).unwrap_err(),
        LayoutError::StripeOffsetMismatch {
            stripe_offset: 6,
            first_target: 5
        }
    );
}

#[test]
fn setstripe_values_resolve_or_are_refused_clearly() {
    let req = |stripe_size_bytes, stripe_count, stripe_offset| StripeRequest {
        stripe_size_bytes,
        stripe_count,
        stripe_offset,
    };
    let ok = |stripe_size_bytes, stripe_count, stripe_offset| StripeSettings {
        stripe_size_bytes,
        stripe_count,
        stripe_offset,
    };
    let good: Vec<(StripeRequest, u32, StripeSettings)> = vec![
        (
            StripeRequest::INHERIT,
            4,
            ok(STRIPE_SIZE_DEFAULT_BYTES, 1, None),
        ),
        (StripeRequest::default(), 4, ok(MIB, 1, Some(0))),
        (req(0, -1, -1), 4, ok(MIB, 4, None)),
        (req(0, -1, -1), 1, ok(MIB, 1, None)),
        (req(64 * KIB, 2, 3), 4, ok(64 * KIB, 2, Some(3))),
        (req(4 * MIB, 4, 0), 4, ok(4 * MIB, 4, Some(0))),
        (
            req(STRIPE_SIZE_MAX_BYTES, 1, -1),
            1,
            ok(STRIPE_SIZE_MAX_BYTES, 1, None),
        ),
        (req(0, -1, -1), 3000, ok(MIB, STRIPE_COUNT_MAX, None)),
    ];
    // The file system's targets: `0..count`.
    let targets = |count: u32| (0..count).collect::<Vec<u32>>();
    for (request, count, expected) in good {
        assert_eq!(
            request.resolve(&targets(count)).unwrap(),
            expected,
            "{request:?}"
        );
    }
    let bad: Vec<(StripeRequest, u32, &str)> = vec![
        (
            req(1000, 1, -1),
            4,
            "stripe size 1000 bytes is not a positive multiple of 65536 bytes (64 KiB)",
        ),
        (req(MIB + 1, 1, -1), 4, "not a positive multiple"),
        (req(4 << 30, 1, -1), 4, "exceeds the maximum"),
        (req(u64::MAX, 1, -1), 4, "not a positive multiple"),
        (req(0, -2, -1), 4, "stripe count -2 is invalid"),
        (req(0, i64::MIN, -1), 4, "is invalid"),
        (
            req(0, i64::MAX, -1),
            4,
            "exceeds the widest layout of 2000 stripes",
        ),
        (
            req(0, 2001, -1),
            3000,
            "exceeds the widest layout of 2000 stripes",
        ),
        (
            req(0, 1, 4),
            4,
            "starting target index 4 is out of range: it is not one of the 4 configured targets",
        ),
        (req(0, 1, -2), 4, "starting target index -2 is invalid"),
        (req(0, 0, 0), 0, "there are no targets"),
    ];
    for (request, count, message) in bad {
        let error = request.resolve(&targets(count)).unwrap_err().to_string();
        assert!(error.contains(message), "{request:?}: {error}");
    }
    // The targets are the file system's indices, not positions: a server set with targets
    // 1, 3 and 5 resolves an offset of 3 and refuses 2.
    let odd = [1, 3, 5];
    assert_eq!(req(0, 2, 3).resolve(&odd).unwrap().stripe_offset, Some(3));
    assert_eq!(
        req(0, 2, 3).resolve(&odd).unwrap().start_position(&odd),
        Some(1)
    );
    assert!(req(0, 1, 2).resolve(&odd).is_err());
    // check_against: what names targets, against them; inherited fields pass.
    assert!(StripeRequest::INHERIT.check_against(&odd).is_ok());
    assert!(
        req(0, 4, -1).check_against(&odd).is_ok(),
        "a count above the targets is kept, and capped where a file is made"
    );
    assert!(req(0, 0, 5).check_against(&odd).is_ok());
    assert!(req(0, 0, 4).check_against(&odd).is_err());
    // inherit: each zero (or -1 offset) field from the default.
    let default = req(4 * MIB, -1, 3);
    assert_eq!(StripeRequest::INHERIT.inherit(&default), default);
    assert_eq!(req(MIB, 0, -1).inherit(&default), req(MIB, -1, 3));
}

/// A layout's stored form (the metadata service keeps layouts as JSON) is checked when read:
/// a damaged one is an error, never a layout whose parts disagree.
#[test]
fn a_stored_layout_is_checked_when_read() {
    let l = layout(MIB, 3, 1, 4);
    let text = serde_json::to_string(&l).unwrap();
    assert_eq!(
        text,
        r#"{"stripe_size_bytes":1048576,"objects":[{"target":1,"object_id":100},{"target":2,"object_id":101},{"target":3,"object_id":102}]}"#
    );
    assert_eq!(serde_json::from_str::<Layout>(&text).unwrap(), l);
    let repeated = text.replace(r#""target":2"#, r#""target":1"#);
    assert!(serde_json::from_str::<Layout>(&repeated).is_err());
    let unaligned = text.replace("1048576", "1000");
    assert!(serde_json::from_str::<Layout>(&unaligned).is_err());
}

// ---- the randomized check against a naive model ----

/// splitmix64: a small, seedable generator, so a failure replays from its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// For each file byte, (object, object offset), packed as `object << 40 | offset`.
struct Placement(Vec<u64>);

impl Placement {
    fn at(&self, file_byte: u64) -> (u32, u64) {
        let packed = self.0[file_byte as usize];
        ((packed >> 40) as u32, packed & ((1 << 40) - 1))
    }
}

/// Stripes `file_len` bytes one at a time, the way a stripe file fills: `stripe` bytes to the
/// current object, then on to the next.
fn naive_placement(stripe: u64, count: u32, file_len: u64) -> Placement {
    let mut object = 0u32;
    let mut filled = vec![0u64; count as usize];
    let mut in_unit = 0u64;
    let mut placement = Vec::with_capacity(file_len as usize);
    for _ in 0..file_len {
        placement.push(u64::from(object) << 40 | filled[object as usize]);
        filled[object as usize] += 1;
        in_unit += 1;
        if in_unit == stripe {
            in_unit = 0;
            object = (object + 1) % count;
        }
    }
    Placement(placement)
}

/// Sizes 64 KiB to 4 MiB; counts 1, 2 and "all" of a few target counts.
fn random_layout(rng: &mut Rng) -> (Layout, u32) {
    const SIZES: [u64; 6] = [64 * KIB, 128 * KIB, 192 * KIB, 512 * KIB, MIB, 4 * MIB];
    let stripe = SIZES[rng.below(SIZES.len() as u64) as usize];
    let targets = 1 + rng.below(5) as u32;
    let count = match rng.below(3) {
        0 => 1,
        1 => 2.min(targets),
        _ => targets,
    };
    let start = rng.below(u64::from(targets)) as u32;
    (layout(stripe, count, start, targets), targets)
}

#[test]
fn randomized_against_a_byte_by_byte_model() {
    let seed = std::env::var("IOPATH_LAYOUT_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(0x10_4A_11_0E);
    println!("IOPATH_LAYOUT_SEED={seed}");
    let mut rng = Rng(seed);
    // Keep the byte-by-byte model affordable: every case walks at most this many bytes.
    const MODEL_BYTES_MAX: u64 = 8 * MIB;
    for case in 0..60 {
        let (l, _) = random_layout(&mut rng);
        let (stripe, count) = (l.stripe_size_bytes(), l.stripe_count());
        let model_len = MODEL_BYTES_MAX.min(stripe * u64::from(count) * 3);
        let placement = naive_placement(stripe, count, model_len);
        let context = format!("seed {seed} case {case}: stripe {stripe} × {count}");

        // A few extents, unaligned, possibly empty, each checked byte by byte.
        for _ in 0..4 {
            let offset = rng.below(model_len);
            let length = rng.below(model_len - offset + 1);
            let mut covered = 0u64;
            let mut previous_end = offset;
            for e in l.extents(offset, length).unwrap() {
                assert!(e.length_bytes > 0 && e.length_bytes <= stripe, "{context}");
                assert_eq!(e.file_offset_bytes, previous_end, "{context}: file order");
                assert_eq!(
                    e.buffer_offset_bytes,
                    e.file_offset_bytes - offset,
                    "{context}"
                );
                previous_end = e.file_offset_bytes + e.length_bytes;
                // First, last and a middle byte of every piece; every byte of small pieces.
                let step = if e.length_bytes <= 4096 {
                    1
                } else {
                    e.length_bytes / 7 + 1
                };
                let mut probes: Vec<u64> = (0..e.length_bytes).step_by(step as usize).collect();
                probes.push(e.length_bytes - 1);
                for i in probes {
                    let file_byte = e.file_offset_bytes + i;
                    assert_eq!(
                        placement.at(file_byte),
                        (e.object_index, e.object_offset_bytes + i),
                        "{context}: byte {file_byte} of extent {offset}+{length}"
                    );
                }
                covered += e.length_bytes;
            }
            assert_eq!(
                covered, length,
                "{context}: extent {offset}+{length} covered exactly"
            );
        }

        // The inverse, on every 4099th byte (a stride prime to every stripe size).
        for file_byte in (0..model_len).step_by(4099) {
            let (object, object_offset) = placement.at(file_byte);
            assert_eq!(l.locate(file_byte), (object, object_offset), "{context}");
            assert_eq!(
                l.file_offset(object, object_offset).unwrap(),
                file_byte,
                "{context}"
            );
        }

        // Holes: write a few random extents; the model's object sizes glimpse to the largest end.
        let mut object_sizes = vec![0u64; count as usize];
        let mut end_max = 0u64;
        for _ in 0..1 + rng.below(4) {
            let offset = rng.below(model_len);
            let length = rng.below((model_len - offset).min(2 * stripe) + 1);
            for file_byte in offset..offset + length {
                let (object, object_offset) = placement.at(file_byte);
                let size = &mut object_sizes[object as usize];
                *size = (*size).max(object_offset + 1);
            }
            if length > 0 {
                end_max = end_max.max(offset + length);
            }
        }
        assert_eq!(
            l.file_size_bytes(&object_sizes).unwrap(),
            end_max,
            "{context}"
        );

        // A densely written file: the model's object sizes are what object_size_bytes says.
        let file_size = rng.below(model_len + 1);
        let mut dense = vec![0u64; count as usize];
        for file_byte in 0..file_size {
            let (object, object_offset) = placement.at(file_byte);
            dense[object as usize] = object_offset + 1;
        }
        for (index, &size) in dense.iter().enumerate() {
            assert_eq!(
                l.object_size_bytes(index as u32, file_size).unwrap(),
                size,
                "{context}"
            );
        }
        assert_eq!(l.file_size_bytes(&dense).unwrap(), file_size, "{context}");
    }
}

#[test]
fn extents_of_a_1_gib_file_cover_it_exactly_for_every_layout_in_the_matrix() {
    // No model here, only the arithmetic invariants, over the whole matrix of the issue's
    // round trips: counts 1, 2 and all (4), stripe sizes 64 KiB to 4 MiB.
    for stripe in [64 * KIB, 256 * KIB, MIB, 4 * MIB] {
        for count in [1, 2, 4] {
            let l = layout(stripe, count, 1, 4);
            let (offset, length) = (12_345, (1 << 30) + 7);
            let mut per_object = vec![0u64; count as usize];
            let mut next = offset;
            for e in l.extents(offset, length).unwrap() {
                assert_eq!(e.file_offset_bytes, next);
                assert_eq!(
                    l.locate(e.file_offset_bytes),
                    (e.object_index, e.object_offset_bytes)
                );
                next += e.length_bytes;
                per_object[e.object_index as usize] += e.length_bytes;
            }
            assert_eq!(next, offset + length);
            let end = offset + length;
            let sizes: Vec<u64> = (0..count)
                .map(|i| l.object_size_bytes(i, end).unwrap())
                .collect();
            assert_eq!(l.file_size_bytes(&sizes).unwrap(), end);
            // Balanced: no object gets more than one stripe more than another.
            let (min, max) = (
                per_object.iter().min().unwrap(),
                per_object.iter().max().unwrap(),
            );
            assert!(
                max - min <= stripe,
                "stripe {stripe} × {count}: {per_object:?}"
            );
        }
    }
}
