//! `iopath launch`: a stack across the hosts of a Slurm job or a hostfile — each node placed
//! on a host, its server nodes started there (`srun`, or a command template), a stack file for
//! the tools written, then run until Ctrl-C, SIGTERM (the job's end) or a node's loss.

use std::net::SocketAddr;
use std::path::PathBuf;

use std::io::Write as _;

use anyhow::Context as _;
use iopath_stack::cluster::{self, Hosts, LaunchConfig, Launched, Starter};
use iopath_stack::schema::{RoleName, Subnet};
use iopath_stack::{Stack, StackChoice};

use super::stack::StackArgs;

/// `iopath launch`: where the stack comes from, where it goes, and how nodes are started.
#[derive(clap::Args, Debug)]
pub struct LaunchArgs {
    /// The stack.
    #[command(flatten)]
    choice: StackArgs,
    /// Hosts a line each, `name [address ...]` (default: the Slurm job's nodes, from
    /// SLURM_JOB_NODELIST and scontrol).
    #[arg(long, value_name = "FILE")]
    hostfile: Option<PathBuf>,
    /// How to start a command on a host: a template whose `{host}` is replaced, the node's
    /// command appended (`ssh {host}`, `pdsh -w {host}`, `ip netns exec {host}`). Default:
    /// `srun` a step per node inside the Slurm job.
    #[arg(long, value_name = "TEMPLATE")]
    exec: Option<String>,
    /// Show the commands that would start each node, and write the placed stack file; start
    /// nothing.
    #[arg(long)]
    print: bool,
    /// Numbered address n of network k listens on port PORT_BASE + 1000 × k + n.
    #[arg(long, default_value_t = cluster::PORT_BASE_DEFAULT)]
    port_base: u16,
    /// A network's subnet, over the stack file's (`--subnet compute=10.1.0.0/16`); repeat for
    /// each network to change.
    #[arg(long, value_name = "NET=CIDR", value_parser = parse_network_subnet)]
    subnet: Vec<(String, Subnet)>,
    /// Admin services (and /metrics) listen on each host's address in this subnet (a
    /// management network); default: each node's first address on a subnet of the host
    /// launch runs on (where the tools run), its NIDs' first, then its host's others.
    #[arg(long, value_name = "CIDR", value_parser = Subnet::parse)]
    admin_subnet: Option<Subnet>,
    /// Each node keeps its state in DIR/<node> on its host (default: $TMPDIR/iopath-<stack>,
    /// /tmp when TMPDIR is unset).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The iopath program on the hosts (default: this program's path, the same on each).
    #[arg(long)]
    program: Option<PathBuf>,
    /// Every node also serves Prometheus's /metrics (beside its admin service).
    #[arg(long)]
    metrics: bool,
    /// Serve the live view on this address once the stack is up (`0.0.0.0:8080`; port 0
    /// picks one): a page that draws the stack and follows every server node's counters each
    /// second, read from their /metrics (implies --metrics).
    #[arg(long, value_name = "ADDR")]
    web: Option<SocketAddr>,
    /// Where to write the stack file tools take (`iopath lfs --stack`, `iopath lctl
    /// --stack`, `iopath bench ior --attach`): every address and admin service spelled out
    /// (default: <stack>.launched.toml here).
    #[arg(long, value_name = "FILE")]
    out: Option<PathBuf>,
}

/// `iopath bench cluster`: IOR across namespace hosts, on loopback, and iperf3 over the links.
#[derive(clap::Args, Debug)]
pub struct BenchClusterArgs {
    /// IOR's -b: bytes each of the four tasks writes and reads (k, m, g).
    #[arg(short = 'b', default_value = "64m", value_parser = iopath_fabric::units::parse_size)]
    block_size: u64,
    /// IOR's -t: bytes per transfer.
    #[arg(short = 't', default_value = "1m", value_parser = iopath_fabric::units::parse_size)]
    transfer_size: u64,
    /// IOR's -i: repetitions (the best of them is reported, as IOR's Max).
    #[arg(short = 'i', default_value_t = 3)]
    repetitions: u32,
    /// Seconds of iperf3 over each link.
    #[arg(long, default_value_t = 3)]
    seconds: u32,
    /// Where the nodes' state and IOR's baselines go (default: a temporary directory here).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// The result as JSON on standard output (the table otherwise).
    #[arg(long)]
    json: bool,
}

/// Runs `iopath bench cluster`.
pub async fn bench(args: BenchClusterArgs) -> anyhow::Result<()> {
    let options = iopath_bench::cluster::ClusterOptions {
        program: std::env::current_exe().context("find this program's path")?,
        block_bytes: args.block_size,
        transfer_bytes: args.transfer_size,
        repetitions: args.repetitions,
        iperf_seconds: args.seconds,
        dir: args.dir,
    };
    // Processes and namespaces, waited on: off the async runtime's threads.
    let result = tokio::task::spawn_blocking(move || {
        let mut say = |line: &str| eprintln!("{line}");
        iopath_bench::cluster::measure(&options, &mut say)
    })
    .await
    .context("the benchmark's thread")??;
    let text = if args.json {
        format!("{}\n", serde_json::to_string_pretty(&result)?)
    } else {
        iopath_bench::cluster::table(&result)
    };
    std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes()).context("write the result")
}

