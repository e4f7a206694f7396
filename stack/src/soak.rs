//! `iopath soak`: a stack of processes under a verified workload for a given time, with its
//! server nodes killed and started again on a schedule and fail points flipped between, to
//! see what a few minutes of testing hide.
//!
//! - **The workload.** Every client node writes files of the data pattern one after another;
//!   a file is *acknowledged* when its writes, its `fsync` and its close succeeded. Each is
//!   read back and checked at once, and again before it is removed eight files later, so
//!   every acknowledged file is checked across the faults that came in between; the last
//!   eight of every client are checked once more at the end, when the faults have stopped.
//!   A failure the application is told of (an error from a call) is counted, not lost: the
//!   file was never acknowledged. An acknowledged file that reads back wrong, or not at all
//!   at the end, is **lost**.
//! - **The faults.** Every interval, one server node — storage servers, routers, fyods and
//!   the metadata service in turn, whichever the stack has — is killed with SIGKILL and
//!   started again on its disk, and a fail point that loses, stalls or corrupts (never one
//!   that fails a call on purpose) is armed on another node for the interval. After a
//!   restart a probe writes, reads back and removes a small file until it can: the time from
//!   the kill to that success is the node's **recovery time**.
//! - **Memory.** The resident memory of every node process after the stack starts and at
//!   the end (a restarted node's is its new process's).
//!
//! Everything is bounded: the run by its duration, each recovery by
//! [`RECOVERY_WAIT_MAX`], the workload's wind-down by [`WIND_DOWN_MAX`].

use std::collections::BTreeMap;
use std::io::Write;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, PoisonError};
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_client::{Client, StripeRequest};
use iopath_fabric::fault::SplitMix64;
use iopath_storage_server::engine::aligned::AlignedBuf;
use serde::Serialize;
use tokio::task::JoinSet;

use crate::choice::StackChoice;
use crate::error::StackError;
use crate::pattern;
use crate::runtime::{Launcher, Mode, RunningStack, StorageDir};
use crate::schema::RoleName;

/// Shortest soak.
pub const DURATION_MIN: Duration = Duration::from_secs(20);
/// Longest soak: a day.
pub const DURATION_MAX: Duration = Duration::from_secs(24 * 3600);
/// Longest a killed node may take to serve the probe again before the soak fails.
pub const RECOVERY_WAIT_MAX: Duration = Duration::from_secs(180);
/// Longest the workload may take to finish its files once the time is up.
pub const WIND_DOWN_MAX: Duration = Duration::from_secs(180);
/// Acknowledged files each client keeps (and checks again) before removing the oldest.
const KEPT_FILES: usize = 8;
/// The probe's file.
const PROBE_BYTES: u64 = 64 << 10;
/// Bytes per write request.
const REQUEST_BYTES: u64 = 1 << 20;

/// `iopath soak`'s options.
#[derive(Debug, Clone)]
pub struct SoakConfig {
    /// The preset or stack file.
    pub choice: StackChoice,
    /// How long the workload runs under faults.
    pub duration: Duration,
    /// Time between faults.
    pub interval: Duration,
    /// Bytes of each file the workload writes.
    pub file_bytes: u64,
    /// Seeds the order of victims within a role and the fail points armed.
    pub seed: u64,
    /// Directory for the stack's storage (a temporary directory inside it, removed at the end).
    pub dir: Option<PathBuf>,
}

/// One process's resident memory, after the stack started and at the end.
#[derive(Debug, Clone, Serialize)]
pub struct ProcessMemory {
    /// The node.
    pub node: String,
    /// Its role.
    pub role: String,
    /// KiB resident after the stack started.
    pub start_kib: u64,
    /// KiB resident at the end.
    pub end_kib: u64,
    /// Times it was killed and started again (its end is a new process's).
    pub restarts: u64,
}

