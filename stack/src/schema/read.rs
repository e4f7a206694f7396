//! A stack file read and checked into a [`Stack`]: networks numbered, `count` entries
//! expanded into nodes, names resolved to indexes, routes expanded to the nodes that use them,
//! and every conversation the roles need checked reachable ([`super::reach`]). Every refusal
//! names the field it is about.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;

use iopath_fabric::router::RouterConfig;
use iopath_mds::layout::FsName;

use super::file::{
    AddressValue, FyodModeName, HostItem, HostValue, JournalName, LayoutSection, NetworkEntry,
    NodeEntry, RoleName, RouteEntry, SizeValue, StackFile,
};
use super::stack::{
    Address, COMMIT_INTERVAL_DEFAULT_MS, COMMIT_INTERVAL_MAX_MS, ClientSpec,
    DISK_BANDWIDTH_MAX_BYTES_S, DISK_SEEK_MAX_MS, DefaultLayout, FYOD_CALL_MAX_US, FYOD_CPUS_MAX,
    FYOD_MEMORY_MAX_BYTES, FyodMode, FyodServiceNode, FyodSpec, HOP_BY_HOP_HOST_BYTES_S_MAX,
    HOST_INDEX_MAX, HOST_NAME_MAX_BYTES, HostRef, LINK_BANDWIDTH_MAX_BYTES_S, LINK_LATENCY_MAX_US,
    NAME_MAX_BYTES, NETWORKS_MAX, NO_FORWARDER, NODES_MAX, Network, NetworkLink, NodeInterface,
    NodeSpec, OssSpec, OstDisk, RECOVERY_WINDOW_DEFAULT_MS, RECOVERY_WINDOW_MAX_MS,
    ROUTER_BUFFERS_MAX, Role, RouteRule, Stack, Subnet, TARGETS_PER_OSS_MAX, TIME_SCALE_MAX,
    TORUS_SIDE_MAX,
};
use crate::error::StackError;

impl Stack {
    /// Parses and checks a stack file's text; `origin` names it in messages.
    pub fn parse(text: &str, origin: &str) -> Result<Stack, StackError> {
        Stack::from_file(&StackFile::parse(text, origin)?, origin)
    }

    /// Reads, parses and checks the stack file at `path`.
    pub fn load(path: &std::path::Path) -> Result<Stack, StackError> {
        let text = crate::schema::file::read_text(path, "read the stack file")?;
        Stack::parse(&text, &path.display().to_string())
    }

    /// Checks a parsed stack file.
    pub fn from_file(file: &StackFile, origin: &str) -> Result<Stack, StackError> {
        let bad = |field: String, why: String| StackError::invalid(origin, field, why);
        check_name(&file.name).map_err(|why| bad("name".into(), why))?;
        let fsname = match &file.fsname {
            None => FsName::default(),
            Some(name) => FsName::new(name).map_err(|e| bad("fsname".into(), e.to_string()))?,
        };
        let layout = check_layout(&file.layout).map_err(|(field, why)| bad(field, why))?;
        let networks = check_networks(&file.networks).map_err(|(field, why)| bad(field, why))?;
        let (mut nodes, forwarders) =
            expand_nodes(&file.nodes, &networks).map_err(|(field, why)| bad(field, why))?;
        assign_forwarders(&mut nodes, &forwarders).map_err(|(field, why)| bad(field, why))?;
        check_roles(&nodes).map_err(|(field, why)| bad(field, why))?;
        let time_scale = match file.model.as_ref().and_then(|m| m.time_scale) {
            None => 1,
            Some(scale) if !(1..=TIME_SCALE_MAX).contains(&scale) => {
                return Err(bad(
                    "model.time_scale".into(),
                    format!("{scale}: use 1 to {TIME_SCALE_MAX} host seconds per modeled second"),
                ));
            }
            Some(_)
                if networks.iter().all(|n| n.link.is_none())
                    && nodes.iter().all(|n| {
                        n.disk().is_none()
                            && n.nic_bandwidth_bytes_s.is_none()
                            && n.service().is_none()
                    }) =>
            {
                return Err(bad(
                    "model.time_scale".into(),
                    "scales nothing: no network has a modeled link, no node a NIC rate, no \
                     OSS a modeled disk and no fyod a modeled service node (give one a \
                     bandwidth, nic_bandwidth, disk_bandwidth or fyod_call_us)"
                        .into(),
                ));
            }
            Some(scale) => scale,
        };
        check_torus_pace(&networks, time_scale).map_err(|(field, why)| bad(field, why))?;
        let route_sets: Vec<String> = file
            .routes
            .iter()
            .filter_map(|r| r.set.clone())
            .collect::<BTreeSet<_>>()
            .into_iter()
            .collect();
        if let Some(set) = &file.route_set
            && !route_sets.contains(set)
        {
            return Err(bad(
                "route_set".into(),
                format!(
                    "no [[routes]] entry has set = {set:?} (sets named: {})",
                    list_or_none(&route_sets)
                ),
            ));
        }
        let routes = expand_routes(&file.routes, file.route_set.as_deref(), &networks, &nodes)
            .map_err(|(field, why)| bad(field, why))?;
        let stack = Stack {
            origin: origin.to_owned(),
            name: file.name.clone(),
            description: file.description.trim().to_owned(),
            fsname,
            layout,
            networks,
            nodes,
            routes,
            route_set: file.route_set.clone(),
            route_sets,
            time_scale,
        };
        super::reach::check(&stack).map_err(|(field, why)| bad(field, why))?;
        Ok(stack)
    }
}

