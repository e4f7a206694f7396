//! The fyod clients: compute nodes that reach the file system only through a fyod, with the
//! real `FyodClient`. Each owns two files it alone opens (created at first open, one stripe,
//! so a file's bytes are its object's), writes and reads them, and fsyncs now and then.
//!
//! What a fyod promises, and so what the oracle holds it to:
//!
//! - A write the fyod acknowledged is kept across storage-server crashes: the fyod replays it
//!   (PFS: by descriptor, from the compute node's pinned memory; UFS: from its own copy, or
//!   its write-behind cache has not sent it yet). It must read back.
//! - Across the fyod's own crash nothing it held survives: handles, the write-behind cache,
//!   the writes it kept for replay. The application is told by the next call on the handle:
//!   EBADF (the restarted fyod does not know the handle, or the handle broke when a call was
//!   lost in transit). Writes acknowledged through that handle since its last successful
//!   fsync are then excused — they may or may not read back, and a read of the file may fail
//!   — and nothing else is. A write before a successful fsync must read back whatever
//!   happened since.
//! - A file's first open with create says it created the file, and every open gives the
//!   layout the first one did.

use std::sync::Arc;
use std::time::Duration;

use iopath_fabric::FabricError;
use iopath_fabric::fault::SplitMix64;
use iopath_fabric::frame::status::errno;
use iopath_forwarder::{CallKind, ForwarderError, FyodClient, FyodFile, OpenOptions};
use iopath_mds::{Layout, StripeRequest};

use crate::SimError;
use crate::clients::{objects_of, refusal_is_honest, reported_loss};
use crate::oracle::Outcome;
use crate::pattern::{self, ObjectKey, WORD_BYTES};
use crate::shared::{BLOCK_BYTES, OBJECT_BLOCKS, Shared, error_class};
use crate::world::{FIRST_FYOD_CLIENT, World};

/// Files each fyod client owns.
const FILES_PER_CLIENT: usize = 2;

/// A file a fyod client owns.
#[derive(Debug)]
struct FyodSimFile {
    path: String,
    /// How its calls are served.
    call: CallKind,
    /// The open handle, while it is usable.
    handle: Option<FyodFile>,
    /// The first successful open's layout, and the object that holds the file's bytes.
    opened: Option<(Layout, ObjectKey)>,
    /// Whether an open was tried before (its create may have run).
    tried: bool,
    /// Writes acknowledged through the handle since its last successful fsync.
    unsynced: Vec<u32>,
}

/// One compute node behind a fyod.
pub(crate) struct FyodSimClient {
    index: u32,
    client: FyodClient,
    files: Vec<FyodSimFile>,
}

/// Starts fyod client `c` on its own node and connects it to fyod `fyod` (before any
/// fault). `rng` draws how each of its files' calls are served.
pub(crate) async fn connect(
    world: &World,
    c: u32,
    fyod: usize,
    rng: &mut SplitMix64,
) -> Result<FyodSimClient, SimError> {
    let number = FIRST_FYOD_CLIENT + c;
    let node = world.fyod_client_node(c).await?;
    let nid = world.fyod_nids()[fyod];
    let client = FyodClient::connect(node, nid, u64::from(number))
        .await
        .map_err(|e| SimError::Setup(format!("connect fyod client {c} to {nid}: {e}")))?;
    let files = (0..FILES_PER_CLIENT)
        .map(|k| FyodSimFile {
            path: format!("/y{c}-f{k}"),
            call: if rng.next().is_multiple_of(2) {
                CallKind::Sync
            } else {
                CallKind::Async
            },
            handle: None,
            opened: None,
            tried: false,
            unsynced: Vec::new(),
        })
        .collect();
    Ok(FyodSimClient {
        index: c,
        client,
        files,
    })
}

/// A fyod client's workload: `ops` writes, reads and fsyncs of its files, one at a time,
/// with short pauses, opening a file again when its handle is gone. Returns the client.
pub(crate) async fn workload(
    mut client: FyodSimClient,
    mut rng: SplitMix64,
    ops: u32,
    shared: Arc<Shared>,
) -> FyodSimClient {
    for op in 0..ops {
        tokio::time::sleep(Duration::from_millis(rng.next() % 300)).await;
        let f = (rng.next() % client.files.len() as u64) as usize;
        let first = rng.next() % OBJECT_BLOCKS;
        let blocks = 1 + rng.next() % (OBJECT_BLOCKS - first).min(3);
        let pick = rng.next() % 100;
        if !open(&mut client, f, op, &shared).await {
            continue;
        }
        let (offset, length) = (first * BLOCK_BYTES, blocks * BLOCK_BYTES);
        if pick < 60 {
            write(&mut client, f, op, offset, length, &shared).await;
        } else if pick < 88 {
            read(&mut client, f, op, offset, length, &shared, false).await;
        } else {
            fsync(&mut client, f, op, &shared).await;
        }
    }
    client
}

