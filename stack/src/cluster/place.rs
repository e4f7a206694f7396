//! [`place`]: a stack put on hosts. Each node lands on a host — the one its `host` names, else
//! the next of the allocation in turn (clients all on the first, where the application runs)
//! — and each numbered address becomes a TCP listener on that host: the host's address in the
//! network's `subnet` (or its first address), port `port_base + 1000 × network + number`.
//! Every node's NID is fixed before any starts, as LNet's configuration is.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};

use super::hosts::{Host, Hosts};
use crate::error::StackError;
use crate::schema::{Address, HostRef, RoleName, Stack};

/// The first port numbered addresses listen on, by default.
pub const PORT_BASE_DEFAULT: u16 = 21_000;

/// Ports each network has for its numbered addresses: network `k`'s address `n` listens on
/// `port_base + PORTS_PER_NETWORK × k + n`, so one host can hold a node on every network.
pub const PORTS_PER_NETWORK: u32 = 1_000;

/// `stack` with every node on a host and every numbered address a socket there; each node's
/// `host` names the host it landed on. Errors name the node, its host and what is missing.
pub fn place(stack: &Stack, hosts: &Hosts, port_base: u16) -> Result<Stack, StackError> {
    let mut placed = stack.clone();
    // Servers and routers without a host are dealt out from the second host on: the first
    // runs the application and its clients. With one host, everything shares it.
    let mut next = usize::from(hosts.hosts.len() > 1);
    let mut taken: BTreeMap<SocketAddr, String> = BTreeMap::new();
    for (index, node) in placed.nodes.iter_mut().enumerate() {
        let bad =
            |why: String| StackError::invalid(&stack.origin, format!("nodes ({})", node.name), why);
        let host: Host = match &node.host {
            Some(HostRef::Index(k)) => hosts.hosts.get(*k).cloned().ok_or_else(|| {
                bad(format!(
                    "host = {k}, and {} has {} host{} (numbered from 0)",
                    hosts.origin,
                    hosts.hosts.len(),
                    if hosts.hosts.len() == 1 { "" } else { "s" }
                ))
            })?,
            Some(HostRef::Name(name)) => hosts
                .by_name(name)
                .cloned()
                .unwrap_or_else(|| Host::named(name)),
            None if stack.nodes[index].role.kind() == RoleName::Client => hosts.hosts[0].clone(),
            None => {
                let host = hosts.hosts[next % hosts.hosts.len()].clone();
                next += 1;
                host
            }
        };
        let addrs = host
            .addresses()
            .map_err(|why| bad(format!("placed on {}: {why}", host.name)))?;
        for interface in &mut node.interfaces {
            let Address::Number(number) = interface.address else {
                continue;
            };
            let network = &stack.networks[interface.network];
            let ip = address_on(&addrs, network.subnet.as_ref()).ok_or_else(|| {
                bad(format!(
                    "placed on {} ({}), which has no address in {}'s subnet {}: put it on a \
                     host with an interface there, or, if this host has one that its name does \
                     not resolve to, name the host's addresses in a hostfile (`--hostfile`, \
                     a line `NAME ADDRESS ...`)",
                    host.name,
                    list(&addrs),
                    network.name,
                    network.subnet.map_or_else(String::new, |s| s.to_string())
                ))
            })?;
            let port = port_for(port_base, network.number, number).ok_or_else(|| {
                bad(format!(
                    "address {number} on {} cannot be a port: on a cluster, address n of network \
                     k listens on port {port_base} + {PORTS_PER_NETWORK} × k + n, so n must be \
                     below {PORTS_PER_NETWORK} and the port at most 65535 (try a lower \
                     --port-base)",
                    network.name
                ))
            })?;
            let socket = SocketAddr::new(ip, port);
            if let Some(other) = taken.insert(socket, node.name.clone()) {
                return Err(bad(format!(
                    "{socket} is {other}'s address too: on one host, numbered addresses on one \
                     network must differ"
                )));
            }
            interface.address = Address::Socket(socket);
        }
        node.host = Some(HostRef::Name(host.name.clone()));
    }
    Ok(placed)
}

/// The address among `addrs` inside `subnet`, or the first when the network has none.
fn address_on(addrs: &[IpAddr], subnet: Option<&crate::schema::Subnet>) -> Option<IpAddr> {
    match subnet {
        Some(subnet) => addrs.iter().copied().find(|&ip| subnet.contains(ip)),
        None => addrs.first().copied(),
    }
}

/// The port of address `number` on network `network`, if it is one.
fn port_for(port_base: u16, network: u16, number: u32) -> Option<u16> {
    if number >= PORTS_PER_NETWORK {
        return None;
    }
    let port = u32::from(port_base) + PORTS_PER_NETWORK * u32::from(network) + number;
    u16::try_from(port).ok()
}

