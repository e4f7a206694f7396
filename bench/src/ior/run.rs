//! `iopath bench ior`, start to end: check the options (and the `-f` script's tests), start
//! the stack once, then for each test measure the disk baselines, run IOR's repetitions
//! (write, read back with every word checked, remove), print IOR's output and the ratios;
//! stop the stack.
//!
//! Two streams, as IOR has: the results (IOR's text, CSV or JSON) go to `-O summaryFile=` or
//! standard output; the log lines (`-v`, stonewalling, warnings) go to standard output, or to
//! standard error when standard output carries CSV or JSON that scripts parse. The progress
//! line is always on standard error.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::{Instant, SystemTime};

use super::baseline;
use super::params::{self, IorOptions, IorParams, SummaryFormat, tasks_per_node};
use super::phase::{self, Files, Job, Progress};
use super::report::{
    self, Baselines, IopathFacts, PhaseResult, Ratios, RunFacts, RunInfo, TestInfo, TestReport,
};
use crate::error::BenchError;
use crate::fio;
use crate::prediction::{self, NotPredicted, WriterFlow};
use iopath_client::Client;
use iopath_stack::live;
use iopath_stack::runtime::{Launcher, Mode, RunningStack, StorageDir};
use iopath_stack::schema::{Role, RoleName, Stack};

/// What is real in this benchmark, said with every result after what the stack models.
const REAL: &str = "real bytes through the fabric, real files, O_DIRECT writes and fsyncs on \
                    the file system under test";

/// What was modeled and what real: `nothing: real bytes ...`, or the stack's modeled links
/// first; and the tori that are only recorded.
fn modeled(stack: &Stack) -> String {
    let recorded: Vec<String> = stack
        .networks
        .iter()
        .enumerate()
        .filter(|(_, n)| n.torus.is_some() && !n.hop_by_hop)
        .map(|(k, _)| stack.network_name(k))
        .collect();
    let recorded = if recorded.is_empty() {
        String::new()
    } else {
        format!(
            "; the torus coordinates of {} are recorded, not modeled",
            recorded.join(", ")
        )
    };
    if stack.is_modeled() {
        format!("{}; {REAL}{recorded}", stack.modeled())
    } else {
        format!("nothing: {REAL}{recorded}")
    }
}

/// Everything a run measured.
#[derive(Debug)]
pub struct IorOutcome {
    /// The run.
    pub run: RunInfo,
    /// Each test, in order.
    pub tests: Vec<TestReport>,
    /// The stack and what was modeled.
    pub facts: RunFacts,
}

/// Runs `iopath bench ior`, writing IOR's results to `out` (or the summary file) as it goes
/// (text, CSV) or at the end (JSON), with `command_line` as IOR's "Command line"; the progress
/// goes where `progress` says. `launcher` starts node processes in processes mode (default:
/// this program's `node`).
pub async fn measure(
    args: &IorOptions,
    command_line: &str,
    out: &mut dyn Write,
    progress: Progress,
    launcher: Option<&Launcher>,
) -> Result<IorOutcome, BenchError> {
    let tests = args.tests()?;
    let first = tests.first().ok_or_else(|| BenchError::Refused {
        why: "no test to run".into(),
    })?;
    let stack = args.choice.load_or_attached(args.attach.as_deref())?;
    let client_nodes = stack.nodes_of(RoleName::Client).len() as u32;
    if client_nodes == 0 {
        return Err(BenchError::BadOption {
            option: "--stack".into(),
            why: format!("{} has no client nodes to run tasks on", stack.origin),
        });
    }
    for test in &tests {
        test.check_tasks(test.tasks.unwrap_or(client_nodes))?;
    }
    // The summary file is made before anything runs, so that a path that cannot be written
    // is said at once.
    let mut summary_file = match &first.summary_file {
        Some(path) => Some(std::fs::File::create(path).map_err(|e| {
            BenchError::io(format!("-O summaryFile: create {}", path.display()), e)
        })?),
        None => None,
    };
    let format = first.format;
    let mut stderr = std::io::stderr();
    let streams = match summary_file.as_mut() {
        Some(file) => Streams::two(file, out),
        // One stream: IOR's log lines fall among its results, as IOR prints them.
        None if format == SummaryFormat::Text => Streams::one(out),
        None => Streams::two(out, &mut stderr),
    };
    measure_on(
        args,
        tests,
        stack,
        command_line,
        streams,
        progress,
        launcher,
    )
    .await
}