type FieldError = (String, String);

fn list_or_none(items: &[String]) -> String {
    if items.is_empty() {
        "none".to_owned()
    } else {
        items.join(", ")
    }
}

fn check_name(name: &str) -> Result<(), String> {
    if name.is_empty() {
        return Err("must not be empty".into());
    }
    if name.len() > NAME_MAX_BYTES {
        return Err(format!("{name:?} is longer than {NAME_MAX_BYTES} bytes"));
    }
    if name.starts_with('.') || name.starts_with('-') {
        return Err(format!("{name:?} must not start with '.' or '-'"));
    }
    if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
    {
        return Err(format!(
            "{name:?} has {c:?}: use letters, digits, '-', '_' and '.'"
        ));
    }
    Ok(())
}

fn check_layout(layout: &LayoutSection) -> Result<DefaultLayout, FieldError> {
    let stripe_size_bytes = match &layout.stripe_size {
        None => iopath_mds::layout::STRIPE_SIZE_DEFAULT_BYTES,
        Some(SizeValue::Bytes(b)) => *b,
        Some(SizeValue::Text(t)) => iopath_fabric::units::parse_size(t)
            .map_err(|why| ("layout.stripe_size".to_owned(), why))?,
    };
    let unit = iopath_mds::layout::STRIPE_SIZE_UNIT_BYTES;
    if stripe_size_bytes == 0 || !stripe_size_bytes.is_multiple_of(unit) {
        return Err((
            "layout.stripe_size".into(),
            format!("{stripe_size_bytes} bytes is not a positive multiple of 64 KiB"),
        ));
    }
    if stripe_size_bytes > iopath_mds::layout::STRIPE_SIZE_MAX_BYTES {
        return Err((
            "layout.stripe_size".into(),
            format!(
                "{stripe_size_bytes} bytes exceeds Lustre's largest stripe ({} bytes)",
                iopath_mds::layout::STRIPE_SIZE_MAX_BYTES
            ),
        ));
    }
    let stripe_count = layout.stripe_count.unwrap_or(1);
    if stripe_count == 0 || stripe_count < -1 {
        return Err((
            "layout.stripe_count".into(),
            format!("{stripe_count}: use a positive count, or -1 for all targets"),
        ));
    }
    let stripe_offset = layout.stripe_offset.unwrap_or(-1);
    if stripe_offset < -1 {
        return Err((
            "layout.stripe_offset".into(),
            format!("{stripe_offset}: use a target index, or -1 for any"),
        ));
    }
    Ok(DefaultLayout {
        stripe_size_bytes,
        stripe_count,
        stripe_offset,
    })
}

fn check_networks(entries: &[NetworkEntry]) -> Result<Vec<Network>, FieldError> {
    if entries.is_empty() {
        return Err((
            "networks".into(),
            "a stack needs at least one [[networks]] entry".into(),
        ));
    }
    if entries.len() > NETWORKS_MAX {
        return Err((
            "networks".into(),
            format!("{} networks; at most {NETWORKS_MAX}", entries.len()),
        ));
    }
    let mut seen = BTreeSet::new();
    let mut out = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        let field = |leaf: &str| format!("networks[{i}] ({}).{leaf}", entry.name);
        check_name(&entry.name).map_err(|why| (format!("networks[{i}].name"), why))?;
        if !seen.insert(entry.name.clone()) {
            return Err((
                format!("networks[{i}].name"),
                format!("{:?} is named twice", entry.name),
            ));
        }
        if let Some(dims) = entry.torus
            && dims.iter().any(|&d| d == 0 || d > TORUS_SIDE_MAX)
        {
            return Err((
                field("torus"),
                format!("{dims:?}: each side must be 1 to {TORUS_SIDE_MAX}"),
            ));
        }
        let bandwidth = rate(
            entry.bandwidth.as_ref(),
            "bandwidth",
            LINK_BANDWIDTH_MAX_BYTES_S,
        )
        .map_err(|(leaf, why)| (field(&leaf), why))?;
        let link = match (bandwidth, entry.latency_us) {
            (None, None) => None,
            (None, Some(_)) => {
                return Err((
                    field("latency_us"),
                    "a modeled latency needs a modeled bandwidth too".into(),
                ));
            }
            (Some(_), Some(l)) if l > LINK_LATENCY_MAX_US => {
                return Err((
                    field("latency_us"),
                    format!("{l}: use 0 to {LINK_LATENCY_MAX_US} microseconds"),
                ));
            }
            (Some(b), l) => Some(NetworkLink {
                bandwidth_bytes_s: b,
                latency_us: l.unwrap_or(0),
            }),
        };
        let subnet = match &entry.subnet {
            None => None,
            Some(text) => Some(Subnet::parse(text).map_err(|why| (field("subnet"), why))?),
        };
        let hop_by_hop = entry.hop_by_hop.unwrap_or(false);
        if hop_by_hop && (entry.torus.is_none() || link.is_none()) {
            return Err((
                field("hop_by_hop"),
                "crossing a torus hop by hop needs its dimensions (torus) and its links' \
                 bandwidth"
                    .into(),
            ));
        }
        out.push(Network {
            name: entry.name.clone(),
            number: i as u16,
            torus: entry.torus,
            link,
            hop_by_hop,
            subnet,
        });
    }
    Ok(out)
}

