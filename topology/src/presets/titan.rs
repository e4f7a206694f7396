//! Titan XK7 + Spider II (Ezell et al., "I/O Router Placement and Fine-Grained Routing on
//! Titan to Support Spider II", CUG 2014 — "the Titan paper").
//!
//! | quantity | value | source |
//! |---|---|---|
//! | compute nodes | 18,688 | §II |
//! | torus | 25 × 16 × 24 Geminis, two nodes each, Y links half width | **derived**: the Jaguar cabinets (25 × 32 × 24 nodes) with "each Gemini supports two nodes, which effectively halved the Y-dimension length" (§III-A) |
//! | LNET routers | 440, of which 432 for file I/O, 8 for metadata | §II, §IV-A |
//! | router modules | 108 of 4 nodes; 9 groups × 4 sub-groups × 3 modules | §III-C, §IV-A |
//! | module positions | Figure 3 (columns read as X, cabinet row `r` = Y `2r`, `2r+1`) | Fig. 3; Z **assumed** (see `router_layout`) |
//! | IB leaf switches | 36 = 4 rows × 9 (a–i), 12 routers each | Table I, §III-C |
//! | LNET nets | o2ib201–236 (one per switch), gni101–112 (12 regions) | §IV-C; numbering order **assumed** |
//! | Table I | 20,160 disks, 2,016 OSTs, 288 OSSes, 432 routers, 36 switches, 4 rows, 2 file systems | Table I |

use serde::{Deserialize, Serialize};

use crate::coord::Coord;
use crate::error::Result;
use crate::fgr;
use crate::route::Route;
use crate::router_layout::RouterLayout;
use crate::torus::Torus;

/// Gemini torus dimensions (derived).
pub const DIMS: [u32; 3] = [25, 16, 24];
/// Compute nodes (§II).
pub const COMPUTE_NODES: usize = 18_688;
/// All LNET routers on Titan (§II).
pub const LNET_ROUTERS: usize = 440;
/// Routers used for metadata only, outside fine-grained routing (§IV-A).
pub const METADATA_ROUTERS: usize = 8;

/// Table I of the Titan paper: totals of Spider II.
pub const TABLE_I: [(&str, u32); 7] = [
    ("disks", 20_160),
    ("OSTs", 2_016),
    ("OSSs", 288),
    ("I/O routers", 432),
    ("IB switches", 36),
    ("rows", 4),
    ("file systems", 2),
];

/// The Titan + Spider II machine.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TitanSpider2 {
    /// The Gemini torus.
    pub torus: Torus,
    /// Router modules and routers.
    pub layout: RouterLayout,
}

impl TitanSpider2 {
    /// Builds the preset.
    pub fn new() -> Self {
        let torus = Torus::gemini(DIMS[0], DIMS[1], DIMS[2])
            .unwrap_or_else(|e| unreachable!("preset dimensions are valid: {e}"));
        let layout = RouterLayout::titan(&torus);
        Self { torus, layout }
    }

    /// The FGR routes of the client on Gemini `client` (Algorithm 1 for groups A–I).
    pub fn routes(&self, client: Coord) -> Result<Vec<Route>> {
        fgr::routes(&self.layout, &self.torus, client)
    }

    /// Geminis that host no router module: where clients live.
    pub fn client_geminis(&self) -> Vec<Coord> {
        let mut router = vec![false; self.torus.router_count()];
        for m in &self.layout.modules {
            for g in m.geminis {
                router[self.torus.index(g)] = true;
            }
        }
        self.torus
            .coords()
            .filter(|&c| !router[self.torus.index(c)])
            .collect()
    }
}

impl Default for TitanSpider2 {
    fn default() -> Self {
        Self::new()
    }
}
