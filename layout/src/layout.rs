//! A file's stripe layout, as a pure core: Lustre's RAID-0 layout and ASCI Red's PFS stripe
//! files, with the arithmetic that maps bytes of the file to bytes of its objects and back.
//!
//! A file striped `stripe_count` ways with stripe size `S` places its bytes round-robin over
//! its objects, `S` bytes at a time. Stripe unit `u` (file bytes `u·S .. (u+1)·S`) lands on
//! object `u mod stripe_count`, in that object's row `u div stripe_count`:
//!
//! ```text
//! file:     | u0 | u1 | u2 | u3 | u4 | u5 | u6 | ...      stripe_count = 3
//! object 0: | u0 | u3 | u6 |
//! object 1: | u1 | u4 |
//! object 2: | u2 | u5 |
//! ```
//!
//! Nothing here does I/O, keeps time or allocates per byte: [`Layout::extents`] turns a file
//! extent into per-object extents, [`Layout::file_offset`] goes back, and
//! [`Layout::file_size_bytes`] computes a file's size from its objects' sizes the way a Lustre
//! client glimpses it.
//!
//! A layout is checked when it is built — from the metadata service's choice, off the wire, or
//! off the metadata service's disk (its serde form is checked the same way) — so every part of
//! iopath that holds one holds a valid one.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Stripe sizes are whole multiples of this (Lustre's `LOV_MIN_STRIPE_SIZE`, 64 KiB): the
/// smallest unit the servers' pages and the clients' locks are aligned to.
pub const STRIPE_SIZE_UNIT_BYTES: u64 = 64 * 1024;
/// The stripe size a file gets when nothing else is asked for (Lustre's and PFS's 1 MiB).
pub const STRIPE_SIZE_DEFAULT_BYTES: u64 = 1024 * 1024;
/// The largest stripe size: the largest multiple of 64 KiB below 4 GiB, as `lfs setstripe`
/// accepts.
pub const STRIPE_SIZE_MAX_BYTES: u64 = (4 << 30) - STRIPE_SIZE_UNIT_BYTES;
/// The stripe count a file gets when nothing else is asked for (Lustre's default).
pub const STRIPE_COUNT_DEFAULT: u32 = 1;
/// The widest layout (Lustre's `LOV_MAX_STRIPE_COUNT`).
pub const STRIPE_COUNT_MAX: u32 = 2000;
/// `stripe_count` meaning "every target" (`lfs setstripe -c -1`).
pub const STRIPE_COUNT_ALL: i64 = -1;
/// `stripe_offset` meaning "let the metadata service choose" (`lfs setstripe -i -1`).
pub const STRIPE_OFFSET_ANY: i64 = -1;

