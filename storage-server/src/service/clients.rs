//! [`ClientRegistry`]: the clients a server has served, kept on disk so that after a crash it
//! knows whom to wait for, each with the NID it connected from and its session (Lustre's
//! `last_rcvd` client slots).
//!
//! A client is written (and made durable) before its first connect is answered. The NID binds
//! the id: a request from another NID that claims it — a replay, its end of replay, a connect
//! or a disconnect — is refused, before and after a restart, until the client disconnects or
//! is evicted.
//!
//! The **session** is Lustre's connection epoch: a number given when the client is put on the
//! list, and kept while it stays there, across restarts. An eviction takes the client off; its
//! next connect puts it on again under a new session. A write acknowledged under one session
//! can be replayed only under the same: after an eviction the write is gone, even if the
//! client was put back on the list before it could replay (its connect's reply lost, then a
//! crash) and a later start's window waits for it.
//!
//! **On disk** the list is a log, `dir/clients`: a line per client put on it (`id nid
//! session`) and a line per client taken off (`-id`), each appended and fsync'd before its
//! effect is answered; a start reads it in order and writes it out again compacted. The file
//! keeps [`RESERVE_BYTES`] allocated past its end (`fallocate`, Lustre preallocates its client
//! slots the same way), so a server on a full disk still takes a client's connect and
//! disconnect — `lfs df` and `lfs getstripe` on a full file system work — where a rewrite or an
//! append needing a new block failed with ENOSPC.

use std::fs::{File, OpenOptions};
use std::io::Write as _;
use std::os::fd::AsRawFd as _;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};

use iopath_fabric::Nid;
use tracing::warn;

use crate::error::StorageError;

/// Bytes kept allocated past the list's end for lines to come: about a thousand clients put
/// on or taken off. Topped up when less than half is left (if the disk has room then).
pub const RESERVE_BYTES: u64 = 64 << 10;

/// The clients a server has served (see the module's documentation).
#[derive(Debug)]
pub struct ClientRegistry {
    path: PathBuf,
    state: Mutex<State>,
    clients_max: usize,
    /// The session the next client put on the list gets: unique to this server start (it
    /// begins at the start's boot id) and counted up from there.
    next_session: AtomicU64,
}

#[derive(Debug)]
struct State {
    known: Known,
    /// The log, open for appending.
    file: File,
    /// Its length: where the next line goes.
    length_bytes: u64,
    /// Allocated up to here (`fallocate` with `KEEP_SIZE`).
    reserved_to_bytes: u64,
}

/// A client on the list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct KnownClient {
    /// Its id (Lustre's client UUID).
    id: u64,
    /// The NID it connected from; none on a line written before clients were bound to NIDs
    /// (bound at its next connect).
    nid: Option<Nid>,
    /// Its session; 0 on a line written before sessions, which checks nothing.
    session: u64,
}

/// One line of the log.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Line {
    /// Put on the list (or bound to a NID, or given a session).
    Listed(KnownClient),
    /// Taken off.
    Removed(u64),
}

impl Line {
    /// `id nid session`; `id nid` or `id` alone from before sessions or the binding; `-id`.
    fn parse(line: &str) -> Option<Line> {
        if let Some(id) = line.trim().strip_prefix('-') {
            return id.parse().ok().map(Line::Removed);
        }
        let mut words = line.split_whitespace();
        let id = words.next()?.parse().ok()?;
        let nid = match words.next() {
            Some(word) => Some(word.parse().ok()?),
            None => None,
        };
        let session = match words.next() {
            Some(word) => word.parse().ok()?,
            None => 0,
        };
        words
            .next()
            .is_none()
            .then_some(Line::Listed(KnownClient { id, nid, session }))
    }

    fn text(&self) -> String {
        match self {
            Line::Listed(KnownClient {
                id,
                nid: Some(nid),
                session,
            }) => format!("{id} {nid} {session}\n"),
            Line::Listed(KnownClient { id, nid: None, .. }) => format!("{id}\n"),
            Line::Removed(id) => format!("-{id}\n"),
        }
    }
}

