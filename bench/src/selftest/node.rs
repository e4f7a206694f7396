//! Selftest nodes in processes of their own: the parent starts servers, routers and clients
//! from this same binary (`iopath selftest-node serve|router|client`) on loopback TCP.
//!
//! A server or router prints `READY <nid>[,<nid>] <admin address>` once it serves, then runs
//! until its standard input closes — so it never outlives the run that started it — or until
//! told to shut down through its admin service. A client runs one workload and prints what it
//! measured as one JSON line.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use iopath_admin::{NodeInfo, ParamTree};
use iopath_fabric::router::RouterConfig;
use iopath_fabric::routing::RouteSpec;
use iopath_fabric::{Interface, Nid, Node, NodeConfig};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

use super::config::SelftestConfig;
use super::layout::{Layout, routes_through};
use super::service::{SELFTEST_PORTAL, SelftestService};
use super::workload::{self, Measured, Workload};
use crate::error::BenchError;

/// How long a child may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Server and router processes for the length of a run.
#[derive(Debug)]
pub struct ProcessCluster {
    exe: PathBuf,
    /// Worker threads each node process runs, when this run chose them.
    workers: Option<usize>,
    clients: u32,
    client_routes: Vec<String>,
    servers: Vec<(Child, String)>,
    routers: Vec<(Child, String)>,
}

/// CPU seconds used so far by the server processes and by the router processes, each added
/// up; `None` where a process could not be read.
#[derive(Debug, Clone, Copy)]
pub struct ServerCpu {
    /// Every server process.
    pub servers_s: Option<f64>,
    /// Every router process (0 when there are none).
    pub routers_s: Option<f64>,
}

/// The environment variable that sets a tokio runtime's worker threads; a node process's
/// runtime reads it.
pub const WORKER_THREADS_ENV: &str = "TOKIO_WORKER_THREADS";

/// Worker threads for each of `processes` node processes sharing this machine's cores: the
/// cores shared out, at least one each — or `None` where the user set [`WORKER_THREADS_ENV`],
/// which the processes then inherit. Each runtime would otherwise start a worker per core,
/// and on a machine with fewer cores than workers they wake each other to hand work across
/// (on the 2-core machine, 1 worker each for a client, a router and a server cut the router's
/// context switches per MiB from 2.3 to 1.5).
pub fn worker_threads(processes: usize) -> Option<usize> {
    if std::env::var_os(WORKER_THREADS_ENV).is_some() {
        return None;
    }
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    Some((cores / processes.max(1)).max(1))
}

/// Worker threads for each node process of `layout`'s cluster: the clients', the servers'
/// and the routers' processes share the machine.
pub fn workers_for(config: &SelftestConfig, layout: Layout) -> Option<usize> {
    worker_threads((config.clients + config.servers + layout.routers()) as usize)
}

/// A `selftest-node` command with `args`, its runtime given `workers` threads (if chosen).
fn node_command(exe: &PathBuf, workers: Option<usize>, args: &[String]) -> Command {
    let mut command = Command::new(exe);
    command.arg("selftest-node").args(args);
    if let Some(workers) = workers {
        command.env(WORKER_THREADS_ENV, workers.to_string());
    }
    command
}

/// Starts `selftest-node ARGS` and waits for its READY line; returns the child and its NIDs.
async fn start_child(
    exe: &PathBuf,
    workers: Option<usize>,
    args: &[String],
) -> Result<(Child, Vec<Nid>), BenchError> {
    let mut child = node_command(exe, workers, args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| {
            BenchError::system(
                format!("start {} selftest-node {}", exe.display(), args.join(" ")),
                e,
            )
        })?;
    let stdout = child
        .stdout
        .take()
        .ok_or_else(|| BenchError::tool("child stdout"))?;
    let mut lines = BufReader::new(stdout).lines();
    let ready = tokio::time::timeout(START_TIMEOUT, lines.next_line())
        .await
        .map_err(|e| BenchError::tool(format!("a node process did not say READY in time: {e}")))?
        .map_err(|e| BenchError::system("read a node process's first line", e))?
        .ok_or_else(|| BenchError::tool("a node process exited before it was ready"))?;
    let ready: iopath_admin::process::Ready = ready
        .parse()
        .map_err(|why| BenchError::tool(format!("a node process {why}")))?;
    let nids = ready
        .nids
        .iter()
        .map(|n| {
            n.parse()
                .map_err(|e| BenchError::step(format!("parse NID {n:?}"), e))
        })
        .collect::<Result<_, _>>()?;
    Ok((child, nids))
}

fn route_args(routes: &[RouteSpec]) -> Vec<String> {
    routes
        .iter()
        .flat_map(|r| {
            [
                "--route".to_owned(),
                format!("{} {} {} {}", r.net, r.gateway, r.hops, r.priority),
            ]
        })
        .collect()
}

