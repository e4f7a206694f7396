//! The stack file as TOML says it: plain serde types, every field named as in the file, unknown
//! fields refused. Nothing here is checked beyond its type; [`super::Stack::from_file`] turns
//! a [`StackFile`] into a checked [`super::Stack`] once.
//!
//! ```toml
//! name = "spider-mini"
//! description = "clients talk to the storage servers directly"
//! fsname = "spider"              # targets spider-OST0000, ...; absent: iopath
//!
//! [layout]                       # the file system's default layout
//! stripe_size = "1m"
//! stripe_count = -1              # -1: all targets
//!
//! [model]                        # optional: the machine it stands for
//! time_scale = 20                # modeled time runs 20 times slower than the host's
//!
//! [[networks]]
//! name = "o2ib0"
//! bandwidth = "3200m"            # modeled link: bytes per modeled second per interface
//! latency_us = 2
//!
//! [[networks]]
//! name = "torus0"
//! torus = [8, 1, 1]              # dimensions; nodes on it give coordinates (`torus = [x, y, z]`)
//! bandwidth = "3020m"            # with hop_by_hop: each directed link's
//! latency_us = 1                 # and each hop's
//! hop_by_hop = true              # messages cross the dimension-order route link by link
//!
//! [[nodes]]
//! name = "mds"
//! role = "mds"
//! nids = { o2ib0 = 1 }           # an address per network: a number (in-memory, or a
//!                                # loopback port chosen at start) or "host:port" (TCP)
//! [[nodes]]
//! name = "oss"
//! role = "oss"
//! count = 2                      # oss0, oss1 at addresses 10, 11
//! nids = { o2ib0 = 10 }
//! targets = 2
//! journal = "async"
//! disk_bandwidth = "190m"        # a modeled disk under each target (bytes per modeled second)
//! disk_seek_ms = 8               # and its head's move between data and journal
//!
//! [[nodes]]
//! name = "rtr"
//! role = "router"
//! nids = { o2ib0 = 50, torus0 = 50 }
//! large_router_buffers = 8       # router settings, named as LNet's module parameters
//! peer_buffer_credits = 4
//! nic_bandwidth = "1600m"        # any node: its own NIC rate, over its networks' bandwidth
//! ```

/// The largest stack file or hostfile read: text a person writes, or `up` writes for 20,000
/// nodes (a few MiB). Anything larger is the wrong file — `--stack /dev/zero` read 2 GB
/// before it failed — and is refused after this much.
pub const TEXT_FILE_BYTES_MAX: u64 = 64 << 20;

/// Reads the text file at `path` (a stack file, a hostfile) for `what` ("read the stack
/// file"), refusing one larger than [`TEXT_FILE_BYTES_MAX`] or not UTF-8.
pub fn read_text(
    path: &std::path::Path,
    what: &'static str,
) -> Result<String, crate::error::StackError> {
    use std::io::Read as _;
    let error = |source| crate::error::StackError::File {
        what,
        path: path.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(error)?;
    let mut text = String::new();
    file.take(TEXT_FILE_BYTES_MAX + 1)
        .read_to_string(&mut text)
        .map_err(error)?;
    if text.len() as u64 > TEXT_FILE_BYTES_MAX {
        return Err(error(std::io::Error::new(
            std::io::ErrorKind::FileTooLarge,
            format!(
                "larger than {} MiB: not a stack file or hostfile",
                TEXT_FILE_BYTES_MAX >> 20
            ),
        )));
    }
    Ok(text)
}

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

/// A whole stack file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct StackFile {
    /// The stack's name (presets: `asci-red-mini`, `spider-mini`, ...).
    pub name: String,
    /// A sentence or two for people.
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub description: String,
    /// The file system's name (Lustre's `--fsname`), which its targets are named after
    /// (`iopath-OST0003`); absent: `iopath`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fsname: Option<String>,
    /// The file system's default layout, given to the metadata service.
    #[serde(default)]
    pub layout: LayoutSection,
    /// The emulated machine: how much slower than the host modeled time runs.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub model: Option<ModelSection>,
    /// Which set of `[[routes]]` entries is in force; entries without a `set` always are.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub route_set: Option<String>,
    /// The networks, in order: the first is network number 0 (`mem0` / `tcp0`).
    pub networks: Vec<NetworkEntry>,
    /// The nodes.
    pub nodes: Vec<NodeEntry>,
    /// Routes to networks a node is not on.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub routes: Vec<RouteEntry>,
}

/// `[model]`: settings of the modeled machine as a whole.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ModelSection {
    /// Host seconds per modeled second (default 1): at 20, a modeled 3.2 GB/s link carries
    /// 160 MB/s here, so this host can keep up with what it models.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub time_scale: Option<u32>,
}

