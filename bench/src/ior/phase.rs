//! One IOR phase: every task writes (or reads back and checks) its blocks at once, through the
//! client library on its client node, timed as IOR times it.
//!
//! A task is IOR's rank: it opens its file (in a shared file, task 0 creates it and the others
//! open it once it exists; with -E every task opens what an earlier test left), makes its
//! transfers one at a time — a blocking call each, as IOR's POSIX backend does, with -Y an
//! fsync after each, with -z in a random order — until they are done or the deadline (-D,
//! -T) passes, and closes (with `-e`, after an fsync). With -g the tasks wait for each other
//! between open, transfers and close. The phase's times are taken across tasks: open from the
//! first task's start to the last task's open, and so on.
//!
//! Every read is checked against what the run wrote there ([`Files`]): the writer's stamp,
//! task and layout, so a test of a script reads back what an earlier test kept.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_client::{Checksummed, Client, ClientError, File, StripeRequest};
use tokio::sync::Barrier;
use tokio::task::JoinSet;

use iopath_fabric::aligned::BufferPool;

use super::buffers;
use super::params::{Api, IorParams, node_of, reader_source};
use super::report::{Access, PhaseResult, Stonewall, TaskTimes};
use crate::error::BenchError;
use iopath_stack::pattern;

/// How often the progress line is redrawn on a terminal.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// What every task of a test shares.
#[derive(Debug)]
pub struct Job {
    /// The test's options.
    pub params: IorParams,
    /// Tasks.
    pub tasks: u32,
    /// The client library on each client node the tasks use, in node order.
    pub clients: Vec<Client>,
    /// Transfer buffers, used again once the client library lets go of them.
    pub buffers: Arc<BufferPool>,
    /// The seed of the random order with -z (each task shuffles with it and its number).
    pub seed: u64,
}

impl Job {
    /// Client nodes in use.
    pub fn nodes(&self) -> u32 {
        self.clients.len() as u32
    }

    /// The client of `task`'s node.
    fn client_of(&self, task: u32) -> Client {
        self.clients[node_of(task, self.tasks, self.nodes()) as usize].clone()
    }

    /// The seed of this test's transfer order: `Some` with -z.
    fn order_seed(&self) -> Option<u64> {
        self.params.random_offset.then_some(self.seed)
    }
}

/// What a write phase left in its files: enough to check every word a later read gets, in
/// this test or a later one of the run.
#[derive(Debug, Clone)]
pub struct Written {
    /// The writing test's options (its layout and pattern).
    pub params: IorParams,
    /// Its tasks.
    pub tasks: u32,
    /// Its -z seed, if it wrote in a random order.
    pub seed: Option<u64>,
    /// The stamp its data carries (the pattern's repetition word), unique in the run.
    pub stamp: u32,
    /// Transfers each task made: all of its transfers, unless a deadline stopped it.
    pub transfers: Vec<u64>,
}

impl Written {
    /// Whether a reader with `params` and `tasks` finds this data where this writer put it.
    fn same_layout(&self, params: &IorParams, tasks: u32) -> bool {
        let w = &self.params;
        w.block_size_bytes == params.block_size_bytes
            && w.transfer_size_bytes == params.transfer_size_bytes
            && w.segments == params.segments
            && w.file_per_proc == params.file_per_proc
            && (w.file_per_proc || self.tasks == tasks)
    }

    /// Whether `task` made every transfer.
    fn complete(&self, task: u32) -> bool {
        self.transfers.get(task as usize).copied() == Some(self.params.transfers_per_task())
    }
}

/// The files the run has written, by path, with what is in them.
pub type Files = std::collections::HashMap<String, Arc<Written>>;

/// Where the progress line goes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Progress {
    /// Standard error: redrawn in place on a terminal, a line per phase otherwise.
    Stderr,
    /// Nowhere (tests).
    Silent,
}

/// The run's progress line on standard error.
static STDERR_LINE: std::sync::LazyLock<crate::status_line::StatusLine> =
    std::sync::LazyLock::new(crate::status_line::StatusLine::new);

impl Progress {
    /// Shows `text` as the progress line: on a terminal in place (`last`: then kept, as a
    /// line), elsewhere only the `last` text of each step, as a line.
    pub(crate) fn show(self, text: &str, last: bool) {
        if self == Progress::Silent {
            return;
        }
        if last {
            STDERR_LINE.keep(text);
        } else {
            STDERR_LINE.set(text);
        }
    }
}

/// A phase's result, with each task's times (for `-v -v`) and transfer counts.
#[derive(Debug, Clone)]
pub struct Phase {
    /// IOR's figures.
    pub result: PhaseResult,
    /// Each task's times, in task order.
    pub tasks: Vec<TaskTimes>,
    /// Bytes read back and checked (reads only).
    pub verified_bytes: u64,
}

