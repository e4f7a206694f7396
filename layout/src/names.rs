//! [`FsName`] and [`TargetName`]: the names Lustre gives a file system and its targets —
//! `iopath-OST0003`, `iopath-MDT0000`, and their UUIDs `iopath-OST0003_UUID` — formed here and
//! read back here, so that `lfs`, `lctl`, the storage servers' parameters and every table
//! spell them one way.
//!
//! As in Lustre (`mkfs.lustre --fsname`), a file system's name is 1 to 8 characters of
//! letters, digits, `_` and `-`, and a target's name is the file system's name, `-`, its kind
//! and its index as four hexadecimal digits: the eleventh OST of `scratch` is
//! `scratch-OST000a`.

use std::fmt;

use crate::layout::LayoutError;

/// The longest file system name, in characters (Lustre's limit).
pub const FSNAME_MAX_CHARS: usize = 8;

/// The largest target index a name can carry: four hexadecimal digits.
pub const TARGET_NAME_INDEX_MAX: u32 = 0xffff;

/// A file system's name, checked: 1 to [`FSNAME_MAX_CHARS`] characters of `[A-Za-z0-9_-]`.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct FsName(String);

impl FsName {
    /// The name a stack's file system has when its stack file gives none.
    pub const DEFAULT: &'static str = "iopath";

    /// `name`, if it is a file system name Lustre would accept.
    pub fn new(name: &str) -> Result<FsName, LayoutError> {
        let invalid = |why: String| LayoutError::FsNameInvalid {
            name: name.to_owned(),
            why,
        };
        if name.is_empty() {
            return Err(invalid("it is empty".into()));
        }
        let chars = name.chars().count();
        if chars > FSNAME_MAX_CHARS {
            return Err(invalid(format!(
                "it has {chars} characters; Lustre allows 1 to {FSNAME_MAX_CHARS}"
            )));
        }
        if let Some(c) = name
            .chars()
            .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '_' | '-')))
        {
            return Err(invalid(format!(
                "it has {c:?}; Lustre allows letters, digits, '_' and '-'"
            )));
        }
        Ok(FsName(name.to_owned()))
    }

    /// The name as text.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name of object storage target `index`: `iopath-OST0003`.
    pub fn ost(&self, index: u32) -> TargetName {
        TargetName::new(self.clone(), TargetKind::Ost, index)
    }

    /// The name of metadata target `index`: `iopath-MDT0000`.
    pub fn mdt(&self, index: u32) -> TargetName {
        TargetName::new(self.clone(), TargetKind::Mdt, index)
    }

    /// An object storage target of this file system as a user gives it (`lfs find --ost`):
    /// its index (`3`), its name (`iopath-OST0003`) or its UUID (`iopath-OST0003_UUID`).
    /// A name of another file system, or of a metadata target, is refused.
    pub fn ost_index(&self, text: &str) -> Result<u32, LayoutError> {
        if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
            return text
                .parse()
                .ok()
                .filter(|&index| index <= TARGET_NAME_INDEX_MAX)
                .ok_or_else(|| LayoutError::TargetNameInvalid {
                    text: text.to_owned(),
                    why: format!(
                        "a file system's targets are numbered 0 to {TARGET_NAME_INDEX_MAX}"
                    ),
                });
        }
        let name = TargetName::parse(text)?;
        if name.fsname != *self || name.kind != TargetKind::Ost {
            return Err(LayoutError::TargetNameInvalid {
                text: text.to_owned(),
                why: format!(
                    "this file system is {self}: its storage targets are {}, ...",
                    self.ost(0)
                ),
            });
        }
        Ok(name.index)
    }
}

impl Default for FsName {
    /// [`FsName::DEFAULT`].
    fn default() -> FsName {
        FsName(FsName::DEFAULT.to_owned())
    }
}

impl fmt::Display for FsName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::str::FromStr for FsName {
    type Err = LayoutError;

    fn from_str(text: &str) -> Result<FsName, LayoutError> {
        FsName::new(text)
    }
}

/// What a target stores: objects (an OST) or the namespace (an MDT).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TargetKind {
    /// An object storage target.
    Ost,
    /// A metadata target.
    Mdt,
}

impl TargetKind {
    /// `OST` or `MDT`, as the name spells it.
    pub fn as_str(self) -> &'static str {
        match self {
            TargetKind::Ost => "OST",
            TargetKind::Mdt => "MDT",
        }
    }
}

/// A target's name: `iopath-OST0003`. Its [`fmt::Display`] is the name, [`TargetName::uuid`]
/// the UUID `lfs df` lists.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct TargetName {
    fsname: FsName,
    kind: TargetKind,
    index: u32,
}

impl TargetName {
    /// Target `index` of kind `kind` in file system `fsname`.
    ///
    /// # Panics
    ///
    /// If `index` is above [`TARGET_NAME_INDEX_MAX`]: a file system has at most that many
    /// targets of a kind (a stack's limits keep far below it), so a larger index is a bug.
    pub fn new(fsname: FsName, kind: TargetKind, index: u32) -> TargetName {
        assert!(
            index <= TARGET_NAME_INDEX_MAX,
            "target index {index} does not fit a target name's four hexadecimal digits"
        );
        TargetName {
            fsname,
            kind,
            index,
        }
    }

