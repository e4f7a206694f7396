//! One seed's run: the world its seed draws, the clients' workload, the fault schedule, the
//! final recovery, and the oracle's verdict.
//!
//! The storage world (clients, servers, routers) is drawn from the seed's first numbers; the
//! other roles — the metadata server, fyods and their clients — from a stream of their own
//! (`draw_roles`), so a seed without them runs exactly as it did before they existed.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use iopath_fabric::Limits;
use iopath_fabric::fault::SplitMix64;
use iopath_forwarder::FileSystem;
use iopath_mds::MdsClient;

use crate::clients::{self, SimClient};
use crate::events::EventLog;
use crate::executions::ExecutionLog;
use crate::faults::NetworkFaults;
use crate::fyod_clients::{self, FyodSimClient};
use crate::shared::Shared;
use crate::world::{
    EngineWrap, FIRST_CLIENT, FIRST_FYOD, FIRST_FYOD_CLIENT, FIRST_SERVER, MDS_NODE, World,
    WorldConfig,
};
use crate::{SeedReport, SimConfig, SimError};

/// How long the final recovery waits, faults over, for every node to see its routers alive.
const ROUTES_SETTLE: Duration = Duration::from_secs(5);
/// Mixed into the seed for the stream the other roles are drawn from.
const ROLES_STREAM: u64 = 0x6d64_735f_6679_6f64;

/// Runs seed `seed` on a fresh one-thread runtime with a paused clock: the same seed, the
/// same run.
pub fn run_seed(seed: u64, config: &SimConfig) -> SeedReport {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            let why = format!("build a runtime: {error}");
            return SeedReport::failed(seed, why, config.other_roles);
        }
    };
    runtime.block_on(simulate(seed, config.clone()))
}

/// Draws the world from the seed's first numbers.
fn draw_world(rng: &mut SplitMix64, engine_wrap: Option<EngineWrap>) -> WorldConfig {
    let servers = 2;
    WorldConfig {
        clients: 2 + (rng.next() % 2) as u32,
        servers,
        targets_per_server: 1 + (rng.next() % 2) as u32,
        routers: if rng.next().is_multiple_of(2) { 0 } else { 2 },
        sync_journal: (0..servers).map(|_| rng.next().is_multiple_of(2)).collect(),
        commit_interval_ms: 100 + rng.next() % 1900,
        recovery_window: Duration::from_secs(20),
        limits: Limits {
            rpc_timeout: Duration::from_secs(4),
            ..Limits::default()
        },
        engine_wrap,
        mds_disk_wrap: None,
        mds: false,
        mds_snapshot_every_records: 0,
        fyods: 0,
        fyod_mode: FileSystem::Pfs,
    }
}

/// The roles beside the storage path a seed draws, from its own stream.
#[derive(Debug)]
struct Roles {
    /// Fyod clients; each is served by fyod `index % fyods`.
    fyod_clients: u32,
    /// The rest of the stream: the fyod clients' files and workloads.
    rng: SplitMix64,
}

impl Roles {
    /// No other roles: the storage path alone.
    fn none() -> Roles {
        Roles {
            fyod_clients: 0,
            rng: SplitMix64(0),
        }
    }
}

/// Draws, from a stream of the seed's own, whether the metadata server and fyods are in
/// play: half the seeds keep the storage path alone, a quarter add the metadata server (the
/// direct clients create and unlink files there), a quarter add one or two fyods and their
/// clients too.
fn draw_roles(seed: u64, world: &mut WorldConfig) -> Roles {
    let mut rng = SplitMix64(seed ^ ROLES_STREAM);
    let pick = rng.next() % 4;
    world.mds = pick >= 2;
    world.mds_snapshot_every_records = 4 + rng.next() % 28;
    let fyods = pick == 3;
    world.fyods = if fyods {
        1 + (rng.next() % 2) as u32
    } else {
        0
    };
    world.fyod_mode = if rng.next().is_multiple_of(2) {
        FileSystem::Pfs
    } else {
        FileSystem::Ufs
    };
    let fyod_clients = if fyods {
        1 + (rng.next() % 2) as u32
    } else {
        0
    };
    Roles { fyod_clients, rng }
}