/// A client entry's forwarder as written: `None` when absent (share the fyods in blocks).
type ForwarderAsked = Option<String>;

fn expand_nodes(
    entries: &[NodeEntry],
    networks: &[Network],
) -> Result<(Vec<NodeSpec>, Vec<ForwarderAsked>), FieldError> {
    let by_name: HashMap<&str, usize> = networks
        .iter()
        .enumerate()
        .map(|(i, n)| (n.name.as_str(), i))
        .collect();
    let mut nodes = Vec::new();
    let mut forwarders = Vec::new();
    for (e, entry) in entries.iter().enumerate() {
        let field = |leaf: &str| format!("nodes[{e}] ({}).{leaf}", entry.name);
        check_name(&entry.name).map_err(|why| (format!("nodes[{e}].name"), why))?;
        let count = entry.count.unwrap_or(1);
        if count == 0 {
            return Err((field("count"), "must be at least 1".into()));
        }
        if nodes.len() + count as usize > NODES_MAX {
            // Named by its count where it has one; an entry of one node is named itself.
            let at = if entry.count.is_some() {
                field("count")
            } else {
                format!("nodes[{e}] ({})", entry.name)
            };
            return Err((
                at,
                format!(
                    "the stack would have more than {NODES_MAX} nodes ({} before this entry)",
                    nodes.len()
                ),
            ));
        }
        let role = role_of(entry).map_err(|(leaf, why)| (field(&leaf), why))?;
        let nic_bandwidth_bytes_s = rate(
            entry.nic_bandwidth.as_ref(),
            "nic_bandwidth",
            LINK_BANDWIDTH_MAX_BYTES_S,
        )
        .map_err(|(leaf, why)| (field(&leaf), why))?;
        if entry.nids.is_empty() {
            return Err((
                field("nids"),
                "a node needs an address on at least one network, as in nids = { net0 = 1 }".into(),
            ));
        }
        let interfaces = interfaces_of(entry, count, networks, &by_name, &field)?;
        let hosts = hosts_of(entry.host.as_ref()).map_err(|why| (field("host"), why))?;
        let admin = admin_of(entry, count, &field)?;
        let torus_network = torus_network_of(entry, &interfaces, networks, &field)?;
        for k in 0..count {
            let name = if entry.count.is_some() {
                format!("{}{k}", entry.name)
            } else {
                entry.name.clone()
            };
            check_name(&name).map_err(|why| (format!("nodes[{e}].name"), why))?;
            let interfaces = interfaces
                .iter()
                .map(|i| NodeInterface {
                    network: i.network,
                    address: match i.address {
                        Address::Number(n) => Address::Number(n + k),
                        socket => socket,
                    },
                })
                .collect();
            let torus = match (entry.torus, torus_network) {
                (Some(start), Some((_, dims))) => Some(advance(start, dims, k)),
                _ => None,
            };
            nodes.push(NodeSpec {
                name,
                role,
                interfaces,
                torus,
                nic_bandwidth_bytes_s,
                host: (!hosts.is_empty()).then(|| hosts[k as usize % hosts.len()].clone()),
                admin,
            });
            forwarders.push(entry.forwarder.clone());
        }
    }
    check_unique(&nodes, networks)?;
    check_hop_by_hop(&nodes, networks)?;
    Ok((nodes, forwarders))
}

/// How a field of the entry being expanded is named in a refusal (`nodes[3] (c).nids.o2ib0`).
type FieldName<'a> = dyn Fn(&str) -> String + 'a;

