//! The flow model's prediction for an emulated run: the topology crate's
//! [`FlowModel`] over the same miniature machine the stack file describes, so that every
//! measured figure on a torus crossed hop by hop can be printed beside what the model says.
//!
//! A writer's bytes leave its node through its injection port (its NIC rate), cross the links
//! of the dimension-order route to its target's server (each directed link a port of the
//! torus's rate, times the link's width), enter the server through its ejection port (its NIC
//! rate) and land on the target's modeled disk, if it has one. Ports are shared locally fairly,
//! as the routers do ([`FlowModel`]). A file striped over several targets is one flow per
//! target, each with its share of the writer's demand. The prediction is steady state: no
//! start-up, no request latency, no packets — but for one rule the packets impose: at a port
//! the routes load exactly to its capacity with every flow through it at its disk's rate (a
//! port with no room), each input is held to its turn, as the emulated port serving its inputs
//! a packet at a time holds an input whose flows' bursts cannot be made up after
//! ([`Arbitration`]; `MachineFlows::port_with_no_room` says why).
//!
//! A target whose server is off the torus is reached through LNET routers on it: the writer's
//! traffic is split equally over the routers its routes name, one flow per router, and those
//! flows are coupled at the slowest one's rate. Both are approximations of LNet's choice
//! (fewest bytes outstanding on the gateway, then in turn): while the routers keep up it takes
//! them in turn, message by message, so each gets an equal share of the *messages* — but not
//! of the bytes, since a writer's small requests and its bulk take turns too (`iopath bench
//! routing` measures how uneven); and a router that falls behind keeps bytes outstanding and
//! is given fewer, so coupling at the slowest under-predicts where routers differ much. Only
//! a run whose every writer, and every target server or its routers, sit on one torus crossed
//! hop by hop is predicted; anything else
//! (fyods, a torus not modeled) is not in this model, and [`predict`] says so instead of
//! guessing.

use std::collections::{BTreeSet, HashMap};

use iopath_stack::schema::{RoleName, Stack};
use iopath_topology::{Coord, Flow, FlowModel, FlowNetwork};
use serde::Serialize;

/// One writer: its client node and the targets its file is striped over.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WriterFlow {
    /// The client node (index into the stack's nodes).
    pub client: usize,
    /// The file's targets (file-system indices, [`Stack::targets`]).
    pub targets: Vec<u32>,
}

/// What the flow model predicts, in host time (the stack's modeled rates over its time
/// scale), so that it reads beside what was measured.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FlowPrediction {
    /// Each writer's rate, bytes per host second, in the order given.
    pub writer_bytes_s: Vec<f64>,
    /// Their sum.
    pub aggregate_bytes_s: f64,
    /// The network the writers cross.
    pub network: String,
}

/// Why a run is not predicted.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotPredicted(pub String);

/// The flow model's rates for `writers` on `stack`.
pub fn predict(stack: &Stack, writers: &[WriterFlow]) -> Result<FlowPrediction, NotPredicted> {
    Ok(MachineFlows::of(stack, writers)?.rates())
}

/// The flow model of `writers` on a stack's torus: one flow per writer, target and router.
#[derive(Debug)]
pub struct MachineFlows {
    ports: FlowNetwork,
    flows: Vec<Flow>,
    /// The group of each flow: one writer's traffic to one target. A group reached through
    /// several routers is one flow per router, and the flows of a group are **coupled**: LNet
    /// hands a writer's messages to routers that keep up in turn, so none of them runs ahead
    /// of the slowest (see the module's note on what this leaves out).
    flow_group: Vec<usize>,
    /// The writer of each group.
    group_writer: Vec<usize>,
    /// Each group's start-up, seconds per MB of its first transfer: the transfer crosses the
    /// torus at its path's slowest port and, when routed, the router's card after it (a
    /// router forwards a message once it has all of it), before its target's disk sees a
    /// byte. The slowest of its routes.
    group_fill_s_per_mb: Vec<f64>,
    /// Writers.
    writers: usize,
    /// Host seconds per modeled second.
    time_scale: f64,
    /// The network the writers cross.
    network: String,
}

