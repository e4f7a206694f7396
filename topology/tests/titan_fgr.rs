//! Titan's router placement and Algorithm 1 on the full `titan-spider2` preset.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use std::collections::{HashMap, HashSet};

use iopath_topology::Axis;
use iopath_topology::fgr::{self, BACKUP_HOPS, PRIMARY_HOPS};
use iopath_topology::presets::TitanSpider2;
use iopath_topology::router_layout::RouterLayout;

#[test]
fn layout_has_the_papers_counts() {
    let titan = TitanSpider2::new();
    let layout = &titan.layout;
    assert_eq!(layout.modules.len(), 108);
    assert_eq!(layout.routers.len(), 432);
    for group in RouterLayout::groups() {
        for s in 0..4 {
            for i in 0..3 {
                assert!(
                    layout.module_index(group, s, i).is_some(),
                    "{group} {s} {i}"
                );
            }
        }
        // Each group's 3 modules of a sub-group sit in that section's two cabinet rows.
        for m in layout.modules.iter().filter(|m| m.group == group) {
            assert_eq!(u32::from(m.sub_group), u32::from(m.cabinet_row) / 2);
        }
    }
    // 36 switches with 12 routers each; router names unique; every router position unique.
    let mut per_switch: HashMap<String, usize> = HashMap::new();
    for r in &layout.routers {
        *per_switch.entry(r.switch.name()).or_default() += 1;
    }
    assert_eq!(per_switch.len(), 36);
    assert!(per_switch.values().all(|&n| n == 12));
    let nets: HashSet<String> = layout.routers.iter().map(|r| r.switch.net()).collect();
    assert_eq!(nets.len(), 36);
    assert!(nets.contains("o2ib201") && nets.contains("o2ib236"));
    let names: HashSet<&str> = layout.routers.iter().map(|r| r.name.as_str()).collect();
    assert_eq!(names.len(), 432);
    let nids: HashSet<u32> = layout.routers.iter().map(|r| r.nid).collect();
    assert_eq!(nids.len(), 432);
    // The swizzle: nodes 0 and 2 (one per Gemini) serve rows 1 and 2.
    for (mi, m) in layout.modules.iter().enumerate() {
        let r1 = layout.router_for_row(mi, 1);
        let r2 = layout.router_for_row(mi, 2);
        assert_eq!((r1.node, r2.node), (0, 2));
        assert_ne!(
            r1.coord, r2.coord,
            "one file system's routers on both Geminis"
        );
        assert_eq!(r1.coord, m.geminis[0]);
        assert_eq!(layout.router_for_row(mi, 3).node, 1);
        assert_eq!(layout.router_for_row(mi, 4).node, 3);
    }
}

#[test]
fn every_client_gets_36_primaries_and_72_backups() {
    let titan = TitanSpider2::new();
    let clients = titan.client_geminis();
    assert_eq!(clients.len(), 25 * 16 * 24 - 108 * 2);
    for &client in &clients {
        let routes = titan.routes(client).unwrap();
        assert_eq!(routes.len(), 108);
        let mut primaries: HashMap<&str, usize> = HashMap::new();
        let mut backups: HashMap<&str, usize> = HashMap::new();
        for r in &routes {
            match r.hops {
                PRIMARY_HOPS => *primaries.entry(&r.net).or_default() += 1,
                BACKUP_HOPS => *backups.entry(&r.net).or_default() += 1,
                other => panic!("unexpected hop count {other}"),
            }
        }
        assert_eq!(primaries.len(), 36, "client {client}");
        assert!(
            primaries.values().all(|&n| n == 1),
            "one primary per leaf switch"
        );
        assert_eq!(backups.len(), 36);
        assert!(
            backups.values().all(|&n| n == 2),
            "two backups per leaf switch"
        );
        // The gateway of every route is a router on the route's switch.
        for r in &routes {
            let router = titan
                .layout
                .routers
                .iter()
                .find(|x| x.name == r.router)
                .unwrap();
            assert_eq!(router.switch.net(), r.net);
            assert!(r.gateway.starts_with(&format!("{}@gni1", router.nid)));
        }
    }
}

#[test]
fn primary_is_nearest_in_x_within_the_sub_group_chosen_by_y() {
    let titan = TitanSpider2::new();
    let (t, layout) = (&titan.torus, &titan.layout);
    for client in titan.client_geminis() {
        for group in RouterLayout::groups() {
            let choice = fgr::choose(layout, t, group, client).unwrap();
            assert!(choice.matched_window, "Titan's windows cover every Y");
            // The chosen sub-group's first module is within -1..=+2 of the client in Y.
            let first = layout.module_index(group, choice.sub_group, 0).unwrap();
            let ry = layout.modules[first].coord().y;
            let offset = (client.y + 16 - ry) % 16;
            assert!(offset <= 2 || offset == 15);
            // Primary and backups are the sub-group's three modules.
            let mut all = vec![choice.primary, choice.backups[0], choice.backups[1]];
            all.sort_unstable();
            let mut expected: Vec<usize> = (0..3)
                .map(|i| layout.module_index(group, choice.sub_group, i).unwrap())
                .collect();
            expected.sort_unstable();
            assert_eq!(all, expected);
            let dx = |m: usize| t.axis_distance(Axis::X, client.x, layout.modules[m].coord().x);
            assert!(dx(choice.primary) <= dx(choice.backups[0]));
            assert!(dx(choice.primary) <= dx(choice.backups[1]));
        }
    }
}

#[test]
fn out_of_range_client_is_an_error() {
    let titan = TitanSpider2::new();
    assert!(titan.routes(iopath_topology::Coord::new(25, 0, 0)).is_err());
    assert!(titan.routes(iopath_topology::Coord::new(0, 16, 0)).is_err());
}