/// The clients on the list in order of first listing, found by id in constant time: every
/// request is checked against its client's entry, and a server may know tens of thousands,
/// each of which disconnects in turn. A removed client leaves a hole, and the list closes
/// its holes once they are half of it, so each change costs constant time on average.
#[derive(Debug, Default)]
struct Known {
    list: Vec<Option<KnownClient>>,
    /// Each listed client's place in `list`.
    at: std::collections::HashMap<u64, usize>,
}

impl Known {
    fn get(&self, id: u64) -> Option<&KnownClient> {
        self.at.get(&id).and_then(|&i| self.list[i].as_ref())
    }

    /// Puts `client` on the list, over its earlier entry if it has one (keeping its place).
    fn put(&mut self, client: KnownClient) {
        match self.at.get(&client.id) {
            Some(&i) => self.list[i] = Some(client),
            None => {
                self.at.insert(client.id, self.list.len());
                self.list.push(Some(client));
            }
        }
    }

    /// Takes the clients `gone` names off the list.
    fn remove(&mut self, gone: &std::collections::HashSet<u64>) {
        for id in gone {
            if let Some(i) = self.at.remove(id) {
                self.list[i] = None;
            }
        }
        if self.at.len() < self.list.len() / 2 {
            self.list.retain(Option::is_some);
            self.at = self.iter().enumerate().map(|(i, k)| (k.id, i)).collect();
        }
    }

    fn len(&self) -> usize {
        self.at.len()
    }

    fn iter(&self) -> impl Iterator<Item = &KnownClient> {
        self.list.iter().flatten()
    }
}

/// The list a log's lines leave, in order of first listing.
fn replay_log(text: &str, path: &Path) -> Result<Known, StorageError> {
    let mut known = Known::default();
    for line in text.lines().filter(|l| !l.trim().is_empty()) {
        match Line::parse(line) {
            // A later line binds a client an earlier one listed without its NID.
            Some(Line::Listed(client)) => known.put(client),
            Some(Line::Removed(id)) => known.remove(&std::collections::HashSet::from([id])),
            None => {
                return Err(StorageError::NotATarget {
                    path: path.to_path_buf(),
                    reason: format!(
                        "client list line {line:?} is neither a client id with its NID nor -id"
                    ),
                });
            }
        }
    }
    Ok(known)
}

