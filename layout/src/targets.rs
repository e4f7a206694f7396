//! [`TargetMap`]: the file system's targets and the storage server holding each, as the
//! metadata service lists them.
//!
//! A target has one index in the whole file system (`iopath-OST0003` is index 3): the index
//! layouts name, its server answers to on the wire, and `lctl` and every table show (its name
//! around it: [`crate::names`]). A stack deals targets out to its servers in turn ([`deal`],
//! and back, [`dealt_index`]); nothing else translates indices.

use std::collections::BTreeMap;

use crate::layout::LayoutError;

/// Target index → the server holding it. A server is whatever names it where the map is used
/// (the fabric's NID, for clients and fyods): the arithmetic here needs only to copy and
/// order it, so this crate stays below the fabric.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetMap<S> {
    servers: BTreeMap<u32, S>,
}

impl<S> Default for TargetMap<S> {
    fn default() -> Self {
        TargetMap {
            servers: BTreeMap::new(),
        }
    }
}

impl<S: Copy + Ord> TargetMap<S> {
    /// The map of `targets` (index, server); refuses an index listed twice.
    pub fn new(targets: impl IntoIterator<Item = (u32, S)>) -> Result<TargetMap<S>, LayoutError> {
        let mut servers = BTreeMap::new();
        for (index, server) in targets {
            if servers.insert(index, server).is_some() {
                return Err(LayoutError::TargetListedTwice { target: index });
            }
        }
        Ok(TargetMap { servers })
    }

    /// The server holding target `index`.
    pub fn server(&self, index: u32) -> Result<S, LayoutError> {
        self.servers
            .get(&index)
            .copied()
            .ok_or(LayoutError::UnknownTarget { target: index })
    }

    /// Every target index, in increasing order.
    pub fn indices(&self) -> Vec<u32> {
        self.servers.keys().copied().collect()
    }

    /// Every server, once, in order.
    pub fn servers(&self) -> Vec<S> {
        let mut servers: Vec<S> = self.servers.values().copied().collect();
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

/// The targets of servers holding `counts[s]` targets each, dealt out in turn as Lustre
/// numbers a file system's OSTs when each server adds its own: the first target of every
/// server, then the second, and so on, a server with fewer left out of the later rounds.
/// Entry `i` is target index `i` as `(server, local)`: its server's position in `counts`, and
/// its place among that server's targets. Two servers of two: `(0,0) (1,0) (0,1) (1,1)`.
pub fn deal(counts: &[u32]) -> Vec<(usize, u32)> {
    let rounds = counts.iter().copied().max().unwrap_or(0);
    (0..rounds)
        .flat_map(|local| {
            counts
                .iter()
                .enumerate()
                .filter(move |&(_, &count)| local < count)
                .map(move |(server, _)| (server, local))
        })
        .collect()
}

/// [`deal`] the other way: the index of server `server`'s target `local`, or `None` if it
/// has no such target. With every server holding the same number, `local × servers + server`.
pub fn dealt_index(counts: &[u32], server: usize, local: u32) -> Option<u32> {
    if local >= *counts.get(server)? {
        return None;
    }
    let earlier_rounds: u32 = counts.iter().map(|&count| count.min(local)).sum();
    let earlier_in_round = counts[..server]
        .iter()
        .filter(|&&count| count > local)
        .count();
    Some(earlier_rounds + earlier_in_round as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_is_found_on_its_server_under_its_one_index() {
        let (a, b) = (10u32, 11u32);
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
        let listed = TargetMap::new([(0, 10u32), (0, 11u32)]);
        assert_eq!(listed, Err(LayoutError::TargetListedTwice { target: 0 }));
    }

    #[test]
    fn targets_are_dealt_in_turn_and_found_again_by_their_index() {
        assert_eq!(deal(&[2, 2]), [(0, 0), (1, 0), (0, 1), (1, 1)]);
        // A server with fewer targets sits out the later rounds.
        assert_eq!(
            deal(&[1, 3, 2]),
            [(0, 0), (1, 0), (2, 0), (1, 1), (2, 1), (1, 2)]
        );
        assert_eq!(deal(&[]), []);
        for counts in [vec![4, 4, 4], vec![1, 3, 2], vec![0, 2], vec![5]] {
            for (index, &(server, local)) in deal(&counts).iter().enumerate() {
                assert_eq!(dealt_index(&counts, server, local), Some(index as u32));
            }
            for (server, &count) in counts.iter().enumerate() {
                assert_eq!(dealt_index(&counts, server, count), None);
            }
            assert_eq!(dealt_index(&counts, counts.len(), 0), None);
        }
        // Even servers: local × servers + server.
        assert_eq!(dealt_index(&[4; 3], 2, 3), Some(3 * 3 + 2));
    }
}
