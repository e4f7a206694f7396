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
//! start-up, no request latency, no packets.
//!
//! Only a run whose every writer and target server sit on one torus crossed hop by hop is
//! predicted; anything else (routers, fyods, a second network) is not in this model, and
//! [`predict`] says so instead of guessing.

use std::collections::HashMap;

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

/// The flow model of `writers` on a stack's torus: one flow per writer and target.
#[derive(Debug)]
pub struct MachineFlows {
    model: FlowModel,
    /// The writer of each flow.
    flow_writer: Vec<usize>,
    /// Writers.
    writers: usize,
    /// Host seconds per modeled second.
    time_scale: f64,
    /// The network the writers cross.
    network: String,
}

impl MachineFlows {
    /// The flows of `writers` on `stack`, or why they are not predicted.
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
        let (injection, link, ejection, disk) = (0u8, 1u8, 2u8, 3u8);
        let mut flows = Vec::new();
        let mut flow_writer = Vec::new();
        for (w, writer) in writers.iter().enumerate() {
            let name = |node: usize| stack.nodes.get(node).map_or("?", |n| n.name.as_str());
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
                let (to, server_nic) = on_torus(oss).ok_or_else(|| {
                    no(format!(
                        "{} is not on {}: its traffic leaves the modeled torus",
                        name(oss),
                        network.name
                    ))
                })?;
                let mut path = vec![port(&mut ports, (injection, writer.client), client_nic)?];
                for hop in torus.dor_path(from, to) {
                    let capacity =
                        torus_model.link_bandwidth_bytes_s * torus.link_width(hop.direction.axis());
                    path.push(port(&mut ports, (link, torus.link_index(hop)), capacity)?);
                }
                path.push(port(&mut ports, (ejection, oss), server_nic)?);
                if let Some(spec) = stack.nodes[oss].disk() {
                    path.push(port(
                        &mut ports,
                        (disk, target as usize),
                        spec.bandwidth_bytes_s as f64,
                    )?);
                }
                flows.push(Flow {
                    ports: path,
                    demand_mb_per_s: mb(share),
                });
                flow_writer.push(w);
            }
        }
        Ok(MachineFlows {
            model: FlowModel::new(&ports, &flows).map_err(port_error)?,
            flow_writer,
            writers: writers.len(),
            time_scale: torus_model.time_scale,
            network: network.name.clone(),
        })
    }

    /// Each writer's steady rate, and their sum, in host time.
    pub fn rates(&self) -> FlowPrediction {
        let rates = self.model.solve();
        let mut writer_bytes_s = vec![0.0; self.writers];
        for (flow, &w) in self.flow_writer.iter().enumerate() {
            writer_bytes_s[w] += rates.rates_mb_per_s[flow] * 1e6 / self.time_scale;
        }
        FlowPrediction {
            aggregate_bytes_s: writer_bytes_s.iter().sum(),
            writer_bytes_s,
            network: self.network.clone(),
        }
    }

    /// Each writer's time to write `bytes` (its file's share on each of its targets), modeled
    /// seconds, writers finishing free their share for the others.
    pub fn completion_s(&self, bytes: u64) -> Result<Vec<f64>, NotPredicted> {
        let mut flows_of = vec![0usize; self.writers];
        for &w in &self.flow_writer {
            flows_of[w] += 1;
        }
        let data: Vec<f64> = self
            .flow_writer
            .iter()
            .map(|&w| bytes as f64 / 1e6 / flows_of[w] as f64)
            .collect();
        let done = self
            .model
            .completion(&data)
            .map_err(|e| NotPredicted(format!("the flow model: {e}")))?;
        let mut times = vec![0.0f64; self.writers];
        for (flow, &w) in self.flow_writer.iter().enumerate() {
            times[w] = times[w].max(done.times_s[flow]);
        }
        Ok(times)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
        // Writing 64 MiB each: the nearest finishes first, and the last when the link has
        // carried all four, in modeled seconds.
        let times = MachineFlows::of(&stack, &writers)
            .unwrap()
            .completion_s(64 << 20)
            .unwrap();
        let link_modeled = (640u64 << 20) as f64;
        let all = 4.0 * (64u64 << 20) as f64 / link_modeled;
        let last = times.iter().copied().fold(0.0, f64::max);
        assert!((last / all - 1.0).abs() < 1e-6, "{times:?}");
        assert!(times[3] < times[2] && times[2] < times[0], "{times:?}");
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
