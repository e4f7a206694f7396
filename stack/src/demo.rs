//! `iopath demo`: start a preset stack, write and read data back through it with every byte
//! checked, and say what happened — bandwidth per phase, what the journals committed, what
//! the client kept for replay, and the path the bytes took hop by hop.

use std::io::Write;
use std::path::PathBuf;
use std::time::Instant;

use bytes::Bytes;
use iopath_client::{Client, File, StripeRequest};
use iopath_storage_server::engine::aligned::AlignedBuf;
use serde::Serialize;
use tokio::task::JoinSet;

use crate::choice::StackChoice;
use crate::describe::{self, describe_size};
use crate::error::StackError;
use crate::journal::{self, TargetJournal};
use crate::pattern;
use crate::runtime::{Launcher, Mode, RunningStack, StorageDir};
use crate::schema::{FyodMode, Role, RoleName, Stack};

/// Bytes per request in the striped-file phase: four stripes of 1 MiB, so one request spans
/// every target of a 4-target layout (ASCI Red's best single-node request size).
pub const STRIPED_REQUEST_BYTES: u64 = 4 << 20;
/// Bytes per request in the file-per-client phase.
pub const PER_CLIENT_REQUEST_BYTES: u64 = 1 << 20;
/// Smallest `--size`.
pub const SIZE_MIN_BYTES: u64 = 64 << 10;
/// Largest `--size`.
pub const SIZE_MAX_BYTES: u64 = 64 << 30;

/// One phase's figures.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Phase {
    /// What it did.
    pub name: String,
    /// Bytes moved.
    pub bytes: u64,
    /// How long it took.
    pub seconds: f64,
}

impl Phase {
    /// MiB/s.
    pub fn mib_s(&self) -> f64 {
        self.bytes as f64 / (1u64 << 20) as f64 / self.seconds.max(1e-9)
    }
}

/// What the demo did, for tests and for anyone who wants it as data.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DemoReport {
    /// The stack it ran.
    pub stack: String,
    /// The phases.
    pub phases: Vec<Phase>,
    /// Bytes read back and checked word by word.
    pub verified_bytes: u64,
    /// Bytes the first client kept for replay right after its writes (uncommitted).
    pub kept_after_write_bytes: u64,
    /// The same after `fsync` (which commits the journals).
    pub kept_after_fsync_bytes: u64,
    /// The journals at the end.
    pub journals: Vec<TargetJournal>,
    /// The path of a write, hop by hop.
    pub path: Vec<String>,
}

/// Writes a line of the demo's account, or ends the demo with why it could not (`> /dev/full`;
/// a reader that went away ends it quietly, as SIGPIPE would).
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, $($arg)*)
            .and_then(|()| $out.flush())
            .map_err(|e| StackError::system("write the demo's account", e))?;
    };
}

/// What the demo runs: `iopath demo`'s options.
#[derive(Debug, Clone)]
pub struct DemoConfig {
    /// The preset or stack file (default asci-red-mini).
    pub choice: StackChoice,
    /// Bytes per phase: one striped file of this size, then this much again split over every
    /// client's own file.
    pub size: u64,
    /// A process per server node on loopback TCP.
    pub processes: bool,
    /// Run on a stack `iopath launch` started, given the file it wrote (its clients here).
    pub attach: Option<PathBuf>,
    /// Crash this storage server after the striped write, before its journal commits, and
    /// start it again: the writer replays what it kept.
    pub crash: Option<String>,
    /// Directory for the stack's storage (a temporary directory inside it, removed at the
    /// end). Default: the system's temporary directory.
    pub dir: Option<PathBuf>,
}

impl Default for DemoConfig {
    /// `iopath demo` with no options: asci-red-mini in this process, 128 MiB per phase.
    fn default() -> Self {
        DemoConfig {
            choice: StackChoice::default(),
            size: 128 << 20,
            processes: false,
            attach: None,
            crash: None,
            dir: None,
        }
    }
}