/// An entry's interfaces, in network order (so the primary NID is on the first network listed
/// in [[networks]] that the node is on), each address checked for the entry's `count` nodes.
fn interfaces_of(
    entry: &NodeEntry,
    count: u32,
    networks: &[Network],
    by_name: &HashMap<&str, usize>,
    field: &FieldName<'_>,
) -> Result<Vec<NodeInterface>, FieldError> {
    let mut interfaces = Vec::new();
    for (net_name, value) in &entry.nids {
        let network = *by_name.get(net_name.as_str()).ok_or_else(|| {
            (
                field(&format!("nids.{net_name}")),
                format!(
                    "no network named {net_name:?} (networks: {})",
                    networks
                        .iter()
                        .map(|n| n.name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            )
        })?;
        let address = match value {
            AddressValue::Number(n) => {
                let last = n.checked_add(u64::from(count) - 1);
                match last {
                    Some(last) if last <= u64::from(u32::MAX) => Address::Number(*n as u32),
                    _ => {
                        return Err((
                            field(&format!("nids.{net_name}")),
                            format!("address {n} (with count {count}) exceeds {}", u32::MAX),
                        ));
                    }
                }
            }
            AddressValue::Socket(text) => {
                let addr: SocketAddr = text.parse().map_err(|_| {
                    (
                        field(&format!("nids.{net_name}")),
                        format!(
                            "{text:?} is not host:port (as in \"127.0.0.1:7001\"); or give a number"
                        ),
                    )
                })?;
                if count > 1 {
                    return Err((
                        field("count"),
                        "a TCP address names one node: give each its own entry, or a numbered address".into(),
                    ));
                }
                Address::Socket(addr)
            }
        };
        interfaces.push(NodeInterface { network, address });
    }
    interfaces.sort_by_key(|i| i.network);
    Ok(interfaces)
}

/// An entry's admin address, if it gives one: for one node only.
fn admin_of(
    entry: &NodeEntry,
    count: u32,
    field: &FieldName<'_>,
) -> Result<Option<SocketAddr>, FieldError> {
    Ok(match &entry.admin {
        None => None,
        Some(_) if count > 1 => {
            return Err((
                field("admin"),
                "an admin address names one node: give each its own entry".into(),
            ));
        }
        Some(text) => Some(text.parse::<SocketAddr>().map_err(|_| {
            (
                field("admin"),
                format!("{text:?} is not host:port (as in \"10.77.2.3:40211\")"),
            )
        })?),
    })
}

/// The torus network an entry's interfaces put it on, if any, with its dimensions; and the
/// entry's `torus` coordinates checked against it.
fn torus_network_of(
    entry: &NodeEntry,
    interfaces: &[NodeInterface],
    networks: &[Network],
    field: &FieldName<'_>,
) -> Result<Option<(usize, [u32; 3])>, FieldError> {
    let torus_network = interfaces
        .iter()
        .find_map(|i| networks[i.network].torus.map(|dims| (i.network, dims)));
    if let Some(coords) = entry.torus {
        let Some((network, dims)) = torus_network else {
            return Err((
                field("torus"),
                "none of the node's networks has torus dimensions".into(),
            ));
        };
        if coords.iter().zip(dims).any(|(&c, d)| c >= d) {
            return Err((
                field("torus"),
                format!(
                    "{coords:?} is outside {}'s torus {dims:?}",
                    networks[network].name
                ),
            ));
        }
    }
    Ok(torus_network)
}

/// A torus crossed hop by hop runs slow enough, in host time, for its model to keep pace.
fn check_torus_pace(networks: &[Network], time_scale: u32) -> Result<(), FieldError> {
    for network in networks.iter().filter(|n| n.hop_by_hop) {
        let Some(link) = network.link else { continue };
        let host = link.bandwidth_bytes_s / u64::from(time_scale);
        if host > HOP_BY_HOP_HOST_BYTES_S_MAX {
            let least = link.bandwidth_bytes_s.div_ceil(HOP_BY_HOP_HOST_BYTES_S_MAX);
            return Err((
                "model.time_scale".into(),
                format!(
                    "{}'s links ({:.0} MB/s each) are crossed hop by hop, a packet at a time: at \
                     time scale {time_scale} that is {:.0} MB/s per link in host time, more than \
                     the model keeps pace with ({:.0} MB/s); use a time_scale of at least {least}",
                    network.name,
                    link.bandwidth_bytes_s as f64 / 1e6,
                    host as f64 / 1e6,
                    HOP_BY_HOP_HOST_BYTES_S_MAX as f64 / 1e6
                ),
            ));
        }
    }
    Ok(())
}

/// Every node on a network crossed hop by hop has a place on its torus: coordinates, given
/// for that network (a node's coordinates are on the first of its networks with a torus).
fn check_hop_by_hop(nodes: &[NodeSpec], networks: &[Network]) -> Result<(), FieldError> {
    for (k, network) in networks.iter().enumerate().filter(|(_, n)| n.hop_by_hop) {
        for node in nodes {
            let mut tori = node
                .interfaces
                .iter()
                .filter(|i| networks[i.network].torus.is_some());
            if !node.interfaces.iter().any(|i| i.network == k) {
                continue;
            }
            let first = tori.next().map(|i| i.network);
            if node.torus.is_none() || first != Some(k) {
                return Err((
                    format!("nodes ({}).torus", node.name),
                    format!(
                        "{} is crossed hop by hop, so every node on it needs its coordinates \
                         there (torus = [x, y, z], on the first of its networks with a torus)",
                        network.name
                    ),
                ));
            }
        }
    }
    Ok(())
}

/// A node entry's `host`, as the hosts its nodes take in turn (empty when absent).
fn hosts_of(value: Option<&HostValue>) -> Result<Vec<HostRef>, String> {
    let items: Vec<&HostItem> = match value {
        None => return Ok(Vec::new()),
        Some(HostValue::One(item)) => vec![item],
        Some(HostValue::Each(items)) if items.is_empty() => {
            return Err("an empty list: name a host, or leave host out".into());
        }
        Some(HostValue::Each(items)) => items.iter().collect(),
    };
    items
        .into_iter()
        .map(|item| match item {
            HostItem::Index(i) if *i > HOST_INDEX_MAX => Err(format!(
                "host index {i}: the allocation's hosts are numbered from 0 (at most {HOST_INDEX_MAX})"
            )),
            HostItem::Index(i) => Ok(HostRef::Index(*i as usize)),
            HostItem::Name(name)
                if name.is_empty()
                    || name.len() > HOST_NAME_MAX_BYTES
                    || name.chars().any(|c| c.is_whitespace() || c.is_control() || c == '/') =>
            {
                Err(format!(
                    "{name:?} is not a host name or address (1 to {HOST_NAME_MAX_BYTES} bytes, no spaces or '/')"
                ))
            }
            HostItem::Name(name) => Ok(HostRef::Name(name.clone())),
        })
        .collect()
}

/// `start` moved on by `steps` nodes through the torus, x fastest, wrapping.
fn advance(start: [u32; 3], dims: [u32; 3], steps: u32) -> [u32; 3] {
    let index = |c: [u32; 3]| -> u64 {
        u64::from(c[0])
            + u64::from(dims[0]) * (u64::from(c[1]) + u64::from(dims[1]) * u64::from(c[2]))
    };
    let total = u64::from(dims[0]) * u64::from(dims[1]) * u64::from(dims[2]);
    let i = (index(start) + u64::from(steps)) % total;
    let x = i % u64::from(dims[0]);
    let y = (i / u64::from(dims[0])) % u64::from(dims[1]);
    let z = i / (u64::from(dims[0]) * u64::from(dims[1]));
    [x as u32, y as u32, z as u32]
}

fn role_of(entry: &NodeEntry) -> Result<Role, (String, String)> {
    let only = |leaf: &str, role: &str| {
        (
            leaf.to_owned(),
            format!(
                "applies to {role} nodes only, and this is a {} node",
                entry.role.as_str()
            ),
        )
    };
    if entry.role != RoleName::Oss {
        if entry.targets.is_some() {
            return Err(only("targets", "oss"));
        }
        if entry.journal.is_some() {
            return Err(only("journal", "oss"));
        }
        if entry.commit_interval_ms.is_some() {
            return Err(only("commit_interval_ms", "oss"));
        }
        if entry.recovery_window_ms.is_some() {
            return Err(only("recovery_window_ms", "oss"));
        }
        if entry.disk_bandwidth.is_some() {
            return Err(only("disk_bandwidth", "oss"));
        }
        if entry.disk_seek_ms.is_some() {
            return Err(only("disk_seek_ms", "oss"));
        }
    }
    if entry.role != RoleName::Fyod {
        for (leaf, given) in [
            ("fyod_mode", entry.fyod_mode.is_some()),
            ("fyod_call_us", entry.fyod_call_us.is_some()),
            ("fyod_cpus", entry.fyod_cpus.is_some()),
            ("fyod_memory", entry.fyod_memory.is_some()),
            ("fyod_thread_memory", entry.fyod_thread_memory.is_some()),
        ] {
            if given {
                return Err(only(leaf, "fyod"));
            }
        }
    }
    if entry.role != RoleName::Client && entry.forwarder.is_some() {
        return Err(only("forwarder", "client"));
    }
    let buffers = [
        ("tiny_router_buffers", entry.tiny_router_buffers),
        ("small_router_buffers", entry.small_router_buffers),
        ("large_router_buffers", entry.large_router_buffers),
        ("peer_buffer_credits", entry.peer_buffer_credits),
    ];
    if entry.role != RoleName::Router && entry.check_forwarded_checksums.is_some() {
        return Err(only("check_forwarded_checksums", "router"));
    }
    for (leaf, value) in buffers {
        match value {
            Some(_) if entry.role != RoleName::Router => return Err(only(leaf, "router")),
            Some(n) if !(1..=ROUTER_BUFFERS_MAX).contains(&n) => {
                return Err((leaf.into(), format!("{n}: use 1 to {ROUTER_BUFFERS_MAX}")));
            }
            _ => {}
        }
    }
    Ok(match entry.role {
        RoleName::Mds => Role::Mds,
        RoleName::Router => {
            let d = RouterConfig::default();
            Role::Router(RouterConfig {
                tiny_buffers: entry.tiny_router_buffers.unwrap_or(d.tiny_buffers),
                small_buffers: entry.small_router_buffers.unwrap_or(d.small_buffers),
                large_buffers: entry.large_router_buffers.unwrap_or(d.large_buffers),
                peer_buffer_credits: entry.peer_buffer_credits.unwrap_or(d.peer_buffer_credits),
                check_checksums: entry.check_forwarded_checksums.unwrap_or(d.check_checksums),
                ..d
            })
        }
        RoleName::Client => Role::Client(ClientSpec { forwarder: None }),
        RoleName::Fyod => Role::Fyod(FyodSpec {
            mode: match entry.fyod_mode.unwrap_or_default() {
                FyodModeName::Pfs => FyodMode::Pfs,
                FyodModeName::Ufs => FyodMode::Ufs,
            },
            service: fyod_service_node(entry)?,
        }),
        RoleName::Oss => {
            let targets = entry.targets.unwrap_or(1);
            if !(1..=TARGETS_PER_OSS_MAX).contains(&targets) {
                return Err((
                    "targets".into(),
                    format!("{targets}: an OSS has 1 to {TARGETS_PER_OSS_MAX} targets"),
                ));
            }
            let commit_interval_ms = entry
                .commit_interval_ms
                .unwrap_or(COMMIT_INTERVAL_DEFAULT_MS);
            if !(1..=COMMIT_INTERVAL_MAX_MS).contains(&commit_interval_ms) {
                return Err((
                    "commit_interval_ms".into(),
                    format!("{commit_interval_ms}: use 1 to {COMMIT_INTERVAL_MAX_MS} ms"),
                ));
            }
            let recovery_window_ms = entry
                .recovery_window_ms
                .unwrap_or(RECOVERY_WINDOW_DEFAULT_MS);
            if !(1..=RECOVERY_WINDOW_MAX_MS).contains(&recovery_window_ms) {
                return Err((
                    "recovery_window_ms".into(),
                    format!("{recovery_window_ms}: use 1 to {RECOVERY_WINDOW_MAX_MS} ms"),
                ));
            }
            Role::Oss(OssSpec {
                targets,
                sync_journal: entry.journal.unwrap_or_default() == JournalName::Sync,
                commit_interval_ms,
                recovery_window_ms,
                disk: ost_disk(entry)?,
            })
        }
    })
}

/// A rate field, `leaf`: bytes per second as a number or as text with a suffix (`"3200m"`,
/// binary), 1 to `max`.
fn rate(value: Option<&SizeValue>, leaf: &str, max: u64) -> Result<Option<u64>, (String, String)> {
    let bytes_s = match value {
        None => return Ok(None),
        Some(SizeValue::Bytes(b)) => *b,
        Some(SizeValue::Text(t)) => {
            iopath_fabric::units::parse_size(t).map_err(|why| (leaf.to_owned(), why))?
        }
    };
    if !(1..=max).contains(&bytes_s) {
        return Err((
            leaf.to_owned(),
            format!("{bytes_s} bytes per second: use 1 to {max}"),
        ));
    }
    Ok(Some(bytes_s))
}

/// A fyod entry's modeled service node: `fyod_call_us`, and the rest only beside it.
fn fyod_service_node(entry: &NodeEntry) -> Result<Option<FyodServiceNode>, (String, String)> {
    let Some(call_us) = entry.fyod_call_us else {
        for (leaf, given) in [
            ("fyod_cpus", entry.fyod_cpus.is_some()),
            ("fyod_memory", entry.fyod_memory.is_some()),
            ("fyod_thread_memory", entry.fyod_thread_memory.is_some()),
        ] {
            if given {
                return Err((
                    leaf.into(),
                    "a modeled service node needs its CPU time per call: give fyod_call_us too"
                        .into(),
                ));
            }
        }
        return Ok(None);
    };
    if !(1..=FYOD_CALL_MAX_US).contains(&call_us) {
        return Err((
            "fyod_call_us".into(),
            format!("{call_us}: use 1 to {FYOD_CALL_MAX_US} microseconds"),
        ));
    }
    let cpus = entry.fyod_cpus.unwrap_or(1);
    if !(1..=FYOD_CPUS_MAX).contains(&cpus) {
        return Err((
            "fyod_cpus".into(),
            format!("{cpus}: use 1 to {FYOD_CPUS_MAX}"),
        ));
    }
    let memory = rate(
        entry.fyod_memory.as_ref(),
        "fyod_memory",
        FYOD_MEMORY_MAX_BYTES,
    )?;
    let thread = rate(
        entry.fyod_thread_memory.as_ref(),
        "fyod_thread_memory",
        FYOD_MEMORY_MAX_BYTES,
    )?;
    let memory = match (memory, thread) {
        (None, None) => None,
        (Some(_), None) => {
            return Err((
                "fyod_memory".into(),
                "the node pages when its threads outgrow it: give fyod_thread_memory too".into(),
            ));
        }
        (None, Some(_)) => {
            return Err((
                "fyod_thread_memory".into(),
                "threads page only on a node of bounded memory: give fyod_memory too".into(),
            ));
        }
        (Some(m), Some(t)) if t > m => {
            return Err((
                "fyod_thread_memory".into(),
                format!("{t} bytes: more than fyod_memory ({m}), so not one thread fits"),
            ));
        }
        (Some(m), Some(t)) => Some((m, t)),
    };
    Ok(Some(FyodServiceNode {
        call_us,
        cpus,
        memory,
    }))
}

/// An OSS entry's modeled disk: `disk_bandwidth`, and `disk_seek_ms` only beside it.
fn ost_disk(entry: &NodeEntry) -> Result<Option<OstDisk>, (String, String)> {
    let bandwidth = rate(
        entry.disk_bandwidth.as_ref(),
        "disk_bandwidth",
        DISK_BANDWIDTH_MAX_BYTES_S,
    )?;
    match (bandwidth, entry.disk_seek_ms) {
        (None, None) => Ok(None),
        (None, Some(_)) => Err((
            "disk_seek_ms".into(),
            "a modeled seek needs a modeled disk: give disk_bandwidth too".into(),
        )),
        (Some(_), Some(ms)) if !(0.0..=DISK_SEEK_MAX_MS).contains(&ms) => Err((
            "disk_seek_ms".into(),
            format!("{ms}: use 0 to {DISK_SEEK_MAX_MS} milliseconds"),
        )),
        (Some(b), ms) => Ok(Some(OstDisk {
            bandwidth_bytes_s: b,
            seek_us: (ms.unwrap_or(0.0) * 1000.0).round() as u64,
        })),
    }
}

fn check_unique(nodes: &[NodeSpec], networks: &[Network]) -> Result<(), FieldError> {
    let mut names = BTreeSet::new();
    let mut addresses: BTreeMap<(usize, Address), &str> = BTreeMap::new();
    let mut kinds: BTreeMap<usize, (bool, &str)> = BTreeMap::new();
    for node in nodes {
        if !names.insert(node.name.as_str()) {
            return Err((
                format!("nodes ({})", node.name),
                format!("two nodes are called {:?}", node.name),
            ));
        }
        for i in &node.interfaces {
            if let Some(other) = addresses.insert((i.network, i.address), &node.name) {
                return Err((
                    format!("nodes ({}).nids.{}", node.name, networks[i.network].name),
                    format!("{other} has the same address on this network"),
                ));
            }
            let tcp = matches!(i.address, Address::Socket(_));
            match kinds.get(&i.network) {
                Some(&(was_tcp, first)) if was_tcp != tcp => {
                    return Err((
                        format!("nodes ({}).nids.{}", node.name, networks[i.network].name),
                        format!(
                            "{} has a {} address on this network and {} a {} one: one network, one kind of address",
                            first,
                            if was_tcp { "host:port" } else { "numbered" },
                            node.name,
                            if tcp { "host:port" } else { "numbered" },
                        ),
                    ));
                }
                Some(_) => {}
                None => {
                    kinds.insert(i.network, (tcp, &node.name));
                }
            }
        }
    }
    Ok(())
}

fn assign_forwarders(nodes: &mut [NodeSpec], asked: &[ForwarderAsked]) -> Result<(), FieldError> {
    let fyods: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].role.kind() == RoleName::Fyod)
        .collect();
    let automatic: Vec<usize> = (0..nodes.len())
        .filter(|&i| nodes[i].role.kind() == RoleName::Client && asked[i].is_none())
        .collect();
    for i in 0..nodes.len() {
        let Role::Client(_) = nodes[i].role else {
            continue;
        };
        let forwarder = match asked[i].as_deref() {
            Some(NO_FORWARDER) => None,
            Some(name) => {
                let f = nodes.iter().position(|n| n.name == name).ok_or_else(|| {
                    (
                        format!("nodes ({}).forwarder", nodes[i].name),
                        format!("no node named {name:?}; name a fyod node or \"{NO_FORWARDER}\""),
                    )
                })?;
                if nodes[f].role.kind() != RoleName::Fyod {
                    return Err((
                        format!("nodes ({}).forwarder", nodes[i].name),
                        format!("{name:?} is a {} node, not a fyod", nodes[f].role.name()),
                    ));
                }
                Some(f)
            }
            // ASCI Red gave each fyod a block of compute nodes: the clients without a
            // forwarder of their own are shared out in contiguous blocks.
            None if fyods.is_empty() => None,
            None => {
                let rank = automatic
                    .iter()
                    .position(|&c| c == i)
                    .expect("an automatic client is in the automatic list");
                Some(fyods[rank * fyods.len() / automatic.len()])
            }
        };
        nodes[i].role = Role::Client(ClientSpec { forwarder });
    }
    Ok(())
}

