//! A cluster of hosts made of network namespaces, for `iopath bench cluster` and the tests that
//! run a stack across hosts (needs root and iproute2's `ip`).
//!
//! Five hosts, named after their namespaces: `c0` (compute), `r0` and `r1` (routers, on both
//! subnets), `s0` and `s1` (servers). A sixth namespace is the switch: a bridge per subnet,
//! each host's interface a veth whose other end is plugged into it. Every host is also on a
//! management subnet, where admin services listen (as a cluster's Ethernet). Nothing is
//! connected to the main namespace, and the cluster's /16 is routed `unreachable` there as
//! well, so nothing can leave the machine. Dropping the cluster deletes every namespace (and
//! with them every veth and bridge) and the route, also when the test failed.

use std::path::Path;
use std::process::Command;

use crate::error::BenchError;

/// The hosts: name, and whether it is on the compute, storage and management subnets (its
/// address is `.<n>` on each, `n` its place in this list plus 2).
pub const HOSTS: [(&str, bool, bool); 5] = [
    ("c0", true, false),
    ("r0", true, true),
    ("r1", true, true),
    ("s0", false, true),
    ("s1", false, true),
];

/// The compute subnet, by the third byte of its addresses.
pub const COMPUTE: u8 = 1;
/// The storage subnet.
pub const STORAGE: u8 = 2;
/// The management subnet, where admin services listen.
pub const MANAGEMENT: u8 = 9;

/// A namespace cluster; dropped, it is gone.
#[derive(Debug)]
pub struct Cluster {
    /// The namespaces' prefix: `iop<pid>-<second>`.
    pub prefix: String,
    /// `10.<second>.0.0/16` is the cluster's.
    pub second: u8,
    made: Vec<String>,
    routed: bool,
}

/// Runs `ip ARGS`; an error says what `ip` said.
pub fn ip(args: &[&str]) -> Result<(), BenchError> {
    let out = Command::new("ip")
        .args(args)
        .output()
        .map_err(|e| BenchError::system("run ip (install iproute2)", e))?;
    if !out.status.success() {
        return Err(BenchError::tool(format!(
            "ip {}: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(())
}

/// Refuses where namespaces cannot be made: not root, no `ip`.
pub fn require_namespaces() -> Result<(), BenchError> {
    let root = crate::baseline::is_root();
    if !root {
        return Err(BenchError::refused(
            "hosts made of network namespaces need root (run as root, or in a container that \
             allows it)",
        ));
    }
    if !Command::new("ip")
        .arg("-V")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Err(BenchError::refused(
            "`ip` (iproute2) is not installed: apt-get install iproute2",
        ));
    }
    Ok(())
}

impl Cluster {
    /// Makes the cluster on `10.<second>.0.0/16`; on any failure, what was made is removed.
    pub fn new(second: u8) -> Result<Cluster, BenchError> {
        require_namespaces()?;
        let mut cluster = Cluster {
            // Its /16 in the name too: several clusters of one process (tests run as threads)
            // must not share namespaces.
            prefix: format!("iop{}-{second}", std::process::id()),
            second,
            made: Vec::new(),
            routed: false,
        };
        // The /16 goes nowhere from the main namespace, whatever else is configured.
        let net = format!("10.{second}.0.0/16");
        let out = Command::new("ip")
            .args(["route", "add", "unreachable", &net])
            .output()
            .map_err(|e| BenchError::system("run ip", e))?;
        cluster.routed = out.status.success();
        if !cluster.routed && !String::from_utf8_lossy(&out.stderr).contains("File exists") {
            return Err(BenchError::tool(format!(
                "route {net} unreachable: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let switch = cluster.ns("sw");
        cluster.add(&switch)?;
        for subnet in [COMPUTE, STORAGE, MANAGEMENT] {
            let bridge = format!("br{subnet}");
            ip(&["-n", &switch, "link", "add", &bridge, "type", "bridge"])?;
            ip(&["-n", &switch, "link", "set", &bridge, "up"])?;
        }
        for (n, &(host, compute, storage)) in HOSTS.iter().enumerate() {
            let ns = cluster.ns(host);
            cluster.add(&ns)?;
            for (subnet, on) in [(COMPUTE, compute), (STORAGE, storage), (MANAGEMENT, true)] {
                if !on {
                    continue;
                }
                let inside = format!("eth{subnet}");
                let outside = format!("{host}-{subnet}");
                ip(&[
                    "link", "add", &inside, "netns", &ns, "type", "veth", "peer", "name", &outside,
                    "netns", &switch,
                ])?;
                let bridge = format!("br{subnet}");
                ip(&["-n", &switch, "link", "set", &outside, "master", &bridge])?;
                ip(&["-n", &switch, "link", "set", &outside, "up"])?;
                let addr = format!("{}/24", cluster.addr(subnet, n));
                ip(&["-n", &ns, "addr", "add", &addr, "dev", &inside])?;
                ip(&["-n", &ns, "link", "set", &inside, "up"])?;
            }
        }
        Ok(cluster)
    }

    fn add(&mut self, ns: &str) -> Result<(), BenchError> {
        ip(&["netns", "add", ns])?;
        self.made.push(ns.to_owned());
        ip(&["-n", ns, "link", "set", "lo", "up"])
    }

    /// The namespace of host `host`.
    pub fn ns(&self, host: &str) -> String {
        format!("{}-{host}", self.prefix)
    }

    /// Host number `n`'s address on `subnet`.
    pub fn addr(&self, subnet: u8, n: usize) -> String {
        format!("10.{}.{subnet}.{}", self.second, n + 2)
    }

    /// `10.<second>.<subnet>.0/24`.
    pub fn subnet(&self, subnet: u8) -> String {
        format!("10.{}.{subnet}.0/24", self.second)
    }

    /// A hostfile naming every host by its namespace, with its addresses.
    pub fn write_hostfile(&self, path: &Path) -> Result<(), BenchError> {
        let mut text = String::from("# namespace  addresses\n");
        for (n, &(host, compute, storage)) in HOSTS.iter().enumerate() {
            text.push_str(&self.ns(host));
            for (subnet, on) in [(COMPUTE, compute), (STORAGE, storage), (MANAGEMENT, true)] {
                if on {
                    text.push(' ');
                    text.push_str(&self.addr(subnet, n));
                }
            }
            text.push('\n');
        }
        std::fs::write(path, text)
            .map_err(|e| BenchError::system(format!("write {}", path.display()), e))
    }

    /// A command run inside host `host`'s namespace.
    pub fn on(&self, host: &str, program: &Path) -> Command {
        let mut command = Command::new("ip");
        command.args(["netns", "exec", &self.ns(host)]).arg(program);
        command
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        // Killing what still runs inside first: a namespace with processes in it outlives
        // its name.
        for ns in self.made.iter().rev() {
            let _ = Command::new("ip")
                .args(["netns", "pids", ns])
                .output()
                .map(|out| {
                    for pid in String::from_utf8_lossy(&out.stdout).split_whitespace() {
                        let _ = Command::new("kill").args(["-KILL", pid]).status();
                    }
                });
            let _ = Command::new("ip").args(["netns", "del", ns]).status();
        }
        if self.routed {
            let net = format!("10.{}.0.0/16", self.second);
            let _ = Command::new("ip")
                .args(["route", "del", "unreachable", &net])
                .status();
        }
    }
}