/// Runs the write phase of `iteration`, its data stamped `stamp`, each task starting no
/// transfer once `stonewall` has passed since its first (IOR's deadlineForStonewalling).
/// Returns the phase and what it left in the files.
pub async fn write(
    job: &Arc<Job>,
    iteration: u32,
    stamp: u32,
    stonewall: Option<Duration>,
    progress: Progress,
) -> Result<(Phase, Written), BenchError> {
    let phase = run(
        job,
        Access::Write,
        iteration,
        stonewall,
        progress,
        |job, task, gates, done| {
            let job = Arc::clone(job);
            async move { write_task(&job, task, iteration, stamp, stonewall, &gates, &done).await }
        },
    )
    .await?;
    let written = Written {
        params: job.params.clone(),
        tasks: job.tasks,
        seed: job.order_seed(),
        stamp,
        transfers: phase.tasks.iter().map(|t| t.calls).collect(),
    };
    Ok((phase, written))
}

/// Runs the read phase of `iteration`, checking every word against what `files` says was
/// written there, each task starting no transfer once `stonewall` has passed since its first
/// (none for IOR's untimed check of a write-only test).
pub async fn read(
    job: &Arc<Job>,
    iteration: u32,
    files: &Files,
    stonewall: Option<Duration>,
    progress: Progress,
) -> Result<Phase, BenchError> {
    let sources: Vec<Option<Arc<Written>>> = (0..job.tasks)
        .map(|task| {
            let source = reader_source(task, job.tasks, job.nodes(), job.params.reorder_tasks);
            files.get(&job.params.file_of(source, iteration)).cloned()
        })
        .collect();
    let sources = Arc::new(sources);
    run(
        job,
        Access::Read,
        iteration,
        stonewall,
        progress,
        move |job, task, gates, done| {
            let (job, sources) = (Arc::clone(job), Arc::clone(&sources));
            async move {
                let written = sources[task as usize].clone();
                read_task(&job, task, iteration, written, stonewall, &gates, &done).await
            }
        },
    )
    .await
}

/// The barriers of a phase: every task waits at the start, and with -g between open,
/// transfers and close too; and, with stonewalling wear-out, where the tasks learn the most
/// transfers any of them made by the deadline.
#[derive(Debug)]
struct Gates {
    barrier: Barrier,
    between: bool,
    /// With wear-out: the most transfers a task had made when the deadline stopped it.
    pairs_max: AtomicU64,
}

impl Gates {
    /// The start: every task waits for the others.
    async fn start(&self) {
        self.barrier.wait().await;
    }

    /// Between steps: with -g, every task waits for the others.
    async fn between(&self) {
        if self.between {
            self.barrier.wait().await;
        }
    }

    /// IOR's reduction at the stonewall: each task brings the transfers it made, and all
    /// leave with the most any made (IOR's `MPI_Allreduce(MPI_MAX)` of `pairCnt`).
    async fn most_pairs(&self, calls: u64) -> u64 {
        self.pairs_max.fetch_max(calls, Ordering::AcqRel);
        // Every task has brought its count once all are past the barrier.
        self.barrier.wait().await;
        self.pairs_max.load(Ordering::Acquire)
    }
}

/// Where a task is against its stonewall, IOR's way: a deadline is looked at after each
/// transfer (so every task makes at least one); with wear-out, a task the deadline stopped
/// goes on until it has made as many transfers as the task that made the most.
#[derive(Debug)]
struct TaskWall<'a> {
    /// When the task's deadline passes (`None`: no deadline).
    deadline: Option<Instant>,
    /// With wear-out, the gates the tasks meet at to learn the most transfers made.
    wear_out: Option<&'a Gates>,
    /// The wear-out's target, once known.
    target: Option<u64>,
    /// Whether the deadline stopped the task.
    stonewalled: bool,
    /// Calls made at the stonewall, and seconds from the first transfer to it.
    at: Option<(u64, f64)>,
    started: Instant,
}

impl<'a> TaskWall<'a> {
    fn new(stonewall: Option<Duration>, wear_out: bool, gates: &'a Gates) -> Self {
        let started = Instant::now();
        TaskWall {
            deadline: stonewall.map(|d| started + d),
            wear_out: (wear_out && stonewall.is_some()).then_some(gates),
            target: None,
            stonewalled: false,
            at: None,
            started,
        }
    }

    /// Whether the task, having made `calls` transfers, makes another (it has more to make).
    async fn goes_on(&mut self, calls: u64) -> bool {
        if let Some(target) = self.target {
            return calls < target;
        }
        let hit = calls > 0 && self.deadline.is_some_and(|d| Instant::now() > d);
        if !hit {
            return true;
        }
        self.stonewalled = true;
        match self.wear_out {
            Some(gates) => {
                let target = gates.most_pairs(calls).await;
                self.at = Some((calls, self.started.elapsed().as_secs_f64()));
                self.target = Some(target);
                calls < target
            }
            None => {
                self.at = Some((calls, self.started.elapsed().as_secs_f64()));
                false
            }
        }
    }

    /// The task has made every transfer it had (`calls`): with wear-out it still meets the
    /// others, as every IOR rank takes part in the reduction. Returns IOR's `pairCnt` and
    /// `stonewall_time` for the task.
    async fn finish(&mut self, calls: u64) -> (u64, f64) {
        if let Some(at) = self.at {
            return at;
        }
        if let Some(gates) = self.wear_out {
            gates.most_pairs(calls).await;
        }
        (calls, self.started.elapsed().as_secs_f64())
    }
}

