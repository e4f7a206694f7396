//! One seed's run: the world its seed draws, the clients' workload, the fault schedule, the
//! final recovery, and the oracle's verdict.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::fault::SplitMix64;
use iopath_fabric::frame::status::errno;
use iopath_fabric::{FabricError, Limits};
use iopath_ost_client::OstClient;

use crate::events::EventLog;
use crate::executions::ExecutionLog;
use crate::faults::NetworkFaults;
use crate::oracle::{Oracle, Outcome};
use crate::pattern::{self, ObjectKey, WORD_BYTES};
use crate::world::{EngineWrap, FIRST_CLIENT, FIRST_SERVER, World, WorldConfig};
use crate::{SeedReport, SimConfig, SimError};

/// Bytes per block: writes and reads are whole blocks.
const BLOCK_BYTES: u64 = 4096;
/// Blocks per object.
const OBJECT_BLOCKS: u64 = 8;
/// How long the final recovery waits, faults over, for every node to see its routers alive.
const ROUTES_SETTLE: Duration = Duration::from_secs(5);
/// Objects each client owns (and alone writes).
const OBJECTS_PER_CLIENT: u64 = 2;

/// Runs seed `seed` on a fresh one-thread runtime with a paused clock: the same seed, the
/// same run.
pub fn run_seed(seed: u64, config: &SimConfig) -> SeedReport {
    let runtime = match tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .start_paused(true)
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => return SeedReport::failed(seed, format!("build a runtime: {error}")),
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
    }
}

/// What every client task shares.
struct Shared {
    oracle: Mutex<Oracle>,
    events: Arc<EventLog>,
    failures: Mutex<Vec<String>>,
}

impl Shared {
    fn oracle(&self) -> std::sync::MutexGuard<'_, Oracle> {
        self.oracle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn fail(&self, failure: String) {
        self.events.record("violation", &failure);
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(failure);
    }
}

/// One simulated client: its connections (one per server) and the objects it owns.
struct SimClient {
    index: u32,
    connections: Vec<Arc<OstClient>>,
    objects: Vec<(usize, ObjectKey)>,
}

async fn simulate(seed: u64, config: SimConfig) -> SeedReport {
    let events = Arc::new(EventLog::new());
    let shared = Arc::new(Shared {
        oracle: Mutex::new(Oracle::new()),
        events: Arc::clone(&events),
        failures: Mutex::default(),
    });
    let executions = ExecutionLog::new();
    let run = simulate_in(seed, &config, &shared, &executions);
    let outcome = tokio::time::timeout(config.virtual_time_max, run).await;
    let mut failures = std::mem::take(
        &mut *shared
            .failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner),
    );
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
    let world_config = draw_world(&mut rng, config.engine_wrap);
    let events = &shared.events;
    events.record(
        "world",
        format_args!(
            "{} clients, {} servers x {} targets, {} routers, sync journals {:?}, commit interval {} ms",
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
    let clients = connect_clients(&world, &world_config, &mut rng).await?;
    start_pingers(&clients, shared);
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
        config.crashes,
        world_config.recovery_window,
    ));
    let mut tasks = Vec::new();
    for client in &clients {
        let client = SimClient {
            index: client.index,
            connections: client.connections.clone(),
            objects: client.objects.clone(),
        };
        let workload_rng = SplitMix64(rng.next());
        tasks.push(tokio::spawn(workload(
            client,
            workload_rng,
            config.ops_per_client,
            Arc::clone(shared),
        )));
    }
    for task in tasks {
        task.await
            .map_err(|e| SimError::Setup(format!("a client task ended abnormally: {e}")))?;
    }
    done.store(true, Ordering::Relaxed);
    nemesis
        .await
        .map_err(|e| SimError::Setup(format!("the fault schedule ended abnormally: {e}")))??;

    // The final recovery: no more faults; every server crashes once more and restarts, so
    // what was acknowledged and not committed must come back by replay.
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
    for r in 0..world.routers() {
        if !world.router_up(r) {
            world.start_router(r).await?;
        }
    }
    for s in 0..world.server_nids().len() {
        world.start_server(s).await?;
    }
    final_check(&clients, shared).await;
    let twice = executions.check();
    world.shutdown();
    Ok(twice.into_iter().map(|t| t.to_string()).collect())
}