/// Everything that can be wrong with a layout or with a request made of it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum LayoutError {
    /// A stripe size that is zero or not a whole multiple of 64 KiB.
    #[error(
        "stripe size {stripe_size_bytes} bytes is not a positive multiple of {STRIPE_SIZE_UNIT_BYTES} bytes (64 KiB)"
    )]
    StripeSizeNotAligned {
        /// The size given.
        stripe_size_bytes: u64,
    },
    /// A stripe size above [`STRIPE_SIZE_MAX_BYTES`].
    #[error(
        "stripe size {stripe_size_bytes} bytes exceeds the maximum of {STRIPE_SIZE_MAX_BYTES} bytes"
    )]
    StripeSizeTooLarge {
        /// The size given.
        stripe_size_bytes: u64,
    },
    /// A stripe count that is neither positive, 0 (default) nor -1 (all targets).
    #[error(
        "stripe count {stripe_count} is invalid: use a positive count, 0 for the default or -1 for all targets"
    )]
    StripeCountInvalid {
        /// The count given.
        stripe_count: i64,
    },
    /// More stripes than the widest layout ([`STRIPE_COUNT_MAX`], Lustre's
    /// `LOV_MAX_STRIPE_COUNT`), whatever the targets.
    #[error("stripe count {stripe_count} exceeds the widest layout of {STRIPE_COUNT_MAX} stripes")]
    StripeCountBeyondMax {
        /// The count given.
        stripe_count: i64,
    },
    /// A starting target index below -1 (any).
    #[error("starting target index {stripe_offset} is invalid: use a target's index or -1 for any")]
    StripeOffsetInvalid {
        /// The index given.
        stripe_offset: i64,
    },
    /// A starting target index that is not one of the file system's targets.
    #[error(
        "starting target index {stripe_offset} is out of range: it is not one of the {targets_count} configured targets"
    )]
    StripeOffsetOutOfRange {
        /// The index given.
        stripe_offset: i64,
        /// How many targets there are.
        targets_count: u32,
    },
    /// A target index the file system does not have.
    #[error("the file system has no OST{target:04x}")]
    UnknownTarget {
        /// The index.
        target: u32,
    },
    /// A target list naming one index twice.
    #[error("OST{target:04x} is listed twice")]
    TargetListedTwice {
        /// The index.
        target: u32,
    },
    /// No targets at all: nothing can be striped.
    #[error("there are no targets to stripe over")]
    NoTargets,
    /// A layout without objects, or with more than [`STRIPE_COUNT_MAX`].
    #[error("a layout needs 1..={STRIPE_COUNT_MAX} objects, not {objects_count}")]
    ObjectCountInvalid {
        /// How many objects were given.
        objects_count: usize,
    },
    /// An object id of 0, which never names an object.
    #[error("object {object_index} of the layout has id 0, which names no object")]
    ObjectIdZero {
        /// Its index in the layout.
        object_index: usize,
    },
    /// Two objects of one layout on the same target: stripes must go to distinct targets.
    #[error("objects {first} and {second} of the layout are both on target {target}")]
    TargetRepeated {
        /// The target.
        target: u32,
        /// The first object index on it.
        first: usize,
        /// The second object index on it.
        second: usize,
    },
    /// A layout whose stated stripe count is not its number of objects.
    #[error("stripe count {stripe_count} does not match the {objects_count} objects listed")]
    StripeCountMismatch {
        /// The count stated.
        stripe_count: u32,
        /// How many objects were listed.
        objects_count: usize,
    },
    /// A layout whose `stripe_offset` is not the target of its first object.
    #[error("stripe offset {stripe_offset} is not the first object's target {first_target}")]
    StripeOffsetMismatch {
        /// The offset given.
        stripe_offset: u32,
        /// The first object's target.
        first_target: u32,
    },
    /// An extent whose end does not fit in a 64-bit file offset.
    #[error(
        "extent of {length_bytes} bytes at offset {offset_bytes} runs past the largest file offset"
    )]
    ExtentOverflow {
        /// Its start.
        offset_bytes: u64,
        /// Its length.
        length_bytes: u64,
    },
    /// An object index the layout does not have.
    #[error("object index {object_index} is out of range: the layout has {stripe_count} objects")]
    NoSuchObject {
        /// The index asked for.
        object_index: u32,
        /// How many objects the layout has.
        stripe_count: u32,
    },
    /// A size per object was expected and a different number was given.
    #[error("{sizes_count} object sizes given for a layout of {stripe_count} objects")]
    ObjectSizesMismatch {
        /// How many sizes were given.
        sizes_count: usize,
        /// How many objects the layout has.
        stripe_count: u32,
    },
    /// A file system name Lustre would refuse (`mkfs.lustre --fsname`).
    #[error("{name:?} is not a file system name: {why}")]
    FsNameInvalid {
        /// The name given.
        name: String,
        /// What is wrong with it.
        why: String,
    },
    /// Text that names no target of the file system (`lfs find --ost`).
    #[error("{text}: {why}")]
    TargetNameInvalid {
        /// The text given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// An object byte whose file offset does not fit in 64 bits.
    #[error("object {object_index} offset {object_offset_bytes} maps past the largest file offset")]
    ObjectOffsetOverflow {
        /// The object.
        object_index: u32,
        /// The offset in it.
        object_offset_bytes: u64,
    },
}

/// The first object id the metadata service gives out on each target; 0 never names an
/// object.
pub const FIRST_OBJECT_ID: u64 = 1;

/// One object of a layout: which target holds it and its id there.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectRef {
    /// The target (OST) index.
    pub target: u32,
    /// The object's id on that target.
    pub object_id: u64,
}

/// A validated RAID-0 layout: the stripe size and the file's objects, in stripe order.
///
/// The stripe count is the number of objects and the stripe offset is the target of the first
/// one, so the three can never disagree. Its serde form is `{stripe_size_bytes, objects}`,
/// checked by [`Layout::new`] when read.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "LayoutParts", into = "LayoutParts")]
pub struct Layout {
    stripe_size_bytes: u64,
    objects: Vec<ObjectRef>,
}

/// A layout's stored form, before it is checked.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct LayoutParts {
    stripe_size_bytes: u64,
    objects: Vec<ObjectRef>,
}

impl TryFrom<LayoutParts> for Layout {
    type Error = LayoutError;

    fn try_from(parts: LayoutParts) -> Result<Layout, LayoutError> {
        Layout::new(parts.stripe_size_bytes, parts.objects)
    }
}

impl From<Layout> for LayoutParts {
    fn from(layout: Layout) -> LayoutParts {
        LayoutParts {
            stripe_size_bytes: layout.stripe_size_bytes,
            objects: layout.objects,
        }
    }
}

