//! Status codes carried by ACK and REPLY frames and by RPC replies: errno values, as Lustre
//! sends them, so a failed call reads like a failed system call.
//!
//! Plain numbers at the bottom of the fabric: frames carry them, errors map to them, and the
//! RPC layer answers with them, all importing them from here. `frame` re-exports this module
//! as `frame::status`, beside the header fields that carry it.

/// Success.
pub const OK: u32 = 0;
/// No such entry: the region (or object, file) does not exist.
pub const NO_SUCH_REGION: u32 = errno::ENOENT;
/// The access falls outside the region.
pub const OUT_OF_RANGE: u32 = errno::ERANGE;
/// The access goes the wrong way: a GET from a sink or a PUT into a source.
pub const WRONG_DIRECTION: u32 = errno::EPERM;
/// A chunk arrived with a checksum that does not match its bytes.
pub const CHECKSUM_MISMATCH: u32 = errno::EBADMSG;
/// The receiver is at a configured limit; try again later.
pub const BUSY: u32 = errno::EBUSY;
/// An early reply: the server has this request and is still executing it (a resend found it
/// under way); the caller waits on for the reply instead of using up a resend, as a ptlrpc
/// early reply extends a client's deadline.
pub const IN_PROGRESS: u32 = errno::EALREADY;

/// The errno values iopath uses, with Linux's numbers.
pub mod errno {
    /// Operation not permitted.
    pub const EPERM: u32 = 1;
    /// No such file, object or region.
    pub const ENOENT: u32 = 2;
    /// I/O error.
    pub const EIO: u32 = 5;
    /// Bad handle.
    pub const EBADF: u32 = 9;
    /// Try again later: a queue is full (not EBUSY, which the RPC layer retries itself).
    pub const EAGAIN: u32 = 11;
    /// Busy: retry later.
    pub const EBUSY: u32 = 16;
    /// Already exists.
    pub const EEXIST: u32 = 17;
    /// No such device: no such target on this server.
    pub const ENODEV: u32 = 19;
    /// A path component that must be a directory is not one.
    pub const ENOTDIR: u32 = 20;
    /// A directory where a file was needed.
    pub const EISDIR: u32 = 21;
    /// Invalid argument.
    pub const EINVAL: u32 = 22;
    /// Too large.
    pub const EFBIG: u32 = 27;
    /// No space left.
    pub const ENOSPC: u32 = 28;
    /// Out of range.
    pub const ERANGE: u32 = 34;
    /// A path or name longer than allowed.
    pub const ENAMETOOLONG: u32 = 36;
    /// A directory that must be empty is not.
    pub const ENOTEMPTY: u32 = 39;
    /// Protocol error: a malformed request.
    pub const EPROTO: u32 = 71;
    /// Operation already in progress: the RPC layer's early reply, which it takes itself.
    pub const EALREADY: u32 = 114;
    /// Bad message: checksum mismatch.
    pub const EBADMSG: u32 = 74;
    /// Too many users: a server already serves as many clients as it may.
    pub const EUSERS: u32 = 87;
    /// Operation not supported (no such opcode or service).
    pub const EOPNOTSUPP: u32 = 95;
    /// Not connected: the client has disconnected from this server, or (from a server) the
    /// request was meant for an earlier start of it: reconnect and replay.
    pub const ENOTCONN: u32 = 107;
    /// The target has shut down.
    pub const ESHUTDOWN: u32 = 108;
    /// Timed out.
    pub const ETIMEDOUT: u32 = 110;
    /// Host unreachable.
    pub const EHOSTUNREACH: u32 = 113;
    /// In progress: the target is recovering; replay first, then try again.
    pub const EINPROGRESS: u32 = 115;
    /// Stale: the client was evicted; what it kept above `last_committed` is gone.
    pub const ESTALE: u32 = 116;
    /// Canceled: the client gave up on the request before it changed anything; not executed.
    pub const ECANCELED: u32 = 125;
}
