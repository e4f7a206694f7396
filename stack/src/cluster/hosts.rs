//! [`Hosts`]: the machines a stack is placed on — a hostfile's lines, or the Slurm job's node
//! list — each with the IP addresses its nodes may listen on.
//!
//! A hostfile has a host a line, `#` starting a comment; after the name, its addresses may
//! follow (a host with one interface per subnet lists each), else the name is looked up:
//!
//! ```text
//! # name      addresses (optional)
//! client0     10.77.1.2
//! router0     10.77.1.3 10.77.2.3
//! server0
//! ```

use std::net::{IpAddr, ToSocketAddrs};
use std::path::Path;
use std::process::Command;

use tracing::warn;

use crate::error::StackError;

/// Most hosts in one allocation (far beyond any stack's 20,000 nodes; a bound on a file read).
pub const HOSTS_MAX: usize = 65_536;

/// One host: its name and, once known, its addresses.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Host {
    /// Its name (or an address written as a name).
    pub name: String,
    /// Its addresses, as the hostfile lists them; empty: looked up by name when needed.
    pub addrs: Vec<IpAddr>,
}

impl Host {
    /// A host known by name only.
    pub fn named(name: &str) -> Host {
        Host {
            name: name.to_owned(),
            addrs: Vec::new(),
        }
    }

    /// Its addresses: the listed ones, else the name parsed as an address, else looked up
    /// (the resolver's answers, IPv4 first).
    pub fn addresses(&self) -> Result<Vec<IpAddr>, String> {
        if !self.addrs.is_empty() {
            return Ok(self.addrs.clone());
        }
        if let Ok(ip) = self.name.parse::<IpAddr>() {
            return Ok(vec![ip]);
        }
        let found = (self.name.as_str(), 0)
            .to_socket_addrs()
            .map_err(|e| format!("cannot resolve host {:?}: {e}", self.name))?;
        let mut ips: Vec<IpAddr> = Vec::new();
        for addr in found {
            if !ips.contains(&addr.ip()) {
                ips.push(addr.ip());
            }
        }
        ips.sort_by_key(|ip| ip.is_ipv6());
        if ips.is_empty() {
            return Err(format!("host {:?} resolves to no address", self.name));
        }
        Ok(ips)
    }
}

/// The hosts of an allocation, in order, and where the list came from (for messages).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hosts {
    /// The hosts, in order: index `k` is what `host = k` names.
    pub hosts: Vec<Host>,
    /// `hostfile hosts.txt`, `the Slurm job's node list`.
    pub origin: String,
}

impl Hosts {
    /// Reads a hostfile.
    pub fn from_hostfile(path: &Path) -> Result<Hosts, StackError> {
        let text = crate::schema::file::read_text(path, "read the hostfile")?;
        Hosts::parse_hostfile(&text, &format!("hostfile {}", path.display()))
    }

    /// Parses a hostfile's text; `origin` names it in messages.
    pub fn parse_hostfile(text: &str, origin: &str) -> Result<Hosts, StackError> {
        let bad = |line: usize, why: String| StackError::BadOption {
            option: format!("{origin}, line {line}"),
            why,
        };
        let mut hosts: Vec<Host> = Vec::new();
        for (n, line) in text.lines().enumerate() {
            let line_no = n + 1;
            let line = line.split('#').next().unwrap_or("").trim();
            let mut words = line.split_whitespace();
            let Some(name) = words.next() else { continue };
            if hosts.len() == HOSTS_MAX {
                return Err(bad(line_no, format!("more than {HOSTS_MAX} hosts")));
            }
            if hosts.iter().any(|h| h.name == name) {
                return Err(bad(line_no, format!("host {name:?} is listed twice")));
            }
            // An MPI hostfile's `slots=N` and `max_slots=N` (Open MPI's spelling) say how
            // many ranks a host takes; launch places nodes by the stack's hosts, so they are
            // read and set aside.
            let addrs = words
                .filter(|w| !is_mpi_slots(w))
                .map(|w| {
                    w.parse::<IpAddr>().map_err(|_| {
                        bad(
                            line_no,
                            format!(
                                "{w:?} is not an IP address (a line is: name [address ...], \
                                 and an MPI hostfile's slots=N)"
                            ),
                        )
                    })
                })
                .collect::<Result<Vec<_>, _>>()?;
            hosts.push(Host {
                name: name.to_owned(),
                addrs,
            });
        }
        if hosts.is_empty() {
            return Err(StackError::BadOption {
                option: origin.to_owned(),
                why: "lists no host".into(),
            });
        }
        Ok(Hosts {
            hosts,
            origin: origin.to_owned(),
        })
    }

    /// The Slurm job's hosts: `SLURM_JOB_NODELIST` expanded by `scontrol show hostnames`, each
    /// with its `NodeAddr` (from `scontrol show node`) and whatever its name resolves to.
    pub fn from_slurm() -> Result<Hosts, StackError> {
        let not_in_job = |why: String| StackError::BadOption {
            option: "Slurm".into(),
            why,
        };
        let list = std::env::var("SLURM_JOB_NODELIST").map_err(|_| {
            not_in_job(
                "SLURM_JOB_NODELIST is not set: run inside an allocation (salloc, sbatch), \
                 or give --hostfile"
                    .into(),
            )
        })?;
        let names = scontrol(&["show", "hostnames", &list])?;
        // Every node's record in one call (not one process per host): `NodeName=... NodeAddr=...`.
        let records = scontrol(&["show", "node", "--oneliner"])?;
        let (node_addr, unknown) = node_addrs(&names, &records);
        for name in unknown {
            warn!(
                host = name,
                "{name} is in the job's node list but Slurm has no record of it (scontrol show \
                 node): its addresses are only what its name resolves to"
            );
        }
        let mut hosts = Vec::new();
        for name in names.split_whitespace().take(HOSTS_MAX) {
            let mut addrs = Vec::new();
            if let Some(addr) = node_addr.get(name) {
                addrs.extend(Host::named(addr).addresses().unwrap_or_default());
            }
            if let Ok(more) = Host::named(name).addresses() {
                for ip in more {
                    if !addrs.contains(&ip) {
                        addrs.push(ip);
                    }
                }
            }
            hosts.push(Host {
                name: name.to_owned(),
                addrs,
            });
        }
        if hosts.is_empty() {
            return Err(not_in_job(format!(
                "the job's node list {list:?} names no host"
            )));
        }
        Ok(Hosts {
            hosts,
            origin: format!("the Slurm job's node list ({list})"),
        })
    }