fn list(addrs: &[IpAddr]) -> String {
    addrs
        .iter()
        .map(IpAddr::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    const ROUTED: &str = r#"
name = "two-subnets"
[[networks]]
name = "tcpa"
subnet = "10.77.1.0/24"
[[networks]]
name = "tcpb"
subnet = "10.77.2.0/24"
[[nodes]]
name = "c"
role = "client"
count = 2
nids = { tcpa = 100 }
forwarder = "none"
[[nodes]]
name = "rtr"
role = "router"
count = 2
nids = { tcpa = 50, tcpb = 50 }
host = ["r0", "r1"]
[[nodes]]
name = "oss"
role = "oss"
nids = { tcpb = 10 }
host = 3
[[nodes]]
name = "mds"
role = "mds"
nids = { tcpb = 1 }
host = "s0"
[[routes]]
from = "tcpa"
net = "tcpb"
gateway = "rtr0"
[[routes]]
from = "tcpb"
net = "tcpa"
gateway = "rtr1"
"#;

    fn hosts() -> Hosts {
        Hosts::parse_hostfile(
            "c0 10.77.1.2\nr0 10.77.1.3 10.77.2.3\nr1 10.77.1.4 10.77.2.4\ns0 10.77.2.5\n",
            "hostfile h",
        )
        .unwrap()
    }

    #[test]
    fn nodes_land_on_their_hosts_with_an_address_per_subnet() {
        let stack = Stack::parse(ROUTED, "t").unwrap();
        let placed = place(&stack, &hosts(), 21_000).unwrap();
        let at = |name: &str| {
            let i = placed.node_index(name).unwrap();
            let host = placed.nodes[i].host.clone().unwrap().to_string();
            let nids: Vec<String> = placed.nids(i).iter().map(ToString::to_string).collect();
            (host, nids)
        };
        // Clients on the first host; ports 21000 + 1000 × network + address.
        assert_eq!(at("c1"), ("c0".into(), vec!["10.77.1.2:21101@tcp0".into()]));
        assert_eq!(
            at("rtr1"),
            (
                "r1".into(),
                vec!["10.77.1.4:21051@tcp0".into(), "10.77.2.4:22051@tcp1".into()]
            )
        );
        assert_eq!(at("oss").0, "s0", "host = 3: the allocation's fourth");
        assert_eq!(
            at("mds"),
            ("s0".into(), vec!["10.77.2.5:22001@tcp1".into()])
        );
        // What it writes reads back as the same stack.
        let again = Stack::parse(&placed.to_toml(), "placed").unwrap();
        assert_eq!(again.nodes, placed.nodes);
    }

    #[test]
    fn a_node_on_a_host_without_its_subnet_is_refused_by_name() {
        let mut stack = Stack::parse(ROUTED, "t").unwrap();
        let rtr0 = stack.node_index("rtr0").unwrap();
        stack.nodes[rtr0].host = Some(HostRef::Name("s0".into()));
        let e = place(&stack, &hosts(), 21_000).unwrap_err().to_string();
        assert!(
            e.contains("rtr0") && e.contains("s0") && e.contains("10.77.1.0/24"),
            "{e}"
        );
        // A host that has the interface but whose name resolves to another is told how to say so.
        assert!(e.contains("--hostfile"), "{e}");
        let mut stack = Stack::parse(ROUTED, "t").unwrap();
        let oss = stack.node_index("oss").unwrap();
        stack.nodes[oss].host = Some(HostRef::Index(9));
        let e = place(&stack, &hosts(), 21_000).unwrap_err().to_string();
        assert!(e.contains("host = 9") && e.contains("4 hosts"), "{e}");
        let e = place(&Stack::parse(ROUTED, "t").unwrap(), &hosts(), 65_000)
            .unwrap_err()
            .to_string();
        assert!(e.contains("--port-base"), "{e}");
    }

    #[test]
    fn unnamed_hosts_are_taken_in_turn_and_unresolvable_ones_named() {
        let unplaced = ROUTED
            .replace("host = 3\n", "")
            .replace("host = [\"r0\", \"r1\"]\n", "");
        let stack = Stack::parse(&unplaced, "t").unwrap();
        let one = Hosts::parse_hostfile("s0 10.77.2.5 10.77.1.9\n", "h").unwrap();
        let placed = place(&stack, &one, 21_000).unwrap();
        assert_eq!(
            placed.nodes[placed.node_index("oss").unwrap()].host,
            Some(HostRef::Name("s0".into()))
        );
        let stack = Stack::parse(
            ROUTED
                .replace("host = 3", "host = \"nosuch.invalid\"")
                .as_str(),
            "t",
        )
        .unwrap();
        let e = place(&stack, &hosts(), 21_000).unwrap_err().to_string();
        assert!(e.contains("oss") && e.contains("nosuch.invalid"), "{e}");
        // A stack without host lines keeps its servers and routers off the first host, where
        // the clients and the application run (spider-mini-routed put its routers there).
        let bare = ROUTED
            .replace("host = 3\n", "")
            .replace("host = [\"r0\", \"r1\"]\n", "")
            .replace("host = 0\n", "");
        let placed = place(&Stack::parse(&bare, "t").unwrap(), &hosts(), 21_000).unwrap();
        for node in &placed.nodes {
            let on = node.host.clone().unwrap().to_string();
            let client = node.role.kind() == RoleName::Client;
            assert_eq!(on == "c0", client, "{} is on {on}", node.name);
        }
    }
}
