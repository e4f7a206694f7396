//! [`ClientId`]: who a storage server knows a client as, across restarts of either (Lustre's
//! client UUID). The server records it durably before answering its first connect, waits for
//! it to replay after a crash, and evicts it if it does not come back.

use std::fmt;

use iopath_fabric::Nid;

/// A client's identity at the storage servers.
///
/// Compute nodes are given theirs (a stack numbers its nodes; `iopath lfs` takes the time and
/// its process id). A fyod derives its own from its NID ([`ClientId::of_fyod`]), in a range no
/// compute node is given, and connects a second time for the PFS writes it forwards by
/// descriptor ([`ClientId::pfs_link`]), so a server waits for each separately.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct ClientId(u64);

/// The top byte of every fyod's id: no compute node is given one in this range.
const FYOD_TAG: u64 = 0xF7 << 56;
/// Set in a fyod's id to name its PFS descriptor link.
const PFS_LINK_BIT: u64 = 1 << 48;

impl ClientId {
    /// The id `value`, as a compute node is given it.
    pub const fn new(value: u64) -> ClientId {
        ClientId(value)
    }

    /// The id of the fyod at `nid`: FNV-1a of the NID's text, tagged as a fyod's, so it stays
    /// the same across the fyod's restarts.
    pub fn of_fyod(nid: Nid) -> ClientId {
        let mut hash: u64 = 0xcbf2_9ce4_8422_2325;
        for byte in nid.to_string().bytes() {
            hash ^= u64::from(byte);
            hash = hash.wrapping_mul(0x0000_0100_0000_01b3);
        }
        ClientId(FYOD_TAG | (hash & 0x00FF_FFFF_FFFF_FFFF & !PFS_LINK_BIT))
    }

    /// This fyod's second identity: the connection its PFS writes by descriptor go over,
    /// whose kept writes are descriptors of compute nodes' memory rather than bytes.
    pub fn pfs_link(self) -> ClientId {
        ClientId(self.0 | PFS_LINK_BIT)
    }

    /// The value on the wire.
    pub fn get(self) -> u64 {
        self.0
    }
}

impl From<u64> for ClientId {
    fn from(value: u64) -> ClientId {
        ClientId(value)
    }
}

impl fmt::Display for ClientId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_fyods_ids_are_stable_tagged_and_distinct_from_its_link() {
        let nid = Nid::mem(20, 0);
        let fyod = ClientId::of_fyod(nid);
        assert_eq!(fyod, ClientId::of_fyod(nid), "the same across restarts");
        assert_eq!(fyod.get() >> 56, 0xF7, "in the fyods' range");
        assert_ne!(fyod, fyod.pfs_link());
        assert_eq!(fyod.pfs_link(), fyod.pfs_link().pfs_link());
        assert_ne!(ClientId::of_fyod(Nid::mem(21, 0)), fyod);
        assert_eq!(ClientId::from(7).to_string(), "7");
    }
}
