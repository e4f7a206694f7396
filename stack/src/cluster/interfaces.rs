//! What a host says of its own network: each interface address with the subnet it is on
//! (`10.1.0.3/16`). `iopath launch` asks every host before it places a stack (`iopath
//! interfaces`, run there by the starter that starts the nodes), so a host whose name resolves
//! to one address, or that Slurm knows by its `NodeAddr` alone, still shows every subnet it is
//! on; and launch reads its own host's, to put each admin service on an address the tools it
//! runs beside can reach.

use std::collections::HashMap;
use std::fmt;
use std::net::IpAddr;
use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::Command;

use super::launch::{HOST_PLACEHOLDER, Starter, shell_quote};
use super::{Host, Hosts};
use crate::error::StackError;
use crate::schema::Subnet;

/// How long a host has to answer (a starter may log in over the network first).
pub const ASK_TIMEOUT: Duration = Duration::from_secs(30);

/// Most hosts asked at once through a command template (each is a process here).
const ASKED_AT_ONCE: usize = 32;

/// One address of a host's interface, and the subnet its netmask makes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Interface {
    /// The address.
    pub addr: IpAddr,
    /// The subnet it is on.
    pub subnet: Subnet,
}

impl fmt::Display for Interface {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.addr, self.subnet.prefix)
    }
}

impl std::str::FromStr for Interface {
    type Err = String;

    /// `addr/prefix`, as `ip -brief address` writes it.
    fn from_str(text: &str) -> Result<Interface, String> {
        let bad = || format!("{text:?} is not an interface address (as in \"10.1.0.3/16\")");
        let (addr, prefix) = text.split_once('/').ok_or_else(bad)?;
        let addr: IpAddr = addr.parse().map_err(|_| bad())?;
        let prefix: u8 = prefix.parse().map_err(|_| bad())?;
        if prefix > if addr.is_ipv4() { 32 } else { 128 } {
            return Err(bad());
        }
        Ok(Interface {
            addr,
            subnet: Subnet::of(addr, prefix),
        })
    }
}

/// This host's interface addresses, IPv4 first, loopback and IPv6 link-local ones left out
/// (no other host reaches them).
pub fn local() -> Result<Vec<Interface>, StackError> {
    let found = nix::ifaddrs::getifaddrs()
        .map_err(|e| StackError::system("list this host's interfaces", e.into()))?;
    let mut out = Vec::new();
    for entry in found {
        let (Some(address), Some(netmask)) = (entry.address, entry.netmask) else {
            continue;
        };
        let (addr, prefix) = if let (Some(a), Some(m)) =
            (address.as_sockaddr_in(), netmask.as_sockaddr_in())
        {
            (IpAddr::V4(a.ip()), u32::from(m.ip()).count_ones())
        } else if let (Some(a), Some(m)) = (address.as_sockaddr_in6(), netmask.as_sockaddr_in6()) {
            if a.ip().is_unicast_link_local() {
                continue;
            }
            (IpAddr::V6(a.ip()), u128::from(m.ip()).count_ones())
        } else {
            continue;
        };
        if addr.is_loopback() {
            continue;
        }
        let prefix = u8::try_from(prefix).unwrap_or(u8::MAX);
        let interface = Interface {
            addr,
            subnet: Subnet::of(addr, prefix),
        };
        if !out.contains(&interface) {
            out.push(interface);
        }
    }
    out.sort_by_key(|i| i.addr.is_ipv6());
    Ok(out)
}

/// The line `iopath interfaces` prints: the host's name (Slurm's for it inside a job step,
/// else the kernel's), then each interface.
pub fn line(interfaces: &[Interface]) -> String {
    let name = std::env::var("SLURMD_NODENAME")
        .ok()
        .or_else(|| {
            nix::unistd::gethostname()
                .ok()
                .map(|n| n.to_string_lossy().into_owned())
        })
        .unwrap_or_else(|| "-".to_owned());
    let mut text = name;
    for interface in interfaces {
        text.push(' ');
        text.push_str(&interface.to_string());
    }
    text
}

/// A [`line`] read back: the name and the interfaces, or why not.
pub fn parse_line(line: &str) -> Result<(String, Vec<Interface>), String> {
    let mut words = line.split_whitespace();
    let name = words.next().ok_or("an empty line")?;
    let interfaces = words.map(str::parse).collect::<Result<Vec<_>, _>>()?;
    Ok((name.to_owned(), interfaces))
}

/// Asks every host of `hosts` for its interfaces through `starter`, running `program
/// interfaces` there, and adds the addresses each names after those it already has. A host
/// that cannot be asked (an older iopath there, a starter that fails) keeps what it had, with
/// a warning naming it and why.
pub async fn ask(hosts: &mut Hosts, starter: &Starter, program: &Path) {
    let program = program.display().to_string();
    let answers: HashMap<String, Result<Vec<Interface>, String>> = match starter {
        Starter::Srun => ask_by_srun(&hosts.hosts, &program).await,
        Starter::Template(template) => ask_by_template(&hosts.hosts, template, &program).await,
    };
    let mut trouble = Vec::new();
    for host in &mut hosts.hosts {
        match answers.get(&host.name) {
            Some(Ok(interfaces)) => {
                for interface in interfaces {
                    if !host.addrs.contains(&interface.addr) {
                        host.addrs.push(interface.addr);
                    }
                }
            }
            Some(Err(why)) => trouble.push((&host.name, why.clone())),
            None => trouble.push((&host.name, "no answer".to_owned())),
        }
    }
    for (name, why) in trouble {
        tracing::warn!(
            host = name,
            "could not ask {name} for its interfaces ({why}): its addresses are what {} and its \
             name say",
            hosts.origin
        );
    }
}