async fn run<F, Fut>(
    job: &Arc<Job>,
    access: Access,
    iteration: u32,
    stonewall: Option<Duration>,
    progress: Progress,
    task_body: F,
) -> Result<Phase, BenchError>
where
    F: Fn(&Arc<Job>, u32, Arc<Gates>, Arc<AtomicU64>) -> Fut,
    Fut: std::future::Future<Output = Result<TaskTimes, BenchError>> + Send + 'static,
{
    let total = job.params.aggregate_bytes(job.tasks);
    let done = Arc::new(AtomicU64::new(0));
    let gates = Arc::new(Gates {
        barrier: Barrier::new(job.tasks as usize),
        between: job.params.intra_test_barriers,
        pairs_max: AtomicU64::new(0),
    });
    let mut tasks = JoinSet::new();
    for task in 0..job.tasks {
        tasks.spawn(task_body(job, task, Arc::clone(&gates), Arc::clone(&done)));
    }
    let label = format!(
        "ior: test {} {} iteration {iteration}",
        job.params.test_id,
        access.name()
    );
    let started = Instant::now();
    let mut times = Vec::new();
    let mut first_error = None;
    let mut ticker = tokio::time::interval(PROGRESS_INTERVAL);
    ticker.tick().await;
    // Bounded: the loop ends when every task has ended, and tasks are bounded by their bytes.
    loop {
        tokio::select! {
            joined = tasks.join_next() => {
                let Some(joined) = joined else { break };
                let failed = match joined {
                    Ok(Ok(t)) => { times.push(t); None }
                    Ok(Err(e)) => Some(e),
                    Err(e) if e.is_cancelled() => None,
                    Err(e) => Some(BenchError::io("an IOR task", e)),
                };
                if let Some(e) = failed {
                    first_error.get_or_insert(e);
                    // The others may wait at a barrier the failed task never reaches.
                    tasks.abort_all();
                }
            }
            _ = ticker.tick() => {
                let d = done.load(Ordering::Relaxed);
                let secs = started.elapsed().as_secs_f64();
                progress.show(&format!(
                    "{label}: {}/{} MiB  {:.0} MiB/s",
                    d >> 20, total >> 20, d as f64 / (1u64 << 20) as f64 / secs.max(1e-9)
                ), false);
            }
        }
    }
    if let Some(e) = first_error {
        progress.show(&format!("{label}: failed"), true);
        return Err(e);
    }
    times.sort_by_key(|t| t.task);
    let t = job.params.transfer_size_bytes;
    let moved: u64 = times.iter().map(|x| x.calls * t).sum();
    let wear_out = job.params.wear_out && stonewall.is_some();
    let result = aggregate(access, iteration, moved, t, &times, wear_out);
    let verified_bytes = times.iter().map(|t| t.verified_bytes).sum();
    progress.show(
        &format!(
            "{label}: {} MiB in {:.2} s, {:.0} MiB/s{}{}",
            moved >> 20,
            result.total_s,
            result.bw_mib_s(),
            if result.stonewalled {
                ", stopped at the deadline"
            } else {
                ""
            },
            match access {
                Access::Read if verified_bytes == moved => ", every word checked",
                Access::Read => ", not all checked (written with another layout)",
                Access::Write => "",
            }
        ),
        true,
    );
    Ok(Phase {
        result,
        tasks: times,
        verified_bytes,
    })
}

/// IOR's reduction: each interval from the earliest start to the latest end over the tasks;
/// with wear-out, IOR's stonewalling figures too.
fn aggregate(
    access: Access,
    iteration: u32,
    bytes: u64,
    transfer_size_bytes: u64,
    times: &[TaskTimes],
    wear_out: bool,
) -> PhaseResult {
    assert!(!times.is_empty(), "a phase has at least one task");
    let min = |f: fn(&TaskTimes) -> Instant| times.iter().map(f).min().expect("tasks");
    let max = |f: fn(&TaskTimes) -> Instant| times.iter().map(f).max().expect("tasks");
    let span = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
    let calls: u64 = times.iter().map(|t| t.calls).sum();
    let call_seconds: f64 = times.iter().map(|t| t.call_seconds).sum();
    PhaseResult {
        access,
        iteration,
        bytes,
        transfers: calls,
        open_s: span(min(|t| t.open_start), max(|t| t.open_end)),
        transfer_s: span(min(|t| t.transfer_start), max(|t| t.transfer_end)),
        close_s: span(min(|t| t.close_start), max(|t| t.close_end)),
        total_s: span(min(|t| t.open_start), max(|t| t.close_end)),
        latency_s: call_seconds / calls.max(1) as f64,
        stonewalled: times.iter().any(|t| t.stonewalled),
        stonewall: wear_out.then(|| stonewall_figures(times, transfer_size_bytes)),
    }
}

