//! Titan's LNET router placement for Spider II (Titan paper §III-C and Figure 3).
//!
//! 432 file-I/O routers sit four to a service module (blade), 108 modules in all. The
//! modules form 9 groups (A–I, one per IB switch letter a–i), each of 12 modules split into
//! 4 sub-groups of 3 — one sub-group per *section* of two cabinet rows. The four nodes of a
//! module connect to the same letter's switch in each of Spider II's four rows, with the
//! "swizzle": nodes 0 and 2 (one on each Gemini) to rows 1 and 2, nodes 1 and 3 to rows 3
//! and 4, so that one file system's traffic is spread over both Geminis of the module.

use serde::{Deserialize, Serialize};

use crate::coord::Coord;
use crate::torus::Torus;

/// Groups (IB switch letters a–i).
pub const GROUP_COUNT: usize = 9;
/// Sub-groups per group (one per section of two cabinet rows).
pub const SUB_GROUP_COUNT: usize = 4;
/// Modules per sub-group.
pub const MODULES_PER_SUB_GROUP: usize = 3;
/// Router nodes per service module.
pub const NODES_PER_MODULE: usize = 4;
/// Rows of Spider II, each with one switch per letter.
pub const SPIDER_ROWS: usize = 4;

/// Which Spider II row each node of a module connects to, after the swizzle: node 0 → row 1,
/// node 1 → row 3, node 2 → row 2, node 3 → row 4 (Titan paper §III-C).
pub const SWIZZLE_ROW_OF_NODE: [u8; NODES_PER_MODULE] = [1, 3, 2, 4];

/// Figure 3 of the Titan paper: for each cabinet row 0–7, the column (read as topological X)
/// and the letters of the modules in that cabinet. Two letters share a cabinet, one module
/// each. Rows 3 and 7 print a lone `H` at columns 4 and 13 (and 20 in row 7) in the text we
/// have; every other row has `HI` in those places and each group needs 12 modules, so iopath
/// reads them as `HI`.
pub const FIGURE_3: [&[(u32, &str)]; 8] = [
    &[
        (3, "BC"),
        (7, "DE"),
        (10, "BC"),
        (14, "DE"),
        (19, "BC"),
        (23, "DE"),
    ],
    &[
        (2, "FG"),
        (4, "A"),
        (6, "HI"),
        (11, "FG"),
        (12, "A"),
        (15, "HI"),
        (18, "FG"),
        (20, "A"),
        (22, "HI"),
    ],
    &[
        (1, "BC"),
        (5, "DE"),
        (8, "BC"),
        (12, "DE"),
        (17, "BC"),
        (21, "DE"),
    ],
    &[
        (0, "FG"),
        (2, "A"),
        (4, "HI"),
        (9, "FG"),
        (10, "A"),
        (13, "HI"),
        (16, "FG"),
        (18, "A"),
        (20, "HI"),
    ],
    &[
        (3, "BC"),
        (7, "DE"),
        (10, "BC"),
        (14, "DE"),
        (19, "BC"),
        (23, "DE"),
    ],
    &[
        (2, "FG"),
        (4, "A"),
        (6, "HI"),
        (11, "FG"),
        (12, "A"),
        (15, "HI"),
        (18, "FG"),
        (20, "A"),
        (22, "HI"),
    ],
    &[
        (1, "BC"),
        (5, "DE"),
        (8, "BC"),
        (12, "DE"),
        (17, "BC"),
        (21, "DE"),
    ],
    &[
        (0, "FG"),
        (2, "A"),
        (4, "HI"),
        (9, "FG"),
        (10, "A"),
        (13, "HI"),
        (16, "FG"),
        (18, "A"),
        (20, "HI"),
    ],
];

/// Z of a module, which the paper does not give: "placed approximately 1/3 around the X- and
/// Z-dimensions" (8 apart on Titan's 24), "offset by 12 in the Z-dimension" when two groups
/// share a cabinet, and the start "offset" between sections (here by one). The per-letter
/// start below is iopath's choice, made so that no two modules in one cabinet row share a
/// Z plane (the paper: "avoid putting routers in the same plane").
fn z_start(letter: char) -> u32 {
    match letter {
        'B' | 'C' => 0,
        'D' | 'E' => 2,
        'F' | 'G' => 1,
        'H' | 'I' => 3,
        _ => 6, // 'A', alone in its cabinets
    }
}

/// One InfiniBand leaf (top-of-rack) switch of Spider II, `atlas-ibsw{row}{letter}`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct IbSwitch {
    /// Spider II row, 1–4.
    pub row: u8,
    /// Position letter, `a`–`i`.
    pub letter: char,
}

impl IbSwitch {
    /// The switch's name, e.g. `atlas-ibsw1a`.
    pub fn name(self) -> String {
        format!("atlas-ibsw{}{}", self.row, self.letter)
    }

    /// The LNET network of the switch: `o2ib201`–`o2ib236`. The paper says the 36 nets
    /// correspond to the 36 switches but not in which order; iopath numbers row-major
    /// (`1a` = 201, `1i` = 209, `2a` = 210, ... `4i` = 236).
    pub fn net(self) -> String {
        let letter = (self.letter as u32).saturating_sub('a' as u32);
        format!(
            "o2ib{}",
            201 + (u32::from(self.row) - 1) * GROUP_COUNT as u32 + letter
        )
    }
}