async fn simulate(seed: u64, config: SimConfig) -> SeedReport {
    let events = Arc::new(EventLog::new());
    let shared = Arc::new(Shared::new(Arc::clone(&events)));
    let executions = ExecutionLog::new();
    let run = simulate_in(seed, &config, &shared, &executions);
    let outcome = tokio::time::timeout(config.virtual_time_max, run).await;
    let mut failures = shared.take_failures();
    match outcome {
        Ok(Ok(twice)) => failures.extend(twice),
        Ok(Err(error)) => failures.push(error.to_string()),
        Err(_) => failures.push(format!(
            "the run did not finish within {:?} of simulated time",
            config.virtual_time_max
        )),
    }
    SeedReport {
        seed,
        other_roles: config.other_roles,
        digest: events.digest(),
        failures,
        events: events.counts(),
        writes_acknowledged: shared.oracle().acknowledged(),
        executions: executions.len(),
        simulated: events_elapsed(&events),
        lines: if config.keep_events {
            events.lines()
        } else {
            Vec::new()
        },
    }
}

fn events_elapsed(events: &EventLog) -> Duration {
    events.record("end", "");
    events
        .lines()
        .last()
        .and_then(|line| line.split_whitespace().next()?.parse::<f64>().ok())
        .map_or(Duration::ZERO, Duration::from_secs_f64)
}

/// The run proper; the executions that ran twice, or why the run could not go on.
async fn simulate_in(
    seed: u64,
    config: &SimConfig,
    shared: &Arc<Shared>,
    executions: &Arc<ExecutionLog>,
) -> Result<Vec<String>, SimError> {
    let mut rng = SplitMix64(seed);
    let mut world_config = draw_world(&mut rng, config.engine_wrap);
    world_config.mds_disk_wrap = config.mds_disk_wrap;
    let mut roles = if config.other_roles {
        draw_roles(seed, &mut world_config)
    } else {
        Roles::none()
    };
    let events = &shared.events;
    let others = if world_config.mds {
        format!(
            "; a metadata server (a snapshot every {} records), {} fyods ({}), {} fyod clients",
            world_config.mds_snapshot_every_records,
            world_config.fyods,
            world_config.fyod_mode,
            roles.fyod_clients
        )
    } else {
        String::new()
    };
    events.record(
        "world",
        format_args!(
            "{} clients, {} servers x {} targets, {} routers, sync journals {:?}, commit interval {} ms{others}",
            world_config.clients,
            world_config.servers,
            world_config.targets_per_server,
            world_config.routers,
            world_config.sync_journal,
            world_config.commit_interval_ms
        ),
    );
    let faults = NetworkFaults::new(rng.next(), config.message_faults, Arc::clone(events));
    let world = World::start(world_config.clone(), faults.clone(), Arc::clone(executions)).await?;
    let clients = clients::connect_clients(&world, &world_config, &mut rng).await?;
    clients::start_pingers(&clients, shared);
    let mut fyod_clients = Vec::new();
    for c in 0..roles.fyod_clients {
        let fyod = (c % world_config.fyods) as usize;
        fyod_clients.push(fyod_clients::connect(&world, c, fyod, &mut roles.rng).await?);
    }
    let names_client = clients.first().and_then(SimClient::mds);
    let world = Arc::new(tokio::sync::Mutex::new(world));

    // The workload and the fault schedule run together until every client is done.
    faults.unleash();
    let done = Arc::new(AtomicBool::new(false));
    let nemesis = tokio::spawn(nemesis(
        SplitMix64(rng.next()),
        Arc::clone(&world),
        Arc::clone(&faults),
        Arc::clone(shared),
        Arc::clone(&done),
        Schedule {
            crashes: config.crashes,
            fyod_clients: roles.fyod_clients,
            recovery_window: world_config.recovery_window,
        },
    ));
    let mut tasks = Vec::new();
    for client in clients {
        let workload_rng = SplitMix64(rng.next());
        tasks.push(tokio::spawn(clients::workload(
            client,
            workload_rng,
            config.ops_per_client,
            Arc::clone(shared),
        )));
    }
    let mut fyod_tasks = Vec::new();
    for client in fyod_clients {
        let workload_rng = SplitMix64(roles.rng.next());
        fyod_tasks.push(tokio::spawn(fyod_clients::workload(
            client,
            workload_rng,
            config.ops_per_client,
            Arc::clone(shared),
        )));
    }
    let ended = |e| SimError::Setup(format!("a client task ended abnormally: {e}"));
    let mut clients = Vec::new();
    for task in tasks {
        clients.push(task.await.map_err(ended)?);
    }
    let mut fyod_clients = Vec::new();
    for task in fyod_tasks {
        fyod_clients.push(task.await.map_err(ended)?);
    }
    done.store(true, Ordering::Relaxed);
    nemesis
        .await
        .map_err(|e| SimError::Setup(format!("the fault schedule ended abnormally: {e}")))??;

    // The final recovery: no more faults; every server crashes once more and restarts, so
    // what was acknowledged and not committed must come back by replay, and the metadata
    // server's namespace from its log. The fyods stay up: their crash is told to their clients
    // (EBADF), which would excuse what it lost.
    faults.calm();
    // Nodes marked their gateways down while partitions and router crashes lasted: a ping
    // round and a dead timeout later, every route they have is known alive again.
    tokio::time::sleep(ROUTES_SETTLE).await;
    let mut world = Arc::try_unwrap(world)
        .map_err(|_| SimError::Setup("the world is still shared".into()))?
        .into_inner();
    for s in 0..world.server_nids().len() {
        let outcome = world.crash_server(s, &mut rng)?;
        events.record("final_crash", format_args!("server {s}: {outcome:?}"));
    }
    if world.mds_nid().is_some() {
        let outcome = world.crash_mds(&mut rng)?;
        events.record("final_crash", format_args!("mds: {outcome:?}"));
    }
    for r in 0..world.routers() {
        if !world.router_up(r) {
            world.start_router(r).await?;
        }
    }
    for s in 0..world.server_nids().len() {
        world.start_server(s).await?;
    }
    if world.mds_nid().is_some() {
        world.start_mds().await?;
    }
    final_checks(clients, fyod_clients, names_client, shared).await;
    let twice = executions.check();
    world.shutdown();
    Ok(twice.into_iter().map(|t| t.to_string()).collect())
}

