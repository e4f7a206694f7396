//! `iopath bench fyods`: the ASCI Red paper's (004, §3.5, Tables 2 and 3) sweep of compute
//! nodes against fyods, on a modeled Janus.
//!
//! On Janus, each compute node wrote (then read) its own PFS file with the asynchronous API
//! (`cwrite`: `iwrite` then `iowait`, one call in flight per node) through the fyods the yod
//! gave the job; the fyods split every call over the PFS I/O nodes, which pulled the bytes
//! from the compute nodes. One fyod rose from 174 MB/s (16 nodes) to 243 (32) and then *fell*
//! — 220, 138, 62 at 64, 128, 256 nodes — while four or more fyods kept climbing to the I/O
//! nodes' ~700 MB/s, and more than one fyod per 64 nodes added little.
//!
//! Here the same sweep runs on an embedded stack whose fyods stand on **modeled service
//! nodes** ([`iopath_stack::schema::FyodServiceNode`]): each call takes CPU time on one of the
//! node's two CPUs before its I/O starts, and each open file has a worker thread (the paper's
//! "Mach thread for each open file") holding memory; once the threads outgrow the node's
//! memory, it pages, and every call's CPU time grows with the overcommit. That is the modeled
//! mechanism behind the fall: a fyod serving more nodes than its memory holds threads for
//! spends its CPUs paging. The I/O nodes are storage servers with modeled disks; the mesh a
//! modeled link per interface. Each point writes for a fixed modeled time (IOR's stonewalling)
//! and reads back what was written, checking every byte, so a collapsed point costs no more
//! host time than a healthy one.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_client::{File, StripeRequest};
use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::file::{FyodModeName, JournalName, NetworkEntry, NodeEntry, RoleName};
use iopath_stack::schema::{Stack, StackFile};
use serde::Serialize;

use crate::lab::Lab;
use iopath_bench::BenchError;

/// The paper's Table 2: aggregate write MB/s, asynchronous API, by fyods (rows) and compute
/// nodes 16, 32, 64, 128, 256, 512 (columns); `None` where it has no figure.
pub const PAPER_WRITE: [(u32, [Option<f64>; 6]); 5] = [
    (
        1,
        [
            Some(174.0),
            Some(243.0),
            Some(220.0),
            Some(138.0),
            Some(62.0),
            None,
        ],
    ),
    (
        2,
        [
            Some(174.0),
            Some(328.0),
            Some(480.0),
            Some(442.0),
            Some(279.0),
            Some(104.0),
        ],
    ),
    (
        4,
        [
            Some(172.0),
            Some(345.0),
            Some(520.0),
            Some(681.0),
            Some(718.0),
            Some(724.0),
        ],
    ),
    (
        8,
        [
            Some(179.0),
            Some(313.0),
            Some(529.0),
            Some(675.0),
            Some(800.0),
            Some(690.0),
        ],
    ),
    (
        16,
        [
            Some(176.0),
            Some(326.0),
            Some(488.0),
            Some(594.0),
            Some(607.0),
            Some(744.0),
        ],
    ),
];
/// The paper's Table 3: aggregate read MB/s, likewise.
pub const PAPER_READ: [(u32, [Option<f64>; 6]); 5] = [
    (
        1,
        [
            Some(224.0),
            Some(331.0),
            Some(373.0),
            Some(184.0),
            Some(68.0),
            None,
        ],
    ),
    (
        2,
        [
            Some(210.0),
            Some(370.0),
            Some(463.0),
            Some(446.0),
            Some(374.0),
            Some(113.0),
        ],
    ),
    (
        4,
        [
            Some(226.0),
            Some(379.0),
            Some(488.0),
            Some(565.0),
            Some(618.0),
            Some(635.0),
        ],
    ),
    (
        8,
        [
            Some(229.0),
            Some(354.0),
            Some(436.0),
            Some(552.0),
            Some(719.0),
            Some(605.0),
        ],
    ),
    (
        16,
        [
            Some(229.0),
            Some(294.0),
            Some(445.0),
            Some(557.0),
            Some(640.0),
            Some(653.0),
        ],
    ),
];
/// The compute-node counts of the paper's columns.
pub const PAPER_NODES: [u32; 6] = [16, 32, 64, 128, 256, 512];
/// The byte every write carries, and every read must bring back.
const FILL: u8 = 0x5a;
/// Most compute nodes one run may have.
pub const NODES_MAX: u32 = 512;
/// Most fyods one run may have.
pub const FYODS_MAX: u32 = 64;