/// IOR's stonewalling figures (`WriteOrRead` in IOR's `ior.c`, with stoneWallingWearOut):
/// the fewest and most transfers a task had made at the stonewall, the fewest bytes one task
/// had moved, the bytes all had moved divided by the tasks (IOR's integer division), and the
/// time of rank 0 (here task 0).
pub fn stonewall_figures(times: &[TaskTimes], transfer_size_bytes: u64) -> Stonewall {
    let pairs = times.iter().map(|t| t.stonewall_calls);
    let total: u64 = pairs.clone().map(|p| p * transfer_size_bytes).sum();
    Stonewall {
        pairs_min: pairs.clone().min().unwrap_or(0),
        pairs_max: pairs.clone().max().unwrap_or(0),
        min_data_bytes: pairs.min().unwrap_or(0) * transfer_size_bytes,
        mean_data_bytes: total / times.len().max(1) as u64,
        seconds: times
            .iter()
            .find(|t| t.task == 0)
            .or(times.first())
            .map_or(0.0, |t| t.stonewall_s),
    }
}

/// One write, as `api` makes it; the task waits for it either way.
async fn write_call(
    file: &File,
    api: Api,
    offset: u64,
    data: Checksummed,
) -> Result<(), ClientError> {
    match api {
        Api::Sync => file.write_at(offset, data).await.map(drop),
        Api::Async => {
            let handle = file.iwrite(offset, data);
            file.iowait(handle).await.map(drop)
        }
    }
}

/// One read, as `api` makes it.
async fn read_call(file: &File, api: Api, offset: u64, len: u64) -> Result<Bytes, ClientError> {
    match api {
        Api::Sync => file.read_at(offset, len).await,
        Api::Async => {
            let handle = file.iread(offset, len);
            // A read's result always carries its bytes.
            Ok(file.iowait(handle).await?.into_data().unwrap_or_default())
        }
    }
}

/// Creates `path`, replacing a file already there (IOR opens with O_TRUNC).
async fn create_fresh(client: &Client, path: &str) -> Result<File, ClientError> {
    match client.create(path, StripeRequest::INHERIT).await {
        Err(ClientError::Exists { .. }) => {
            client.unlink(path).await?;
            client.create(path, StripeRequest::INHERIT).await
        }
        other => other,
    }
}

/// Opens `path`, which an earlier test must have left (-E, or a read).
async fn open_existing(client: &Client, path: &str) -> Result<File, BenchError> {
    client.open(path).await.map_err(|e| match e {
        ClientError::NotFound { .. } => BenchError::Refused {
            why: format!(
                "{path} does not exist: each `iopath bench ior` starts a fresh stack, so a \
                 test that reads or uses existing files (-r alone, -E) needs an earlier test \
                 of the same run (a -f script) to write them with -k"
            ),
        },
        other => BenchError::io(format!("open {path}"), other),
    })
}

/// Opens (or creates) the file `task` writes in `iteration`: with -E the one there; with -F
/// its own, made fresh; in a shared file task 0 makes it fresh and the others open it once
/// it exists.
async fn open_for_write(
    job: &Job,
    task: u32,
    iteration: u32,
    gates: &Gates,
) -> Result<File, BenchError> {
    let p = &job.params;
    let client = job.client_of(task);
    let path = p.file_of(task, iteration);
    let io = |what: &str, e: ClientError| BenchError::io(format!("task {task}: {what} {path}"), e);
    if let Some(dir) = p.unique_dir_of(task) {
        match client.mkdir(&dir).await {
            Ok(()) | Err(ClientError::Exists { .. }) => {}
            Err(e) => return Err(io("make the directory of", e)),
        }
    }
    if p.use_existing_file {
        return open_existing(&client, &path).await;
    }
    if p.file_per_proc {
        return create_fresh(&client, &path)
            .await
            .map_err(|e| io("create", e));
    }
    if task == 0 {
        let made = create_fresh(&client, &path).await;
        // The others open it once it exists: the start barrier again, met by all.
        gates.start().await;
        return made.map_err(|e| io("create", e));
    }
    gates.start().await;
    client.open(&path).await.map_err(|e| io("open", e))
}

