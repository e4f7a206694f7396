//! `iopath bench cluster`: IOR on the spider-cluster preset across five hosts made of network
//! namespaces (`iopath launch`, routers between two subnets), beside the same stack as
//! processes on loopback (`bench ior --processes`) and iperf3 across the namespaces' two
//! links, all in one run: what crossing hosts costs over loopback, and how close the emulated
//! path comes to what the links carry.
//!
//! IOR runs as `iopath bench ior` processes (the attached one inside the compute host's
//! namespace) with `-O summaryFormat=JSON`; the figures are their JSON's `bwMaxMIB`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Output, Stdio};
use std::time::{Duration, Instant};

use serde::Serialize;

use crate::baseline::require_iperf3;
use crate::error::BenchError;
use crate::netns::{COMPUTE, Cluster, MANAGEMENT, STORAGE};

/// The preset measured.
pub const PRESET: &str = iopath_stack::CLUSTER_PRESET;

/// iperf3's parallel streams: as many as IOR has tasks (the preset's four clients).
const IPERF3_STREAMS: u32 = 4;

/// The cluster's /16 (`10.<this>.0.0/16`): apart from the tests' (231 to 233).
const SECOND_BYTE: u8 = 230;

/// How long the launched stack may take to come up, and to go.
const LAUNCH_TIMEOUT: Duration = Duration::from_secs(60);

/// iperf3's port inside the namespaces (each namespace has its own ports).
const IPERF3_PORT: &str = "5201";

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterOptions {
    /// The iopath program (it runs launch, node and IOR processes).
    pub program: PathBuf,
    /// IOR's `-b`: bytes each task writes and reads.
    pub block_bytes: u64,
    /// IOR's `-t`.
    pub transfer_bytes: u64,
    /// IOR's `-i`.
    pub repetitions: u32,
    /// iperf3's `-t` per link.
    pub iperf_seconds: u32,
    /// Where the nodes' state and IOR's baselines go (default: a temporary directory here).
    pub dir: Option<PathBuf>,
}

/// One iperf3 measurement.
#[derive(Debug, Clone, Serialize)]
pub struct LinkRate {
    /// Which link: `compute link c0 -> r0`.
    pub link: String,
    /// MiB/s received.
    pub mib_s: f64,
    /// The client's command.
    pub command: String,
}