/// Where the results and the log lines go.
struct Streams<'a> {
    results: &'a mut dyn Write,
    log: Option<&'a mut dyn Write>,
}

impl<'a> Streams<'a> {
    fn one(out: &'a mut dyn Write) -> Self {
        Streams {
            results: out,
            log: None,
        }
    }

    fn two(results: &'a mut dyn Write, log: &'a mut dyn Write) -> Self {
        Streams {
            results,
            log: Some(log),
        }
    }

    /// Writes results. A write that fails ends the run with the reason: results that cannot
    /// be written are lost (`/dev/full`, a full quota), and a reader that went away (`| head`)
    /// ends it at the next write, as SIGPIPE ends IOR.
    fn result(&mut self, text: &str) -> Result<(), BenchError> {
        write_whole(&mut *self.results, text, "write the results")
    }

    /// Writes log lines, with the same care as results: in text format they are among them.
    fn log(&mut self, text: &str) -> Result<(), BenchError> {
        let to: &mut dyn Write = match self.log.as_mut() {
            Some(log) => *log,
            None => self.results,
        };
        write_whole(to, text, "write the log lines")
    }
}

/// Writes `text` to `to` and flushes it, or says what failed.
fn write_whole(to: &mut dyn Write, text: &str, what: &str) -> Result<(), BenchError> {
    to.write_all(text.as_bytes())
        .and_then(|()| to.flush())
        .map_err(|e| BenchError::system(what, e))
}

#[allow(clippy::too_many_arguments)] // one call site: measure's parts, named
async fn measure_on(
    args: &IorOptions,
    tests: Vec<IorParams>,
    stack: Stack,
    command_line: &str,
    mut streams: Streams<'_>,
    progress: Progress,
    launcher: Option<&Launcher>,
) -> Result<IorOutcome, BenchError> {
    let mode = Mode::of(args.attach.is_some(), args.processes);
    let parent: PathBuf = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let storage = StorageDir::temporary("bench-ior", Some(&parent))?;
    note(
        progress,
        &format!(
            "measuring in {} (the stack's storage and the disk baseline; removed at the end)",
            storage.path().display()
        ),
    );
    let started = Instant::now();
    // The live view reads each node process's /metrics.
    let with_metrics = match (args.web, mode) {
        (Some(_), Mode::Processes) => Some(match launcher {
            Some(l) => l.clone().with_metrics(),
            None => Launcher::this_program()?.with_metrics(),
        }),
        _ => None,
    };
    let launcher = with_metrics.as_ref().or(launcher);
    let running = RunningStack::start(stack, mode, storage, launcher).await?;
    note(
        progress,
        &format!(
            "started {} ({}) in {:.0} ms",
            running.stack().name,
            mode.name(),
            started.elapsed().as_secs_f64() * 1000.0
        ),
    );
    let live = match args.web {
        Some(addr) => {
            // The program as its name, not where it lies on this machine.
            let args = command_line.split_once(' ').map_or("", |(_, rest)| rest);
            let workload = format!("IOR: iopath {args}");
            match live::serve(addr, live::view_of(&running, &workload)).await {
                Ok(live) => {
                    note(progress, &format!("live view: {}", live.url()));
                    Some(live)
                }
                Err(e) => {
                    let _ = running.stop().await;
                    return Err(e.into());
                }
            }
        }
        None => None,
    };
    let outcome = match on_stack(&running, tests, command_line, &mut streams, progress).await {
        // A failure in a stack of processes may be a node's loss: name it, not its symptom
        // ("every route to tcp1 is down").
        Err(e) if running.mode() != Mode::Embedded => {
            let gone = running.gone().await;
            if gone.is_empty() {
                Err(e)
            } else {
                Err(BenchError::NodesGone {
                    gone,
                    source: Box::new(e),
                })
            }
        }
        outcome => outcome,
    };
    if let Some(live) = live {
        live.end(match &outcome {
            Ok(_) => "the benchmark finished",
            Err(_) => "the benchmark failed",
        })
        .await;
    }
    let stopped = running.stop().await;
    let outcome = outcome?;
    stopped?;
    Ok(outcome)
}

fn note(progress: Progress, text: &str) {
    if progress == Progress::Stderr {
        eprintln!("{text}");
    }
}