impl ClientRegistry {
    /// Opens (or starts) the list in `dir/clients`, which may hold at most `clients_max`
    /// clients: peers choose client ids, so the list is bounded like everything they control.
    /// Clients put on the list by this start get sessions counted up from `first_session`
    /// (the start's boot id). The log is written out again compacted when it holds more than
    /// the list (if the disk has room: it is read the same either way).
    pub fn open(
        dir: &Path,
        clients_max: usize,
        first_session: u64,
    ) -> Result<ClientRegistry, StorageError> {
        let path = dir.join("clients");
        let io = |op: &'static str, path: &Path| {
            let path = path.to_path_buf();
            move |source| StorageError::Io { op, path, source }
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(text) => text,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => String::new(),
            Err(source) => return Err(io("read", &path)(source)),
        };
        let known = replay_log(&text, &path)?;
        let compacted: String = known.iter().map(|k| Line::Listed(*k).text()).collect();
        if compacted.len() < text.len() {
            // Best effort: a full disk keeps the longer log, which says the same.
            if let Err(error) =
                crate::journal::runtime::write_checkpoint(&path, compacted.as_bytes())
            {
                warn!(path = %path.display(), %error, "could not compact the client list; it is kept as it is");
            }
        }
        let file = OpenOptions::new()
            .create(true)
            .append(true)
            .open(&path)
            .map_err(io("open", &path))?;
        let length_bytes = file.metadata().map_err(io("stat", &path))?.len();
        let mut state = State {
            known,
            file,
            length_bytes,
            reserved_to_bytes: length_bytes,
        };
        state.top_up(&path);
        Ok(ClientRegistry {
            path,
            state: Mutex::new(state),
            clients_max,
            next_session: AtomicU64::new(first_session),
        })
    }

    /// Every client on the list.
    pub fn known(&self) -> Vec<u64> {
        self.lock().known.iter().map(|k| k.id).collect()
    }

    /// `client`'s session, if it is on the list.
    pub fn session(&self, client: u64) -> Option<u64> {
        self.lock().known.get(client).map(|k| k.session)
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Refuses a request from `source` that speaks for `client` when the client connected
    /// from another NID. A client not on the list, or not yet bound, is not refused here.
    pub fn check(&self, client: u64, source: Nid) -> Result<(), StorageError> {
        match self.lock().known.get(client) {
            Some(&KnownClient {
                nid: Some(bound), ..
            }) if bound != source => Err(StorageError::ClientOfAnotherNid {
                client,
                bound,
                claimed: source,
            }),
            _ => Ok(()),
        }
    }

    /// Records `client`, connected from `source`, durably, if new (or not yet bound to a
    /// NID), and returns its session: the one it has if it is on the list, a new one if it is
    /// put on it now. Refuses a new client once `clients_max` are known, and a client bound
    /// to another NID.
    pub fn add(&self, client: u64, source: Nid) -> Result<u64, StorageError> {
        let mut state = self.lock();
        match state.known.get(client).copied() {
            Some(k) if k.nid == Some(source) => return Ok(k.session),
            Some(KnownClient {
                nid: Some(bound), ..
            }) => {
                return Err(StorageError::ClientOfAnotherNid {
                    client,
                    bound,
                    claimed: source,
                });
            }
            Some(_) => {}
            None if state.known.len() >= self.clients_max => {
                return Err(StorageError::TooManyClients {
                    max: self.clients_max,
                });
            }
            None => {}
        }
        let entry = KnownClient {
            id: client,
            nid: Some(source),
            session: self.next_session.fetch_add(1, Ordering::Relaxed),
        };
        // Durable before the client hears it is connected.
        state.append(&self.path, &Line::Listed(entry).text())?;
        state.known.put(entry);
        Ok(entry.session)
    }

    /// Takes `clients` off the list, durably: a client that disconnected, or was evicted, is
    /// not waited for at the next restart, and its id is free to connect from any NID.
    pub fn remove(&self, clients: &[u64]) -> Result<(), StorageError> {
        let mut state = self.lock();
        let named: std::collections::HashSet<u64> = clients.iter().copied().collect();
        let gone: String = state
            .known
            .iter()
            .filter(|k| named.contains(&k.id))
            .map(|k| Line::Removed(k.id).text())
            .collect();
        if gone.is_empty() {
            return Ok(());
        }
        state.append(&self.path, &gone)?;
        state.known.remove(&named);
        Ok(())
    }
}