/// Runs the demo, writing its account to `out`.
pub async fn run(args: &DemoConfig, out: &mut dyn Write) -> Result<DemoReport, StackError> {
    if !(SIZE_MIN_BYTES..=SIZE_MAX_BYTES).contains(&args.size) {
        return Err(StackError::BadOption {
            option: "--size".into(),
            why: format!("must be {SIZE_MIN_BYTES} bytes to {SIZE_MAX_BYTES} bytes"),
        });
    }
    let stack = args.choice.load_or_attached(args.attach.as_deref())?;
    let clients_count = stack.nodes_of(RoleName::Client).len();
    if clients_count == 0 {
        return Err(StackError::BadOption {
            option: "--stack".into(),
            why: format!("{} has no client nodes to run the demo on", stack.origin),
        });
    }
    let mode = Mode::of(args.attach.is_some(), args.processes);
    say!(out, "iopath demo: {} ({})", stack.name, stack.description);
    say!(out, "mode: {}", mode.describe());
    let storage = StorageDir::temporary("demo", args.dir.as_deref())?;
    say!(
        out,
        "storage: {} (removed at the end)\n",
        storage.path().display()
    );
    if let Some(victim) = &args.crash {
        let osss = stack.nodes_of(RoleName::Oss);
        if !osss.iter().any(|&i| &stack.nodes[i].name == victim) {
            return Err(StackError::BadOption {
                option: "--crash".into(),
                why: format!(
                    "{victim:?} is not one of {}'s storage servers ({})",
                    stack.name,
                    osss.iter()
                        .map(|&i| stack.nodes[i].name.as_str())
                        .collect::<Vec<_>>()
                        .join(", ")
                ),
            });
        }
        if mode == Mode::Attached {
            return Err(StackError::BadOption {
                option: "--crash".into(),
                why: "a launched stack's servers run on their hosts: crash one there".into(),
            });
        }
    }
    let started = Instant::now();
    let mut running = RunningStack::start(stack, mode, storage, None).await?;
    // The table of the stack as it runs: with --processes, the TCP addresses the nodes
    // bound and their admin services.
    let admin = |i: usize| running.admin_addr(i).map(|a| a.to_string());
    say!(out, "{}", describe::node_table(running.stack(), &admin));
    say!(
        out,
        "started {} nodes in {:.0} ms\n",
        running.stack().nodes.len(),
        started.elapsed().as_secs_f64() * 1000.0
    );
    let outcome = exercise(&mut running, args.size, args.crash.as_deref(), out).await;
    let stopped = running.stop().await;
    let report = outcome?;
    stopped?;
    say!(
        out,
        "\nstopped cleanly; every byte read back matched what was written"
    );
    Ok(report)
}

/// Crashes storage server `victim` while `writer` holds writes it acknowledged but has not
/// committed, and starts it again on the same disk: what the writer kept is what it replays.
async fn crash_and_restart(
    running: &mut RunningStack,
    victim: &str,
    writer: &iopath_client::Client,
    writer_name: &str,
    out: &mut dyn Write,
) -> Result<(), StackError> {
    let holds = match writer.forwarder() {
        // Through a fyod in PFS mode the fyod replays; the data stays in the writer's memory,
        // where the restarted server pulls it from again.
        Some(fyod) => format!(
            "{writer_name} keeps {} of acknowledged writes pinned for the fyod at {fyod} to \
             replay",
            describe_size(writer.kept_bytes())
        ),
        None => format!(
            "{writer_name} still holds {} of acknowledged writes to replay",
            describe_size(writer.kept_bytes())
        ),
    };
    say!(
        out,
        "   {victim} crashes now ({}): what its journal had not committed is gone from its disk; \
         {holds}",
        match running.mode() {
            Mode::Processes => "SIGKILL",
            _ => "its targets stop committing and it leaves the network",
        }
    );
    running.crash_node(victim).await?;
    let start = Instant::now();
    let launcher = Launcher::this_program()?;
    running.restart_node(victim, &launcher).await?;
    say!(
        out,
        "   {victim} starts again on the same disk in {:.0} ms and waits for the clients it knew \
         to reconnect and replay before it serves anything new",
        start.elapsed().as_secs_f64() * 1000.0
    );
    Ok(())
}