/// What the client library talks to, in words.
fn api_version(stack: &Stack) -> String {
    let clients = stack.nodes_of(RoleName::Client);
    let through_fyod = clients
        .iter()
        .any(|&c| matches!(stack.nodes[c].role, Role::Client(s) if s.forwarder.is_some()));
    let routed = !stack.routes.is_empty();
    format!(
        "iopath client library {}{}",
        if through_fyod {
            "through fyod forwarders"
        } else {
            "straight to the storage servers"
        },
        if routed { ", through LNET routers" } else { "" }
    )
}

/// The client library on the first `nodes` client nodes, connecting those not yet connected.
async fn clients_for(
    running: &RunningStack,
    connected: &mut Vec<Client>,
    nodes: u32,
) -> Result<Vec<Client>, BenchError> {
    let client_nodes = running.clients();
    for node in client_nodes
        .iter()
        .take(nodes as usize)
        .skip(connected.len())
    {
        connected.push(running.connect(node).await?);
    }
    Ok(connected[..nodes as usize].to_vec())
}

/// The baselines for a test's shape: the raw disk (iopath's writer), fio, loopback TCP.
async fn baselines(
    running: &RunningStack,
    params: &IorParams,
    tasks: u32,
    progress: Progress,
) -> Result<Baselines, BenchError> {
    let dir = running.storage().path();
    let bytes_per_task = params.block_size_bytes * params.segments;
    let t = params.transfer_size_bytes;
    note(
        progress,
        "baseline: raw disk writes and reads (iopath's io_uring writer)",
    );
    let disk = baseline::disk(dir, tasks, bytes_per_task, t, progress).await?;
    let fio = if t.is_multiple_of(fio::FIO_ALIGN_BYTES) {
        note(progress, "baseline: fio, if installed");
        baseline::fio(dir, tasks, bytes_per_task, t).await
    } else {
        Err("fio's O_DIRECT writes need a transfer size that is a multiple of 4 KiB".into())
    };
    let tcp = if running.mode() == Mode::Processes {
        note(progress, "baseline: loopback TCP, one stream");
        Some(baseline::loopback_tcp(params.aggregate_bytes(tasks), t).await?)
    } else {
        None
    };
    Ok(Baselines {
        disk_write_mib_s: disk.write_mib_s,
        disk_read_mib_s: disk.read_mib_s,
        disk_write_each_mib_s: vec![disk.write_mib_s],
        disk_read_each_mib_s: vec![disk.read_mib_s],
        disk_how: format!(
            "iopath's raw {} writer: {tasks} writers x {} in {} requests, each from its own buffer{}, O_DIRECT, fdatasync at the end; best of before and after the test{}",
            disk.engine,
            report::human_base_two(bytes_per_task),
            report::human_base_two(t),
            if disk.files < tasks as usize {
                format!(
                    ", into {} files (a file per writer would pass the open-file limit)",
                    disk.files
                )
            } else {
                String::new()
            },
            if running.mode() == Mode::Attached {
                "; on this host, where the clients run: the storage servers' disks are on their own hosts"
            } else {
                ""
            }
        ),
        fio_write_mib_s: fio.as_ref().ok().map(|(m, _)| *m),
        fio_note: match &fio {
            Ok((_, command)) => command.clone(),
            Err(why) => why.clone(),
        },
        tcp_mib_s: tcp,
    })
}

async fn journal_commits(running: &RunningStack) -> Result<u64, BenchError> {
    Ok(iopath_stack::journal::targets(running)
        .await?
        .iter()
        .map(|j| j.commits)
        .sum())
}

