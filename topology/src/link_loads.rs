//! How many client–target pairs cross each torus link, and where that saturates a link.

use serde::{Deserialize, Serialize};

use crate::coord::Coord;
use crate::direction::Link;
use crate::error::{Result, TopologyError};
use crate::torus::Torus;

/// The link-saturation point of the Spider paper §4, computed from its two inputs: a link
/// carrying more pairs than `link_bandwidth / per_pair_rate` is offered more than it can move.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Saturation {
    /// What one link moves in one direction, MB/s (10^6 bytes per second).
    pub link_bandwidth_mb_per_s: f64,
    /// What one client–target pair offers, MB/s: the target's sustained rate.
    pub per_pair_rate_mb_per_s: f64,
}

impl Saturation {
    /// A saturation point from a link bandwidth and a per-pair rate, both positive.
    pub fn new(link_bandwidth_mb_per_s: f64, per_pair_rate_mb_per_s: f64) -> Result<Self> {
        for (what, value) in [
            ("link bandwidth", link_bandwidth_mb_per_s),
            ("per-pair rate", per_pair_rate_mb_per_s),
        ] {
            if !(value.is_finite() && value > 0.0) {
                return Err(TopologyError::NotPositive { what, value });
            }
        }
        Ok(Self {
            link_bandwidth_mb_per_s,
            per_pair_rate_mb_per_s,
        })
    }

    /// Pairs one link carries at full rate: `link / rate` rounded to the nearest whole pair.
    /// For the paper's inputs, 3,020 MB/s over 180 MB/s = 16.8, so 17 pairs, matching the
    /// paper's "each link can support 17 client-OST pairs"; the 18th pair saturates it.
    pub fn pairs_at_saturation(&self) -> u32 {
        let pairs = (self.link_bandwidth_mb_per_s / self.per_pair_rate_mb_per_s).round();
        pairs.clamp(1.0, u32::MAX as f64) as u32
    }

    /// True when a link carrying `pairs` is above the saturation point.
    pub fn is_saturated(&self, pairs: f64) -> bool {
        pairs > f64::from(self.pairs_at_saturation()) + 1e-9
    }
}

/// One bar of a link-load histogram.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct HistogramBin {
    /// Pairs on a link (a split route counts as a fraction of a pair, rounded up here).
    pub pairs: u32,
    /// Links carrying that many pairs.
    pub links: u64,
}

/// Pairs per directed link over the whole torus.
#[derive(Debug, Clone, PartialEq)]
pub struct LinkLoads {
    /// Pair count for each link number of [`Torus::link_index`]; fractional when a pair's
    /// traffic is spread over several routes.
    pairs_per_link: Vec<f64>,
    path: Vec<Link>,
}

impl LinkLoads {
    /// No pairs on any link of `torus`.
    pub fn new(torus: &Torus) -> Self {
        Self {
            pairs_per_link: vec![0.0; torus.link_count()],
            path: Vec::new(),
        }
    }

    /// The loads of a set of `(source, destination)` pairs, each a whole pair.
    pub fn from_pairs(torus: &Torus, pairs: &[(Coord, Coord)]) -> Self {
        let mut loads = Self::new(torus);
        for &(from, to) in pairs {
            loads.add_route(torus, from, to, 1.0);
        }
        loads
    }

    /// Adds `weight` pairs (1.0 for a whole pair, 1/k for one of k round-robin routes) to
    /// every link of the dimension-order path from `from` to `to`.
    pub fn add_route(&mut self, torus: &Torus, from: Coord, to: Coord, weight: f64) {
        assert_eq!(
            self.pairs_per_link.len(),
            torus.link_count(),
            "loads built for another torus"
        );
        self.path.clear();
        torus.dor_path_into(from, to, &mut self.path);
        for link in &self.path {
            self.pairs_per_link[torus.link_index(*link)] += weight;
        }
    }

