//! One IOR phase: every task writes (or reads back and checks) its blocks at once, through the
//! client library on its client node, timed as IOR times it.
//!
//! A task is IOR's rank: it opens its file (in a shared file, task 0 creates it and the others
//! open it once it exists), makes its transfers one at a time — a blocking call each, as
//! IOR's POSIX backend does — and closes (with `-e`, after an fsync). The phase's times are
//! taken across tasks: open from the first task's start to the last task's open, and so on.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_client::{Checksummed, Client, ClientError, File, StripeRequest};
use tokio::sync::{Barrier, watch};
use tokio::task::JoinSet;

use iopath_fabric::aligned::BufferPool;

use super::buffers;
use super::params::{Api, IorParams, node_of, reader_source};
use super::report::{Access, PhaseResult};
use crate::error::BenchError;
use iopath_stack::pattern;

/// How often the progress line is redrawn on a terminal.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(500);

/// What every task of a run shares.
#[derive(Debug)]
pub struct Job {
    /// The options.
    pub params: IorParams,
    /// Tasks.
    pub tasks: u32,
    /// The client library on each client node the tasks use, in node order.
    pub clients: Vec<Client>,
    /// Transfer buffers, used again once the client library lets go of them.
    pub buffers: Arc<BufferPool>,
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
}

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
struct TaskTimes {
    open_start: Instant,
    open_end: Instant,
    transfer_start: Instant,
    transfer_end: Instant,
    close_start: Instant,
    close_end: Instant,
    call_seconds: f64,
    calls: u64,
}

/// Runs the write phase of `iteration`.
pub async fn write(
    job: &Arc<Job>,
    iteration: u32,
    progress: Progress,
) -> Result<PhaseResult, BenchError> {
    run(job, Access::Write, iteration, progress).await
}

/// Runs the read phase of `iteration`, checking every word read.
pub async fn read(
    job: &Arc<Job>,
    iteration: u32,
    progress: Progress,
) -> Result<PhaseResult, BenchError> {
    run(job, Access::Read, iteration, progress).await
}

async fn run(
    job: &Arc<Job>,
    access: Access,
    iteration: u32,
    progress: Progress,
) -> Result<PhaseResult, BenchError> {
    let total = job.params.aggregate_bytes(job.tasks);
    let done = Arc::new(AtomicU64::new(0));
    let barrier = Arc::new(Barrier::new(job.tasks as usize));
    let (created_tx, created_rx) = watch::channel(None::<Result<(), String>>);
    let created_tx = Arc::new(created_tx);
    let mut tasks = JoinSet::new();
    for task in 0..job.tasks {
        let (job, done, barrier) = (Arc::clone(job), Arc::clone(&done), Arc::clone(&barrier));
        let (created_tx, created_rx) = (Arc::clone(&created_tx), created_rx.clone());
        tasks.spawn(async move {
            match access {
                Access::Write => {
                    write_task(
                        &job,
                        task,
                        iteration,
                        &barrier,
                        &created_tx,
                        created_rx,
                        &done,
                    )
                    .await
                }
                Access::Read => read_task(&job, task, iteration, &barrier, &done).await,
            }
        });
    }
    let label = format!("ior: {} iteration {iteration}", access.name());
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
                match joined {
                    Ok(Ok(t)) => times.push(t),
                    Ok(Err(e)) => { first_error.get_or_insert(e); }
                    Err(e) => { first_error.get_or_insert(BenchError::io("an IOR task", e)); }
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
    let result = aggregate(access, iteration, total, &times);
    progress.show(
        &format!(
            "{label}: {} MiB in {:.2} s, {:.0} MiB/s{}",
            total >> 20,
            result.total_s,
            result.bw_mib_s(),
            if access == Access::Read {
                ", every word checked"
            } else {
                ""
            }
        ),
        true,
    );
    Ok(result)
}

/// IOR's reduction: each interval from the earliest start to the latest end over the tasks.
fn aggregate(access: Access, iteration: u32, bytes: u64, times: &[TaskTimes]) -> PhaseResult {
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
    }
}

/// The file offsets of `task`'s transfers, in IOR's order: segment by segment, each block
/// front to back.
fn transfer_offsets(p: &IorParams, tasks: u32, task: u32) -> impl Iterator<Item = u64> + '_ {
    let per_block = p.transfers_per_block();
    (0..p.segments)
        .flat_map(move |segment| (0..per_block).map(move |k| p.offset_of(tasks, task, segment, k)))
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