impl ProcessCluster {
    /// Starts the routers, then the servers, and waits until each serves.
    pub async fn start(
        config: &SelftestConfig,
        layout: Layout,
    ) -> Result<ProcessCluster, BenchError> {
        let exe = std::env::current_exe()
            .map_err(|e| BenchError::system("find this program to start nodes from", e))?;
        let workers = workers_for(config, layout);
        let mut router_args = vec!["router".to_owned()];
        if !config.router_checksums {
            router_args.push("--no-checksums".to_owned());
        }
        let mut routers = Vec::new();
        let mut router_nids = Vec::new();
        if let Layout::Routed(count) = layout {
            for _ in 0..count {
                let (child, nids) = start_child(&exe, workers, &router_args).await?;
                let label = nids
                    .iter()
                    .map(Nid::to_string)
                    .collect::<Vec<_>>()
                    .join(",");
                routers.push((child, label));
                router_nids.push(nids);
            }
        }
        let (server_net, server_routes) = match layout {
            Layout::Direct => (0u16, Vec::new()),
            Layout::Routed(_) => (1, routes_through(&router_nids, 1)),
        };
        let mut servers = Vec::new();
        for _ in 0..config.servers {
            let mut args = vec![
                "serve".to_owned(),
                "--net".to_owned(),
                server_net.to_string(),
            ];
            args.extend(route_args(&server_routes));
            let (child, nids) = start_child(&exe, workers, &args).await?;
            servers.push((child, nids[0].to_string()));
        }
        Ok(ProcessCluster {
            exe,
            workers,
            clients: config.clients,
            client_routes: route_args(&routes_through(&router_nids, 0)),
            servers,
            routers,
        })
    }

    /// The servers' NIDs.
    pub fn server_nids(&self) -> Vec<String> {
        self.servers.iter().map(|(_, nid)| nid.clone()).collect()
    }

    /// Runs `workload` in one client process per client node, all at once, and adds up what
    /// they measured.
    pub async fn run(&self, workload: &Workload) -> Result<Measured, BenchError> {
        let json = serde_json::to_string(workload)
            .map_err(|e| BenchError::json("encode the workload", e))?;
        let mut children = Vec::new();
        for _ in 0..self.clients {
            let mut args = vec!["client".to_owned(), "--workload".to_owned(), json.clone()];
            args.extend(self.client_routes.iter().cloned());
            let child = node_command(&self.exe, self.workers, &args)
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .map_err(|e| BenchError::system("start a selftest client process", e))?;
            children.push(child);
        }
        let limit = Duration::from_secs_f64(workload.seconds) + START_TIMEOUT * 2;
        let mut total = Measured::default();
        for child in children {
            let output = tokio::time::timeout(limit, child.wait_with_output())
                .await
                .map_err(|e| BenchError::tool(format!("a client process overran its run: {e}")))?
                .map_err(|e| BenchError::system("wait for a client process", e))?;
            if !output.status.success() {
                return Err(BenchError::tool(format!(
                    "a client process failed ({})",
                    output.status
                )));
            }
            let text = String::from_utf8_lossy(&output.stdout);
            let line = text
                .lines()
                .last()
                .ok_or_else(|| BenchError::tool("a client process printed nothing"))?;
            total.add(
                serde_json::from_str(line)
                    .map_err(|e| BenchError::json(format!("parse client result {line:?}"), e))?,
            );
        }
        Ok(total)
    }

    /// The CPU seconds each server and router process has used so far.
    pub fn cpu_s(&self) -> ServerCpu {
        let of = |children: &[(Child, String)]| -> Option<f64> {
            children
                .iter()
                .map(|(child, _)| crate::cpu::process_cpu_s(&child.id()?.to_string()))
                .sum()
        };
        ServerCpu {
            servers_s: of(&self.servers),
            routers_s: if self.routers.is_empty() {
                Some(0.0)
            } else {
                of(&self.routers)
            },
        }
    }

    /// Each router process's peak resident memory (VmHWM), in MiB.
    pub fn router_peak_rss_mib(&self) -> Vec<f64> {
        self.routers
            .iter()
            .filter_map(|(child, _)| {
                let status =
                    std::fs::read_to_string(format!("/proc/{}/status", child.id()?)).ok()?;
                let kib: f64 = status
                    .lines()
                    .find(|l| l.starts_with("VmHWM:"))?
                    .split_whitespace()
                    .nth(1)?
                    .parse()
                    .ok()?;
                Some(kib / 1024.0)
            })
            .collect()
    }

    /// Closes every node's standard input and waits (bounded) for it to exit.
    pub async fn stop(self) {
        for (mut child, _) in self.servers.into_iter().chain(self.routers) {
            drop(child.stdin.take());
            if tokio::time::timeout(Duration::from_secs(5), child.wait())
                .await
                .is_err()
            {
                let _ = child.kill().await;
            }
        }
    }
}

