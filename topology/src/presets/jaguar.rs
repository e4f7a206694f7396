//! Jaguar XT5 + Spider (Dillow et al., "I/O Congestion Avoidance via Routing and Object
//! Placement", CUG 2011 — "the Spider paper").
//!
//! | quantity | value | source |
//! |---|---|---|
//! | compute nodes | 18,688 | paper §1 |
//! | torus | 25 × 32 × 24 SeaStar routers, one node each | **derived**: 200 cabinets in 8 rows of 25 (Titan paper Fig. 3, same machine room), 24 blades × 4 nodes per XT5 cabinet = 96 nodes; X = 25 columns, Y = 8 rows × 4 nodes of a blade, Z = 24 blades; 19,200 slots |
//! | service nodes | 512 = 19,200 − 18,688 | derived |
//! | SIO nodes (OSS direct-attached / LNET routers) | 96 / 192 | §3, §6 (the paper's "196" total is 96 + 96 = 192, also 32 leaf modules × 6 SIO ports, §2) |
//! | where SIO nodes sit | [`sio_lattice`]`(6, 1)`: 48 service blades, one in each of 6 cabinets per cabinet row at X = 2, 6, …, 22 (rows 1, 3, 5, 7 shifted by 2), Z = 3 × row; the 4 nodes of a blade at Y = 4 × row + 0..3 | **assumed**: the paper shows the layout only as a picture (Titan paper Fig. 1, "distribute the routers topologically ... very regular"); the findings are sensitive to it (docs/topology.md) |
//! | other 320 service nodes | the first 320 non-SIO slots in launcher order | **assumed**: not given |
//! | launcher (nid) order | cabinet row, then physical column, then blade (Z), then node (Y within the blade) | **assumed** (ALPS hands out nids in order; Cray numbers nids cabinet by cabinet) |
//! | physical column → X | 0 → 0, odd c → (c + 1)/2, even c → 13 + (24 − c)/2 (a folded ring) | **derived** from Titan paper §III-B: "physical columns 0 and 24 (topological columns 0 and 13)" |
//! | link bandwidth | 3,020 MB/s one way | §4 (plateau from 2 to 15 senders) |
//! | injection bandwidth | 1,705 MB/s; ejection taken equal | §4; ejection **assumed** |
//! | per-OST rate | 180 MB/s | §3, §4 |
//! | OSTs per OSS | 7 | §2 |
//! | direct-attached test | 96 OSS, 672 OSTs; OST `i` on OSS `i / 7`; rank `i` writes OST `i`; a test with `n` OSSes uses OSTs `0..7n` | §3; the OST numbering is **assumed** (blocks of seven per OSS) |
//! | data per writer | 3,000 MB (direct), 8,000 MB (routed) | §3 "3 GB", §7 "8 GB" (decimal) |
//! | IB leaf modules | 32, each with 6 SIO nodes and 6 OSS | §2 |
//! | router → leaf, OSS → leaf | router `r` and OSS `s` on leaf `r mod 32`, `s mod 32`; widow1 = OSS 0–95 | **assumed** (spreads each leaf's routers over the machine) |
//! | router IB port | 1,413.5 MB/s = 135.7 GB/s / 96 SIO nodes | §6, Fig. 9 "uncongested" |
//! | cross-fat-tree efficiency | 0.693 = 94.1 / 135.7 | §6, Fig. 9 "congested" vs "uncongested" |

use serde::{Deserialize, Serialize};

use crate::coord::Coord;
use crate::error::{Result, TopologyError};
use crate::link_loads::Saturation;
use crate::placement::Target;
use crate::spider_routing::{LnetRouter, SpiderFabric};
use crate::torus::Torus;

/// Torus dimensions (derived, see the module table).
pub const DIMS: [u32; 3] = [25, 32, 24];
/// Compute nodes (§1).
pub const COMPUTE_NODES: usize = 18_688;
/// SIO nodes used as LNET routers in the routed configuration (§6).
pub const ROUTERS: usize = 192;
/// SIO nodes used as OSSes in the direct-attached configuration (§3).
pub const DIRECT_OSS: usize = 96;
/// OSTs per OSS (§2).
pub const OSTS_PER_OSS: usize = 7;
/// OSTs in widow1, the file system of every test (§2, §3, §7).
pub const OSTS: usize = DIRECT_OSS * OSTS_PER_OSS;
/// Service blades holding the SIO nodes: 192 SIO nodes, 4 per blade.
pub const SIO_BLADES: usize = 48;
/// Cabinets with SIO blades in each cabinet row (assumed, see the module table).
pub const CABINETS_WITH_SIO_PER_ROW: u32 = 6;
/// SIO blades in each such cabinet (assumed, see the module table).
pub const BLADES_PER_SIO_CABINET: u32 = 1;
/// IB leaf modules joining Jaguar to Spider (§2).
pub const LEAF_MODULES: u32 = 32;
/// OSSes of all of Spider (§2).
pub const SPIDER_OSS: usize = 192;
/// One-way SeaStar link bandwidth, MB/s (§4).
pub const LINK_MB_PER_S: f64 = 3_020.0;
/// Injection bandwidth of one node, MB/s (§4).
pub const INJECTION_MB_PER_S: f64 = 1_705.0;
/// Sustained rate of one OST, MB/s (§3, §4).
pub const OST_MB_PER_S: f64 = 180.0;
/// Data each writer writes in the direct-attached tests, MB (§3).
pub const DIRECT_DATA_MB: f64 = 3_000.0;
/// Data each writer writes in the routed tests, MB (§7).
pub const ROUTED_DATA_MB: f64 = 8_000.0;
/// Block-level bandwidth of 96 SIO nodes to storage on their own leaf, MB/s (§6, Fig. 9).
pub const SION_UNCONGESTED_MB_PER_S: f64 = 135_700.0;
/// The same through the fat tree, MB/s (§6, Fig. 9).
pub const SION_CONGESTED_MB_PER_S: f64 = 94_100.0;

