//! Network identifiers: `<address>@<net><n>`, as LNet writes them (`17@mem0`,
//! `127.0.0.1:7001@tcp0`).
//!
//! A NID is parsed once, at the edge (command line, stack file, descriptor), into a [`Nid`];
//! everything below passes the typed value. On the wire a NID is a fixed 24-byte record
//! ([`Nid::encode`]) so frame headers have a fixed size.

use std::fmt;
use std::net::{IpAddr, Ipv6Addr, SocketAddr};
use std::str::FromStr;

/// Why a NID did not parse. The crate's [`FabricError`](crate::FabricError) takes it in
/// (`From`), with the same words; it is a type of its own so that names sit below errors in
/// the crate, not beside them in a circle.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NidError {
    /// Text that is not a NID or a network name.
    #[error("bad NID {text:?}: {why}")]
    Text {
        /// What was given.
        text: String,
        /// What is wrong with it.
        why: String,
    },
    /// A wire form ([`Nid::decode`]) that is not a NID: the frame carrying it is malformed.
    #[error("malformed frame: {why}")]
    Wire {
        /// What is wrong with it.
        why: &'static str,
    },
}

/// The kind of network, which decides the LND (transport) that carries it and the form of
/// its addresses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NetType {
    /// In-memory: every node lives in one process; addresses are small integers.
    Mem,
    /// TCP: addresses are `ip:port` of the node's listener.
    Tcp,
    /// Cray Gemini (Titan's torus), emulated: numeric addresses, carried by the in-memory LND.
    Gni,
    /// InfiniBand (Spider's storage network), emulated: numeric addresses, carried by the
    /// in-memory LND.
    O2ib,
}

impl NetType {
    /// The name used in NIDs: `mem`, `tcp`.
    pub fn name(self) -> &'static str {
        match self {
            NetType::Mem => "mem",
            NetType::Tcp => "tcp",
            NetType::Gni => "gni",
            NetType::O2ib => "o2ib",
        }
    }

    /// Whether addresses on this network are socket addresses (else numbers).
    pub fn has_inet_addresses(self) -> bool {
        self == NetType::Tcp
    }

    fn code(self) -> u8 {
        match self {
            NetType::Mem => 1,
            NetType::Tcp => 2,
            NetType::Gni => 3,
            NetType::O2ib => 4,
        }
    }

    fn from_code(code: u8) -> Option<Self> {
        match code {
            1 => Some(NetType::Mem),
            2 => Some(NetType::Tcp),
            3 => Some(NetType::Gni),
            4 => Some(NetType::O2ib),
            _ => None,
        }
    }
}

/// A network: its type and number, e.g. `tcp0`, `mem3`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct NetId {
    /// Which LND carries the network.
    pub net_type: NetType,
    /// Distinguishes networks of one type (`tcp0`, `tcp1`).
    pub number: u16,
}

impl fmt::Display for NetId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}{}", self.net_type.name(), self.number)
    }
}

impl FromStr for NetId {
    type Err = NidError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| NidError::Text {
            text: text.to_owned(),
            why: why.to_owned(),
        };
        // The number is the trailing digits: `o2ib201` is type `o2ib`, number 201.
        let digits_at = text.trim_end_matches(|c: char| c.is_ascii_digit()).len();
        if digits_at == text.len() {
            return Err(bad("the network needs a number, as in tcp0 or mem1"));
        }
        let (name, number) = text.split_at(digits_at);
        let net_type = match name {
            "mem" => NetType::Mem,
            "tcp" => NetType::Tcp,
            "gni" => NetType::Gni,
            "o2ib" => NetType::O2ib,
            "" => return Err(bad("the network needs a type, as in tcp0 or mem1")),
            _ => return Err(bad("unknown network type (known: mem, tcp, gni, o2ib)")),
        };
        let number = number
            .parse()
            .map_err(|_| bad("network number above 65535"))?;
        Ok(NetId { net_type, number })
    }
}

