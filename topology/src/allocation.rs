//! Where a job's nodes come from on a machine other jobs share. Cray's ALPS hands a job the
//! free nodes in launcher order; on a busy machine those are the free runs left between other
//! jobs', so a job's nodes are scattered in pieces over the torus instead of lying in one
//! stretch. The Spider paper's §4 runs were made on Jaguar in service; this draws such
//! allocations to see whether scattering explains the heavy tail it saw (links with 35–70
//! client–OST pairs), which contiguous jobs do not give.
//!
//! Both figures of the occupancy — the busy share and the mean free run — are *assumed*: the
//! paper says nothing of its machine's load. The study sweeps them.

use crate::coord::Coord;
use crate::error::{Result, TopologyError};
use crate::random::SplitMix64;

/// A machine whose nodes, in launcher order, alternate busy runs (other jobs) and free runs.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct BusyMachine {
    /// The share of nodes other jobs hold, in `[0, 1)`.
    pub busy_share: f64,
    /// Mean length of a free run, nodes (at least 1). Busy runs average
    /// `free_run_nodes · busy_share / (1 − busy_share)`, so `busy_share` of the nodes are busy.
    pub free_run_nodes: f64,
}

impl BusyMachine {
    /// A machine with `busy_share` of its nodes busy, in runs between free runs of
    /// `free_run_nodes` on average.
    pub fn new(busy_share: f64, free_run_nodes: f64) -> Result<Self> {
        if !(0.0..1.0).contains(&busy_share) {
            return Err(TopologyError::NotInRange {
                what: "busy share",
                value: busy_share,
                range: "[0, 1)",
            });
        }
        if !(free_run_nodes.is_finite() && free_run_nodes >= 1.0) {
            return Err(TopologyError::NotInRange {
                what: "mean free run (nodes)",
                value: free_run_nodes,
                range: "[1, ∞)",
            });
        }
        Ok(Self {
            busy_share,
            free_run_nodes,
        })
    }

    /// The `count` nodes a job is given, in launcher order: from a point of `launcher_order`
    /// drawn by `seed`, runs of busy and free nodes of geometric lengths follow one another
    /// round the machine, and the job takes the free nodes until it has `count`. The same
    /// seed gives the same nodes.
    pub fn allocate(
        &self,
        launcher_order: &[Coord],
        count: usize,
        seed: u64,
    ) -> Result<Vec<Coord>> {
        let n = launcher_order.len();
        let mut rng = SplitMix64(seed);
        let start = if n == 0 {
            0
        } else {
            (rng.next() % n as u64) as usize
        };
        let busy_mean = self.free_run_nodes * self.busy_share / (1.0 - self.busy_share);
        let mut nodes = Vec::with_capacity(count);
        let mut walked = 0;
        while walked < n && nodes.len() < count {
            if busy_mean > 0.0 {
                walked += run_length(&mut rng, busy_mean);
            }
            let free = run_length(&mut rng, self.free_run_nodes);
            let end = (walked + free).min(n);
            for i in walked..end {
                if nodes.len() == count {
                    break;
                }
                nodes.push(launcher_order[(start + i) % n]);
            }
            walked = end;
        }
        if nodes.len() < count {
            return Err(TopologyError::NotEnoughClients {
                needed: count,
                available: nodes.len(),
            });
        }
        Ok(nodes)
    }
}

/// A run length of at least 1 with mean about `mean`: an exponential draw, rounded up.
fn run_length(rng: &mut SplitMix64, mean: f64) -> usize {
    // `unit` is in [0, 1): 1 − it is in (0, 1], whose logarithm is finite.
    ((-(1.0 - rng.unit()).ln()) * mean).ceil().max(1.0) as usize
}

#[cfg(test)]
mod tests {
    use super::*;

    fn line(n: u32) -> Vec<Coord> {
        (0..n).map(|x| Coord { x, y: 0, z: 0 }).collect()
    }

    #[test]
    fn an_idle_machine_gives_one_stretch_from_the_drawn_start() {
        let order = line(100);
        let idle = BusyMachine::new(0.0, 1.0).unwrap();
        let nodes = idle.allocate(&order, 10, 3).unwrap();
        let first = order.iter().position(|c| *c == nodes[0]).unwrap();
        for (i, node) in nodes.iter().enumerate() {
            assert_eq!(*node, order[(first + i) % 100], "one contiguous stretch");
        }
    }

    #[test]
    fn a_busy_machine_scatters_the_job_and_holds_about_its_busy_share() {
        let order = line(20_000);
        let busy = BusyMachine::new(0.7, 8.0).unwrap();
        let nodes = busy.allocate(&order, 3000, 11).unwrap();
        assert_eq!(nodes.len(), 3000);
        let mut seen = std::collections::HashSet::new();
        assert!(nodes.iter().all(|c| seen.insert(*c)), "no node twice");
        // The span the job covers holds about 1 / (1 − 0.7) of its size.
        let index = |c: &Coord| order.iter().position(|o| o == c).unwrap();
        let mut at: Vec<usize> = nodes.iter().map(index).collect();
        at.sort_unstable();
        let gaps = at.windows(2).filter(|w| w[1] > w[0] + 1).count();
        assert!(gaps > 200, "scattered in many pieces: {gaps} gaps");
        assert_eq!(
            busy.allocate(&order, 3000, 11).unwrap(),
            nodes,
            "the same seed, the same nodes"
        );
        assert_ne!(busy.allocate(&order, 3000, 12).unwrap(), nodes);
    }

    #[test]
    fn bad_settings_and_a_full_machine_are_errors() {
        assert!(BusyMachine::new(1.0, 8.0).is_err());
        assert!(BusyMachine::new(-0.1, 8.0).is_err());
        assert!(BusyMachine::new(0.5, 0.5).is_err());
        assert!(BusyMachine::new(0.5, f64::NAN).is_err());
        let busy = BusyMachine::new(0.9, 4.0).unwrap();
        let err = busy.allocate(&line(100), 60, 1).unwrap_err();
        assert!(
            matches!(err, TopologyError::NotEnoughClients { needed: 60, .. }),
            "{err}"
        );
    }
}