/// The paper's figure for `fyods` and `nodes`, MB/s, if it has one.
pub fn paper(table: &[(u32, [Option<f64>; 6])], fyods: u32, nodes: u32) -> Option<f64> {
    let column = PAPER_NODES.iter().position(|&n| n == nodes)?;
    table
        .iter()
        .find(|(f, _)| *f == fyods)
        .and_then(|(_, row)| row[column])
}

/// The modeled Janus: what each part is, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Janus {
    /// PFS I/O nodes (storage servers, one target each): Janus had 14.
    pub io_nodes: u32,
    /// An I/O node's RAID, bytes per modeled second: "at best 64 MB/sec" (004 §2.4); 50 MiB/s,
    /// so fourteen give the ~700 MB/s the tables saturate at.
    pub raid_bytes_s: u64,
    /// The mesh's links, bytes per modeled second (ASCI Red: 400 MB/s each way).
    pub link_bytes_s: u64,
    /// A service node's CPUs (ASCI Red's had two).
    pub cpus: u32,
    /// CPU time a call takes on the service node, modeled microseconds: set so that one fyod's
    /// two CPUs serve 1 MiB calls at about the paper's peak for one fyod (243 MB/s). Fitted.
    pub call_us: u64,
    /// The service node's memory for the fyod's threads, bytes.
    pub memory_bytes: u64,
    /// What each worker thread (one per open file) holds, bytes: its stack and its call's
    /// buffers. With `memory_bytes`, how many threads fit before the node pages: set so that the
    /// fall begins past 32 to 64 nodes per fyod, where the paper's does. Assumed.
    pub thread_bytes: u64,
}

impl Default for Janus {
    fn default() -> Self {
        Janus {
            io_nodes: 14,
            raid_bytes_s: 50 << 20,
            link_bytes_s: 400 << 20,
            cpus: 2,
            call_us: 8_500,
            memory_bytes: 256 << 20,
            thread_bytes: 5 << 20,
        }
    }
}

/// Which API the compute nodes call.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Api {
    /// `cwrite`/`cread`: each call a thread at the fyod, many at once.
    Async,
    /// `write()`/`read()`: the fyod serves one at a time.
    Sync,
}

/// What `iopath bench fyods` runs.
#[derive(Debug, Clone)]
pub struct FyodsConfig {
    /// Compute-node counts (columns).
    pub nodes: Vec<u32>,
    /// Fyod counts (rows).
    pub fyods: Vec<u32>,
    /// Also the synchronous API at this many nodes, over the fyod counts (the paper's Figure
    /// 10: 64 nodes); `None`: not run.
    pub sync_nodes: Option<u32>,
    /// The machine.
    pub janus: Janus,
    /// Bytes per call.
    pub transfer: u64,
    /// Modeled seconds each phase writes (or reads) for.
    pub seconds: f64,
    /// Host seconds per modeled second.
    pub time_scale: u32,
    /// Where the stacks keep their bytes (a temporary directory inside, removed); default a
    /// memory file system where there is one: the disks are modeled.
    pub dir: Option<PathBuf>,
}

impl Default for FyodsConfig {
    fn default() -> Self {
        FyodsConfig {
            nodes: vec![16, 32, 64, 128, 256],
            fyods: vec![1, 2, 4, 8, 16],
            sync_nodes: Some(64),
            janus: Janus::default(),
            transfer: 1 << 20,
            seconds: 0.5,
            // This host keeps pace with the modeled rates (700 MB/s at most) even at 1; 2
            // leaves room for a busy machine (the same points read alike at 1, 2 and 4).
            time_scale: 2,
            dir: None,
        }
    }
}