/// The Jaguar + Spider machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct JaguarSpider {
    /// The SeaStar torus.
    pub torus: Torus,
    /// The 192 SIO nodes; the first 96 are the direct-attached OSSes, all 192 are routers.
    pub sio: Vec<Coord>,
    /// Compute nodes in launcher (nid) order.
    pub launcher_order: Vec<Coord>,
    /// Routers, leaf modules and servers of the routed configuration.
    pub fabric: SpiderFabric,
}

impl JaguarSpider {
    /// Builds the preset with the SIO layout of [`sio_lattice`].
    pub fn new() -> Self {
        Self::with_sio(sio_lattice(
            CABINETS_WITH_SIO_PER_ROW,
            BLADES_PER_SIO_CABINET,
        ))
        .unwrap_or_else(|e| unreachable!("the preset layout is valid: {e}"))
    }

    /// Builds the machine with the 192 SIO nodes at `sio` (router `r` at `sio[r]`; the
    /// first 96 are the direct-attached OSSes), to study other router layouts.
    pub fn with_sio(sio: Vec<Coord>) -> Result<Self> {
        let torus = Torus::new(DIMS[0], DIMS[1], DIMS[2])?;
        if sio.len() != ROUTERS {
            return Err(TopologyError::OutOfRange {
                what: "SIO nodes",
                value: sio.len(),
                min: ROUTERS,
                max: ROUTERS,
            });
        }
        let mut seen = std::collections::HashSet::new();
        for &c in &sio {
            torus.check(c)?;
            if !seen.insert(c) {
                return Err(TopologyError::DuplicateClient {
                    coord: c.to_string(),
                });
            }
        }
        let mut is_service = vec![false; torus.router_count()];
        for &c in &sio {
            is_service[torus.index(c)] = true;
        }
        let mut launcher_order = Vec::with_capacity(COMPUTE_NODES);
        let mut other_service_left = torus.router_count() - COMPUTE_NODES - ROUTERS;
        for row in 0..8u32 {
            for column in 0..DIMS[0] {
                let x = physical_column_to_x(column);
                for z in 0..DIMS[2] {
                    for node in 0..4u32 {
                        let c = Coord::new(x, 4 * row + node, z);
                        if is_service[torus.index(c)] {
                            continue;
                        }
                        if other_service_left > 0 {
                            other_service_left -= 1;
                            continue;
                        }
                        launcher_order.push(c);
                    }
                }
            }
        }
        assert_eq!(launcher_order.len(), COMPUTE_NODES);

        let routers = sio
            .iter()
            .enumerate()
            .map(|(r, &c)| LnetRouter {
                name: format!("sio{r}"),
                nid: torus.index(c) as u32,
                coord: c,
                leaf: r as u32 % LEAF_MODULES,
            })
            .collect();
        let fabric = SpiderFabric {
            routers,
            server_leaf: (0..SPIDER_OSS as u32).map(|s| s % LEAF_MODULES).collect(),
            leaf_count: LEAF_MODULES,
            client_net: "ptl".to_string(),
        };
        Ok(Self {
            torus,
            sio,
            launcher_order,
            fabric,
        })
    }

    /// The saturation point from the paper's inputs (3,020 MB/s links, 180 MB/s OSTs).
    pub fn saturation(&self) -> Saturation {
        Saturation::new(LINK_MB_PER_S, OST_MB_PER_S)
            .unwrap_or_else(|e| unreachable!("preset rates are positive: {e}"))
    }

    /// Direct-attached OSS `oss` (0..96): an SIO node in the torus.
    pub fn direct_oss(&self, oss: usize) -> Coord {
        assert!(oss < DIRECT_OSS);
        self.sio[oss]
    }

