//! The LNET routing configurations of the Spider paper (§6–7) for a routed Lustre whose
//! routers sit in the torus and whose servers hang off InfiniBand leaf modules.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::coord::Coord;
use crate::error::{Result, TopologyError};
use crate::route::Route;
use crate::torus::Torus;

/// An LNET router: a service node in the torus with one InfiniBand port on a leaf module.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LnetRouter {
    /// The router's name, e.g. `sio17`.
    pub name: String,
    /// Its node id on the torus network (the number before `@ptl`).
    pub nid: u32,
    /// Its torus coordinate.
    pub coord: Coord,
    /// The InfiniBand leaf module (switch line card) its IB port plugs into.
    pub leaf: u32,
}

/// The routed side of a Spider-style system: routers in the torus, servers on IB leaves.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SpiderFabric {
    /// Every LNET router.
    pub routers: Vec<LnetRouter>,
    /// The leaf module of each server (OSS), indexed by server number.
    pub server_leaf: Vec<u32>,
    /// Number of leaf modules ("sets" in the paper: 32 on Spider).
    pub leaf_count: u32,
    /// The clients' LNET network name (`ptl` on Jaguar).
    pub client_net: String,
}

/// Which routers a client uses to reach which server (Spider paper §6 and §7).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub enum SpiderRoutingConfig {
    /// One remote net; every router has the same weight and LNET round-robins over all of
    /// them per message, so traffic leaves the torus anywhere and crosses the IB fat tree.
    Baseline,
    /// One remote net per leaf module; each client uses the topologically nearest of that
    /// leaf's routers, statically balanced so no router serves more than its share.
    NearestNeighbour,
    /// One remote net per leaf module; clients round-robin over all of that leaf's routers.
    LeafRoundRobin,
    /// One remote net per server, each reached through exactly one router on the server's
    /// leaf: the servers "projected" into the torus.
    Projection,
}

impl SpiderRoutingConfig {
    /// All four, in the paper's order.
    pub const ALL: [SpiderRoutingConfig; 4] = [
        SpiderRoutingConfig::Baseline,
        SpiderRoutingConfig::NearestNeighbour,
        SpiderRoutingConfig::LeafRoundRobin,
        SpiderRoutingConfig::Projection,
    ];

    /// The name used on the command line.
    pub const fn name(self) -> &'static str {
        match self {
            SpiderRoutingConfig::Baseline => "baseline",
            SpiderRoutingConfig::NearestNeighbour => "nearest-neighbour",
            SpiderRoutingConfig::LeafRoundRobin => "leaf-round-robin",
            SpiderRoutingConfig::Projection => "projection",
        }
    }
}

impl fmt::Display for SpiderRoutingConfig {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SpiderRoutingConfig {
    type Err = TopologyError;

    fn from_str(name: &str) -> Result<Self> {
        match name {
            "baseline" => Ok(Self::Baseline),
            "nearest-neighbour" | "nearest-neighbor" | "nearest" => Ok(Self::NearestNeighbour),
            "leaf-round-robin" | "round-robin" => Ok(Self::LeafRoundRobin),
            "projection" => Ok(Self::Projection),
            _ => Err(TopologyError::UnknownRoutingConfig {
                name: name.to_string(),
            }),
        }
    }
}

/// One routing configuration applied to a fabric: for any client and server, the routers the
/// client's traffic to that server goes through.
#[derive(Debug, Clone)]
pub struct SpiderRouting<'a> {
    torus: &'a Torus,
    fabric: &'a SpiderFabric,
    config: SpiderRoutingConfig,
    /// Routers of each leaf, in router order.
    leaf_routers: Vec<Vec<usize>>,
    /// Projection: the one router of each server.
    projected: Vec<usize>,
    /// Nearest-neighbour: for each client (by `client_slot`), its router on each leaf.
    nearest: Vec<u32>,
    client_slot: HashMap<Coord, usize>,
}

