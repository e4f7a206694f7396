//! A cluster of hosts made of network namespaces, for the tests that run a stack across hosts.
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

/// The hosts: name, and whether it is on the compute, storage and management subnets (its
/// address is `.<n>` on each, `n` its place in this list plus 2).
pub const HOSTS: [(&str, bool, bool); 5] = [
    ("c0", true, false),
    ("r0", true, true),
    ("r1", true, true),
    ("s0", false, true),
    ("s1", false, true),
];

/// The subnets, by the third byte of their address.
pub const COMPUTE: u8 = 1;
pub const STORAGE: u8 = 2;
pub const MANAGEMENT: u8 = 9;

/// A namespace cluster; dropped, it is gone.
pub struct Cluster {
    /// The namespaces' prefix: `iop<pid>`.
    pub prefix: String,
    /// `10.<second>.0.0/16` is the cluster's.
    pub second: u8,
    made: Vec<String>,
    routed: bool,
}

/// Runs `ip ARGS`, panicking with what it said if it fails.
pub fn ip(args: &[&str]) {
    let out = Command::new("ip").args(args).output().expect("run ip");
    assert!(
        out.status.success(),
        "ip {}: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr).trim()
    );
}

/// Fails the test, loudly, where namespaces cannot be made: not root, no `ip`.
pub fn require_namespaces() {
    let whoami = Command::new("id").arg("-u").output().expect("run id");
    assert_eq!(
        String::from_utf8_lossy(&whoami.stdout).trim(),
        "0",
        "the cluster tests make network namespaces, which needs root (CI runs as root)"
    );
    assert!(
        Command::new("ip")
            .arg("-V")
            .output()
            .is_ok_and(|o| o.status.success()),
        "`ip` (iproute2) is not installed: scripts/test installs it"
    );
}

impl Cluster {
    /// Makes the cluster on `10.<second>.0.0/16`.
    pub fn new(second: u8) -> Cluster {
        require_namespaces();
        let mut cluster = Cluster {
            prefix: format!("iop{}", std::process::id()),
            second,
            made: Vec::new(),
            routed: false,
        };
        // The /16 goes nowhere from the main namespace, whatever else is configured.
        let net = format!("10.{second}.0.0/16");
        let out = Command::new("ip")
            .args(["route", "add", "unreachable", &net])
            .output()
            .expect("run ip");
        cluster.routed = out.status.success();
        assert!(
            cluster.routed || String::from_utf8_lossy(&out.stderr).contains("File exists"),
            "route {net} unreachable: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let switch = cluster.ns("sw");
        cluster.add(&switch);
        for subnet in [COMPUTE, STORAGE, MANAGEMENT] {
            let bridge = format!("br{subnet}");
            ip(&["-n", &switch, "link", "add", &bridge, "type", "bridge"]);
            ip(&["-n", &switch, "link", "set", &bridge, "up"]);
        }
        for (n, &(host, compute, storage)) in HOSTS.iter().enumerate() {
            let ns = cluster.ns(host);
            cluster.add(&ns);
            for (subnet, on) in [(COMPUTE, compute), (STORAGE, storage), (MANAGEMENT, true)] {
                if !on {
                    continue;
                }
                let inside = format!("eth{subnet}");
                let outside = format!("{host}-{subnet}");
                ip(&[
                    "link", "add", &inside, "netns", &ns, "type", "veth", "peer", "name", &outside,
                    "netns", &switch,
                ]);
                ip(&[
                    "-n",
                    &switch,
                    "link",
                    "set",
                    &outside,
                    "master",
                    &format!("br{subnet}"),
                ]);
                ip(&["-n", &switch, "link", "set", &outside, "up"]);
                let addr = format!("{}/24", cluster.addr(subnet, n));
                ip(&["-n", &ns, "addr", "add", &addr, "dev", &inside]);
                ip(&["-n", &ns, "link", "set", &inside, "up"]);
            }
        }
        cluster
    }

    fn add(&mut self, ns: &str) {
        ip(&["netns", "add", ns]);
        self.made.push(ns.to_owned());
        ip(&["-n", ns, "link", "set", "lo", "up"]);
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
    pub fn write_hostfile(&self, path: &Path) {
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
        std::fs::write(path, text).unwrap();
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
