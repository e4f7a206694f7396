//! `iopath`: run emulated HPC I/O stacks, their benchmarks, and the tools to inspect them.

use std::io::Write as _;
use std::net::SocketAddr;

use anyhow::Result;
use clap::{Parser, Subcommand, ValueEnum};
use iopath_bench::selftest::workload::TestKind;
use iopath_bench::selftest::{self, SelftestConfig, Transport};
use iopath_bench::units::parse_size;

/// Emulate the HPC I/O path — clients, forwarders, routers, journaling storage servers — and
/// measure how bytes travel through it.
#[derive(Debug, Parser)]
#[command(name = "iopath", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Start a preset stack in this process, write and read back data through the I/O path
    /// with verification, and show what happened — the place to start.
    Demo(iopath_stack::cli::DemoArgs),
    /// Run a whole stack (a preset or a stack file): in this process, or a process per node.
    Up(iopath_stack::cli::UpArgs),
    /// Run one node of a stack file (what `iopath up --processes` starts for each node).
    Node(iopath_stack::cli::NodeArgs),
    /// lnet_selftest-style bulk and ping tests between groups of fabric nodes.
    Selftest(SelftestArgs),
    /// The torus model: link loads, placement, LNET routes, router layout.
    #[command(subcommand)]
    Topo(iopath_topology::cli::TopoCommand),
    /// Read and set parameters of a running node, as Lustre's lctl does.
    Lctl {
        /// The node's admin service address (printed when the node starts).
        #[arg(long, env = "IOPATH_ADMIN")]
        admin: SocketAddr,
        #[command(subcommand)]
        command: iopath_admin::LctlCommand,
    },
    /// Configure a running node's LNet routes, as lnetctl does.
    Lnetctl {
        /// The node's admin service address.
        #[arg(long, env = "IOPATH_ADMIN")]
        admin: SocketAddr,
        #[command(subcommand)]
        command: LnetctlCommand,
    },
    /// Benchmarks beside baselines measured in the same run.
    #[command(subcommand)]
    Bench(BenchCommand),
    /// Lustre's lfs against a running stack: setstripe, getstripe, ls, stat, put, get, rm.
    Lfs {
        /// The metadata service's NID (printed when the stack starts).
        #[arg(long, env = "IOPATH_MDS")]
        mds: iopath_fabric::Nid,
        /// Go through the fyod at this NID instead of straight to the storage servers.
        #[arg(long)]
        fyod: Option<iopath_fabric::Nid>,
        #[command(subcommand)]
        command: iopath_client::lfs::LfsCommand,
    },
    /// Run an object storage server (OSS) with its targets, until stopped.
    Oss(OssArgs),
    /// A node of a multi-process selftest (started by `iopath selftest --processes`).
    #[command(hide = true)]
    SelftestNode {
        #[command(subcommand)]
        role: SelftestRole,
    },
}

#[derive(Debug, Subcommand)]
enum BenchCommand {
    /// Journal commit cost, as the Spider paper measured it: raw disk (iopath's io_uring
    /// writer, and fio), OST writes with sync commits, with async commits, and optionally an
    /// external journal.
    Journal(iopath_bench::journal::JournalArgs),
    /// IOR on a stack: IOR's flags and output, every byte read back and checked, beside the
    /// raw disk (and loopback TCP with --processes) measured in the same run.
    Ior(iopath_bench::ior::IorArgs),
}