impl FyodsConfig {
    /// The suite's: two node counts, two fyod counts, no synchronous row.
    pub fn quick() -> Self {
        FyodsConfig {
            nodes: vec![16, 128],
            fyods: vec![1, 4],
            sync_nodes: None,
            seconds: 0.25,
            // The suite runs beside other tests: room to spare.
            time_scale: 4,
            ..FyodsConfig::default()
        }
    }

    fn check(&self) -> Result<(), BenchError> {
        let bad = |option: &str, why: String| BenchError::BadOption {
            option: option.into(),
            why,
        };
        if self.nodes.is_empty() || self.nodes.iter().any(|&n| !(1..=NODES_MAX).contains(&n)) {
            return Err(bad(
                "--nodes",
                format!("1 to {NODES_MAX} compute nodes a run"),
            ));
        }
        if self.fyods.is_empty() || self.fyods.iter().any(|&f| !(1..=FYODS_MAX).contains(&f)) {
            return Err(bad("--fyods", format!("1 to {FYODS_MAX} fyods a run")));
        }
        if let Some(n) = self.sync_nodes
            && !(1..=NODES_MAX).contains(&n)
        {
            return Err(bad("--sync-nodes", format!("1 to {NODES_MAX}")));
        }
        if !(0.05..=60.0).contains(&self.seconds) {
            return Err(bad(
                "--seconds",
                "0.05 to 60 modeled seconds a phase".into(),
            ));
        }
        if !(1..=64 << 20).contains(&self.transfer) {
            return Err(bad("-t", "1 byte to 64 MiB a call".into()));
        }
        if !(1..=1000).contains(&self.time_scale) {
            return Err(bad("--time-scale", "1 to 1000".into()));
        }
        Ok(())
    }
}

/// One run: a node count, a fyod count, an API.
#[derive(Debug, Clone, Serialize)]
pub struct FyodsPoint {
    /// Compute nodes.
    pub nodes: u32,
    /// Fyods.
    pub fyods: u32,
    /// The API.
    pub api: Api,
    /// Aggregate write, MB per modeled second.
    pub write_mb_s: f64,
    /// Aggregate read of what was written, MB per modeled second.
    pub read_mb_s: f64,
    /// The paper's write figure, if it has one (asynchronous API only).
    pub paper_write_mb_s: Option<f64>,
    /// The paper's read figure, likewise.
    pub paper_read_mb_s: Option<f64>,
    /// The topology crate's flow model for the same machine, write MB/s: every node's stream
    /// through its fyod's service node (its CPUs' call rate at its thread count, as bytes) to
    /// the RAIDs its file is striped over; steady state, no latency.
    pub model_write_mb_s: f64,
    /// Calls the fyods' service nodes took CPU time for.
    pub fyod_calls: u64,
    /// Of those, calls made while a fyod's threads outgrew its node's memory (paged).
    pub paged_calls: u64,
}

/// What `iopath bench fyods` measured.
#[derive(Debug, Clone, Serialize)]
pub struct FyodsReport {
    /// The machine.
    pub janus: Janus,
    /// Threads a service node's memory holds before it pages.
    pub threads_fit: u64,
    /// Bytes per call.
    pub transfer: u64,
    /// Modeled seconds each phase ran.
    pub seconds: f64,
    /// Host seconds per modeled second.
    pub time_scale: u32,
    /// Every point, asynchronous API first (by fyods, then nodes), then the synchronous row.
    pub points: Vec<FyodsPoint>,
    /// What was modeled and what real.
    pub modeled: String,
}