/// What a soak did and found.
#[derive(Debug, Clone, Serialize)]
pub struct SoakReport {
    /// The stack.
    pub stack: String,
    /// What ran for real and what, if anything, was modeled.
    pub modeled: String,
    /// Seconds the workload ran under faults.
    pub seconds: f64,
    /// Nodes killed and started again, by role.
    pub kills: BTreeMap<String, u64>,
    /// Fail points armed.
    pub fail_points_armed: u64,
    /// Faults the armed fail points injected (as their nodes counted them).
    pub fail_points_fired: u64,
    /// Files acknowledged (written, fsync'd and closed).
    pub files_acknowledged: u64,
    /// Their bytes.
    pub bytes_acknowledged: u64,
    /// Bytes read back and checked, every check counted.
    pub bytes_verified: u64,
    /// Acknowledged bytes that read back wrong, or not at all once the faults stopped.
    pub bytes_lost: u64,
    /// What was lost, a line per file.
    pub losses: Vec<String>,
    /// Calls that failed and said so (the file was not acknowledged).
    pub calls_failed: u64,
    /// The last few of those errors, for a person to read.
    pub failures_seen: Vec<String>,
    /// Seconds from each kill to the probe's first success, in order.
    pub recovery_s: Vec<f64>,
    /// Median of `recovery_s`.
    pub recovery_p50_s: f64,
    /// 99th percentile of `recovery_s`.
    pub recovery_p99_s: f64,
    /// The longest of `recovery_s`.
    pub recovery_max_s: f64,
    /// Recovery times by the role of the node killed.
    pub recovery_by_role: BTreeMap<String, RoleRecovery>,
    /// Every node process's memory.
    pub memory: Vec<ProcessMemory>,
}

/// The recovery times of kills: one role's, or all of them.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RoleRecovery {
    /// Its nodes killed.
    pub kills: u64,
    /// Median seconds from a kill to the path serving again.
    pub p50_s: f64,
    /// 99th percentile.
    pub p99_s: f64,
    /// The longest.
    pub max_s: f64,
}

impl RoleRecovery {
    fn of(seconds: &[f64]) -> RoleRecovery {
        RoleRecovery {
            kills: seconds.len() as u64,
            p50_s: percentile(seconds, 0.50),
            p99_s: percentile(seconds, 0.99),
            max_s: seconds.iter().copied().fold(0.0, f64::max),
        }
    }
}

/// An acknowledged file.
#[derive(Debug, Clone)]
struct Acked {
    path: String,
    task: u32,
    repetition: u32,
    bytes: u64,
}

/// What the workload counts, shared by its tasks.
#[derive(Debug, Default)]
struct Tally {
    files: AtomicU64,
    bytes: AtomicU64,
    verified: AtomicU64,
    failed: AtomicU64,
    lost: std::sync::Mutex<Vec<(u64, String)>>,
    seen: std::sync::Mutex<Vec<String>>,
}

impl Tally {
    fn failed(&self, what: String) {
        self.failed.fetch_add(1, Ordering::Relaxed);
        let mut seen = self.seen.lock().unwrap_or_else(PoisonError::into_inner);
        if seen.len() >= 8 {
            seen.remove(0);
        }
        seen.push(what);
    }

    fn lost(&self, bytes: u64, what: String) {
        self.lost
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push((bytes, what));
    }
}

/// Writes a line of the soak's account, or ends the soak with why it could not.
macro_rules! say {
    ($out:expr, $($arg:tt)*) => {
        writeln!($out, $($arg)*)
            .and_then(|()| $out.flush())
            .map_err(|e| StackError::system("write the soak's account", e))?;
    };
}

/// The fail points a soak arms on a node of `role`: each loses, stalls or corrupts; none
/// fails a call on purpose or kills the process (the kills are the schedule's).
fn fail_points_for(role: RoleName) -> &'static [&'static str] {
    match role {
        RoleName::Oss => &[
            "oss.before_reply:drop:once",
            "oss.after_write:delay=50ms:every=5",
            "bulk.send:corrupt:every=20",
            "oss.before_commit:delay=100ms:every=3",
            "oss.after_commit:delay=100ms:every=3",
        ],
        RoleName::Router => &[
            "router.forward:corrupt:every=50",
            "router.forward:delay=20ms:every=10",
            "router.forward:drop:once",
        ],
        RoleName::Fyod => &[
            "fyod.reply:drop:once",
            "fyod.forward:delay=20ms:every=5",
            "client.send:drop:once",
        ],
        RoleName::Mds => &[
            "mds.after_log:drop:once",
            "mds.after_log:delay=50ms:every=2",
        ],
        _ => &[],
    }
}

