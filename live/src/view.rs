//! [`View`]: the stack as the page draws it — its networks, and each node with its role, its
//! interfaces and where its counters come from. Fixed when the view starts.

use std::net::SocketAddr;
use std::sync::Arc;

use prometheus_client::registry::Registry;
use serde::Serialize;

/// The stack as the page draws it.
#[derive(Debug, Clone, Serialize)]
pub struct View {
    /// The stack's name and origin (`spider-mini-routed (preset spider-mini-routed)`).
    pub title: String,
    /// Its description.
    pub description: String,
    /// How it runs (`embedded: every node in this process, in-memory networks`).
    pub mode: String,
    /// What is modeled and at what scale, as every result says it.
    pub modeled: String,
    /// What runs against it, if anything (`IOR: -w -r -t 1m -b 64m`).
    pub workload: String,
    /// The networks' names, by index.
    pub networks: Vec<String>,
    /// The nodes, in stack order.
    pub nodes: Vec<ViewNode>,
    /// How often the counters are read and the page redraws, milliseconds (at least
    /// [`crate::server::INTERVAL_MIN`]).
    pub interval_ms: u64,
}

/// One node as drawn.
#[derive(Debug, Clone, Serialize)]
pub struct ViewNode {
    /// Its name.
    pub name: String,
    /// Its role: `client`, `router`, `fyod`, `oss`, `mds`.
    pub role: String,
    /// What it does, in a line (the node table's last column).
    pub detail: String,
    /// Its interfaces, primary first.
    pub interfaces: Vec<ViewInterface>,
    /// Its torus coordinates, if it has some.
    pub torus: Option<[u32; 3]>,
    /// Its admin service, where it has one (`iopath lctl --admin ADDR` reads the same
    /// counters).
    pub admin: Option<String>,
    /// Where its counters come from; the page sees only why it has none, if it has none
    /// (`unread`).
    #[serde(rename = "unread", serialize_with = "unread_reason")]
    pub source: Source,
}

/// A source as the page sees it: the reason a node is not read, or nothing.
fn unread_reason<S: serde::Serializer>(source: &Source, out: S) -> Result<S::Ok, S::Error> {
    match source {
        Source::Unread(why) => out.serialize_some(why),
        Source::Scrape(_) | Source::Registry(_) => out.serialize_none(),
    }
}

/// One interface of a node.
#[derive(Debug, Clone, Serialize)]
pub struct ViewInterface {
    /// The network's index in [`View::networks`].
    pub network: usize,
    /// Its NID.
    pub nid: String,
}

/// Where a node's counters come from.
#[derive(Clone)]
pub enum Source {
    /// A node process's `/metrics`, read over HTTP.
    Scrape(SocketAddr),
    /// A node in this process: its registry, rendered as a scrape would get it.
    Registry(Arc<Registry>),
    /// Nowhere, for this reason (`runs in the application, not here`): drawn,
    /// never read.
    Unread(String),
}

impl std::fmt::Debug for Source {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Source::Scrape(addr) => write!(f, "Scrape({addr})"),
            Source::Registry(_) => f.write_str("Registry"),
            Source::Unread(why) => write!(f, "Unread({why:?})"),
        }
    }
}
