//! Stripe values and file layouts as the metadata service keeps them, and the rules that
//! turn a request into a layout.
//!
//! The client checks `setstripe` values too ([`crate::layout`], whose limits these are), to
//! answer before a round trip; the MDS checks them again because it is the one that decides,
//! and must not trust what a client sends.

use serde::{Deserialize, Serialize};

use crate::error::{MdsError, Result};
use crate::limits::TARGETS_MAX;

// The limits and special values of stripe settings have one definition, in the layout core.
pub use crate::layout::{
    STRIPE_COUNT_ALL, STRIPE_OFFSET_ANY, STRIPE_SIZE_DEFAULT_BYTES, STRIPE_SIZE_MAX_BYTES,
    STRIPE_SIZE_UNIT_BYTES,
};
/// The file system's stripe count unless configured otherwise (Lustre's default), as a
/// request value.
pub const STRIPE_COUNT_DEFAULT: i64 = crate::layout::STRIPE_COUNT_DEFAULT as i64;
/// The first object id allocated on each target; 0 never names an object.
pub const FIRST_OBJECT_ID: u64 = 1;

/// Stripe values as asked for, or as a directory's default: Lustre's conventions, where a
/// zero size or count means "inherit" and -1 means "all targets" (count) or "any" (offset).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct StripeRequest {
    /// Bytes per stripe; 0 to inherit.
    pub stripe_size_bytes: u64,
    /// Objects to stripe over; 0 to inherit, -1 for all targets.
    pub stripe_count: i64,
    /// The starting target's index; -1 for "any" (or, in a request, "inherit").
    pub stripe_offset: i64,
}

impl StripeRequest {
    /// Inherit everything.
    pub const INHERIT: StripeRequest = StripeRequest {
        stripe_size_bytes: 0,
        stripe_count: 0,
        stripe_offset: STRIPE_OFFSET_ANY,
    };

    /// Lustre's file-system default: 1 MiB stripes, one stripe, the MDS chooses the target.
    pub const LUSTRE_DEFAULT: StripeRequest = StripeRequest {
        stripe_size_bytes: STRIPE_SIZE_DEFAULT_BYTES,
        stripe_count: STRIPE_COUNT_DEFAULT,
        stripe_offset: STRIPE_OFFSET_ANY,
    };

    /// Checks the values on their own (not against targets): a size that is 0 or a positive
    /// multiple of 64 KiB up to the maximum, a count of -1 or more, an offset of -1 or more.
    pub fn check(&self) -> Result<()> {
        let size = self.stripe_size_bytes;
        if size != 0 && !size.is_multiple_of(STRIPE_SIZE_UNIT_BYTES) {
            return Err(invalid(format!(
                "stripe size {size} bytes is not a positive multiple of {STRIPE_SIZE_UNIT_BYTES} bytes (64 KiB)"
            )));
        }
        if size > STRIPE_SIZE_MAX_BYTES {
            return Err(invalid(format!(
                "stripe size {size} bytes exceeds the maximum of {STRIPE_SIZE_MAX_BYTES} bytes"
            )));
        }
        if self.stripe_count < STRIPE_COUNT_ALL {
            return Err(invalid(format!(
                "stripe count {} is invalid: use a positive count, 0 for the default or -1 for all targets",
                self.stripe_count
            )));
        }
        if self.stripe_count > TARGETS_MAX as i64 {
            return Err(invalid(format!(
                "stripe count {} exceeds the widest layout of {TARGETS_MAX} stripes",
                self.stripe_count
            )));
        }
        if self.stripe_offset < STRIPE_OFFSET_ANY {
            return Err(invalid(format!(
                "starting target index {} is invalid: use a target's index or -1 for any",
                self.stripe_offset
            )));
        }
        Ok(())
    }

    /// `self`, with each inherited field taken from `from`.
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