async fn write_task(
    job: &Job,
    task: u32,
    iteration: u32,
    barrier: &Barrier,
    created_tx: &watch::Sender<Option<Result<(), String>>>,
    mut created_rx: watch::Receiver<Option<Result<(), String>>>,
    done: &AtomicU64,
) -> Result<TaskTimes, BenchError> {
    let p = &job.params;
    let client = job.client_of(task);
    let path = p.file_of(task);
    let io = |what: &str, e: ClientError| BenchError::io(format!("task {task}: {what} {path}"), e);
    barrier.wait().await;
    let open_start = Instant::now();
    let file = if p.file_per_proc {
        create_fresh(&client, &path)
            .await
            .map_err(|e| io("create", e))?
    } else if task == 0 {
        // Task 0 makes the shared file; the others wait for it, then open it.
        let made = create_fresh(&client, &path).await;
        let _ = created_tx.send(Some(made.as_ref().map(drop).map_err(ToString::to_string)));
        made.map_err(|e| io("create", e))?
    } else {
        let outcome = created_rx
            .wait_for(Option::is_some)
            .await
            .map_err(|_| BenchError::io(format!("task {task}: open {path}"), "task 0 stopped"))?
            .clone();
        if let Some(Err(why)) = outcome {
            return Err(BenchError::io(
                format!("task {task}: open {path}"),
                format!("task 0 could not create it: {why}"),
            ));
        }
        client.open(&path).await.map_err(|e| io("open", e))?
    };
    let open_end = Instant::now();
    let transfer_start = Instant::now();
    let mut call_seconds = 0.0;
    let mut calls = 0;
    let t = p.transfer_size_bytes;
    // Checksummed as it is made, as the client library would checksum it anyway: the pass
    // over the data happens while each piece is in cache, off the write's critical path.
    let kind = client.checksum();
    let make = |offset: u64| {
        let mut crc = kind.empty();
        let data = buffers::filled(&job.buffers, t as usize, |buffer| {
            crc = pattern::fill_checksummed(buffer, task, iteration, offset, kind);
        });
        Checksummed::new(data, kind, crc)
    };
    // Without -l every transfer carries the same bytes: one buffer, filled once, as IOR's.
    let same_for_all = (!p.store_file_offset).then(|| make(0));
    let make_for = |offset: u64| match &same_for_all {
        Some(data) => data.clone(),
        None => make(offset),
    };
    let mut offsets = transfer_offsets(p, job.tasks, task).peekable();
    let mut prepared = offsets.peek().map(|&o| make_for(o));
    // Bounded by the task's transfers. The next buffer is filled while this write is in
    // flight, so making the data costs the task no time of its own.
    while let Some(offset) = offsets.next() {
        let data = prepared
            .take()
            .expect("a buffer is prepared for every transfer");
        let following = offsets.peek().copied();
        let call = Instant::now();
        let (written, next) = tokio::join!(
            async {
                let r = write_call(&file, p.api, offset, data).await;
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
    let close_start = Instant::now();
    if p.fsync {
        file.fsync().await.map_err(|e| io("fsync", e))?;
    }
    file.close().await.map_err(|e| io("close", e))?;
    Ok(TaskTimes {
        open_start,
        open_end,
        transfer_start,
        transfer_end,
        close_start,
        close_end: Instant::now(),
        call_seconds,
        calls,
    })
}

async fn read_task(
    job: &Job,
    task: u32,
    iteration: u32,
    barrier: &Barrier,
    done: &AtomicU64,
) -> Result<TaskTimes, BenchError> {
    let p = &job.params;
    let client = job.client_of(task);
    // With -C the task reads what the task one node over wrote.
    let source = reader_source(task, job.tasks, job.nodes(), p.reorder_tasks);
    let path = p.file_of(source);
    let io = |what: &str, e: ClientError| BenchError::io(format!("task {task}: {what} {path}"), e);
    barrier.wait().await;
    let open_start = Instant::now();
    let file = client.open(&path).await.map_err(|e| io("open", e))?;
    let open_end = Instant::now();
    let transfer_start = Instant::now();
    let mut call_seconds = 0.0;
    let mut calls = 0;
    let t = p.transfer_size_bytes;
    let verify = |data: Bytes, offset: u64| -> Result<(), BenchError> {
        if data.len() as u64 != t {
            return Err(BenchError::Verify {
                what: format!(
                    "task {task}: {path} at {offset}: read {} bytes, {t} were written",
                    data.len()
                ),
            });
        }
        let at = p.pattern_offset(offset);
        pattern::check(&data, source, iteration, at).map_err(|mut m| {
            // Report where in the file, whatever offset the pattern was made for.
            m.file_offset = m.file_offset - at + offset;
            BenchError::Verify {
                what: format!("task {task} reading task {source}'s data in {path}: {m}"),
            }
        })
    };
    let mut unchecked: Option<(Bytes, u64)> = None;
    // Bounded by the task's transfers. Each buffer is checked while the next read is in
    // flight; the last one after the loop.
    for offset in transfer_offsets(p, job.tasks, source) {
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
        checked.transpose()?;
        done.fetch_add(t, Ordering::Relaxed);
        unchecked = Some((data, offset));
    }
    if let Some((data, at)) = unchecked {
        verify(data, at)?;
    }
    let transfer_end = Instant::now();
    let close_start = Instant::now();
    file.close().await.map_err(|e| io("close", e))?;
    Ok(TaskTimes {
        open_start,
        open_end,
        transfer_start,
        transfer_end,
        close_start,
        close_end: Instant::now(),
        call_seconds,
        calls,
    })
}

/// Removes the files of a run (IOR's `remove` line): each task its own with -F, task 0 the
/// shared one. Returns the seconds it took.
pub async fn remove(job: &Arc<Job>) -> Result<f64, BenchError> {
    let started = Instant::now();
    let owners: Vec<u32> = if job.params.file_per_proc {
        (0..job.tasks).collect()
    } else {
        vec![0]
    };
    let mut tasks = JoinSet::new();
    for task in owners {
        let job = Arc::clone(job);
        tasks.spawn(async move {
            let path = job.params.file_of(task);
            job.client_of(task)
                .unlink(&path)
                .await
                .map_err(|e| BenchError::io(format!("task {task}: remove {path}"), e))
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
pub async fn end(job: &Job) -> Result<(), BenchError> {
    for client in &job.clients {
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