/// The phases, on a running stack.
async fn exercise(
    running: &mut RunningStack,
    size: u64,
    crash: Option<&str>,
    out: &mut dyn Write,
) -> Result<DemoReport, StackError> {
    let mut clients = Vec::new();
    let mut names = Vec::new();
    for node in running.clients() {
        clients.push(running.connect(node).await?);
        names.push(node.name.clone());
    }
    let counters_before = counters(running);
    let writer = &clients[0];
    let writer_name = names[0].clone();
    writer
        .mkdir("/demo")
        .await
        .map_err(|e| StackError::io("mkdir /demo", e))?;
    let mut phases = Vec::new();

    // Phase 1: one client, one file striped over the targets.
    let striped = writer
        .create("/demo/striped", StripeRequest::INHERIT)
        .await
        .map_err(|e| StackError::io("create /demo/striped", e))?;
    let layout = striped.layout().clone();
    let objects: Vec<String> = layout
        .objects()
        .iter()
        .map(|o| running.stack().target_name(o.target as usize).to_string())
        .collect();
    say!(
        out,
        "1. {writer_name} writes /demo/striped: {} in {} requests, {} stripes over {} object{} ({})",
        describe_size(size),
        describe_size(STRIPED_REQUEST_BYTES),
        describe_size(layout.stripe_size_bytes()),
        objects.len(),
        if objects.len() == 1 { "" } else { "s" },
        objects.join(" ")
    );
    let start = Instant::now();
    write_pattern(&striped, 0, size, STRIPED_REQUEST_BYTES, "/demo/striped").await?;
    let phase = Phase {
        name: format!("{writer_name} writes one striped file"),
        bytes: size,
        seconds: start.elapsed().as_secs_f64(),
    };
    say!(out, "   {:.0} MiB/s", phase.mib_s());
    phases.push(phase);
    let kept_after_write_bytes = writer.kept_bytes();
    if let Some(victim) = crash {
        crash_and_restart(running, victim, writer, &writer_name, out).await?;
    }
    let start = Instant::now();
    striped
        .fsync()
        .await
        .map_err(|e| StackError::io("fsync /demo/striped", e))?;
    let kept_after_fsync_bytes = writer.kept_bytes();
    say!(
        out,
        "   {writer_name} kept {} of acknowledged but uncommitted writes for replay; fsync committed the journals in {:.1} ms and it kept {} after",
        describe_size(kept_after_write_bytes),
        start.elapsed().as_secs_f64() * 1000.0,
        describe_size(kept_after_fsync_bytes)
    );
    if crash.is_some() {
        match writer.fyod() {
            Some(fyod) => {
                let replayed = fyod
                    .stats()
                    .await
                    .map_err(|e| StackError::io("ask the fyod what it replayed", e))?
                    .pfs_writes_replayed;
                say!(
                    out,
                    "   the fyod at {} replayed {replayed} writes to the restarted server, which \
                     pulled their data again from {writer_name}'s memory ({writer_name} itself \
                     replays nothing through a fyod), before the fsync's commit; the read back \
                     below shows whether any was lost",
                    fyod.fyod()
                );
            }
            None => {
                say!(
                    out,
                    "   {writer_name} replayed {} writes to the restarted server from the copies \
                     it kept, before the fsync's commit; the read back below shows whether any \
                     was lost",
                    writer.replayed_writes()
                );
            }
        }
    }
    striped
        .close()
        .await
        .map_err(|e| StackError::io("close /demo/striped", e))?;

    // Phase 2: every client its own file, at once.
    let per_client = (size / clients.len() as u64).max(8) / 8 * 8;
    say!(
        out,
        "2. {} clients each write {} to a file of their own, at once, in {} requests",
        clients.len(),
        describe_size(per_client),
        describe_size(PER_CLIENT_REQUEST_BYTES)
    );
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for (i, (client, name)) in clients.iter().zip(&names).enumerate() {
        let (client, path) = (client.clone(), format!("/demo/{name}"));
        tasks.spawn(async move {
            let file = client
                .create(&path, StripeRequest::INHERIT)
                .await
                .map_err(|e| StackError::io(format!("create {path}"), e))?;
            write_pattern(
                &file,
                1 + i as u32,
                per_client,
                PER_CLIENT_REQUEST_BYTES,
                &path,
            )
            .await?;
            file.fsync()
                .await
                .map_err(|e| StackError::io(format!("fsync {path}"), e))?;
            file.close()
                .await
                .map_err(|e| StackError::io(format!("close {path}"), e))
        });
    }
    join_all(&mut tasks).await?;
    let phase = Phase {
        name: format!("{} clients write a file each", clients.len()),
        bytes: per_client * clients.len() as u64,
        seconds: start.elapsed().as_secs_f64(),
    };
    say!(out, "   {:.0} MiB/s (with fsync)", phase.mib_s());
    phases.push(phase);

    // Phase 3: read everything back on another client than the writer, and check it.
    say!(
        out,
        "3. every file is read back by a client that did not write it, and checked word by word"
    );
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    let n = clients.len();
    let reader = clients[(n - 1).min(1)].clone();
    tasks.spawn(async move {
        read_pattern(&reader, "/demo/striped", 0, size, STRIPED_REQUEST_BYTES).await
    });
    for (i, name) in names.iter().enumerate() {
        let reader = clients[(i + 1) % n].clone();
        let path = format!("/demo/{name}");
        tasks.spawn(async move {
            read_pattern(
                &reader,
                &path,
                1 + i as u32,
                per_client,
                PER_CLIENT_REQUEST_BYTES,
            )
            .await
        });
    }
    join_all(&mut tasks).await?;
    let verified_bytes = size + per_client * n as u64;
    let phase = Phase {
        name: "read back and verify".into(),
        bytes: verified_bytes,
        seconds: start.elapsed().as_secs_f64(),
    };
    say!(
        out,
        "   {:.0} MiB/s, {} verified",
        phase.mib_s(),
        describe_size(verified_bytes)
    );
    phases.push(phase);

    // What the journals did.
    let journals = journal::targets(running).await?;
    say!(
        out,
        "\njournals (async commits: each write is on disk when acknowledged; the journal commits in groups):"
    );
    for j in &journals {
        say!(
            out,
            "   {} on {}: {} commits, last_committed {}",
            j.target,
            j.oss,
            j.commits,
            j.last_committed
        );
    }

    // The path, and what each node measured on it.
    let running = &*running;
    let stack = running.stack();
    let client_index = running.clients()[0].index;
    let path = path_lines(stack, client_index);
    say!(out, "\nthe path of {writer_name}'s writes, hop by hop:");
    for line in &path {
        say!(out, "   {line}");
    }
    let measured = measured_lines(running, &counters_before);
    if !measured.is_empty() {
        say!(out, "measured on the way (this run):");
        for line in &measured {
            say!(out, "   {line}");
        }
    }
    say!(out, "\nphases:");
    for p in &phases {
        say!(
            out,
            "   {:<40} {:>9}  {:>8.3} s  {:>8.0} MiB/s",
            p.name,
            describe_size(p.bytes),
            p.seconds,
            p.mib_s()
        );
    }
    // The clients end as a program does: what their servers acknowledged is committed, and
    // the servers forget them.
    for client in &clients {
        client
            .close()
            .await
            .map_err(|e| StackError::io("commit the clients' writes and disconnect", e))?;
    }
    Ok(DemoReport {
        stack: stack.name.clone(),
        phases,
        verified_bytes,
        kept_after_write_bytes,
        kept_after_fsync_bytes,
        journals,
        path,
    })
}