/// Opens file `f` if it has no usable handle (creating it at the first try); whether it is
/// open now.
async fn open(client: &mut FyodSimClient, f: usize, op: u32, shared: &Shared) -> bool {
    let c = client.index;
    let file = &mut client.files[f];
    if file.handle.is_some() {
        return true;
    }
    let first_try = !file.tried;
    file.tried = true;
    let options = OpenOptions {
        create: true,
        stripe: Some(StripeRequest {
            stripe_size_bytes: iopath_mds::layout::STRIPE_SIZE_UNIT_BYTES,
            stripe_count: 1,
            stripe_offset: iopath_mds::layout::STRIPE_OFFSET_ANY,
        }),
        call: file.call,
        ..OpenOptions::default()
    };
    let handle = match client.client.open(&file.path, options).await {
        Ok(handle) => handle,
        Err(error) => {
            shared.events.record(
                "fyod_open_failed",
                format_args!("y{c} op{op} {}: {}", file.path, fyod_error_class(&error)),
            );
            return false;
        }
    };
    let layout = handle.layout().clone();
    shared.events.record(
        "fyod_open_ok",
        format_args!(
            "y{c} op{op} {}: {} created {}",
            file.path,
            objects_of(&layout),
            handle.created()
        ),
    );
    if first_try && !handle.created() {
        shared.fail(format!(
            "fyod client {c}: the first open of {} said the file existed: its create ran twice",
            file.path
        ));
    }
    match &file.opened {
        Some((first, _)) if *first != layout => shared.fail(format!(
            "fyod client {c}: {} opened with layout {layout:?}, first opened with {first:?}",
            file.path
        )),
        Some(_) => {}
        None => {
            let Some(object) = layout.objects().first() else {
                shared.fail(format!("fyod client {c}: {} has no object", file.path));
                return false;
            };
            let key = ObjectKey {
                target: object.target,
                object: object.object_id,
            };
            file.opened = Some((layout, key));
        }
    }
    file.handle = Some(handle);
    true
}

/// What a failed call on file `f` told the client: a handle gone (EBADF) excuses the writes
/// acknowledged through it since its last fsync, and the file is opened again at its next
/// use; "writes were lost in replay" excuses every write of the client's files.
fn failed(client: &mut FyodSimClient, f: usize, error: &ForwarderError, shared: &Shared) {
    let c = client.index;
    if let ForwarderError::Fabric(fabric) = error
        && let Some(message) = reported_loss(fabric)
    {
        shared
            .events
            .record("loss_reported", format_args!("y{c}: {message}"));
        let mut oracle = shared.oracle();
        for file in &client.files {
            if let Some((_, key)) = file.opened {
                oracle.writes_reported_lost(key);
            }
        }
    }
    if error.errno() != errno::EBADF {
        return;
    }
    let file = &mut client.files[f];
    file.handle = None;
    let unsynced = std::mem::take(&mut file.unsynced);
    if let Some((_, key)) = file.opened {
        shared.events.record(
            "fyod_handle_gone",
            format_args!(
                "y{c} {}: {} writes since its fsync excused",
                file.path,
                unsynced.len()
            ),
        );
        shared.oracle().writes_maybe_lost(key, &unsynced);
    }
}

async fn write(
    client: &mut FyodSimClient,
    f: usize,
    op: u32,
    offset: u64,
    length: u64,
    shared: &Shared,
) {
    let c = client.index;
    let file = &client.files[f];
    let (Some(handle), Some((_, key))) = (file.handle.clone(), file.opened.as_ref()) else {
        return;
    };
    let key = *key;
    let words = length / WORD_BYTES;
    let version = shared.oracle().begin_write(key, offset, words);
    let data = bytes::Bytes::from(pattern::bytes(key, version, offset, words));
    match handle.write_at(offset, data).await {
        Ok(_) => {
            shared
                .oracle()
                .end_write(key, version, Outcome::Acknowledged);
            client.files[f].unsynced.push(version);
            shared.events.record(
                "fyod_write_ok",
                format_args!("y{c} op{op} {key} v{version} @{offset}+{length}"),
            );
        }
        Err(error) => {
            shared.oracle().end_write(key, version, Outcome::Failed);
            shared.events.record(
                "fyod_write_failed",
                format_args!("y{c} op{op} {key} v{version}: {}", fyod_error_class(&error)),
            );
            failed(client, f, &error, shared);
        }
    }
}

