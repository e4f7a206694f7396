//! [`TargetMap`]: the file system's targets and the storage server holding each, as the
//! metadata service lists them.
//!
//! A target has one index in the whole file system (`iopath-OST0003` is index 3): the index
//! layouts name, its server answers to on the wire, and `lctl` and every table show (its name
//! around it: [`crate::names`]). A stack deals targets out to its servers in turn; nothing
//! else translates indices.

use std::collections::BTreeMap;

use iopath_fabric::Nid;

use crate::layout::LayoutError;

/// Target index → the server holding it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TargetMap {
    servers: BTreeMap<u32, Nid>,
}

impl TargetMap {
    /// The map of `targets` (index, server); refuses an index listed twice.
    pub fn new(targets: impl IntoIterator<Item = (u32, Nid)>) -> Result<TargetMap, LayoutError> {
        let mut servers = BTreeMap::new();
        for (index, server) in targets {
            if servers.insert(index, server).is_some() {
                return Err(LayoutError::TargetListedTwice { target: index });
            }
        }
        Ok(TargetMap { servers })
    }

    /// The server holding target `index`.
    pub fn server(&self, index: u32) -> Result<Nid, LayoutError> {
        self.servers
            .get(&index)
            .copied()
            .ok_or(LayoutError::UnknownTarget { target: index })
    }

    /// Every target index, in increasing order.
    pub fn indices(&self) -> Vec<u32> {
        self.servers.keys().copied().collect()
    }

    /// Every server, once, in NID order.
    pub fn servers(&self) -> Vec<Nid> {
        let mut servers: Vec<Nid> = self.servers.values().copied().collect();
        servers.sort();
        servers.dedup();
        servers
    }

    /// How many targets there are.
    pub fn len(&self) -> usize {
        self.servers.len()
    }

    /// True when there are none.
    pub fn is_empty(&self) -> bool {
        self.servers.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_is_found_on_its_server_under_its_one_index() {
        let (a, b) = (Nid::mem(10, 0), Nid::mem(11, 0));
        let map = TargetMap::new([(3, b), (0, a), (2, a), (1, b)]).expect("valid");
        assert_eq!(map.server(0), Ok(a));
        assert_eq!(map.server(2), Ok(a));
        assert_eq!(map.server(1), Ok(b));
        assert_eq!(map.server(3), Ok(b));
        assert_eq!(map.indices(), [0, 1, 2, 3]);
        assert_eq!(map.servers(), [a, b]);
        assert_eq!(map.len(), 4);
        assert_eq!(map.server(4), Err(LayoutError::UnknownTarget { target: 4 }));
    }

    #[test]
    fn a_repeated_index_is_refused() {
        let listed = TargetMap::new([(0, Nid::mem(10, 0)), (0, Nid::mem(11, 0))]);
        assert_eq!(listed, Err(LayoutError::TargetListedTwice { target: 0 }));
    }
}