fn parse_network_subnet(text: &str) -> Result<(String, Subnet), String> {
    let (network, subnet) = text
        .split_once('=')
        .ok_or_else(|| format!("{text:?}: give NET=CIDR, as in compute=10.1.0.0/16"))?;
    Ok((network.to_owned(), Subnet::parse(subnet)?))
}

/// Runs `iopath launch`.
pub async fn run(args: LaunchArgs) -> anyhow::Result<()> {
    let mut stack = StackChoice::from(args.choice.clone()).load()?;
    for (name, subnet) in &args.subnet {
        let network = stack
            .networks
            .iter_mut()
            .find(|n| &n.name == name)
            .with_context(|| {
                format!(
                    "--subnet {name}={subnet}: {} has no network {name:?}",
                    stack.origin
                )
            })?;
        network.subnet = Some(*subnet);
    }
    let (hosts, starter) = match (&args.hostfile, &args.exec) {
        (Some(file), exec) => {
            let hosts = Hosts::from_hostfile(file)?;
            let starter = match exec {
                Some(template) => Starter::Template(template.clone()),
                None if std::env::var_os("SLURM_JOB_ID").is_some() => Starter::Srun,
                None => anyhow::bail!(
                    "--hostfile without --exec: say how a command starts on a host, as in \
                     --exec 'ssh {{host}}' (outside a Slurm job there is no srun)"
                ),
            };
            (hosts, starter)
        }
        (None, exec) => (
            Hosts::from_slurm()?,
            exec.clone().map_or(Starter::Srun, Starter::Template),
        ),
    };
    starter.check()?;
    let program = match args.program {
        Some(p) => p,
        None => std::env::current_exe().context("find this program's path")?,
    };
    // Each host's own word on its interfaces, beside what the hostfile or Slurm says of it:
    // unless only printing, which starts nothing anywhere.
    let mut hosts = hosts;
    if !args.print {
        cluster::interfaces::ask(&mut hosts, &starter, &program).await;
    }
    let here = cluster::interfaces::local()?
        .into_iter()
        .map(|i| i.subnet)
        .collect();
    let placed = cluster::place(&stack, &hosts, args.port_base)?;
    // What was placed must read back as a stack (every check the file's readers make).
    Stack::parse(&placed.to_toml(), "the placed stack").context("check the placed stack")?;
    let config = LaunchConfig {
        starter,
        program,
        dir: args
            .dir
            .unwrap_or_else(|| std::env::temp_dir().join(format!("iopath-{}", stack.name))),
        admin_subnet: args.admin_subnet,
        here,
        metrics: args.metrics || args.web.is_some(),
        hosts: hosts.clone(),
    };
    let out = args
        .out
        .unwrap_or_else(|| PathBuf::from(format!("{}.launched.toml", stack.name)));
    // The stack's admin secret, beside the stack file (mode 0600): its nodes read it on their
    // input; tools find it there (`iopath lctl --stack FILE`).
    let secret_file = iopath_admin::secret::path_beside(&out);
    let secret = iopath_admin::Secret::create(&secret_file)?;
    if args.print {
        std::fs::write(&out, placed.to_toml())
            .with_context(|| format!("write the placed stack file {}", out.display()))?;
        let mut text = format!(
            "# {} on {} ({} hosts); each command reads the admin secret, then the placed stack \
             file, on its input\n",
            stack.name,
            hosts.origin,
            hosts.hosts.len()
        );
        for command in cluster::launch::commands(&placed, &config)? {
            text.push_str(&format!("# {} ({})\n", command.name, command.host));
            text.push_str(&command.shell_line(&out, &secret_file));
            text.push('\n');
        }
        text.push_str(&clients_text(&placed, &out));
        return std::io::Write::write_all(&mut std::io::stdout(), text.as_bytes())
            .context("write the commands");
    }
    eprintln!(
        "launching {} on {} ({} hosts) ...",
        stack.name,
        hosts.origin,
        hosts.hosts.len()
    );
    let mut launched = match Launched::start(placed, &config, secret).await {
        Ok(launched) => launched,
        Err(e) => {
            let _ = std::fs::remove_file(&secret_file);
            return Err(e.into());
        }
    };
    let written = write_whole(&out, &launched.stack().to_toml())
        .with_context(|| format!("write the launched stack file {}", out.display()));
    if let Err(e) = written {
        let _ = launched.stop().await;
        let _ = std::fs::remove_file(&secret_file);
        return Err(e);
    }
    if let Err(e) = std::io::Write::write_all(
        &mut std::io::stdout(),
        launched_text(&launched, &out).as_bytes(),
    ) {
        let _ = launched.stop().await;
        return Err(e).context("write the node table");
    }
    let live = match args.web {
        Some(addr) => {
            let stack = launched.stack();
            let view = iopath_stack::live::view(
                stack,
                "launched: a process per server node on its host (iopath launch); clients run \
                 in the application",
                "",
                &[],
                launched.nodes(),
                &|i| stack.nodes[i].admin,
            );
            match iopath_stack::live::serve(addr, view).await {
                Ok(live) => {
                    // A closed terminal is not worth stopping the stack over.
                    let _ = writeln!(std::io::stdout(), "live view: {}", live.url());
                    Some(live)
                }
                Err(e) => {
                    let _ = launched.stop().await;
                    return Err(e.into());
                }
            }
        }
        None => None,
    };
    let lost = tokio::select! {
        signal = crate::signals::stop_requested() => { eprintln!("{signal}: stopping the stack"); None }
        exited = launched.exited() => { eprintln!("{exited}: stopping the stack"); Some(exited) }
    };
    if let Some(live) = live {
        live.end("the stack stopped").await;
    }
    let stopped = launched.stop().await;
    let _ = std::fs::remove_file(&out);
    let _ = std::fs::remove_file(&secret_file);
    stopped?;
    match lost {
        Some(exited) => anyhow::bail!("the stack lost a node: {exited}"),
        None => {
            eprintln!("stopped");
            Ok(())
        }
    }
}