/// Starts every client node, connects it to every server, and creates its objects (before
/// any fault).
async fn connect_clients(
    world: &World,
    config: &WorldConfig,
    rng: &mut SplitMix64,
) -> Result<Vec<SimClient>, SimError> {
    let servers = world.server_nids();
    let targets = world.targets();
    let every_target: Vec<(usize, u32)> = targets
        .iter()
        .enumerate()
        .flat_map(|(s, ts)| ts.iter().map(move |t| (s, *t)))
        .collect();
    let mut clients = Vec::new();
    for c in 0..config.clients {
        let node = world.client_node(c).await?;
        let mut connections = Vec::new();
        for server in &servers {
            let connection = OstClient::connect(node.clone(), *server, u64::from(FIRST_CLIENT + c))
                .await
                .map_err(|e| SimError::Setup(format!("connect client {c} to {server}: {e}")))?;
            connections.push(Arc::new(connection));
        }
        let mut objects = Vec::new();
        for k in 0..OBJECTS_PER_CLIENT {
            let (s, target) = every_target[(rng.next() % every_target.len() as u64) as usize];
            let key = ObjectKey {
                target,
                object: 1 + u64::from(c) * 100 + k,
            };
            connections[s]
                .create(target, key.object)
                .await
                .map_err(|e| SimError::Setup(format!("client {c}: create {key}: {e}")))?;
            objects.push((s, key));
        }
        clients.push(SimClient {
            index: c,
            connections,
            objects,
        });
    }
    Ok(clients)
}

/// Lustre's pinger on every connection, as the client library runs it: an idle client
/// notices a server restart within a ping and replays, instead of being evicted for being
/// idle (which would cost the other clients too: a window that evicts anyone counts every
/// byte its startup cut as lost). Writes a ping finds lost are the client's to be told of.
fn start_pingers(clients: &[SimClient], shared: &Arc<Shared>) {
    for client in clients {
        for connection in &client.connections {
            let shared = Arc::clone(shared);
            let (c, objects) = (client.index, client.objects.clone());
            tokio::spawn(iopath_ost_client::ping(
                Arc::downgrade(connection),
                iopath_ost_client::ping::INTERVAL,
                move |server, writes| {
                    shared.events.record(
                        "loss_reported",
                        format_args!(
                            "c{c}: a ping found {} kept writes lost at {server}",
                            writes.len()
                        ),
                    );
                    let mut oracle = shared.oracle();
                    for (_, key) in &objects {
                        oracle.writes_reported_lost(*key);
                    }
                },
            ));
        }
    }
}

/// A client's workload: `ops` writes and reads of its own objects, one at a time, with short
/// pauses; every read checked by the oracle.
async fn workload(client: SimClient, mut rng: SplitMix64, ops: u32, shared: Arc<Shared>) {
    for op in 0..ops {
        tokio::time::sleep(Duration::from_millis(rng.next() % 300)).await;
        let (s, key) = client.objects[(rng.next() % client.objects.len() as u64) as usize];
        let first = rng.next() % OBJECT_BLOCKS;
        let blocks = 1 + rng.next() % (OBJECT_BLOCKS - first).min(3);
        let offset = first * BLOCK_BYTES;
        let length = blocks * BLOCK_BYTES;
        let connection = &client.connections[s];
        if rng.next() % 100 < 65 {
            write(&client, op, connection, key, offset, length, &shared).await;
        } else {
            read(&client, op, connection, key, offset, length, &shared, false).await;
        }
    }
}

async fn write(
    client: &SimClient,
    op: u32,
    connection: &OstClient,
    key: ObjectKey,
    offset: u64,
    length: u64,
    shared: &Shared,
) {
    let words = length / WORD_BYTES;
    let version = shared.oracle().begin_write(key, offset, words);
    let data = Bytes::from(pattern::bytes(key, version, offset, words));
    let result = connection.write(key.target, key.object, offset, data).await;
    let c = client.index;
    match result {
        Ok(stamp) => {
            shared
                .oracle()
                .end_write(key, version, Outcome::Acknowledged);
            shared.events.record(
                "write_ok",
                format_args!(
                    "c{c} op{op} {key} v{version} @{offset}+{length} transno {} committed {}",
                    stamp.transno, stamp.last_committed
                ),
            );
        }
        Err(error) => {
            shared.oracle().end_write(key, version, Outcome::Failed);
            note_reported_loss(client, &error, shared);
            shared.events.record(
                "write_failed",
                format_args!("c{c} op{op} {key} v{version}: {}", error_class(&error)),
            );
        }
    }
}

