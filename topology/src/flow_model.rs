//! A flow-level model of many writers sharing routers and links, for machines too big to run.
//!
//! Every resource a byte passes through is a *port* with a capacity: a node's injection into
//! the network, each directed torus link, a router's ejection to its node, an IB port, a
//! target's disk bandwidth. A *flow* is one writer's stream: the ports it crosses, in order,
//! and the most it would ever send (its demand).
//!
//! # Arbitration: locally fair, globally unfair
//!
//! SeaStar and Gemini routers share an output port fairly among the *input ports* that have
//! traffic for it, not among the flows behind those inputs, and never look at a packet's age
//! or hop count (Spider paper §4, Titan paper §III-A). Back-pressure carries a downstream
//! limit upstream, where the next router again splits it fairly among its inputs. So when a
//! port is oversubscribed, its capacity is divided max-min fairly among its input groups,
//! and each group's share is divided the same way at the router before, and so on back to the
//! flows' sources. For a line of senders streaming into one link this gives the papers'
//! geometric chain: the sender next to the link gets 1/2, the next 1/4, ..., and the last two
//! the same, `1/2^(k-1)` — `B_node = B_link / 2^H`, the paper's `B_link/(2n)^H` read with its
//! own worked example (n = 2 streams merging at every router, the farthest node alone).
//!
//! A flow crossing several oversubscribed ports gets the least any of them allows. The model
//! finds the allocation by fixed-point iteration: each round, every port divides its
//! capacity using what every flow could get at its *other* ports in the previous round;
//! rounds repeat until no rate moves by more than a part in 10^9 (or a round limit is hit,
//! which the result reports). Every round's allocation is feasible: no port ever carries more
//! than its capacity.
//!
//! Completion times follow from re-solving whenever a writer finishes and frees its share.

use serde::{Deserialize, Serialize};

use crate::error::{Result, TopologyError};

/// Most fixed-point rounds one solve may take.
pub const ROUNDS_MAX: usize = 500;
/// Relative change in every rate below which a solve has converged.
pub const CONVERGED_RELATIVE: f64 = 1e-9;

/// A resource with a capacity; ports are numbered in the order they were added.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct FlowNetwork {
    /// Capacity of each port, MB/s.
    capacities_mb_per_s: Vec<f64>,
}

impl FlowNetwork {
    /// An empty network.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a port with `capacity_mb_per_s` (finite, positive) and returns its number.
    pub fn add_port(&mut self, capacity_mb_per_s: f64) -> Result<usize> {
        positive("port capacity", capacity_mb_per_s)?;
        self.capacities_mb_per_s.push(capacity_mb_per_s);
        Ok(self.capacities_mb_per_s.len() - 1)
    }

    /// Capacity of port `port`, MB/s.
    pub fn capacity(&self, port: usize) -> f64 {
        self.capacities_mb_per_s[port]
    }

    /// Number of ports.
    pub fn port_count(&self) -> usize {
        self.capacities_mb_per_s.len()
    }
}

/// One writer's stream through the network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Flow {
    /// The ports it crosses, source first; no port twice.
    pub ports: Vec<usize>,
    /// The most it would send with nothing in its way, MB/s.
    pub demand_mb_per_s: f64,
}

/// Rates from one solve.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Allocation {
    /// Rate of each flow, MB/s (0 for flows that were not active).
    pub rates_mb_per_s: Vec<f64>,
    /// Fixed-point rounds taken.
    pub rounds: usize,
    /// False if [`ROUNDS_MAX`] was reached before the rates settled.
    pub converged: bool,
}

impl Allocation {
    /// Sum of all rates, MB/s.
    pub fn aggregate_mb_per_s(&self) -> f64 {
        self.rates_mb_per_s.iter().sum()
    }
}

/// When each writer finishes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Completion {
    /// Seconds from the start until each flow has sent its data.
    pub times_s: Vec<f64>,
    /// Rates with every flow active, as at time 0.
    pub initial: Allocation,
    /// Number of re-solves (one per distinct finishing time).
    pub solves: usize,
    /// False if any solve hit the round limit.
    pub converged: bool,
}

impl Completion {
    /// The last finishing time, seconds.
    pub fn makespan_s(&self) -> f64 {
        self.times_s.iter().copied().fold(0.0, f64::max)
    }
}