/// `[layout]`: Lustre's conventions — size 0 or absent for the default (1 MiB), count -1 for
/// all targets, offset -1 for "the metadata service chooses".
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LayoutSection {
    /// Bytes per stripe: a number, or a size with a suffix (`"1m"`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_size: Option<SizeValue>,
    /// Objects per file; -1 for all targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_count: Option<i64>,
    /// The first target's index; -1 for any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stripe_offset: Option<i64>,
}

/// A size: bytes, or text with a k/m/g/t suffix.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(untagged)]
pub enum SizeValue {
    /// A number of bytes.
    Bytes(u64),
    /// `"64k"`, `"1m"`, `"4MiB"`.
    Text(String),
}

impl<'de> Deserialize<'de> for SizeValue {
    /// Whole bytes or text; anything else is refused saying what a size is (the error names
    /// the field, with its line).
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = SizeValue;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(
                    "a size: whole bytes, or text with a suffix such as \"64k\" or \"3200m\"",
                )
            }

            fn visit_u64<E: serde::de::Error>(self, bytes: u64) -> Result<SizeValue, E> {
                Ok(SizeValue::Bytes(bytes))
            }

            fn visit_i64<E: serde::de::Error>(self, n: i64) -> Result<SizeValue, E> {
                u64::try_from(n).map(SizeValue::Bytes).map_err(|_| {
                    E::custom(format!(
                        "{n}: a size or rate cannot be negative (give whole bytes, or text such \
                         as \"64k\" or \"3200m\")"
                    ))
                })
            }

            fn visit_f64<E: serde::de::Error>(self, n: f64) -> Result<SizeValue, E> {
                Err(E::custom(format!(
                    "{n}: give whole bytes, or text such as \"1.5m\" for fractions"
                )))
            }

            fn visit_str<E: serde::de::Error>(self, text: &str) -> Result<SizeValue, E> {
                Ok(SizeValue::Text(text.to_owned()))
            }
        }
        deserializer.deserialize_any(Visitor)
    }
}

/// `[[networks]]`: one network.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkEntry {
    /// Its name in this file and in output (`torus0`, `o2ib201`).
    pub name: String,
    /// Torus dimensions `[x, y, z]`, when the network models one; nodes on it may then give
    /// their coordinates.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torus: Option<[u32; 3]>,
    /// A modeled link: each interface on this network sends at this many bytes per modeled
    /// second (a number, or `"3200m"`); absent: as fast as the host goes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bandwidth: Option<SizeValue>,
    /// With `bandwidth`: microseconds of modeled time from a message's last byte leaving to
    /// its arrival (default 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency_us: Option<u64>,
    /// With `torus` and `bandwidth`: messages cross the torus hop by hop along their
    /// dimension-order route, `bandwidth` is each directed link's (an X link's; Y and Z the
    /// same) and `latency_us` each hop's, and every link serves its input ports in turn.
    /// Absent or false: `bandwidth` is each interface's own sending side.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hop_by_hop: Option<bool>,
    /// On a cluster (`iopath launch`): the network's IP subnet (`"10.77.1.0/24"`); a node's
    /// address on this network is its host's address inside it. Absent: the host's first
    /// address.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subnet: Option<String>,
}

/// The roles a node can play.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RoleName {
    /// The metadata service.
    Mds,
    /// An object storage server with its targets.
    Oss,
    /// An ASCI Red I/O forwarder.
    Fyod,
    /// An LNET router between networks.
    Router,
    /// A compute node: where applications (the demo, IOR tasks) run.
    Client,
}

impl RoleName {
    /// The name as written in the file.
    pub fn as_str(self) -> &'static str {
        match self {
            RoleName::Mds => "mds",
            RoleName::Oss => "oss",
            RoleName::Fyod => "fyod",
            RoleName::Router => "router",
            RoleName::Client => "client",
        }
    }
}

/// Journal commit mode of an OSS.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum JournalName {
    /// Commit the journal before replying.
    Sync,
    /// Reply once the data is on disk; commit in groups later (Lustre ≥ 1.8's default).
    #[default]
    Async,
}

/// How a fyod writes.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum FyodModeName {
    /// Split each request by the file's layout; the storage servers pull from the client.
    #[default]
    Pfs,
    /// Pull into the fyod's own buffers and write one target.
    Ufs,
}

/// An address on one network.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum AddressValue {
    /// A small number: `n@memK` embedded; a free loopback port under `--processes`.
    Number(u64),
    /// `"host:port"`: a TCP listener.
    Socket(String),
}

/// One host, as a node's `host` names it: an index into the allocation's hosts (the hostfile's
/// lines, Slurm's node list), or a host name or address.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HostItem {
    /// The allocation's host at this index, from 0.
    Index(u64),
    /// A host name or IP address.
    Name(String),
}

/// Where a node runs on a cluster: one host, or for a `count` entry a list its nodes take in
/// turn.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum HostValue {
    /// Every node of the entry on this host.
    One(HostItem),
    /// Node `k` of the entry on item `k` modulo the list's length.
    Each(Vec<HostItem>),
}