/// The roles whose nodes a soak kills, in turn.
const VICTIM_ROLES: [RoleName; 4] = [
    RoleName::Oss,
    RoleName::Router,
    RoleName::Fyod,
    RoleName::Mds,
];

/// Runs a soak, writing its progress to `out`.
pub async fn run(config: &SoakConfig, out: &mut dyn Write) -> Result<SoakReport, StackError> {
    check(config)?;
    let stack = config.choice.load()?;
    if stack.nodes_of(RoleName::Client).is_empty() {
        return Err(StackError::BadOption {
            option: "--stack".into(),
            why: format!(
                "{} has no client nodes to run the workload on",
                stack.origin
            ),
        });
    }
    say!(out, "iopath soak: {} ({})", stack.name, stack.description);
    let storage = StorageDir::temporary("soak", config.dir.as_deref())?;
    say!(
        out,
        "storage: {} (removed at the end)",
        storage.path().display()
    );
    let mut running = RunningStack::start(stack, Mode::Processes, storage, None).await?;
    let outcome = soak(&mut running, config, out).await;
    let stopped = running.stop().await;
    let report = outcome?;
    stopped?;
    Ok(report)
}

fn check(config: &SoakConfig) -> Result<(), StackError> {
    if !(DURATION_MIN..=DURATION_MAX).contains(&config.duration) {
        return Err(StackError::BadOption {
            option: "--minutes".into(),
            why: format!(
                "a soak runs {} s to {} h",
                DURATION_MIN.as_secs(),
                DURATION_MAX.as_secs() / 3600
            ),
        });
    }
    if config.interval < Duration::from_secs(5) || config.interval > config.duration {
        return Err(StackError::BadOption {
            option: "--interval".into(),
            why: "faults come at least 5 s apart, and at least once in the run".into(),
        });
    }
    if !(PROBE_BYTES..=(1 << 30)).contains(&config.file_bytes) {
        return Err(StackError::BadOption {
            option: "--file-size".into(),
            why: format!("files are {PROBE_BYTES} bytes to 1 GiB"),
        });
    }
    Ok(())
}