#[allow(clippy::too_many_arguments)] // one call site: the task's part of the phase, named
async fn write_task(
    job: &Job,
    task: u32,
    iteration: u32,
    stamp: u32,
    stonewall: Option<Duration>,
    gates: &Gates,
    done: &AtomicU64,
) -> Result<TaskTimes, BenchError> {
    let p = &job.params;
    let client = job.client_of(task);
    let path = p.file_of(task, iteration);
    let io = |what: &str, e: ClientError| BenchError::io(format!("task {task}: {what} {path}"), e);
    gates.start().await;
    let open_start = Instant::now();
    let file = open_for_write(job, task, iteration, gates).await?;
    let open_end = Instant::now();
    gates.between().await;
    let transfer_start = Instant::now();
    let mut wall = TaskWall::new(stonewall, p.wear_out, gates);
    let mut call_seconds = 0.0;
    let mut calls = 0;
    let t = p.transfer_size_bytes;
    // Checksummed as it is made, as the client library would checksum it anyway: the pass
    // over the data happens while each piece is in cache, off the write's critical path.
    let kind = client.checksum();
    let make = |offset: u64| {
        let mut crc = kind.empty();
        let data = buffers::filled(&job.buffers, t as usize, |buffer| {
            crc = pattern::fill_checksummed(buffer, task, stamp, offset, kind);
        });
        Checksummed::new(data, kind, crc)
    };
    // Without -l every transfer carries the same bytes: one buffer, filled once, as IOR's.
    let same_for_all = (!p.store_file_offset).then(|| make(0));
    let make_for = |offset: u64| match &same_for_all {
        Some(data) => data.clone(),
        None => make(offset),
    };
    let mut offsets = p
        .transfer_offsets(job.tasks, task, job.order_seed())
        .peekable();
    let mut prepared = offsets.peek().map(|&o| make_for(o));
    // Bounded by the task's transfers and the deadline. The next buffer is filled while this
    // write is in flight, so making the data costs the task no time of its own.
    while wall.goes_on(calls).await {
        let Some(offset) = offsets.next() else { break };
        let data = prepared
            .take()
            .expect("a buffer is prepared for every transfer");
        let following = offsets.peek().copied();
        let call = Instant::now();
        let (written, next) = tokio::join!(
            async {
                let mut r = write_call(&file, p.api, offset, data).await;
                if r.is_ok() && p.fsync_per_write {
                    r = file.fsync().await;
                }
                (r, Instant::now())
            },
            async { following.map(make_for) }
        );
        let (result, ended) = written;
        result.map_err(|e| io(&format!("write at {offset} of"), e))?;
        call_seconds += ended.saturating_duration_since(call).as_secs_f64();
        calls += 1;
        done.fetch_add(t, Ordering::Relaxed);
        prepared = next;
    }
    let (stonewall_calls, stonewall_s) = wall.finish(calls).await;
    let transfer_end = Instant::now();
    gates.between().await;
    let close_start = Instant::now();
    if p.fsync {
        file.fsync().await.map_err(|e| io("fsync", e))?;
    }
    file.close().await.map_err(|e| io("close", e))?;
    let close_end = Instant::now();
    gates.between().await;
    Ok(TaskTimes {
        task,
        open_start,
        open_end,
        transfer_start,
        transfer_end,
        close_start,
        close_end,
        call_seconds,
        calls,
        stonewalled: wall.stonewalled,
        stonewall_calls,
        stonewall_s,
        verified_bytes: 0,
    })
}

/// The offsets task `task` reads from `source`'s data, and whether each can be checked:
/// where the writer's layout is this test's, the transfers it made (in this test's order);
/// otherwise this test's own offsets, read but not checked.
fn read_offsets<'a>(
    job: &'a Job,
    source: u32,
    written: Option<&'a Written>,
) -> (Box<dyn Iterator<Item = u64> + Send + 'a>, bool) {
    let p = &job.params;
    let own = || p.transfer_offsets(job.tasks, source, job.order_seed());
    let Some(w) = written.filter(|w| w.same_layout(p, job.tasks)) else {
        return (own(), false);
    };
    if w.complete(source) {
        return (own(), true);
    }
    // A deadline stopped the writer: read what it made, and only that.
    let made = w.transfers.get(source as usize).copied().unwrap_or(0) as usize;
    let theirs = w
        .params
        .transfer_offsets(w.tasks, source, w.seed)
        .take(made);
    match (w.seed, job.order_seed()) {
        (None, None) => (Box::new(theirs), true),
        (_, seed) => {
            // Bounded: a random order on either side bounds the transfers (check_tasks).
            let mut offsets: Vec<u64> = theirs.collect();
            match seed {
                Some(seed) => super::params::shuffle(&mut offsets, seed, source),
                None => offsets.sort_unstable(),
            }
            (Box::new(offsets.into_iter()), true)
        }
    }
}