    /// The pairs on link number `index`.
    pub fn pairs_on(&self, index: usize) -> f64 {
        self.pairs_per_link[index]
    }

    /// Links carrying at least one pair (or a fraction of one).
    pub fn used_links(&self) -> usize {
        self.pairs_per_link.iter().filter(|&&p| p > 0.0).count()
    }

    /// The most pairs on any link.
    pub fn max_pairs(&self) -> f64 {
        self.pairs_per_link.iter().copied().fold(0.0, f64::max)
    }

    /// Links above the saturation point.
    pub fn saturated_links(&self, saturation: &Saturation) -> usize {
        self.pairs_per_link
            .iter()
            .filter(|&&p| saturation.is_saturated(p))
            .count()
    }

    /// Share (0..=1) of used links above the saturation point; 0 when no link is used.
    pub fn saturated_share(&self, saturation: &Saturation) -> f64 {
        let used = self.used_links();
        if used == 0 {
            0.0
        } else {
            self.saturated_links(saturation) as f64 / used as f64
        }
    }

    /// Used links per pair count, ascending by pair count, only counts that occur.
    pub fn histogram(&self) -> Vec<HistogramBin> {
        let mut counts: Vec<u64> = Vec::new();
        for &pairs in &self.pairs_per_link {
            if pairs <= 0.0 {
                continue;
            }
            // Round to a whole count; fractions from split routes round up (a used link is
            // never in bin 0). The small tolerance keeps 3 × (1/3) in bin 1.
            let bin = (pairs - 1e-9).ceil().max(1.0) as usize;
            if counts.len() <= bin {
                counts.resize(bin + 1, 0);
            }
            counts[bin] += 1;
        }
        counts
            .iter()
            .enumerate()
            .filter(|&(_, &links)| links > 0)
            .map(|(pairs, &links)| HistogramBin {
                pairs: pairs as u32,
                links,
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paper_inputs_give_seventeen_pairs() {
        let s = Saturation::new(3020.0, 180.0).unwrap();
        assert_eq!(s.pairs_at_saturation(), 17);
        assert!(!s.is_saturated(17.0));
        assert!(s.is_saturated(18.0));
        // The "~3 GB/s" gives the same point; a faster link supports more.
        assert_eq!(
            Saturation::new(3000.0, 180.0)
                .unwrap()
                .pairs_at_saturation(),
            17
        );
        assert_eq!(
            Saturation::new(6040.0, 180.0)
                .unwrap()
                .pairs_at_saturation(),
            34
        );
        assert!(Saturation::new(0.0, 180.0).is_err());
        assert!(Saturation::new(3000.0, f64::NAN).is_err());
    }

    #[test]
    fn counts_pairs_per_link() {
        let torus = Torus::new(4, 1, 1).unwrap();
        let dst = Coord::new(0, 0, 0);
        // Sources at x=1 and x=2 go X- to 0 (x=2 is a tie, which goes X+ via 3).
        let loads = LinkLoads::from_pairs(
            &torus,
            &[
                (Coord::new(1, 0, 0), dst),
                (Coord::new(3, 0, 0), dst),
                (Coord::new(2, 0, 0), dst),
            ],
        );
        assert_eq!(loads.used_links(), 3);
        assert_eq!(loads.max_pairs(), 2.0);
        let hist = loads.histogram();
        assert_eq!(
            hist,
            vec![
                HistogramBin { pairs: 1, links: 2 },
                HistogramBin { pairs: 2, links: 1 }
            ]
        );
        let s = Saturation::new(1.5, 1.0).unwrap(); // 2 pairs fit
        assert_eq!(loads.saturated_links(&s), 0);
        let s = Saturation::new(1.0, 1.0).unwrap(); // 1 pair fits
        assert_eq!(loads.saturated_links(&s), 1);
        assert!((loads.saturated_share(&s) - 1.0 / 3.0).abs() < 1e-12);
    }
}