async fn soak(
    running: &mut RunningStack,
    config: &SoakConfig,
    out: &mut dyn Write,
) -> Result<SoakReport, StackError> {
    let mut clients = Vec::new();
    for node in running.clients() {
        clients.push(Arc::new(running.connect(node).await?));
    }
    clients[0]
        .mkdir("/soak")
        .await
        .map_err(|e| StackError::io("mkdir /soak", e))?;
    let start_memory = memory(running);
    let victims = victims(running);
    if victims.is_empty() {
        return Err(StackError::BadOption {
            option: "--stack".into(),
            why: "the stack has no server node a soak can kill".into(),
        });
    }
    say!(
        out,
        "{} clients write {} files, each read back at once, again before it is removed, and at the end;\n\
         every {} s a server node is killed and started again, and a fail point armed elsewhere, for {} s",
        clients.len(),
        crate::describe::describe_size(config.file_bytes),
        config.interval.as_secs(),
        config.duration.as_secs()
    );

    let tally = Arc::new(Tally::default());
    let stop = Arc::new(AtomicBool::new(false));
    let mut workload = JoinSet::new();
    for (task, client) in clients.iter().enumerate() {
        workload.spawn(write_files(
            Arc::clone(client),
            task as u32,
            config.file_bytes,
            Arc::clone(&stop),
            Arc::clone(&tally),
        ));
    }

    let started = Instant::now();
    let mut rng = SplitMix64(config.seed);
    let mut kills: BTreeMap<String, u64> = BTreeMap::new();
    let mut restarts: BTreeMap<String, u64> = BTreeMap::new();
    let mut recovery_s = Vec::new();
    let mut recovery_of_role: BTreeMap<String, Vec<f64>> = BTreeMap::new();
    let (mut armed, mut fired) = (0u64, 0u64);
    let launcher = Launcher::this_program()?;
    let mut round = 0usize;
    // Bounded: each round waits an interval; the run ends at its duration.
    while started.elapsed() + config.interval <= config.duration {
        let (role, victim) = &victims[round % victims.len()];
        let victim = victim[(rng.next() % victim.len() as u64) as usize].clone();
        // A fail point on a node of another role, for this interval.
        let (node, spec) = pick_fail_point(&victims, *role, &mut rng);
        let before = injected(running, &node).await;
        if set_fail_loc(running, &node, spec).await.is_ok() {
            armed += 1;
        }
        say!(
            out,
            "{:>6.0} s  fail point on {node}: {spec}",
            started.elapsed().as_secs_f64()
        );
        let half = config.interval / 2;
        tokio::time::sleep(half).await;
        let killed = Instant::now();
        running.crash_node(&victim).await?;
        tokio::time::sleep(Duration::from_millis(500)).await;
        running.restart_node(&victim, &launcher).await?;
        let recovered = probe_every_client(&clients, round).await?;
        let seconds = recovered.duration_since(killed).as_secs_f64();
        recovery_s.push(seconds);
        recovery_of_role
            .entry(role.as_str().to_owned())
            .or_default()
            .push(seconds);
        *kills.entry(role.as_str().to_owned()).or_default() += 1;
        *restarts.entry(victim.clone()).or_default() += 1;
        say!(
            out,
            "{:>6.0} s  killed {victim} ({}), started again; the path served the probe {seconds:.1} s after the kill  [{} files acknowledged, {} calls failed and said so, {} lost]",
            started.elapsed().as_secs_f64(),
            role.as_str(),
            tally.files.load(Ordering::Relaxed),
            tally.failed.load(Ordering::Relaxed),
            tally
                .lost
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .len()
        );
        let rest = config.interval.saturating_sub(killed.elapsed() + half);
        tokio::time::sleep(rest).await;
        let after = injected(running, &node).await;
        fired += after.saturating_sub(before);
        let _ = set_fail_loc(running, &node, "off").await;
        round += 1;
    }
    // The workload runs its full time, faults or not.
    tokio::time::sleep(config.duration.saturating_sub(started.elapsed())).await;

    stop.store(true, Ordering::Relaxed);
    say!(
        out,
        "{:>6.0} s  time is up: the workload finishes its files, then every kept file is checked",
        started.elapsed().as_secs_f64()
    );
    let mut kept: Vec<Acked> = Vec::new();
    let wind_down = tokio::time::timeout(WIND_DOWN_MAX, async {
        while let Some(done) = workload.join_next().await {
            match done {
                Ok(files) => kept.extend(files),
                Err(e) => tally.failed(format!("a workload task ended: {e}")),
            }
        }
    })
    .await;
    if wind_down.is_err() {
        workload.abort_all();
        return Err(StackError::Process {
            node: "the workload".into(),
            why: format!(
                "still running {} s after the time was up",
                WIND_DOWN_MAX.as_secs()
            ),
        });
    }
    for file in &kept {
        if let Err(why) = verify(&clients[(file.task as usize) % clients.len()], file).await {
            tally.lost(file.bytes, format!("{} at the end: {why}", file.path));
        } else {
            tally.verified.fetch_add(file.bytes, Ordering::Relaxed);
        }
    }
    let seconds = started.elapsed().as_secs_f64();
    for client in &clients {
        // Commits what is left; a failure here loses nothing acknowledged.
        let _ = client.close().await;
    }
    let end_memory = memory(running);
    let lost = tally
        .lost
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    let all = RoleRecovery::of(&recovery_s);
    Ok(SoakReport {
        stack: running.stack().name.clone(),
        modeled: "nothing (every server node a process on loopback TCP, real disks, the clients in this process)".into(),
        seconds,
        kills,
        fail_points_armed: armed,
        fail_points_fired: fired,
        files_acknowledged: tally.files.load(Ordering::Relaxed),
        bytes_acknowledged: tally.bytes.load(Ordering::Relaxed),
        bytes_verified: tally.verified.load(Ordering::Relaxed),
        bytes_lost: lost.iter().map(|(bytes, _)| bytes).sum(),
        losses: lost.into_iter().map(|(_, what)| what).collect(),
        calls_failed: tally.failed.load(Ordering::Relaxed),
        failures_seen: tally.seen.lock().unwrap_or_else(PoisonError::into_inner).clone(),
        recovery_p50_s: all.p50_s,
        recovery_p99_s: all.p99_s,
        recovery_max_s: all.max_s,
        recovery_by_role: recovery_of_role
            .iter()
            .map(|(role, seconds)| (role.clone(), RoleRecovery::of(seconds)))
            .collect(),
        recovery_s,
        memory: start_memory
            .into_iter()
            .map(|(node, role, start_kib)| {
                let end_kib = end_memory
                    .iter()
                    .find(|(n, _, _)| *n == node)
                    .map_or(0, |(_, _, kib)| *kib);
                let restarts = restarts.get(&node).copied().unwrap_or(0);
                ProcessMemory {
                    node,
                    role,
                    start_kib,
                    end_kib,
                    restarts,
                }
            })
            .collect(),
    })
}