    /// Reads `fsname-OSTxxxx` or `fsname-MDTxxxx`, with or without `_UUID`.
    pub fn parse(text: &str) -> Result<TargetName, LayoutError> {
        let invalid = |why: &str| LayoutError::TargetNameInvalid {
            text: text.to_owned(),
            why: why.to_owned(),
        };
        let name = text.strip_suffix("_UUID").unwrap_or(text);
        let Some((fsname, target)) = name.rsplit_once('-') else {
            return Err(invalid(
                "not a target: give its index (3) or its name (fsname-OST0003)",
            ));
        };
        let fsname = FsName::new(fsname)?;
        let kind = match target.get(..3) {
            Some("OST") => TargetKind::Ost,
            Some("MDT") => TargetKind::Mdt,
            _ => return Err(invalid("a target name has OST or MDT after the '-'")),
        };
        let digits = &target[3..];
        if digits.len() != 4 || !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Err(invalid(
                "a target's index is four hexadecimal digits (OST000a)",
            ));
        }
        let index = u32::from_str_radix(digits, 16)
            .map_err(|_| invalid("a target's index is four hexadecimal digits"))?;
        Ok(TargetName::new(fsname, kind, index))
    }

    /// The file system it belongs to.
    pub fn fsname(&self) -> &FsName {
        &self.fsname
    }

    /// OST or MDT.
    pub fn kind(&self) -> TargetKind {
        self.kind
    }

    /// Its index among the file system's targets of its kind.
    pub fn index(&self) -> u32 {
        self.index
    }

    /// Its UUID as `lfs df` lists it: `iopath-OST0003_UUID`.
    pub fn uuid(&self) -> String {
        format!("{self}_UUID")
    }
}

impl fmt::Display for TargetName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}-{}{:04x}",
            self.fsname,
            self.kind.as_str(),
            self.index
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fs(name: &str) -> FsName {
        FsName::new(name).expect("a valid name")
    }

    #[test]
    fn names_within_lustres_limits_are_taken() {
        for name in ["iopath", "a", "scratch1", "my-fs", "fs_2", "ABCDEFGH"] {
            assert_eq!(fs(name).as_str(), name);
        }
        assert_eq!(FsName::default().as_str(), "iopath");
    }

    #[test]
    fn names_beyond_lustres_limits_are_refused_saying_why() {
        let table = [
            ("", "it is empty"),
            ("ninechars", "it has 9 characters; Lustre allows 1 to 8"),
            (
                "a.b",
                "it has '.'; Lustre allows letters, digits, '_' and '-'",
            ),
            (
                "a b",
                "it has ' '; Lustre allows letters, digits, '_' and '-'",
            ),
            (
                "fs/1",
                "it has '/'; Lustre allows letters, digits, '_' and '-'",
            ),
            (
                "défi",
                "it has 'é'; Lustre allows letters, digits, '_' and '-'",
            ),
        ];
        for (name, why) in table {
            assert_eq!(
                FsName::new(name),
                Err(LayoutError::FsNameInvalid {
                    name: name.into(),
                    why: why.into()
                }),
                "{name:?}"
            );
        }
    }

    #[test]
    fn target_names_are_lustres_with_hexadecimal_indices() {
        let scratch = fs("scratch");
        assert_eq!(scratch.ost(3).to_string(), "scratch-OST0003");
        assert_eq!(scratch.ost(10).to_string(), "scratch-OST000a");
        assert_eq!(scratch.ost(0xffff).to_string(), "scratch-OSTffff");
        assert_eq!(scratch.mdt(0).to_string(), "scratch-MDT0000");
        assert_eq!(scratch.ost(3).uuid(), "scratch-OST0003_UUID");
    }

    #[test]
    fn a_target_name_reads_back_as_itself() {
        for name in [fs("iopath").ost(0), fs("my-fs").ost(0x2a), fs("x").mdt(1)] {
            assert_eq!(TargetName::parse(&name.to_string()), Ok(name.clone()));
            assert_eq!(TargetName::parse(&name.uuid()), Ok(name));
        }
    }

    #[test]
    fn osts_are_given_by_index_name_or_uuid_of_this_file_system() {
        let scratch = fs("scratch");
        assert_eq!(scratch.ost_index("3"), Ok(3));
        assert_eq!(scratch.ost_index("scratch-OST0003"), Ok(3));
        assert_eq!(scratch.ost_index("scratch-OST000a_UUID"), Ok(10));
        assert_eq!(scratch.ost_index("65535"), Ok(0xffff));
        for wrong in [
            "iopath-OST0003",
            "scratch-MDT0000",
            "OST0003",
            "scratch-OST3",
            "scratch-OSTzzzz",
            "scratch-OST00003",
            "-3",
            "65536",
            "99999999999",
            "",
        ] {
            assert!(
                matches!(
                    scratch.ost_index(wrong),
                    Err(LayoutError::TargetNameInvalid { .. } | LayoutError::FsNameInvalid { .. })
                ),
                "{wrong:?}"
            );
        }
        assert_eq!(
            scratch.ost_index("iopath-OST0003").unwrap_err().to_string(),
            "iopath-OST0003: this file system is scratch: its storage targets are \
             scratch-OST0000, ..."
        );
    }
}