/// Flows on a network, arranged for repeated solving.
#[derive(Debug, Clone)]
pub struct FlowModel {
    capacity: Vec<f64>,
    demand: Vec<f64>,
    /// Hops of flow `f` are `flow_start[f]..flow_start[f + 1]`.
    flow_start: Vec<usize>,
    /// Port of each hop.
    hop_port: Vec<u32>,
    /// Flow of each hop.
    hop_flow: Vec<u32>,
    /// For each used port, its hops: `port_hops[port_start[i]..port_start[i + 1]]`.
    port_start: Vec<usize>,
    port_hops: Vec<u32>,
    used_ports: Vec<u32>,
}

/// An entry of one port's arbitration: which flow, which hop of it, what it could carry.
#[derive(Debug, Clone, Copy)]
struct Claim {
    flow: u32,
    /// Position of the hop within the flow's path, counted from its source.
    position: u32,
    cap: f64,
    /// The hop (index into the flow-major hop arrays).
    hop: u32,
    /// Where the port's answer for this claim goes in the split's output.
    slot: u32,
    /// Group key at the current level of the split.
    key: u64,
}

impl FlowModel {
    /// Checks the flows against the network and indexes them.
    pub fn new(network: &FlowNetwork, flows: &[Flow]) -> Result<Self> {
        let mut flow_start = Vec::with_capacity(flows.len() + 1);
        let mut hop_port = Vec::new();
        let mut hop_flow = Vec::new();
        let mut demand = Vec::with_capacity(flows.len());
        flow_start.push(0);
        for (f, flow) in flows.iter().enumerate() {
            positive("flow demand", flow.demand_mb_per_s)?;
            demand.push(flow.demand_mb_per_s);
            for &p in &flow.ports {
                if p >= network.port_count() {
                    return Err(TopologyError::OutOfRange {
                        what: "port number in a flow",
                        value: p,
                        min: 0,
                        max: network.port_count().saturating_sub(1),
                    });
                }
                hop_port.push(p as u32);
                hop_flow.push(f as u32);
            }
            let mut sorted = flow.ports.clone();
            sorted.sort_unstable();
            if sorted.windows(2).any(|w| w[0] == w[1]) {
                return Err(TopologyError::OutOfRange {
                    what: "times a flow crosses one port",
                    value: 2,
                    min: 1,
                    max: 1,
                });
            }
            flow_start.push(hop_port.len());
        }

        // Index hops by port (counting sort).
        let mut count = vec![0usize; network.port_count() + 1];
        for &p in &hop_port {
            count[p as usize + 1] += 1;
        }
        for i in 1..count.len() {
            count[i] += count[i - 1];
        }
        let mut fill = count.clone();
        let mut by_port = vec![0u32; hop_port.len()];
        for (h, &p) in hop_port.iter().enumerate() {
            by_port[fill[p as usize]] = h as u32;
            fill[p as usize] += 1;
        }
        let mut port_start = vec![0];
        let mut used_ports = Vec::new();
        for p in 0..network.port_count() {
            if count[p + 1] > count[p] {
                used_ports.push(p as u32);
                port_start.push(count[p + 1]);
            }
        }

        Ok(Self {
            capacity: network.capacities_mb_per_s.clone(),
            demand,
            flow_start,
            hop_port,
            hop_flow,
            port_start,
            port_hops: by_port,
            used_ports,
        })
    }

    /// Number of flows.
    pub fn flow_count(&self) -> usize {
        self.demand.len()
    }

    /// Rates with every flow active.
    pub fn solve(&self) -> Allocation {
        let active = vec![true; self.flow_count()];
        let mut allow = vec![f64::INFINITY; self.hop_port.len()];
        self.solve_active(&active, &mut allow)
    }