fn check_roles(nodes: &[NodeSpec]) -> Result<(), FieldError> {
    let count = |kind: RoleName| nodes.iter().filter(|n| n.role.kind() == kind).count();
    match count(RoleName::Mds) {
        1 => {}
        0 => return Err(("nodes".into(), "the stack has no mds node".into())),
        n => {
            return Err((
                "nodes".into(),
                format!("the stack has {n} mds nodes; it needs exactly one"),
            ));
        }
    }
    if count(RoleName::Oss) == 0 {
        return Err(("nodes".into(), "the stack has no oss node".into()));
    }
    let targets: u64 = nodes
        .iter()
        .map(|n| match n.role {
            Role::Oss(spec) => u64::from(spec.targets),
            _ => 0,
        })
        .sum();
    if targets > iopath_mds::limits::TARGETS_MAX as u64 {
        return Err((
            "nodes".into(),
            format!(
                "{targets} targets in all; the metadata service places over at most {}",
                iopath_mds::limits::TARGETS_MAX
            ),
        ));
    }
    for node in nodes {
        if node.role.kind() == RoleName::Router && node.interfaces.len() < 2 {
            return Err((
                format!("nodes ({}).nids", node.name),
                "a router needs addresses on at least two networks".into(),
            ));
        }
    }
    Ok(())
}