async fn on_stack(
    running: &RunningStack,
    tests: Vec<IorParams>,
    command_line: &str,
    streams: &mut Streams<'_>,
    progress: Progress,
) -> Result<IorOutcome, BenchError> {
    let stack = running.stack();
    let run = RunInfo {
        began: SystemTime::now(),
        command_line: command_line.to_owned(),
        machine: report::machine(),
        stack: format!(
            "{} ({}), storage in {}",
            stack.name,
            running.mode().describe(),
            running.storage().path().display()
        ),
        api_version: api_version(stack),
    };
    let facts = RunFacts {
        stack: stack.name.clone(),
        mode: running.mode().name().to_owned(),
        modeled: modeled(stack),
    };
    let format = tests.first().map_or(SummaryFormat::Text, |t| t.format);
    if format == SummaryFormat::Text {
        streams.result(&report::header_text(&run))?;
        streams.result(&report::run_facts_text(&facts))?;
    }
    let client_nodes = running.clients().len() as u32;
    let mut connected = Vec::new();
    let mut files = Files::new();
    let mut stamp = 0;
    let mut reports = Vec::new();
    let mut measured = Measured::new();
    // The tests; whether they end well or not, the clients end after them (below).
    let tested = async {
        for params in tests {
            if !reports.is_empty() && !params.inter_test_delay.is_zero() {
                note(
                    progress,
                    &format!(
                        "waiting {} s before test {} (interTestDelay)",
                        params.inter_test_delay.as_secs(),
                        params.test_id
                    ),
                );
                tokio::time::sleep(params.inter_test_delay).await;
            }
            let tasks = params.tasks.unwrap_or(client_nodes);
            let nodes = tasks.min(client_nodes);
            let clients = clients_for(running, &mut connected, nodes).await?;
            let report = one_test(
                running,
                &run,
                params,
                tasks,
                clients,
                &mut files,
                &mut stamp,
                &mut measured,
                streams,
                progress,
            )
            .await?;
            reports.push(report);
        }
        Ok::<(), BenchError>(())
    }
    .await;
    // The tasks end as a program does: each client commits what its servers acknowledged and
    // disconnects, so nothing written lives only in this process's memory when it exits —
    // after a failed test too: a client left connected stays on its servers' lists, bound to
    // this address, and the same compute node attached from another is refused until they
    // restart. The test's own error comes first.
    let ended = phase::end(&connected).await;
    tested?;
    ended?;
    let finished = SystemTime::now();
    match format {
        SummaryFormat::Text => {
            let tests: Vec<(&TestInfo, &[PhaseResult])> = reports
                .iter()
                .map(|r| (&r.info, r.results.as_slice()))
                .collect();
            streams.result(&report::summary_text(&tests, finished))?;
        }
        SummaryFormat::Json => {
            let json = report::json_report(&run, &reports, finished, facts.clone());
            let encoded = serde_json::to_string_pretty(&json)
                .map_err(|e| BenchError::io("encode the JSON report", e))?;
            streams.result(&format!("{encoded}\n"))?;
        }
        SummaryFormat::Csv => {
            streams.log(&report::run_facts_text(&facts))?;
        }
    }
    Ok(IorOutcome {
        run,
        tests: reports,
        facts,
    })
}

/// The baselines measured so far in the run, by test shape (tasks, bytes per task, transfer
/// size): a script's tests of one shape share one measurement.
type Measured = std::collections::HashMap<(u32, u64, u64), Baselines>;