impl FyodsReport {
    /// The values of `of` over the points of `api`, in increasing order, each once.
    fn distinct(&self, api: Api, of: impl Fn(&FyodsPoint) -> u32) -> Vec<u32> {
        let mut values: Vec<u32> = self
            .points
            .iter()
            .filter(|p| p.api == api)
            .map(of)
            .collect();
        values.sort_unstable();
        values.dedup();
        values
    }

    /// The point of `api` at `fyods` and `nodes`.
    pub fn point(&self, api: Api, fyods: u32, nodes: u32) -> Option<&FyodsPoint> {
        self.points
            .iter()
            .find(|p| p.api == api && p.fyods == fyods && p.nodes == nodes)
    }
}

/// The experiment as a [`Lab`]: what `iopath bench fyods` runs.
#[derive(Debug, Clone, Copy)]
pub struct FyodsLab;

impl Lab for FyodsLab {
    type Config = FyodsConfig;
    type Report = FyodsReport;

    const DRAWS: &'static str = "the write sweep";

    fn quick() -> FyodsConfig {
        FyodsConfig::quick()
    }

    fn storage_dir(config: &mut FyodsConfig) -> &mut Option<PathBuf> {
        &mut config.dir
    }

    /// Runs the sweep, saying on `progress` what it does.
    async fn run(
        config: &FyodsConfig,
        progress: &mut impl std::io::Write,
    ) -> Result<FyodsReport, BenchError> {
        config.check()?;
        let mut runs: Vec<(Api, u32, u32)> = Vec::new();
        for &fyods in &config.fyods {
            for &nodes in &config.nodes {
                runs.push((Api::Async, fyods, nodes));
            }
        }
        if let Some(nodes) = config.sync_nodes {
            for &fyods in &config.fyods {
                runs.push((Api::Sync, fyods, nodes));
            }
        }
        let mut points = Vec::new();
        let mut modeled = String::new();
        let total = runs.len();
        for (i, (api, fyods, nodes)) in runs.into_iter().enumerate() {
            let _ = write!(
                progress,
                "[{}/{total}] {nodes} compute nodes, {fyods} fyod{}, {} API ...",
                i + 1,
                if fyods == 1 { "" } else { "s" },
                match api {
                    Api::Async => "asynchronous",
                    Api::Sync => "synchronous",
                }
            );
            let _ = progress.flush();
            let (point, words) = run_one(config, api, fyods, nodes).await?;
            let _ = writeln!(
                progress,
                " write {:.0} MB/s, read {:.0} MB/s",
                point.write_mb_s, point.read_mb_s
            );
            modeled = words;
            points.push(point);
        }
        Ok(FyodsReport {
            threads_fit: config.janus.memory_bytes / config.janus.thread_bytes.max(1),
            janus: config.janus.clone(),
            transfer: config.transfer,
            seconds: config.seconds,
            time_scale: config.time_scale,
            points,
            modeled,
        })
    }

