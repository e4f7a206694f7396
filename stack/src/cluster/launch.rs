//! [`Launched`]: a placed stack's server nodes started on their hosts — by `srun` inside a
//! Slurm job, or through a command template the user gives (`ssh {host}`, `pdsh -w {host}`,
//! `ip netns exec {host}`) — each `iopath node --secret-file - --stack -` reading the stack's
//! admin secret and then the placed stack file on its standard input, so no host needs a
//! shared file system for either, and the secret never shows in a command line. Started in
//! start order
//! (routers, storage servers, the metadata service, fyods), each group waiting for the
//! previous one's READY lines; stopped in reverse through each node's admin service, as an
//! operator would, since closing a remote starter's input does not reach the node.
//!
//! Client nodes are not started: they run where the application runs (`iopath bench ior
//! --attach`, `iopath lfs --stack`), on the allocation's first host unless placed elsewhere.

use std::net::{IpAddr, SocketAddr};
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use iopath_admin::Secret;
use tokio::io::AsyncWriteExt;
use tokio::process::Command;

use crate::error::StackError;
use crate::runtime::embedded::START_ORDER;
use crate::runtime::processes::{ChildNode, Pending, wait_ready, wait_stopped};
use crate::schema::{Address, RoleName, Stack, Subnet};

/// What `{host}` stands for in a command template.
pub const HOST_PLACEHOLDER: &str = "{host}";

/// How node processes are started on their hosts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Starter {
    /// `srun` a step per node, on the node's host, inside the Slurm job.
    Srun,
    /// A command template: `{host}` replaced by the node's host, the node's command appended
    /// (shell-quoted), the whole run by `sh -c`.
    Template(String),
}

impl Starter {
    /// Refuses a template that cannot tell hosts apart.
    pub fn check(&self) -> Result<(), StackError> {
        match self {
            Starter::Template(template) if !template.contains(HOST_PLACEHOLDER) => {
                Err(StackError::BadOption {
                    option: "--exec".into(),
                    why: format!(
                        "{template:?} has no {HOST_PLACEHOLDER}: every node would start the same \
                         way, on the same machine (as in \"ssh {HOST_PLACEHOLDER}\")"
                    ),
                })
            }
            _ => Ok(()),
        }
    }
}

/// How to launch: the starter, and what each node process is told.
#[derive(Debug, Clone)]
pub struct LaunchConfig {
    /// How node processes are started.
    pub starter: Starter,
    /// The `iopath` program, at this path on every host.
    pub program: PathBuf,
    /// Each node keeps its state in `<dir>/<node>` on its host.
    pub dir: PathBuf,
    /// Where admin services listen: a node's address in this subnet (a management network);
    /// without one, its first address (its NIDs', then its host's others) inside one of
    /// `here`, else its first NID's address.
    pub admin_subnet: Option<Subnet>,
    /// The subnets of the host launch runs on, where the tools that reach admin services
    /// run: what a default admin address must be inside to be reached.
    pub here: Vec<Subnet>,
    /// Every node also serves `/metrics`, on its admin address's host.
    pub metrics: bool,
    /// The allocation's hosts, with the addresses the hostfile gives them.
    pub hosts: super::Hosts,
}

/// One node's start: where, and the command line run here to start it there.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeCommand {
    /// The node's index in the stack.
    pub index: usize,
    /// Its name.
    pub name: String,
    /// Its host.
    pub host: String,
    /// `iopath node ...` as the host runs it.
    pub node: Vec<String>,
    /// What runs here: the starter around `node`.
    pub argv: Vec<String>,
}

impl NodeCommand {
    /// The command as a shell line, its input the admin secret's file then the placed stack
    /// file: what `--print` shows.
    pub fn shell_line(&self, stack_file: &Path, secret_file: &Path) -> String {
        format!(
            "cat {} {} | {}",
            shell_quote(&secret_file.display().to_string()),
            shell_quote(&stack_file.display().to_string()),
            self.argv
                .iter()
                .map(|a| shell_quote(a))
                .collect::<Vec<_>>()
                .join(" "),
        )
    }
}

