//! IOR over a stack with a process per server node on loopback TCP: `bench ior --processes`
//! runs with its tasks in this process and loopback TCP measured beside it, and IOR's tasks
//! that have ended lose nothing to storage servers killed after them.
//!
//! The node processes are this test program itself: run as `processes node --stack FILE
//! --name NODE --dir DIR`, it is `iopath node` (the same library function). So this file has
//! a harness of its own (libtest-mimic, which nextest understands).

use std::process::ExitCode;
use std::sync::Arc;

use iopath_bench::ior::IorOptions;
use iopath_bench::ior::phase::Progress;
use iopath_client::Client;
use iopath_stack::StackChoice;
use iopath_stack::testing::processes::{self, client, commits_only_when_forced, launcher, start};
use libtest_mimic::{Arguments, Failed, Trial};

const KIB: u64 = 1 << 10;
const MIB: u64 = 1 << 20;

type Outcome = Result<(), String>;

fn main() -> ExitCode {
    if let Some(code) = processes::run_node_if_asked() {
        return code;
    }
    let trials = vec![
        Trial::test("ior_runs_over_processes", || {
            block_on(ior_runs_over_processes())
        }),
        Trial::test(
            "ior_tasks_that_ended_lose_nothing_to_servers_killed_after_them",
            || block_on(ior_tasks_that_ended_lose_nothing_to_servers_killed_after_them()),
        ),
    ];
    libtest_mimic::run(&Arguments::from_args(), trials).exit_code()
}

fn block_on(test: impl Future<Output = Result<(), String>>) -> Result<(), Failed> {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| Failed::from(e.to_string()))?;
    runtime.block_on(test).map_err(Failed::from)
}

macro_rules! check {
    ($cond:expr, $($arg:tt)*) => {
        if !$cond {
            return Err(format!($($arg)*));
        }
    };
}

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

async fn ior_runs_over_processes() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let options = IorOptions {
        choice: StackChoice {
            preset: Some("spider-mini".into()),
            ..StackChoice::default()
        },
        processes: true,
        write: true,
        read: true,
        file_per_proc: true,
        transfer_size_bytes: 256 * KIB,
        block_size_bytes: MIB,
        tasks: Some(4),
        ior_options: vec!["summaryFormat=JSON".into()],
        dir: Some(dir.path().to_path_buf()),
        ..IorOptions::default()
    };
    let mut out = Vec::new();
    let outcome = iopath_bench::ior::measure(
        &options,
        "ior",
        &mut out,
        Progress::Silent,
        Some(&launcher()?),
    )
    .await
    .map_err(|e| e.to_string())?;
    let test = &outcome.tests[0];
    check!(
        test.results.len() == 2,
        "a write and a read: {:?}",
        test.results
    );
    check!(
        outcome.facts.mode == "processes",
        "{:?}",
        outcome.facts.mode
    );
    check!(
        test.facts.verified_bytes == 4 << 20,
        "every byte read back and checked"
    );
    check!(
        test.facts.baselines.tcp_mib_s.is_some(),
        "loopback TCP measured in the same run"
    );
    check!(
        test.facts.ratios.write_vs_min_disk_tcp.is_some(),
        "the processes ratio"
    );
    let json: serde_json::Value =
        serde_json::from_slice(&out).map_err(|e| format!("not JSON: {e}"))?;
    check!(json["summary"][0]["operation"] == "write", "{json}");
    check!(json["iopath"]["mode"] == "processes", "{json}");
    Ok(())
}

/// IOR's tasks write with async journals that commit only when forced, and end as the
/// program does (`phase::end`: each client commits and disconnects) — and their process goes:
/// the clients are dropped. Both storage servers are then killed and started again. IOR's read
/// phase, by new clients, checks every word: nothing acknowledged lived only in the memory of
/// the program that ended. (Before the end commits, this run lost its files' tails.)
async fn ior_tasks_that_ended_lose_nothing_to_servers_killed_after_them() -> Outcome {
    use iopath_bench::ior::phase::{self, Files, Job, Progress};
    let mut running = start(&commits_only_when_forced()?, "test-suite-ior-end").await?;
    let params = iopath_bench::ior::IorParams::from_options(
        &IorOptions {
            tasks: Some(8),
            block_size_bytes: 3 * MIB,
            transfer_size_bytes: 256 * KIB,
            segments: 2,
            file_per_proc: true,
            store_file_offset: true,
            keep_file: true,
            api: "async".into(),
            ..IorOptions::default()
        },
        0,
    )
    .map_err(err)?;
    let job = |clients| Job {
        buffers: iopath_bench::ior::buffers::pool(params.transfer_size_bytes as usize),
        params: params.clone(),
        tasks: 8,
        clients,
        seed: 0,
    };
    let mut clients = Vec::new();
    for index in 0..8 {
        clients.push(client(&running, index).await?);
    }
    phase::make_parents(&clients[0], &params.test_file)
        .await
        .map_err(err)?;
    let writers = Arc::new(job(clients));
    let (_, written) = phase::write(&writers, 0, 1, None, Progress::Silent)
        .await
        .map_err(err)?;
    let written = Arc::new(written);
    let files: Files = (0..8)
        .map(|task| (params.file_of(task, 0), Arc::clone(&written)))
        .collect();
    let kept: u64 = writers.clients.iter().map(Client::kept_bytes).sum();
    if kept == 0 {
        return Err("the write phase left nothing uncommitted: the test proves nothing".into());
    }
    phase::end(&writers.clients).await.map_err(err)?;
    drop(writers);
    for oss in ["oss0", "oss1"] {
        running.crash_node(oss).await.map_err(err)?;
    }
    for oss in ["oss0", "oss1"] {
        running.restart_node(oss, &launcher()?).await.map_err(err)?;
    }
    let mut clients = Vec::new();
    for index in 0..8 {
        clients.push(client(&running, index).await?);
    }
    let readers = Arc::new(job(clients));
    // IOR's read phase checks every word it reads against what each task wrote.
    let read = phase::read(&readers, 0, &files, None, Progress::Silent)
        .await
        .map_err(err)?;
    if read.verified_bytes != 8 * 2 * 3 * MIB {
        return Err(format!(
            "checked {} bytes, not every byte written",
            read.verified_bytes
        ));
    }
    phase::end(&readers.clients).await.map_err(err)?;
    drop(readers);
    running.stop().await.map_err(err)
}