    /// Checks a fully inherited request against the configured `targets` (indices, in
    /// round-robin order) and says how many stripes and where they start.
    pub fn resolve(&self, targets: &[u32]) -> Result<ResolvedStripe> {
        self.check()?;
        assert!(
            self.stripe_size_bytes != 0 && self.stripe_count != 0,
            "resolve is given a request with every inherited field filled in"
        );
        if targets.is_empty() {
            return Err(invalid("there are no targets to stripe over".into()));
        }
        let stripe_count = match self.stripe_count {
            STRIPE_COUNT_ALL => targets.len(),
            count if count > targets.len() as i64 => {
                return Err(invalid(format!(
                    "stripe count {count} exceeds the {} targets available",
                    targets.len()
                )));
            }
            // 0 < count ≤ targets.len().
            count => count as usize,
        };
        let start_position = match self.stripe_offset {
            STRIPE_OFFSET_ANY => None,
            offset => Some(target_position(targets, offset)?),
        };
        Ok(ResolvedStripe {
            stripe_size_bytes: self.stripe_size_bytes,
            stripe_count,
            start_position,
        })
    }

    /// Checks the request's offset, if it names one, against `targets`.
    pub fn check_offset(&self, targets: &[u32]) -> Result<()> {
        match self.stripe_offset {
            STRIPE_OFFSET_ANY => Ok(()),
            offset => target_position(targets, offset).map(|_| ()),
        }
    }

    /// Checks the request's count, if it names one, against `targets`.
    pub fn check_count(&self, targets: &[u32]) -> Result<()> {
        if self.stripe_count > targets.len() as i64 {
            return Err(invalid(format!(
                "stripe count {} exceeds the {} targets available",
                self.stripe_count,
                targets.len()
            )));
        }
        Ok(())
    }
}

fn target_position(targets: &[u32], offset: i64) -> Result<usize> {
    targets
        .iter()
        .position(|&t| i64::from(t) == offset)
        .ok_or_else(|| {
            invalid(format!(
                "starting target index {offset} is out of range: it is not one of the {} configured targets",
                targets.len()
            ))
        })
}

fn invalid(why: String) -> MdsError {
    MdsError::InvalidStripe { why }
}

/// A request checked against the targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResolvedStripe {
    /// Bytes per stripe.
    pub stripe_size_bytes: u64,
    /// How many objects, `1..=targets`.
    pub stripe_count: usize,
    /// Position in the target list of the first object, or `None` for round-robin.
    pub start_position: Option<usize>,
}

/// One object of a file.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectRef {
    /// The target (OST) index.
    pub target: u32,
    /// Its id on that target.
    pub object_id: u64,
}

/// A file's RAID-0 layout: its stripe size and its objects in stripe order. The stripe count
/// is the number of objects; the stripe offset is the first object's target.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct FileLayout {
    /// Bytes per stripe.
    pub stripe_size_bytes: u64,
    /// The objects, in stripe order, on distinct targets.
    pub objects: Vec<ObjectRef>,
}

impl FileLayout {
    /// How many objects.
    pub fn stripe_count(&self) -> u32 {
        self.objects.len() as u32
    }

    /// The first object's target.
    pub fn stripe_offset(&self) -> u32 {
        self.objects.first().map_or(0, |o| o.target)
    }

    /// Checks what the service could have produced: a valid stripe size, 1..=2000 objects on
    /// distinct targets, no object id 0. Used on layouts read off the wire or the disk.
    pub fn check(&self) -> std::result::Result<(), String> {
        let size = self.stripe_size_bytes;
        if size == 0 || !size.is_multiple_of(STRIPE_SIZE_UNIT_BYTES) || size > STRIPE_SIZE_MAX_BYTES
        {
            return Err(format!("stripe size {size} is not a valid stripe size"));
        }
        if self.objects.is_empty() || self.objects.len() > TARGETS_MAX {
            return Err(format!(
                "{} objects is not a valid stripe count",
                self.objects.len()
            ));
        }
        for (i, object) in self.objects.iter().enumerate() {
            if object.object_id < FIRST_OBJECT_ID {
                return Err(format!("object {i} has id 0"));
            }
            if self.objects[..i].iter().any(|o| o.target == object.target) {
                return Err(format!(
                    "target {} holds two objects of the layout",
                    object.target
                ));
            }
        }
        Ok(())
    }
}