/// A node's address on one network.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Addr {
    /// A node number on an in-memory network.
    Num(u32),
    /// The socket address of a node's TCP listener.
    Inet(SocketAddr),
}

impl fmt::Display for Addr {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Addr::Num(n) => write!(f, "{n}"),
            Addr::Inet(sa) => write!(f, "{sa}"),
        }
    }
}

/// A network identifier: one interface of one node.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Nid {
    /// The node's address on `net`.
    pub addr: Addr,
    /// The network the address belongs to.
    pub net: NetId,
}

/// Size of a NID on the wire.
pub const NID_WIRE_BYTES: usize = 24;

impl Nid {
    /// A NID on an in-memory network: `n@memN`.
    pub fn mem(n: u32, net_number: u16) -> Nid {
        Nid {
            addr: Addr::Num(n),
            net: NetId {
                net_type: NetType::Mem,
                number: net_number,
            },
        }
    }

    /// A NID on a TCP network: `ip:port@tcpN`.
    pub fn tcp(addr: SocketAddr, net_number: u16) -> Nid {
        Nid {
            addr: Addr::Inet(addr),
            net: NetId {
                net_type: NetType::Tcp,
                number: net_number,
            },
        }
    }

    /// The TCP socket address, if this is a TCP NID.
    pub fn socket_addr(&self) -> Option<SocketAddr> {
        match self.addr {
            Addr::Inet(sa) => Some(sa),
            Addr::Num(_) => None,
        }
    }

    /// Writes the fixed 24-byte wire form: type, net number, address kind, 16 address bytes
    /// (IPv6, IPv4-mapped, or a big-endian number in the last four), port, padding.
    pub fn encode(&self, out: &mut [u8; NID_WIRE_BYTES]) {
        out.fill(0);
        out[0] = self.net.net_type.code();
        out[1..3].copy_from_slice(&self.net.number.to_be_bytes());
        match self.addr {
            Addr::Num(n) => {
                out[3] = 1;
                out[16..20].copy_from_slice(&n.to_be_bytes());
            }
            Addr::Inet(sa) => {
                let (kind, v6) = match sa.ip() {
                    IpAddr::V4(v4) => (2, v4.to_ipv6_mapped()),
                    IpAddr::V6(v6) => (3, v6),
                };
                out[3] = kind;
                out[4..20].copy_from_slice(&v6.octets());
                out[20..22].copy_from_slice(&sa.port().to_be_bytes());
            }
        }
    }

    /// Parses the wire form written by [`Nid::encode`], rejecting unknown types, address
    /// kinds that do not fit the network type, and non-zero padding.
    pub fn decode(bytes: &[u8; NID_WIRE_BYTES]) -> Result<Nid, NidError> {
        let bad = |why: &'static str| NidError::Wire { why };
        let net_type = NetType::from_code(bytes[0]).ok_or(bad("unknown network type in NID"))?;
        let number = u16::from_be_bytes([bytes[1], bytes[2]]);
        if bytes[22..24] != [0, 0] {
            return Err(bad("non-zero padding in NID"));
        }
        let mut v6 = [0u8; 16];
        v6.copy_from_slice(&bytes[4..20]);
        let port = u16::from_be_bytes([bytes[20], bytes[21]]);
        let addr = match (net_type.has_inet_addresses(), bytes[3]) {
            (false, 1) => {
                if bytes[4..16].iter().any(|&b| b != 0) || port != 0 {
                    return Err(bad("stray address bytes in an in-memory NID"));
                }
                Addr::Num(u32::from_be_bytes([
                    bytes[16], bytes[17], bytes[18], bytes[19],
                ]))
            }
            (true, 2) => {
                let ip = Ipv6Addr::from(v6)
                    .to_ipv4_mapped()
                    .ok_or(bad("IPv4 NID whose address is not IPv4-mapped"))?;
                Addr::Inet(SocketAddr::new(IpAddr::V4(ip), port))
            }
            (true, 3) => Addr::Inet(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(v6)), port)),
            _ => return Err(bad("NID address kind does not match its network type")),
        };
        Ok(Nid {
            addr,
            net: NetId { net_type, number },
        })
    }
}

