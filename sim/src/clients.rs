//! The direct clients: each talks to the storage servers itself (`OstClient`, Lustre's OSC),
//! owns two objects it alone writes, and — in a world with a metadata server — creates files
//! there (each with a layout on the world's targets), creates their objects, writes and reads
//! them through the storage path, and unlinks some. Every read is checked by the data oracle;
//! every answer about a file by the namespace oracle.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::FabricError;
use iopath_fabric::fault::SplitMix64;
use iopath_fabric::frame::status::errno;
use iopath_mds::{Layout, MdsClient, MdsError, StripeRequest};
use iopath_ost_client::OstClient;

use crate::SimError;
use crate::namespace::Found;
use crate::oracle::Outcome;
use crate::pattern::{self, ObjectKey, WORD_BYTES};
use crate::shared::{BLOCK_BYTES, OBJECT_BLOCKS, Shared, error_class};
use crate::world::{FIRST_CLIENT, World, WorldConfig};

/// Objects each client owns (and alone writes) from the start.
const OBJECTS_PER_CLIENT: u64 = 2;
/// Where a direct client's own objects are numbered from in a world with a metadata server,
/// whose files' objects are numbered from 1 on every target: far above them, and small enough
/// for the pattern's words to tell them apart.
const OWN_OBJECTS_WITH_MDS: u64 = 1 << 20;
/// Files a client has at once.
const FILES_MAX: usize = 3;
/// Of every 100 operations in a world with a metadata server: creates, then unlinks; the rest
/// write and read.
const CREATE_PERCENT: u64 = 12;
const UNLINK_PERCENT: u64 = 6;

/// A file a client created at the metadata server.
#[derive(Debug, Clone)]
pub(crate) struct SimFile {
    path: String,
    /// Its objects: the server holding each, the object, and whether it exists there yet.
    objects: Vec<(usize, ObjectKey, bool)>,
}

/// One direct client: its connections (one per server), the objects it owns, and in a world
/// with a metadata server its connection there and the files it made.
pub(crate) struct SimClient {
    pub(crate) index: u32,
    connections: Vec<Arc<OstClient>>,
    objects: Vec<(usize, ObjectKey)>,
    mds: Option<MdsClient>,
    /// Which server holds each target.
    target_servers: BTreeMap<u32, usize>,
    files: Vec<SimFile>,
    files_made: u32,
}

impl SimClient {
    /// Its connection to the metadata server, if the world has one.
    pub(crate) fn mds(&self) -> Option<MdsClient> {
        self.mds.clone()
    }

    /// The objects it writes and reads now: its own, and its files' that exist.
    fn usable_objects(&self) -> Vec<(usize, ObjectKey)> {
        let files = self.files.iter().flat_map(|f| {
            f.objects
                .iter()
                .filter(|(_, _, made)| *made)
                .map(|(s, key, _)| (*s, *key))
        });
        self.objects.iter().copied().chain(files).collect()
    }
}

/// Starts every client node, connects it to every server (and the metadata server), and
/// creates its objects (before any fault).
pub(crate) async fn connect_clients(
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
    let object_base = if config.mds { OWN_OBJECTS_WITH_MDS } else { 0 };
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
                object: object_base + 1 + u64::from(c) * 100 + k,
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
            mds: world.mds_nid().map(|mds| MdsClient::new(node.clone(), mds)),
            target_servers: every_target.iter().map(|(s, t)| (*t, *s)).collect(),
            files: Vec::new(),
            files_made: 0,
        });
    }
    Ok(clients)
}

/// Lustre's pinger on every connection, as the client library runs it: an idle client
/// notices a server restart within a ping and replays, instead of being evicted for being
/// idle (which would cost the other clients too: a window that evicts anyone counts every
/// byte its startup cut as lost). Writes a ping finds lost are the client's to be told of.
pub(crate) fn start_pingers(clients: &[SimClient], shared: &Arc<Shared>) {
    for client in clients {
        for connection in &client.connections {
            let shared = Arc::clone(shared);
            let c = client.index;
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
                    for lost in writes {
                        oracle.writes_reported_lost(ObjectKey {
                            target: lost.target,
                            object: lost.object,
                        });
                    }
                },
            ));
        }
    }
}