/// One piece of a file extent: the bytes of one stripe unit on one object.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ObjectExtent {
    /// Which object of the layout (0-based, in stripe order).
    pub object_index: u32,
    /// Where in the object the piece starts.
    pub object_offset_bytes: u64,
    /// How long it is (never zero, never more than a stripe).
    pub length_bytes: u64,
    /// Where in the file it starts.
    pub file_offset_bytes: u64,
    /// Where in the caller's buffer it starts (its distance from the extent's start).
    pub buffer_offset_bytes: u64,
}

impl Layout {
    /// A layout of `objects` in stripe order with stripes of `stripe_size_bytes`.
    ///
    /// Refuses a stripe size that is not a positive multiple of 64 KiB or is above the
    /// maximum, no objects or more than [`STRIPE_COUNT_MAX`], and two objects on one target.
    pub fn new(stripe_size_bytes: u64, objects: Vec<ObjectRef>) -> Result<Layout, LayoutError> {
        check_stripe_size(stripe_size_bytes)?;
        if objects.is_empty() || objects.len() > STRIPE_COUNT_MAX as usize {
            return Err(LayoutError::ObjectCountInvalid {
                objects_count: objects.len(),
            });
        }
        if let Some(index) = objects.iter().position(|o| o.object_id < FIRST_OBJECT_ID) {
            return Err(LayoutError::ObjectIdZero {
                object_index: index,
            });
        }
        // Quadratic, but over at most STRIPE_COUNT_MAX objects and only once per layout.
        for (second, object) in objects.iter().enumerate() {
            if let Some(first) = objects[..second]
                .iter()
                .position(|o| o.target == object.target)
            {
                return Err(LayoutError::TargetRepeated {
                    target: object.target,
                    first,
                    second,
                });
            }
        }
        Ok(Layout {
            stripe_size_bytes,
            objects,
        })
    }

    /// [`Layout::new`] for a layout that states all four of Lustre's fields (as one read off
    /// the wire does): also checks the stated count and offset against the objects.
    pub fn from_parts(
        stripe_size_bytes: u64,
        stripe_count: u32,
        stripe_offset: u32,
        objects: Vec<ObjectRef>,
    ) -> Result<Layout, LayoutError> {
        if objects.len() != stripe_count as usize {
            return Err(LayoutError::StripeCountMismatch {
                stripe_count,
                objects_count: objects.len(),
            });
        }
        let layout = Layout::new(stripe_size_bytes, objects)?;
        if layout.stripe_offset() != stripe_offset {
            return Err(LayoutError::StripeOffsetMismatch {
                stripe_offset,
                first_target: layout.stripe_offset(),
            });
        }
        Ok(layout)
    }

    /// Bytes placed on one object before moving to the next.
    pub fn stripe_size_bytes(&self) -> u64 {
        self.stripe_size_bytes
    }

    /// How many objects the file is striped over.
    pub fn stripe_count(&self) -> u32 {
        // Bounded by STRIPE_COUNT_MAX in `new`.
        self.objects.len() as u32
    }

    /// The target of the first object: where striping starts.
    pub fn stripe_offset(&self) -> u32 {
        self.objects[0].target
    }

    /// The objects, in stripe order.
    pub fn objects(&self) -> &[ObjectRef] {
        &self.objects
    }

    /// Bytes in one full row of stripes (`stripe_size × stripe_count`): the request size that
    /// sends one stripe to every object, ASCI Red's optimal single-node request.
    pub fn stripe_width_bytes(&self) -> u64 {
        // At most (4 GiB - 64 KiB) × 2000: no overflow.
        self.stripe_size_bytes * u64::from(self.stripe_count())
    }