/// Waits for every task; the first error wins.
async fn join_all(tasks: &mut JoinSet<Result<(), StackError>>) -> Result<(), StackError> {
    let mut first = None;
    while let Some(joined) = tasks.join_next().await {
        let result = joined.map_err(|e| StackError::io("a demo task", e))?;
        if let Err(e) = result {
            first.get_or_insert(e);
        }
    }
    first.map_or(Ok(()), Err)
}

/// Writes `size` bytes of `task`'s pattern to `file` in `request`-sized calls.
async fn write_pattern(
    file: &File,
    task: u32,
    size: u64,
    request: u64,
    path: &str,
) -> Result<(), StackError> {
    let mut offset = 0;
    // Bounded: each pass writes at least one word.
    while offset < size {
        let len = request.min(size - offset);
        let mut buffer = AlignedBuf::zeroed(len as usize);
        pattern::fill(buffer.as_mut_slice(), task, 0, offset);
        let data: Bytes = buffer.into_bytes();
        file.write_at(offset, data)
            .await
            .map_err(|e| StackError::io(format!("write {path} at {offset}"), e))?;
        offset += len;
    }
    Ok(())
}

/// Reads `path` back through `client` and checks it is `task`'s pattern, `size` bytes long.
async fn read_pattern(
    client: &Client,
    path: &str,
    task: u32,
    size: u64,
    request: u64,
) -> Result<(), StackError> {
    let file = client
        .open(path)
        .await
        .map_err(|e| StackError::io(format!("open {path}"), e))?;
    let actual = file
        .size()
        .await
        .map_err(|e| StackError::io(format!("size of {path}"), e))?;
    if actual != size {
        return Err(StackError::Verify {
            what: format!("{path} is {actual} bytes, {size} were written"),
        });
    }
    let mut offset = 0;
    while offset < size {
        let len = request.min(size - offset);
        let data = file
            .read_at(offset, len)
            .await
            .map_err(|e| StackError::io(format!("read {path} at {offset}"), e))?;
        if data.len() as u64 != len {
            return Err(StackError::Verify {
                what: format!(
                    "{path}: read {} bytes at {offset}, expected {len}",
                    data.len()
                ),
            });
        }
        pattern::check(&data, task, 0, offset).map_err(|m| StackError::Verify {
            what: format!("{path}: {m}"),
        })?;
        offset += len;
    }
    file.close()
        .await
        .map_err(|e| StackError::io(format!("close {path}"), e))
}

