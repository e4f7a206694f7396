//! How a selftest's nodes are wired: **directly** (clients and servers on one network) or
//! **routed** (clients on network 0, servers on network 1, routers on both), and the routes
//! and unbound interfaces that wiring gives each node.

use std::sync::Arc;

use iopath_fabric::routing::RouteSpec;
use iopath_fabric::{Interface, MemNetwork, Nid};

use super::config::Transport;
use crate::error::BenchError;

/// How clients reach servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Clients and servers on network 0.
    Direct,
    /// Clients on network 0, servers on network 1, this many routers between.
    Routed(u32),
}

impl Layout {
    /// Routers between the clients and the servers.
    pub fn routers(self) -> u32 {
        match self {
            Layout::Direct => 0,
            Layout::Routed(count) => count,
        }
    }
}

/// The NID of an interface on network `net` before it is bound.
pub(crate) fn unbound(
    transport: Transport,
    net: u16,
    n: u32,
    mem: &[Arc<MemNetwork>; 2],
) -> Result<Interface, BenchError> {
    Ok(match transport {
        Transport::Mem => Interface::Mem {
            nid: Nid::mem(n, net),
            network: Arc::clone(&mem[net as usize]),
        },
        Transport::Tcp => Interface::Tcp {
            nid: format!("127.0.0.1:0@tcp{net}").parse()?,
        },
    })
}

/// Routes from network `from` to the other network through each router's interface on `from`.
pub(crate) fn routes_through(routers: &[Vec<Nid>], from: u16) -> Vec<RouteSpec> {
    routers
        .iter()
        .map(|nids| {
            let gateway = nids[from as usize];
            let other = nids[1 - from as usize].net;
            RouteSpec {
                net: other,
                gateway,
                hops: 1,
                priority: 0,
            }
        })
        .collect()
}
