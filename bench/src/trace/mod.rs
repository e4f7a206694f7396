//! `iopath trace`: one write and one read followed hop by hop through a running stack.
//!
//! The client issues each request inside a trace ([`iopath_fabric::trace`]): every frame it
//! causes carries the trace id, on every node it crosses — routers, a fyod, the storage
//! servers and the bulk they pull — and each node logs what it did. After the read, the logs
//! are gathered (from this process's nodes directly, from node processes over their admin
//! service's `trace.events`) and put in time order: each send with the credits it saw
//! (negative where it queued), each arrival with the hop's latency, router buffers, the
//! journal record and its transno, the commit, the reply, and the client letting go of the
//! write once a reply says `last_committed` covers it. Text for people, `--json` for
//! machines, an SVG sequence diagram.
//!
//! The write goes first; in async mode the trace then waits one commit interval, so the
//! group commit lands and the read's reply brings `last_committed` back to the client.
//! Times are wall-clock (node processes on one host share the clock; on a launched stack across
//! hosts the report says each host's clock is its own); everything runs at
//! this host's speed unless the stack file models links or disks, which every report says.

mod load;

use std::collections::HashMap;
use std::io::Write;
use std::path::PathBuf;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_client::{Client, StripeRequest};
use iopath_fabric::trace::{self, TraceEvent, TraceId, TraceLog};
use iopath_plot::{Arrow, Mark, Sequence};
use iopath_stack::choice::StackChoice;
use iopath_stack::describe::describe_size;
use iopath_stack::guest;
use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::{FyodMode, Role, RoleName, Stack};
use serde::Serialize;

use load::TracedWrite;
pub use load::{
    LOAD_BUFFERS_MAX_BYTES, LOAD_BYTES_MAX, LOAD_TIME_MAX, LOAD_WRITERS_MAX, LoadConfig,
    LoadSummary, NTH_MAX, NthRequest, REQUESTS_PER_NTH,
};

use crate::error::BenchError;

/// Smallest `--size`.
pub const SIZE_MIN_BYTES: u64 = 1;
/// Largest `--size`: a trace is for reading, and a large request's chunks are many.
pub const SIZE_MAX_BYTES: u64 = 64 << 20;
/// How long events may still arrive after the read returns (answers sent from tasks of their
/// own, a router's last forward).
const SETTLE: Duration = Duration::from_millis(100);

/// The journal mode to run the storage servers in, whatever the stack file says.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum JournalChoice {
    /// Commit before replying.
    Sync,
    /// Reply at once, commit in groups.
    Async,
}

/// What `iopath trace` runs.
#[derive(Debug, Clone)]
pub struct TraceConfig {
    /// The preset or stack file.
    pub choice: StackChoice,
    /// A process per server node on loopback TCP.
    pub processes: bool,
    /// Trace on a stack `iopath launch` started, given the file it wrote, from a guest client
    /// of this command's own.
    pub attach: Option<PathBuf>,
    /// Trace the Nth write of a load instead of a write of its own on an idle stack.
    pub load: Option<LoadConfig>,
    /// Bytes of the write, and of the read of them.
    pub size: u64,
    /// The file's stripe count (`-1`: every target); `None` inherits the stack's.
    pub stripe_count: Option<i64>,
    /// The file's stripe size; `None` inherits the stack's.
    pub stripe_size: Option<u64>,
    /// Every storage server's journal mode; `None` keeps the stack file's.
    pub journal: Option<JournalChoice>,
    /// Every fyod's mode; `None` keeps the stack file's.
    pub fyod_mode: Option<FyodMode>,
    /// Where the stack keeps its storage (a temporary directory inside, removed at the end).
    pub dir: Option<PathBuf>,
}

impl Default for TraceConfig {
    fn default() -> Self {
        TraceConfig {
            choice: StackChoice::default(),
            processes: false,
            attach: None,
            load: None,
            size: 1 << 20,
            stripe_count: None,
            stripe_size: None,
            journal: None,
            fyod_mode: None,
            dir: None,
        }
    }
}

/// One step of a traced request, as the report shows it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hop {
    /// Microseconds since the request's first event.
    pub at_us: f64,
    /// The node, by its name in the stack.
    pub node: String,
    /// Its role.
    pub role: String,
    /// The layer that recorded it (`lnet`, `router`, `rpc`, `bulk`, `fyod`, `journal`, `osc`).
    pub layer: String,
    /// What happened, one word.
    pub what: String,
    /// The sentence.
    pub detail: String,
    /// The other end of a message, by name: the next hop of a send, the origin of an arrival.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Credit counts as the node saw them, negative by the senders queued ahead.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub credits: Vec<(String, i64)>,
    /// Microseconds it waited (for credits).
    pub waited_us: f64,
    /// For an arrival: microseconds since its send, on the hop it crossed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hop_us: Option<f64>,
    /// For a send: the node it arrived at next, by index into the hops (`None` if it never
    /// arrived while the trace ran).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arrived_at: Option<usize>,
}

