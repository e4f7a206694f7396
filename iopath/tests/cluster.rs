//! A stack across hosts: `iopath launch` puts the spider-cluster preset on five hosts made of
//! network namespaces (compute, two routers on both subnets, two servers; see
//! `iopath_bench::netns`), started through `ip netns exec {host}` as it would be through `ssh
//! {host}`; IOR and lfs run on the compute host against the file launch wrote. Then the
//! faults: the compute host's link shaped (`tc tbf`), and random loss on its subnet
//! (nftables' `numgen`, this kernel having no netem).

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use iopath_bench::netns::{COMPUTE, Cluster, MANAGEMENT, STORAGE};

/// How long the launched stack may take to come up.
const UP_TIMEOUT: Duration = Duration::from_secs(60);

/// `iopath launch` running on the compute host, and what it said; dropped (a test that
/// failed), it is told to stop and waited for, so no node outlives the test.
struct Launch {
    child: Option<Child>,
    /// Its standard output up to the node table's end.
    said: String,
    /// The stack file it wrote.
    file: PathBuf,
    /// An empty directory for IOR's baselines.
    ior_dir: PathBuf,
}

fn program() -> PathBuf {
    PathBuf::from(env!("CARGO_BIN_EXE_iopath"))
}

/// Starts `iopath launch` on c0 and waits for its node table.
fn launch(cluster: &Cluster, dir: &Path) -> Launch {
    let hostfile = dir.join("hosts");
    cluster.write_hostfile(&hostfile).unwrap();
    let file = dir.join("spider-cluster.launched.toml");
    let mut child = cluster
        .on("c0", &program())
        .args(["launch", "--preset", "spider-cluster", "--hostfile"])
        .arg(&hostfile)
        .args(["--exec", "ip netns exec {host}"])
        .arg(format!("--subnet=compute={}", cluster.subnet(COMPUTE)))
        .arg(format!("--subnet=storage={}", cluster.subnet(STORAGE)))
        .arg(format!("--admin-subnet={}", cluster.subnet(MANAGEMENT)))
        .arg("--dir")
        .arg(dir.join("nodes"))
        .arg("--out")
        .arg(&file)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = mpsc::channel();
    std::thread::spawn(move || {
        for line in BufReader::new(stdout).lines().map_while(Result::ok) {
            if tx.send(line).is_err() {
                break;
            }
        }
    });
    let mut said = String::new();
    loop {
        match rx.recv_timeout(UP_TIMEOUT) {
            Ok(line) => {
                said.push_str(&line);
                said.push('\n');
                if line.starts_with("Ctrl-C, SIGTERM") {
                    break;
                }
            }
            Err(e) => {
                let _ = child.kill();
                panic!("iopath launch did not come up ({e}); it said:\n{said}");
            }
        }
    }
    let ior_dir = dir.join("ior");
    std::fs::create_dir(&ior_dir).unwrap();
    Launch {
        child: Some(child),
        said,
        file,
        ior_dir,
    }
}

impl Launch {
    /// The stack file's path, as an argument.
    fn file(&self) -> String {
        self.file.display().to_string()
    }

    /// SIGTERM, as the job's end sends it; returns its exit status's success.
    fn stop(mut self) -> bool {
        terminate(self.child.take().unwrap())
    }
}

impl Drop for Launch {
    fn drop(&mut self) {
        if let Some(child) = self.child.take() {
            terminate(child);
        }
    }
}

/// SIGTERM to `child`, then its exit status's success.
fn terminate(mut child: Child) -> bool {
    let _ = Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status();
    child.wait().is_ok_and(|status| status.success())
}