impl<'a> SpiderRouting<'a> {
    /// Applies `config` to `fabric`. `clients` are the nodes nearest-neighbour balancing is
    /// done over (every compute node of the machine); the other configurations ignore them.
    pub fn new(
        torus: &'a Torus,
        fabric: &'a SpiderFabric,
        config: SpiderRoutingConfig,
        clients: &[Coord],
    ) -> Result<Self> {
        let mut leaf_routers = vec![Vec::new(); fabric.leaf_count as usize];
        for (i, router) in fabric.routers.iter().enumerate() {
            torus.check(router.coord)?;
            let leaf = router.leaf as usize;
            if leaf >= leaf_routers.len() {
                return Err(TopologyError::OutOfRange {
                    what: "router leaf module",
                    value: leaf,
                    min: 0,
                    max: leaf_routers.len().saturating_sub(1),
                });
            }
            leaf_routers[leaf].push(i);
        }

        // Projection pairs the k-th server of a leaf with the k-th router of that leaf.
        let mut projected = Vec::with_capacity(fabric.server_leaf.len());
        let mut seen_on_leaf = vec![0usize; leaf_routers.len()];
        for &leaf in &fabric.server_leaf {
            let leaf = leaf as usize;
            let routers = leaf_routers.get(leaf).map_or(&[][..], |r| &r[..]);
            let rank = seen_on_leaf.get(leaf).copied().unwrap_or(0);
            let Some(&router) = routers.get(rank) else {
                return Err(TopologyError::OutOfRange {
                    what: "servers on one leaf module (projection needs a router each)",
                    value: rank + 1,
                    min: 1,
                    max: routers.len(),
                });
            };
            projected.push(router);
            seen_on_leaf[leaf] += 1;
        }

        let mut routing = Self {
            torus,
            fabric,
            config,
            leaf_routers,
            projected,
            nearest: Vec::new(),
            client_slot: HashMap::new(),
        };
        if config == SpiderRoutingConfig::NearestNeighbour {
            routing.balance_nearest(clients)?;
        }
        Ok(routing)
    }

    /// Static load balancing for nearest-neighbour: per leaf, hand out (client, router)
    /// pairs in order of hop distance, each router taking at most `ceil(clients / routers)`.
    fn balance_nearest(&mut self, clients: &[Coord]) -> Result<()> {
        let leaves = self.leaf_routers.len();
        self.client_slot = HashMap::with_capacity(clients.len());
        for (slot, &c) in clients.iter().enumerate() {
            self.torus.check(c)?;
            if self.client_slot.insert(c, slot).is_some() {
                return Err(TopologyError::DuplicateClient {
                    coord: c.to_string(),
                });
            }
        }
        self.nearest = vec![u32::MAX; clients.len() * leaves];
        let mut candidates: Vec<(u32, u32, u32)> = Vec::new();
        for (leaf, routers) in self.leaf_routers.iter().enumerate() {
            if routers.is_empty() {
                continue;
            }
            let share = clients.len().div_ceil(routers.len());
            let mut load = vec![0usize; routers.len()];
            candidates.clear();
            for (slot, &c) in clients.iter().enumerate() {
                for (k, &r) in routers.iter().enumerate() {
                    let d = self.torus.hop_distance(c, self.fabric.routers[r].coord);
                    candidates.push((d, slot as u32, k as u32));
                }
            }
            candidates.sort_unstable();
            for &(_, slot, k) in &candidates {
                let cell = &mut self.nearest[slot as usize * leaves + leaf];
                if *cell == u32::MAX && load[k as usize] < share {
                    *cell = routers[k as usize] as u32;
                    load[k as usize] += 1;
                }
            }
        }
        Ok(())
    }

    /// The configuration in force.
    pub fn config(&self) -> SpiderRoutingConfig {
        self.config
    }

