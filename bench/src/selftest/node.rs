//! Selftest nodes in processes of their own: the parent starts servers and clients from this
//! same binary (`iopath selftest-node serve|client`) on loopback TCP.
//!
//! A server prints `READY <nid> <admin address>` once it serves, then runs until its standard
//! input closes — so a server never outlives the run that started it — or until told to shut
//! down through its admin service. A client runs one workload and prints what it measured as
//! one JSON line.

use std::path::PathBuf;
use std::process::Stdio;
use std::sync::Arc;
use std::sync::atomic::AtomicU64;
use std::time::Duration;

use anyhow::{Context, Result, bail};
use iopath_admin::{NodeInfo, ParamTree, Shutdown};
use iopath_fabric::{Interface, Node, NodeConfig};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

use super::service::{SELFTEST_PORTAL, SelftestService};
use super::workload::{self, Measured, Workload};
use super::{SelftestConfig, accumulate};

/// How long a child may take to start.
const START_TIMEOUT: Duration = Duration::from_secs(20);

/// Server processes for the length of a run.
#[derive(Debug)]
pub struct ProcessCluster {
    exe: PathBuf,
    clients: u32,
    servers: Vec<(Child, String)>,
}

impl ProcessCluster {
    /// Starts `config.servers` server processes and waits until each serves.
    pub async fn start(config: &SelftestConfig) -> Result<ProcessCluster> {
        let exe = std::env::current_exe().context("find this program to start nodes from")?;
        let mut servers = Vec::new();
        for _ in 0..config.servers {
            let mut child = Command::new(&exe)
                .args(["selftest-node", "serve"])
                .stdin(Stdio::piped())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .with_context(|| format!("start {} selftest-node serve", exe.display()))?;
            let stdout = child.stdout.take().context("server stdout")?;
            let mut lines = BufReader::new(stdout).lines();
            let ready = tokio::time::timeout(START_TIMEOUT, lines.next_line())
                .await
                .context("a server process did not say READY in time")??
                .context("a server process exited before it was ready")?;
            let nid = ready
                .strip_prefix("READY ")
                .and_then(|rest| rest.split_whitespace().next())
                .with_context(|| format!("unexpected first line from a server process: {ready:?}"))?
                .to_owned();
            servers.push((child, nid));
        }
        Ok(ProcessCluster {
            exe,
            clients: config.clients,
            servers,
        })
    }

    /// The servers' NIDs.
    pub fn server_nids(&self) -> Vec<String> {
        self.servers.iter().map(|(_, nid)| nid.clone()).collect()
    }

    /// Runs `workload` in one client process per client node, all at once, and adds up what
    /// they measured.
    pub async fn run(&self, workload: &Workload) -> Result<Measured> {
        let json = serde_json::to_string(workload)?;
        let mut children = Vec::new();
        for _ in 0..self.clients {
            let child = Command::new(&self.exe)
                .args(["selftest-node", "client", "--workload", &json])
                .stdin(Stdio::null())
                .stdout(Stdio::piped())
                .kill_on_drop(true)
                .spawn()
                .context("start a selftest client process")?;
            children.push(child);
        }
        let limit = Duration::from_secs_f64(workload.seconds) + START_TIMEOUT * 2;
        let mut total = Measured::default();
        for child in children {
            let output = tokio::time::timeout(limit, child.wait_with_output())
                .await
                .context("a client process overran its run")??;
            if !output.status.success() {
                bail!("a client process failed ({})", output.status);
            }
            let text = String::from_utf8_lossy(&output.stdout);
            let line = text
                .lines()
                .last()
                .context("a client process printed nothing")?;
            accumulate(
                &mut total,
                serde_json::from_str(line)
                    .with_context(|| format!("parse client result {line:?}"))?,
            );
        }
        Ok(total)
    }

    /// Closes the servers' standard input and waits (bounded) for them to exit.
    pub async fn stop(self) {
        for (mut child, _) in self.servers {
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

/// `iopath selftest-node serve`: one selftest server with its admin service.
pub async fn serve() -> Result<()> {
    let config = NodeConfig {
        interfaces: vec![Interface::Tcp {
            nid: "127.0.0.1:0@tcp0".parse()?,
        }],
        ..NodeConfig::default()
    };
    let node = Node::start(config).await.context("start the server node")?;
    let service: Arc<SelftestService> = Arc::new(SelftestService::default());
    node.register_service(SELFTEST_PORTAL, service)?;
    let tree = ParamTree::new();
    iopath_fabric::params::register(&node, &tree, "")?;
    let shutdown = Shutdown::new();
    let info = NodeInfo::new(vec![node.nid().to_string()], vec!["selftest-server".into()]);
    let admin = iopath_admin::serve("127.0.0.1:0".parse()?, tree, info, shutdown.clone()).await?;
    println!("READY {} {}", node.nid(), admin.local_addr());
    // Serve until the parent closes our standard input or an admin asks us to stop.
    let mut stdin = tokio::io::stdin();
    let mut byte = [0u8; 1];
    tokio::select! {
        _ = async { while stdin.read(&mut byte).await.is_ok_and(|n| n > 0) {} } => {}
        reason = shutdown.triggered() => eprintln!("selftest server {}: shutting down: {reason}", node.nid()),
    }
    node.shutdown();
    Ok(())
}

/// `iopath selftest-node client --workload JSON`: runs one workload and prints the result.
pub async fn client(workload_json: &str) -> Result<()> {
    let workload: Workload = serde_json::from_str(workload_json).context("parse --workload")?;
    let config = NodeConfig {
        interfaces: vec![Interface::Tcp {
            nid: "127.0.0.1:0@tcp0".parse()?,
        }],
        ..NodeConfig::default()
    };
    let node = Node::start(config).await.context("start the client node")?;
    let measured = workload::run(
        &node,
        &workload,
        Arc::new((AtomicU64::new(0), AtomicU64::new(0))),
    )
    .await?;
    println!("{}", serde_json::to_string(&measured)?);
    node.shutdown();
    Ok(())
}