/// Runs `iopath ARGS` on host `host`; its standard output, or a panic with its error.
fn iopath_on(cluster: &Cluster, host: &str, args: &[&str]) -> String {
    let out = cluster.on(host, &program()).args(args).output().unwrap();
    assert!(
        out.status.success(),
        "iopath {args:?} on {host}: {}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

/// The bytes router `router` has received so far, from its admin service.
fn received(cluster: &Cluster, file: &str, router: &str) -> u64 {
    let stats = iopath_on(
        cluster,
        "c0",
        &[
            "lctl",
            "--stack",
            file,
            "--node",
            router,
            "get_param",
            "-n",
            "stats",
        ],
    );
    common::stat(&stats, "recv_length")
}

#[test]
fn a_routed_spider_runs_across_namespace_hosts_and_reads_back_every_byte() {
    // Declared first, dropped last: every node is gone before its directory.
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::new(231).unwrap();
    let launch = launch(&cluster, dir.path());
    eprintln!("{}", launch.said);
    // Every server node on the host the preset puts it on, at its address there.
    for (node, host, nid) in [
        (
            "rtr0",
            "r0",
            format!("{}:21050@tcp0", cluster.addr(COMPUTE, 1)),
        ),
        (
            "rtr1",
            "r1",
            format!("{}:22051@tcp1", cluster.addr(STORAGE, 2)),
        ),
        (
            "oss0",
            "s0",
            format!("{}:22010@tcp1", cluster.addr(STORAGE, 3)),
        ),
        (
            "oss1",
            "s1",
            format!("{}:22011@tcp1", cluster.addr(STORAGE, 4)),
        ),
        (
            "mds",
            "s0",
            format!("{}:22001@tcp1", cluster.addr(STORAGE, 3)),
        ),
    ] {
        let row = launch
            .said
            .lines()
            .find(|l| l.starts_with(&format!("{node} ")))
            .unwrap_or_else(|| panic!("no row for {node} in\n{}", launch.said));
        assert!(
            row.contains(&cluster.ns(host)) && row.contains(&nid),
            "{node} should be on {host} at {nid}: {row}"
        );
    }
    // Nothing of the cluster is reachable from the main namespace.
    let route = Command::new("ip")
        .args(["route", "get", &cluster.addr(STORAGE, 3)])
        .output()
        .unwrap();
    assert!(
        !route.status.success(),
        "the main namespace has a route into the cluster: {}",
        String::from_utf8_lossy(&route.stdout)
    );

    let file = &launch.file();
    let before: Vec<u64> = ["rtr0", "rtr1"]
        .iter()
        .map(|r| received(&cluster, file, r))
        .collect();
    // IOR on the compute host: four tasks, a file each, written and read back, every word
    // checked.
    let ior_dir = launch.ior_dir.clone();
    let ior = iopath_on(
        &cluster,
        "c0",
        &[
            "bench",
            "ior",
            "--attach",
            file,
            "-w",
            "-r",
            "-F",
            "-t",
            "1m",
            "-b",
            "16m",
            "--dir",
            ior_dir.to_str().unwrap(),
        ],
    );
    eprintln!("{ior}");
    assert!(
        ior.contains("verified: 64 MiB read back and checked word by word"),
        "{ior}"
    );
    assert!(
        ior.contains("attached: server nodes launched on their hosts"),
        "{ior}"
    );
    // Both routers carried the traffic, each at least a sixth of it. Not half each: LNet's
    // choice (fewest bytes outstanding, then the least recently used) takes a writer's small
    // request and its bulk in turn among the routers, so the bulk lands unevenly while they
    // keep up (`bench routing` measures the busiest at 1.4-1.6x its share; one CI run here
    // saw 23% on one router).
    for (r, before) in ["rtr0", "rtr1"].iter().zip(before) {
        let carried = received(&cluster, file, r) - before;
        assert!(
            carried > ((2 * 64) << 20) / 6,
            "{r} received {carried} bytes"
        );
    }
    // lfs from the compute host reaches the MDS behind the routers, as the clients do.
    let src = dir.path().join("src");
    let back = dir.path().join("back");
    let data: Vec<u8> = (0..5_000_000u32)
        .map(|i| (i * 7 + i / 4099) as u8)
        .collect();
    std::fs::write(&src, &data).unwrap();
    iopath_on(
        &cluster,
        "c0",
        &[
            "lfs",
            "--stack",
            file,
            "put",
            src.to_str().unwrap(),
            "/copy",
        ],
    );
    let stripe = iopath_on(
        &cluster,
        "c0",
        &["lfs", "--stack", file, "getstripe", "-c", "/copy"],
    );
    assert_eq!(stripe.trim(), "4", "striped over all four targets");
    iopath_on(
        &cluster,
        "c0",
        &[
            "lfs",
            "--stack",
            file,
            "get",
            "/copy",
            back.to_str().unwrap(),
        ],
    );
    assert!(
        std::fs::read(&back).unwrap() == data,
        "lfs get returned other bytes"
    );
    // One write and one read traced hop by hop across the hosts: every server node's log read
    // over its admin service, the routers' forwards among the steps.
    let trace = iopath_on(&cluster, "c0", &["trace", "--attach", file, "--size", "1m"]);
    assert!(
        trace.contains("router   forward") && trace.contains("journal  record"),
        "{trace}"
    );
    // The demo, too, on the launched stack.
    let demo = iopath_on(&cluster, "c0", &["demo", "--attach", file, "--size", "8m"]);
    assert!(
        demo.contains("every byte read back matched what was written"),
        "{demo}"
    );

    assert!(
        launch.stop(),
        "iopath launch stopped every node cleanly on SIGTERM"
    );
    assert!(
        !Path::new(file).exists(),
        "the launched stack file goes with the stack"
    );
    let prefix = cluster.ns("");
    drop(cluster);
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&left.stdout).contains(&prefix),
        "namespaces left behind"
    );
}