#[allow(clippy::too_many_arguments)] // one call site: the task's part of the phase, named
async fn read_task(
    job: &Job,
    task: u32,
    iteration: u32,
    written: Option<Arc<Written>>,
    stonewall: Option<Duration>,
    gates: &Gates,
    done: &AtomicU64,
) -> Result<TaskTimes, BenchError> {
    let p = &job.params;
    let client = job.client_of(task);
    // With -C the task reads what the task one node over wrote.
    let source = reader_source(task, job.tasks, job.nodes(), p.reorder_tasks);
    let path = p.file_of(source, iteration);
    let io = |what: &str, e: ClientError| BenchError::io(format!("task {task}: {what} {path}"), e);
    gates.start().await;
    let open_start = Instant::now();
    let file = open_existing(&client, &path).await?;
    let open_end = Instant::now();
    gates.between().await;
    let transfer_start = Instant::now();
    let mut wall = TaskWall::new(stonewall, p.wear_out, gates);
    let mut call_seconds = 0.0;
    let mut calls = 0;
    let mut verified_bytes = 0;
    let t = p.transfer_size_bytes;
    let (mut offsets, checked) = read_offsets(job, source, written.as_deref());
    let verify = |data: Bytes, offset: u64| -> Result<u64, BenchError> {
        if data.len() as u64 != t {
            return Err(BenchError::Verify {
                what: format!(
                    "task {task}: {path} at {offset}: read {} bytes, {t} were asked for",
                    data.len()
                ),
            });
        }
        let Some(w) = written.as_deref().filter(|_| checked) else {
            return Ok(0);
        };
        let at = w.params.pattern_offset(offset);
        pattern::check(&data, source, w.stamp, at).map_err(|mut m| {
            // Report where in the file, whatever offset the pattern was made for.
            m.file_offset = m.file_offset - at + offset;
            BenchError::Verify {
                what: format!("task {task} reading task {source}'s data in {path}: {m}"),
            }
        })?;
        Ok(t)
    };
    let mut unchecked: Option<(Bytes, u64)> = None;
    // Bounded by the task's transfers and the deadline. Each buffer is checked while the next
    // read is in flight; the last one after the loop.
    while wall.goes_on(calls).await {
        let Some(offset) = offsets.next() else { break };
        let previous = unchecked.take();
        let call = Instant::now();
        let (read, checked) = tokio::join!(
            async {
                let r = read_call(&file, p.api, offset, t).await;
                (r, Instant::now())
            },
            async { previous.map(|(data, at)| verify(data, at)) }
        );
        let (result, ended) = read;
        let data = result.map_err(|e| io(&format!("read at {offset} of"), e))?;
        call_seconds += ended.saturating_duration_since(call).as_secs_f64();
        calls += 1;
        verified_bytes += checked.transpose()?.unwrap_or(0);
        done.fetch_add(t, Ordering::Relaxed);
        unchecked = Some((data, offset));
    }
    if let Some((data, at)) = unchecked {
        verified_bytes += verify(data, at)?;
    }
    let (stonewall_calls, stonewall_s) = wall.finish(calls).await;
    let transfer_end = Instant::now();
    gates.between().await;
    let close_start = Instant::now();
    file.close().await.map_err(|e| io("close", e))?;
    let close_end = Instant::now();
    gates.between().await;
    Ok(TaskTimes {
        task,
        open_start,
        open_end,
        transfer_start,
        transfer_end,
        close_start,
        close_end,
        call_seconds,
        calls,
        stonewalled: wall.stonewalled,
        stonewall_calls,
        stonewall_s,
        verified_bytes,
    })
}

/// Removes the files of `iteration` (IOR's `remove` line): each task its own with -F (and
/// its directory with -u), task 0 the shared one; and forgets what they held. Returns the
/// seconds it took.
pub async fn remove(job: &Arc<Job>, iteration: u32, files: &mut Files) -> Result<f64, BenchError> {
    let started = Instant::now();
    let owners: Vec<u32> = if job.params.file_per_proc {
        (0..job.tasks).collect()
    } else {
        vec![0]
    };
    for &task in &owners {
        files.remove(&job.params.file_of(task, iteration));
    }
    let mut tasks = JoinSet::new();
    for task in owners {
        let job = Arc::clone(job);
        tasks.spawn(async move {
            let path = job.params.file_of(task, iteration);
            let client = job.client_of(task);
            let failed = |what: &str, e| BenchError::io(format!("task {task}: {what}"), e);
            client
                .unlink(&path)
                .await
                .map_err(|e| failed(&format!("remove {path}"), e))?;
            if let Some(dir) = job.params.unique_dir_of(task) {
                client
                    .rmdir(&dir)
                    .await
                    .map_err(|e| failed(&format!("remove the directory {dir}"), e))?;
            }
            Ok::<(), BenchError>(())
        });
    }
    while let Some(joined) = tasks.join_next().await {
        joined.map_err(|e| BenchError::io("an IOR task", e))??;
    }
    Ok(started.elapsed().as_secs_f64())
}

/// The tasks end, as IOR's processes do when it exits: each client commits what its servers
/// acknowledged and disconnects (see [`Client::close`]), so nothing the run wrote lives only
/// in this process's memory when it goes.
///
/// They end together, [`ENDING_AT_ONCE`] at a time, as IOR's processes exit together: one
/// after another, 20,000 tasks' disconnects (each server commits for each) took minutes.
pub async fn end(clients: &[Client]) -> Result<(), BenchError> {
    let gate = Arc::new(tokio::sync::Semaphore::new(ENDING_AT_ONCE));
    let mut ending = JoinSet::new();
    for client in clients {
        let (client, gate) = (client.clone(), Arc::clone(&gate));
        ending.spawn(async move {
            let _turn = gate.acquire_owned().await;
            client.close().await
        });
    }
    let mut first_error = None;
    while let Some(joined) = ending.join_next().await {
        let closed = joined
            .map_err(|e| BenchError::io("an IOR task", e))
            .and_then(|c| {
                c.map_err(|e| BenchError::io("commit the tasks' writes and disconnect", e))
            });
        if let Err(e) = closed {
            first_error.get_or_insert(e);
        }
    }
    first_error.map_or(Ok(()), Err)
}

/// Tasks that end (commit and disconnect) at once.
const ENDING_AT_ONCE: usize = 64;

