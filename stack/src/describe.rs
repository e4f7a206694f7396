//! A stack in words, for people: the node table `iopath up` prints, each node's part in the
//! I/O path, torus hop counts, and sizes. Pure functions of a [`Stack`].

use iopath_fabric::router::RouterConfig;
use iopath_topology::coord::Coord;
use iopath_topology::torus::Torus;

use crate::schema::{FyodMode, Role, RoleName, Stack};

/// `64 MiB`, `1.50 GiB`, `512 KiB`.
pub fn describe_size(bytes: u64) -> String {
    const KIB: u64 = 1 << 10;
    const MIB: u64 = 1 << 20;
    const GIB: u64 = 1 << 30;
    match bytes {
        b if b >= GIB && b.is_multiple_of(GIB) => format!("{} GiB", b / GIB),
        b if b >= GIB => format!("{:.2} GiB", b as f64 / GIB as f64),
        b if b >= MIB && b.is_multiple_of(MIB) => format!("{} MiB", b / MIB),
        b if b >= MIB => format!("{:.2} MiB", b as f64 / MIB as f64),
        b if b >= KIB && b.is_multiple_of(KIB) => format!("{} KiB", b / KIB),
        b => format!("{b} bytes"),
    }
}

/// What node `index` does, in a few words.
pub fn node_detail(stack: &Stack, index: usize) -> String {
    let targets = stack.targets();
    match stack.nodes[index].role {
        Role::Mds => {
            let layout = &stack.layout;
            let count = match layout.stripe_count {
                -1 => "all targets".to_owned(),
                n => format!("{n} stripes"),
            };
            format!(
                "namespace and layouts over {} targets; default {} stripes x {count}",
                targets.len(),
                describe_size(layout.stripe_size_bytes)
            )
        }
        Role::Oss(spec) => {
            let names: Vec<String> = targets
                .iter()
                .enumerate()
                .filter(|(_, (oss, _))| *oss == index)
                .map(|(global, _)| stack.target_name(global).to_string())
                .collect();
            format!(
                "{} {}, {} journal",
                if spec.targets == 1 {
                    "target"
                } else {
                    "targets"
                },
                names.join(" "),
                if spec.sync_journal { "sync" } else { "async" }
            )
        }
        Role::Fyod(spec) => {
            let served: Vec<&str> = stack
                .nodes_of(RoleName::Client)
                .into_iter()
                .filter(|&c| matches!(stack.nodes[c].role, Role::Client(s) if s.forwarder == Some(index)))
                .map(|c| stack.nodes[c].name.as_str())
                .collect();
            format!(
                "{} mode, serves {}",
                match spec.mode {
                    FyodMode::Pfs => "PFS",
                    FyodMode::Ufs => "UFS",
                },
                if served.is_empty() {
                    "no clients".to_owned()
                } else {
                    served.join(" ")
                }
            )
        }
        Role::Router(buffers) => {
            let nets: Vec<String> = stack.nodes[index]
                .interfaces
                .iter()
                .map(|i| stack.net_id(i.network).to_string())
                .collect();
            let mut what = format!("forwards between {}", nets.join(" and "));
            if buffers != RouterConfig::default() {
                what.push_str(&format!(
                    "; router buffers {} tiny, {} small, {} large, {} per peer",
                    buffers.tiny_buffers,
                    buffers.small_buffers,
                    buffers.large_buffers,
                    buffers.peer_buffer_credits
                ));
            }
            what
        }
        Role::Client(spec) => match spec.forwarder {
            Some(f) => format!("I/O through {}", stack.nodes[f].name),
            None => "talks to the storage servers itself".to_owned(),
        },
    }
}

/// The node table: name, role, NIDs, torus position, admin address (from `admin`), detail.
pub fn node_table(stack: &Stack, admin: &dyn Fn(usize) -> Option<String>) -> String {
    let mut rows =
        vec![["node", "role", "nids", "torus", "admin", "what it does"].map(str::to_owned)];
    for index in 0..stack.nodes.len() {
        let node = &stack.nodes[index];
        rows.push([
            node.name.clone(),
            node.role.name().to_owned(),
            stack
                .nids(index)
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>()
                .join(","),
            node.torus
                .map(|[x, y, z]| format!("{x},{y},{z}"))
                .unwrap_or_else(|| "-".to_owned()),
            admin(index).unwrap_or_else(|| "-".to_owned()),
            node_detail(stack, index),
        ]);
    }
    left_aligned(&rows)
}