/// `Max Write: 123.45 MiB/sec` in IOR's text output.
fn max_write_mib_s(ior: &str) -> f64 {
    ior.lines()
        .find_map(|l| {
            l.strip_prefix("Max Write:")?
                .split_whitespace()
                .next()?
                .parse()
                .ok()
        })
        .unwrap_or_else(|| panic!("no Max Write in {ior}"))
}

/// The namespace's TCP retransmitted segments (`/proc/net/snmp`, which is per namespace).
fn tcp_retransmits(cluster: &Cluster, host: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", &cluster.ns(host), "cat", "/proc/net/snmp"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    let mut tcp = text.lines().filter(|l| l.starts_with("Tcp:"));
    let (names, values) = (tcp.next().unwrap(), tcp.next().unwrap());
    let column = names
        .split_whitespace()
        .position(|n| n == "RetransSegs")
        .unwrap();
    values
        .split_whitespace()
        .nth(column)
        .unwrap()
        .parse()
        .unwrap()
}

/// The shaper's rate: 200 Mbit/s is 25 MB/s, 23.8 MiB/s.
const SHAPED_MBIT: u64 = 200;

#[test]
fn a_shaped_link_bounds_ior_and_random_loss_ends_in_resends_with_nothing_lost() {
    // Declared first, dropped last: every node is gone before its directory.
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::new(232).unwrap();
    let launch = launch(&cluster, dir.path());
    let file = &launch.file();
    let ior_dir = launch.ior_dir.clone();
    let ior = |label: &str| {
        let out = iopath_on(
            &cluster,
            "c0",
            &[
                "bench",
                "ior",
                "--attach",
                file,
                "-w",
                "-r",
                "-F",
                "-t",
                "1m",
                "-b",
                "8m",
                "--dir",
                ior_dir.to_str().unwrap(),
            ],
        );
        assert!(
            out.contains("verified: 32 MiB read back and checked word by word"),
            "{label}: {out}"
        );
        max_write_mib_s(&out)
    };
    let free = ior("unshaped");

    // The compute host's link shaped (tc tbf on its egress: every write leaves through it).
    let c0 = cluster.ns("c0");
    iopath_bench::netns::ip(&[
        "netns",
        "exec",
        &c0,
        "tc",
        "qdisc",
        "add",
        "dev",
        &format!("eth{COMPUTE}"),
        "root",
        "tbf",
        "rate",
        &format!("{SHAPED_MBIT}mbit"),
        "burst",
        "256kb",
        "latency",
        "100ms",
    ])
    .unwrap();
    let shaped = ior("shaped");
    let limit_mib_s = (SHAPED_MBIT * 1_000_000 / 8) as f64 / f64::from(1 << 20);
    eprintln!("IOR write: {free:.1} MiB/s unshaped, {shaped:.1} MiB/s shaped to {limit_mib_s:.1}");
    // No faster than the shaper lets it: a bound the kernel enforces, not a speed this machine
    // must reach (a bucket's burst allows a little over).
    assert!(
        shaped < limit_mib_s * 1.1,
        "shaped to {limit_mib_s:.1} MiB/s, IOR wrote {shaped:.1}"
    );
    iopath_bench::netns::ip(&[
        "netns",
        "exec",
        &c0,
        "tc",
        "qdisc",
        "del",
        "dev",
        &format!("eth{COMPUTE}"),
        "root",
    ])
    .unwrap();

    // Random loss on the compute subnet: nftables on each router drops 3 in 100 packets
    // arriving from it (this kernel has no netem). The compute host's TCP resends them;
    // nothing is lost.
    let nft = |host: &str, rules: &str| nft_on(&cluster, host, &[rules], "");
    for router in ["r0", "r1"] {
        nft(router, "add table inet loss");
        nft(
            router,
            "add chain inet loss in { type filter hook input priority 0 ; }",
        );
        nft(
            router,
            &format!(
                "add rule inet loss in iifname eth{COMPUTE} numgen random mod 100 < 3 counter drop"
            ),
        );
    }
    let before = tcp_retransmits(&cluster, "c0");
    ior("lossy");
    let resent = tcp_retransmits(&cluster, "c0") - before;
    let dropped: u64 = ["r0", "r1"]
        .iter()
        .map(|r| packets_counted(&nft(r, "list table inet loss")))
        .sum();
    eprintln!(
        "lossy subnet: the routers dropped {dropped} packets, the compute host resent {resent} TCP segments"
    );
    assert!(dropped > 0, "nftables dropped nothing");
    assert!(resent > 0, "{dropped} packets dropped and no TCP resends");
    assert!(
        launch.stop(),
        "iopath launch stopped every node cleanly on SIGTERM"
    );
}