/// The start command of every server node of `placed`, in start order.
pub fn commands(placed: &Stack, config: &LaunchConfig) -> Result<Vec<NodeCommand>, StackError> {
    config.starter.check()?;
    let mut out = Vec::new();
    for kind in START_ORDER {
        if kind == RoleName::Client {
            continue;
        }
        for index in placed.nodes_of(kind) {
            let spec = &placed.nodes[index];
            let host =
                spec.host
                    .as_ref()
                    .map(ToString::to_string)
                    .ok_or_else(|| StackError::Process {
                        node: spec.name.clone(),
                        why: "has no host: place the stack first".into(),
                    })?;
            let ip = admin_ip(placed, index, config)?;
            let listen = SocketAddr::new(ip, 0).to_string();
            let mut node = vec![
                config.program.display().to_string(),
                "node".to_owned(),
                "--secret-file".to_owned(),
                crate::up::SECRET_FROM_STDIN.to_owned(),
                "--stack".to_owned(),
                crate::up::STACK_FROM_STDIN.to_owned(),
                "--name".to_owned(),
                spec.name.clone(),
                "--dir".to_owned(),
                config.dir.join(&spec.name).display().to_string(),
                "--admin".to_owned(),
                listen.clone(),
            ];
            if config.metrics {
                node.extend(["--metrics".to_owned(), listen]);
            }
            let argv = match &config.starter {
                Starter::Srun => {
                    let mut argv: Vec<String> = [
                        "srun",
                        "--overlap",
                        "--nodes=1",
                        "--ntasks=1",
                        "--quiet",
                        "--kill-on-bad-exit=1",
                    ]
                    .map(str::to_owned)
                    .into();
                    argv.push(format!("--nodelist={host}"));
                    argv.push(format!("--job-name=iopath-{}", spec.name));
                    argv.extend(node.iter().cloned());
                    argv
                }
                Starter::Template(template) => {
                    // `exec`: the starter is the process here, so signals and its exit status are
                    // the node's, not a shell's.
                    let line = format!(
                        "exec {} {}",
                        template.replace(HOST_PLACEHOLDER, &host),
                        node.iter()
                            .map(|a| shell_quote(a))
                            .collect::<Vec<_>>()
                            .join(" ")
                    );
                    vec!["sh".to_owned(), "-c".to_owned(), line]
                }
            };
            out.push(NodeCommand {
                index,
                name: spec.name.clone(),
                host,
                node,
                argv,
            });
        }
    }
    Ok(out)
}

/// The address node `index`'s admin service listens on: its address in `config`'s admin
/// subnet, if one is given (a management network its host is on); else the first of its
/// addresses (its NIDs', then its host's others) that the host launch runs on reaches
/// directly, so the tools run beside launch reach it; else its first NID's, with a warning.
fn admin_ip(placed: &Stack, index: usize, config: &LaunchConfig) -> Result<IpAddr, StackError> {
    let spec = &placed.nodes[index];
    let sockets: Vec<IpAddr> = spec
        .interfaces
        .iter()
        .filter_map(|i| match i.address {
            Address::Socket(s) => Some(s.ip()),
            Address::Number(_) => None,
        })
        .collect();
    let first = sockets
        .first()
        .copied()
        .ok_or_else(|| StackError::Process {
            node: spec.name.clone(),
            why: "has no TCP address: place the stack first".into(),
        })?;
    if config.admin_subnet.is_none() && config.here.is_empty() {
        // Nothing to choose by: no need to look the host's addresses up.
        return Ok(first);
    }
    let host = spec
        .host
        .as_ref()
        .map(ToString::to_string)
        .unwrap_or_default();
    let known = match config.hosts.by_name(&host) {
        Some(listed) => listed.addresses(),
        None => super::hosts::Host::named(&host).addresses(),
    }
    .unwrap_or_default();
    let mut candidates = sockets.iter().chain(known.iter()).copied();
    let Some(subnet) = config.admin_subnet else {
        return Ok(candidates
            .find(|&ip| config.here.iter().any(|here| here.contains(ip)))
            .unwrap_or_else(|| {
                tracing::warn!(
                    node = %spec.name,
                    "{}'s admin service listens on {first}, on no subnet of this host ({}):                      tools run here cannot reach it; give --admin-subnet (a management network \
                     every host is on)",
                    spec.name,
                    config
                        .here
                        .iter()
                        .map(ToString::to_string)
                        .collect::<Vec<_>>()
                        .join(", ")
                );
                first
            }));
    };
    candidates
        .find(|&ip| subnet.contains(ip))
        .ok_or_else(|| StackError::Process {
            node: spec.name.clone(),
            why: format!(
                "its host {host} has no address in the admin subnet {subnet} (neither its NIDs' \
                 addresses nor those {} gives it)",
                config.hosts.origin
            ),
        })
}

