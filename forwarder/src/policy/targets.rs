//! File-system target indexes (as layouts name them) → the storage server holding each.
//!
//! The metadata service lists targets as (index, OSS NID) pairs. A target has one index in
//! the whole file system: the one layouts name, its server answers to, and `lctl` shows.

use std::collections::BTreeMap;

use iopath_fabric::Nid;
use iopath_mds::MdsTarget;

use crate::error::{ForwarderError, Result};

/// Where a target lives.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StorageTarget {
    /// The storage server.
    pub server: Nid,
    /// The target's index (in the whole file system).
    pub index: u32,
}

/// The map, built once from the metadata service's target list.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetMap {
    targets: BTreeMap<u32, StorageTarget>,
}

impl TargetMap {
    /// Builds the map; refuses a list naming one index twice.
    pub fn new(list: &[MdsTarget]) -> Result<TargetMap> {
        let mut targets = BTreeMap::new();
        for target in list {
            let entry = StorageTarget {
                server: target.nid,
                index: target.index,
            };
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
    fn each_target_is_found_on_its_server_under_its_one_index() {
        let map = TargetMap::new(&[t(3, 11), t(0, 10), t(2, 10), t(1, 11)]).unwrap();
        let server = |i| map.get(i).unwrap().server;
        assert_eq!(server(0), Nid::mem(10, 0));
        assert_eq!(server(2), Nid::mem(10, 0));
        assert_eq!(server(1), Nid::mem(11, 0));
        assert_eq!(map.get(3).unwrap().index, 3);
        assert_eq!(map.indexes(), [0, 1, 2, 3]);
        assert!(map.get(4).is_err());
    }

    #[test]
    fn a_repeated_index_is_refused() {
        assert!(TargetMap::new(&[t(0, 10), t(0, 11)]).is_err());
    }
}