/// What a `selftest-node` process is.
#[derive(Debug, Clone)]
pub enum Role {
    /// A selftest server on `net`, with routes.
    Serve {
        /// The TCP network number of its interface.
        net: u16,
        /// Routes to other networks.
        routes: Vec<String>,
    },
    /// A router between tcp0 and tcp1.
    Router {
        /// Whether it verifies the checksums of the bulk chunks it forwards.
        check_checksums: bool,
    },
    /// A client running one workload, with routes.
    Client {
        /// The workload as JSON.
        workload: String,
        /// Routes to other networks.
        routes: Vec<String>,
    },
}

fn parse_routes(routes: &[String]) -> Result<Vec<RouteSpec>, BenchError> {
    routes
        .iter()
        .map(|r| RouteSpec::parse(r).map_err(|e| BenchError::step("parse --route", e)))
        .collect()
}

/// Runs one `selftest-node` process. A server or router checks admin changes against the
/// secret in `secret_file`; without one, against a secret it draws and tells no one, so its
/// parameters cannot be changed nor the node shut down over the admin service (its parent
/// stops it by closing its standard input, and changes nothing on it).
pub async fn run_role(role: Role, secret_file: Option<&std::path::Path>) -> Result<(), BenchError> {
    let secret = || match secret_file {
        Some(file) => iopath_admin::Secret::load(file),
        None => iopath_admin::Secret::generate(),
    };
    let tcp = |net: u16| -> Result<Interface, BenchError> {
        Ok(Interface::Tcp {
            nid: format!("127.0.0.1:0@tcp{net}").parse()?,
        })
    };
    let started = |what: &str| {
        let what = what.to_owned();
        move |source| BenchError::NodeStart { what, source }
    };
    match role {
        Role::Client { workload, routes } => {
            let workload: Workload = serde_json::from_str(&workload)
                .map_err(|e| BenchError::json("parse --workload", e))?;
            let config = NodeConfig {
                interfaces: vec![tcp(0)?],
                routes: parse_routes(&routes)?,
                ..NodeConfig::default()
            };
            let node = Node::start(config)
                .await
                .map_err(started("start the client node"))?;
            let cpu_before = crate::cpu::process_cpu_s("self");
            let mut measured = workload::run(
                &node,
                &workload,
                Arc::new((AtomicU64::new(0), AtomicU64::new(0))),
            )
            .await?;
            measured.process_cpu_s = cpu_before
                .zip(crate::cpu::process_cpu_s("self"))
                .map(|(before, after)| after - before);
            let line = serde_json::to_string(&measured)
                .map_err(|e| BenchError::json("encode the measurement", e))?;
            println!("{line}");
            node.shutdown();
            Ok(())
        }
        Role::Serve { net, routes } => {
            let config = NodeConfig {
                interfaces: vec![tcp(net)?],
                routes: parse_routes(&routes)?,
                ..NodeConfig::default()
            };
            let node = Node::start(config)
                .await
                .map_err(started("start the server node"))?;
            node.register_service(SELFTEST_PORTAL, Arc::new(SelftestService::default()))?;
            serve_until_told(node, "selftest-server", secret()?).await
        }
        Role::Router { check_checksums } => {
            let config = NodeConfig {
                interfaces: vec![tcp(0)?, tcp(1)?],
                router: Some(RouterConfig {
                    check_checksums,
                    ..RouterConfig::default()
                }),
                ..NodeConfig::default()
            };
            let node = Node::start(config)
                .await
                .map_err(started("start the router node"))?;
            serve_until_told(node, "router", secret()?).await
        }
    }
}

/// Serves the admin service (changes only with `secret`), says READY, and runs until told to
/// stop.
async fn serve_until_told(
    node: Node,
    role: &str,
    secret: iopath_admin::Secret,
) -> Result<(), BenchError> {
    let tree = ParamTree::new();
    iopath_fabric::params::register(&node, &tree, "").map_err(iopath_admin::AdminError::from)?;
    let nids: Vec<String> = node.nids().iter().map(Nid::to_string).collect();
    let info = NodeInfo::new(nids, vec![role.to_owned()]);
    let admin = std::net::SocketAddr::from(([127, 0, 0, 1], 0));
    let reason =
        iopath_admin::process::serve_until_stopped(admin, tree, info, secret, None, true).await?;
    tracing::info!(nid = %node.nid(), "{role} stopping: {reason}");
    node.shutdown();
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn node_processes_share_the_cores_with_at_least_one_worker_each() {
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
        match worker_threads(1) {
            Some(alone) => {
                assert_eq!(alone, cores, "one process has every core");
                assert_eq!(worker_threads(cores), Some(1));
                assert_eq!(worker_threads(3 * cores), Some(1), "never none");
                assert_eq!(worker_threads(0), Some(cores));
            }
            // The user chose: every process inherits the setting.
            None => assert!(std::env::var_os(WORKER_THREADS_ENV).is_some()),
        }
    }
}