/// Writes `text` to `path` whole or not at all: beside it first, then renamed into place, so a
/// program waiting for the file (a batch script, `bench cluster`) never reads half of it.
fn write_whole(path: &std::path::Path, text: &str) -> std::io::Result<()> {
    let mut partial = path.as_os_str().to_owned();
    partial.push(".partial");
    std::fs::write(&partial, text)?;
    std::fs::rename(&partial, path)
}

/// The node table, then where the clients are and how tools reach the stack.
fn launched_text(launched: &Launched, out: &std::path::Path) -> String {
    let stack = launched.stack();
    let mut text = format!(
        "launched {}: {} node processes\n",
        stack.name,
        launched.children().count()
    );
    let mut rows = vec![["node", "role", "host", "nids", "admin"].map(str::to_owned)];
    for (command, child) in launched.children() {
        rows.push([
            command.name.clone(),
            child.role.as_str().to_owned(),
            command.host.clone(),
            child.nids.clone(),
            child.admin.to_string(),
        ]);
    }
    text.push_str(&iopath_stack::describe::left_aligned(&rows));
    text.push_str(&clients_text(stack, out));
    text.push_str(&format!(
        "admin secret: {} (mode 0600; set_param and shutdown need it, and `iopath lctl --stack \
         {}` reads it from there)\n",
        iopath_admin::secret::path_beside(out).display(),
        out.display()
    ));
    text.push_str("Ctrl-C, SIGTERM or the job's end stops every node.\n");
    text
}

/// Where the client nodes are, and the commands that use the stack file.
fn clients_text(stack: &Stack, out: &std::path::Path) -> String {
    let mut text = String::new();
    let clients = stack.nodes_of(RoleName::Client);
    let mut hosts: Vec<String> = clients
        .iter()
        .filter_map(|&c| stack.nodes[c].host.as_ref().map(ToString::to_string))
        .collect();
    hosts.dedup();
    if !clients.is_empty() {
        text.push_str(&format!(
            "clients {} run where the application runs, on {}:\n",
            clients
                .iter()
                .map(|&c| stack.nodes[c].name.as_str())
                .collect::<Vec<_>>()
                .join(" "),
            hosts.join(", ")
        ));
    }
    let file = out.display();
    text.push_str(&format!(
        "  iopath bench ior --attach {file} -w -r -F -t 1m -b 16m\n  iopath lfs --stack {file} df\n  iopath lctl --stack {file} --node NODE list_param -R '*'\n"
    ));
    text
}

/// The admin address of node `name` in a stack file `iopath launch` wrote.
pub fn admin_of(stack: &Stack, name: &str) -> anyhow::Result<SocketAddr> {
    let index = stack.node_index(name).with_context(|| {
        format!(
            "{} has no node called {name:?} (nodes: {})",
            stack.origin,
            stack.node_names()
        )
    })?;
    stack.nodes[index].admin.with_context(|| {
        format!(
            "{} gives {name} no admin address: use the file `iopath launch` or `iopath up \
             --processes` wrote while the stack runs{}",
            stack.origin,
            if stack.nodes[index].role.kind() == RoleName::Client {
                " (a client node has none: it runs inside the application)"
            } else {
                ""
            }
        )
    })
}

/// `iopath interfaces`: this host's name and interface addresses, one line, as `iopath
/// launch` asks each host for them.
pub fn interfaces() -> anyhow::Result<()> {
    let interfaces = cluster::interfaces::local()?;
    let line = format!("{}\n", cluster::interfaces::line(&interfaces));
    std::io::Write::write_all(&mut std::io::stdout(), line.as_bytes())
        .context("write the interfaces")
}
