//! Stack files built as values. A lab, a test or a tool that makes a stack writes it with these
//! rather than as TOML text: each method is a field of the file under the file's own name, so
//! the code reads as the file it stands for, and a misspelt field or a number where a journal
//! mode belongs fails to compile instead of failing the reader at run time.
//!
//! ```
//! use iopath_stack::schema::file::{JournalName, NetworkEntry, NodeEntry, RoleName, StackFile};
//!
//! let file = StackFile::named("two-servers")
//!     .stripe_count(-1)
//!     .network(NetworkEntry::named("o2ib0"))
//!     .node(NodeEntry::new("mds", RoleName::Mds).nid("o2ib0", 1))
//!     .node(
//!         NodeEntry::new("oss", RoleName::Oss)
//!             .count(2)
//!             .nid("o2ib0", 10)
//!             .targets(2)
//!             .journal(JournalName::Sync),
//!     )
//!     .node(NodeEntry::new("c", RoleName::Client).nid("o2ib0", 100));
//! let stack = file.check("the example").unwrap();
//! assert_eq!(stack.nodes.len(), 4);
//! // The same file as a person would write it, for `iopath up --stack`.
//! assert!(file.to_toml().contains("journal = \"sync\""));
//! ```
//!
//! The setters only set: what the values mean (a count in range, a network that exists) is
//! checked once, by [`StackFile::check`], as for a file read from disk.

use super::file::{
    AddressValue, FyodModeName, JournalName, LayoutSection, ModelSection, NetworkEntry, NodeEntry,
    RoleName, RouteEntry, SizeValue, StackFile,
};
use super::stack::Stack;
use crate::error::StackError;

/// Setters for optional fields, one per field, each named as the field: `$field(value)` sets
/// `Some(value)`; a size field (`size`) takes bytes, a text field (`text`) any string.
macro_rules! setters {
    ($ty:ty { $($field:ident: $kind:tt),* $(,)? }) => {
        impl $ty {
            $(setters!(@one $field $kind);)*
        }
    };
    (@one $field:ident size) => {
        #[doc = concat!("Sets `", stringify!($field), "`, in bytes.")]
        pub fn $field(mut self, bytes: u64) -> Self {
            self.$field = Some(SizeValue::Bytes(bytes));
            self
        }
    };
    (@one $field:ident text) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $field(mut self, text: impl Into<String>) -> Self {
            self.$field = Some(text.into());
            self
        }
    };
    (@one $field:ident $value:ty) => {
        #[doc = concat!("Sets `", stringify!($field), "`.")]
        pub fn $field(mut self, value: $value) -> Self {
            self.$field = Some(value);
            self
        }
    };
}

impl StackFile {
    /// A stack named `name` with nothing in it yet: no networks, no nodes, the default layout.
    pub fn named(name: impl Into<String>) -> StackFile {
        StackFile {
            name: name.into(),
            description: String::new(),
            fsname: None,
            layout: LayoutSection::default(),
            model: None,
            route_set: None,
            networks: Vec::new(),
            nodes: Vec::new(),
            routes: Vec::new(),
        }
    }

    /// Sets the sentence or two for people.
    pub fn description(mut self, text: impl Into<String>) -> Self {
        self.description = text.into();
        self
    }

    /// Sets the file system's name.
    pub fn fsname(mut self, name: impl Into<String>) -> Self {
        self.fsname = Some(name.into());
        self
    }

    /// Sets `[model] time_scale`: host seconds per modeled second.
    pub fn time_scale(mut self, scale: u32) -> Self {
        self.model = Some(ModelSection {
            time_scale: Some(scale),
        });
        self
    }

    /// Sets `[layout] stripe_size`, in bytes.
    pub fn stripe_size(mut self, bytes: u64) -> Self {
        self.layout.stripe_size = Some(SizeValue::Bytes(bytes));
        self
    }

    /// Sets `[layout] stripe_count` (-1: every target).
    pub fn stripe_count(mut self, count: i64) -> Self {
        self.layout.stripe_count = Some(count);
        self
    }