#[derive(Debug, clap::Args)]
struct OssArgs {
    /// Directory of its targets (created if absent).
    #[arg(long)]
    dir: std::path::PathBuf,
    /// Its NID; port 0 picks a free port (printed on the READY line).
    #[arg(long, default_value = "127.0.0.1:0@tcp0")]
    nid: iopath_fabric::Nid,
    /// Number of object storage targets.
    #[arg(long, default_value_t = 1)]
    targets: u32,
    /// Journal commits: sync (reply after commit) or async (reply once data is on disk).
    #[arg(long, value_enum, default_value = "async")]
    journal: JournalMode,
    /// Milliseconds known clients have to replay after an unclean restart.
    #[arg(long, default_value_t = 30_000)]
    recovery_window_ms: u64,
    /// Async group commit interval in milliseconds.
    #[arg(long, default_value_t = 1000)]
    commit_interval_ms: u64,
    /// Largest object (k, m, g, t suffixes).
    #[arg(long, default_value = "1t", value_parser = parse_size)]
    object_size_max: u64,
    /// The admin service's address.
    #[arg(long, default_value = "127.0.0.1:0")]
    admin: SocketAddr,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum JournalMode {
    /// Commit the journal before replying.
    Sync,
    /// Reply once the data is on disk; commit in groups later.
    Async,
}

#[derive(Debug, Subcommand)]
enum LnetctlCommand {
    /// Routes to remote networks.
    Route {
        #[command(subcommand)]
        action: RouteAction,
    },
}

#[derive(Debug, Subcommand)]
enum RouteAction {
    /// Add a route: reach NET through GATEWAY.
    Add {
        /// The remote network, e.g. tcp1.
        #[arg(long)]
        net: String,
        /// The router's NID on one of the node's networks.
        #[arg(long)]
        gateway: String,
        /// Hop count: lower is preferred; equal routes share traffic round-robin.
        #[arg(long, default_value_t = 1)]
        hop: u32,
        /// Priority, considered before hops: lower is preferred.
        #[arg(long, default_value_t = 0)]
        priority: u32,
    },
    /// Delete a route.
    Del {
        /// The remote network.
        #[arg(long)]
        net: String,
        /// The router's NID.
        #[arg(long)]
        gateway: String,
    },
    /// Show the routing table.
    Show,
}

#[derive(Debug, Subcommand)]
enum SelftestRole {
    /// Serve selftest RPCs until standard input closes.
    Serve {
        /// TCP network number of the interface.
        #[arg(long, default_value_t = 0)]
        net: u16,
        /// Routes: "NET GATEWAY HOPS PRIORITY".
        #[arg(long = "route")]
        routes: Vec<String>,
    },
    /// Forward between tcp0 and tcp1 until standard input closes.
    Router,
    /// Run one workload and print the result as JSON.
    Client {
        #[arg(long)]
        workload: String,
        /// Routes: "NET GATEWAY HOPS PRIORITY".
        #[arg(long = "route")]
        routes: Vec<String>,
    },
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum TransportArg {
    Mem,
    Tcp,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
enum TestArg {
    /// brw then ping.
    All,
    /// Bulk read/write only.
    Brw,
    /// Ping only.
    Ping,
}

#[derive(Debug, Clone, Copy, ValueEnum)]
enum BrwMode {
    /// The servers pull the clients' buffers (a write).
    Write,
    /// The servers push into the clients' buffers (a read).
    Read,
}

#[derive(Debug, clap::Args)]
struct SelftestArgs {
    /// Transport between the nodes.
    #[arg(long, value_enum, default_value = "mem")]
    transport: TransportArg,
    /// Run every node in its own process (needs --transport tcp).
    #[arg(long)]
    processes: bool,
    /// Client nodes.
    #[arg(long, default_value_t = 1)]
    clients: u32,
    /// Server nodes.
    #[arg(long, default_value_t = 1)]
    servers: u32,
    /// Which tests.
    #[arg(long, value_enum, default_value = "all")]
    test: TestArg,
    /// Direction of brw.
    #[arg(long, value_enum, default_value = "write")]
    mode: BrwMode,
    /// Bytes per brw RPC (k, m, g suffixes).
    #[arg(long, default_value = "1m", value_parser = parse_size)]
    size: u64,
    /// RPCs in flight per client.
    #[arg(long, default_value_t = 8)]
    concurrency: u32,
    /// Seconds per test.
    #[arg(long, default_value_t = 5.0)]
    seconds: f64,
    /// Bulk checksum: crc32 or crc32c.
    #[arg(long, default_value = "crc32")]
    checksum: String,
    /// Measure loopback TCP with iperf3 in the same run and report the ratio.
    #[arg(long)]
    baseline: bool,
    /// Put this many routers between the clients (network 0) and the servers (network 1).
    #[arg(long, default_value_t = 0)]
    routers: u32,
    /// With --routers: run the same tests without routers in the same run, and compare.
    #[arg(long)]
    compare_direct: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run(Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(error) => {
            // The chain of causes, one line: what failed and why, without a backtrace.
            eprintln!("iopath: error: {}", one_line(&error));
            std::process::ExitCode::FAILURE
        }
    }
}

/// An error and its causes on one line, each said once: many of the libraries' messages
/// already end with their cause's own text, which the chain would otherwise repeat.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

async fn run(cli: Cli) -> Result<()> {
    use std::io::IsTerminal as _;
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("IOPATH_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: a log written to a file or a pipe is read
        // by grep and editors, where escape codes are noise.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    match cli.command {
        Command::Selftest(args) => run_selftest(args).await,
        Command::Topo(command) => iopath_topology::cli::run(command),
        Command::Lctl { admin, command } => iopath_admin::lctl::run(admin, command).await,
        Command::Lfs { mds, fyod, command } => run_lfs(mds, fyod, command).await,
        Command::Demo(args) => Ok(iopath_stack::cli::demo(args).await?),
        Command::Up(args) => Ok(iopath_stack::cli::up(args).await?),
        Command::Node(args) => Ok(iopath_stack::cli::node(args).await?),
        Command::Bench(BenchCommand::Ior(args)) => Ok(iopath_bench::ior::run(args).await?),
        Command::Bench(BenchCommand::Journal(args)) => Ok(iopath_bench::journal::run(args).await?),
        Command::Oss(args) => {
            let role = iopath_storage_server::service::role::OssRole {
                dir: args.dir,
                nid: args.nid,
                targets: args.targets,
                sync_journal: args.journal == JournalMode::Sync,
                recovery_window: std::time::Duration::from_millis(args.recovery_window_ms),
                commit_interval_ms: args.commit_interval_ms,
                object_size_max_bytes: args.object_size_max,
                admin: args.admin,
            };
            Ok(iopath_storage_server::service::role::run(role).await?)
        }
        Command::Lnetctl {
            admin,
            command: LnetctlCommand::Route { action },
        } => lnetctl_route(admin, action).await,
        Command::SelftestNode { role } => {
            let role = match role {
                SelftestRole::Serve { net, routes } => selftest::node::Role::Serve { net, routes },
                SelftestRole::Router => selftest::node::Role::Router,
                SelftestRole::Client { workload, routes } => {
                    selftest::node::Role::Client { workload, routes }
                }
            };
            Ok(selftest::node::run_role(role).await?)
        }
    }
}

async fn run_selftest(args: SelftestArgs) -> Result<()> {
    let brw = match args.mode {
        BrwMode::Write => TestKind::BrwWrite,
        BrwMode::Read => TestKind::BrwRead,
    };
    let tests = match args.test {
        TestArg::All => vec![brw, TestKind::Ping],
        TestArg::Brw => vec![brw],
        TestArg::Ping => vec![TestKind::Ping],
    };
    let config = SelftestConfig {
        transport: match args.transport {
            TransportArg::Mem => Transport::Mem,
            TransportArg::Tcp => Transport::Tcp,
        },
        processes: args.processes,
        clients: args.clients,
        servers: args.servers,
        tests,
        size_bytes: args.size,
        concurrency: args.concurrency,
        seconds: args.seconds,
        checksum: args.checksum,
        baseline: args.baseline,
        routers: args.routers,
        compare_direct: args.compare_direct,
    };
    let mut progress = |line: &str| {
        let mut err = std::io::stderr();
        if line.starts_with('\r') || line == "\n" {
            let _ = write!(err, "{line}");
        } else {
            let _ = writeln!(err, "{line}");
        }
        let _ = err.flush();
    };
    let report = selftest::run(&config, &mut progress).await?;
    if args.json {
        println!("{}", serde_json::to_string_pretty(&report)?);
    } else {
        print!("{}", selftest::render(&report));
    }
    Ok(())
}

async fn lnetctl_route(admin: SocketAddr, action: RouteAction) -> Result<()> {
    let client = iopath_admin::Client::connect(admin).await?;
    let command = match action {
        RouteAction::Add {
            net,
            gateway,
            hop,
            priority,
        } => format!("add {net} {gateway} {hop} {priority}"),
        RouteAction::Del { net, gateway } => format!("del {net} {gateway}"),
        RouteAction::Show => {
            for param in client.get_param("routes").await? {
                print!("{}", param.value);
            }
            return Ok(());
        }
    };
    client.set_param("routes", &command).await?;
    Ok(())
}

async fn run_lfs(
    mds: iopath_fabric::Nid,
    fyod: Option<iopath_fabric::Nid>,
    command: iopath_client::lfs::LfsCommand,
) -> Result<()> {
    use anyhow::Context as _;
    // A client node of its own on the MDS's network: TCP on loopback (or the host's address)
    // for a stack of processes.
    let interface = match mds.net.net_type {
        iopath_fabric::NetType::Tcp => iopath_fabric::Interface::Tcp {
            nid: iopath_fabric::Nid::tcp("127.0.0.1:0".parse()?, mds.net.number),
        },
        other => anyhow::bail!(
            "lfs reaches a stack over TCP; {mds} is on a {} network",
            other.name()
        ),
    };
    let node = iopath_fabric::Node::start(iopath_fabric::NodeConfig {
        interfaces: vec![interface],
        ..Default::default()
    })
    .await
    .context("start the client node")?;
    // A client id of its own: time and pid, unique among the clients of this stack.
    let client_id = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)?
        .as_nanos() as u64
        ^ u64::from(std::process::id());
    let mut config = iopath_client::ClientConfig::new(node.clone(), mds, client_id);
    config.forwarder = fyod;
    let client = iopath_client::Client::connect(config)
        .await
        .with_context(|| format!("connect to the stack at {mds}"))?;
    let mut out = Vec::new();
    let result = iopath_client::lfs::run_to(&client, command, &mut out).await;
    // Before exiting, every write the servers acknowledged is committed and the servers
    // forget this client: its memory is the only copy they could replay, and it is about to
    // go. Done whether or not the command succeeded, for what it wrote before failing; and
    // nothing is reported done ("N bytes copied") before it is.
    let closed = client
        .close()
        .await
        .context("commit what was written and disconnect: it may not survive a server crash");
    node.shutdown();
    if result.is_err() || closed.is_ok() {
        std::io::stdout()
            .write_all(&out)
            .context("write to standard output")?;
    }
    result.and(closed)
}