/// One `srun` step with a task on each host; each task's line names its host.
async fn ask_by_srun(
    hosts: &[Host],
    program: &str,
) -> HashMap<String, Result<Vec<Interface>, String>> {
    let n = hosts.len().to_string();
    let mut command = Command::new("srun");
    command
        .args(["--overlap", "--quiet", "--job-name=iopath-interfaces"])
        .arg(format!("--nodes={n}"))
        .arg(format!("--ntasks={n}"))
        .arg("--ntasks-per-node=1")
        .args([program, "interfaces"]);
    let said = match run(command).await {
        Ok(said) => said,
        Err(why) => {
            return hosts
                .iter()
                .map(|h| (h.name.clone(), Err(why.clone())))
                .collect();
        }
    };
    let mut answers = HashMap::new();
    for line in said.lines().filter(|l| !l.trim().is_empty()) {
        match parse_line(line) {
            Ok((name, interfaces)) => {
                answers.insert(name, Ok(interfaces));
            }
            Err(why) => {
                tracing::warn!("iopath interfaces said {line:?}: {why}");
            }
        }
    }
    answers
}

/// The template's command on each host, at most [`ASKED_AT_ONCE`] at a time.
async fn ask_by_template(
    hosts: &[Host],
    template: &str,
    program: &str,
) -> HashMap<String, Result<Vec<Interface>, String>> {
    let gate = std::sync::Arc::new(tokio::sync::Semaphore::new(ASKED_AT_ONCE));
    let mut asked = tokio::task::JoinSet::new();
    for host in hosts {
        let name = host.name.clone();
        let line = format!(
            "exec {} {} interfaces",
            template.replace(HOST_PLACEHOLDER, &name),
            shell_quote(program)
        );
        let gate = std::sync::Arc::clone(&gate);
        asked.spawn(async move {
            let _turn = gate.acquire_owned().await;
            let mut command = Command::new("sh");
            command.arg("-c").arg(line);
            let answer = run(command).await.and_then(|said| {
                let line = said.lines().find(|l| !l.trim().is_empty()).unwrap_or("");
                parse_line(line).map(|(_, interfaces)| interfaces)
            });
            (name, answer)
        });
    }
    let mut answers = HashMap::new();
    while let Some(joined) = asked.join_next().await {
        if let Ok((name, answer)) = joined {
            answers.insert(name, answer);
        }
    }
    answers
}

/// Runs `command` to its end within [`ASK_TIMEOUT`]; what it printed, or why not.
async fn run(mut command: Command) -> Result<String, String> {
    command
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let out = tokio::time::timeout(ASK_TIMEOUT, command.output())
        .await
        .map_err(|_| format!("no answer within {} s", ASK_TIMEOUT.as_secs()))?
        .map_err(|e| format!("cannot start {:?}: {e}", command.as_std().get_program()))?;
    if !out.status.success() {
        let stderr = String::from_utf8_lossy(&out.stderr);
        return Err(format!(
            "{} ({})",
            out.status,
            stderr.lines().last().unwrap_or("").trim()
        ));
    }
    Ok(String::from_utf8_lossy(&out.stdout).into_owned())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_interface_reads_back_as_it_was_written_with_its_subnet() {
        let interface: Interface = "10.1.0.3/16".parse().unwrap();
        assert_eq!(interface.subnet, Subnet::parse("10.1.0.0/16").unwrap());
        assert_eq!(interface.to_string(), "10.1.0.3/16");
        let six: Interface = "fd00::5/64".parse().unwrap();
        assert_eq!(six.subnet, Subnet::parse("fd00::/64").unwrap());
        for bad in ["10.1.0.3", "10.1.0.3/33", "x/8", "fd00::5/129"] {
            assert!(bad.parse::<Interface>().is_err(), "{bad}");
        }
    }

    #[test]
    fn a_line_names_its_host_then_its_interfaces() {
        let (name, interfaces) = parse_line("n3 10.1.0.3/16 10.9.0.3/24").unwrap();
        assert_eq!(name, "n3");
        assert_eq!(
            interfaces
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            ["10.1.0.3/16", "10.9.0.3/24"]
        );
        assert!(parse_line("").is_err());
        assert!(parse_line("n3 banana").is_err());
    }

    #[test]
    fn this_host_has_no_loopback_interface_and_each_address_is_on_its_subnet() {
        for interface in local().unwrap() {
            assert!(!interface.addr.is_loopback(), "{interface}");
            assert!(interface.subnet.contains(interface.addr), "{interface}");
        }
    }
}
