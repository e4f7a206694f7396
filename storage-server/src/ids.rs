//! The small integer identities the storage server speaks in: objects and transactions.

use serde::{Deserialize, Serialize};
use std::fmt;

/// An object's identity on one OST. It is the only thing a client names an object by, and the
/// only thing an object file's name is made from (`O/<16 hex digits>`), so no client-chosen
/// string ever becomes a path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ObjectId(pub u64);

impl ObjectId {
    /// Length of an object file name: the id in fixed-width lower-case hex.
    pub const FILE_NAME_LEN: usize = 16;

    /// The object's file name inside the OST's object directory.
    pub fn file_name(self) -> String {
        format!("{:016x}", self.0)
    }

    /// Parses a file name written by [`ObjectId::file_name`]; anything else is not ours.
    pub fn parse_file_name(name: &str) -> Option<ObjectId> {
        let well_formed = name.len() == Self::FILE_NAME_LEN
            && name
                .bytes()
                .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
        if !well_formed {
            return None;
        }
        u64::from_str_radix(name, 16).ok().map(ObjectId)
    }
}

impl fmt::Display for ObjectId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "0x{:x}", self.0)
    }
}

/// A transaction number: the position of one state-changing operation in an OST's history.
/// Assigned in increasing order by the journal; every reply carries its own transno and the
/// target's `last_committed`, and a client keeps every request whose transno is above
/// `last_committed` so that it can replay it after a server crash. `Transno(0)` means
/// "nothing committed yet".
#[derive(
    Debug, Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize,
)]
pub struct Transno(pub u64);

impl Transno {
    /// The transno before any operation.
    pub const ZERO: Transno = Transno(0);

    /// The next transno.
    pub fn next(self) -> Transno {
        Transno(self.0 + 1)
    }
}

impl fmt::Display for Transno {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip_and_reject_foreign_names() {
        for id in [0, 1, 0xdead_beef, u64::MAX] {
            let name = ObjectId(id).file_name();
            assert_eq!(name.len(), ObjectId::FILE_NAME_LEN);
            assert_eq!(ObjectId::parse_file_name(&name), Some(ObjectId(id)));
        }
        for bad in [
            "",
            "../etc/passwd",
            "000000000000000G",
            "000000000000000A",
            "0000000000000001.tmp",
        ] {
            assert_eq!(ObjectId::parse_file_name(bad), None, "{bad}");
        }
    }
}