async fn read(
    client: &mut FyodSimClient,
    f: usize,
    op: u32,
    offset: u64,
    length: u64,
    shared: &Shared,
    last: bool,
) {
    let c = client.index;
    let file = &client.files[f];
    let (Some(handle), Some((_, key))) = (file.handle.clone(), file.opened.as_ref()) else {
        return;
    };
    let key = *key;
    match handle.read_at(offset, length).await {
        Ok(bytes) => shared.read_back(
            "fyod_read_ok",
            &format!("fyod client {c}"),
            &format!("y{c} op{op}"),
            key,
            offset,
            length,
            &bytes,
            last,
        ),
        Err(error) => {
            shared.events.record(
                "fyod_read_failed",
                format_args!("y{c} op{op} {key}: {}", fyod_error_class(&error)),
            );
            failed(client, f, &error, shared);
            if !last || shared.oracle().has_reported_loss(key) {
                return;
            }
            // As on the storage path, the server may refuse bytes it marked lost if they hold
            // nothing acknowledged that nobody was told of. The bytes around them cannot be
            // read through a fyod: it asks the object's size first, which the server refuses
            // while any of it is lost.
            let refused = match &error {
                ForwarderError::Fabric(FabricError::Remote { code, message, .. }) => {
                    Some((*code, message.as_str()))
                }
                _ => None,
            };
            let who = format!("fyod client {c}");
            if refusal_is_honest(&who, key, refused, &error, shared).is_some() {
                shared
                    .events
                    .record("fyod_read_refused_lost", format_args!("y{c} {key}"));
            }
        }
    }
}

/// fsyncs file `f`; whether it succeeded.
async fn fsync(client: &mut FyodSimClient, f: usize, op: u32, shared: &Shared) -> bool {
    let c = client.index;
    let Some(handle) = client.files[f].handle.clone() else {
        return false;
    };
    let path = client.files[f].path.clone();
    match handle.fsync().await {
        Ok(()) => {
            client.files[f].unsynced.clear();
            shared
                .events
                .record("fyod_fsync_ok", format_args!("y{c} op{op} {path}"));
            true
        }
        Err(error) => {
            shared.events.record(
                "fyod_fsync_failed",
                format_args!("y{c} op{op} {path}: {}", fyod_error_class(&error)),
            );
            failed(client, f, &error, shared);
            false
        }
    }
}

/// The final check: each file's handle fsync'd (a handle gone is told here, as the
/// application would be told at its close), then each file opened again — with the layout
/// it first had — and read back whole.
pub(crate) async fn final_check(clients: Vec<FyodSimClient>, shared: &Arc<Shared>) {
    let mut tasks = Vec::new();
    for mut client in clients {
        let shared = Arc::clone(shared);
        tasks.push(tokio::spawn(async move {
            let c = client.index;
            for f in 0..client.files.len() {
                let told = |client: &FyodSimClient| {
                    client.files[f]
                        .opened
                        .as_ref()
                        .is_some_and(|(_, key)| shared.oracle().has_reported_loss(*key))
                };
                if client.files[f].handle.is_some()
                    && !fsync(&mut client, f, u32::MAX, &shared).await
                    && client.files[f].handle.is_some()
                    && !told(&client)
                {
                    shared.fail(format!(
                        "fyod client {c} could not fsync {} after the final recovery",
                        client.files[f].path
                    ));
                }
                client.files[f].handle = None;
                if client.files[f].opened.is_none() {
                    continue;
                }
                if !open(&mut client, f, u32::MAX, &shared).await {
                    shared.fail(format!(
                        "fyod client {c} could not open {} again after the final recovery",
                        client.files[f].path
                    ));
                    continue;
                }
                let length = OBJECT_BLOCKS * BLOCK_BYTES;
                read(&mut client, f, u32::MAX, 0, length, &shared, true).await;
            }
        }));
    }
    for task in tasks {
        if let Err(error) = task.await {
            shared.fail(format!("a final check task ended abnormally: {error}"));
        }
    }
}

/// A fyod error's kind, without the parts that differ run to run.
fn fyod_error_class(error: &ForwarderError) -> String {
    match error {
        ForwarderError::Fabric(fabric) => error_class(fabric),
        other => format!("errno {}", other.errno()),
    }
}