/// A client's workload: `ops` writes and reads of its own objects (and, with a metadata
/// server, creates and unlinks of files and I/O to their objects), one at a time, with short
/// pauses; every read checked by the oracle. Returns the client, with the files it has.
pub(crate) async fn workload(
    mut client: SimClient,
    mut rng: SplitMix64,
    ops: u32,
    shared: Arc<Shared>,
) -> SimClient {
    for op in 0..ops {
        tokio::time::sleep(Duration::from_millis(rng.next() % 300)).await;
        if client.mds.is_some() {
            make_missing_objects(&mut client, &shared).await;
            let pick = rng.next() % 100;
            if pick < CREATE_PERCENT && client.files.len() < FILES_MAX {
                create(&mut client, op, &mut rng, &shared).await;
                continue;
            }
            if pick < CREATE_PERCENT + UNLINK_PERCENT && !client.files.is_empty() {
                let f = (rng.next() % client.files.len() as u64) as usize;
                unlink(&mut client, op, f, &shared).await;
                continue;
            }
        }
        let objects = client.usable_objects();
        let (s, key) = objects[(rng.next() % objects.len() as u64) as usize];
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
    client
}

/// Creates file `/c<client>-f<n>` at the metadata server with a layout of one or two stripes,
/// then its objects on their targets.
async fn create(client: &mut SimClient, op: u32, rng: &mut SplitMix64, shared: &Shared) {
    let Some(mds) = &client.mds else { return };
    let c = client.index;
    let path = format!("/c{c}-f{}", client.files_made);
    client.files_made += 1;
    let stripe = StripeRequest {
        stripe_size_bytes: iopath_mds::layout::STRIPE_SIZE_UNIT_BYTES,
        stripe_count: 1 + (rng.next() % 2) as i64,
        stripe_offset: iopath_mds::layout::STRIPE_OFFSET_ANY,
    };
    match mds.create(&path, 0o644, stripe).await {
        Ok(attributes) => {
            let Some(layout) = attributes.layout else {
                shared.fail(format!(
                    "client {c}: the create of {path} answered no layout"
                ));
                return;
            };
            shared.events.record(
                "mds_create_ok",
                format_args!("c{c} op{op} {path}: {}", objects_of(&layout)),
            );
            shared.names().created(&path, layout.clone());
            let mut objects = Vec::new();
            for object in layout.objects() {
                let Some(&s) = client.target_servers.get(&object.target) else {
                    shared.fail(format!(
                        "client {c}: {path}'s layout names target {}, which no server holds",
                        object.target
                    ));
                    return;
                };
                let key = ObjectKey {
                    target: object.target,
                    object: object.object_id,
                };
                objects.push((s, key, false));
            }
            client.files.push(SimFile { path, objects });
            make_missing_objects(client, shared).await;
        }
        Err(error) => {
            shared.events.record(
                "mds_create_failed",
                format_args!("c{c} op{op} {path}: {}", mds_error_class(&error)),
            );
            if let Err(violation) = shared.names().create_failed(&path, error.errno()) {
                shared.fail(format!("client {c}: {violation}"));
            }
        }
    }
}

/// Creates on their targets the objects of the client's files that do not exist yet (a
/// create that failed is tried again at the next operation).
async fn make_missing_objects(client: &mut SimClient, shared: &Shared) {
    let c = client.index;
    for file in &mut client.files {
        for (s, key, made) in &mut file.objects {
            if *made {
                continue;
            }
            match client.connections[*s].create(key.target, key.object).await {
                Ok(_) => *made = true,
                Err(error) => shared.events.record(
                    "object_create_failed",
                    format_args!("c{c} {key} of {}: {}", file.path, error_class(&error)),
                ),
            }
        }
    }
}

/// Unlinks the client's file `f` at the metadata server, then destroys its objects. The file
/// leaves the client's list whatever the answer: an unlink that may have run leaves it gone
/// or there, and nothing of it is read again.
async fn unlink(client: &mut SimClient, op: u32, f: usize, shared: &Shared) {
    let Some(mds) = &client.mds else { return };
    let c = client.index;
    let file = client.files.remove(f);
    match mds.unlink(&file.path).await {
        Ok(removal) => {
            // A file of one name, its only one removed: its layout comes back, to destroy.
            let Some(layout) = removal.layout else {
                shared.fail(format!(
                    "client {c}: the unlink of {} gave no layout to destroy",
                    file.path
                ));
                return;
            };
            shared.events.record(
                "mds_unlink_ok",
                format_args!("c{c} op{op} {}: {}", file.path, objects_of(&layout)),
            );
            if let Err(violation) = shared.names().unlinked(&file.path, &layout) {
                shared.fail(format!("client {c}: {violation}"));
            }
            // As a client does once the metadata server let go of the file.
            for (s, key, made) in &file.objects {
                if *made
                    && let Err(error) = client.connections[*s].destroy(key.target, key.object).await
                {
                    shared.events.record(
                        "object_destroy_failed",
                        format_args!("c{c} {key}: {}", error_class(&error)),
                    );
                }
            }
        }
        Err(error) => {
            shared.events.record(
                "mds_unlink_failed",
                format_args!("c{c} op{op} {}: {}", file.path, mds_error_class(&error)),
            );
            if let Err(violation) = shared.names().unlink_failed(&file.path, error.errno()) {
                shared.fail(format!("client {c}: {violation}"));
            }
        }
    }
}

/// A layout's objects, for an event line.
pub(crate) fn objects_of(layout: &Layout) -> String {
    let objects: Vec<String> = layout
        .objects()
        .iter()
        .map(|o| format!("{}:{}", o.target, o.object_id))
        .collect();
    objects.join(",")
}

/// A metadata error's kind, without the parts that differ run to run.
fn mds_error_class(error: &MdsError) -> String {
    match error {
        MdsError::Fabric(fabric) => error_class(fabric),
        other => format!("errno {}", other.errno()),
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
        Ok(bytes) => shared.read_back(
            "read_ok",
            &format!("client {c}"),
            &format!("c{c} op{op}"),
            key,
            offset,
            length,
            &bytes,
            last,
        ),
        Err(error) => {
            note_reported_loss(client, &error, shared);
            shared.events.record(
                "read_failed",
                format_args!("c{c} op{op} {key}: {}", error_class(&error)),
            );
            if !last || shared.oracle().has_reported_loss(key) {
                return;
            }
            let who = format!("client {c}");
            let refused = match &error {
                FabricError::Remote { code, message, .. } => Some((*code, message.as_str())),
                _ => None,
            };
            let Some(lost) = refusal_is_honest(&who, key, refused, &error, shared) else {
                return;
            };
            read_around(
                &who,
                key,
                (offset, length),
                &lost,
                shared,
                |start, len| async move {
                    connection
                        .read(key.target, key.object, start, len)
                        .await
                        .map_err(|e| e.to_string())
                },
            )
            .await;
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
/// refuses to serve, each gap by `read_gap(start, length)`; `who` names the reader.
async fn read_around<F, Fut>(
    who: &str,
    key: ObjectKey,
    (offset, length): (u64, u64),
    lost: &[(u64, u64)],
    shared: &Shared,
    mut read_gap: F,
) where
    F: FnMut(u64, u64) -> Fut,
    Fut: std::future::Future<Output = Result<Bytes, String>>,
{
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
        let checked = match read_gap(start, end - start).await {
            Ok(bytes) => shared
                .oracle()
                .check_read(key, start, end - start, &bytes)
                .map_err(|violation| violation.to_string()),
            Err(error) => Err(format!("[{start}, {end}) failed: {error}")),
        };
        shared.events.record(
            "read_around_lost",
            format_args!("{who} {key} @{start}+{}: {}", end - start, checked.is_ok()),
        );
        if let Err(why) = checked {
            shared.fail(format!(
                "read by {who} around the bytes the server marked lost, after the final \
                 recovery: {why}"
            ));
        }
    }
}

/// A read after the final recovery refused with EIO (`code`, `message`): whether the refusal
/// is honest — it names lost ranges, and they hold no acknowledged write nobody was told of
/// (then the caller reads around them). Records the failure otherwise.
pub(crate) fn refusal_is_honest(
    who: &str,
    key: ObjectKey,
    refused: Option<(u32, &str)>,
    error: &dyn std::fmt::Display,
    shared: &Shared,
) -> Option<Vec<(u64, u64)>> {
    let lost = refused
        .filter(|(code, _)| *code == errno::EIO)
        .and_then(|(_, message)| lost_ranges(message));
    let Some(lost) = lost else {
        shared.fail(format!(
            "read by {who} of {key} failed after the final recovery: {error}"
        ));
        return None;
    };
    // The server refused bytes it marked lost: they must hold nothing acknowledged that
    // nobody was told of, and everything around them must read back.
    if let Err(violation) = shared.oracle().check_lost(key, &lost) {
        shared.fail(format!(
            "read by {who} after the final recovery: {violation} ({error})"
        ));
        return None;
    }
    Some(lost)
}

/// A client told "acknowledged writes were lost" (evicted in a server's recovery: the
/// protocol's stated limit) has every acknowledged write of its objects excused.
fn note_reported_loss(client: &SimClient, error: &FabricError, shared: &Shared) {
    if let Some(message) = reported_loss(error) {
        shared.events.record(
            "loss_reported",
            format_args!("c{}: {message}", client.index),
        );
        let mut oracle = shared.oracle();
        for (_, key) in client.usable_objects() {
            oracle.writes_reported_lost(key);
        }
    }
}

/// The message of `error` if it tells its client that acknowledged writes were lost (it was
/// evicted in a server's recovery).
pub(crate) fn reported_loss(error: &FabricError) -> Option<&str> {
    match error {
        // A client's own replay found them; or, through a fyod, the fyod's pinger did and the
        // file's fsync says so.
        FabricError::Remote { message, .. }
            if message.contains("were lost in replay")
                || (message.contains("acknowledged writes to object")
                    && message.contains("were lost when")) =>
        {
            Some(message)
        }
        _ => None,
    }
}

/// The final check: every client reconnects to every server (replaying what it kept), reads
/// back each of its objects whole, and commits.
pub(crate) async fn final_check(clients: Vec<SimClient>, shared: &Arc<Shared>) {
    let mut tasks = Vec::new();
    for client in clients {
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
                // What the connection found lost before — by a call that met an eviction, which
                // failed with the server's own error — is what the client library's fsync
                // reports (`File::fsync`): the application is told (seed 4000787, a destroy
                // that met the eviction, found the kept writes lost and said so in ESTALE).
                let earlier = connection.lost_writes();
                if !earlier.is_empty() {
                    shared.events.record(
                        "loss_reported",
                        format_args!(
                            "c{}: fsync finds {} kept writes lost at {}",
                            client.index,
                            earlier.len(),
                            connection.server()
                        ),
                    );
                    let mut oracle = shared.oracle();
                    for lost in earlier {
                        oracle.writes_reported_lost(ObjectKey {
                            target: lost.target,
                            object: lost.object,
                        });
                    }
                }
            }
            for (s, key) in client.usable_objects() {
                let connection = &client.connections[s];
                let length = OBJECT_BLOCKS * BLOCK_BYTES;
                read(&client, u32::MAX, connection, key, 0, length, &shared, true).await;
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

/// The namespace check after the final recovery: every path a client created or removed,
/// looked up at the restarted metadata server by `mds`.
pub(crate) async fn check_names(mds: &MdsClient, shared: &Shared) {
    let paths = shared.names().paths();
    for path in paths {
        let found = match mds.open(&path).await {
            Ok(attributes) => match attributes.layout {
                Some(layout) => Found::File(layout),
                None => {
                    shared.fail(format!(
                        "{path} is not a regular file after the final recovery"
                    ));
                    continue;
                }
            },
            Err(error) if error.errno() == iopath_fabric::frame::status::errno::ENOENT => {
                Found::Missing
            }
            Err(error) => {
                shared.fail(format!(
                    "could not look {path} up after the final recovery: {error}"
                ));
                continue;
            }
        };
        shared.events.record(
            "name_checked",
            format_args!(
                "{path}: {}",
                match &found {
                    Found::File(layout) => objects_of(layout),
                    Found::Missing => "missing".into(),
                }
            ),
        );
        if let Err(violation) = shared.names().check(&path, &found) {
            shared.fail(format!("after the final recovery: {violation}"));
        }
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
