//! The metadata service: its messages (namespace operations and file layouts), generated from
//! `mds.proto`, with its portal and opcodes.

tonic::include_proto!("iopath.mds");

/// The portal the metadata service listens on (Lustre's MDS_REQUEST_PORTAL is 12; iopath's
/// service portals start at 16, so 12 + 32).
pub const PORTAL: u32 = 44;

/// The operations, as RPC opcodes.
pub mod opcode {
    /// `MkdirRequest` → `AttributesReply`.
    pub const MKDIR: u32 = 1;
    /// `CreateRequest` → `AttributesReply` (with the layout).
    pub const CREATE: u32 = 2;
    /// `PathRequest` → `AttributesReply` (regular files only, with the layout).
    pub const OPEN: u32 = 3;
    /// `PathRequest` → `AttributesReply`.
    pub const STAT: u32 = 4;
    /// `ReaddirRequest` → `ReaddirReply`.
    pub const READDIR: u32 = 5;
    /// `UnlinkRequest` → `UnlinkReply` (the removed file's layout).
    pub const UNLINK: u32 = 6;
    /// `PathRequest` → `EmptyReply`.
    pub const RMDIR: u32 = 7;
    /// `RenameRequest` → `RenameReply` (a replaced file's layout).
    pub const RENAME: u32 = 8;
    /// `SetStripeRequest` → `EmptyReply`.
    pub const SETSTRIPE: u32 = 9;
    /// `PathRequest` → `GetStripeReply`.
    pub const GETSTRIPE: u32 = 10;
    /// `TargetsRequest` → `TargetsReply`.
    pub const TARGETS: u32 = 11;
    /// `SetAttrRequest` → `AttributesReply`.
    pub const SETATTR: u32 = 12;
    /// `InoRequest` → `AttributesReply` (a file's with its layout).
    pub const STAT_INO: u32 = 13;
    /// `LinkRequest` → `AttributesReply`.
    pub const LINK: u32 = 14;
    /// `SymlinkRequest` → `AttributesReply`.
    pub const SYMLINK: u32 = 15;
    /// `MknodRequest` → `AttributesReply`.
    pub const MKNOD: u32 = 16;
    /// `DropOrphanRequest` → `UnlinkReply`.
    pub const DROP_ORPHAN: u32 = 17;
    /// `OrphansRequest` → `OrphansReply`.
    pub const ORPHANS: u32 = 18;

    /// The opcode's name, lower case (`write`), for per-operation counters.
    pub fn name(opcode: u32) -> Option<&'static str> {
        Some(match opcode {
            MKDIR => "mkdir",
            CREATE => "create",
            OPEN => "open",
            STAT => "stat",
            READDIR => "readdir",
            UNLINK => "unlink",
            RMDIR => "rmdir",
            RENAME => "rename",
            SETSTRIPE => "setstripe",
            GETSTRIPE => "getstripe",
            TARGETS => "targets",
            SETATTR => "setattr",
            STAT_INO => "stat_ino",
            LINK => "link",
            SYMLINK => "symlink",
            MKNOD => "mknod",
            DROP_ORPHAN => "drop_orphan",
            ORPHANS => "orphans",
            _ => return None,
        })
    }
}
