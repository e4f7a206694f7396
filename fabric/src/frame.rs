//! The fabric's wire frame: a fixed 112-byte header, as LNet's `lnet_hdr`, then the payload.
//!
//! Four message kinds carry everything, exactly as in LNet, and ptlrpc-style RPC rides on
//! them by portal:
//!
//! | kind  | portal            | what it is                                  | payload      |
//! |-------|-------------------|---------------------------------------------|--------------|
//! | PUT   | a service portal  | an RPC request (`match_bits` = xid)         | request body |
//! | PUT   | [`REPLY_PORTAL`]  | an RPC reply (`match_bits` = xid)           | reply body   |
//! | PUT   | [`BULK_PORTAL`]   | a pushed bulk chunk into a sink region      | the bytes    |
//! | ACK   | —                 | the owner's answer to a pushed chunk        | none         |
//! | GET   | [`BULK_PORTAL`]   | a request to pull a chunk of a source region| none         |
//! | REPLY | —                 | the chunk a GET asked for                   | the bytes    |
//!
//! A HELLO opens every TCP connection and names the node that opened it.
//!
//! The header's last four bytes name the traced request a frame belongs to (0: none), so a
//! request can be followed hop by hop (see [`crate::trace`]).
//!
//! [`Header::decode`] is the only way bytes become a header: it checks the magic, version,
//! kind, NIDs and that the payload length is within the receiver's limit *before* anything is
//! allocated for the payload.

use bytes::{BufMut, Bytes};

use crate::error::FabricError;
use crate::nid::{NID_WIRE_BYTES, Nid};

/// Size of an encoded [`Header`].
pub const HEADER_BYTES: usize = 112;
/// The first two bytes of every frame: `iP`.
pub const MAGIC: u16 = 0x6950;
/// The frame format version this build speaks.
pub const VERSION: u8 = 1;

/// Portal of RPC replies (match bits = xid).
pub const REPLY_PORTAL: u32 = 1;
/// Portal of bulk chunks (match bits = region id).
pub const BULK_PORTAL: u32 = 2;
/// Portal of router pings: every node answers them itself, with an empty reply.
pub const PING_PORTAL: u32 = 3;
/// The first portal available to RPC services.
pub const FIRST_SERVICE_PORTAL: u32 = 16;

/// The kind of a frame.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Kind {
    /// Carries a payload to a portal: RPC requests and replies, pushed bulk.
    Put,
    /// Acknowledges a bulk PUT chunk; `status` says whether it was taken.
    Ack,
    /// Asks the owner of a region for `length` bytes at `offset`.
    Get,
    /// Answers a GET with the bytes (or a non-zero `status`).
    Reply,
    /// Opens a TCP connection: `source` is the connecting node, `target` whom it meant to reach.
    Hello,
}

impl Kind {
    fn code(self) -> u8 {
        match self {
            Kind::Put => 1,
            Kind::Ack => 2,
            Kind::Get => 3,
            Kind::Reply => 4,
            Kind::Hello => 5,
        }
    }

    fn from_code(code: u8) -> Option<Kind> {
        Some(match code {
            1 => Kind::Put,
            2 => Kind::Ack,
            3 => Kind::Get,
            4 => Kind::Reply,
            5 => Kind::Hello,
            _ => return None,
        })
    }
}

/// Status codes carried by ACK and REPLY frames and by RPC replies (errno values); they live
/// at the bottom of the crate, in [`crate::status`], so that errors can name them too.
pub use crate::status;