    /// The report for people: the write and read tables beside the paper's, the synchronous row,
    /// what produced the fall, and what was modeled.
    fn render(report: &FyodsReport) -> String {
        let j = &report.janus;
        let mut out = format!(
            "fyods on a modeled Janus: {} PFS I/O nodes at {:.0} MB/s each, service nodes of {} CPUs \
             and {} us a call, {} threads fit before paging; {} KiB calls, {} modeled s a phase, \
             time scale {}

",
            j.io_nodes,
            j.raid_bytes_s as f64 / 1e6,
            j.cpus,
            j.call_us,
            report.threads_fit,
            report.transfer >> 10,
            report.seconds,
            report.time_scale
        );
        out.push_str(
            "aggregate write, MB/s, asynchronous API (cwrite); the paper's Table 2 in ()
",
        );
        out.push_str(&grid(report, Api::Async, |p| {
            beside_paper(p.write_mb_s, p.paper_write_mb_s)
        }));
        out.push_str(
            "
the flow model's write for the same machine (the topology crate's: fyods' CPUs at their \
             thread counts, RAIDs; steady state, no latency), MB/s; measured/model in ()
",
        );
        out.push_str(&grid(report, Api::Async, |p| {
            format!(
                "{:.0} ({:.2})",
                p.model_write_mb_s,
                p.write_mb_s / p.model_write_mb_s
            )
        }));
        out.push_str(
            "
aggregate read, MB/s, asynchronous API (cread); the paper's Table 3 in ()
",
        );
        out.push_str(&grid(report, Api::Async, |p| {
            beside_paper(p.read_mb_s, p.paper_read_mb_s)
        }));
        if report.points.iter().any(|p| p.api == Api::Sync) {
            out.push_str(
                "
synchronous API (write()/read(): one call at a time per fyod), MB/s write / read
",
            );
            for p in report.points.iter().filter(|p| p.api == Api::Sync) {
                let async_write = report
                    .point(Api::Async, p.fyods, p.nodes)
                    .map_or(String::new(), |a| {
                        format!(" (asynchronous: {:.0})", a.write_mb_s)
                    });
                out.push_str(&format!(
                    "{:>3} fyods, {} nodes: {:.0} / {:.0}{async_write}
",
                    p.fyods, p.nodes, p.write_mb_s, p.read_mb_s
                ));
            }
        }
        let paged: Vec<String> = report
            .points
            .iter()
            .filter(|p| p.api == Api::Async && p.paged_calls > 0)
            .map(|p| {
                format!(
                    "{}x{} {:.0}%",
                    p.fyods,
                    p.nodes,
                    100.0 * p.paged_calls as f64 / p.fyod_calls.max(1) as f64
                )
            })
            .collect();
        out.push_str(&format!(
            "
the fall: a fyod gives each open file a worker thread; past {} threads its service \
             node pages and every call's CPU time grows with the threads over what fits. Calls \
             that paged (fyods x nodes, share of calls): {}
",
            report.threads_fit,
            if paged.is_empty() {
                "none".to_owned()
            } else {
                paged.join(", ")
            }
        ));
        out.push_str(&format!(
            "modeled: {}
",
            report.modeled
        ));
        out.push_str(
            "real: every call and byte through the fabric, the fyods, the storage servers' journals \
             and files (their pace modeled), every byte read back checked against what was written; \
             rates are MB per modeled second. Fitted to the paper: \
             a call's CPU time (one fyod's peak); assumed: the threads that fit (where the fall \
             begins)
",
        );
        out
    }

    /// The asynchronous write sweep: a line per fyod count, measured, and the paper's for one and
    /// four fyods.
    fn figure(report: &FyodsReport) -> Option<iopath_plot::Figure> {
        use iopath_plot::{Axis, Figure, Series};
        let fyods = report.distinct(Api::Async, |p| p.fyods);
        if fyods.is_empty() {
            return None;
        }
        let mut series = Vec::new();
        for &f in &fyods {
            let mut points: Vec<(f64, f64)> = report
                .points
                .iter()
                .filter(|p| p.api == Api::Async && p.fyods == f)
                .map(|p| (f64::from(p.nodes), p.write_mb_s))
                .collect();
            points.sort_by(|a, b| a.0.total_cmp(&b.0));
            series.push(Series::line(
                format!("{f} fyod{} (measured)", if f == 1 { "" } else { "s" }),
                points,
            ));
        }
        for f in [1, 4] {
            if !fyods.contains(&f) {
                continue;
            }
            let points: Vec<(f64, f64)> = PAPER_NODES
                .iter()
                .filter_map(|&n| Some((f64::from(n), paper(&PAPER_WRITE, f, n)?)))
                .collect();
            series.push(Series::line(
                format!("{f} fyod{} (paper, Table 2)", if f == 1 { "" } else { "s" }),
                points,
            ));
        }
        Some(Figure {
            title: "Aggregate write against compute nodes, by fyods (asynchronous API)".into(),
            x: Axis::log("compute nodes").ticks_at(
                PAPER_NODES
                    .iter()
                    .map(|&n| (f64::from(n), n.to_string()))
                    .collect(),
            ),
            y: Axis::from_zero("aggregate write (MB/s)"),
            y2: None,
            series,
            rules: Vec::new(),
            footnote: format!(
                "Measured on a modeled Janus ({} I/O nodes, service nodes of {} CPUs paging past {} \
                 threads, time scale {}); the paper's Table 2 for one and four fyods.",
                report.janus.io_nodes, report.janus.cpus, report.threads_fit, report.time_scale
            ),
        })
    }
}

