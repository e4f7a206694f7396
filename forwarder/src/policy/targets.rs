//! File-system target indexes (as layouts name them) → the storage server holding each and
//! the target's index *on that server*.
//!
//! The metadata service lists targets as (index, OSS NID) pairs; an OSS numbers its own
//! targets 0, 1, ... The rule iopath uses: an OSS's targets, taken in increasing file-system
//! index, are its local targets 0, 1, ... (an OSS with file-system targets 2 and 5 serves
//! them as its targets 0 and 1).

use std::collections::BTreeMap;

use iopath_fabric::Nid;
use iopath_mds::MdsTarget;

use crate::error::{ForwarderError, Result};

/// Where a target lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageTarget {
    /// The storage server.
    pub server: Nid,
    /// The target's index on that server.
    pub local_index: u32,
}

/// The map, built once from the metadata service's target list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetMap {
    targets: BTreeMap<u32, StorageTarget>,
}

impl TargetMap {
    /// Builds the map; refuses a list naming one index twice.
    pub fn new(list: &[MdsTarget]) -> Result<TargetMap> {
        let mut sorted: Vec<MdsTarget> = list.to_vec();
        sorted.sort_by_key(|t| t.index);
        let mut targets = BTreeMap::new();
        let mut per_server: BTreeMap<Nid, u32> = BTreeMap::new();
        for target in sorted {
            let local = per_server.entry(target.nid).or_insert(0);
            let entry = StorageTarget {
                server: target.nid,
                local_index: *local,
            };
            *local += 1;
            if targets.insert(target.index, entry).is_some() {
                return Err(ForwarderError::invalid(
                    "target list",
                    format!("target index {} is listed twice", target.index),
                ));
            }
        }
        Ok(TargetMap { targets })
    }

    /// Where file-system target `index` lives.
    pub fn get(&self, index: u32) -> Result<StorageTarget> {
        self.targets.get(&index).copied().ok_or_else(|| {
            ForwarderError::invalid("target", format!("the file system has no target {index}"))
        })
    }

    /// Every target index, in order.
    pub fn indexes(&self) -> Vec<u32> {
        self.targets.keys().copied().collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(index: u32, nid: u32) -> MdsTarget {
        MdsTarget {
            index,
            nid: Nid::mem(nid, 0),
        }
    }

    #[test]
    fn local_indexes_follow_file_system_order_per_server() {
        let map = TargetMap::new(&[t(3, 11), t(0, 10), t(2, 10), t(1, 11)]).unwrap();
        let local = |i| {
            let s = map.get(i).unwrap();
            (s.server, s.local_index)
        };
        assert_eq!(local(0), (Nid::mem(10, 0), 0));
        assert_eq!(local(2), (Nid::mem(10, 0), 1));
        assert_eq!(local(1), (Nid::mem(11, 0), 0));
        assert_eq!(local(3), (Nid::mem(11, 0), 1));
        assert_eq!(map.indexes(), [0, 1, 2, 3]);
        assert!(map.get(4).is_err());
    }

    #[test]
    fn a_repeated_index_is_refused() {
        assert!(TargetMap::new(&[t(0, 10), t(0, 11)]).is_err());
    }
}