impl Hop {
    /// The send waited for credits (a count went negative).
    pub fn queued(&self) -> bool {
        self.credits.iter().any(|(_, c)| *c < 0)
    }
}

/// One traced request.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TracedRequest {
    /// Its trace id, in hex.
    pub trace: String,
    /// `write` or `read`.
    pub op: String,
    /// Bytes it moved.
    pub bytes: u64,
    /// The client's time for it, call to return.
    pub seconds: f64,
    /// Every step, in time order.
    pub hops: Vec<Hop>,
}

/// What `iopath trace` found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct TraceReport {
    /// The stack's name.
    pub stack: String,
    /// `embedded`, `processes` or `attached`.
    pub mode: String,
    /// Whose clocks the times are: one host's, or several hosts' (a launched stack), whose
    /// offsets are in every hop between two of them.
    pub clocks: String,
    /// What the stack models, or `nothing` (this host's speed).
    pub modeled: String,
    /// The file traced, its layout, and the journal and fyod modes.
    pub setup: String,
    /// The load the write was traced in, if any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub load: Option<LoadSummary>,
    /// The write, then the read.
    pub requests: Vec<TracedRequest>,
}

/// Starts the stack, or joins a launched one as a guest; traces one write, alone or the Nth
/// of a load, and the read of it; stops what it started.
pub async fn run(
    config: &TraceConfig,
    progress: &mut dyn Write,
) -> Result<TraceReport, BenchError> {
    check(config)?;
    if let Some(file) = &config.attach {
        if config.journal.is_some() || config.fyod_mode.is_some() {
            return Err(BenchError::BadOption {
                option: "--attach".into(),
                why: "a launched stack's servers run as launched: --journal and \
                      --fyod-mode apply to a stack this command starts"
                    .into(),
            });
        }
        let stack = Stack::load(file)?;
        let _ = writeln!(
            progress,
            "iopath trace: joining {} as a guest client of its own (attached)",
            stack.name
        );
        let node = guest::node(&stack).await?;
        let site = Site::Guest { stack, node };
        let outcome = trace_on(&site, config, progress).await;
        site.stop();
        return outcome;
    }
    let mut stack = config.choice.load()?;
    apply_overrides(&mut stack, config);
    if stack.nodes_of(RoleName::Client).is_empty() {
        return Err(BenchError::BadOption {
            option: "--stack".into(),
            why: format!("{} has no client node to trace from", stack.origin),
        });
    }
    let mode = Mode::of(false, config.processes);
    let storage = StorageDir::temporary("trace", config.dir.as_deref())?;
    let _ = writeln!(
        progress,
        "iopath trace: starting {} ({})",
        stack.name,
        mode.name()
    );
    let running = RunningStack::start(stack, mode, storage, None).await?;
    let outcome = trace_on(&Site::Started(&running), config, progress).await;
    let stopped = running.stop().await;
    let report = outcome?;
    stopped?;
    Ok(report)
}

/// Traces on `running`, a stack the caller started and will stop (so it can read the nodes'
/// own counters beside the report): `config`'s choice of stack and modes is not read.
pub async fn trace_running(
    running: &RunningStack,
    config: &TraceConfig,
    progress: &mut dyn Write,
) -> Result<TraceReport, BenchError> {
    check(config)?;
    trace_on(&Site::Started(running), config, progress).await
}

/// Refuses a size or a load outside the bounds.
fn check(config: &TraceConfig) -> Result<(), BenchError> {
    if !(SIZE_MIN_BYTES..=SIZE_MAX_BYTES).contains(&config.size) {
        return Err(BenchError::BadOption {
            option: "--size".into(),
            why: format!(
                "{} is outside {SIZE_MIN_BYTES} B to {}",
                describe_size(config.size),
                describe_size(SIZE_MAX_BYTES)
            ),
        });
    }
    match config.load {
        Some(load) => load.check(config.size),
        None => Ok(()),
    }
}

/// The stack file with `--journal` and `--fyod-mode` applied.
fn apply_overrides(stack: &mut Stack, config: &TraceConfig) {
    for node in &mut stack.nodes {
        match &mut node.role {
            Role::Oss(spec) => {
                if let Some(journal) = config.journal {
                    spec.sync_journal = journal == JournalChoice::Sync;
                }
            }
            Role::Fyod(spec) => {
                if let Some(mode) = config.fyod_mode {
                    spec.mode = mode;
                }
            }
            _ => {}
        }
    }
}