#[test]
fn bench_cluster_puts_ior_across_hosts_beside_loopback_and_iperf3() {
    let dir = tempfile::tempdir().unwrap();
    let out = Command::new(program())
        .args([
            "bench",
            "cluster",
            "-b",
            "4m",
            "-i",
            "1",
            "--seconds",
            "1",
            "--json",
            "--dir",
        ])
        .arg(dir.path())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    // Its namespaces are named after its process id.
    let prefix = format!("iop{}-", out.id());
    let out = out.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let json: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let links: Vec<f64> = json["links"]
        .as_array()
        .unwrap()
        .iter()
        .map(|l| l["mib_s"].as_f64().unwrap())
        .collect();
    assert_eq!(links.len(), 2, "{json}");
    assert!(links.iter().all(|&l| l > 0.0), "{json}");
    let ior = json["ior"].as_array().unwrap();
    assert_eq!(ior.len(), 2, "{json}");
    assert!(
        ior[0]["place"]
            .as_str()
            .unwrap()
            .contains("namespace hosts")
    );
    assert!(ior[1]["place"].as_str().unwrap().contains("loopback"));
    let (hosts, loopback) = (&ior[0], &ior[1]);
    let ratio = |a: &serde_json::Value, b: f64| a.as_f64().unwrap() / b;
    // The ratios are the figures' own.
    let close = |a: f64, b: f64| (a - b).abs() < 1e-9 * b.abs().max(1.0);
    assert!(close(
        json["hosts_vs_loopback_write"].as_f64().unwrap(),
        ratio(
            &hosts["write_mib_s"],
            loopback["write_mib_s"].as_f64().unwrap()
        )
    ));
    let slower = links.iter().copied().fold(f64::INFINITY, f64::min);
    assert!(close(
        json["read_vs_link"].as_f64().unwrap(),
        ratio(&hosts["read_mib_s"], slower)
    ));
    assert_eq!(json["modeled"], "nothing");
    // Nothing of the cluster is left.
    let left = Command::new("ip").args(["netns", "list"]).output().unwrap();
    assert!(
        !String::from_utf8_lossy(&left.stdout).contains(&prefix),
        "namespaces left behind"
    );
}