/// The server nodes a soak kills, by role, in [`VICTIM_ROLES`]' order.
fn victims(running: &RunningStack) -> Vec<(RoleName, Vec<String>)> {
    let stack = running.stack();
    VICTIM_ROLES
        .iter()
        .filter_map(|&role| {
            let names: Vec<String> = stack
                .nodes_of(role)
                .into_iter()
                .map(|i| stack.nodes[i].name.clone())
                .collect();
            (!names.is_empty()).then_some((role, names))
        })
        .collect()
}

/// A node of another role than this round's victim's (of its own if the stack has no other),
/// and a fail point for it.
fn pick_fail_point(
    victims: &[(RoleName, Vec<String>)],
    victim_role: RoleName,
    rng: &mut SplitMix64,
) -> (String, &'static str) {
    let others: Vec<&(RoleName, Vec<String>)> = victims
        .iter()
        .filter(|(role, _)| *role != victim_role || victims.len() == 1)
        .collect();
    let (role, names) = others[(rng.next() % others.len() as u64) as usize];
    let node = names[(rng.next() % names.len() as u64) as usize].clone();
    let specs = fail_points_for(*role);
    (node, specs[(rng.next() % specs.len() as u64) as usize])
}

/// Arms `spec` on `node` through its admin service, with the stack's secret.
async fn set_fail_loc(running: &RunningStack, node: &str, spec: &str) -> Result<(), StackError> {
    let admin = admin_client(running, node).await?;
    admin
        .set_param("fail_loc", spec)
        .await
        .map(drop)
        .map_err(|e| StackError::io(format!("arm {spec} on {node}"), e))
}

/// The faults `node` has injected since it started (0 if it cannot say).
async fn injected(running: &RunningStack, node: &str) -> u64 {
    let Ok(admin) = admin_client(running, node).await else {
        return 0;
    };
    match admin.get_param("fail_injected").await {
        Ok(values) => values
            .first()
            .and_then(|v| v.value.trim().parse().ok())
            .unwrap_or(0),
        Err(_) => 0,
    }
}

async fn admin_client(
    running: &RunningStack,
    node: &str,
) -> Result<iopath_admin::Client, StackError> {
    let stack = running.stack();
    let index = stack
        .nodes
        .iter()
        .position(|n| n.name == node)
        .ok_or_else(|| StackError::io(format!("admin of {node}"), "no such node"))?;
    let addr = running
        .admin_addr(index)
        .ok_or_else(|| StackError::io(format!("admin of {node}"), "it serves none"))?;
    let client = iopath_admin::Client::connect(addr)
        .await
        .map_err(|e| StackError::io(format!("admin of {node}"), e))?;
    Ok(match running.admin_secret() {
        Some(secret) => client.with_secret(secret.clone()),
        None => client,
    })
}

/// Every node process's resident memory: (node, role, KiB).
fn memory(running: &RunningStack) -> Vec<(String, String, u64)> {
    let RunningStack::Processes { servers, .. } = running else {
        return Vec::new();
    };
    servers
        .children()
        .iter()
        .map(|child| {
            let kib = child.pid().map_or(0, resident_kib);
            (child.name.clone(), child.role.as_str().to_owned(), kib)
        })
        .collect()
}