/// The name a guest client's node goes by in a report.
pub const GUEST_NODE: &str = "guest";

/// Where a trace runs.
#[allow(clippy::large_enum_variant)] // one per trace, never moved in a loop: its size is moot
enum Site<'a> {
    /// A stack started here: embedded, or a process per server node with the client nodes
    /// here.
    Started(&'a RunningStack),
    /// A stack `iopath launch` runs, joined as a guest: a client node of this command's own
    /// ([`iopath_stack::guest`]), so a program holding the stack's client nodes (`bench ior
    /// --attach`) keeps running beside it.
    Guest {
        /// The stack file `iopath launch` wrote.
        stack: Stack,
        /// The guest's fabric node, in this process.
        node: iopath_fabric::Node,
    },
}

impl Site<'_> {
    fn stack(&self) -> &Stack {
        match self {
            Site::Started(running) => running.stack(),
            Site::Guest { stack, .. } => stack,
        }
    }

    fn mode(&self) -> Mode {
        match self {
            Site::Started(running) => running.mode(),
            Site::Guest { .. } => Mode::Attached,
        }
    }

    /// The client node requests go from, as far as the stack knows it: its first client node
    /// (a guest is made as that node would be, on its network, with its routes and its fyod).
    fn first_client(&self) -> Option<usize> {
        self.stack().nodes_of(RoleName::Client).first().copied()
    }

    /// Clients to issue requests from, each by its node's name; the first is traced. Every
    /// client node's, or the first's only; a guest's one node, whatever `every`.
    async fn clients(&self, every: bool) -> Result<Vec<(String, Client)>, BenchError> {
        match self {
            Site::Started(running) => {
                let nodes = running.clients();
                let mut clients = Vec::new();
                for node in nodes.iter().take(if every { nodes.len() } else { 1 }) {
                    clients.push((node.name.clone(), running.connect(node).await?));
                }
                if clients.is_empty() {
                    return Err(BenchError::refused(
                        "the stack has no client node in this process",
                    ));
                }
                Ok(clients)
            }
            Site::Guest { stack, node } => {
                let fyod = self.first_client().and_then(|c| match stack.nodes[c].role {
                    Role::Client(spec) => spec.forwarder.map(|f| stack.primary_nid(f)),
                    _ => None,
                });
                let client = guest::connect(node, stack.primary_nid(stack.mds()), fyod).await?;
                Ok(vec![(GUEST_NODE.to_owned(), client)])
            }
        }
    }

    /// NIDs to names, the guest's among them.
    fn names(&self) -> NodeNames {
        let mut names = NodeNames::of(self.stack());
        if let Site::Guest { node, .. } = self {
            for nid in node.nids() {
                names.0.insert(
                    nid.to_string(),
                    (GUEST_NODE.to_owned(), RoleName::Client.as_str().to_owned()),
                );
            }
        }
        names
    }

    /// The trace logs of the nodes in this process, by name.
    fn local_logs(&self) -> Vec<(String, &TraceLog)> {
        match self {
            Site::Started(running) => running
                .local_nodes()
                .into_iter()
                .map(|n| (n.name.clone(), n.node.trace_log()))
                .collect(),
            Site::Guest { node, .. } => vec![(GUEST_NODE.to_owned(), node.trace_log())],
        }
    }

    /// The admin services of the nodes running elsewhere, by name: node processes, or a
    /// launched stack's server nodes (a guest's requests never cross the stack's clients).
    fn remote_admins(&self) -> Vec<(String, std::net::SocketAddr)> {
        match self {
            Site::Started(running) => {
                let local: Vec<usize> = running.local_nodes().iter().map(|n| n.index).collect();
                (0..running.stack().nodes.len())
                    .filter(|i| !local.contains(i))
                    .filter_map(|i| {
                        let addr = running.admin_addr(i)?;
                        Some((running.stack().nodes[i].name.clone(), addr))
                    })
                    .collect()
            }
            Site::Guest { stack, .. } => stack
                .nodes
                .iter()
                .filter(|n| n.role.kind() != RoleName::Client)
                .filter_map(|n| Some((n.name.clone(), n.admin?)))
                .collect(),
        }
    }

    /// Stops the guest's node (a started stack is stopped by whoever started it).
    fn stop(&self) {
        if let Site::Guest { node, .. } = self {
            node.shutdown();
        }
    }
}

