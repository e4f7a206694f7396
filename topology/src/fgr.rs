//! Fine-grained routing on Titan: Algorithm 1 of the Titan paper and the LNET routes it
//! produces (§IV).

use serde::{Deserialize, Serialize};

use crate::coord::Coord;
use crate::direction::Axis;
use crate::error::Result;
use crate::route::Route;
use crate::router_layout::{MODULES_PER_SUB_GROUP, RouterLayout, SPIDER_ROWS, SUB_GROUP_COUNT};
use crate::torus::Torus;

/// LNET hop count of a primary route (Titan paper §IV-C).
pub const PRIMARY_HOPS: u32 = 1;
/// LNET hop count of a backup route: used only when every primary to that net is down.
pub const BACKUP_HOPS: u32 = 10;

/// What Algorithm 1 chose for one client and one group.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct FgrChoice {
    /// The group letter, `A`–`I`.
    pub group: char,
    /// The sub-group chosen by Y.
    pub sub_group: u8,
    /// The primary module (index into [`RouterLayout::modules`]): nearest in X.
    pub primary: usize,
    /// The other two modules of the sub-group, in sub-group order.
    pub backups: [usize; 2],
    /// False when the client's Y fell in no sub-group's window and the sub-group nearest in
    /// Y was taken instead. Algorithm 1 does not say what to do then; on the Titan layout
    /// the windows cover every Y, so this never happens there.
    pub matched_window: bool,
}

/// Algorithm 1 for one `group`: the first sub-group whose first module's Y is within
/// `-1..=+2` of the client's Y (lines 4–14, compared round the Y ring), then the module of
/// that sub-group nearest in X (lines 16–31: strictly nearer replaces, so the first of equals
/// wins), the other two as backups.
pub fn choose(
    layout: &RouterLayout,
    torus: &Torus,
    group: char,
    client: Coord,
) -> Result<FgrChoice> {
    torus.check(client)?;
    let len_y = torus.len(Axis::Y);
    let first = |s: u8| {
        layout
            .module_index(group, s, 0)
            .unwrap_or_else(|| panic!("layout lacks group {group} sub-group {s}"))
    };

    let mut chosen = None;
    for s in 0..SUB_GROUP_COUNT as u8 {
        let ry = layout.modules[first(s)].coord().y;
        // C[y] in {R[y]-1, R[y], R[y]+1, R[y]+2}: the offset (C - R) mod Y is 0, 1, 2 or Y-1.
        let offset = (client.y + len_y - ry) % len_y;
        if offset <= 2 || offset == len_y - 1 {
            chosen = Some(s);
            break;
        }
    }
    let matched_window = chosen.is_some();
    let sub_group = chosen.unwrap_or_else(|| {
        (0..SUB_GROUP_COUNT as u8)
            .min_by_key(|&s| {
                let ry = layout.modules[first(s)].coord().y;
                (torus.axis_distance(Axis::Y, client.y, ry), s)
            })
            .unwrap_or(0)
    });

    let members: Vec<usize> = (0..MODULES_PER_SUB_GROUP as u8)
        .map(|i| {
            layout
                .module_index(group, sub_group, i)
                .unwrap_or_else(|| panic!("layout lacks module {group}{sub_group}.{i}"))
        })
        .collect();
    let mut primary_slot = 0;
    let mut d_min = u32::MAX;
    for (slot, &m) in members.iter().enumerate() {
        let d = torus.axis_distance(Axis::X, client.x, layout.modules[m].coord().x);
        if d < d_min {
            d_min = d;
            primary_slot = slot;
        }
    }
    let mut backups = members
        .iter()
        .enumerate()
        .filter(|&(s, _)| s != primary_slot)
        .map(|(_, &m)| m);
    let (Some(b0), Some(b1)) = (backups.next(), backups.next()) else {
        unreachable!("a sub-group has three modules");
    };
    Ok(FgrChoice {
        group,
        sub_group,
        primary: members[primary_slot],
        backups: [b0, b1],
        matched_window,
    })
}

/// A client's whole FGR routing table, as each client builds it at boot (§IV-C): for every
/// group A–I and every Spider II row, the router on the primary module that connects to that
/// row's switch at hop 1, and the two on the backup modules at hop 10 — 36 primaries and 72
/// backups. The gateway NID is on the Gemini region of the primary module, the `gni`
/// interface the client creates for it; the backups, in the same section, carry that region's
/// net too ("each router configures 3 gni interfaces corresponding to the three indices in
/// the topological section").
pub fn routes(layout: &RouterLayout, torus: &Torus, client: Coord) -> Result<Vec<Route>> {
    let mut routes = Vec::with_capacity(RouterLayout::groups().count() * SPIDER_ROWS * 3);
    for group in RouterLayout::groups() {
        let choice = choose(layout, torus, group, client)?;
        let gni = layout.modules[choice.primary].gni_net();
        for row in 1..=SPIDER_ROWS as u8 {
            let tiers = [
                (choice.primary, PRIMARY_HOPS),
                (choice.backups[0], BACKUP_HOPS),
                (choice.backups[1], BACKUP_HOPS),
            ];
            for (module, hops) in tiers {
                let router = layout.router_for_row(module, row);
                routes.push(Route {
                    net: router.switch.net(),
                    gateway: format!("{}@{gni}", router.nid),
                    hops,
                    router: router.name.clone(),
                    gateway_coord: router.coord,
                    torus_hops: torus.hop_distance(client, router.coord),
                });
            }
        }
    }
    Ok(routes)
}
