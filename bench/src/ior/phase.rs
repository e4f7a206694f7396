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
use super::report::{Access, PhaseResult, Stonewall};
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

impl Progress {
    fn show(self, text: &str, last: bool) {
        use std::io::{IsTerminal, Write};
        if self == Progress::Silent {
            return;
        }
        let mut err = std::io::stderr().lock();
        if err.is_terminal() {
            let _ = write!(err, "\r\x1b[2K{text}{}", if last { "\n" } else { "" });
        } else if last {
            let _ = writeln!(err, "{text}");
        }
        let _ = err.flush();
    }
}

/// One task's clock readings and call times.
#[derive(Debug, Clone, Copy)]
pub struct TaskTimes {
    /// The task.
    pub task: u32,
    /// When it began opening its file.
    pub open_start: Instant,
    /// When its file was open.
    pub open_end: Instant,
    /// When its first transfer began.
    pub transfer_start: Instant,
    /// When its last transfer ended.
    pub transfer_end: Instant,
    /// When it began closing.
    pub close_start: Instant,
    /// When its file was closed.
    pub close_end: Instant,
    /// Seconds spent in read or write calls.
    pub call_seconds: f64,
    /// Read or write calls made.
    pub calls: u64,
    /// Whether the deadline stopped it before its last transfer.
    pub stonewalled: bool,
    /// Bytes read back and checked against what was written.
    pub verified_bytes: u64,
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

/// When a timed phase starting now stops starting transfers: the earlier of its stonewalling
/// deadline (`-D`, from the phase's start) and the test's end (`-T`).
pub fn phase_deadline(params: &IorParams, test_deadline: Option<Instant>) -> Option<Instant> {
    let stonewall = params.deadline.map(|d| Instant::now() + d);
    match (stonewall, test_deadline) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// Runs the write phase of `iteration`, its data stamped `stamp`, its tasks starting no
/// transfer after `deadline` (see [`phase_deadline`]). Returns the phase and what it left in
/// the files.
pub async fn write(
    job: &Arc<Job>,
    iteration: u32,
    stamp: u32,
    deadline: Option<Instant>,
    progress: Progress,
) -> Result<(Phase, Written), BenchError> {
    let phase = run(
        job,
        Access::Write,
        iteration,
        progress,
        |job, task, gates, done| {
            let job = Arc::clone(job);
            async move { write_task(&job, task, iteration, stamp, deadline, &gates, &done).await }
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
/// written there, its tasks starting no transfer after `deadline` (none for IOR's untimed
/// check of a write-only test).
pub async fn read(
    job: &Arc<Job>,
    iteration: u32,
    files: &Files,
    deadline: Option<Instant>,
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
        progress,
        move |job, task, gates, done| {
            let (job, sources) = (Arc::clone(job), Arc::clone(&sources));
            async move {
                let written = sources[task as usize].clone();
                read_task(&job, task, iteration, written, deadline, &gates, &done).await
            }
        },
    )
    .await
}

/// The barriers of a phase: every task waits at the start, and with -g between open,
/// transfers and close too.
#[derive(Debug)]
struct Gates {
    barrier: Barrier,
    between: bool,
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
}

async fn run<F, Fut>(
    job: &Arc<Job>,
    access: Access,
    iteration: u32,
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
    let result = aggregate(access, iteration, moved, t, &times);
    let verified_bytes = times.iter().map(|t| t.verified_bytes).sum();
    progress.show(
        &format!(
            "{label}: {} MiB in {:.2} s, {:.0} MiB/s{}{}",
            moved >> 20,
            result.total_s,
            result.bw_mib_s(),
            if result.stonewall.is_some() {
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

/// IOR's reduction: each interval from the earliest start to the latest end over the tasks.
fn aggregate(
    access: Access,
    iteration: u32,
    bytes: u64,
    transfer_size_bytes: u64,
    times: &[TaskTimes],
) -> PhaseResult {
    assert!(!times.is_empty(), "a phase has at least one task");
    let min = |f: fn(&TaskTimes) -> Instant| times.iter().map(f).min().expect("tasks");
    let max = |f: fn(&TaskTimes) -> Instant| times.iter().map(f).max().expect("tasks");
    let span = |a: Instant, b: Instant| b.saturating_duration_since(a).as_secs_f64();
    let calls: u64 = times.iter().map(|t| t.calls).sum();
    let call_seconds: f64 = times.iter().map(|t| t.call_seconds).sum();
    let stonewall = times.iter().any(|t| t.stonewalled).then(|| {
        let pairs = times.iter().map(|t| t.calls);
        Stonewall {
            pairs_min: pairs.clone().min().unwrap_or(0),
            pairs_max: pairs.max().unwrap_or(0),
            tasks: times.len() as u32,
            transfer_size_bytes,
            seconds: span(min(|t| t.transfer_start), max(|t| t.transfer_end)),
            bytes,
        }
    });
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
        stonewall,
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
    deadline: Option<Instant>,
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
    let mut call_seconds = 0.0;
    let mut calls = 0;
    let mut stonewalled = false;
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
    while let Some(offset) = offsets.next() {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            stonewalled = true;
            break;
        }
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
        stonewalled,
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
    deadline: Option<Instant>,
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
    let mut call_seconds = 0.0;
    let mut calls = 0;
    let mut stonewalled = false;
    let mut verified_bytes = 0;
    let t = p.transfer_size_bytes;
    let (offsets, checked) = read_offsets(job, source, written.as_deref());
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
    for offset in offsets {
        if deadline.is_some_and(|d| Instant::now() >= d) {
            stonewalled = true;
            break;
        }
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
        stonewalled,
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
pub async fn end(clients: &[Client]) -> Result<(), BenchError> {
    for client in clients {
        client
            .close()
            .await
            .map_err(|e| BenchError::io("commit the tasks' writes and disconnect", e))?;
    }
    Ok(())
}

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

    #[test]
    fn a_deadline_is_the_earlier_of_the_phase_and_the_test() {
        let options = IorOptions {
            deadline_s: 30,
            ..IorOptions::default()
        };
        let params = IorParams::from_options(&options, 0).unwrap();
        let soon = Instant::now() + Duration::from_secs(1);
        assert_eq!(phase_deadline(&params, Some(soon)), Some(soon));
        let late = Instant::now() + Duration::from_secs(3600);
        let d = phase_deadline(&params, Some(late)).unwrap();
        assert!(d < late && d > Instant::now() + Duration::from_secs(20));
        let none = IorParams::from_options(&IorOptions::default(), 0).unwrap();
        assert_eq!(phase_deadline(&none, None), None);
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
    let until = deadline.map(|d| Instant::now() + d);
    let (write, written) = self::write(&job, 0, stamp, until, Progress::Silent).await?;
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
    let until = deadline.map(|d| Instant::now() + d);
    let read = self::read(&job, 0, &files, until, Progress::Silent).await?;
    let read = TimedPhase {
        start,
        end: std::time::SystemTime::now(),
        result: read.result,
    };
    remove(&job, 0, &mut files).await?;
    tokio::time::sleep(pause).await;
    Ok([write, read])
}