#[test]
fn a_cut_router_link_moves_traffic_to_the_other_router_with_nothing_lost() {
    // Declared first, dropped last: every node is gone before its directory.
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::new(234).unwrap();
    let launch = launch(&cluster, dir.path());
    let file = &launch.file();
    let ior_dir = launch.ior_dir.clone();
    // IOR writes 4 x 64 MiB three times over; rtr0's link to the storage subnet is cut while
    // the first writes are under way.
    let mut ior = cluster
        .on("c0", &program())
        .args([
            "bench", "ior", "--attach", file, "-w", "-r", "-F", "-t", "1m", "-b", "64m", "-i", "3",
            "--dir",
        ])
        .arg(&ior_dir)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    // The cut comes once rtr0 has carried some of the writes (bounded: 30 s of looks).
    for look in 0.. {
        assert!(
            ior.try_wait().unwrap().is_none(),
            "IOR ended before the cut"
        );
        assert!(look < 600, "rtr0 carried nothing in 30 s");
        if received(&cluster, file, "rtr0") > 32 << 20 {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let cut = Instant::now();
    iopath_bench::netns::ip(&[
        "-n",
        &cluster.ns("r0"),
        "link",
        "set",
        &format!("eth{STORAGE}"),
        "down",
    ])
    .unwrap();
    let at_cut = (
        received(&cluster, file, "rtr0"),
        received(&cluster, file, "rtr1"),
    );
    let out = ior.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&out.stdout);
    eprintln!(
        "IOR ended {:.1} s after the cut",
        cut.elapsed().as_secs_f64()
    );
    assert!(out.status.success(), "{text}");
    assert!(
        text.contains("verified: 768 MiB read back and checked word by word"),
        "{text}"
    );
    let after = (
        received(&cluster, file, "rtr0") - at_cut.0,
        received(&cluster, file, "rtr1") - at_cut.1,
    );
    eprintln!(
        "after the cut: rtr0 received {} bytes, rtr1 {}",
        after.0, after.1
    );
    // What remained went through rtr1: IOR had most of its 1.5 GiB still to move.
    assert!(
        after.1 > 512 << 20,
        "rtr1 carried {} bytes after the cut",
        after.1
    );
    assert!(
        after.0 < after.1 / 8,
        "rtr0 still carried {} bytes",
        after.0
    );
    // The storage side sees rtr0 gone (its sends to it fail); it routes through rtr1 alone.
    let routes = iopath_on(
        &cluster,
        "c0",
        &[
            "lnetctl", "--stack", file, "--node", "oss0", "route", "show", "-v",
        ],
    );
    let state_of = |gateway: String| {
        routes
            .split("- net:")
            .find(|entry| entry.contains(&gateway))
            .and_then(|entry| entry.lines().find_map(|l| l.trim().strip_prefix("state:")))
            .map(|state| state.trim().to_owned())
            .unwrap_or_else(|| panic!("no route through {gateway}: {routes}"))
    };
    assert_eq!(
        state_of(format!("{}:22050@tcp1", cluster.addr(STORAGE, 1))),
        "down",
        "{routes}"
    );
    assert_eq!(
        state_of(format!("{}:22051@tcp1", cluster.addr(STORAGE, 2))),
        "up",
        "{routes}"
    );
    assert!(
        launch.stop(),
        "iopath launch stopped every node cleanly on SIGTERM"
    );
}

/// Ten seconds of silence, as a dead switch port or a firewall gives it: nothing is refused
/// and no link goes down, the packets just stop.
const SILENCE: Duration = Duration::from_secs(10);

/// nftables on `host`: every packet in and out of its interfaces to `subnets` dropped and
/// counted, until [`speak`] removes the table.
fn silence(cluster: &Cluster, host: &str, subnets: &[u8]) {
    let (mut ins, mut outs) = (String::new(), String::new());
    for subnet in subnets {
        ins.push_str(&format!("iifname eth{subnet} counter drop\n"));
        outs.push_str(&format!("oifname eth{subnet} counter drop\n"));
    }
    let rules = format!(
        "table inet silence {{\n\
         chain in {{\ntype filter hook input priority 0\n{ins}}}\n\
         chain out {{\ntype filter hook output priority 0\n{outs}}}\n\
         }}\n"
    );
    nft_on(cluster, host, &["-f", "-"], &rules);
}

/// Removes [`silence`]'s table from `host`; the packets it dropped.
fn speak(cluster: &Cluster, host: &str) -> u64 {
    let table = nft_on(cluster, host, &["list", "table", "inet", "silence"], "");
    nft_on(cluster, host, &["delete", "table", "inet", "silence"], "");
    packets_counted(&table)
}

/// The packets every `counter` of an `nft list table` listing counted, summed; a listing
/// with no counter is a panic (the rules did not go in as written).
fn packets_counted(table: &str) -> u64 {
    let words: Vec<&str> = table.split_whitespace().collect();
    let counts: Vec<u64> = words
        .windows(2)
        .filter(|pair| pair[0] == "packets")
        .map(|pair| pair[1].parse::<u64>().unwrap())
        .collect();
    assert!(!counts.is_empty(), "no packet counter in {table}");
    counts.iter().sum()
}

/// `nft ARGS` on `host`, `input` on its standard input; its output, or a panic.
fn nft_on(cluster: &Cluster, host: &str, args: &[&str], input: &str) -> String {
    use std::io::Write;
    let mut child = Command::new("ip")
        .args(["netns", "exec", &cluster.ns(host), "nft"])
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child
        .stdin
        .take()
        .unwrap()
        .write_all(input.as_bytes())
        .unwrap();
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "nft {args:?} on {host}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap()
}

#[test]
fn ten_silent_seconds_on_a_server_host_or_a_router_host_lose_nothing() {
    // Declared first, dropped last: every node is gone before its directory.
    let dir = tempfile::tempdir().unwrap();
    let cluster = Cluster::new(235).unwrap();
    let launch = launch(&cluster, dir.path());
    let file = &launch.file();
    let ior_dir = launch.ior_dir.clone();
    // A storage host's storage link goes silent (oss0 and the MDS sit there), then a router
    // host's links on both sides; the admin services, on the management subnet, still
    // answer. Each time IOR writes and reads 4 x 64 MiB three times over, and the silence
    // starts once the routers have carried the first writes.
    for (host, subnets) in [("s0", &[STORAGE][..]), ("r0", &[COMPUTE, STORAGE][..])] {
        let started = Instant::now();
        let mut ior = cluster
            .on("c0", &program())
            .args([
                "bench", "ior", "--attach", file, "-w", "-r", "-F", "-t", "1m", "-b", "64m", "-i",
                "3", "--dir",
            ])
            .arg(&ior_dir)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let carried = || received(&cluster, file, "rtr0") + received(&cluster, file, "rtr1");
        let before = carried();
        for look in 0.. {
            assert!(
                ior.try_wait().unwrap().is_none(),
                "IOR ended before the silence on {host}"
            );
            assert!(look < 600, "the routers carried nothing in 30 s");
            if carried() - before > 32 << 20 {
                break;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        silence(&cluster, host, subnets);
        std::thread::sleep(SILENCE);
        let dropped = speak(&cluster, host);
        // The silence fell on IOR's writes or reads, not after them.
        let running = ior.try_wait().unwrap().is_none();
        let out = ior.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        eprintln!(
            "{SILENCE:?} of silence on {host}: {dropped} packets dropped; IOR took {:.1} s\n{text}",
            started.elapsed().as_secs_f64()
        );
        assert!(
            out.status.success(),
            "IOR failed after the silence on {host}: {text}{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(running, "IOR ended while {host} was silent: {text}");
        assert!(dropped > 0, "nothing was dropped on {host}");
        assert!(
            text.contains("verified: 768 MiB read back and checked word by word"),
            "{text}"
        );
    }
    assert!(
        launch.stop(),
        "iopath launch stopped every node cleanly on SIGTERM"
    );
}