/// One service module: four LNET routers on one blade (two Geminis).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct RouterModule {
    /// Group letter `A`–`I` (the IB switch letter it serves).
    pub group: char,
    /// Sub-group 0–3 (the section of cabinet rows `2s` and `2s + 1`).
    pub sub_group: u8,
    /// Position 0–2 within its sub-group, left to right in Figure 3.
    pub index: u8,
    /// Cabinet row (0–7) in Figure 3.
    pub cabinet_row: u8,
    /// Cabinet column in Figure 3, which is also the module's X.
    pub cabinet_column: u8,
    /// The blade's two Geminis: nodes 0–1 on the first, nodes 2–3 on the second.
    pub geminis: [Coord; 2],
}

impl RouterModule {
    /// The coordinate Algorithm 1 compares against (the first Gemini).
    pub fn coord(&self) -> Coord {
        self.geminis[0]
    }

    /// The Gemini region (`gni101`–`gni112`) of this module: the paper has 12 regions "based
    /// on their topological location", three per section; iopath numbers them
    /// `101 + 3 × section + index`.
    pub fn gni_net(&self) -> String {
        format!(
            "gni{}",
            101 + 3 * u32::from(self.sub_group) + u32::from(self.index)
        )
    }
}

/// One LNET router node.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct TitanRouter {
    /// `rtr{row}{letter}-{1..12}`, the paper's naming.
    pub name: String,
    /// Node id on the Gemini network: `2 × gemini number + node on the Gemini` (iopath's own
    /// numbering; Cray's nids are not given in the paper).
    pub nid: u32,
    /// The router's Gemini.
    pub coord: Coord,
    /// Index of its module in [`RouterLayout::modules`].
    pub module: usize,
    /// Node 0–3 within the module.
    pub node: u8,
    /// The IB switch its IB port connects to.
    pub switch: IbSwitch,
}

/// The whole router placement.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RouterLayout {
    /// All 108 modules, ordered by group, then sub-group, then index.
    pub modules: Vec<RouterModule>,
    /// All 432 routers, four per module in module order.
    pub routers: Vec<TitanRouter>,
}

impl RouterLayout {
    /// Titan's placement from Figure 3 on a 25 × 16 × 24 Gemini torus. Cabinet row `r` holds
    /// Geminis `y = 2r` and `2r + 1`.
    pub fn titan(torus: &Torus) -> Self {
        let mut modules = Vec::new();
        for (row, cabinets) in FIGURE_3.iter().enumerate() {
            let section = (row / 2) as u8;
            for &(column, letters) in cabinets.iter() {
                for (second, letter) in letters.chars().enumerate() {
                    // Index within the sub-group: how many earlier cabinets of this section
                    // already hold this letter.
                    let index = modules
                        .iter()
                        .filter(|m: &&RouterModule| m.group == letter && m.sub_group == section)
                        .count() as u8;
                    let z = (z_start(letter)
                        + u32::from(section)
                        + 8 * u32::from(index)
                        + 12 * second as u32)
                        % torus.len(crate::direction::Axis::Z);
                    let y = 2 * row as u32;
                    modules.push(RouterModule {
                        group: letter,
                        sub_group: section,
                        index,
                        cabinet_row: row as u8,
                        cabinet_column: column as u8,
                        geminis: [Coord::new(column, y, z), Coord::new(column, y + 1, z)],
                    });
                }
            }
        }
        modules.sort_by_key(|m| (m.group, m.sub_group, m.index));
        for m in &modules {
            assert!(torus.contains(m.geminis[0]) && torus.contains(m.geminis[1]));
        }

        let mut routers = Vec::with_capacity(modules.len() * NODES_PER_MODULE);
        for (mi, m) in modules.iter().enumerate() {
            let letter = m.group.to_ascii_lowercase();
            let k = u32::from(m.sub_group) * MODULES_PER_SUB_GROUP as u32 + u32::from(m.index) + 1;
            for node in 0..NODES_PER_MODULE as u8 {
                let row = SWIZZLE_ROW_OF_NODE[node as usize];
                let gemini = m.geminis[usize::from(node / 2)];
                routers.push(TitanRouter {
                    name: format!("rtr{row}{letter}-{k}"),
                    nid: 2 * torus.index(gemini) as u32 + u32::from(node % 2),
                    coord: gemini,
                    module: mi,
                    node,
                    switch: IbSwitch { row, letter },
                });
            }
        }
        Self { modules, routers }
    }

    /// The module at (`group`, `sub_group`, `index`).
    pub fn module_index(&self, group: char, sub_group: u8, index: u8) -> Option<usize> {
        self.modules
            .iter()
            .position(|m| m.group == group && m.sub_group == sub_group && m.index == index)
    }

    /// The router on module `module` that connects to Spider II row `row`.
    pub fn router_for_row(&self, module: usize, row: u8) -> &TitanRouter {
        let node = SWIZZLE_ROW_OF_NODE
            .iter()
            .position(|&r| r == row)
            .unwrap_or_else(|| panic!("Spider II has rows 1-4, not {row}"));
        &self.routers[module * NODES_PER_MODULE + node]
    }

    /// The group letters, `A`–`I`.
    pub fn groups() -> impl Iterator<Item = char> {
        ('A'..='I').take(GROUP_COUNT)
    }
}