/// The path of client `client`'s writes through `stack`, in words, one hop a line.
pub fn path_lines(stack: &Stack, client: usize) -> Vec<String> {
    let name = |i: usize| stack.nodes[i].name.clone();
    let at = |i: usize| {
        let nid = stack.primary_nid(i);
        match stack.nodes[i].torus {
            Some([x, y, z]) => format!("{} ({nid}, torus {x},{y},{z})", name(i)),
            None => format!("{} ({nid})", name(i)),
        }
    };
    let targets = stack.targets();
    let servers: Vec<String> = stack
        .nodes_of(RoleName::Oss)
        .into_iter()
        .map(|oss| {
            let osts: Vec<String> = targets
                .iter()
                .enumerate()
                .filter(|(_, (o, _))| *o == oss)
                .map(|(g, _)| stack.target_name(g).to_string())
                .collect();
            format!("{} [{}]", at(oss), osts.join(" "))
        })
        .collect();
    let routers = |from: usize, to: usize| -> Option<String> {
        let target_net = stack.nodes[to].interfaces[0].network;
        if stack.interface_on(from, target_net).is_some() {
            return None;
        }
        let gateways: Vec<String> = stack
            .routes
            .iter()
            .filter(|r| r.node == from && r.net == target_net)
            .map(|r| {
                format!(
                    "{}{}",
                    name(r.gateway),
                    if r.hops > 1 {
                        format!(" (hop {})", r.hops)
                    } else {
                        String::new()
                    }
                )
            })
            .collect();
        Some(format!(
            "through LNET router{} {} ({} is on {}, {} on {})",
            if gateways.len() == 1 { "" } else { "s" },
            gateways.join(", "),
            name(from),
            stack.net_id(stack.nodes[from].interfaces[0].network),
            name(to),
            stack.net_id(target_net)
        ))
    };
    let mut lines = Vec::new();
    let forwarder = match stack.nodes[client].role {
        Role::Client(spec) => spec.forwarder,
        _ => None,
    };
    let osss = stack.nodes_of(RoleName::Oss);
    let routed_to_storage = osss.iter().find_map(|&o| routers(client, o));
    match forwarder {
        Some(f) => {
            let hops = describe::torus_hops(stack, client, f)
                .map(|h| format!(", {h} torus hop{}", if h == 1 { "" } else { "s" }))
                .unwrap_or_default();
            lines.push(format!(
                "{} registers its buffer and sends a WRITE RPC carrying only its buffer \
                 descriptor to {}{hops}; synchronous calls wait their turn at the fyod",
                at(client),
                at(f)
            ));
            let mode = match stack.nodes[f].role {
                Role::Fyod(spec) => spec.mode,
                _ => FyodMode::Pfs,
            };
            match mode {
                FyodMode::Pfs => lines.push(format!(
                    "{} splits it by the file's layout (PFS) into OST_WRITE RPCs carrying \
                     sub-descriptors of {}'s buffer, to {}",
                    name(f),
                    name(client),
                    servers.join(", ")
                )),
                FyodMode::Ufs => lines.push(format!(
                    "{} pulls the data into its own buffers (128 KiB at most each, UFS) and \
                     writes the file's one target, on one of {}",
                    name(f),
                    servers.join(", ")
                )),
            }
            if mode == FyodMode::Pfs {
                lines.push(format!(
                    "the storage servers pull their pieces straight from {}'s memory (bulk \
                     GET, CRC32 checked chunk by chunk){}",
                    name(client),
                    routed_to_storage
                        .map(|r| format!(", {r}"))
                        .unwrap_or_default()
                ));
            }
        }
        None => {
            lines.push(format!(
                "{} splits each write by the file's layout itself and sends OST_WRITE RPCs \
                 carrying descriptors of its buffer to {}{}",
                at(client),
                servers.join(", "),
                routed_to_storage
                    .as_ref()
                    .map(|r| format!(", {r}"))
                    .unwrap_or_default()
            ));
            lines.push(format!(
                "each storage server pulls its pieces straight from {}'s memory (bulk GET, \
                 CRC32 checked chunk by chunk){}",
                name(client),
                routed_to_storage
                    .map(|_| ", back through the routers")
                    .unwrap_or_default()
            ));
        }
    }
    let sync = osss
        .iter()
        .any(|&o| matches!(stack.nodes[o].role, Role::Oss(s) if s.sync_journal));
    lines.push(if sync {
        "each server writes its object files with O_DIRECT, commits its journal, then replies \
         (sync journal)"
            .to_owned()
    } else {
        format!(
            "each server writes its object files with O_DIRECT and replies once the data is on \
             disk; the journal commits later in groups, and {} keeps each write until a reply's \
             last_committed covers it (async journal)",
            name(client)
        )
    });
    lines
}