/// The stack of one run: the MDS, the I/O nodes with their RAIDs, the fyods on their service
/// nodes, and the compute nodes (the fyods share them in blocks, as yod gave them out).
fn stack_file(config: &FyodsConfig, fyods: u32, nodes: u32) -> StackFile {
    let j = &config.janus;
    StackFile::named("janus-fyods")
        .description(format!(
            "a modeled Janus: {nodes} compute nodes, {fyods} fyods, {} PFS I/O nodes",
            j.io_nodes
        ))
        .time_scale(config.time_scale)
        .stripe_size(config.transfer)
        .stripe_count(-1)
        .network(NetworkEntry::named("mesh0").bandwidth(j.link_bytes_s))
        .node(NodeEntry::new("mds", RoleName::Mds).nid("mesh0", 1))
        .node(
            NodeEntry::new("io", RoleName::Oss)
                .count(j.io_nodes)
                .nid("mesh0", 200)
                .targets(1)
                .journal(JournalName::Async)
                .disk_bandwidth(j.raid_bytes_s),
        )
        .node(
            NodeEntry::new("fyod", RoleName::Fyod)
                .count(fyods)
                .nid("mesh0", 100)
                .fyod_mode(FyodModeName::Pfs)
                .fyod_call_us(j.call_us)
                .fyod_cpus(j.cpus)
                .fyod_memory(j.memory_bytes)
                .fyod_thread_memory(j.thread_bytes),
        )
        .node(
            NodeEntry::new("c", RoleName::Client)
                .count(nodes)
                .nid("mesh0", 1000),
        )
}

async fn run_one(
    config: &FyodsConfig,
    api: Api,
    fyods: u32,
    nodes: u32,
) -> Result<(FyodsPoint, String), BenchError> {
    let stack = stack_file(config, fyods, nodes).check("the fyods experiment")?;
    let modeled = stack.modeled();
    let model_write_mb_s = predict(&stack, api)?;
    let parent = config.dir.clone().or_else(|| {
        let shm = PathBuf::from("/dev/shm");
        shm.is_dir().then_some(shm)
    });
    let storage = StorageDir::temporary("bench-fyods", parent.as_deref())?;
    let running = RunningStack::start(stack, Mode::Embedded, storage, None).await?;
    let result = measure(config, api, &running).await;
    let stats = fyod_stats(&running);
    let stopped = running.stop().await;
    let (write_bytes_s, read_bytes_s) = result?;
    stopped?;
    let scale = f64::from(config.time_scale);
    let asynchronous = api == Api::Async;
    Ok((
        FyodsPoint {
            nodes,
            fyods,
            api,
            write_mb_s: write_bytes_s * scale / 1e6,
            read_mb_s: read_bytes_s * scale / 1e6,
            paper_write_mb_s: asynchronous
                .then(|| paper(&PAPER_WRITE, fyods, nodes))
                .flatten(),
            paper_read_mb_s: asynchronous
                .then(|| paper(&PAPER_READ, fyods, nodes))
                .flatten(),
            model_write_mb_s,
            fyod_calls: stats.0,
            paged_calls: stats.1,
        },
        modeled,
    ))
}