/// Connects the clients, traces, and closes every client whatever the trace said.
async fn trace_on(
    site: &Site<'_>,
    config: &TraceConfig,
    progress: &mut dyn Write,
) -> Result<TraceReport, BenchError> {
    let clients = site.clients(config.load.is_some()).await?;
    let outcome = trace_with(site, &clients, config, progress).await;
    let mut closed = Ok(());
    for (name, client) in &clients {
        // Every write the servers acknowledged is committed before the client goes.
        if let Err(e) = client.close().await
            && closed.is_ok()
        {
            closed = Err(BenchError::io(format!("close the client on {name}"), e));
        }
    }
    let report = outcome?;
    closed?;
    Ok(report)
}

async fn trace_with(
    site: &Site<'_>,
    clients: &[(String, Client)],
    config: &TraceConfig,
    progress: &mut dyn Write,
) -> Result<TraceReport, BenchError> {
    let stack = site.stack();
    let (from, client) = &clients[0];
    let io = |what: &str, e: iopath_client::ClientError| BenchError::io(what, e);
    match client.mkdir("/trace").await {
        // A launched stack keeps what earlier traces wrote.
        Ok(_) | Err(iopath_client::ClientError::Exists { .. }) => {}
        Err(e) => return Err(io("mkdir /trace", e)),
    }
    // Names of their own on a launched stack, which other traces share.
    let tag = attached_tag(site);
    let request = StripeRequest {
        stripe_size_bytes: config.stripe_size.unwrap_or(0),
        stripe_count: config.stripe_count.unwrap_or(0),
        ..StripeRequest::INHERIT
    };
    let (write, load, load_files) = match config.load {
        None => {
            let write = one_write(site, from, client, config, request, &tag, progress).await?;
            (write, None, Vec::new())
        }
        Some(load) => {
            let _ = writeln!(
                progress,
                "load: {} writers on {} client node(s), each streaming {} writes to a file of \
                 its own; tracing the {} write {from} issues",
                load.writers,
                clients.len().min(load.writers),
                describe_size(config.size),
                load::ordinal(load.nth)
            );
            let run = load::run(
                clients,
                load,
                config.size,
                request,
                &format!("/trace/load{tag}"),
            )
            .await?;
            let _ = writeln!(progress, "load: {}", run.summary.describe());
            (run.traced, Some(run.summary), run.files)
        }
    };
    let path = write.file.path().to_owned();
    let mut setup = describe_setup(stack, site.first_client(), from, &path, write.file.layout());
    if write.offset > 0 {
        setup.push_str(&format!("; the write at {}", describe_size(write.offset)));
    }

    // Async journals commit within their interval: wait it out, so the read's reply brings
    // the commit back to the client (and the trace shows the write leave its replay list).
    if let Some(interval) = async_commit_interval(stack) {
        let _ = writeln!(
            progress,
            "waiting {} ms for the async journals' group commit",
            interval.as_millis()
        );
        tokio::time::sleep(interval + Duration::from_millis(50)).await;
    }

    let read_id = TraceId::fresh();
    let started = Instant::now();
    let read = trace::traced(read_id, write.file.read_at(write.offset, config.size))
        .await
        .map_err(|e| io("the traced read", e))?;
    let read_seconds = started.elapsed().as_secs_f64();
    if read != write.data {
        return Err(BenchError::Verify {
            what: format!(
                "the traced read of {path} at {} returned {} B that differ from what was \
                 written",
                write.offset,
                read.len()
            ),
        });
    }
    tokio::time::sleep(SETTLE).await;
    let events = gather(site).await?;
    let names = site.names();
    let requests = vec![
        traced_request(
            write.id,
            "write",
            config.size,
            write.seconds,
            &events,
            &names,
        ),
        traced_request(read_id, "read", config.size, read_seconds, &events, &names),
    ];
    write
        .file
        .close()
        .await
        .map_err(|e| io("close the traced file", e))?;
    // The load's files go: on a launched stack they would pile up trace after trace.
    remove_files(client, load_files).await?;
    Ok(TraceReport {
        stack: stack.name.clone(),
        mode: site.mode().name().to_owned(),
        clocks: clocks(stack),
        modeled: stack.modeled(),
        setup,
        load,
        requests,
    })
}

/// Names of their own for a trace's files on a launched stack, which other traces share;
/// nothing on a stack of this run's own.
fn attached_tag(site: &Site<'_>) -> String {
    if site.mode() == Mode::Attached {
        format!(
            "-{}-{}",
            std::process::id(),
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_millis())
        )
    } else {
        String::new()
    }
}

