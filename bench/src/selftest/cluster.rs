//! The nodes of a selftest, wired **directly** (clients and servers on one network) or
//! **routed** (clients on network 0, servers on network 1, routers on both), either in this
//! process or each in a process of its own.
//!
//! Direct and routed servers are different nodes: a server with an interface on the clients'
//! network would answer them straight back, past the router, as LNet would.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, Result};
use iopath_fabric::router::RouterConfig;
use iopath_fabric::routing::RouteSpec;
use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};

use super::node::ProcessCluster;
use super::service::{SELFTEST_PORTAL, SelftestService};
use super::workload::{self, Measured, Workload};
use super::{SelftestConfig, Transport, accumulate};
use crate::report::rate;

/// How clients reach servers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Layout {
    /// Clients and servers on network 0.
    Direct,
    /// Clients on network 0, servers on network 1, this many routers between.
    Routed(u32),
}

/// A running set of selftest nodes.
#[derive(Debug)]
pub enum Cluster {
    /// Every node in this process.
    InProcess {
        /// Client nodes.
        clients: Vec<Node>,
        /// Server nodes.
        servers: Vec<Node>,
        /// Router nodes.
        routers: Vec<Node>,
    },
    /// Every node in a process of its own.
    Processes(ProcessCluster),
}

/// The NID of an interface on network `net` before it is bound.
pub(crate) fn unbound(
    transport: Transport,
    net: u16,
    n: u32,
    mem: &[Arc<MemNetwork>; 2],
) -> Result<Interface> {
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

impl Cluster {
    /// Starts the nodes of `config` wired as `layout`.
    pub async fn start(config: &SelftestConfig, layout: Layout) -> Result<Cluster> {
        if config.processes {
            return Ok(Cluster::Processes(
                ProcessCluster::start(config, layout).await?,
            ));
        }
        let mem = [MemNetwork::new(), MemNetwork::new()];
        let server_net = match layout {
            Layout::Direct => 0,
            Layout::Routed(_) => 1,
        };
        let mut routers = Vec::new();
        if let Layout::Routed(count) = layout {
            for r in 0..count {
                let interfaces = vec![
                    unbound(config.transport, 0, 1000 + r, &mem)?,
                    unbound(config.transport, 1, 1000 + r, &mem)?,
                ];
                let node_config = NodeConfig {
                    interfaces,
                    router: Some(RouterConfig::default()),
                    ..NodeConfig::default()
                };
                routers.push(Node::start(node_config).await.context("start a router")?);
            }
        }
        let router_nids: Vec<Vec<Nid>> = routers.iter().map(Node::nids).collect();
        let mut clients = Vec::new();
        for c in 0..config.clients {
            let interfaces = vec![unbound(config.transport, 0, c, &mem)?];
            let routes = routes_through(&router_nids, 0);
            clients.push(
                Node::start(NodeConfig {
                    interfaces,
                    routes,
                    ..NodeConfig::default()
                })
                .await?,
            );
        }
        let mut servers = Vec::new();
        for s in 0..config.servers {
            let interfaces = vec![unbound(config.transport, server_net, 2000 + s, &mem)?];
            let routes = if server_net == 1 {
                routes_through(&router_nids, 1)
            } else {
                Vec::new()
            };
            let server = Node::start(NodeConfig {
                interfaces,
                routes,
                ..NodeConfig::default()
            })
            .await?;
            server.register_service(SELFTEST_PORTAL, Arc::new(SelftestService::default()))?;
            servers.push(server);
        }
        Ok(Cluster::InProcess {
            clients,
            servers,
            routers,
        })
    }

    /// The servers' NIDs.
    pub fn server_nids(&self) -> Vec<String> {
        match self {
            Cluster::InProcess { servers, .. } => {
                servers.iter().map(|s| s.nid().to_string()).collect()
            }
            Cluster::Processes(cluster) => cluster.server_nids(),
        }
    }

    /// Runs `workload` on every client at once and adds up what they measured.
    pub async fn run(
        &self,
        workload: &Workload,
        progress: &mut (dyn FnMut(&str) + Send),
    ) -> Result<Measured> {
        let clients = match self {
            Cluster::Processes(cluster) => return cluster.run(workload).await,
            Cluster::InProcess { clients, .. } => clients,
        };
        let counters = Arc::new((AtomicU64::new(0), AtomicU64::new(0)));
        let mut tasks = Vec::new();
        for client in clients {
            let (client, workload, counters) =
                (client.clone(), workload.clone(), Arc::clone(&counters));
            tasks.push(tokio::spawn(async move {
                workload::run(&client, &workload, counters).await
            }));
        }
        let started = Instant::now();
        let show_progress = std::io::IsTerminal::is_terminal(&std::io::stderr());
        while !tasks.iter().all(|t| t.is_finished()) {
            tokio::time::sleep(Duration::from_millis(250)).await;
            if show_progress {
                let secs = started.elapsed().as_secs_f64();
                let mib = counters.1.load(Ordering::Relaxed) as f64 / (1 << 20) as f64;
                let rpcs = counters.0.load(Ordering::Relaxed);
                progress(&format!(
                    "\r{}: {secs:.1}/{:.1} s  {rpcs} RPCs  {} MiB/s",
                    workload.test.label(),
                    workload.seconds,
                    rate(mib / secs)
                ));
            }
        }
        if show_progress {
            progress("\n");
        }
        let mut total = Measured::default();
        for task in tasks {
            accumulate(&mut total, task.await.context("selftest client panicked")??);
        }
        Ok(total)
    }

    /// The routers' peak resident memory in MiB (process mode only; in one process the
    /// routers share the process with everything else, so there is nothing to attribute).
    pub fn router_peak_rss_mib(&self) -> Vec<f64> {
        match self {
            Cluster::Processes(cluster) => cluster.router_peak_rss_mib(),
            Cluster::InProcess { .. } => Vec::new(),
        }
    }

    /// Stops every node.
    pub async fn stop(self) {
        match self {
            Cluster::InProcess {
                clients,
                servers,
                routers,
            } => {
                for node in clients.iter().chain(&servers).chain(&routers) {
                    node.shutdown();
                }
            }
            Cluster::Processes(cluster) => cluster.stop().await,
        }
    }
}