/// `[[nodes]]`: one node, or `count` alike.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NodeEntry {
    /// Its name; with `count`, the base of `name0`, `name1`, ...
    pub name: String,
    /// What it does.
    pub role: RoleName,
    /// How many nodes this entry stands for (default 1). Numbered addresses and torus
    /// coordinates advance by one node each (x fastest).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub count: Option<u32>,
    /// Its address on each network it is on, by network name.
    pub nids: BTreeMap<String, AddressValue>,
    /// Its torus coordinates `[x, y, z]` (on the first of its networks that has a torus).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub torus: Option<[u32; 3]>,
    /// On a cluster (`iopath launch`): the host it runs on. Absent: taken in turn from the
    /// allocation.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub host: Option<HostValue>,
    /// Where its admin service answers, `"host:port"`: written by `iopath launch` into the
    /// stack file it hands to tools, once the node is up.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub admin: Option<String>,
    /// Its own NIC rate: each of its interfaces sends at this many bytes per modeled second
    /// (a number, or `"3200m"`), whatever its networks' `bandwidth` (a router's or a fyod's
    /// card, a storage server's link); absent: its networks' rate.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nic_bandwidth: Option<SizeValue>,
    /// OSS: number of object storage targets.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub targets: Option<u32>,
    /// OSS: journal commits, `sync` or `async`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub journal: Option<JournalName>,
    /// OSS: the async group-commit interval, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit_interval_ms: Option<u64>,
    /// OSS: how long, after an unclean restart, the clients it knew have to reconnect and
    /// replay before they are evicted, milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub recovery_window_ms: Option<u64>,
    /// OSS: a modeled disk under each of its targets, transferring this many bytes per
    /// modeled second (a number, or `"190m"`); absent: the host's own disk speed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_bandwidth: Option<SizeValue>,
    /// OSS, with `disk_bandwidth`: modeled milliseconds to move the disk's head between the
    /// data and the journal (default 0: no head, as a solid-state device).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub disk_seek_ms: Option<f64>,
    /// Fyod: `pfs` or `ufs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fyod_mode: Option<FyodModeName>,
    /// Fyod: a modeled service node — modeled microseconds of its CPU each call takes
    /// (handling the RPC, splitting it by the layout, issuing the pieces); absent: the host's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fyod_call_us: Option<u64>,
    /// Fyod, with `fyod_call_us`: the service node's CPUs, calls it works on at once (1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fyod_cpus: Option<u32>,
    /// Fyod, with `fyod_call_us`: the service node's memory for the fyod's worker threads
    /// (a number, or `"64m"`); past it the node pages. With `fyod_thread_memory`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fyod_memory: Option<SizeValue>,
    /// Fyod, with `fyod_memory`: what each worker thread (one per open file) holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fyod_thread_memory: Option<SizeValue>,
    /// Client: the fyod it sends its I/O through (a fyod node's name), or `"none"` to talk
    /// to the storage servers itself. Absent: the stack's fyods share the clients in blocks.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarder: Option<String>,
    /// Router: buffers for messages without payload (LNet's `tiny_router_buffers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tiny_router_buffers: Option<u32>,
    /// Router: buffers for payloads up to 4 KiB (LNet's `small_router_buffers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub small_router_buffers: Option<u32>,
    /// Router: buffers for larger payloads, up to 1 MiB (LNet's `large_router_buffers`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub large_router_buffers: Option<u32>,
    /// Router: buffers one peer may hold at once (LNet's `peer_buffer_credits`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer_buffer_credits: Option<u32>,
    /// Router: whether it verifies the checksum of every bulk chunk it forwards (default
    /// true).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub check_forwarded_checksums: Option<bool>,
}

/// `[[routes]]`: nodes on `from` reach `net` through `gateway`.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RouteEntry {
    /// The network of the nodes that use the route.
    pub from: String,
    /// The remote network.
    pub net: String,
    /// The router node to send through (its address on `from` is the gateway NID).
    pub gateway: String,
    /// LNet's hop count, 1 to 255 (default 1): lower is preferred.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub hops: Option<u32>,
    /// Preference before hops (default 0): lower is preferred.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub priority: Option<u32>,
    /// Only these nodes use the route (default: every node on `from` that is not on `net`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub nodes: Option<Vec<String>>,
    /// The route set this entry belongs to (see `route_set`); absent: always in force.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub set: Option<String>,
}

impl StackFile {
    /// Parses TOML text; `origin` names it in messages. Types and field names are checked
    /// here; what the values mean is checked by [`super::Stack::from_file`].
    pub fn parse(text: &str, origin: &str) -> Result<StackFile, crate::error::StackError> {
        toml::from_str(text).map_err(|e| crate::error::StackError::Parse {
            origin: origin.to_owned(),
            detail: e.to_string().trim_end().to_owned(),
        })
    }
}