    /// When each flow finishes sending `data_mb[f]` megabytes, all starting together.
    pub fn completion(&self, data_mb: &[f64]) -> Result<Completion> {
        assert_eq!(
            data_mb.len(),
            self.flow_count(),
            "one amount of data per flow"
        );
        for &d in data_mb {
            positive("data per writer", d)?;
        }
        let n = self.flow_count();
        let mut remaining = data_mb.to_vec();
        let mut active = vec![true; n];
        let mut times = vec![0.0; n];
        let mut allow = vec![f64::INFINITY; self.hop_port.len()];
        let mut now = 0.0;
        let mut solves = 0;
        let mut converged = true;
        let mut initial = None;
        let mut left = n;
        // Each pass retires at least one flow, so there are at most n passes.
        while left > 0 {
            let alloc = self.solve_active(&active, &mut allow);
            solves += 1;
            converged &= alloc.converged;
            let rates = &alloc.rates_mb_per_s;
            let step = (0..n)
                .filter(|&f| active[f])
                .map(|f| remaining[f] / rates[f])
                .fold(f64::INFINITY, f64::min);
            assert!(step.is_finite(), "every active flow has a positive rate");
            now += step;
            for f in 0..n {
                if !active[f] {
                    continue;
                }
                remaining[f] -= rates[f] * step;
                // Flows within a part in 10^9 of done finish now: ties finish together.
                if remaining[f] <= data_mb[f] * 1e-9 {
                    active[f] = false;
                    times[f] = now;
                    left -= 1;
                }
            }
            if initial.is_none() {
                initial = Some(alloc);
            }
        }
        Ok(Completion {
            times_s: times,
            initial: initial.unwrap_or(Allocation {
                rates_mb_per_s: Vec::new(),
                rounds: 0,
                converged: true,
            }),
            solves,
            converged,
        })
    }

    /// The fixed-point solve for the `active` flows, starting from (and leaving behind) the
    /// per-hop allowances `allow`. Ports are visited in turn and each sees the allowances the
    /// ports before it set in the same round (Gauss–Seidel): with simultaneous updates, two
    /// oversubscribed ports in series on the same flows each find the other already limiting
    /// and let go together, then clamp together, for ever.
    fn solve_active(&self, active: &[bool], allow: &mut [f64]) -> Allocation {
        let n = self.flow_count();
        let mut mins: Vec<FlowMin> = (0..n).map(|f| self.flow_min(f, allow)).collect();
        let mut rates: Vec<f64> = vec![0.0; n];
        let mut claims: Vec<Claim> = Vec::new();
        let mut shares: Vec<f64> = Vec::new();
        let mut scratch = Scratch::default();
        let mut rounds = 0;
        let mut converged = false;
        while rounds < ROUNDS_MAX {
            rounds += 1;
            for (i, &port) in self.used_ports.iter().enumerate() {
                let hops = &self.port_hops[self.port_start[i]..self.port_start[i + 1]];
                let capacity = self.capacity[port as usize];
                claims.clear();
                let mut offered = 0.0;
                for &h in hops {
                    let f = self.hop_flow[h as usize] as usize;
                    if !active[f] {
                        // Hops of inactive flows hold no allowance.
                        if allow[h as usize] != f64::INFINITY {
                            allow[h as usize] = f64::INFINITY;
                            mins[f] = self.flow_min(f, allow);
                        }
                        continue;
                    }
                    let cap = mins[f].excluding(h).min(self.demand[f]);
                    offered += cap;
                    claims.push(Claim {
                        flow: f as u32,
                        position: h - self.flow_start[f] as u32,
                        cap,
                        hop: h,
                        slot: claims.len() as u32,
                        key: 0,
                    });
                }
                shares.clear();
                shares.resize(claims.len(), f64::INFINITY);
                if offered > capacity {
                    self.split(&mut claims, capacity, 0, &mut shares, &mut scratch);
                }
                for c in &claims {
                    let share = shares[c.slot as usize];
                    let h = c.hop as usize;
                    if allow[h] != share {
                        allow[h] = share;
                        let f = c.flow as usize;
                        mins[f] = self.flow_min(f, allow);
                    }
                }
            }

            let mut change: f64 = 0.0;
            for f in 0..n {
                let rate = if active[f] {
                    mins[f].min.min(self.demand[f])
                } else {
                    0.0
                };
                let scale = rate.abs().max(rates[f].abs()).max(f64::MIN_POSITIVE);
                change = change.max((rate - rates[f]).abs() / scale);
                rates[f] = rate;
            }
            if change <= CONVERGED_RELATIVE && rounds > 1 {
                converged = true;
                break;
            }
        }
        Allocation {
            rates_mb_per_s: rates,
            rounds,
            converged,
        }
    }

