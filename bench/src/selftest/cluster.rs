//! The nodes of a selftest, wired as a [`Layout`] says, either in this process or each in a
//! process of its own ([`ProcessCluster`]).
//!
//! Direct and routed servers are different nodes: a server with an interface on the clients'
//! network would answer them straight back, past the router, as LNet would.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use iopath_fabric::router::RouterConfig;
use iopath_fabric::{MemNetwork, Nid, Node, NodeConfig};

use super::config::SelftestConfig;
use super::layout::{Layout, routes_through, unbound};
use super::node::ProcessCluster;
use super::service::{SELFTEST_PORTAL, SelftestService};
use super::workload::{self, Measured, Workload};
use crate::error::BenchError;
use crate::report::rate;

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

impl Cluster {
    /// Starts the nodes of `config` wired as `layout`.
    pub async fn start(config: &SelftestConfig, layout: Layout) -> Result<Cluster, BenchError> {
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
                    router: Some(RouterConfig {
                        check_checksums: config.router_checksums,
                        ..RouterConfig::default()
                    }),
                    ..NodeConfig::default()
                };
                routers.push(Node::start(node_config).await.map_err(|source| {
                    BenchError::NodeStart {
                        what: "start a router".into(),
                        source,
                    }
                })?);
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
    ) -> Result<Measured, BenchError> {
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
            let measured = task
                .await
                .map_err(|e| BenchError::tool(format!("selftest client panicked: {e}")))??;
            total.add(measured);
        }
        Ok(total)
    }

    /// The CPU seconds the server and router processes have used so far (process mode only).
    pub fn server_cpu_s(&self) -> Option<super::node::ServerCpu> {
        match self {
            Cluster::Processes(cluster) => Some(cluster.cpu_s()),
            Cluster::InProcess { .. } => None,
        }
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