#[allow(clippy::too_many_arguments)] // one op's what and where, and the run's shared state
async fn read(
    client: &SimClient,
    op: u32,
    connection: &OstClient,
    key: ObjectKey,
    offset: u64,
    length: u64,
    shared: &Shared,
    last: bool,
) {
    let c = client.index;
    match connection
        .read(key.target, key.object, offset, length)
        .await
    {
        Ok(bytes) => {
            let checked = shared.oracle().check_read(key, offset, length, &bytes);
            shared.events.record(
                "read_ok",
                format_args!(
                    "c{c} op{op} {key} @{offset}+{length}: {} bytes",
                    bytes.len()
                ),
            );
            if let Err(violation) = checked {
                let when = if last {
                    "after the final recovery"
                } else {
                    "during the run"
                };
                shared.fail(format!("read {when} by client {c}: {violation}"));
            }
        }
        Err(error) => {
            note_reported_loss(client, &error, shared);
            shared.events.record(
                "read_failed",
                format_args!("c{c} op{op} {key}: {}", error_class(&error)),
            );
            if !last || shared.oracle().has_reported_loss(key) {
                return;
            }
            let lost = match &error {
                FabricError::Remote { code, message, .. } if *code == errno::EIO => {
                    lost_ranges(message)
                }
                _ => None,
            };
            let Some(lost) = lost else {
                shared.fail(format!(
                    "read by client {c} of {key} failed after the final recovery: {error}"
                ));
                return;
            };
            // The server refused bytes it marked lost: they must hold nothing acknowledged
            // that nobody was told of, and everything around them must read back.
            if let Err(violation) = shared.oracle().check_lost(key, &lost) {
                shared.fail(format!(
                    "read by client {c} after the final recovery: {violation} ({error})"
                ));
                return;
            }
            read_around(client, connection, key, offset, length, &lost, shared).await;
        }
    }
}

/// The byte ranges an EIO names as lost ("… lost N acknowledged bytes at [a, b), [c, d) when
/// the server restarted …"); none if the message says no such thing.
fn lost_ranges(message: &str) -> Option<Vec<(u64, u64)>> {
    let (_, after) = message.split_once(" acknowledged bytes at ")?;
    let (ranges, _) = after.split_once(" when the server restarted")?;
    ranges
        .split("), ")
        .map(|range| {
            let (start, end) = range
                .trim_start_matches('[')
                .trim_end_matches(')')
                .split_once(", ")?;
            Some((start.parse().ok()?, end.parse().ok()?))
        })
        .collect()
}

/// Reads and checks `[offset, offset + length)` of `key` around the `lost` ranges the server
/// refuses to serve.
async fn read_around(
    client: &SimClient,
    connection: &OstClient,
    key: ObjectKey,
    offset: u64,
    length: u64,
    lost: &[(u64, u64)],
    shared: &Shared,
) {
    let c = client.index;
    let mut gaps = Vec::new();
    let mut at = offset;
    for &(start, end) in lost {
        if start > at {
            gaps.push((at, start.min(offset + length)));
        }
        at = at.max(end);
    }
    gaps.push((at, offset + length));
    for (start, end) in gaps.into_iter().filter(|(s, e)| s < e) {
        let checked = match connection
            .read(key.target, key.object, start, end - start)
            .await
        {
            Ok(bytes) => shared
                .oracle()
                .check_read(key, start, end - start, &bytes)
                .map_err(|violation| violation.to_string()),
            Err(error) => Err(format!("[{start}, {end}) failed: {error}")),
        };
        shared.events.record(
            "read_around_lost",
            format_args!("c{c} {key} @{start}+{}: {}", end - start, checked.is_ok()),
        );
        if let Err(why) = checked {
            shared.fail(format!(
                "read by client {c} around the bytes the server marked lost, after the final \
                 recovery: {why}"
            ));
        }
    }
}

/// A client told "acknowledged writes were lost" (evicted in a server's recovery: the
/// protocol's stated limit) has every acknowledged write of its objects excused.
fn note_reported_loss(client: &SimClient, error: &FabricError, shared: &Shared) {
    if let FabricError::Remote { message, .. } = error
        && message.contains("were lost in replay")
    {
        shared.events.record(
            "loss_reported",
            format_args!("c{}: {message}", client.index),
        );
        let mut oracle = shared.oracle();
        for (_, key) in &client.objects {
            oracle.writes_reported_lost(*key);
        }
    }
}