/// The flow model's aggregate write for `stack`, MB per modeled second: a port per compute
/// node's interface, per fyod's service node (its CPUs' calls a second at the threads its
/// nodes open — one file each — times the bytes a call carries; a synchronous fyod serves one
/// call at a time, so one CPU's worth) and per RAID; a flow per node and target its file is
/// striped over.
fn predict(stack: &Stack, api: Api) -> Result<f64, BenchError> {
    use iopath_stack::schema::{Role, RoleName};
    use iopath_topology::{Flow, FlowModel, FlowNetwork};
    let model_error =
        |e: iopath_topology::TopologyError| BenchError::refused(format!("the flow model: {e}"));
    let mb = |bytes_s: f64| bytes_s / 1e6;
    let transfer = stack.layout.stripe_size_bytes as f64;
    let link = stack
        .link_model(0)
        .map_or(f64::MAX, |l| l.bandwidth_bytes_s);
    let clients = stack.nodes_of(RoleName::Client);
    let forwarder = |c: usize| match stack.nodes[c].role {
        Role::Client(spec) => spec.forwarder,
        _ => None,
    };
    let mut ports = FlowNetwork::new();
    let mut fyod_port = std::collections::HashMap::new();
    for fyod in stack.nodes_of(RoleName::Fyod) {
        let served = clients
            .iter()
            .filter(|&&c| forwarder(c) == Some(fyod))
            .count() as u64;
        let Some(node) = stack.nodes[fyod].service() else {
            continue;
        };
        // In modeled time: the flow model's rates are modeled MB/s.
        let per_call_s = node.model(1).call_time(served).as_secs_f64();
        let cpus = match api {
            Api::Async => f64::from(node.cpus),
            Api::Sync => 1.0,
        };
        let port = ports
            .add_port(mb(cpus * transfer / per_call_s))
            .map_err(model_error)?;
        fyod_port.insert(fyod, port);
    }
    let targets = stack.targets();
    let mut raid_port = Vec::new();
    for &(oss, _) in &targets {
        let rate = stack.nodes[oss]
            .disk()
            .map_or(f64::MAX, |d| d.bandwidth_bytes_s as f64);
        raid_port.push(ports.add_port(mb(rate)).map_err(model_error)?);
    }
    let mut flows = Vec::new();
    for &c in &clients {
        let injection = ports.add_port(mb(link)).map_err(model_error)?;
        let via = forwarder(c).and_then(|f| fyod_port.get(&f).copied());
        for &raid in &raid_port {
            let mut path = vec![injection];
            path.extend(via);
            path.push(raid);
            flows.push(Flow {
                ports: path,
                demand_mb_per_s: mb(link) / raid_port.len() as f64,
            });
        }
    }
    let model = FlowModel::new(&ports, &flows).map_err(model_error)?;
    Ok(model.solve().rates_mb_per_s.iter().sum())
}

/// Calls the fyods' service nodes took, and of those the paged ones.
fn fyod_stats(running: &RunningStack) -> (u64, u64) {
    running
        .local_nodes()
        .into_iter()
        .filter_map(|n| n.fyod())
        .map(|f| f.service().service_node_stats())
        .fold((0, 0), |(c, p), s| (c + s.calls, p + s.paged_calls))
}