    /// The per-object pieces of the file extent `offset_bytes .. offset_bytes + length_bytes`,
    /// in file order. An empty extent has no pieces.
    pub fn extents(
        &self,
        offset_bytes: u64,
        length_bytes: u64,
    ) -> Result<Extents<'_>, LayoutError> {
        let end = offset_bytes
            .checked_add(length_bytes)
            .ok_or(LayoutError::ExtentOverflow {
                offset_bytes,
                length_bytes,
            })?;
        Ok(Extents {
            layout: self,
            next_bytes: offset_bytes,
            start_bytes: offset_bytes,
            end_bytes: end,
        })
    }

    /// Where file byte `file_offset_bytes` lives: its object and the offset in that object.
    pub fn locate(&self, file_offset_bytes: u64) -> (u32, u64) {
        let unit = file_offset_bytes / self.stripe_size_bytes;
        let within = file_offset_bytes % self.stripe_size_bytes;
        let count = u64::from(self.stripe_count());
        let object_index = (unit % count) as u32;
        let row = unit / count;
        // row × stripe ≤ unit × stripe ≤ file offset: no overflow.
        (object_index, row * self.stripe_size_bytes + within)
    }

    /// The inverse of [`Layout::locate`]: the file offset of byte `object_offset_bytes` of
    /// object `object_index`.
    pub fn file_offset(
        &self,
        object_index: u32,
        object_offset_bytes: u64,
    ) -> Result<u64, LayoutError> {
        self.check_index(object_index)?;
        let row = object_offset_bytes / self.stripe_size_bytes;
        let within = object_offset_bytes % self.stripe_size_bytes;
        row.checked_mul(self.stripe_width_bytes())
            .and_then(|v| v.checked_add(u64::from(object_index) * self.stripe_size_bytes))
            .and_then(|v| v.checked_add(within))
            .ok_or(LayoutError::ObjectOffsetOverflow {
                object_index,
                object_offset_bytes,
            })
    }

    /// A file's size from its objects' sizes, in stripe order, as a Lustre client glimpses it:
    /// one past the largest file offset any object's last byte maps to (0 if all are empty).
    /// Holes inside the file need no object bytes; a hole at its end is not seen.
    pub fn file_size_bytes(&self, object_sizes_bytes: &[u64]) -> Result<u64, LayoutError> {
        if object_sizes_bytes.len() != self.objects.len() {
            return Err(LayoutError::ObjectSizesMismatch {
                sizes_count: object_sizes_bytes.len(),
                stripe_count: self.stripe_count(),
            });
        }
        let mut size_bytes = 0;
        for (index, &object_size) in object_sizes_bytes.iter().enumerate() {
            if object_size == 0 {
                continue;
            }
            let last = self.file_offset(index as u32, object_size - 1)?;
            // last < u64::MAX because file_offset checked its sums; +1 fits.
            size_bytes = size_bytes.max(last + 1);
        }
        Ok(size_bytes)
    }

    /// The size object `object_index` has in a file written densely up to `file_size_bytes`
    /// (what a truncate to that size leaves on the object).
    pub fn object_size_bytes(
        &self,
        object_index: u32,
        file_size_bytes: u64,
    ) -> Result<u64, LayoutError> {
        self.check_index(object_index)?;
        let width = self.stripe_width_bytes();
        let full_rows = file_size_bytes / width;
        let rest = file_size_bytes % width;
        let before = u64::from(object_index) * self.stripe_size_bytes;
        let in_last_row = rest.saturating_sub(before).min(self.stripe_size_bytes);
        Ok(full_rows * self.stripe_size_bytes + in_last_row)
    }

    fn check_index(&self, object_index: u32) -> Result<(), LayoutError> {
        if object_index >= self.stripe_count() {
            return Err(LayoutError::NoSuchObject {
                object_index,
                stripe_count: self.stripe_count(),
            });
        }
        Ok(())
    }
}

impl fmt::Display for Layout {
    /// `lfs getstripe`'s summary fields.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "stripe_count: {} stripe_size: {} pattern: raid0 stripe_offset: {}",
            self.stripe_count(),
            self.stripe_size_bytes,
            self.stripe_offset()
        )
    }
}

/// The pieces of one file extent, in file order (see [`Layout::extents`]). Yields at most
/// `length / stripe_size + 2` pieces.
#[derive(Debug, Clone)]
pub struct Extents<'a> {
    layout: &'a Layout,
    start_bytes: u64,
    next_bytes: u64,
    end_bytes: u64,
}

impl Iterator for Extents<'_> {
    type Item = ObjectExtent;

    fn next(&mut self) -> Option<ObjectExtent> {
        if self.next_bytes >= self.end_bytes {
            return None;
        }
        let stripe = self.layout.stripe_size_bytes;
        let (object_index, object_offset_bytes) = self.layout.locate(self.next_bytes);
        let to_unit_end = stripe - self.next_bytes % stripe;
        let length_bytes = to_unit_end.min(self.end_bytes - self.next_bytes);
        let extent = ObjectExtent {
            object_index,
            object_offset_bytes,
            length_bytes,
            file_offset_bytes: self.next_bytes,
            buffer_offset_bytes: self.next_bytes - self.start_bytes,
        };
        self.next_bytes += length_bytes;
        Some(extent)
    }
}

pub(crate) fn check_stripe_size(stripe_size_bytes: u64) -> Result<(), LayoutError> {
    if stripe_size_bytes == 0 || !stripe_size_bytes.is_multiple_of(STRIPE_SIZE_UNIT_BYTES) {
        return Err(LayoutError::StripeSizeNotAligned { stripe_size_bytes });
    }
    if stripe_size_bytes > STRIPE_SIZE_MAX_BYTES {
        return Err(LayoutError::StripeSizeTooLarge { stripe_size_bytes });
    }
    Ok(())
}