    /// The OSTs of a direct-attached test using the first `oss_count` OSSes, in OST order,
    /// each addressed to its OSS.
    pub fn direct_targets(&self, oss_count: usize) -> Result<Vec<Target>> {
        check_oss_count(oss_count)?;
        Ok((0..OSTS)
            .filter(|i| oss_of(*i) < oss_count)
            .map(|i| {
                let server = oss_of(i);
                Target {
                    index: i as u32,
                    server: server as u32,
                    anchor: self.direct_oss(server),
                }
            })
            .collect())
    }

    /// The OSTs of widow1 on the routed system using its first `oss_count` OSSes, each
    /// anchored at the router projection pairs with its OSS (router `s` for OSS `s`).
    pub fn routed_targets(&self, oss_count: usize) -> Result<Vec<Target>> {
        check_oss_count(oss_count)?;
        Ok((0..OSTS)
            .filter(|i| oss_of(*i) < oss_count)
            .map(|i| {
                let server = oss_of(i);
                Target {
                    index: i as u32,
                    server: server as u32,
                    anchor: self.sio[server],
                }
            })
            .collect())
    }

    /// The `count` nodes a job starting `offset` nodes into the launcher order gets (the
    /// paper's "place-holder" job shifts where a test lands).
    pub fn job_nodes(&self, offset: usize, count: usize) -> Result<&[Coord]> {
        let end = offset
            .checked_add(count)
            .filter(|&e| e <= self.launcher_order.len())
            .ok_or(TopologyError::NotEnoughClients {
                needed: count,
                available: self.launcher_order.len().saturating_sub(offset),
            })?;
        Ok(&self.launcher_order[offset..end])
    }

    /// Capacity of a torus link along `axis`, MB/s.
    pub fn link_mb_per_s(&self, axis: crate::direction::Axis) -> f64 {
        LINK_MB_PER_S * self.torus.link_width(axis)
    }

    /// Per-SIO IB bandwidth, MB/s (Fig. 9 uncongested over 96 SIO nodes).
    pub fn router_ib_mb_per_s(&self) -> f64 {
        SION_UNCONGESTED_MB_PER_S / DIRECT_OSS as f64
    }

    /// Fraction of bandwidth left when traffic crosses the IB fat tree (Fig. 9).
    pub fn fat_tree_efficiency(&self) -> f64 {
        SION_CONGESTED_MB_PER_S / SION_UNCONGESTED_MB_PER_S
    }
}

impl Default for JaguarSpider {
    fn default() -> Self {
        Self::new()
    }
}

fn check_oss_count(oss_count: usize) -> Result<()> {
    if (1..=DIRECT_OSS).contains(&oss_count) {
        Ok(())
    } else {
        Err(TopologyError::OutOfRange {
            what: "OSS count",
            value: oss_count,
            min: 1,
            max: DIRECT_OSS,
        })
    }
}

/// The SIO layout: `per_row` cabinets in each of the 8 cabinet rows, evenly spaced in X
/// (odd rows shifted by half a spacing), each holding `blades` service blades evenly spaced in
/// Z, 48 blades of 4 nodes in all. Router `r` is node `r / 48` of blade `r mod 48`, so the
/// first 96 routers (the direct-attached OSSes) are nodes 0 and 1 of every blade and
/// consecutive routers sit in different cabinets.
pub fn sio_lattice(per_row: u32, blades: u32) -> Vec<Coord> {
    assert_eq!(8 * per_row * blades, SIO_BLADES as u32, "48 service blades");
    let spacing = DIMS[0] / per_row;
    let blade_coord = |b: u32, node: u32| {
        let cabinet = b / blades;
        let row = cabinet / per_row;
        let k = cabinet % per_row;
        let x = (spacing / 2 + spacing * k + (spacing / 2) * (row % 2)) % DIMS[0];
        let z = ((b % blades) * (DIMS[2] / blades) + 3 * row) % DIMS[2];
        Coord::new(x, 4 * row + node, z)
    };
    // Blade order interleaves cabinets so that consecutive routers are far apart.
    let order: Vec<u32> = (0..blades)
        .flat_map(|slot| (0..8 * per_row).map(move |cab| cab * blades + slot))
        .collect();
    (0..ROUTERS as u32)
        .map(|r| {
            blade_coord(
                order[(r % SIO_BLADES as u32) as usize],
                r / SIO_BLADES as u32,
            )
        })
        .collect()
}

/// Topological X of a physical cabinet column on a 25-column folded ring: 0, 1, 3, ..., 23,
/// 24, 22, ..., 2 (derived from "physical columns 0 and 24 (topological columns 0 and 13)").
pub fn physical_column_to_x(column: u32) -> u32 {
    assert!(column < DIMS[0]);
    if column == 0 {
        0
    } else if column % 2 == 1 {
        column.div_ceil(2)
    } else {
        13 + (24 - column) / 2
    }
}

/// The OSS serving OST `ost`: OSTs are numbered in blocks of seven per OSS (`OST0000`–`OST0006`
/// on OSS 0, ...) — **assumed**, the paper does not give Spider's OST numbering.
pub fn oss_of(ost: usize) -> usize {
    ost / OSTS_PER_OSS
}