impl fmt::Display for Nid {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}@{}", self.addr, self.net)
    }
}

impl FromStr for Nid {
    type Err = NidError;

    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let bad = |why: &str| NidError::Text {
            text: text.to_owned(),
            why: why.to_owned(),
        };
        let (addr, net) = text.rsplit_once('@').ok_or_else(|| {
            bad("expected <address>@<net><n>, as in 17@mem0 or 127.0.0.1:7001@tcp0")
        })?;
        let net: NetId = net.parse().map_err(|e| match e {
            NidError::Text { why, .. } => bad(&why),
            other => other,
        })?;
        if addr.is_empty() {
            return Err(bad("the address before '@' is empty"));
        }
        let addr = match net.net_type {
            NetType::Mem | NetType::Gni | NetType::O2ib => Addr::Num(
                addr.parse()
                    .map_err(|_| bad("an in-memory address is a number from 0 to 4294967295"))?,
            ),
            NetType::Tcp => Addr::Inet(
                addr.parse()
                    .map_err(|_| bad("a TCP address is ip:port, as in 127.0.0.1:7001"))?,
            ),
        };
        Ok(Nid { addr, net })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_prints_both_forms() {
        for text in [
            "17@mem0",
            "0@mem65535",
            "127.0.0.1:7001@tcp0",
            "[::1]:9@tcp3",
        ] {
            let nid: Nid = text.parse().unwrap();
            assert_eq!(nid.to_string(), text);
        }
        let nid: Nid = "127.0.0.1:7001@tcp2".parse().unwrap();
        assert_eq!(
            nid.net,
            NetId {
                net_type: NetType::Tcp,
                number: 2
            }
        );
        assert_eq!(nid.socket_addr(), Some("127.0.0.1:7001".parse().unwrap()));
    }

    #[test]
    fn malformed_nids_say_what_is_wrong() {
        let cases = [
            ("", "expected <address>@"),
            ("17", "expected <address>@"),
            ("17@", "needs a number"),
            ("17@mem", "needs a number"),
            ("@mem0", "empty"),
            ("17@0", "needs a type"),
            ("17@ib0", "unknown network type"),
            ("17@gnix1", "unknown network type"),
            ("1.2.3.4:5@o2ib1", "in-memory address"),
            ("17@mem0x", "needs a number"),
            ("17@mem65536", "above 65535"),
            ("x@mem0", "in-memory address"),
            ("-1@mem0", "in-memory address"),
            ("127.0.0.1@tcp0", "ip:port"),
            ("17@tcp0", "ip:port"),
            ("127.0.0.1:99999@tcp0", "ip:port"),
        ];
        for (text, expected) in cases {
            let err = text.parse::<Nid>().unwrap_err().to_string();
            assert!(
                err.contains(expected),
                "{text:?}: {err:?} should contain {expected:?}"
            );
            assert!(
                err.contains(text),
                "{text:?}: the error should quote the input: {err}"
            );
        }
    }

    #[test]
    fn wire_form_round_trips_and_rejects_garbage() {
        for text in [
            "17@mem0",
            "4294967295@mem9",
            "10.1.2.3:7001@tcp0",
            "[fe80::1]:1@tcp1",
        ] {
            let nid: Nid = text.parse().unwrap();
            let mut wire = [0u8; NID_WIRE_BYTES];
            nid.encode(&mut wire);
            assert_eq!(Nid::decode(&wire).unwrap(), nid);
        }
        let mut wire = [0u8; NID_WIRE_BYTES];
        assert!(Nid::decode(&wire).is_err(), "all zeros is no NID");
        Nid::mem(3, 0).encode(&mut wire);
        wire[23] = 1;
        assert!(Nid::decode(&wire).is_err(), "padding must be zero");
        Nid::mem(3, 0).encode(&mut wire);
        wire[3] = 2;
        assert!(
            Nid::decode(&wire).is_err(),
            "a mem NID with an IP address kind"
        );
    }
}