/// Rows as columns of text, left-aligned, two spaces apart.
pub fn left_aligned<const N: usize>(rows: &[[String; N]]) -> String {
    let mut widths = [0usize; N];
    for row in rows {
        for (i, cell) in row.iter().enumerate() {
            widths[i] = widths[i].max(cell.len());
        }
    }
    let mut out = String::new();
    for row in rows {
        let mut line = String::new();
        for (i, cell) in row.iter().enumerate() {
            line.push_str(&format!("{cell:<w$}  ", w = widths[i]));
        }
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// Torus hops between nodes `a` and `b` (dimension-order routing's count), when both have
/// coordinates on the same torus network.
pub fn torus_hops(stack: &Stack, a: usize, b: usize) -> Option<u32> {
    let (ca, cb) = (stack.nodes[a].torus?, stack.nodes[b].torus?);
    let network = stack.nodes[a]
        .interfaces
        .iter()
        .find(|i| stack.networks[i.network].torus.is_some())?
        .network;
    stack.interface_on(b, network)?;
    let [x, y, z] = stack.networks[network].torus?;
    let torus = Torus::new(x, y, z).ok()?;
    Some(torus.hop_distance(
        Coord::new(ca[0], ca[1], ca[2]),
        Coord::new(cb[0], cb[1], cb[2]),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_in_words() {
        assert_eq!(describe_size(64 << 20), "64 MiB");
        assert_eq!(describe_size(3 << 29), "1.50 GiB");
        assert_eq!(describe_size(512 << 10), "512 KiB");
        assert_eq!(describe_size(1000), "1000 bytes");
    }

    #[test]
    fn asci_red_mini_in_words() {
        let stack = crate::preset("asci-red-mini").unwrap().stack().unwrap();
        let oss0 = stack.node_index("oss0").unwrap();
        assert_eq!(
            node_detail(&stack, oss0),
            "targets iopath-OST0000 iopath-OST0002, async journal"
        );
        let fyod1 = stack.node_index("fyod1").unwrap();
        assert_eq!(node_detail(&stack, fyod1), "PFS mode, serves c4 c5 c6 c7");
        let c0 = stack.node_index("c0").unwrap();
        let fyod0 = stack.node_index("fyod0").unwrap();
        // c0 at 0,0,0 and fyod0 at 0,0,1 on a 4x2x2 torus: one hop.
        assert_eq!(torus_hops(&stack, c0, fyod0), Some(1));
        assert_eq!(torus_hops(&stack, c0, fyod1), Some(2));
        let table = node_table(&stack, &|_| None);
        assert!(table.starts_with("node "), "{table}");
        assert!(
            table.contains("c0     client  100@mem0  0,0,0  -"),
            "{table}"
        );
    }

    /// One name per network: a router's line names the networks its NIDs are on, as lnetctl
    /// and lctl do, and the stack file's own names are paired with them once.
    #[test]
    fn a_router_names_its_networks_as_its_nids_do() {
        let stack = crate::preset("spider-mini-routed")
            .unwrap()
            .stack()
            .unwrap();
        let rtr0 = stack.node_index("rtr0").unwrap();
        let nids: Vec<String> = stack.nids(rtr0).iter().map(|n| n.to_string()).collect();
        assert_eq!(nids, ["50@mem0", "50@mem1"]);
        assert_eq!(node_detail(&stack, rtr0), "forwards between mem0 and mem1");
        assert_eq!(
            stack.network_names(false),
            "mem0 (torus0), mem1 (o2ib201), mem2 (o2ib202)"
        );
        assert_eq!(
            stack.network_names(true),
            "tcp0 (torus0), tcp1 (o2ib201), tcp2 (o2ib202)"
        );
    }
}