/// A stack whose server nodes run on their hosts.
#[derive(Debug)]
pub struct Launched {
    stack: Stack,
    /// How each node process was started, and the process: the same index in each.
    commands: Vec<NodeCommand>,
    nodes: Vec<ChildNode>,
    /// The stack's admin secret: each node was given it, and stopping asks with it.
    secret: Secret,
}

impl Launched {
    /// Starts every server node of `placed` with `config`, group by group, each checking
    /// admin changes against `secret`; on any failure, stops what started and says which node
    /// failed and why.
    pub async fn start(
        placed: Stack,
        config: &LaunchConfig,
        secret: Secret,
    ) -> Result<Launched, StackError> {
        placed.check_spread("iopath launch")?;
        let commands = commands(&placed, config)?;
        // What each node reads on its standard input: the secret's line, then the stack file.
        let text = format!("{}\n{}", secret.to_hex(), placed.to_toml());
        let mut launched = Launched {
            stack: placed,
            commands: Vec::new(),
            nodes: Vec::new(),
            secret,
        };
        for kind in START_ORDER {
            let group: Vec<&NodeCommand> = commands
                .iter()
                .filter(|c| launched.stack.nodes[c.index].role.kind() == kind)
                .collect();
            let mut pending = Vec::new();
            let mut failure = None;
            for command in group {
                match spawn(command, kind, &text).await {
                    Ok(p) => pending.push((command.clone(), p)),
                    Err(e) => {
                        failure = Some(e);
                        break;
                    }
                }
            }
            if let Some(e) = failure.take() {
                // One of the group did not start: the others are not waited for.
                for (_, mut p) in pending {
                    let _ = p.child.start_kill();
                    let _ = p.child.wait().await;
                }
                let _ = launched.stop().await;
                return Err(e);
            }
            for (command, p) in pending {
                match wait_ready(p).await {
                    Ok(child) => launched.push(command, child),
                    Err((e, child)) => {
                        failure.get_or_insert(e);
                        if let Some(child) = child {
                            launched.push(command, child);
                        }
                    }
                }
            }
            if let Some(e) = failure {
                let _ = launched.stop().await;
                return Err(e);
            }
        }
        for child in &launched.nodes {
            launched.stack.nodes[child.index].admin = Some(child.admin);
        }
        Ok(launched)
    }

    fn push(&mut self, command: NodeCommand, node: ChildNode) {
        self.commands.push(command);
        self.nodes.push(node);
    }

    /// The stack as it runs: placed, each server node with its admin address.
    pub fn stack(&self) -> &Stack {
        &self.stack
    }

    /// The node processes, with how each was started, in start order.
    pub fn children(&self) -> impl Iterator<Item = (&NodeCommand, &ChildNode)> {
        self.commands.iter().zip(&self.nodes)
    }

    /// The node processes, in start order.
    pub fn nodes(&self) -> &[ChildNode] {
        &self.nodes
    }

    /// Waits until a node process exits, and says which and how: a launched stack has lost a
    /// node. Looks every [`EXIT_POLL`].
    pub async fn exited(&mut self) -> String {
        loop {
            for (command, node) in self.commands.iter().zip(&mut self.nodes) {
                match node.child.try_wait() {
                    Ok(None) => {}
                    Ok(Some(status)) => {
                        return format!("{} on {} exited ({status})", command.name, command.host);
                    }
                    Err(e) => {
                        return format!(
                            "{} on {} cannot be waited for: {e}",
                            command.name, command.host
                        );
                    }
                }
            }
            tokio::time::sleep(EXIT_POLL).await;
        }
    }

    /// Stops every node: fyods first, storage servers last, each asked through its admin
    /// service and given [`crate::runtime::processes::STOP_TIMEOUT`] to finish (a storage server commits its journals)
    /// before what started it is killed. Returns the first node that did not stop cleanly.
    pub async fn stop(mut self) -> Result<(), StackError> {
        let mut first_error = None;
        while let (Some(command), Some(mut node)) = (self.commands.pop(), self.nodes.pop()) {
            let asked = match iopath_admin::Client::connect(node.admin).await {
                Ok(admin) => {
                    admin
                        .with_secret(self.secret.clone())
                        .shutdown("iopath launch is stopping the stack")
                        .await
                }
                Err(e) => Err(e),
            };
            let killed = match asked {
                Ok(()) => "of its shutdown; what started it was killed".to_owned(),
                Err(e) => {
                    format!("(it could not be asked to stop: {e}); what started it was killed")
                }
            };
            let outcome = wait_stopped(&mut node.child, &killed).await;
            if let Err(why) = outcome {
                tracing::warn!(node = %command.name, "{why}");
                first_error.get_or_insert(StackError::Process {
                    node: format!("{} on {}", command.name, command.host),
                    why,
                });
            }
        }
        first_error.map_or(Ok(()), Err)
    }
}