    /// The smallest and second-smallest allowance over a flow's hops.
    fn flow_min(&self, f: usize, allow: &[f64]) -> FlowMin {
        let mut m = FlowMin {
            min: f64::INFINITY,
            at: u32::MAX,
            second: f64::INFINITY,
        };
        let start = self.flow_start[f];
        for (offset, &a) in allow[start..self.flow_start[f + 1]].iter().enumerate() {
            let h = start + offset;
            if a < m.min {
                m.second = m.min;
                m.min = a;
                m.at = h as u32;
            } else if a < m.second {
                m.second = a;
            }
        }
        m
    }

    /// Divides `amount` among `claims` (all at one port, or all arriving through one port
    /// `depth` hops upstream of it): group the claims by the input they arrive on at this
    /// level, share `amount` max-min fairly among the groups, and divide each group's share
    /// one level further upstream, until a group is a single flow's source. Writes each
    /// claim's share to `out[claim.slot]`, or infinity when the claim was not limited.
    fn split(
        &self,
        claims: &mut [Claim],
        amount: f64,
        depth: u32,
        out: &mut [f64],
        scratch: &mut Scratch,
    ) {
        let offered: f64 = claims.iter().map(|c| c.cap).sum();
        if offered <= amount {
            return; // nobody here is limited; `out` already holds infinity
        }
        for c in claims.iter_mut() {
            c.key = if c.position < depth + 1 {
                // The flow starts here: its source is an input of its own.
                u64::from(u32::MAX) + 1 + u64::from(c.flow)
            } else {
                let upstream = self.flow_start[c.flow as usize] + (c.position - depth - 1) as usize;
                u64::from(self.hop_port[upstream])
            };
        }
        claims.sort_unstable_by_key(|c| c.key);

        // Group boundaries and demands.
        let mut bounds = std::mem::take(&mut scratch.bounds);
        bounds.clear();
        let mut start = 0;
        for i in 1..=claims.len() {
            if i == claims.len() || claims[i].key != claims[start].key {
                let demand: f64 = claims[start..i].iter().map(|c| c.cap).sum();
                bounds.push((start, i, demand, 0.0));
                start = i;
            }
        }
        max_min(&mut bounds, amount);

        for &(s, e, demand, share) in &bounds {
            if share >= demand {
                continue; // this group is not limited here
            }
            let group = &mut claims[s..e];
            if group.len() == 1 && group[0].position <= depth {
                out[group[0].slot as usize] = share;
            } else if group.iter().all(|c| c.position <= depth) {
                // Several sources of one flow cannot happen (a flow has one source); keep
                // the split proportional for safety.
                for c in group.iter() {
                    out[c.slot as usize] = share * c.cap / demand;
                }
            } else {
                self.split(group, share, depth + 1, out, scratch);
            }
        }
        scratch.bounds = bounds;
    }
}

/// A flow's tightest allowance, and the next tightest, so the tightest *other than* one hop
/// is found without walking the path.
#[derive(Debug, Clone, Copy)]
struct FlowMin {
    min: f64,
    at: u32,
    second: f64,
}

impl FlowMin {
    fn excluding(&self, hop: u32) -> f64 {
        if hop == self.at {
            self.second
        } else {
            self.min
        }
    }
}

#[derive(Debug, Default)]
struct Scratch {
    bounds: Vec<(usize, usize, f64, f64)>,
}

/// Max-min fair shares of `amount` among groups `(start, end, demand, share)`: no group gets
/// more than its demand, and those that want more split what is left equally.
fn max_min(groups: &mut [(usize, usize, f64, f64)], amount: f64) {
    let mut order: Vec<usize> = (0..groups.len()).collect();
    order.sort_unstable_by(|&a, &b| groups[a].2.total_cmp(&groups[b].2));
    let mut left = amount;
    let mut count = groups.len();
    for i in order {
        let fair = left / count as f64;
        let share = groups[i].2.min(fair);
        groups[i].3 = share;
        left -= share;
        count -= 1;
    }
}

fn positive(what: &'static str, value: f64) -> Result<()> {
    if value.is_finite() && value > 0.0 {
        Ok(())
    } else {
        Err(TopologyError::NotPositive { what, value })
    }
}