/// Every compute node writes its own file for the phase's time, one call in flight, then
/// reads back what it wrote for as long; the aggregate rates in host bytes per second.
async fn measure(
    config: &FyodsConfig,
    api: Api,
    running: &RunningStack,
) -> Result<(f64, f64), BenchError> {
    let mut files: Vec<Arc<File>> = Vec::new();
    let mut clients = Vec::new();
    for (n, node) in running.clients().into_iter().enumerate() {
        let client = running.connect(node).await?;
        let file = client
            .create(&format!("/n{n}"), StripeRequest::INHERIT)
            .await
            .map_err(|e| BenchError::io(format!("create /n{n}"), e))?;
        files.push(Arc::new(file));
        clients.push(client);
    }
    let phase = Duration::from_secs_f64(config.seconds * f64::from(config.time_scale));
    let data = Bytes::from(vec![FILL; config.transfer as usize]);
    let t = config.transfer;
    // Writes: each node one call at a time at the end of its file, none started after the
    // phase's end.
    let started = Instant::now();
    let deadline = started + phase;
    let mut tasks = tokio::task::JoinSet::new();
    for (n, file) in files.iter().enumerate() {
        let (file, data) = (Arc::clone(file), data.clone());
        tasks.spawn(async move {
            let mut calls = 0u64;
            while Instant::now() < deadline {
                let at = calls * t;
                match api {
                    Api::Async => {
                        let handle = file.iwrite(at, data.clone());
                        file.iowait(handle).await.map(drop)
                    }
                    Api::Sync => file.write_at(at, data.clone()).await.map(drop),
                }
                .map_err(|e| BenchError::io(format!("write /n{n}"), e))?;
                calls += 1;
            }
            Ok::<(usize, u64), BenchError>((n, calls))
        });
    }
    let mut written = vec![0u64; files.len()];
    while let Some(done) = tasks.join_next().await {
        let (n, calls) = done.map_err(|e| BenchError::io("a writer", e))??;
        written[n] = calls;
    }
    let write_rate = (written.iter().sum::<u64>() * t) as f64 / started.elapsed().as_secs_f64();
    // Reads: each node reads its own file back from the start, round again if it gets to the
    // end before the phase does.
    let started = Instant::now();
    let deadline = started + phase;
    let mut tasks = tokio::task::JoinSet::new();
    for (n, file) in files.iter().enumerate() {
        let (file, had) = (Arc::clone(file), written[n].max(1));
        tasks.spawn(async move {
            let (mut calls, mut bytes) = (0u64, 0u64);
            while Instant::now() < deadline {
                let at = (calls % had) * t;
                let got = match api {
                    Api::Async => {
                        let handle = file.iread(at, t);
                        file.iowait(handle)
                            .await
                            .map(|r| r.into_data().unwrap_or_default())
                    }
                    Api::Sync => file.read_at(at, t).await,
                }
                .map_err(|e| BenchError::io(format!("read /n{n}"), e))?;
                // A read counts only if it brought back what was written there.
                if got.len() as u64 != t || got.iter().any(|&b| b != FILL) {
                    return Err(BenchError::io(
                        format!("read /n{n} at {at}"),
                        format!(
                            "{} bytes, not the {t} bytes of {FILL:#x} written",
                            got.len()
                        ),
                    ));
                }
                bytes += t;
                calls += 1;
            }
            Ok::<u64, BenchError>(bytes)
        });
    }
    let mut read = 0u64;
    while let Some(done) = tasks.join_next().await {
        read += done.map_err(|e| BenchError::io("a reader", e))??;
    }
    let read_rate = read as f64 / started.elapsed().as_secs_f64();
    // The files are not closed one by one: a close is a call too, and a fyod that pages takes
    // its time over each; the stack stops with them open, as a job killed at its end does.
    // Each client still commits what its servers acknowledged, as a program's end does.
    drop(files);
    for client in clients {
        client
            .close()
            .await
            .map_err(|e| BenchError::io("disconnect", e))?;
    }
    Ok((write_rate, read_rate))
}

/// A table of the points of `api`: a row per fyod count, a column per node count, each cell
/// what `cell` says of its point.
fn grid(report: &FyodsReport, api: Api, cell: impl Fn(&FyodsPoint) -> String) -> String {
    let nodes = report.distinct(api, |p| p.nodes);
    let mut out = format!("{:>7} |", "fyods");
    for n in &nodes {
        out.push_str(&format!(" {:>15}", format!("{n} nodes")));
    }
    out.push('\n');
    for f in report.distinct(api, |p| p.fyods) {
        out.push_str(&format!("{f:>7} |"));
        for &n in &nodes {
            let text = report.point(api, f, n).map_or("-".to_owned(), &cell);
            out.push_str(&format!(" {text:>15}"));
        }
        out.push('\n');
    }
    out
}

/// A measured figure with the paper's in parentheses.
fn beside_paper(measured: f64, paper: Option<f64>) -> String {
    match paper {
        Some(paper) => format!("{measured:.0} ({paper:.0})"),
        None => format!("{measured:.0} (-)"),
    }
}