    /// The routers (indices into `fabric.routers`) that `client`'s traffic to `server` is
    /// spread over, equally, by LNET's per-message round-robin.
    pub fn gateways(&self, client: Coord, server: u32) -> Result<Vec<usize>> {
        self.torus.check(client)?;
        let leaf = self.server_leaf(server)?;
        Ok(match self.config {
            SpiderRoutingConfig::Baseline => (0..self.fabric.routers.len()).collect(),
            SpiderRoutingConfig::LeafRoundRobin => self.leaf_routers[leaf].clone(),
            SpiderRoutingConfig::Projection => vec![self.projected[server as usize]],
            SpiderRoutingConfig::NearestNeighbour => vec![self.nearest_router(client, leaf)?],
        })
    }

    fn server_leaf(&self, server: u32) -> Result<usize> {
        self.fabric
            .server_leaf
            .get(server as usize)
            .map(|&l| l as usize)
            .ok_or(TopologyError::OutOfRange {
                what: "server number",
                value: server as usize,
                min: 0,
                max: self.fabric.server_leaf.len().saturating_sub(1),
            })
    }

    fn nearest_router(&self, client: Coord, leaf: usize) -> Result<usize> {
        let slot = *self
            .client_slot
            .get(&client)
            .ok_or(TopologyError::CoordOutOfRange {
                coord: client.to_string(),
                dims: "set of compute nodes".to_string(),
            })?;
        let router = self.nearest[slot * self.leaf_routers.len() + leaf];
        if router == u32::MAX {
            return Err(TopologyError::OutOfRange {
                what: "routers on the server's leaf module",
                value: 0,
                min: 1,
                max: usize::MAX,
            });
        }
        Ok(router as usize)
    }

    /// The remote LNET network a server is reached on under this configuration. The paper
    /// names only `o2ib` (baseline); iopath numbers the per-leaf and per-server nets from 1.
    pub fn server_net(&self, server: u32) -> Result<String> {
        let leaf = self.server_leaf(server)?;
        Ok(match self.config {
            SpiderRoutingConfig::Baseline => "o2ib".to_string(),
            SpiderRoutingConfig::NearestNeighbour | SpiderRoutingConfig::LeafRoundRobin => {
                format!("o2ib{}", leaf + 1)
            }
            SpiderRoutingConfig::Projection => format!("o2ib{}", server + 1),
        })
    }

    /// `client`'s whole routing table: one entry per (remote net, router), all hop 1 (the
    /// Spider configurations give every route the same weight).
    pub fn routes(&self, client: Coord) -> Result<Vec<Route>> {
        self.torus.check(client)?;
        let route = |net: String, r: usize| {
            let router = &self.fabric.routers[r];
            Route {
                net,
                gateway: format!("{}@{}", router.nid, self.fabric.client_net),
                hops: 1,
                router: router.name.clone(),
                gateway_coord: router.coord,
                torus_hops: self.torus.hop_distance(client, router.coord),
            }
        };
        let mut routes = Vec::new();
        match self.config {
            SpiderRoutingConfig::Baseline => {
                for r in 0..self.fabric.routers.len() {
                    routes.push(route("o2ib".to_string(), r));
                }
            }
            SpiderRoutingConfig::LeafRoundRobin => {
                for (leaf, routers) in self.leaf_routers.iter().enumerate() {
                    for &r in routers {
                        routes.push(route(format!("o2ib{}", leaf + 1), r));
                    }
                }
            }
            SpiderRoutingConfig::NearestNeighbour => {
                for leaf in 0..self.leaf_routers.len() {
                    if self.leaf_routers[leaf].is_empty() {
                        continue;
                    }
                    routes.push(route(
                        format!("o2ib{}", leaf + 1),
                        self.nearest_router(client, leaf)?,
                    ));
                }
            }
            SpiderRoutingConfig::Projection => {
                for (server, &r) in self.projected.iter().enumerate() {
                    routes.push(route(format!("o2ib{}", server + 1), r));
                }
            }
        }
        Ok(routes)
    }
}