/// Counters of the nodes in this process, by node index: bulk bytes pulled and pushed,
/// requests executed, messages forwarded.
fn counters(running: &RunningStack) -> Vec<(usize, [u64; 4])> {
    use std::sync::atomic::Ordering::Relaxed;
    running
        .local_nodes()
        .iter()
        .map(|n| {
            let c = n.node.counters();
            (
                n.index,
                [
                    c.bulk_get_bytes.load(Relaxed),
                    c.bulk_put_bytes.load(Relaxed),
                    c.requests_executed.load(Relaxed),
                    c.forwarded.load(Relaxed),
                ],
            )
        })
        .collect()
}

/// What the nodes in this process counted since `before`, in words.
fn measured_lines(running: &RunningStack, before: &[(usize, [u64; 4])]) -> Vec<String> {
    let stack = running.stack();
    let after = counters(running);
    let mut lines = Vec::new();
    for ((index, b), (_, a)) in before.iter().zip(&after) {
        let d = [a[0] - b[0], a[1] - b[1], a[2] - b[2], a[3] - b[3]];
        let name = &stack.nodes[*index].name;
        match stack.nodes[*index].role.kind() {
            RoleName::Oss => lines.push(format!(
                "{name}: pulled {} from clients' memory (writes), pushed {} into it (reads), executed {} requests",
                describe_size(d[0]),
                describe_size(d[1]),
                d[2]
            )),
            RoleName::Fyod => lines.push(format!(
                "{name}: executed {} requests, pulled {} itself",
                d[2],
                describe_size(d[0])
            )),
            RoleName::Router => lines.push(format!("{name}: forwarded {} messages", d[3])),
            RoleName::Mds => lines.push(format!("{name}: executed {} metadata requests", d[2])),
            RoleName::Client => {}
        }
    }
    lines
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn paths_name_every_hop() {
        let red = crate::preset("asci-red-mini").unwrap().stack().unwrap();
        let lines = path_lines(&red, red.node_index("c0").unwrap());
        assert!(
            lines[0].contains("fyod0 (20@mem0, torus 0,0,1), 1 torus hop"),
            "{lines:?}"
        );
        assert!(lines[1].contains("PFS"), "{lines:?}");
        assert!(
            lines[1].contains("oss0 (10@mem0, torus 0,1,1) [iopath-OST0000 iopath-OST0002]"),
            "{lines:?}"
        );
        let spider = crate::preset("spider-mini").unwrap().stack().unwrap();
        let lines = path_lines(&spider, spider.node_index("c0").unwrap());
        assert!(
            lines[0].contains("splits each write by the file's layout itself"),
            "{lines:?}"
        );
        let routed = crate::preset("spider-mini-routed")
            .unwrap()
            .stack()
            .unwrap();
        let lines = path_lines(&routed, routed.node_index("c0").unwrap());
        assert!(
            lines[0].contains("through LNET routers rtr0, rtr1"),
            "{lines:?}"
        );
    }
}