fn expand_routes(
    entries: &[RouteEntry],
    set: Option<&str>,
    networks: &[Network],
    nodes: &[NodeSpec],
) -> Result<Vec<RouteRule>, FieldError> {
    let network = |name: &str, field: String| {
        networks
            .iter()
            .position(|n| n.name == name)
            .ok_or_else(|| (field, format!("no network named {name:?}")))
    };
    let on = |node: usize, net: usize| nodes[node].interfaces.iter().any(|i| i.network == net);
    let mut out: Vec<RouteRule> = Vec::new();
    for (e, entry) in entries.iter().enumerate() {
        let field = |leaf: &str| format!("routes[{e}].{leaf}");
        let from = network(&entry.from, field("from"))?;
        let net = network(&entry.net, field("net"))?;
        if from == net {
            return Err((
                field("net"),
                "a route leads to another network than `from`".into(),
            ));
        }
        let gateway = nodes
            .iter()
            .position(|n| n.name == entry.gateway)
            .ok_or_else(|| {
                (
                    field("gateway"),
                    format!("no node named {:?}", entry.gateway),
                )
            })?;
        if nodes[gateway].role.kind() != RoleName::Router {
            return Err((
                field("gateway"),
                format!(
                    "{:?} is a {} node; a gateway must be a router",
                    entry.gateway,
                    nodes[gateway].role.name()
                ),
            ));
        }
        if !on(gateway, from) {
            return Err((
                field("gateway"),
                format!(
                    "router {:?} has no address on {:?}",
                    entry.gateway, entry.from
                ),
            ));
        }
        let hops = entry.hops.unwrap_or(1);
        if !(1..=iopath_fabric::routing::HOPS_MAX).contains(&hops) {
            return Err((
                field("hops"),
                format!("{hops}: use 1 to {}", iopath_fabric::routing::HOPS_MAX),
            ));
        }
        if let Some(s) = &entry.set
            && s.is_empty()
        {
            return Err((field("set"), "must not be empty".into()));
        }
        let users: Vec<usize> = match &entry.nodes {
            Some(names) => {
                let mut users = Vec::new();
                for (k, name) in names.iter().enumerate() {
                    let node = nodes.iter().position(|n| &n.name == name).ok_or_else(|| {
                        (
                            field(&format!("nodes[{k}]")),
                            format!("no node named {name:?}"),
                        )
                    })?;
                    if !on(node, from) || on(node, net) {
                        return Err((
                            field(&format!("nodes[{k}]")),
                            format!(
                                "{name:?} must be on {:?} and not on {:?} to use this route",
                                entry.from, entry.net
                            ),
                        ));
                    }
                    users.push(node);
                }
                users
            }
            None => (0..nodes.len())
                .filter(|&n| n != gateway && on(n, from) && !on(n, net))
                .collect(),
        };
        let in_force = match (&entry.set, set) {
            (None, _) => true,
            (Some(s), Some(chosen)) => s == chosen,
            (Some(_), None) => false,
        };
        if !in_force {
            continue;
        }
        for node in users {
            if out
                .iter()
                .any(|r| r.node == node && r.net == net && r.gateway == gateway)
            {
                return Err((
                    field("gateway"),
                    format!(
                        "{} already has a route to {:?} through {:?}",
                        nodes[node].name, entry.net, entry.gateway
                    ),
                ));
            }
            out.push(RouteRule {
                node,
                net,
                gateway,
                via: from,
                hops,
                priority: entry.priority.unwrap_or(0),
            });
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::advance;

    #[test]
    fn advance_walks_x_fastest_and_wraps() {
        let dims = [2, 2, 2];
        assert_eq!(advance([0, 0, 0], dims, 0), [0, 0, 0]);
        assert_eq!(advance([0, 0, 0], dims, 1), [1, 0, 0]);
        assert_eq!(advance([0, 0, 0], dims, 2), [0, 1, 0]);
        assert_eq!(advance([0, 0, 0], dims, 4), [0, 0, 1]);
        assert_eq!(advance([1, 1, 1], dims, 1), [0, 0, 0]);
    }
}