/// The one traced write of a trace without a load: a new file at `/trace/one-request{tag}`,
/// written once under a fresh trace id.
async fn one_write(
    site: &Site<'_>,
    from: &str,
    client: &Client,
    config: &TraceConfig,
    request: StripeRequest,
    tag: &str,
    progress: &mut dyn Write,
) -> Result<TracedWrite, BenchError> {
    let io = |what: &str, e: iopath_client::ClientError| BenchError::io(what, e);
    let stack = site.stack();
    let path = format!("/trace/one-request{tag}");
    let file = client
        .create(&path, request)
        .await
        .map_err(|e| io("create the traced file", e))?;
    let data = Bytes::from(
        (0..config.size)
            .map(|i| (i as u8).wrapping_mul(31) ^ 0x5A)
            .collect::<Vec<u8>>(),
    );
    let _ = writeln!(
        progress,
        "tracing a write of {}: {}",
        describe_size(config.size),
        describe_setup(stack, site.first_client(), from, &path, file.layout())
    );
    let id = TraceId::fresh();
    let started = Instant::now();
    trace::traced(id, file.write_at(0, data.clone()))
        .await
        .map_err(|e| io("the traced write", e))?;
    Ok(TracedWrite {
        id,
        file,
        offset: 0,
        data,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// Closes and removes a load's files.
async fn remove_files(client: &Client, files: Vec<iopath_client::File>) -> Result<(), BenchError> {
    let io = |what: &str, e: iopath_client::ClientError| BenchError::io(what, e);
    for file in files {
        let path = file.path().to_owned();
        file.close()
            .await
            .map_err(|e| io(&format!("close {path}"), e))?;
        client
            .unlink(&path)
            .await
            .map_err(|e| io(&format!("remove the load's file {path}"), e))?;
    }
    Ok(())
}

/// The longest commit interval of the async storage servers, if any are async.
fn async_commit_interval(stack: &Stack) -> Option<Duration> {
    stack
        .nodes
        .iter()
        .filter_map(|n| match &n.role {
            Role::Oss(spec) if !spec.sync_journal => Some(spec.commit_interval_ms),
            _ => None,
        })
        .max()
        .map(Duration::from_millis)
}

/// The traced file, where it was written from, and the journals: `like` is the stack's client
/// node the requests go as (a guest goes as the first would, through its fyod if it has one).
fn describe_setup(
    stack: &Stack,
    like: Option<usize>,
    from: &str,
    path: &str,
    layout: &iopath_client::Layout,
) -> String {
    let via = match like.map(|c| stack.nodes[c].role) {
        Some(Role::Client(spec)) => match spec.forwarder {
            Some(f) => {
                let mode = match stack.nodes[f].role {
                    Role::Fyod(fyod) => match fyod.mode {
                        FyodMode::Pfs => "PFS",
                        FyodMode::Ufs => "UFS",
                    },
                    _ => "?",
                };
                format!("through fyod {} ({mode})", stack.nodes[f].name)
            }
            None => "direct to the storage servers".to_owned(),
        },
        _ => String::new(),
    };
    let from = match like {
        Some(c) if from == GUEST_NODE => format!(
            "{from} (a client node of this command's own, as {} is made)",
            stack.nodes[c].name
        ),
        _ => from.to_owned(),
    };
    let journals: Vec<&str> = stack
        .nodes
        .iter()
        .filter_map(|n| match &n.role {
            Role::Oss(spec) => Some(if spec.sync_journal { "sync" } else { "async" }),
            _ => None,
        })
        .collect();
    let journal = if journals.iter().all(|j| *j == "sync") {
        "sync"
    } else if journals.iter().all(|j| *j == "async") {
        "async"
    } else {
        "mixed"
    };
    format!(
        "{path} from {from} {via}; {} stripe(s) of {}; {journal} journals",
        layout.objects().len(),
        describe_size(layout.stripe_size_bytes())
    )
}

/// Whose clocks a trace's times are: the hosts a launched stack's nodes are placed on, or this
/// one.
fn clocks(stack: &Stack) -> String {
    let hosts: std::collections::BTreeSet<String> = stack
        .nodes
        .iter()
        .filter_map(|n| n.host.as_ref().map(ToString::to_string))
        .collect();
    if hosts.len() > 1 {
        format!(
            "wall-clock on {} hosts, each its own: a hop between two hosts includes their clocks' \
             offset",
            hosts.len()
        )
    } else {
        "wall-clock on one host".to_owned()
    }
}

/// Every node's log: this process's nodes directly, the others over their admin service.
async fn gather(site: &Site<'_>) -> Result<Vec<TraceEvent>, BenchError> {
    let mut events = Vec::new();
    // A node whose bounded log let events go would show hops missing: refuse instead.
    let complete = |name: &str, dropped: u64| {
        if dropped == 0 {
            Ok(())
        } else {
            Err(BenchError::Refused {
                why: format!(
                    "{name}'s trace log let {dropped} events go (it keeps {}): the trace \
                     would miss hops; trace a smaller --size",
                    trace::TRACE_EVENTS_MAX
                ),
            })
        }
    };
    for (name, log) in site.local_logs() {
        complete(&name, log.dropped())?;
        events.extend(log.events(None));
    }
    for (name, addr) in site.remote_admins() {
        let admin = iopath_admin::Client::connect(addr).await?;
        for value in admin.get_param("trace.dropped").await? {
            let dropped = value.value.trim().parse().map_err(|_| BenchError::Io {
                what: format!("trace.dropped of {name}"),
                why: format!("not a count: {:?}", value.value),
            })?;
            complete(&name, dropped)?;
        }
        for value in admin.get_param("trace.events").await? {
            let parsed = trace::parse_json_lines(&value.value).map_err(|why| BenchError::Io {
                what: format!("trace.events of {name}"),
                why,
            })?;
            events.extend(parsed);
        }
    }
    Ok(events)
}

/// NIDs to node names and roles.
struct NodeNames(HashMap<String, (String, String)>);

impl NodeNames {
    fn of(stack: &Stack) -> NodeNames {
        let mut names = HashMap::new();
        for (index, node) in stack.nodes.iter().enumerate() {
            for nid in stack.nids(index) {
                names.insert(
                    nid.to_string(),
                    (node.name.clone(), node.role.name().to_owned()),
                );
            }
        }
        NodeNames(names)
    }

    fn name(&self, nid: &str) -> String {
        self.0
            .get(nid)
            .map_or_else(|| nid.to_owned(), |(n, _)| n.clone())
    }

    fn role(&self, nid: &str) -> String {
        self.0.get(nid).map_or_else(String::new, |(_, r)| r.clone())
    }

    /// `text` with every NID in it followed by its node's name: `100@mem0 (c0)`.
    fn annotate(&self, text: &str) -> String {
        let mut out = String::with_capacity(text.len() + 16);
        for (i, word) in text.split(' ').enumerate() {
            if i > 0 {
                out.push(' ');
            }
            let trimmed = word.trim_end_matches([',', ':', ';', ')']);
            out.push_str(trimmed);
            if let Some((name, _)) = self.0.get(trimmed) {
                out.push_str(&format!(" ({name})"));
            }
            out.push_str(&word[trimmed.len()..]);
        }
        out
    }
}

/// A service's opcode names, by opcode.
type OpcodeNames = fn(u32) -> Option<&'static str>;

/// The service a portal belongs to, and its opcodes' names: the OST's, the metadata
/// service's, a fyod's.
fn service_of(portal: u32) -> Option<(&'static str, OpcodeNames)> {
    match portal {
        iopath_ost_client::OST_PORTAL => Some(("OST", iopath_ost_client::opcode::name)),
        iopath_mds::service::MDS_PORTAL => Some(("MDS", iopath_mds::service::opcode::name)),
        iopath_forwarder::service::FYOD_PORTAL => {
            Some(("fyod", iopath_forwarder::service::opcode::name))
        }
        _ => None,
    }
}

/// A frame's detail with its RPC's opcode named (`opcode 3 on portal 46` becomes `OST write
/// (opcode 3, portal 46)`): the fabric carries bare numbers, the services above it name them.
fn name_opcode(detail: &str) -> String {
    let named = (|| {
        let (before, rest) = detail.split_once("opcode ")?;
        let (opcode, rest) = rest.split_once(" on portal ")?;
        let (portal, after) = rest.split_once(' ').unwrap_or((rest, ""));
        let (opcode, portal) = (opcode.parse().ok()?, portal.parse().ok()?);
        let (service, names) = service_of(portal)?;
        let name = names(opcode)?;
        Some(format!(
            "{before}{service} {name} (opcode {opcode}, portal {portal}) {after}"
        ))
    })();
    named.map_or_else(|| detail.to_owned(), |d| d.trim_end().to_owned())
}

/// One request's events, in time order, with sends paired to their next arrivals.
fn traced_request(
    id: TraceId,
    op: &str,
    bytes: u64,
    seconds: f64,
    events: &[TraceEvent],
    names: &NodeNames,
) -> TracedRequest {
    let mut mine: Vec<&TraceEvent> = events.iter().filter(|e| e.trace == id).collect();
    mine.sort_by_key(|e| e.at_ns);
    let origin = mine.first().map_or(0, |e| e.at_ns);
    let micros = |ns: u64| ns.saturating_sub(origin) as f64 / 1000.0;
    let mut hops: Vec<Hop> = mine
        .iter()
        .map(|e| Hop {
            at_us: micros(e.at_ns),
            node: names.name(&e.node),
            role: names.role(&e.node),
            layer: e.layer.clone(),
            what: e.what.clone(),
            detail: names.annotate(&name_opcode(&e.detail)),
            peer: e.peer.as_deref().map(|p| names.name(p)),
            credits: e.credits.clone(),
            waited_us: e.waited_ns as f64 / 1000.0,
            hop_us: None,
            arrived_at: None,
        })
        .collect();
    // A send pairs with the first later arrival of the same frame on another node: the next
    // hop (a router's forward, or the target).
    for send in 0..mine.len() {
        let (Some(frame), "send") = (&mine[send].frame, mine[send].what.as_str()) else {
            continue;
        };
        let arrival = (send + 1..mine.len()).find(|&i| {
            let e = mine[i];
            e.frame.as_ref() == Some(frame)
                && e.node != mine[send].node
                && (e.what == "arrive" || e.what == "forward")
                && hops[i].hop_us.is_none()
        });
        if let Some(i) = arrival {
            hops[send].arrived_at = Some(i);
            hops[i].hop_us = Some(hops[i].at_us - hops[send].at_us);
        }
    }
    TracedRequest {
        trace: id.to_string(),
        op: op.to_owned(),
        bytes,
        seconds,
        hops,
    }
}

/// The report as text: per request, every step in time order.
pub fn render(report: &TraceReport) -> String {
    let mut out = String::new();
    out.push_str(&format!("stack: {} ({})\n", report.stack, report.mode));
    out.push_str(&format!("modeled: {}\n", report.modeled));
    out.push_str(&format!("traced: {}\n", report.setup));
    if let Some(load) = &report.load {
        out.push_str(&format!("load: {}\n", load.describe()));
    }
    for request in &report.requests {
        out.push_str(&format!(
            "\n{} of {} (trace {}): {:.3} ms at the client, {} steps\n",
            request.op,
            describe_size(request.bytes),
            request.trace,
            request.seconds * 1000.0,
            request.hops.len()
        ));
        out.push_str(&format!(
            "{:>12}  {:<8} {:<8} {:<8} {}\n",
            "time (µs)", "node", "layer", "event", "detail"
        ));
        for hop in &request.hops {
            let mut detail = hop.detail.clone();
            if let Some(peer) = &hop.peer {
                let arrow = if hop.what == "send" { "to" } else { "from" };
                detail.push_str(&format!(" [{arrow} {peer}]"));
            }
            if let Some(us) = hop.hop_us {
                detail.push_str(&format!(" [hop {us:.1} µs]"));
            }
            if !hop.credits.is_empty() {
                let credits: Vec<String> = hop
                    .credits
                    .iter()
                    .map(|(k, v)| format!("{k} {v}"))
                    .collect();
                detail.push_str(&format!(" [credits: {}]", credits.join(", ")));
            }
            if hop.queued() || hop.waited_us >= 1000.0 {
                detail.push_str(&format!(" [waited {:.1} µs]", hop.waited_us));
            }
            out.push_str(&format!(
                "{:>12.1}  {:<8} {:<8} {:<8} {}\n",
                hop.at_us, hop.node, hop.layer, hop.what, detail
            ));
        }
    }
    out.push_str(
        "\ncredits are as each node saw them after taking its own: negative by the sends queued \
         ahead (LNet's tx column); times are microseconds from each request's first step, ",
    );
    out.push_str(&report.clocks);
    out.push('\n');
    out
}

/// One request as a sequence diagram: a lane per node it touched, in the order it reached
/// them; an arrow per frame from send to arrival (dashed where it waited for credits); a mark
/// for every other step, the commit emphasised.
pub fn sequence(report: &TraceReport, request: &TracedRequest) -> Sequence {
    let mut lanes: Vec<String> = Vec::new();
    let mut lane_names: Vec<String> = Vec::new();
    let mut lane_of = |hop: &Hop, lanes: &mut Vec<String>| -> usize {
        if let Some(i) = lane_names.iter().position(|n| *n == hop.node) {
            return i;
        }
        lane_names.push(hop.node.clone());
        lanes.push(format!("{} ({})", hop.node, hop.role));
        lane_names.len() - 1
    };
    let lane_indexes: Vec<usize> = request
        .hops
        .iter()
        .map(|hop| lane_of(hop, &mut lanes))
        .collect();
    let mut messages = Vec::new();
    let mut marks = Vec::new();
    for (i, hop) in request.hops.iter().enumerate() {
        match (hop.what.as_str(), hop.arrived_at) {
            ("send", Some(j)) => messages.push(Arrow {
                from: lane_indexes[i],
                to: lane_indexes[j],
                sent_us: hop.at_us,
                arrived_us: request.hops[j].at_us,
                label: frame_label(&hop.detail),
                queued: hop.queued(),
            }),
            // Arrivals are the arrows' heads; an unpaired send stays a mark.
            ("arrive", _) => {}
            ("forward", _) if hop.hop_us.is_some() => {}
            _ => marks.push(Mark {
                lane: lane_indexes[i],
                at_us: hop.at_us,
                label: short_step(hop),
                emphasis: hop.what == "commit" || hop.what == "release",
            }),
        }
    }
    Sequence {
        title: format!(
            "{} of {} through {} (trace {})",
            request.op,
            describe_size(request.bytes),
            report.stack,
            request.trace
        ),
        lanes,
        messages,
        marks,
        footnote: format!(
            "{}. Times in µs from the request's first step, {}; rows are ordered, not to \
             scale. Modeled: {}.",
            report.setup, report.clocks, report.modeled
        ),
    }
}

/// A frame in a few words, for an arrow: `request 28 B`, `GET 1 MiB`, `REPLY 1 MiB crc ...`.
fn frame_label(detail: &str) -> String {
    let size = detail
        .split('(')
        .nth(1)
        .and_then(|inside| inside.split(" B").next())
        .and_then(|n| n.parse::<u64>().ok())
        .map(describe_size)
        .unwrap_or_default();
    let crc = detail
        .split("crc ")
        .nth(1)
        .map(|c| format!(" crc {}", c.trim_end_matches(')')))
        .unwrap_or_default();
    let kind = [
        ("RPC request", "request"),
        ("RPC reply", "reply"),
        ("GET", "GET"),
        ("REPLY", "REPLY"),
        ("bulk PUT", "bulk PUT"),
        ("ACK", "ACK"),
    ]
    .iter()
    .find(|(prefix, _)| detail.starts_with(prefix))
    .map_or("frame", |(_, kind)| kind);
    format!("{kind} {size}{crc}").trim().to_owned()
}

/// A step in a few words, for a mark: `handle write`, `record transno 2`, `commit transno 2`.
fn short_step(hop: &Hop) -> String {
    let transno = hop
        .detail
        .split("transno ")
        .nth(1)
        .and_then(|rest| rest.split([' ', ':', ',']).next())
        .map(|t| format!(" transno {t}"))
        .unwrap_or_default();
    match hop.what.as_str() {
        "handle" => hop
            .detail
            .replacen("handling", "handle", 1)
            .split(" (")
            .next()
            .unwrap_or_default()
            .to_owned(),
        "reply" => "reply".to_owned(),
        "verify" => format!(
            "{} verified",
            if hop.detail.starts_with("pulled") {
                "pull"
            } else {
                "push"
            }
        ),
        "record" => format!("journal record{transno} (async: reply now)"),
        "commit" => format!("commit{transno}"),
        "keep" => format!("kept for replay{transno}"),
        "release" => format!("released from replay{transno}"),
        "split" => "split by layout".to_owned(),
        "buffer" => "into fyod buffers".to_owned(),
        other => other.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(at_ns: u64, node: &str, what: &str, peer: Option<&str>) -> TraceEvent {
        TraceEvent {
            trace: TraceId(7),
            at_ns,
            node: node.into(),
            layer: "lnet".into(),
            what: what.into(),
            detail: String::new(),
            frame: Some("PUT xid 1".into()),
            peer: peer.map(Into::into),
            credits: Vec::new(),
            waited_ns: 0,
        }
    }

    /// A send pairs with its frame's arrival on the next hop when the clocks put the arrival
    /// after it, and with nothing when they put it before (two nodes' clocks disagreeing):
    /// a hop's latency is never negative.
    #[test]
    fn a_send_pairs_only_with_a_later_arrival_of_its_frame_elsewhere() {
        let names = NodeNames(HashMap::new());
        let later = [
            event(1_000, "1@mem0", "send", Some("2@mem0")),
            event(1_500, "1@mem0", "arrive", None), // the sender's own: not the next hop
            event(4_000, "2@mem0", "arrive", None),
        ];
        let request = traced_request(TraceId(7), "write", 0, 0.0, &later, &names);
        let send = &request.hops[0];
        assert_eq!(send.arrived_at, Some(2));
        assert_eq!(request.hops[2].hop_us, Some(3.0));
        assert_eq!(request.hops[1].hop_us, None);

        let earlier = [
            event(4_000, "1@mem0", "send", Some("2@mem0")),
            event(1_000, "2@mem0", "arrive", None),
        ];
        let request = traced_request(TraceId(7), "write", 0, 0.0, &earlier, &names);
        let send = request.hops.iter().find(|h| h.what == "send").unwrap();
        assert_eq!(send.arrived_at, None, "{request:?}");
        assert!(request.hops.iter().all(|h| h.hop_us.is_none()));
    }
}