/// Most rounds of capping a group's flows at its slowest one's rate.
const COUPLING_ROUNDS_MAX: usize = 64;

impl MachineFlows {
    /// The flows of `writers` on `stack`, or why they are not predicted.
    ///
    /// A target whose server is on the torus is reached directly. One that is not is reached
    /// through the routers the client's routes to the server's network name, those of the best
    /// class (priority, then hop count), as the fabric chooses them: the torus path to each
    /// router, the router's ejection, its card on the server's network (the router's NIC rate,
    /// else that network's modeled link), then the target's disk. The server's own network
    /// beyond the router is not modeled (as in the emulation, which models an interface's
    /// sending side only).
    pub fn of(stack: &Stack, writers: &[WriterFlow]) -> Result<MachineFlows, NotPredicted> {
        let no = |why: String| NotPredicted(why);
        let (index, network) = stack
            .networks
            .iter()
            .enumerate()
            .find(|(_, n)| n.hop_by_hop)
            .ok_or_else(|| no("no network of the stack is a torus crossed hop by hop".into()))?;
        let torus_model = stack
            .torus_model(index)
            .ok_or_else(|| no(format!("{} has no modeled torus", network.name)))?;
        let torus = &torus_model.torus;
        let targets = stack.targets();
        // A node's coordinate and NIC rate on the torus, if it is on it.
        let on_torus = |node: usize| -> Option<(Coord, f64)> {
            let spec = stack.nodes.get(node)?;
            spec.interfaces.iter().find(|i| i.network == index)?;
            let [x, y, z] = spec.torus?;
            let nic = spec
                .nic_bandwidth_bytes_s
                .map_or(torus_model.link_bandwidth_bytes_s, |r| r as f64);
            Some((Coord::new(x, y, z), nic))
        };
        let name = |node: usize| stack.nodes.get(node).map_or("?", |n| n.name.as_str());
        // The routers `client` reaches `server` through: its best routes to a network of the
        // server's, and that network.
        let gateways = |client: usize,
                        server: usize|
         -> Result<(Vec<usize>, usize), NotPredicted> {
            for interface in &stack.nodes[server].interfaces {
                let routes: Vec<_> = stack
                    .routes
                    .iter()
                    .filter(|r| r.node == client && r.net == interface.network && r.via == index)
                    .collect();
                let Some(best) = routes.iter().map(|r| (r.priority, r.hops)).min() else {
                    continue;
                };
                let chosen = routes
                    .iter()
                    .filter(|r| (r.priority, r.hops) == best)
                    .map(|r| r.gateway)
                    .collect();
                return Ok((chosen, interface.network));
            }
            Err(no(format!(
                "{} is not on {} and {} has no route to it over {}",
                name(server),
                network.name,
                name(client),
                network.name
            )))
        };
        let mb = |bytes_s: f64| bytes_s / 1e6;
        let port_error = |e: iopath_topology::TopologyError| no(format!("the flow model: {e}"));
        let mut ports = FlowNetwork::new();
        let mut port_of: HashMap<(u8, usize), usize> = HashMap::new();
        let mut port = |ports: &mut FlowNetwork, key: (u8, usize), capacity: f64| {
            if let Some(&p) = port_of.get(&key) {
                return Ok(p);
            }
            let p = ports.add_port(mb(capacity)).map_err(port_error)?;
            port_of.insert(key, p);
            Ok::<usize, NotPredicted>(p)
        };
        let (injection, link, ejection, disk, card) = (0u8, 1u8, 2u8, 3u8, 4u8);
        let mut flows = Vec::new();
        let mut flow_group = Vec::new();
        let mut group_writer = Vec::new();
        let mut group_fill_s_per_mb = Vec::new();
        for (w, writer) in writers.iter().enumerate() {
            if stack.nodes.get(writer.client).map(|n| n.role.kind()) != Some(RoleName::Client) {
                return Err(no(format!("node {} is not a client", name(writer.client))));
            }
            let (from, client_nic) = on_torus(writer.client).ok_or_else(|| {
                no(format!(
                    "{} is not on {} at a coordinate",
                    name(writer.client),
                    network.name
                ))
            })?;
            if writer.targets.is_empty() {
                return Err(no(format!("writer {w} has no target")));
            }
            let share = client_nic / writer.targets.len() as f64;
            for &target in &writer.targets {
                let &(oss, _) = targets
                    .get(target as usize)
                    .ok_or_else(|| no(format!("no target {target}")))?;
                let group = group_writer.len();
                group_writer.push(w);
                group_fill_s_per_mb.push(0.0f64);
                // Each leg: the torus path to `to`, entering the node `at` at its NIC rate,
                // then whatever lies beyond.
                let mut legs: Vec<(Coord, usize, f64, Vec<usize>)> = Vec::new();
                if let Some((to, server_nic)) = on_torus(oss) {
                    legs.push((to, oss, server_nic, Vec::new()));
                } else {
                    let (routers, server_net) = gateways(writer.client, oss)?;
                    for router in routers {
                        let (to, router_nic) = on_torus(router).ok_or_else(|| {
                            no(format!(
                                "router {} is not on {} at a coordinate",
                                name(router),
                                network.name
                            ))
                        })?;
                        let card_rate = stack.nodes[router]
                            .nic_bandwidth_bytes_s
                            .or(stack.networks[server_net].link.map(|l| l.bandwidth_bytes_s));
                        let beyond = match card_rate {
                            Some(rate) => vec![port(&mut ports, (card, router), rate as f64)?],
                            None => Vec::new(),
                        };
                        legs.push((to, router, router_nic, beyond));
                    }
                }
                let k = legs.len() as f64;
                for (to, at, at_nic, beyond) in legs {
                    let mut path = vec![port(&mut ports, (injection, writer.client), client_nic)?];
                    let mut slowest = client_nic.min(at_nic);
                    for hop in torus.dor_path(from, to) {
                        let capacity = torus_model.link_bandwidth_bytes_s
                            * torus.link_width(hop.direction.axis());
                        slowest = slowest.min(capacity);
                        path.push(port(&mut ports, (link, torus.link_index(hop)), capacity)?);
                    }
                    path.push(port(&mut ports, (ejection, at), at_nic)?);
                    let mut fill = 1.0 / mb(slowest);
                    for &p in &beyond {
                        fill += 1.0 / ports.capacity(p);
                    }
                    group_fill_s_per_mb[group] = group_fill_s_per_mb[group].max(fill);
                    path.extend(beyond);
                    if let Some(spec) = stack.nodes[oss].disk() {
                        path.push(port(
                            &mut ports,
                            (disk, target as usize),
                            spec.bandwidth_bytes_s as f64,
                        )?);
                    }
                    flows.push(Flow {
                        ports: path,
                        demand_mb_per_s: mb(share / k),
                    });
                    flow_group.push(group);
                }
            }
        }
        // Checked once here, so that later solves cannot fail on the network.
        FlowModel::new(&ports, &flows).map_err(port_error)?;
        Ok(MachineFlows {
            ports,
            flows,
            flow_group,
            group_writer,
            group_fill_s_per_mb,
            writers: writers.len(),
            time_scale: torus_model.time_scale,
            network: network.name.clone(),
        })
    }