    /// The host called `name`, if the allocation has it.
    pub fn by_name(&self, name: &str) -> Option<&Host> {
        self.hosts.iter().find(|h| h.name == name)
    }
}

/// Each node's `NodeAddr` from `scontrol show node --oneliner`'s `records`, and the job's
/// hosts (`names`, as `scontrol show hostnames` lists them) that have no record at all: not in
/// slurm.conf, which a launch should say.
fn node_addrs<'a>(
    names: &'a str,
    records: &'a str,
) -> (std::collections::HashMap<&'a str, &'a str>, Vec<&'a str>) {
    let mut recorded = std::collections::HashSet::new();
    let mut addrs = std::collections::HashMap::new();
    for (name, record) in records
        .lines()
        .filter_map(|r| Some((field(r, "NodeName")?, r)))
    {
        recorded.insert(name);
        if let Some(addr) = field(record, "NodeAddr") {
            addrs.insert(name, addr);
        }
    }
    let unknown = names
        .split_whitespace()
        .filter(|name| !recorded.contains(name))
        .collect();
    (addrs, unknown)
}

/// The value of `key=` in one of `scontrol`'s one-line records.
fn field<'a>(record: &'a str, key: &str) -> Option<&'a str> {
    record
        .split_whitespace()
        .find_map(|word| word.strip_prefix(key)?.strip_prefix('='))
        .filter(|v| !v.is_empty() && *v != "(null)")
}

/// Runs `scontrol ARGS` and returns what it printed.
fn scontrol(args: &[&str]) -> Result<String, StackError> {
    let out = Command::new("scontrol")
        .args(args)
        .output()
        .map_err(|e| StackError::system("run scontrol (is Slurm installed here?)", e))?;
    if !out.status.success() {
        return Err(StackError::BadOption {
            option: format!("scontrol {}", args.join(" ")),
            why: format!(
                "{}: {}",
                out.status,
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

/// Open MPI's `slots=N` or `max_slots=N`, with N a count.
fn is_mpi_slots(word: &str) -> bool {
    word.split_once('=').is_some_and(|(key, count)| {
        matches!(key, "slots" | "max_slots") && count.parse::<u32>().is_ok()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_hostfile_lists_names_and_optional_addresses() {
        let hosts = Hosts::parse_hostfile(
            "# the cluster\nclient0 10.77.1.2\n\nrouter0 10.77.1.3 10.77.2.3 # two subnets\nserver0\n",
            "hostfile h",
        )
        .unwrap();
        assert_eq!(hosts.hosts.len(), 3);
        assert_eq!(hosts.hosts[1].addrs.len(), 2);
        assert!(hosts.hosts[2].addrs.is_empty());
        assert_eq!(
            Host::named("10.0.0.9").addresses().unwrap(),
            vec!["10.0.0.9".parse::<IpAddr>().unwrap()]
        );
        assert!(!Host::named("localhost").addresses().unwrap().is_empty());
        // An MPI hostfile (Open MPI's spelling) works as it is: the slots are set aside.
        let mpi = Hosts::parse_hostfile(
            "node1 slots=2\nnode2 10.77.1.9 slots=4 max_slots=8\n",
            "hostfile h",
        )
        .unwrap();
        assert!(mpi.hosts[0].addrs.is_empty());
        assert_eq!(
            mpi.hosts[1].addrs,
            vec!["10.77.1.9".parse::<IpAddr>().unwrap()]
        );
    }

    #[test]
    fn bad_hostfiles_say_which_line() {
        let e = Hosts::parse_hostfile("a 10.0.0.1\nb ten\n", "hostfile h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("line 2") && e.contains("\"ten\""), "{e}");
        let e = Hosts::parse_hostfile("a slots=two\n", "hostfile h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("\"slots=two\"") && e.contains("slots=N"), "{e}");
        let e = Hosts::parse_hostfile("a\na\n", "hostfile h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("listed twice"), "{e}");
        let e = Hosts::parse_hostfile("# nothing\n", "hostfile h")
            .unwrap_err()
            .to_string();
        assert!(e.contains("lists no host"), "{e}");
    }

    #[test]
    fn a_job_host_slurm_has_no_record_of_is_named() {
        let records = "NodeName=n1 NodeAddr=10.77.1.2 State=IDLE\nNodeName=n2 NodeAddr=10.77.1.3\n";
        let (addrs, unknown) = node_addrs("n1\nn2\nghost\n", records);
        assert_eq!(addrs.get("n2"), Some(&"10.77.1.3"));
        assert_eq!(unknown, vec!["ghost"]);
    }

    #[test]
    fn scontrol_fields_are_read_from_one_line_records() {
        let record = "NodeName=n1 Arch=x86_64 NodeAddr=10.77.1.2 NodeHostName=n1 Port=6818";
        assert_eq!(field(record, "NodeAddr"), Some("10.77.1.2"));
        assert_eq!(field(record, "Gres"), None);
    }
}
