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
    /// A node of a multi-process selftest (started by `iopath selftest --processes`).
    #[command(hide = true)]
    SelftestNode {
        #[command(subcommand)]
        role: SelftestRole,
    },
}

#[derive(Debug, Subcommand)]
enum SelftestRole {
    /// Serve selftest RPCs until standard input closes.
    Serve,
    /// Run one workload and print the result as JSON.
    Client {
        #[arg(long)]
        workload: String,
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
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
}

#[tokio::main]
async fn main() -> Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(
            tracing_subscriber::EnvFilter::try_from_env("IOPATH_LOG")
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        .init();
    match Cli::parse().command {
        Command::Selftest(args) => run_selftest(args).await,
        Command::Topo(command) => iopath_topology::cli::run(command),
        Command::Lctl { admin, command } => iopath_admin::lctl::run(admin, command).await,
        Command::SelftestNode {
            role: SelftestRole::Serve,
        } => selftest::node::serve().await,
        Command::SelftestNode {
            role: SelftestRole::Client { workload },
        } => selftest::node::client(&workload).await,
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