    /// Each flow's demand, MB per modeled second.
    fn demands(&self) -> Vec<f64> {
        self.flows.iter().map(|f| f.demand_mb_per_s).collect()
    }

    /// The rate of every flow among `active` under `arbitration`, MB per modeled second (0
    /// for the others). With turns: the fluid rates, then, one port with no room at a time
    /// ([`MachineFlows::port_with_no_room`]), that port's inputs held to their turn and the
    /// rates solved again; the ports where an input was held are added to `held`.
    fn rates_under(
        &self,
        active: &[bool],
        arbitration: Arbitration,
        held: &mut BTreeSet<usize>,
    ) -> Vec<f64> {
        let mut demand = self.demands();
        let mut rates = self.fluid_rates(active, &demand);
        if arbitration == Arbitration::Fluid {
            return rates;
        }
        // A port once held keeps a load below its capacity (demands only go down), so no
        // port is held twice: at most one round per port.
        for _ in 0..self.ports.port_count() {
            let Some(hold) = self.port_with_no_room(active, &rates) else {
                break;
            };
            for (f, cap) in hold.caps {
                demand[f] = cap.max(f64::MIN_POSITIVE);
            }
            held.insert(hold.port);
            rates = self.fluid_rates(active, &demand);
        }
        rates
    }

