//! `iopath selftest` — lnet_selftest in miniature — and the hidden `iopath selftest-node`
//! that its `--processes` mode starts for each node.

use std::io::Write as _;
use std::path::PathBuf;

use anyhow::Context as _;

use clap::{Subcommand, ValueEnum};
use iopath_bench::selftest::workload::TestKind;
use iopath_bench::selftest::{self, SelftestConfig, Transport};
use iopath_fabric::units::parse_size;

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

/// `iopath selftest`'s options.
#[derive(Debug, clap::Args)]
pub struct SelftestArgs {
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
    /// Sweep: run the tests at each of these sizes in turn, comma-separated (4k,64k,1m,4m),
    /// with one baseline measured before the first; instead of --size.
    #[arg(long, value_delimiter = ',', value_parser = parse_size, conflicts_with = "size", value_name = "SIZE,...")]
    sizes: Vec<u64>,
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
    /// With --routers: the routers do not verify the checksum of the bulk chunks they forward
    /// (the stack file's `check_forwarded_checksums = false`); the servers still do.
    #[arg(long, requires = "routers")]
    no_router_checksums: bool,
    /// Print JSON instead of a table.
    #[arg(long)]
    json: bool,
    /// With --sizes: also draw bulk bandwidth by RPC size as an SVG plot in FILE, a line per
    /// brw test and layout, the baseline (with --baseline) as a rule.
    #[arg(long, value_name = "FILE", requires = "sizes")]
    svg: Option<PathBuf>,
}

/// `iopath selftest-node`: which node this process is.
#[derive(Debug, clap::Args)]
pub struct SelftestNodeArgs {
    /// The admin secret file that set_param and shutdown callers must match; without it,
    /// nothing can change the node over its admin service.
    #[arg(long, value_name = "FILE")]
    secret_file: Option<std::path::PathBuf>,
    #[command(subcommand)]
    role: SelftestRole,
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
    Router {
        /// Forward bulk chunks without verifying their checksums.
        #[arg(long)]
        no_checksums: bool,
    },
    /// Run one workload and print the result as JSON.
    Client {
        #[arg(long)]
        workload: String,
        /// Routes: "NET GATEWAY HOPS PRIORITY".
        #[arg(long = "route")]
        routes: Vec<String>,
    },
}

/// Runs `iopath selftest`: progress on stderr, the table (or `--json`) on stdout; with
/// `--sizes`, a row per size and test (or the sweep's JSON), and with `--svg` the plot.
pub async fn run(args: SelftestArgs) -> anyhow::Result<()> {
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
        router_checksums: !args.no_router_checksums,
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
    if !args.sizes.is_empty() {
        let report = selftest::sweep::sweep(&config, &args.sizes, &mut progress).await?;
        if let Some(path) = &args.svg {
            std::fs::write(path, selftest::plot::figure(&report).svg())
                .with_context(|| format!("write the plot {}", path.display()))?;
        }
        if args.json {
            let json = serde_json::to_string_pretty(&report)?;
            writeln!(std::io::stdout(), "{json}").map_err(anyhow::Error::from)?;
        } else {
            out!("{}", selftest::render_sweep(&report))?;
        }
        return Ok(());
    }
    let report = selftest::run(&config, &mut progress).await?;
    if args.json {
        let json = serde_json::to_string_pretty(&report)?;
        writeln!(std::io::stdout(), "{json}").map_err(anyhow::Error::from)?;
    } else {
        out!("{}", selftest::render(&report))?;
    }
    Ok(())
}

/// Runs `iopath selftest-node`: one node of a multi-process selftest.
pub async fn node(args: SelftestNodeArgs) -> anyhow::Result<()> {
    let role = match args.role {
        SelftestRole::Serve { net, routes } => selftest::node::Role::Serve { net, routes },
        SelftestRole::Router { no_checksums } => selftest::node::Role::Router {
            check_checksums: !no_checksums,
        },
        SelftestRole::Client { workload, routes } => {
            selftest::node::Role::Client { workload, routes }
        }
    };
    selftest::node::run_role(role, args.secret_file.as_deref()).await?;
    Ok(())
}
