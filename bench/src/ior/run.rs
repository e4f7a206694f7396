//! `iopath bench ior`, start to end: check the options, measure the baselines, start the
//! stack, run IOR's repetitions (write, read back with every word checked, remove), print
//! IOR's output and the ratios, stop the stack.

use std::io::Write;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::SystemTime;

use super::baseline;
use super::params::{IorOptions, IorParams, SummaryFormat, tasks_per_node};
use super::phase::{self, Job, Progress};
use super::report::{self, Baselines, IopathFacts, PhaseResult, Ratios, RunInfo};
use crate::error::BenchError;
use crate::fio;
use iopath_stack::runtime::{Launcher, Mode, RunningStack, StorageDir};
use iopath_stack::schema::{Role, RoleName, Stack};

/// Everything a run measured.
#[derive(Debug)]
pub struct IorOutcome {
    /// The run's facts.
    pub info: RunInfo,
    /// Every phase of every repetition.
    pub results: Vec<PhaseResult>,
    /// Baselines, ratios, verification, journals.
    pub facts: IopathFacts,
}

/// Runs `iopath bench ior`, writing IOR's output to `out` as it goes (text) or at the end
/// (JSON), with `command_line` as IOR's "Command line"; the progress goes where `progress`
/// says. `launcher` starts node processes in processes mode (default: this program's `node`).
pub async fn measure(
    args: &IorOptions,
    command_line: &str,
    out: &mut dyn Write,
    progress: Progress,
    launcher: Option<&Launcher>,
) -> Result<IorOutcome, BenchError> {
    let params = IorParams::from_options(args)?;
    let stack = args.choice.load()?;
    let client_nodes = stack.nodes_of(RoleName::Client);
    if client_nodes.is_empty() {
        return Err(BenchError::BadOption {
            option: "--stack".into(),
            why: format!("{} has no client nodes to run tasks on", stack.origin),
        });
    }
    let tasks = params.tasks.unwrap_or(client_nodes.len() as u32);
    params.check_tasks(tasks)?;
    let nodes = tasks.min(client_nodes.len() as u32);
    let mode = if args.processes {
        Mode::Processes
    } else {
        Mode::Embedded
    };

    let parent: PathBuf = args.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let storage = StorageDir::temporary("bench-ior", Some(&parent))?;
    note(
        progress,
        &format!(
            "measuring in {} (the stack's storage and the disk baseline; removed at the end)",
            storage.path().display()
        ),
    );

    // The baselines first, so that nothing of the stack competes with them.
    let bytes_per_task = params.block_size_bytes * params.segments;
    let t = params.transfer_size_bytes;
    note(
        progress,
        "baseline: raw disk writes and reads (iopath's io_uring writer)",
    );
    let disk = baseline::disk(storage.path(), tasks, bytes_per_task, t).await?;
    let fio = if t.is_multiple_of(fio::FIO_ALIGN_BYTES) {
        note(progress, "baseline: fio, if installed");
        baseline::fio(storage.path(), tasks, bytes_per_task, t).await
    } else {
        Err("fio's O_DIRECT writes need a transfer size that is a multiple of 4 KiB".into())
    };
    let tcp = if mode == Mode::Processes {
        note(progress, "baseline: loopback TCP, one stream");
        Some(baseline::loopback_tcp(params.aggregate_bytes(tasks), t).await?)
    } else {
        None
    };
    let baselines = Baselines {
        disk_write_mib_s: disk.write_mib_s,
        disk_read_mib_s: disk.read_mib_s,
        disk_write_each_mib_s: vec![disk.write_mib_s],
        disk_read_each_mib_s: vec![disk.read_mib_s],
        disk_how: format!(
            "iopath's raw {} writer: {tasks} writers x {} in {} requests, each from its own buffer, O_DIRECT, fdatasync at the end; best of before and after the run",
            disk.engine,
            report::human_base_two(bytes_per_task),
            report::human_base_two(t)
        ),
        fio_write_mib_s: fio.as_ref().ok().map(|(m, _)| *m),
        fio_note: match &fio {
            Ok((_, command)) => command.clone(),
            Err(why) => why.clone(),
        },
        tcp_mib_s: tcp,
    };

    let started = std::time::Instant::now();
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
    let outcome = on_stack(
        &running,
        params,
        tasks,
        nodes,
        baselines,
        command_line,
        out,
        progress,
    )
    .await;
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

#[allow(clippy::too_many_arguments)] // one call site: the run's parts, named
async fn on_stack(
    running: &RunningStack,
    params: IorParams,
    tasks: u32,
    nodes: u32,
    baselines: Baselines,
    command_line: &str,
    out: &mut dyn Write,
    progress: Progress,
) -> Result<IorOutcome, BenchError> {
    let stack = running.stack();
    let client_nodes = running.clients();
    let mut clients = Vec::new();
    for node in client_nodes.iter().take(nodes as usize) {
        clients.push(running.connect(node).await?);
    }
    let info = RunInfo {
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
        params: params.clone(),
        tasks,
        nodes,
        tasks_per_node: tasks_per_node(tasks, nodes),
    };
    let text = params.format == SummaryFormat::Text;
    let mut print = |s: &str| {
        if text {
            // Output to a closed pipe is not worth failing the run over.
            let _ = out.write_all(s.as_bytes());
            let _ = out.flush();
        }
    };
    print(&report::header_text(&info));
    phase::make_parents(&clients[0], &params.test_file).await?;
    let commits_before: u64 = iopath_stack::journal::targets(running)
        .await?
        .iter()
        .map(|j| j.commits)
        .sum();
    let job = Arc::new(Job {
        buffers: super::buffers::pool(params.transfer_size_bytes as usize),
        params: params.clone(),
        tasks,
        clients,
    });
    let mut results = Vec::new();
    let mut verified_bytes = 0;
    for iteration in 0..params.repetitions {
        if params.write {
            let r = phase::write(&job, iteration, progress).await?;
            print(&report::result_row(&r, &params));
            results.push(r);
        }
        if params.read {
            let r = phase::read(&job, iteration, progress).await?;
            print(&report::result_row(&r, &params));
            verified_bytes += r.bytes;
            results.push(r);
        } else if params.write {
            // Write-only runs are still read back and checked, untimed (IOR's checkWrite).
            let r = phase::read(&job, iteration, Progress::Silent).await?;
            verified_bytes += r.bytes;
        }
        if !params.keep_file && params.write {
            let seconds = phase::remove(&job).await?;
            print(&report::remove_row(seconds, iteration));
        }
    }
    // The tasks end as a program does: each client commits what its servers acknowledged and
    // disconnects, so nothing written lives only in this process's memory when it exits.
    phase::end(&job).await?;
    let commits_after: u64 = iopath_stack::journal::targets(running)
        .await?
        .iter()
        .map(|j| j.commits)
        .sum();
    // The disk again, now that the stack is idle: a shared machine's disk drifts, and the
    // ratio is taken against the better of the two measurements.
    if progress == Progress::Stderr {
        eprintln!("baseline: raw disk again, after the run");
    }
    let mut baselines = baselines;
    let again = baseline::disk(
        running.storage().path(),
        tasks,
        params.block_size_bytes * params.segments,
        params.transfer_size_bytes,
    )
    .await?;
    baselines.disk_write_each_mib_s.push(again.write_mib_s);
    baselines.disk_read_each_mib_s.push(again.read_mib_s);
    baselines.disk_write_mib_s = baselines.disk_write_mib_s.max(again.write_mib_s);
    baselines.disk_read_mib_s = baselines.disk_read_mib_s.max(again.read_mib_s);
    let finished = SystemTime::now();
    let ratios = Ratios::of(&results, &baselines);
    let facts = IopathFacts {
        stack: stack.name.clone(),
        mode: running.mode().name().to_owned(),
        modeled: "nothing: real bytes through the fabric, real files, O_DIRECT writes and \
                  fsyncs on the file system under test; torus coordinates are recorded, not \
                  modeled"
            .to_owned(),
        verified_bytes,
        journal_commits: Some(commits_after.saturating_sub(commits_before)),
        baselines,
        ratios,
    };
    print(&report::max_lines(&results));
    print(&report::summary_text(&info, &results, finished));
    print(&report::facts_text(&facts));
    if !text {
        let json = report::json_report(&info, &results, finished, facts.clone());
        let encoded = serde_json::to_string_pretty(&json)
            .map_err(|e| BenchError::io("encode the JSON report", e))?;
        let _ = writeln!(out, "{encoded}");
    }
    Ok(IorOutcome {
        info,
        results,
        facts,
    })
}