    /// The fluid rates of the flows among `active` under `demand`, MB per modeled second (0
    /// for the others), each group's flows coupled at its slowest one's rate: the model is
    /// solved with each flow's demand capped at its group's slowest rate, until the caps
    /// settle.
    fn fluid_rates(&self, active: &[bool], demand: &[f64]) -> Vec<f64> {
        let groups = self.group_writer.len();
        // With one flow per group there is nothing to couple: one solve.
        let coupled = groups < self.flows.len();
        let mut cap: Vec<f64> = demand.to_vec();
        let mut rates = vec![0.0; self.flows.len()];
        for _ in 0..COUPLING_ROUNDS_MAX {
            let (flows, index): (Vec<Flow>, Vec<usize>) = self
                .flows
                .iter()
                .enumerate()
                .filter(|(f, _)| active[*f])
                .map(|(f, flow)| {
                    (
                        Flow {
                            ports: flow.ports.clone(),
                            demand_mb_per_s: cap[f],
                        },
                        f,
                    )
                })
                .unzip();
            let solved = FlowModel::new(&self.ports, &flows)
                .expect("the flows were checked when the model was built")
                .solve();
            let mut slowest = vec![f64::INFINITY; groups];
            for (k, &f) in index.iter().enumerate() {
                let g = self.flow_group[f];
                slowest[g] = slowest[g].min(solved.rates_mb_per_s[k]);
            }
            let mut moved = 0.0f64;
            for &f in &index {
                let capped = slowest[self.flow_group[f]]
                    .min(demand[f])
                    .max(f64::MIN_POSITIVE);
                moved = moved.max((capped - cap[f]).abs() / cap[f]);
                cap[f] = capped;
                rates[f] = slowest[self.flow_group[f]];
            }
            if !coupled || moved < 1e-9 {
                break;
            }
        }
        rates
    }