/// Makes the test file's parent directories, as `mkdir -p` would.
pub async fn make_parents(client: &Client, test_file: &str) -> Result<(), BenchError> {
    let mut path = String::new();
    let parts: Vec<&str> = test_file.split('/').filter(|p| !p.is_empty()).collect();
    for part in &parts[..parts.len().saturating_sub(1)] {
        path.push('/');
        path.push_str(part);
        match client.stat(&path).await {
            Ok(stat) if stat.is_dir => continue,
            Ok(_) => {
                return Err(BenchError::BadOption {
                    option: "-o".into(),
                    why: format!("{path} is a file, not a directory"),
                });
            }
            Err(ClientError::NotFound { .. }) => match client.mkdir(&path).await {
                Ok(()) | Err(ClientError::Exists { .. }) => {}
                Err(e) => return Err(BenchError::io(format!("mkdir {path}"), e)),
            },
            Err(e) => return Err(BenchError::io(format!("stat {path}"), e)),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ior::IorOptions;

    fn job(options: IorOptions, tasks: u32, seed: u64) -> Job {
        Job {
            params: IorParams::from_options(&options, 0).unwrap(),
            tasks,
            clients: Vec::new(),
            buffers: buffers::pool(8),
            seed,
        }
    }

    fn written(job: &Job, transfers: Vec<u64>) -> Written {
        Written {
            params: job.params.clone(),
            tasks: job.tasks,
            seed: job.order_seed(),
            stamp: 1,
            transfers,
        }
    }

    fn small(random_offset: bool) -> IorOptions {
        IorOptions {
            transfer_size_bytes: 64 << 10,
            block_size_bytes: 1 << 20,
            segments: 2,
            random_offset,
            ..IorOptions::default()
        }
    }

    #[test]
    fn a_stonewalled_writer_is_read_back_where_it_stopped() {
        // Sequential writer stopped after 5 of its 32 transfers: the reader reads those 5.
        let writer = job(small(false), 4, 0);
        let w = written(&writer, vec![32, 5, 32, 32]);
        let reader = job(small(false), 4, 0);
        let (offsets, checked) = read_offsets(&reader, 1, Some(&w));
        assert!(checked);
        let expected: Vec<u64> = writer.params.transfer_offsets(4, 1, None).take(5).collect();
        assert_eq!(offsets.collect::<Vec<_>>(), expected);
        // A complete task is read in full, in the reader's order.
        let (offsets, _) = read_offsets(&reader, 0, Some(&w));
        assert_eq!(offsets.count(), 32);
        // A random writer stopped early: a sequential reader reads what it made, in order.
        let random = job(small(true), 4, 99);
        let w = written(&random, vec![7, 7, 7, 7]);
        let (offsets, checked) = read_offsets(&reader, 2, Some(&w));
        let got: Vec<u64> = offsets.collect();
        let mut made: Vec<u64> = random
            .params
            .transfer_offsets(4, 2, Some(99))
            .take(7)
            .collect();
        made.sort_unstable();
        assert!(checked);
        assert_eq!(got, made);
    }

    /// A task's times with `calls` transfers at the stonewall, `seconds` after its start.
    fn task_at_stonewall(task: u32, calls: u64, seconds: f64) -> TaskTimes {
        let now = Instant::now();
        TaskTimes {
            task,
            open_start: now,
            open_end: now,
            transfer_start: now,
            transfer_end: now,
            close_start: now,
            close_end: now,
            call_seconds: 0.0,
            calls,
            stonewalled: true,
            stonewall_calls: calls,
            stonewall_s: seconds,
            verified_bytes: 0,
        }
    }

    #[test]
    fn stonewall_figures_are_iors_per_task_min_and_mean_and_rank_0s_time() {
        // A fixed run: three tasks of 64 MiB transfers stopped at 12, 10 and 15 pairs; task
        // 0's stonewall came 2.5 s after its first transfer, the others' later.
        const T: u64 = 64 << 20;
        let times = [
            task_at_stonewall(1, 10, 2.9),
            task_at_stonewall(0, 12, 2.5),
            task_at_stonewall(2, 15, 2.7),
        ];
        let wall = stonewall_figures(&times, T);
        // IOR's WriteOrRead: MPI_MIN and MPI_MAX of pairCnt; MPI_MIN of each task's
        // dataMoved; MPI_SUM of dataMoved / numTasks (integer division); rank 0's time.
        assert_eq!(wall.pairs_min, 10);
        assert_eq!(wall.pairs_max, 15);
        assert_eq!(wall.min_data_bytes, 10 * T);
        assert_eq!(wall.mean_data_bytes, (10 + 12 + 15) * T / 3);
        assert_eq!(wall.seconds, 2.5);
        // IOR's fprintf: the data in GiB with one decimal, per task.
        assert_eq!(
            wall.line(),
            "stonewalling pairs accessed min: 10 max: 15 -- min data: 0.6 GiB mean data: 0.8 GiB time: 2.5s\n"
        );
        // The summary over two repetitions, IOR's PrintLongSummaryOneOperation:
        // Stonewall(s) = sum of times / repetitions; Stonewall(MiB) = sum of mean data / sum
        // of times / MiB.
        let again = stonewall_figures(&[task_at_stonewall(0, 20, 3.5)], T);
        let result = |wall| PhaseResult {
            access: Access::Write,
            iteration: 0,
            bytes: 0,
            transfers: 0,
            open_s: 0.0,
            transfer_s: 0.0,
            close_s: 0.0,
            total_s: 0.0,
            latency_s: 0.0,
            stonewalled: true,
            stonewall: Some(wall),
        };
        let (seconds, mib_s) = super::super::report::stonewall_summary(
            &[result(wall), result(again)],
            Access::Write,
            2,
        )
        .unwrap();
        assert!((seconds - (2.5 + 3.5) / 2.0).abs() < 1e-12);
        let mean_data = ((10 + 12 + 15) * T / 3 + 20 * T) as f64;
        assert!((mib_s - mean_data / (2.5 + 3.5) / (1u64 << 20) as f64).abs() < 1e-9);
        assert_eq!(
            super::super::report::stonewall_summary(&[result(wall)], Access::Read, 1),
            None,
            "none for a phase that was not run"
        );
    }

    #[test]
    fn another_layout_is_read_but_not_checked() {
        let writer = job(small(false), 4, 0);
        let w = written(&writer, vec![32; 4]);
        let other = IorOptions {
            transfer_size_bytes: 128 << 10,
            ..small(false)
        };
        let reader = job(other, 4, 0);
        let (offsets, checked) = read_offsets(&reader, 0, Some(&w));
        assert!(!checked);
        assert_eq!(offsets.count(), 16, "the reader's own transfers");
        // A shared file read by fewer tasks than wrote it is laid out differently too.
        let fewer = job(small(false), 2, 0);
        assert!(!read_offsets(&fewer, 0, Some(&w)).1);
        let (_, checked) = read_offsets(&writer, 0, None);
        assert!(!checked, "nothing known of the file");
    }
}

/// IOR's options for a [`write_then_read`] run: `tasks` tasks, a file each under `test_file`,
/// each `block` bytes in `transfer`-byte blocking calls (IOR's `-F -w -r -a POSIX`).
pub fn write_read_params(
    tasks: u32,
    block: u64,
    transfer: u64,
    test_file: &str,
) -> Result<IorParams, BenchError> {
    let options = super::IorOptions {
        tasks: Some(tasks),
        block_size_bytes: block,
        transfer_size_bytes: transfer,
        file_per_proc: true,
        test_file: test_file.into(),
        api: "sync".into(),
        ..super::IorOptions::default()
    };
    let mut params = IorParams::from_options(&options, 0)?;
    params.write = true;
    params.read = true;
    Ok(params)
}

/// A block no task finishes before a phase's deadline stops it (IOR's stonewalling): 64 GiB
/// in whole transfers.
pub fn stonewalled_block(transfer: u64) -> u64 {
    let transfer = transfer.max(1);
    ((64u64 << 30) / transfer).max(1) * transfer
}

/// One phase of [`write_then_read`], with when it ran.
#[derive(Debug, Clone)]
pub struct TimedPhase {
    /// When it began.
    pub start: std::time::SystemTime,
    /// When it ended.
    pub end: std::time::SystemTime,
    /// What IOR measured.
    pub result: PhaseResult,
}

/// A run as a benchmark built on IOR makes one: `tasks` tasks over `clients` (a client node
/// each, in turn) write, then read back and check what they wrote, each phase ended by
/// `deadline` if given (IOR's stonewalling), with `pause` after each; the files are removed.
/// `stamp` marks the run's data (unique among a benchmark's runs).
pub async fn write_then_read(
    clients: &[Client],
    params: IorParams,
    tasks: u32,
    deadline: Option<Duration>,
    stamp: u32,
    pause: Duration,
) -> Result<[TimedPhase; 2], BenchError> {
    let nodes = tasks.min(clients.len() as u32);
    make_parents(&clients[0], &params.test_file).await?;
    let job = Arc::new(Job {
        buffers: buffers::pool(params.transfer_size_bytes as usize),
        params,
        tasks,
        clients: clients[..nodes as usize].to_vec(),
        seed: 0,
    });
    let mut files = Files::new();
    let start = std::time::SystemTime::now();
    let (write, written) = self::write(&job, 0, stamp, deadline, Progress::Silent).await?;
    let write = TimedPhase {
        start,
        end: std::time::SystemTime::now(),
        result: write.result,
    };
    let written = Arc::new(written);
    for task in 0..tasks {
        files.insert(job.params.file_of(task, 0), Arc::clone(&written));
    }
    tokio::time::sleep(pause).await;
    let start = std::time::SystemTime::now();
    let read = self::read(&job, 0, &files, deadline, Progress::Silent).await?;
    let read = TimedPhase {
        start,
        end: std::time::SystemTime::now(),
        result: read.result,
    };
    remove(&job, 0, &mut files).await?;
    tokio::time::sleep(pause).await;
    Ok([write, read])
}
