//! [`StripeRequest`]: the values `lfs setstripe` (or a directory's default) gives, with Lustre's
//! conventions — a zero size or count means "inherit", a count of -1 means "every target", an
//! offset of -1 means "any target" — and the rules that check them, fill them in from a
//! default, and resolve them against the file system's targets.
//!
//! The client checks a request before it asks the metadata service, to answer without a
//! round trip; the metadata service checks it again, because it is the one that decides and
//! must not trust what a client sends. Both use this one set of rules.

use serde::{Deserialize, Serialize};

use crate::layout::{
    LayoutError, STRIPE_COUNT_ALL, STRIPE_COUNT_DEFAULT, STRIPE_COUNT_MAX, STRIPE_OFFSET_ANY,
    STRIPE_SIZE_DEFAULT_BYTES, STRIPE_SIZE_MAX_BYTES, STRIPE_SIZE_UNIT_BYTES,
};

/// Stripe values as asked for, or as a directory's default.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct StripeRequest {
    /// Bytes per stripe; 0 to inherit.
    pub stripe_size_bytes: u64,
    /// Objects to stripe over; 0 to inherit, -1 for every target.
    pub stripe_count: i64,
    /// The starting target's index; -1 for "any" (or, in a request, "inherit").
    pub stripe_offset: i64,
}

/// A request resolved against the file system's targets: what the metadata service places a
/// new file's objects by.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StripeSettings {
    /// Bytes per stripe: a positive multiple of 64 KiB up to the maximum.
    pub stripe_size_bytes: u64,
    /// Objects, `1..=targets` (and at most [`STRIPE_COUNT_MAX`]).
    pub stripe_count: u32,
    /// The starting target's index, one of the targets; `None` lets the metadata service
    /// choose (round-robin).
    pub stripe_offset: Option<u32>,
}

impl StripeRequest {
    /// Inherit everything.
    pub const INHERIT: StripeRequest = StripeRequest {
        stripe_size_bytes: 0,
        stripe_count: 0,
        stripe_offset: STRIPE_OFFSET_ANY,
    };

    /// Lustre's file-system default: 1 MiB stripes, one stripe, the metadata service chooses
    /// the target.
    pub const LUSTRE_DEFAULT: StripeRequest = StripeRequest {
        stripe_size_bytes: STRIPE_SIZE_DEFAULT_BYTES,
        stripe_count: STRIPE_COUNT_DEFAULT as i64,
        stripe_offset: STRIPE_OFFSET_ANY,
    };

    /// Checks the values on their own, not against targets: a size of 0 or a positive
    /// multiple of 64 KiB up to the maximum, a count of -1 or more up to the widest layout,
    /// an offset of -1 or more.
    pub fn check(&self) -> Result<(), LayoutError> {
        let size = self.stripe_size_bytes;
        if size != 0 && !size.is_multiple_of(STRIPE_SIZE_UNIT_BYTES) {
            return Err(LayoutError::StripeSizeNotAligned {
                stripe_size_bytes: size,
            });
        }
        if size > STRIPE_SIZE_MAX_BYTES {
            return Err(LayoutError::StripeSizeTooLarge {
                stripe_size_bytes: size,
            });
        }
        if self.stripe_count < STRIPE_COUNT_ALL {
            return Err(LayoutError::StripeCountInvalid {
                stripe_count: self.stripe_count,
            });
        }
        if self.stripe_count > i64::from(STRIPE_COUNT_MAX) {
            return Err(LayoutError::StripeCountBeyondMax {
                stripe_count: self.stripe_count,
            });
        }
        if self.stripe_offset < STRIPE_OFFSET_ANY {
            return Err(LayoutError::StripeOffsetInvalid {
                stripe_offset: self.stripe_offset,
            });
        }
        Ok(())
    }

    /// `self`, with each inherited field (a zero size or count, an offset of -1) taken from
    /// `from`.
    pub fn inherit(&self, from: &StripeRequest) -> StripeRequest {
        StripeRequest {
            stripe_size_bytes: match self.stripe_size_bytes {
                0 => from.stripe_size_bytes,
                size => size,
            },
            stripe_count: match self.stripe_count {
                0 => from.stripe_count,
                count => count,
            },
            stripe_offset: match self.stripe_offset {
                STRIPE_OFFSET_ANY => from.stripe_offset,
                offset => offset,
            },
        }
    }

    /// Checks the values, and the offset against `targets` (the file system's target
    /// indices): it must be one of them. A count above the targets passes, as in Lustre: a
    /// directory keeps it as asked, and each file made by it gets every target
    /// ([`Self::resolve`] caps it). Inherited fields pass: they are checked where they are
    /// filled in.
    pub fn check_against(&self, targets: &[u32]) -> Result<(), LayoutError> {
        self.check()?;
        if self.stripe_offset != STRIPE_OFFSET_ANY {
            target_named(targets, self.stripe_offset)?;
        }
        Ok(())
    }

    /// Checks the request against `targets` (the file system's target indices, in the order
    /// round-robin placement takes them) and fills a zero size or count with Lustre's defaults
    /// (1 MiB, one stripe; callers inherit a directory's default first). A count above the
    /// targets is capped to them, as Lustre's LOD caps it (`lod_get_stripe_count`).
    pub fn resolve(&self, targets: &[u32]) -> Result<StripeSettings, LayoutError> {
        self.check()?;
        if targets.is_empty() {
            return Err(LayoutError::NoTargets);
        }
        let available = targets.len().min(STRIPE_COUNT_MAX as usize) as u32;
        let stripe_count = match self.stripe_count {
            0 => STRIPE_COUNT_DEFAULT,
            STRIPE_COUNT_ALL => available,
            count if count > i64::from(available) => available,
            // 0 < count ≤ available (checked above and by `check`).
            count => count as u32,
        };
        let stripe_offset = match self.stripe_offset {
            STRIPE_OFFSET_ANY => None,
            offset => Some(targets[target_named(targets, offset)?]),
        };
        Ok(StripeSettings {
            stripe_size_bytes: match self.stripe_size_bytes {
                0 => STRIPE_SIZE_DEFAULT_BYTES,
                size => size,
            },
            stripe_count,
            stripe_offset,
        })
    }
}

impl StripeSettings {
    /// Where in `targets` (the list it was resolved against) the first object goes, if the
    /// request named a target.
    pub fn start_position(&self, targets: &[u32]) -> Option<usize> {
        let offset = self.stripe_offset?;
        targets.iter().position(|&t| t == offset)
    }
}

/// The position in `targets` of target `offset`, or why it is not one of them.
fn target_named(targets: &[u32], offset: i64) -> Result<usize, LayoutError> {
    targets.iter().position(|&t| i64::from(t) == offset).ok_or(
        LayoutError::StripeOffsetOutOfRange {
            stripe_offset: offset,
            targets_count: targets.len() as u32,
        },
    )
}
