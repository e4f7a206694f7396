//! Which client writes to which target: the launcher's default order and the Spider paper's
//! placement (§5: for each storage server, the N nearest free clients).

use std::collections::HashSet;

use serde::{Deserialize, Serialize};

use crate::coord::Coord;
use crate::error::{Result, TopologyError};
use crate::torus::Torus;

/// A storage target (an OST) and where its traffic goes in the torus.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Target {
    /// The target's index (`OST0000` is 0).
    pub index: u32,
    /// The server (OSS) that serves it.
    pub server: u32,
    /// The torus router its traffic is addressed to: the OSS itself when storage is
    /// direct-attached, the LNET router that projects the OSS into the torus when routed.
    pub anchor: Coord,
}

/// One client writing one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct Pair {
    /// The client (one IOR rank on its own node).
    pub client: Coord,
    /// The target it writes.
    pub target: Target,
}

/// How a set of clients was matched to targets.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum PlacementKind {
    /// Rank `i` on the `i`-th node the launcher hands out, writing target `i`.
    LauncherOrder,
    /// The Spider paper's algorithm over the whole machine.
    Placed,
    /// The same algorithm, but only over the nodes the launcher gave the job.
    Confined,
}

/// A set of client–target pairs, each client used at most once.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Placement {
    /// How the pairs were chosen.
    pub kind: PlacementKind,
    /// One pair per target, in the order the targets were given.
    pub pairs: Vec<Pair>,
}

impl Placement {
    /// The default: rank `i` runs on `clients[i]` (the launcher's order) and writes
    /// `targets[i]` (IOR file-per-process with `lfs setstripe` putting file `i` on target `i`).
    pub fn launcher_order(clients: &[Coord], targets: &[Target]) -> Result<Self> {
        if clients.len() < targets.len() {
            return Err(TopologyError::NotEnoughClients {
                needed: targets.len(),
                available: clients.len(),
            });
        }
        check_distinct(clients)?;
        let pairs = targets
            .iter()
            .zip(clients)
            .map(|(&target, &client)| Pair { client, target })
            .collect();
        Ok(Self {
            kind: PlacementKind::LauncherOrder,
            pairs,
        })
    }

    /// The Spider paper's placement: for each server in turn (in the order its first target
    /// appears), compute the hop distance from every free client to the server's anchor,
    /// take the N nearest (N = that server's targets), and remove them from the free set.
    /// Ties go to the client listed first in `available`, so the result is deterministic.
    pub fn nearest_free(
        torus: &Torus,
        available: &[Coord],
        targets: &[Target],
        kind: PlacementKind,
    ) -> Result<Self> {
        if available.len() < targets.len() {
            return Err(TopologyError::NotEnoughClients {
                needed: targets.len(),
                available: available.len(),
            });
        }
        check_distinct(available)?;
        for &client in available {
            torus.check(client)?;
        }
        for target in targets {
            torus.check(target.anchor)?;
        }

        // Servers in order of first appearance, each with its targets.
        let mut servers: Vec<(u32, Coord, Vec<usize>)> = Vec::new();
        for (slot, target) in targets.iter().enumerate() {
            match servers.iter_mut().find(|(s, _, _)| *s == target.server) {
                Some((_, _, slots)) => slots.push(slot),
                None => servers.push((target.server, target.anchor, vec![slot])),
            }
        }

        let mut taken = vec![false; available.len()];
        let mut chosen: Vec<Option<Coord>> = vec![None; targets.len()];
        let mut candidates: Vec<(u32, usize)> = Vec::with_capacity(available.len());
        for (_, anchor, slots) in &servers {
            candidates.clear();
            candidates.extend(
                available
                    .iter()
                    .enumerate()
                    .filter(|&(i, _)| !taken[i])
                    .map(|(i, &c)| (torus.hop_distance(c, *anchor), i)),
            );
            let n = slots.len();
            // The free set always holds enough: we checked available >= targets up front and
            // every earlier server took exactly its own count.
            assert!(candidates.len() >= n);
            if candidates.len() > n {
                candidates.select_nth_unstable(n - 1);
            }
            let nearest = &mut candidates[..n];
            nearest.sort_unstable();
            for (&(_, i), &slot) in nearest.iter().zip(slots) {
                assert!(!taken[i], "a client is never given two targets");
                taken[i] = true;
                chosen[slot] = Some(available[i]);
            }
        }

        let pairs = targets
            .iter()
            .zip(chosen)
            .map(|(&target, client)| Pair {
                client: client.unwrap_or_else(|| unreachable!("every target slot was filled")),
                target,
            })
            .collect();
        Ok(Self { kind, pairs })
    }

    /// The client of each pair, in pair order.
    pub fn clients(&self) -> impl Iterator<Item = Coord> + '_ {
        self.pairs.iter().map(|p| p.client)
    }
}

fn check_distinct(clients: &[Coord]) -> Result<()> {
    let mut seen = HashSet::with_capacity(clients.len());
    for &c in clients {
        if !seen.insert(c) {
            return Err(TopologyError::DuplicateClient {
                coord: c.to_string(),
            });
        }
    }
    Ok(())
}