/// A process's resident memory (VmRSS), in KiB; 0 if it cannot be read.
fn resident_kib(pid: u32) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|l| l.strip_prefix("VmRSS:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// Every client probes at once (each may reach the servers its own way: through its fyod, by
/// its routes); when the last one first passed.
async fn probe_every_client(clients: &[Arc<Client>], round: usize) -> Result<Instant, StackError> {
    let mut probes = JoinSet::new();
    for (index, client) in clients.iter().enumerate() {
        let client = Arc::clone(client);
        probes.spawn(async move { probe_until_it_passes(&client, round, index).await });
    }
    let mut last = None;
    // Bounded: one result per probe, each bounded by RECOVERY_WAIT_MAX.
    while let Some(probed) = probes.join_next().await {
        let passed = probed.map_err(|e| StackError::io("a probe", e))??;
        last = last.max(Some(passed));
    }
    Ok(last.unwrap_or_else(Instant::now))
}

/// Writes, checks and removes a small file until it can, bounded by [`RECOVERY_WAIT_MAX`];
/// when it first could.
async fn probe_until_it_passes(
    client: &Client,
    round: usize,
    index: usize,
) -> Result<Instant, StackError> {
    let deadline = Instant::now() + RECOVERY_WAIT_MAX;
    let mut last = String::new();
    // Bounded by the deadline.
    while Instant::now() < deadline {
        let file = Acked {
            path: format!("/soak/probe-{round}-{index}"),
            task: u32::MAX,
            repetition: round as u32,
            bytes: PROBE_BYTES,
        };
        let _ = client.unlink(&file.path).await;
        match write_file(client, &file).await {
            Ok(()) => match verify(client, &file).await {
                Ok(()) => {
                    let _ = client.unlink(&file.path).await;
                    return Ok(Instant::now());
                }
                Err(why) => last = why,
            },
            Err(why) => last = why,
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Err(StackError::Process {
        node: "the I/O path".into(),
        why: format!(
            "did not serve client {index}'s probe for {} s after a restart: {last}",
            RECOVERY_WAIT_MAX.as_secs()
        ),
    })
}

/// One client's workload: files written, acknowledged, checked, kept, checked again and
/// removed, until `stop`; the files it still keeps.
async fn write_files(
    client: Arc<Client>,
    task: u32,
    bytes: u64,
    stop: Arc<AtomicBool>,
    tally: Arc<Tally>,
) -> Vec<Acked> {
    let mut kept: Vec<Acked> = Vec::new();
    let mut repetition = 0u32;
    // Bounded by `stop`, which the soak sets when its time is up.
    while !stop.load(Ordering::Relaxed) {
        let file = Acked {
            path: format!("/soak/c{task}-{repetition}"),
            task,
            repetition,
            bytes,
        };
        repetition += 1;
        if let Err(why) = write_file(&client, &file).await {
            tally.failed(format!("{}: {why}", file.path));
            let _ = client.unlink(&file.path).await;
            tokio::time::sleep(Duration::from_millis(200)).await;
            continue;
        }
        tally.files.fetch_add(1, Ordering::Relaxed);
        tally.bytes.fetch_add(bytes, Ordering::Relaxed);
        check_kept(&client, &file, &tally, "just after its close").await;
        kept.push(file);
        if kept.len() > KEPT_FILES {
            let oldest = kept.remove(0);
            check_kept(&client, &oldest, &tally, "before its removal").await;
            if let Err(e) = client.unlink(&oldest.path).await {
                tally.failed(format!("remove {}: {e}", oldest.path));
            }
        }
    }
    kept
}

/// Checks an acknowledged file; a read that fails is told (counted), wrong bytes are lost.
async fn check_kept(client: &Client, file: &Acked, tally: &Tally, when: &str) {
    match verify(client, file).await {
        Ok(()) => {
            tally.verified.fetch_add(file.bytes, Ordering::Relaxed);
        }
        Err(why) if why.starts_with("verification") => {
            tally.lost(file.bytes, format!("{} {when}: {why}", file.path));
        }
        Err(why) => tally.failed(format!("read {} {when}: {why}", file.path)),
    }
}

/// Creates `file`, writes its pattern, fsyncs and closes it.
async fn write_file(client: &Client, file: &Acked) -> Result<(), String> {
    let handle = client
        .create(&file.path, StripeRequest::INHERIT)
        .await
        .map_err(|e| format!("create: {e}"))?;
    let mut offset = 0;
    // Bounded: each pass writes at least one request.
    while offset < file.bytes {
        let len = REQUEST_BYTES.min(file.bytes - offset);
        let mut buffer = AlignedBuf::zeroed(len as usize);
        pattern::fill(buffer.as_mut_slice(), file.task, file.repetition, offset);
        let data: Bytes = buffer.into_bytes();
        handle
            .write_at(offset, data)
            .await
            .map_err(|e| format!("write at {offset}: {e}"))?;
        offset += len;
    }
    handle.fsync().await.map_err(|e| format!("fsync: {e}"))?;
    handle.close().await.map_err(|e| format!("close: {e}"))
}

/// Reads `file` back and checks every word; `verification ...` when the bytes are wrong.
async fn verify(client: &Client, file: &Acked) -> Result<(), String> {
    let handle = client
        .open(&file.path)
        .await
        .map_err(|e| format!("open: {e}"))?;
    let size = handle.size().await.map_err(|e| format!("size: {e}"))?;
    if size != file.bytes {
        return Err(format!(
            "verification: {size} bytes, {} were acknowledged",
            file.bytes
        ));
    }
    let mut offset = 0;
    // Bounded: each pass reads at least one request.
    while offset < file.bytes {
        let len = REQUEST_BYTES.min(file.bytes - offset);
        let data = handle
            .read_at(offset, len)
            .await
            .map_err(|e| format!("read at {offset}: {e}"))?;
        if data.len() as u64 != len {
            return Err(format!(
                "verification: {} bytes at {offset}, {len} expected",
                data.len()
            ));
        }
        pattern::check(&data, file.task, file.repetition, offset)
            .map_err(|m| format!("verification: {m}"))?;
        offset += len;
    }
    handle.close().await.map_err(|e| format!("close: {e}"))
}

/// The `q` quantile of `values` (nearest rank); 0 for none. The benchmarks' medians too.
pub fn percentile(values: &[f64], q: f64) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// The report as a table for people.
pub fn table(report: &SoakReport) -> String {
    let mut text = String::new();
    let kills: Vec<String> = report
        .kills
        .iter()
        .map(|(role, n)| format!("{n} {role}"))
        .collect();
    let mib = |b: u64| b as f64 / (1u64 << 20) as f64;
    text.push_str(&format!(
        "soak of {} for {:.0} s; modeled: {}\n\
         faults injected:    {} kills ({}), {} fail points armed, {} faults they injected\n\
         files acknowledged: {} ({:.1} MiB), {:.1} MiB read back and checked\n\
         calls that failed and said so: {}\n\
         bytes lost:         {}\n\
         recovery (kill to the path serving again): p50 {:.1} s, p99 {:.1} s, max {:.1} s over {} kills\n",
        report.stack,
        report.seconds,
        report.modeled,
        report.kills.values().sum::<u64>(),
        kills.join(", "),
        report.fail_points_armed,
        report.fail_points_fired,
        report.files_acknowledged,
        mib(report.bytes_acknowledged),
        mib(report.bytes_verified),
        report.calls_failed,
        report.bytes_lost,
        report.recovery_p50_s,
        report.recovery_p99_s,
        report.recovery_max_s,
        report.recovery_s.len(),
    ));
    for (role, r) in &report.recovery_by_role {
        text.push_str(&format!(
            "  {role:<8} p50 {:.1} s, p99 {:.1} s, max {:.1} s over {} kills\n",
            r.p50_s, r.p99_s, r.max_s, r.kills
        ));
    }
    for loss in &report.losses {
        text.push_str(&format!("  LOST: {loss}\n"));
    }
    text.push_str("memory (resident):  node      role    start      end  restarts\n");
    for m in &report.memory {
        text.push_str(&format!(
            "                    {:<9} {:<6} {:>6.1} MiB {:>6.1} MiB  {}\n",
            m.node,
            m.role,
            m.start_kib as f64 / 1024.0,
            m.end_kib as f64 / 1024.0,
            m.restarts
        ));
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_take_the_nearest_rank() {
        assert_eq!(percentile(&[], 0.5), 0.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 0.5), 2.0);
        assert_eq!(percentile(&[3.0, 1.0, 2.0], 0.99), 3.0);
        let hundred: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&hundred, 0.99), 99.0);
    }

    #[test]
    fn every_soak_fail_point_is_one_its_role_takes_and_none_fails_a_call() {
        for role in VICTIM_ROLES {
            for spec in fail_points_for(role) {
                let parsed: iopath_fabric::fail::FailSpec = spec.parse().unwrap();
                assert!(
                    !matches!(
                        parsed.action,
                        iopath_fabric::fail::Action::Errno(_) | iopath_fabric::fail::Action::Abort
                    ),
                    "{spec}"
                );
            }
        }
    }
}