    /// A port with no room under `rates`, with the capped demands of the flows it holds to
    /// their input's turn; the most upstream one if there are several (the one that comes
    /// earliest on a flow's path), since holding it may leave room downstream.
    ///
    /// A port has no room when `rates` load it exactly to its capacity though none of the
    /// flows through it is held back there: every one of them runs at the full rate of a port
    /// only its own writer's group uses (its disk, here). A fluid model gives each of those
    /// flows its whole rate. The emulated port cannot: it serves its inputs (the ports the
    /// flows come from, or their own injection) a packet at a time, in turn, and a writer's
    /// bulk comes in bursts (a transfer at a time). While one input's burst lasts, another
    /// gets only its turn, the port's rate over its busy inputs; at a port with room it makes
    /// that up after the burst, but here there is none, and its writers cannot run ahead of
    /// their disks to make it up later. So an input whose flows take more than their turn is
    /// held to it, its flows in proportion. A port where no input does is left alone.
    fn port_with_no_room(&self, active: &[bool], rates: &[f64]) -> Option<Hold> {
        const FULL: f64 = 1e-6;
        let count = self.ports.port_count();
        // Each port's load, and the writers' groups that use it (one pass over the flows).
        let mut load = vec![0.0f64; count];
        let mut groups: Vec<Vec<usize>> = vec![Vec::new(); count];
        for (f, (flow, rate)) in self.flows.iter().zip(rates).enumerate() {
            if !active[f] {
                continue;
            }
            for &p in &flow.ports {
                load[p] += rate;
                groups[p].push(self.flow_group[f]);
            }
        }
        for users in &mut groups {
            users.sort_unstable();
            users.dedup();
        }
        let full = |p: usize| load[p] >= self.ports.capacity(p) * (1.0 - FULL);
        // A flow at the full rate of a port only its own writer's group uses (its disk).
        let at_its_own = |f: usize| {
            self.flows[f]
                .ports
                .iter()
                .any(|&q| full(q) && groups[q].len() == 1)
        };
        let mut found: Option<Hold> = None;
        for p in (0..count).filter(|&p| full(p) && groups[p].len() > 1) {
            // Each flow through the port, where it is on its path, and its input: the port
            // before it, or, where the flow starts here, its own (as `FlowModel` groups them,
            // and the emulated injection port queues each destination apart).
            let through: Vec<(usize, usize, Input)> = (0..self.flows.len())
                .filter(|&f| active[f])
                .filter_map(|f| {
                    let path = &self.flows[f].ports;
                    let at = path.iter().position(|&q| q == p)?;
                    let input = match at.checked_sub(1) {
                        Some(i) => Input::Port(path[i]),
                        None => Input::Source(f),
                    };
                    Some((f, at, input))
                })
                .collect();
            if !through.iter().all(|&(f, _, _)| at_its_own(f)) {
                continue;
            }
            let mut inputs: Vec<(Input, f64)> = Vec::new();
            for &(f, _, input) in &through {
                match inputs.iter_mut().find(|(i, _)| *i == input) {
                    Some((_, sum)) => *sum += rates[f],
                    None => inputs.push((input, rates[f])),
                }
            }
            let turn = self.ports.capacity(p) / inputs.len() as f64;
            let caps: Vec<(usize, f64)> = through
                .iter()
                .filter_map(|&(f, _, input)| {
                    let (_, sum) = inputs
                        .iter()
                        .find(|(i, _)| *i == input)
                        .expect("every flow's input was summed");
                    (*sum > turn * (1.0 + FULL)).then(|| (f, rates[f] * turn / sum))
                })
                .collect();
            let depth = through.iter().map(|&(_, at, _)| at).min().unwrap_or(0);
            if !caps.is_empty() && found.as_ref().is_none_or(|h| depth < h.depth) {
                found = Some(Hold {
                    port: p,
                    depth,
                    caps,
                });
            }
        }
        found
    }

    /// Each writer's steady rate, and their sum, in host time.
    pub fn rates(&self) -> FlowPrediction {
        let rates = self.rates_under(
            &vec![true; self.flows.len()],
            Arbitration::Turns,
            &mut BTreeSet::new(),
        );
        let mut writer_bytes_s = vec![0.0; self.writers];
        for (flow, rate) in rates.iter().enumerate() {
            let w = self.group_writer[self.flow_group[flow]];
            writer_bytes_s[w] += rate * 1e6 / self.time_scale;
        }
        FlowPrediction {
            aggregate_bytes_s: writer_bytes_s.iter().sum(),
            writer_bytes_s,
            network: self.network.clone(),
        }
    }

    /// Each writer's time to write `bytes` (its file's share on each of its targets) in
    /// transfers of `transfer` bytes, modeled seconds, with ports with no room holding their
    /// inputs to their turn ([`MachineFlows::completion`]).
    pub fn completion_s(&self, bytes: u64, transfer: u64) -> Result<Vec<f64>, NotPredicted> {
        Ok(self
            .completion(bytes, transfer, Arbitration::Turns)?
            .times_s)
    }

