//! The three choices a fyod and its clients make: how files are stored (PFS or UFS), how
//! concurrent access to a shared file behaves (MUNIX or MASYNC), and how a call is served
//! (synchronously or asynchronously).

use std::fmt;

use iopath_proto::fyod as pb;

/// How a fyod stores files.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum FileSystem {
    /// Striped by each file's layout; the storage servers pull from and push into the
    /// compute node's memory themselves.
    Pfs,
    /// One target per file; the fyod moves the data through its own 128 KiB buffers.
    Ufs,
}

/// The semantics of concurrent access to a shared file (yod's `-munix` / `-masync`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum IoMode {
    /// Reads and writes are atomic across fyods: each holds the file's token. The default.
    #[default]
    Munix,
    /// No token: concurrent writes to one region may interleave, and a read may see part of
    /// a write.
    Masync,
}

/// How the fyod serves a call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum CallKind {
    /// `read()`/`write()`: one at a time per fyod; while it runs the fyod dispatches nothing
    /// else. The default.
    #[default]
    Sync,
    /// `iread()`/`iwrite()`/`cread()`/`cwrite()`: run by the open file's worker, in order
    /// within the file, concurrently with other files.
    Async,
}

impl FileSystem {
    /// The wire value.
    pub fn to_wire(self) -> pb::FileSystem {
        match self {
            FileSystem::Pfs => pb::FileSystem::Pfs,
            FileSystem::Ufs => pb::FileSystem::Ufs,
        }
    }

    /// Parses a wire value; `None` for one this build does not know.
    pub fn from_wire(value: i32) -> Option<FileSystem> {
        match pb::FileSystem::try_from(value).ok()? {
            pb::FileSystem::Pfs => Some(FileSystem::Pfs),
            pb::FileSystem::Ufs => Some(FileSystem::Ufs),
            pb::FileSystem::Unspecified => None,
        }
    }
}

impl IoMode {
    /// The wire value.
    pub fn to_wire(self) -> pb::IoMode {
        match self {
            IoMode::Munix => pb::IoMode::Munix,
            IoMode::Masync => pb::IoMode::Masync,
        }
    }

    /// Parses a wire value: unspecified is the default (MUNIX); `None` for an unknown one.
    pub fn from_wire(value: i32) -> Option<IoMode> {
        match pb::IoMode::try_from(value).ok()? {
            pb::IoMode::Unspecified | pb::IoMode::Munix => Some(IoMode::Munix),
            pb::IoMode::Masync => Some(IoMode::Masync),
        }
    }
}

impl CallKind {
    /// The wire value.
    pub fn to_wire(self) -> pb::CallKind {
        match self {
            CallKind::Sync => pb::CallKind::Sync,
            CallKind::Async => pb::CallKind::Async,
        }
    }

    /// Parses a wire value: `Some(None)` for "the handle's default", `None` for an unknown
    /// value.
    pub fn from_wire(value: i32) -> Option<Option<CallKind>> {
        match pb::CallKind::try_from(value).ok()? {
            pb::CallKind::Unspecified => Some(None),
            pb::CallKind::Sync => Some(Some(CallKind::Sync)),
            pb::CallKind::Async => Some(Some(CallKind::Async)),
        }
    }
}

impl fmt::Display for FileSystem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            FileSystem::Pfs => "pfs",
            FileSystem::Ufs => "ufs",
        })
    }
}

impl fmt::Display for IoMode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            IoMode::Munix => "munix",
            IoMode::Masync => "masync",
        })
    }
}

impl fmt::Display for CallKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(match self {
            CallKind::Sync => "sync",
            CallKind::Async => "async",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wire_values_round_trip_and_unknown_ones_are_refused() {
        for fs in [FileSystem::Pfs, FileSystem::Ufs] {
            assert_eq!(FileSystem::from_wire(fs.to_wire() as i32), Some(fs));
        }
        assert_eq!(FileSystem::from_wire(0), None);
        assert_eq!(FileSystem::from_wire(9), None);
        for mode in [IoMode::Munix, IoMode::Masync] {
            assert_eq!(IoMode::from_wire(mode.to_wire() as i32), Some(mode));
        }
        assert_eq!(IoMode::from_wire(0), Some(IoMode::Munix));
        assert_eq!(IoMode::from_wire(-1), None);
        for kind in [CallKind::Sync, CallKind::Async] {
            assert_eq!(CallKind::from_wire(kind.to_wire() as i32), Some(Some(kind)));
        }
        assert_eq!(CallKind::from_wire(0), Some(None));
        assert_eq!(CallKind::from_wire(3), None);
    }
}