/// An error's kind, without the parts (xids, wall-clock numbers) that differ run to run.
fn error_class(error: &FabricError) -> String {
    match error {
        FabricError::Remote { code, .. } => format!("remote errno {code}"),
        other => {
            let text = other.to_string();
            text.split(':').next().unwrap_or_default().to_string()
        }
    }
}

/// The final check: every client reconnects to every server (replaying what it kept), reads
/// back each of its objects whole, and commits.
async fn final_check(clients: &[SimClient], shared: &Arc<Shared>) {
    let mut tasks = Vec::new();
    for client in clients {
        let client = SimClient {
            index: client.index,
            connections: client.connections.clone(),
            objects: client.objects.clone(),
        };
        let shared = Arc::clone(shared);
        tasks.push(tokio::spawn(async move {
            for connection in &client.connections {
                match connection.reconnect_and_replay().await {
                    Ok(report) => {
                        shared.events.record(
                            "replayed",
                            format_args!(
                                "c{} to {}: {} replayed, {} lost",
                                client.index,
                                connection.server(),
                                report.replayed,
                                report.lost.len()
                            ),
                        );
                        let mut oracle = shared.oracle();
                        for lost in report.lost {
                            oracle.writes_reported_lost(ObjectKey {
                                target: lost.target,
                                object: lost.object,
                            });
                        }
                    }
                    Err(error) => shared.fail(format!(
                        "client {} could not reconnect to {} after the final restart: {error}",
                        client.index,
                        connection.server()
                    )),
                }
            }
            for (s, key) in &client.objects {
                let connection = &client.connections[*s];
                let length = OBJECT_BLOCKS * BLOCK_BYTES;
                read(
                    &client,
                    u32::MAX,
                    connection,
                    *key,
                    0,
                    length,
                    &shared,
                    true,
                )
                .await;
                if let Err(error) = connection.sync(key.target).await {
                    shared.fail(format!(
                        "client {} could not sync target {}: {error}",
                        client.index, key.target
                    ));
                }
            }
        }));
    }
    for task in tasks {
        if let Err(error) = task.await {
            shared.fail(format!("a final check task ended abnormally: {error}"));
        }
    }
}

/// The fault schedule: until the workload is `done`, one fault at a time — a server crashed
/// and restarted, a client away past that restart's recovery window, a node partitioned and
/// healed, a router crashed and restarted — with message faults throughout.
async fn nemesis(
    mut rng: SplitMix64,
    world: Arc<tokio::sync::Mutex<World>>,
    faults: Arc<NetworkFaults>,
    shared: Arc<Shared>,
    done: Arc<AtomicBool>,
    crashes: bool,
    recovery_window: Duration,
) -> Result<(), SimError> {
    let events = &shared.events;
    let (servers, routers, clients) = {
        let world = world.lock().await;
        (world.server_nids().len(), world.routers(), 4)
    };
    while !done.load(Ordering::Relaxed) {
        tokio::time::sleep(Duration::from_millis(500 + rng.next() % 3500)).await;
        let down = Duration::from_millis(200 + rng.next() % 3000);
        match rng.next() % 6 {
            0..=2 if crashes && rng.next().is_multiple_of(8) => {
                // A client away while a server restarts, and past its recovery window: the
                // window evicts it, and what it kept for that server is lost — and said so
                // when it comes back.
                let c = FIRST_CLIENT + (rng.next() % clients) as u32;
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
            _ => {
                // A client or a server, cut off for a while.
                let pick = rng.next() % (clients + servers as u64);
                let number = if pick < clients {
                    FIRST_CLIENT + pick as u32
                } else {
                    FIRST_SERVER + (pick - clients) as u32
                };
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

#[cfg(test)]
mod tests {
    use super::lost_ranges;

    #[test]
    fn the_lost_ranges_an_eio_names_are_read_from_it() {
        let message = "OST0003: object 0x65 lost 12288 acknowledged bytes at [8192, 16384), \
                       [20480, 24576) when the server restarted: no client replayed them";
        assert_eq!(
            lost_ranges(message),
            Some(vec![(8192, 16384), (20480, 24576)])
        );
        assert_eq!(lost_ranges("OST0003: I/O error"), None);
    }
}