/// Every client's final check at once; then the namespace, looked up by `names_client`.
async fn final_checks(
    clients: Vec<SimClient>,
    fyod_clients: Vec<FyodSimClient>,
    names_client: Option<MdsClient>,
    shared: &Arc<Shared>,
) {
    let fyods = tokio::spawn({
        let shared = Arc::clone(shared);
        async move { fyod_clients::final_check(fyod_clients, &shared).await }
    });
    clients::final_check(clients, shared).await;
    if let Err(error) = fyods.await {
        shared.fail(format!("a final check task ended abnormally: {error}"));
    }
    if let Some(mds) = names_client {
        clients::check_names(&mds, shared).await;
    }
}

/// What the fault schedule may do in a world.
struct Schedule {
    /// Whether nodes crash (or only messages and partitions fail).
    crashes: bool,
    /// Compute nodes behind fyods, which partitions may cut off too.
    fyod_clients: u32,
    /// The storage servers' recovery window: a client kept away past it is evicted.
    recovery_window: Duration,
}

/// The fault schedule: until the workload is `done`, one fault at a time — a server crashed
/// and restarted, a client away past that restart's recovery window, a node partitioned and
/// healed, a router crashed and restarted, and where
/// they run the metadata server or a fyod crashed and restarted — with message faults
/// throughout.
async fn nemesis(
    mut rng: SplitMix64,
    world: Arc<tokio::sync::Mutex<World>>,
    faults: Arc<NetworkFaults>,
    shared: Arc<Shared>,
    done: Arc<AtomicBool>,
    schedule: Schedule,
) -> Result<(), SimError> {
    let Schedule {
        crashes,
        fyod_clients,
        recovery_window,
    } = schedule;
    let events = &shared.events;
    let (servers, routers, mds, fyods) = {
        let world = world.lock().await;
        (
            world.server_nids().len(),
            world.routers(),
            world.mds_nid().is_some(),
            world.fyod_nids().len(),
        )
    };
    // The nodes a partition may cut off: four client numbers (whether or not each runs) and
    // the servers, then the other roles' nodes.
    let mut cut_off: Vec<u32> = (0..4).map(|c| FIRST_CLIENT + c).collect();
    cut_off.extend((0..servers as u32).map(|s| FIRST_SERVER + s));
    if mds {
        cut_off.push(MDS_NODE);
    }
    cut_off.extend((0..fyods as u32).map(|f| FIRST_FYOD + f));
    cut_off.extend((0..fyod_clients).map(|c| FIRST_FYOD_CLIENT + c));
    // A world with the other roles has two more kinds of fault to draw.
    let kinds = if mds { 8 } else { 6 };
    while !done.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(500 + rng.next() % 3500)).await;
        let down = Duration::from_millis(200 + rng.next() % 3000);
        match rng.next() % kinds {
            0..=2 if crashes && rng.next().is_multiple_of(8) => {
                // A client away while a server restarts, and past its recovery window: the
                // window evicts it, and what it kept for that server is lost — and said so
                // when it comes back.
                let c = FIRST_CLIENT + (rng.next() % 4) as u32;
                let s = (rng.next() % servers as u64) as usize;
                faults.isolate(c);
                events.record(
                    "away",
                    format_args!("client node {c}, while server {s} restarts"),
                );
                let outcome = world.lock().await.crash_server(s, &mut rng)?;
                events.record("server_crash", format_args!("server {s}: {outcome:?}"));
                tokio::time::sleep(down).await;
                world.lock().await.start_server(s).await?;
                events.record("server_restart", format_args!("server {s}"));
                tokio::time::sleep(recovery_window + Duration::from_secs(2)).await;
                faults.heal(c);
                events.record("back", format_args!("client node {c}"));
            }
            0..=2 if crashes => {
                let s = (rng.next() % servers as u64) as usize;
                let outcome = world.lock().await.crash_server(s, &mut rng)?;
                events.record("server_crash", format_args!("server {s}: {outcome:?}"));
                tokio::time::sleep(down).await;
                world.lock().await.start_server(s).await?;
                events.record("server_restart", format_args!("server {s}"));
            }
            3 if crashes && routers > 0 => {
                let r = (rng.next() % routers as u64) as usize;
                world.lock().await.crash_router(r);
                events.record("router_crash", format_args!("router {r}"));
                tokio::time::sleep(down * 2).await;
                world.lock().await.start_router(r).await?;
                events.record("router_restart", format_args!("router {r}"));
            }
            4 if crashes && mds => {
                let outcome = world.lock().await.crash_mds(&mut rng)?;
                events.record("mds_crash", format_args!("{outcome:?}"));
                tokio::time::sleep(down).await;
                world.lock().await.start_mds().await?;
                events.record("mds_restart", "");
            }
            5 if crashes && fyods > 0 => {
                let f = (rng.next() % fyods as u64) as usize;
                world.lock().await.crash_fyod(f);
                events.record("fyod_crash", format_args!("fyod {f}"));
                tokio::time::sleep(down).await;
                world.lock().await.start_fyod(f).await?;
                events.record("fyod_restart", format_args!("fyod {f}"));
            }
            _ => {
                // A node cut off for a while.
                let number = cut_off[(rng.next() % cut_off.len() as u64) as usize];
                faults.isolate(number);
                events.record("partition", format_args!("node {number} for {down:?}"));
                tokio::time::sleep(down * 2).await;
                faults.heal(number);
                events.record("partition_healed", format_args!("node {number}"));
            }
        }
    }
    Ok(())
}

/// The counts a summary adds up over seeds.
pub fn add_counts(total: &mut BTreeMap<&'static str, u64>, counts: &BTreeMap<&'static str, u64>) {
    for (kind, count) in counts {
        *total.entry(kind).or_default() += count;
    }
}