/// How often [`Launched::exited`] looks at the node processes.
pub const EXIT_POLL: Duration = Duration::from_millis(250);

/// How long to keep writing the stack file into a starter that does not read it.
const STACK_WRITE_TIMEOUT: Duration = Duration::from_secs(30);

/// Starts `command`, writes `text` (the secret's line and the stack file) to its input and
/// closes it.
async fn spawn(command: &NodeCommand, role: RoleName, text: &str) -> Result<Pending, StackError> {
    let failed = |why: String| StackError::Process {
        node: format!("{} on {}", command.name, command.host),
        why,
    };
    let mut child = Command::new(&command.argv[0])
        .args(&command.argv[1..])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| failed(format!("start {}: {e}", command.argv[0])))?;
    let mut stdin = child.stdin.take().expect("stdin is piped");
    let wrote = tokio::time::timeout(STACK_WRITE_TIMEOUT, async {
        stdin.write_all(text.as_bytes()).await?;
        stdin.shutdown().await
    })
    .await;
    drop(stdin);
    match wrote {
        Ok(Ok(())) => {}
        Ok(Err(e)) => {
            let _ = child.start_kill();
            return Err(failed(format!(
                "could not be given the stack file ({e}); what it printed is above"
            )));
        }
        Err(_) => {
            let _ = child.start_kill();
            return Err(failed(format!(
                "did not read the stack file within {} s",
                STACK_WRITE_TIMEOUT.as_secs()
            )));
        }
    }
    Ok(Pending {
        index: command.index,
        // What a failed start says names the host too.
        name: format!("{} on {}", command.name, command.host),
        role,
        child,
    })
}

/// `text` quoted for `sh`, unquoted when it needs none.
pub fn shell_quote(text: &str) -> String {
    let plain = !text.is_empty()
        && text
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "-_./:=@,+%".contains(c));
    if plain {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cluster::{Hosts, place};

    fn hosts() -> Hosts {
        Hosts::parse_hostfile("h0 10.0.0.1\nh1 10.0.0.2\n", "hostfile").unwrap()
    }

    fn placed() -> Stack {
        let stack = crate::presets::preset("spider-mini-routed")
            .unwrap()
            .stack()
            .unwrap();
        place(&stack, &hosts(), 21_000).unwrap()
    }

    #[test]
    fn commands_start_routers_first_through_the_template() {
        let config = LaunchConfig {
            starter: Starter::Template("ssh -o BatchMode=yes {host}".into()),
            program: "/opt/iopath/bin/iopath".into(),
            dir: "/var/tmp/iopath job".into(),
            admin_subnet: None,
            here: Vec::new(),
            metrics: false,
            hosts: hosts(),
        };
        let placed = placed();
        let commands = commands(&placed, &config).unwrap();
        assert_eq!(
            placed.nodes[commands[0].index].role.kind(),
            RoleName::Router
        );
        assert!(
            commands
                .iter()
                .all(|c| placed.nodes[c.index].role.kind() != RoleName::Client)
        );
        let line = commands[0].shell_line(
            Path::new("spider.placed.toml"),
            Path::new("spider.placed.toml.secret"),
        );
        assert!(
            line.starts_with(
                "cat spider.placed.toml.secret spider.placed.toml | sh -c 'exec ssh -o \
                 BatchMode=yes h"
            ) && line.contains("node --secret-file - --stack - --name rtr0")
                && line.contains("--admin 10.0.0."),
            "{line}"
        );
        let e = super::commands(
            &placed,
            &LaunchConfig {
                starter: Starter::Template("ssh".into()),
                ..config.clone()
            },
        )
        .unwrap_err()
        .to_string();
        assert!(e.contains("{host}"), "{e}");
        let srun = super::commands(
            &placed,
            &LaunchConfig {
                starter: Starter::Srun,
                ..config
            },
        )
        .unwrap();
        assert!(srun[0].argv.iter().any(|a| a.starts_with("--nodelist=h")));
    }

    #[test]
    fn quoting_survives_the_shell() {
        assert_eq!(shell_quote("plain/path-1"), "plain/path-1");
        assert_eq!(shell_quote("it's"), r"'it'\''s'");
        assert_eq!(shell_quote(""), "''");
    }
}