    /// Adds a `[[networks]]` entry (the first added is network 0).
    pub fn network(mut self, network: NetworkEntry) -> Self {
        self.networks.push(network);
        self
    }

    /// Adds a `[[nodes]]` entry.
    pub fn node(mut self, node: NodeEntry) -> Self {
        self.nodes.push(node);
        self
    }

    /// Adds a `[[routes]]` entry.
    pub fn route(mut self, route: RouteEntry) -> Self {
        self.routes.push(route);
        self
    }

    /// The `[[nodes]]` entry named `name`, to change a field of a stack made elsewhere (a
    /// preset, a test's usual stack).
    pub fn node_mut(&mut self, name: &str) -> Option<&mut NodeEntry> {
        self.nodes.iter_mut().find(|n| n.name == name)
    }

    /// The checked stack, as [`Stack::from_file`] makes it; `origin` names the file in errors
    /// ("the placement experiment").
    pub fn check(&self, origin: &str) -> Result<Stack, StackError> {
        Stack::from_file(self, origin)
    }

    /// The file as TOML text, to hand to `iopath up --stack` or a node process.
    pub fn to_toml(&self) -> String {
        toml::to_string(self).unwrap_or_else(|e| {
            // Every value is a plain string, number, array or table: this cannot fail.
            unreachable!("a stack file always serialises to TOML: {e}")
        })
    }
}

impl NetworkEntry {
    /// A network named `name`, as fast as the host goes until given a link.
    pub fn named(name: impl Into<String>) -> NetworkEntry {
        NetworkEntry {
            name: name.into(),
            torus: None,
            bandwidth: None,
            latency_us: None,
            hop_by_hop: None,
            subnet: None,
        }
    }

    /// Sets `hop_by_hop = true`: messages cross the torus link by link.
    pub fn hop_by_hop(mut self) -> Self {
        self.hop_by_hop = Some(true);
        self
    }
}

setters!(NetworkEntry {
    torus: [u32; 3],
    bandwidth: size,
    latency_us: u64,
    subnet: text,
});

impl NodeEntry {
    /// A node (or, with [`NodeEntry::count`], nodes) named `name` playing `role`, on no
    /// network yet.
    pub fn new(name: impl Into<String>, role: RoleName) -> NodeEntry {
        NodeEntry {
            name: name.into(),
            role,
            count: None,
            nids: Default::default(),
            torus: None,
            host: None,
            admin: None,
            nic_bandwidth: None,
            targets: None,
            journal: None,
            commit_interval_ms: None,
            recovery_window_ms: None,
            disk_bandwidth: None,
            disk_seek_ms: None,
            fyod_mode: None,
            fyod_call_us: None,
            fyod_cpus: None,
            fyod_memory: None,
            fyod_thread_memory: None,
            forwarder: None,
            tiny_router_buffers: None,
            small_router_buffers: None,
            large_router_buffers: None,
            peer_buffer_credits: None,
            check_forwarded_checksums: None,
        }
    }

    /// Puts it on `network` at numbered address `address` (with `count`, the first node's).
    pub fn nid(mut self, network: impl Into<String>, address: u64) -> Self {
        self.nids
            .insert(network.into(), AddressValue::Number(address));
        self
    }
}

setters!(NodeEntry {
    count: u32,
    torus: [u32; 3],
    nic_bandwidth: size,
    targets: u32,
    journal: JournalName,
    commit_interval_ms: u64,
    recovery_window_ms: u64,
    disk_bandwidth: size,
    disk_seek_ms: f64,
    fyod_mode: FyodModeName,
    fyod_call_us: u64,
    fyod_cpus: u32,
    fyod_memory: size,
    fyod_thread_memory: size,
    forwarder: text,
    tiny_router_buffers: u32,
    small_router_buffers: u32,
    large_router_buffers: u32,
    peer_buffer_credits: u32,
    check_forwarded_checksums: bool,
});