    /// Each writer's time to write `bytes` (its file's share on each of its targets) in
    /// transfers of `transfer` bytes, modeled seconds: the steady rates under `arbitration`,
    /// writers finishing freeing their share for the others, after the start-up of the first
    /// transfer; and the ports that held an input to its turn on the way.
    pub fn completion(
        &self,
        bytes: u64,
        transfer: u64,
        arbitration: Arbitration,
    ) -> Result<ModelCompletion, NotPredicted> {
        let mut groups_of = vec![0usize; self.writers];
        for &w in &self.group_writer {
            groups_of[w] += 1;
        }
        // Megabytes each group has left.
        let mut left: Vec<f64> = self
            .group_writer
            .iter()
            .map(|&w| bytes as f64 / 1e6 / groups_of[w] as f64)
            .collect();
        let mut active = vec![true; self.flows.len()];
        let mut times = vec![0.0f64; self.writers];
        let mut held = BTreeSet::new();
        let mut now = 0.0;
        while active.iter().any(|&a| a) {
            let rates = self.rates_under(&active, arbitration, &mut held);
            let mut group_rate = vec![0.0; left.len()];
            for (f, rate) in rates.iter().enumerate() {
                if active[f] {
                    group_rate[self.flow_group[f]] += rate;
                }
            }
            let step = left
                .iter()
                .zip(&group_rate)
                .filter(|(l, _)| **l > 0.0)
                .map(|(l, r)| l / r)
                .fold(f64::INFINITY, f64::min);
            if !step.is_finite() {
                return Err(NotPredicted(
                    "the flow model: a writer's flows have no rate".into(),
                ));
            }
            now += step;
            for (g, l) in left.iter_mut().enumerate() {
                if *l <= 0.0 {
                    continue;
                }
                *l -= group_rate[g] * step;
                if *l <= 1e-9 * (1.0 + group_rate[g] * step) {
                    *l = 0.0;
                    let w = self.group_writer[g];
                    let start_up = transfer as f64 / 1e6 * self.group_fill_s_per_mb[g];
                    times[w] = times[w].max(now + start_up);
                    for (f, a) in active.iter_mut().enumerate() {
                        if self.flow_group[f] == g {
                            *a = false;
                        }
                    }
                }
            }
        }
        Ok(ModelCompletion {
            times_s: times,
            ports_held: held.len(),
        })
    }
}

/// Where a flow comes into a port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Input {
    /// From the port before it on its path.
    Port(usize),
    /// It starts here (the flow's number).
    Source(usize),
}

/// A port with no room and what holding its inputs to their turn does.
struct Hold {
    port: usize,
    /// How far down its flows' paths the port is, at the least (upstream first).
    depth: usize,
    /// Each held flow and its capped demand, MB per modeled second.
    caps: Vec<(usize, f64)>,
}

/// How the model shares a port the routes load exactly to its capacity with no flow through
/// it held back there (a port with no room, [`MachineFlows::completion`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Arbitration {
    /// Each input held to its turn, as the emulated port serves it: the bound where inputs
    /// cannot make up after another's burst. The model's prediction.
    Turns,
    /// Every flow its whole rate, as if every input made up after each burst: the other
    /// bound, for a report to print beside the model's.
    Fluid,
}

/// Each writer's completion time under the model, and what held them.
#[derive(Debug, Clone, PartialEq)]
pub struct ModelCompletion {
    /// Each writer's time, modeled seconds.
    pub times_s: Vec<f64>,
    /// Ports that held an input to its turn at some point of the run (none under
    /// [`Arbitration::Fluid`]).
    pub ports_held: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use iopath_stack::schema::StackFile;
    use iopath_stack::schema::file::SizeValue;