/// The fixed part of every frame.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Header {
    /// What the frame is.
    pub kind: Kind,
    /// Frame flags; bit 0 set means `checksum` is CRC32C rather than CRC32.
    pub flags: u8,
    /// The node that sent the message (the final source, even through routers).
    pub source: Nid,
    /// The node the message is for (the final target, even through routers).
    pub target: Nid,
    /// Which service or table the message is for (PUT, GET).
    pub portal: u32,
    /// Success or a [`status`] code (ACK, REPLY, RPC replies).
    pub status: u32,
    /// Selects the entry within the portal: the xid of an RPC, the id of a bulk region.
    pub match_bits: u64,
    /// Pairs an ACK or REPLY with the operation that asked for it. For RPC requests: the
    /// oldest xid the sender still waits on, so the server can forget older saved replies.
    pub cookie: u64,
    /// Offset within the region (GET, bulk PUT, REPLY).
    pub offset: u64,
    /// Extra data: the opcode of an RPC request.
    pub hdr_data: u64,
    /// For GET: bytes asked for. Otherwise equal to `payload_len`.
    pub length: u32,
    /// Bytes of payload following the header.
    pub payload_len: u32,
    /// Checksum of the payload (bulk REPLY and PUT), by the sender.
    pub checksum: u32,
    /// The traced request this frame belongs to, or 0 (see [`crate::trace`]).
    pub trace: u32,
}

/// Flag bit: `checksum` is CRC32C.
pub const FLAG_CRC32C: u8 = 1;

impl Header {
    /// Whether the frame carries bulk bytes: a pull's REPLY or a pushed chunk.
    pub fn is_bulk(&self) -> bool {
        self.kind == Kind::Reply || (self.kind == Kind::Put && self.portal == BULK_PORTAL)
    }

    /// A header of `kind` from `source` to `target` with every other field zero.
    pub fn new(kind: Kind, source: Nid, target: Nid) -> Header {
        Header {
            kind,
            flags: 0,
            source,
            target,
            portal: 0,
            status: 0,
            match_bits: 0,
            cookie: 0,
            offset: 0,
            hdr_data: 0,
            length: 0,
            payload_len: 0,
            checksum: 0,
            trace: 0,
        }
    }

    /// Appends the 112-byte wire form to `out`.
    pub fn encode(&self, out: &mut impl BufMut) {
        out.put_u16(MAGIC);
        out.put_u8(VERSION);
        out.put_u8(self.kind.code());
        out.put_u8(self.flags);
        out.put_bytes(0, 3);
        let mut nid = [0u8; NID_WIRE_BYTES];
        self.source.encode(&mut nid);
        out.put_slice(&nid);
        self.target.encode(&mut nid);
        out.put_slice(&nid);
        out.put_u32(self.portal);
        out.put_u32(self.status);
        out.put_u64(self.match_bits);
        out.put_u64(self.cookie);
        out.put_u64(self.offset);
        out.put_u64(self.hdr_data);
        out.put_u32(self.length);
        out.put_u32(self.payload_len);
        out.put_u32(self.checksum);
        out.put_u32(self.trace);
    }

    /// Parses a header, refusing anything malformed and any payload longer than
    /// `payload_max_bytes`. `bytes` must hold at least [`HEADER_BYTES`]; the rest is ignored.
    pub fn decode(bytes: &[u8], payload_max_bytes: u32) -> Result<Header, FabricError> {
        let bad = |why| FabricError::MalformedFrame { why };
        let b: &[u8; HEADER_BYTES] = bytes
            .get(..HEADER_BYTES)
            .and_then(|b| b.try_into().ok())
            .ok_or(bad("frame shorter than a header"))?;
        let u32_at = |i: usize| u32::from_be_bytes([b[i], b[i + 1], b[i + 2], b[i + 3]]);
        let u64_at = |i: usize| (u64::from(u32_at(i)) << 32) | u64::from(u32_at(i + 4));
        if u16::from_be_bytes([b[0], b[1]]) != MAGIC {
            return Err(bad("bad magic: not an iopath fabric frame"));
        }
        if b[2] != VERSION {
            return Err(bad("unsupported frame version"));
        }
        let kind = Kind::from_code(b[3]).ok_or(bad("unknown frame kind"))?;
        let flags = b[4];
        if flags & !FLAG_CRC32C != 0 {
            return Err(bad("unknown frame flags"));
        }
        if b[5..8] != [0, 0, 0] {
            return Err(bad("non-zero padding in header"));
        }
        let nid = |at: usize| -> Result<Nid, FabricError> {
            let raw: &[u8; NID_WIRE_BYTES] = b[at..at + NID_WIRE_BYTES]
                .try_into()
                .map_err(|_| bad("short NID"))?;
            Ok(Nid::decode(raw)?)
        };
        let header = Header {
            kind,
            flags,
            source: nid(8)?,
            target: nid(32)?,
            portal: u32_at(56),
            status: u32_at(60),
            match_bits: u64_at(64),
            cookie: u64_at(72),
            offset: u64_at(80),
            hdr_data: u64_at(88),
            length: u32_at(96),
            payload_len: u32_at(100),
            checksum: u32_at(104),
            trace: u32_at(108),
        };
        if header.payload_len > payload_max_bytes {
            return Err(FabricError::TooLarge {
                what: "frame payload",
                bytes: u64::from(header.payload_len),
                max_bytes: u64::from(payload_max_bytes),
            });
        }
        match header.kind {
            Kind::Get | Kind::Ack | Kind::Hello if header.payload_len != 0 => {
                return Err(bad("GET, ACK and HELLO frames carry no payload"));
            }
            Kind::Put | Kind::Reply if header.length != header.payload_len => {
                return Err(bad("length and payload length disagree"));
            }
            _ => {}
        }
        Ok(header)
    }
}