/// Runs one test: its baselines (unless an earlier test of its shape measured them), its
/// repetitions, its lines.
#[allow(clippy::too_many_arguments)] // one call site: the run's state, named
async fn one_test(
    running: &RunningStack,
    run: &RunInfo,
    params: IorParams,
    tasks: u32,
    clients: Vec<Client>,
    files: &mut Files,
    stamp: &mut u32,
    measured: &mut Measured,
    streams: &mut Streams<'_>,
    progress: Progress,
) -> Result<TestReport, BenchError> {
    let nodes = clients.len() as u32;
    let bytes_per_task = params.block_size_bytes * params.segments;
    let shape = (tasks, bytes_per_task, params.transfer_size_bytes);
    // The baselines first, on the idle stack, with this test's shape.
    let earlier = measured.get(&shape).cloned();
    let mut baselines = match &earlier {
        Some(b) => {
            note(
                progress,
                "baseline: as measured for an earlier test of this shape",
            );
            b.clone()
        }
        None => baselines(running, &params, tasks, progress).await?,
    };
    // IOR's `FS` line: the file system as its clients see it.
    let fs = clients[0].statfs().await.ok().map(|targets| {
        targets
            .iter()
            .fold(report::FsSize::default(), |sum, (_, c)| report::FsSize {
                total_bytes: sum.total_bytes + c.total_bytes,
                free_bytes: sum.free_bytes + c.free_bytes,
                files: sum.files + c.files,
                files_free: sum.files_free + c.files_free,
            })
    });
    let info = TestInfo {
        fs,
        began: SystemTime::now(),
        params: params.clone(),
        tasks,
        nodes,
        tasks_per_node: tasks_per_node(tasks, nodes),
        seed: SystemTime::now()
            .duration_since(SystemTime::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64),
    };
    let verbose = params.verbose;
    if verbose >= 1 {
        streams.log(&format!("Participating tasks: {tasks}\n"))?;
        if params.reorder_tasks {
            streams.log("Using reorderTasks '-C' (useful to avoid read cache in client)\n")?;
        }
        if params.random_offset {
            streams.log(&format!("Random offsets: seed {}\n", info.seed))?;
        }
    }
    streams.result(&report::test_header(run, &info))?;
    phase::make_parents(&clients[0], &params.test_file).await?;
    let commits_before = journal_commits(running).await?;
    let job = Arc::new(Job {
        buffers: super::buffers::pool(params.transfer_size_bytes as usize),
        params: params.clone(),
        tasks,
        clients,
        seed: info.seed,
    });
    // IOR's maxTimeDuration (-T) is looked at before each phase, never inside one.
    let test_deadline = params.max_duration.map(|d| Instant::now() + d);
    let test_over = || test_deadline.is_some_and(|d| Instant::now() >= d);
    let over_line = |iteration: u32| {
        format!(
            "WARNING: maximum time duration of {} min reached: {iteration} of {} repetitions ran\n",
            params.max_duration.map_or(0, |d| d.as_secs() / 60),
            params.repetitions
        )
    };
    let mut results = Vec::new();
    let (mut verified_bytes, mut unchecked_bytes) = (0, 0);
    let mut account = |phase: &phase::Phase| {
        verified_bytes += phase.verified_bytes;
        unchecked_bytes += phase.result.bytes - phase.verified_bytes;
    };
    for iteration in 0..params.repetitions {
        if test_over() {
            streams.log(&over_line(iteration))?;
            break;
        }
        let show = |streams: &mut Streams<'_>, phase: &phase::Phase| {
            // IOR says the stonewall as the phase ends its transfers, before its row.
            if let Some(wall) = phase.result.stonewall {
                if verbose >= 1 {
                    streams.log(&report::task_pairs_lines(&phase.tasks))?;
                }
                streams.log(&wall.line())?;
            }
            streams.result(&report::result_row(&phase.result, &info))?;
            if verbose >= 2 {
                streams.log(&report::task_lines(
                    phase.result.access,
                    iteration,
                    &phase.tasks,
                ))?;
            }
            Ok::<(), BenchError>(())
        };
        if params.write {
            *stamp += 1;
            if verbose >= 1 {
                streams.log(&format!(
                    "Commencing write performance test: {}\n",
                    report::ctime(SystemTime::now())
                ))?;
            }
            let (phase, written) =
                phase::write(&job, iteration, *stamp, params.deadline, progress).await?;
            show(streams, &phase)?;
            if let Some(line) = flow_check(running, &job, iteration, &phase).await {
                streams.log(&line)?;
            }
            let written = Arc::new(written);
            for task in 0..tasks {
                files.insert(params.file_of(task, iteration), Arc::clone(&written));
            }
            results.push(phase.result);
        }
        if (params.read || params.write) && test_over() {
            // The read (or the check of the write) does not start once the test's time is up.
            streams.log(&over_line(iteration))?;
            break;
        }
        if params.read {
            if verbose >= 1 {
                streams.log(&format!(
                    "Commencing read performance test: {}\n",
                    report::ctime(SystemTime::now())
                ))?;
            }
            let phase = phase::read(&job, iteration, files, params.deadline, progress).await?;
            show(streams, &phase)?;
            account(&phase);
            results.push(phase.result);
        } else if params.write {
            // Write-only tests are still read back and checked, untimed (IOR's checkWrite).
            if verbose >= 1 {
                streams.log(&format!(
                    "Verifying contents of the file(s) just written.\n{}\n",
                    report::ctime(SystemTime::now())
                ))?;
            }
            let phase = phase::read(&job, iteration, files, None, Progress::Silent).await?;
            account(&phase);
        }
        if !params.keep_file {
            let seconds = phase::remove(&job, iteration, files).await?;
            if params.format == SummaryFormat::Text {
                streams.result(&report::remove_row(seconds, iteration))?;
            }
        }
    }
    if let Some(line) = report::pairs_accessed_line(&results) {
        streams.log(&line)?;
    }
    let commits_after = journal_commits(running).await?;
    // The disk again, now that the stack is idle: a shared machine's disk drifts, and the
    // ratio is taken against the better of the two measurements.
    if earlier.is_none() {
        note(progress, "baseline: raw disk again, after the test");
        let again = baseline::disk(
            running.storage().path(),
            tasks,
            bytes_per_task,
            params.transfer_size_bytes,
            progress,
        )
        .await?;
        baselines.disk_write_each_mib_s.push(again.write_mib_s);
        baselines.disk_read_each_mib_s.push(again.read_mib_s);
        baselines.disk_write_mib_s = baselines.disk_write_mib_s.max(again.write_mib_s);
        baselines.disk_read_mib_s = baselines.disk_read_mib_s.max(again.read_mib_s);
        measured.insert(shape, baselines.clone());
    }
    let ratios = Ratios::of(&results, &baselines);
    let facts = IopathFacts {
        verified_bytes,
        unchecked_bytes,
        journal_commits: Some(commits_after.saturating_sub(commits_before)),
        baselines,
        ratios,
    };
    match params.format {
        SummaryFormat::Text => {
            streams.result(&report::max_lines(&results))?;
            streams.result(&report::facts_text(params.test_id, &facts))?;
        }
        SummaryFormat::Csv => streams.log(&report::facts_text(params.test_id, &facts))?,
        SummaryFormat::Json => {}
    }
    Ok(TestReport {
        info,
        results,
        facts,
    })
}