impl State {
    /// Appends `lines` and makes them durable; then tops the reserve up if it ran low.
    fn append(&mut self, path: &Path, lines: &str) -> Result<(), StorageError> {
        let io = |op: &'static str| {
            let path = path.to_path_buf();
            move |source| StorageError::Io { op, path, source }
        };
        self.file
            .write_all(lines.as_bytes())
            .map_err(io("append to"))?;
        self.file.sync_data().map_err(io("fsync"))?;
        self.length_bytes += lines.len() as u64;
        self.top_up(path);
        Ok(())
    }

    /// Keeps at least half of [`RESERVE_BYTES`] allocated past the end, so appends need no
    /// new block. Best effort: a disk without room (or a file system without `fallocate`)
    /// leaves what there is, and an append past it may fail then.
    fn top_up(&mut self, path: &Path) {
        let left = self.reserved_to_bytes.saturating_sub(self.length_bytes);
        if left >= RESERVE_BYTES / 2 {
            return;
        }
        let to = self.length_bytes + RESERVE_BYTES;
        // SAFETY: fallocate on a descriptor `file` owns; no memory is passed. KEEP_SIZE
        // allocates blocks past the end without changing the file's size.
        let rc = unsafe {
            libc::fallocate(
                self.file.as_raw_fd(),
                libc::FALLOC_FL_KEEP_SIZE,
                self.length_bytes as libc::off_t,
                RESERVE_BYTES as libc::off_t,
            )
        };
        if rc == 0 {
            self.reserved_to_bytes = to;
        } else {
            let error = std::io::Error::last_os_error();
            warn!(path = %path.display(), %error, "could not keep room for the client list's next lines");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_log_replays_listings_bindings_and_removals_in_order() {
        let path = Path::new("clients");
        let nid: Nid = "1@mem0".parse().unwrap();
        let text = "7\n7 1@mem0 5\n8 1@mem0 6\n-7\n9 1@mem0 9\n-8\n7 1@mem0 10\n";
        let known = replay_log(text, path).unwrap();
        let listed: Vec<(u64, u64)> = known.iter().map(|k| (k.id, k.session)).collect();
        assert_eq!(listed, vec![(9, 9), (7, 10)]);
        assert_eq!(known.get(9).unwrap().nid, Some(nid));
        assert!(replay_log("7 not-a-nid 1\n", path).is_err());
        assert!(replay_log("-x\n", path).is_err());
        for line in [
            Line::Removed(3),
            Line::Listed(KnownClient {
                id: 4,
                nid: Some(nid),
                session: 2,
            }),
        ] {
            assert_eq!(Line::parse(&line.text()), Some(line));
        }
    }

    #[test]
    fn clients_keep_their_order_through_removals_and_holes_closing() {
        let dir = tempfile::tempdir().unwrap();
        let a: Nid = "1@mem0".parse().unwrap();
        let registry = ClientRegistry::open(dir.path(), 64, 100).unwrap();
        for id in 1..=10 {
            registry.add(id, a).unwrap();
        }
        // Holes first (under half), then enough that the list closes them.
        registry.remove(&[2, 4]).unwrap();
        assert_eq!(registry.known(), vec![1, 3, 5, 6, 7, 8, 9, 10]);
        registry.remove(&[5, 6, 7, 8]).unwrap();
        assert_eq!(registry.known(), vec![1, 3, 9, 10]);
        // Each remaining client is found where it is, and a returning one goes last.
        for id in [1, 3, 9, 10] {
            assert!(registry.session(id).is_some(), "{id}");
        }
        assert_eq!(registry.session(2), None);
        registry.add(2, a).unwrap();
        assert_eq!(registry.known(), vec![1, 3, 9, 10, 2]);
        let b: Nid = "2@mem0".parse().unwrap();
        assert!(
            registry.check(9, b).is_err(),
            "bound to its NID after the holes closed"
        );
        drop(registry);
        let again = ClientRegistry::open(dir.path(), 64, 200).unwrap();
        assert_eq!(again.known(), vec![1, 3, 9, 10, 2]);
    }

    #[test]
    fn a_start_compacts_the_log_and_keeps_room_past_its_end() {
        let dir = tempfile::tempdir().unwrap();
        let a: Nid = "1@mem0".parse().unwrap();
        let registry = ClientRegistry::open(dir.path(), 16, 100).unwrap();
        for id in 1..=5 {
            registry.add(id, a).unwrap();
        }
        registry.remove(&[1, 2, 3]).unwrap();
        let path = dir.path().join("clients");
        let before = std::fs::read_to_string(&path).unwrap();
        assert_eq!(before.lines().count(), 8, "{before}");
        drop(registry);
        let again = ClientRegistry::open(dir.path(), 16, 200).unwrap();
        assert_eq!(again.known(), vec![4, 5]);
        assert_eq!(again.session(4), Some(103), "sessions survive");
        let after = std::fs::read_to_string(&path).unwrap();
        assert_eq!(after.lines().count(), 2, "compacted: {after}");
        // Room is kept past the end: blocks allocated beyond the size.
        use std::os::unix::fs::MetadataExt as _;
        let meta = std::fs::metadata(&path).unwrap();
        assert!(
            meta.blocks() * 512 >= meta.len() + RESERVE_BYTES / 2,
            "{} bytes allocated for {} bytes",
            meta.blocks() * 512,
            meta.len()
        );
    }
}