/// A header and its payload: the unit every transport moves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Message {
    /// The fixed part.
    pub header: Header,
    /// The bytes that follow; a slice of the sender's buffer or of the received frame.
    pub payload: Bytes,
}

impl Message {
    /// A message with `header` (whose length fields are set from `payload`) and `payload`.
    pub fn new(mut header: Header, payload: Bytes) -> Message {
        let len = u32::try_from(payload.len()).expect("payloads are bounded by the frame limit");
        header.payload_len = len;
        if header.kind != Kind::Get {
            header.length = len;
        }
        Message { header, payload }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Header {
        Header {
            kind: Kind::Reply,
            flags: FLAG_CRC32C,
            source: "12@mem0".parse().unwrap(),
            target: "127.0.0.1:7001@tcp0".parse().unwrap(),
            portal: 7,
            status: 3,
            match_bits: u64::MAX - 1,
            cookie: 0x0102_0304_0506_0708,
            offset: 1 << 40,
            hdr_data: 9,
            length: 4096,
            payload_len: 4096,
            checksum: 0xDEAD_BEEF,
            trace: 0x5EED_0001,
        }
    }

    #[test]
    fn round_trips() {
        let header = sample();
        let mut wire = Vec::new();
        header.encode(&mut wire);
        assert_eq!(wire.len(), HEADER_BYTES);
        assert_eq!(Header::decode(&wire, 1 << 20).unwrap(), header);
    }

    #[test]
    fn refuses_oversized_payloads_before_allocating() {
        let mut wire = Vec::new();
        sample().encode(&mut wire);
        let err = Header::decode(&wire, 4095).unwrap_err();
        assert!(matches!(
            err,
            FabricError::TooLarge {
                bytes: 4096,
                max_bytes: 4095,
                ..
            }
        ));
    }

    #[test]
    fn refuses_every_single_byte_corruption_of_fixed_fields() {
        let mut wire = Vec::new();
        sample().encode(&mut wire);
        // Magic, version, kind, flags, padding: any change must be refused.
        for index in [0, 1, 2, 3, 5, 6, 7] {
            let mut bad = wire.clone();
            bad[index] ^= 0x80;
            assert!(Header::decode(&bad, u32::MAX).is_err(), "byte {index}");
        }
        assert!(Header::decode(&wire[..HEADER_BYTES - 1], u32::MAX).is_err());
    }

    #[test]
    fn get_frames_carry_no_payload() {
        let mut header = sample();
        header.kind = Kind::Get;
        let mut wire = Vec::new();
        header.encode(&mut wire);
        assert!(Header::decode(&wire, u32::MAX).is_err());
    }
}