impl RouteEntry {
    /// Nodes on `from` reach `net` through the router node `gateway`.
    pub fn new(
        from: impl Into<String>,
        net: impl Into<String>,
        gateway: impl Into<String>,
    ) -> RouteEntry {
        RouteEntry {
            from: from.into(),
            net: net.into(),
            gateway: gateway.into(),
            hops: None,
            priority: None,
            nodes: None,
            set: None,
        }
    }

    /// Only these nodes use the route.
    pub fn nodes<S: Into<String>>(mut self, names: impl IntoIterator<Item = S>) -> Self {
        self.nodes = Some(names.into_iter().map(Into::into).collect());
        self
    }
}

setters!(RouteEntry {
    hops: u32,
    priority: u32,
    set: text,
});

#[cfg(test)]
mod tests {
    use super::*;

    /// Every setter lands in its own field: the built file reads back, through the TOML a
    /// person would write, as the same value, and checks into the stack it describes.
    #[test]
    fn a_built_file_round_trips_through_its_toml_and_checks() {
        let file = StackFile::named("built")
            .description("every setter once")
            .fsname("spider")
            .time_scale(8)
            .stripe_size(1 << 20)
            .stripe_count(2)
            .network(
                NetworkEntry::named("torus0")
                    .torus([4, 1, 1])
                    .bandwidth(3_000_000_000)
                    .latency_us(1)
                    .hop_by_hop(),
            )
            .network(
                NetworkEntry::named("o2ib1")
                    .bandwidth(1_000_000_000)
                    .latency_us(2),
            )
            .node(NodeEntry::new("mds", RoleName::Mds).nid("o2ib1", 1))
            .node(
                NodeEntry::new("oss", RoleName::Oss)
                    .count(2)
                    .nid("o2ib1", 10)
                    .targets(2)
                    .journal(JournalName::Sync)
                    .commit_interval_ms(500)
                    .recovery_window_ms(2000)
                    .disk_bandwidth(190_000_000)
                    .disk_seek_ms(8.0)
                    .nic_bandwidth(1_600_000_000),
            )
            .node(
                NodeEntry::new("rtr", RoleName::Router)
                    .nid("torus0", 50)
                    .nid("o2ib1", 50)
                    .torus([1, 0, 0])
                    .large_router_buffers(8)
                    .peer_buffer_credits(4)
                    .check_forwarded_checksums(false),
            )
            .node(
                NodeEntry::new("fyod", RoleName::Fyod)
                    .nid("torus0", 20)
                    .torus([2, 0, 0])
                    .fyod_mode(FyodModeName::Ufs)
                    .fyod_call_us(300)
                    .fyod_cpus(2)
                    .fyod_memory(64 << 20)
                    .fyod_thread_memory(1 << 20),
            )
            .node(
                NodeEntry::new("c", RoleName::Client)
                    .count(2)
                    .nid("torus0", 100)
                    .torus([0, 0, 0])
                    .forwarder("none"),
            )
            .route(
                RouteEntry::new("torus0", "o2ib1", "rtr")
                    .hops(1)
                    .nodes(["c0", "c1", "fyod"]),
            )
            .route(RouteEntry::new("o2ib1", "torus0", "rtr"));
        let again = StackFile::parse(&file.to_toml(), "the built file").unwrap();
        assert_eq!(again, file);
        let stack = file.check("the built file").unwrap();
        assert_eq!(stack.nodes.len(), 7);
        assert_eq!(stack.fsname.to_string(), "spider");
        assert_eq!(stack.time_scale, 8);
        assert_eq!(stack.targets().len(), 4);
    }

    /// The check is the reader's: a built file with a bad value is refused with the field
    /// named, as the same file on disk would be.
    #[test]
    fn a_built_file_with_a_bad_value_is_refused_naming_the_field() {
        let file = StackFile::named("bad")
            .network(NetworkEntry::named("mesh0"))
            .node(NodeEntry::new("mds", RoleName::Mds).nid("mesh0", 1))
            .node(
                NodeEntry::new("oss", RoleName::Oss)
                    .nid("mesh0", 2)
                    .targets(0),
            );
        let error = file.check("the built file").unwrap_err().to_string();
        assert!(error.contains("nodes[1] (oss).targets"), "{error}");
    }
}