    /// Four writers in a line into one server across one link of a ring: the paper's chain,
    /// 1/2, 1/4, 1/8, 1/8 of the link, and the aggregate the link's rate (in host time).
    #[test]
    fn a_chain_into_one_link_shares_it_geometrically() {
        let text = std::fs::read_to_string(concat!(
            env!("CARGO_MANIFEST_DIR"),
            "/../docs/labs/chain.toml"
        ))
        .unwrap();
        let stack = Stack::parse(&text, "chain.toml").unwrap();
        let clients = stack.nodes_of(RoleName::Client);
        let writers: Vec<WriterFlow> = clients
            .iter()
            .enumerate()
            .map(|(i, &client)| WriterFlow {
                client,
                targets: vec![i as u32],
            })
            .collect();
        let p = predict(&stack, &writers).unwrap();
        let link = (640u64 << 20) as f64 / 16.0;
        assert!((p.aggregate_bytes_s / link - 1.0).abs() < 1e-6, "{p:?}");
        let shares: Vec<f64> = p.writer_bytes_s.iter().map(|r| r / link).collect();
        let expected = [0.125, 0.125, 0.25, 0.5];
        for (got, want) in shares.iter().zip(expected) {
            assert!((got - want).abs() < 1e-6, "{shares:?}");
        }
        // Writing 64 MiB each in 4 MiB transfers: the nearest finishes first, and the last
        // when the link has carried all four, after its first transfer crossed the torus at
        // the links' rate (every port here runs at it), in modeled seconds.
        let times = MachineFlows::of(&stack, &writers)
            .unwrap()
            .completion_s(64 << 20, 4 << 20)
            .unwrap();
        let link_modeled = (640u64 << 20) as f64;
        let all = 4.0 * (64u64 << 20) as f64 / link_modeled;
        let start_up = (4u64 << 20) as f64 / link_modeled;
        let last = times.iter().copied().fold(0.0, f64::max);
        assert!((last / (all + start_up) - 1.0).abs() < 1e-6, "{times:?}");
        assert!(times[3] < times[2] && times[2] < times[0], "{times:?}");
    }

    /// The line of `bench/tests/data/line.toml` with its disks at `disk`, one writer per
    /// target.
    fn line_with(disk: &str) -> MachineFlows {
        let mut file =
            StackFile::parse(include_str!("../tests/data/line.toml"), "line.toml").unwrap();
        for server in file.nodes.iter_mut().filter(|n| n.role == RoleName::Oss) {
            server.disk_bandwidth = Some(SizeValue::Text(disk.into()));
        }
        let stack = file.check("line.toml").unwrap();
        let writers: Vec<WriterFlow> = stack
            .nodes_of(RoleName::Client)
            .into_iter()
            .enumerate()
            .map(|(i, client)| WriterFlow {
                client,
                targets: vec![i as u32],
            })
            .collect();
        MachineFlows::of(&stack, &writers).unwrap()
    }

    /// Three writers in a line into one link, each to a disk of its own at a third of the
    /// link's rate: the last link has no room. Its two inputs are the writer next to the
    /// server (its injection) and the two farther writers, arriving together: that input is
    /// held to its turn, half the link, a quarter each, where the fluid rates give all three
    /// their disks' rate. The server's ejection is as full, but has one input: nothing held.
    /// Slower disks leave the link room, faster ones make it hold the writers back: no turns.
    #[test]
    fn a_port_with_no_room_holds_each_input_to_its_turn() {
        let line = line_with("200m");
        let rates = line.rates().writer_bytes_s;
        let link = (600u64 << 20) as f64 / 16.0;
        let shares: Vec<f64> = rates.iter().map(|r| r / link).collect();
        for (got, want) in shares.iter().zip([0.25, 0.25, 1.0 / 3.0]) {
            assert!((got - want).abs() < 1e-9, "{shares:?}");
        }
        // 24 MiB each in 1 MiB transfers, both ways.
        let both = |line: &MachineFlows| {
            let run = |a| line.completion(24 << 20, 1 << 20, a).unwrap();
            (run(Arbitration::Turns), run(Arbitration::Fluid))
        };
        let (turns, fluid) = both(&line);
        assert_eq!((turns.ports_held, fluid.ports_held), (1, 0));
        // The nearest finishes at its disk's rate either way; under turns the farther two
        // finish later, though faster once it has gone.
        assert!(
            (turns.times_s[2] - fluid.times_s[2]).abs() < 1e-12,
            "{turns:?} {fluid:?}"
        );
        assert!(
            turns.times_s[0] > 1.1 * fluid.times_s[0],
            "{turns:?} {fluid:?}"
        );
        assert!(
            (fluid.times_s[0] - fluid.times_s[2]).abs() < 1e-12,
            "{fluid:?}"
        );
        for disk in ["150m", "300m"] {
            let (turns, fluid) = both(&line_with(disk));
            assert_eq!(turns, fluid, "disks at {disk}: no port without room");
            assert_eq!(turns.ports_held, 0);
        }
    }