/// On a stack with a torus crossed hop by hop, the flow model's prediction for the write phase
/// just run (each task's file on the targets its layout names) beside what was measured, as a
/// line for the log; `None` on any other stack.
async fn flow_check(
    running: &RunningStack,
    job: &Job,
    iteration: u32,
    phase: &phase::Phase,
) -> Option<String> {
    let stack = running.stack();
    if !stack.networks.iter().any(|n| n.hop_by_hop) {
        return None;
    }
    let client_nodes = running.clients();
    let mut writers = Vec::new();
    for task in 0..job.tasks {
        let node = params::node_of(task, job.tasks, job.nodes()) as usize;
        let path = job.params.file_of(task, iteration);
        let targets = match job.clients[node].open(&path).await {
            Ok(file) => {
                let targets = file.layout().objects().iter().map(|o| o.target).collect();
                let _ = file.close().await;
                targets
            }
            Err(e) => return Some(format!("flow model: not predicted: open {path}: {e}\n")),
        };
        writers.push(WriterFlow {
            client: client_nodes.get(node)?.index,
            targets,
        });
    }
    let prediction = match prediction::predict(stack, &writers) {
        Ok(p) => p,
        Err(NotPredicted(why)) => return Some(format!("flow model: not predicted: {why}\n")),
    };
    let t = job.params.transfer_size_bytes as f64;
    let mib = |bytes_s: f64| bytes_s / f64::from(1u32 << 20);
    let rate = |task: &report::TaskTimes| {
        let seconds = task
            .transfer_end
            .saturating_duration_since(task.transfer_start)
            .as_secs_f64();
        if seconds > 0.0 {
            task.calls as f64 * t / seconds
        } else {
            0.0
        }
    };
    let start = phase.tasks.iter().map(|x| x.transfer_start).min()?;
    let end = phase.tasks.iter().map(|x| x.transfer_end).max()?;
    let bytes: f64 = phase.tasks.iter().map(|x| x.calls as f64 * t).sum();
    let measured = bytes / end.saturating_duration_since(start).as_secs_f64().max(1e-9);
    let list = |rates: &mut dyn Iterator<Item = f64>| {
        rates
            .map(|r| format!("{:.1}", mib(r)))
            .collect::<Vec<_>>()
            .join(" ")
    };
    Some(format!(
        "flow model (the topology crate's, on the same {} torus, NICs and disks; steady state, \
         host time): write {:.2} MiB/s, measured {:.2} MiB/s, measured/model {:.2}\n\
         per task, MiB/s: model {}; measured {}\n",
        prediction.network,
        mib(prediction.aggregate_bytes_s),
        mib(measured),
        measured / prediction.aggregate_bytes_s,
        list(&mut prediction.writer_bytes_s.iter().copied()),
        list(&mut phase.tasks.iter().map(rate)),
    ))
}