/// One IOR run.
#[derive(Debug, Clone, Serialize)]
pub struct IorRun {
    /// Where: across namespace hosts, or loopback processes.
    pub place: String,
    /// IOR's Max Write, MiB/s.
    pub write_mib_s: f64,
    /// IOR's Max Read, MiB/s.
    pub read_mib_s: f64,
    /// The command.
    pub command: String,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct ClusterResult {
    /// The stack.
    pub stack: String,
    /// What was real.
    pub real: String,
    /// What was modeled.
    pub modeled: String,
    /// iperf3 over each link (compute, storage).
    pub links: Vec<LinkRate>,
    /// IOR across the namespace hosts, then on loopback.
    pub ior: Vec<IorRun>,
    /// Across hosts over loopback, write.
    pub hosts_vs_loopback_write: f64,
    /// Across hosts over loopback, read.
    pub hosts_vs_loopback_read: f64,
    /// IOR's write across hosts over the slower link's iperf3.
    pub write_vs_link: f64,
    /// IOR's read across hosts over the slower link's iperf3.
    pub read_vs_link: f64,
}

/// Runs the benchmark; `progress` gets a line per step.
pub fn measure(
    options: &ClusterOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<ClusterResult, BenchError> {
    if options.repetitions == 0 || options.iperf_seconds == 0 {
        return Err(BenchError::BadOption {
            option: "-i / --seconds".into(),
            why: "give at least one repetition and one second".into(),
        });
    }
    let iperf3 = require_iperf3()?;
    let parent = options.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let dir = iopath_stack::scratch::ScratchDir::new_in(&parent, "iopath-bench-cluster-")
        .map_err(|e| BenchError::system(format!("make a directory in {}", parent.display()), e))?;
    progress("making five hosts of network namespaces: c0, r0, r1, s0, s1");
    let cluster = Cluster::new(SECOND_BYTE)?;
    let mut links = Vec::new();
    for (name, server, client, addr) in [
        (
            "compute link c0 -> r0",
            "r0",
            "c0",
            cluster.addr(COMPUTE, 1),
        ),
        (
            "storage link r0 -> s0",
            "s0",
            "r0",
            cluster.addr(STORAGE, 3),
        ),
    ] {
        progress(&format!("baseline: iperf3 over the {name} ({iperf3})"));
        links.push(iperf3_between(
            &cluster, server, client, &addr, options, name,
        )?);
    }
    let ior_args = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = ["bench", "ior"].map(str::to_owned).into();
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        args.extend([
            "-w".to_owned(),
            "-r".to_owned(),
            "-F".to_owned(),
            "-t".to_owned(),
            options.transfer_bytes.to_string(),
            "-b".to_owned(),
            options.block_bytes.to_string(),
            "-i".to_owned(),
            options.repetitions.to_string(),
            "-O".to_owned(),
            "summaryFormat=JSON".to_owned(),
            "--dir".to_owned(),
            dir.path().display().to_string(),
        ]);
        args
    };
    progress(&format!("launching {PRESET} across the namespace hosts"));
    let stack_file = dir.path().join("launched.toml");
    let mut launch = start_launch(&cluster, options, dir.path(), &stack_file)?;
    let attached = ior_args(&["--attach", &stack_file.display().to_string()]);
    progress("IOR across the namespace hosts");
    let on_hosts = run_ior(
        cluster.on("c0", &options.program).args(&attached),
        "across namespace hosts (iopath launch)",
        &attached,
    );
    let stopped = stop_launch(&mut launch);
    let on_hosts = on_hosts?;
    stopped?;
    drop(cluster);
    progress(&format!("IOR on {PRESET} as processes on loopback"));
    let loopback = ior_args(&["--preset", PRESET, "--processes"]);
    let on_loopback = run_ior(
        Command::new(&options.program).args(&loopback),
        "loopback processes (bench ior --processes)",
        &loopback,
    )?;
    let slower = links.iter().map(|l| l.mib_s).fold(f64::INFINITY, f64::min);
    Ok(ClusterResult {
        stack: PRESET.to_owned(),
        real: "every node a process; every byte over TCP, across hosts through veth pairs and a \
               kernel bridge per subnet (no NIC, no wire), through two LNET router processes on \
               hosts of their own; storage servers' real files and fsyncs. One machine's CPUs \
               and disk under all five hosts"
            .to_owned(),
        modeled: "nothing".to_owned(),
        hosts_vs_loopback_write: on_hosts.write_mib_s / on_loopback.write_mib_s,
        hosts_vs_loopback_read: on_hosts.read_mib_s / on_loopback.read_mib_s,
        write_vs_link: on_hosts.write_mib_s / slower,
        read_vs_link: on_hosts.read_mib_s / slower,
        links,
        ior: vec![on_hosts, on_loopback],
    })
}

/// iperf3 from `client` to `server` at `addr`, [`IPERF3_STREAMS`] streams.
fn iperf3_between(
    cluster: &Cluster,
    server: &str,
    client: &str,
    addr: &str,
    options: &ClusterOptions,
    name: &str,
) -> Result<LinkRate, BenchError> {
    let mut server = cluster.on(server, Path::new("iperf3"));
    server.args(["-s", "-1", "-B", addr, "-p", IPERF3_PORT]);
    let seconds = options.iperf_seconds.to_string();
    let streams = IPERF3_STREAMS.to_string();
    let args = [
        "-c",
        addr,
        "-p",
        IPERF3_PORT,
        "-t",
        &seconds,
        "-P",
        &streams,
        "-J",
    ];
    let output = crate::baseline::iperf3_pair(server, || {
        let mut command = cluster.on(client, Path::new("iperf3"));
        command.args(args);
        command
    })?;
    Ok(LinkRate {
        link: name.to_owned(),
        mib_s: crate::baseline::iperf3_received_mib_s(&output)?,
        command: format!("ip netns exec {client} iperf3 {}", args.join(" ")),
    })
}

/// `iopath launch` of the preset on c0, started through `ip netns exec {host}`; returns once
/// it wrote `stack_file` (every node up).
fn start_launch(
    cluster: &Cluster,
    options: &ClusterOptions,
    dir: &Path,
    stack_file: &Path,
) -> Result<Child, BenchError> {
    let hostfile = dir.join("hosts");
    cluster.write_hostfile(&hostfile)?;
    let mut child = cluster
        .on("c0", &options.program)
        .args(["launch", "--preset", PRESET, "--hostfile"])
        .arg(&hostfile)
        .args(["--exec", "ip netns exec {host}"])
        .arg(format!("--subnet=compute={}", cluster.subnet(COMPUTE)))
        .arg(format!("--subnet=storage={}", cluster.subnet(STORAGE)))
        .arg(format!("--admin-subnet={}", cluster.subnet(MANAGEMENT)))
        .arg("--dir")
        .arg(dir.join("nodes"))
        .arg("--out")
        .arg(stack_file)
        .stdout(Stdio::null())
        .spawn()
        .map_err(|e| BenchError::system("start iopath launch", e))?;
    let deadline = Instant::now() + LAUNCH_TIMEOUT;
    while !stack_file.exists() {
        if let Ok(Some(status)) = child.try_wait() {
            return Err(BenchError::tool(format!(
                "iopath launch ended ({status}) before the stack was up; its error is above"
            )));
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            return Err(BenchError::tool(format!(
                "iopath launch did not bring the stack up within {} s",
                LAUNCH_TIMEOUT.as_secs()
            )));
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    Ok(child)
}

/// SIGTERM to launch (as a job's end sends it), and its clean exit.
fn stop_launch(launch: &mut Child) -> Result<(), BenchError> {
    let _ = Command::new("kill")
        .args(["-TERM", &launch.id().to_string()])
        .status();
    let deadline = Instant::now() + LAUNCH_TIMEOUT;
    loop {
        match launch.try_wait() {
            Ok(Some(status)) if status.success() => return Ok(()),
            Ok(Some(status)) => {
                return Err(BenchError::tool(format!(
                    "iopath launch did not stop cleanly ({status}); its error is above"
                )));
            }
            Ok(None) if Instant::now() < deadline => std::thread::sleep(Duration::from_millis(100)),
            _ => {
                let _ = launch.kill();
                let _ = launch.wait();
                return Err(BenchError::tool(
                    "iopath launch did not stop; it was killed",
                ));
            }
        }
    }
}

/// Runs one `iopath bench ior` and reads its JSON summary's best write and read.
fn run_ior(command: &mut Command, place: &str, args: &[String]) -> Result<IorRun, BenchError> {
    let output: Output = command
        .stderr(Stdio::inherit())
        .output()
        .map_err(|e| BenchError::system("run iopath bench ior", e))?;
    if !output.status.success() {
        return Err(BenchError::tool(format!(
            "iopath bench ior {place} failed ({}); its error is above",
            output.status
        )));
    }
    let json: serde_json::Value = serde_json::from_slice(&output.stdout)
        .map_err(|e| BenchError::json(format!("parse IOR's JSON ({place})"), e))?;
    let best = |operation: &str| {
        json["summary"]
            .as_array()
            .and_then(|rows| {
                rows.iter()
                    .find(|r| r["operation"] == operation)
                    .and_then(|r| r["bwMaxMIB"].as_f64())
            })
            .ok_or_else(|| BenchError::tool(format!("IOR's JSON ({place}) has no {operation} row")))
    };
    Ok(IorRun {
        place: place.to_owned(),
        write_mib_s: best("write")?,
        read_mib_s: best("read")?,
        command: format!("iopath {}", args.join(" ")),
    })
}

/// The result as a table for people.
pub fn table(r: &ClusterResult) -> String {
    let mut out = format!(
        "IOR on {} across five hosts made of network namespaces, beside the same stack on \
         loopback and iperf3 over the hosts' links, in one run\nreal: {}\nmodeled: {}\n\n",
        r.stack, r.real, r.modeled
    );
    out.push_str(&format!(
        "{:<48} {:>12} {:>12}\n",
        "measured", "write MiB/s", "read MiB/s"
    ));
    for l in &r.links {
        out.push_str(&format!(
            "{:<48} {:>12.1} {:>12}\n",
            format!("iperf3, {} ({IPERF3_STREAMS} streams)", l.link),
            l.mib_s,
            "-"
        ));
    }
    for i in &r.ior {
        out.push_str(&format!(
            "{:<48} {:>12.1} {:>12.1}\n",
            format!("IOR, {}", i.place),
            i.write_mib_s,
            i.read_mib_s
        ));
    }
    out.push_str(&format!(
        "\nratios: across hosts / loopback: write {:.3}, read {:.3}; across hosts / the slower \
         link's iperf3: write {:.3}, read {:.3}\n",
        r.hosts_vs_loopback_write, r.hosts_vs_loopback_read, r.write_vs_link, r.read_vs_link
    ));
    for i in &r.ior {
        out.push_str(&format!("IOR {}: {}\n", i.place, i.command));
    }
    for l in &r.links {
        out.push_str(&format!("{}: {}\n", l.link, l.command));
    }
    out
}