    /// A writer on the torus reaching its server through two routers, round-robin: one flow
    /// per router, coupled, so the slower router sets the pace of both halves.
    #[test]
    fn a_routed_writer_is_split_over_its_routers_at_the_slower_ones_pace() {
        let text = r#"
name = "two-routers"
[model]
time_scale = 10
[[networks]]
name = "torus0"
torus = [4, 1, 1]
bandwidth = 1000000000
hop_by_hop = true
[[networks]]
name = "o2ib1"
bandwidth = 1000000000
[[nodes]]
name = "c"
role = "client"
nids = { torus0 = 100 }
torus = [0, 0, 0]
[[nodes]]
name = "fast"
role = "router"
nids = { torus0 = 50, o2ib1 = 50 }
torus = [1, 0, 0]
nic_bandwidth = 800000000
[[nodes]]
name = "slow"
role = "router"
nids = { torus0 = 51, o2ib1 = 51 }
torus = [3, 0, 0]
nic_bandwidth = 100000000
[[nodes]]
name = "oss"
role = "oss"
nids = { o2ib1 = 10 }
targets = 1
disk_bandwidth = 900000000
[[nodes]]
name = "mds"
role = "mds"
nids = { torus0 = 1 }
torus = [2, 0, 0]
[[routes]]
from = "o2ib1"
net = "torus0"
gateway = "fast"
[[routes]]
from = "torus0"
net = "o2ib1"
gateway = "fast"
[[routes]]
from = "torus0"
net = "o2ib1"
gateway = "slow"
"#;
        let rate = |text: &str| {
            let stack = Stack::parse(text, "two routers").unwrap();
            let client = stack.nodes_of(RoleName::Client)[0];
            predict(
                &stack,
                &[WriterFlow {
                    client,
                    targets: vec![0],
                }],
            )
            .unwrap()
            .aggregate_bytes_s
                * 10.0
        };
        // Round-robin over both: each carries half, so the slow one's 100 MB/s caps the
        // writer at 200 (not 100 + 800 = 900, as two independent flows would have it).
        let both = rate(text);
        assert!((both / 200e6 - 1.0).abs() < 1e-6, "{both}");
        // The slow one as a backup (hop count 10) carries nothing while the fast one is up:
        // its 800 MB/s card, under the disk's 900.
        let backup = text.replace("gateway = \"slow\"", "gateway = \"slow\"\nhops = 10");
        let fast = rate(&backup);
        assert!((fast / 800e6 - 1.0).abs() < 1e-6, "{fast}");
    }

    #[test]
    fn a_stack_without_a_torus_crossed_hop_by_hop_is_not_predicted() {
        let stack = iopath_stack::presets::preset("spider-mini")
            .unwrap()
            .stack()
            .unwrap();
        let client = stack.nodes_of(RoleName::Client)[0];
        let why = predict(
            &stack,
            &[WriterFlow {
                client,
                targets: vec![0],
            }],
        )
        .unwrap_err();
        assert!(why.0.contains("hop by hop"), "{why:?}");
    }
}
