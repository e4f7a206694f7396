//! Multiple-mount protection: one server process serves a directory at a time.
//!
//! Two servers on one target's directory would each recover it — cutting the other's
//! uncommitted tails, as a crash's would be cut — and then write over each other's objects
//! and journal: bytes one of them acknowledged read back as the other's, or as zeros. Lustre
//! refuses a second mount of a target with MMP, a block the mounting server watches for a
//! heartbeat. Before a target's recovery reads anything, and before a server reads its client
//! list, iopath takes two guards on the directory:
//!
//! 1. **A lock**: an exclusive `flock(2)` on `dir/lock`, whose contents name the holder (pid,
//!    host, command line, since when). Every process on this host sees it, so do hosts sharing
//!    a file system whose locks reach across them, and the kernel lets go of it when the
//!    holder dies however it dies — a SIGKILLed server's restart is never refused.
//! 2. **A heartbeat** (targets only): `dir/mmp` holds a sequence number the holder rewrites
//!    every interval (5 s by default, Lustre's `mmp_update_interval`), with its host. A server
//!    that finds the file last written by *another* host, not marked clean, watches it for two
//!    intervals and a second, as Lustre's mount does, and refuses to start if it moved. A
//!    holder whose heartbeat it finds overwritten by someone else stops its target at once.
//!    A clean shutdown marks the file clean, so the next start does not wait.
//!
//! The lock is what protects one host; the heartbeat is for storage shared by hosts whose
//! locks do not reach each other. A restart on the same host after a crash does not wait: the
//! lock it took proves the process that wrote the heartbeat is gone.

use std::fs::{File, OpenOptions};
use std::io::{Read as _, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use tokio::task::AbortHandle;
use tracing::{error, info};

use crate::engine::{DiskEngine, blocking};
use crate::error::{Result, StorageError};
use crate::stop::StopFlag;

/// The lock file's name in a guarded directory.
pub const LOCK_FILE: &str = "lock";
/// The heartbeat file's name in a target's directory.
pub const MMP_FILE: &str = "mmp";
/// How often a target's holder rewrites its heartbeat, by default (Lustre's default
/// `mmp_update_interval`).
pub const MMP_INTERVAL_DEFAULT: Duration = Duration::from_secs(5);
/// The heartbeat's sequence number after a clean shutdown: the next start need not wait.
const SEQ_CLEAN: u64 = 0;
/// The sequence number given a beat that cannot be parsed (never written by a holder).
const UNREADABLE_SEQ: u64 = u64::MAX;
/// The longest command line a lock file records.
const COMMAND_BYTES_MAX: usize = 240;
/// The largest lock or heartbeat file read: they are a line each.
const FILE_BYTES_MAX: u64 = 4096;

/// A directory held by this process: released (the lock let go, the heartbeat stopped) when
/// dropped, or by [`DirGuard::release`].
#[derive(Debug)]
pub struct DirGuard {
    dir: PathBuf,
    /// The locked file: closing it lets go of the lock.
    lock: Option<File>,
    /// The heartbeat's task, while it runs.
    heartbeat: Option<AbortHandle>,
}

impl DirGuard {
    /// Takes `dir`'s lock (creating `dir` if needed) for `what` (a target's name, "a storage
    /// server's directory"), or fails naming who holds it.
    pub fn lock(dir: &Path, what: &str) -> Result<DirGuard> {
        std::fs::create_dir_all(dir).map_err(|e| StorageError::io("create directory", dir, e))?;
        let path = dir.join(LOCK_FILE);
        let mut file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| StorageError::io("open lock file", &path, e))?;
        match try_lock_exclusive(&file) {
            Ok(true) => {}
            Ok(false) => {
                return Err(StorageError::DirectoryInUse {
                    dir: dir.to_path_buf(),
                    what: what.to_string(),
                    holder: read_line(&mut file)
                        .filter(|line| !line.is_empty())
                        .unwrap_or_else(|| "a process that has not said who it is yet".into()),
                });
            }
            Err(e) => return Err(StorageError::io("lock", &path, e)),
        }
        // Ours: say who holds it, for the next one to find.
        let holder = Holder::this_process().describe();
        let written = file
            .set_len(0)
            .and_then(|()| file.seek(SeekFrom::Start(0)))
            .and_then(|_| file.write_all(holder.as_bytes()))
            .and_then(|()| file.write_all(b"\n"));
        written.map_err(|e| StorageError::io("write lock file", &path, e))?;
        Ok(DirGuard {
            dir: dir.to_path_buf(),
            lock: Some(file),
            heartbeat: None,
        })
    }

    /// After [`DirGuard::lock`], for a target: checks the heartbeat another host may be
    /// writing (waiting two intervals and a second if it was written elsewhere and not
    /// marked clean), then writes this process's, and keeps writing it every `interval` on a
    /// task of its own. If the task finds its heartbeat overwritten — another server took the
    /// directory — it stops the target through `stop`.
    pub async fn start_heartbeat(
        &mut self,
        what: &str,
        interval: Duration,
        engine: Arc<dyn DiskEngine>,
        stop: Arc<StopFlag>,
    ) -> Result<()> {
        let path = self.dir.join(MMP_FILE);
        let host = host_name();
        if let Some(beat) = to_watch(read_beat(&path, &*engine).await?, &host) {
            // Written by another host and never marked clean: a server there may still be
            // running. Watch for its next beats, as Lustre's mount does.
            let wait = interval * 2 + Duration::from_secs(1);
            info!(dir = %self.dir.display(), host = %beat.host, wait_s = wait.as_secs(), "the heartbeat was last written on another host: watching it before taking the directory");
            tokio::time::sleep(wait).await;
            let now = read_beat(&path, &*engine).await?;
            if now.as_ref().is_some_and(|n| n.seq != beat.seq) {
                let now = now.expect("checked above");
                return Err(StorageError::DirectoryInUse {
                    dir: self.dir.clone(),
                    what: what.to_string(),
                    holder: format!(
                        "{} (its heartbeat moved from {} to {} within {} s)",
                        now.holder,
                        beat.seq,
                        now.seq,
                        wait.as_secs()
                    ),
                });
            }
        }
        let holder = Holder::this_process().describe();
        let mut seq = first_seq();
        write_beat(&path, &*engine, seq, &host, &holder).await?;
        let dir = self.dir.clone();
        let what = what.to_string();
        let task = tokio::spawn(async move {
            loop {
                tokio::time::sleep(interval).await;
                let found = match read_beat(&path, &*engine).await {
                    Ok(found) => found,
                    Err(e) => {
                        error!(dir = %dir.display(), "read the heartbeat: {e}");
                        continue;
                    }
                };
                if let Some(other) = found.filter(|b| b.seq != seq) {
                    stop.stop(format!(
                        "{what}: another server took {} (its heartbeat: {}): stopped to keep \
                         the two from writing over each other",
                        dir.display(),
                        other.holder
                    ));
                    return;
                }
                seq = next_seq(seq);
                if let Err(e) = write_beat(&path, &*engine, seq, &host, &holder).await {
                    error!(dir = %dir.display(), "write the heartbeat: {e}");
                }
            }
        });
        self.heartbeat = Some(task.abort_handle());
        Ok(())
    }

    /// Marks the heartbeat clean (a clean shutdown: the next start need not wait) and lets
    /// go of the directory.
    pub async fn release_clean(&mut self, engine: &dyn DiskEngine) -> Result<()> {
        let had_heartbeat = self.heartbeat.is_some();
        self.stop_heartbeat();
        if had_heartbeat && self.lock.is_some() {
            let path = self.dir.join(MMP_FILE);
            write_beat(&path, engine, SEQ_CLEAN, &host_name(), "shut down cleanly").await?;
        }
        self.release();
        Ok(())
    }

    /// Lets go of the directory at once (a crash, as far as the directory can tell): the
    /// heartbeat stops and the lock is let go; the heartbeat file stays as it was.
    pub fn release(&mut self) {
        self.stop_heartbeat();
        self.lock = None;
    }

    fn stop_heartbeat(&mut self) {
        if let Some(task) = self.heartbeat.take() {
            task.abort();
        }
    }
}

impl Drop for DirGuard {
    fn drop(&mut self) {
        self.stop_heartbeat();
    }
}

/// Who holds a directory.
struct Holder {
    pid: u32,
    host: String,
    command: String,
    since_unix_s: u64,
}

impl Holder {
    fn this_process() -> Holder {
        let command = std::fs::read("/proc/self/cmdline")
            .map(|raw| {
                raw.split(|&b| b == 0)
                    .filter(|arg| !arg.is_empty())
                    .map(|arg| String::from_utf8_lossy(arg).into_owned())
                    .collect::<Vec<_>>()
                    .join(" ")
            })
            .unwrap_or_default();
        let mut command: String = command.chars().filter(|c| !c.is_control()).collect();
        if command.len() > COMMAND_BYTES_MAX {
            let mut end = COMMAND_BYTES_MAX;
            while !command.is_char_boundary(end) {
                end -= 1;
            }
            command.truncate(end);
            command.push('…');
        }
        Holder {
            pid: std::process::id(),
            host: host_name(),
            command,
            since_unix_s: unix_now_s(),
        }
    }

    /// One line: `pid 4242 on host ion3 since 2026-12-02T22:43:00Z: iopath node --name oss1`.
    fn describe(&self) -> String {
        let since = i64::try_from(self.since_unix_s)
            .ok()
            .and_then(|s| jiff::Timestamp::from_second(s).ok())
            .map_or_else(
                || format!("{} (unix time)", self.since_unix_s),
                |t| t.to_string(),
            );
        format!(
            "pid {} on host {} since {since}: {}",
            self.pid, self.host, self.command
        )
    }
}

/// One beat, as the heartbeat file holds it: `seq host holder…`.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Beat {
    seq: u64,
    host: String,
    holder: String,
}

impl Beat {
    fn parse(line: &str) -> Option<Beat> {
        let mut parts = line.trim_end().splitn(3, ' ');
        let seq = parts.next()?.parse().ok()?;
        let host = parts.next()?.to_string();
        let holder = parts.next().unwrap_or("").to_string();
        Some(Beat { seq, host, holder })
    }
}

/// The beat a start on `this_host` must watch before it takes the directory: one written by
/// another host and not marked clean (a server there may be running). One written here is
/// not: the lock this start holds proves its writer is gone.
fn to_watch(found: Option<Beat>, this_host: &str) -> Option<Beat> {
    found.filter(|beat| beat.seq != SEQ_CLEAN && beat.host != this_host)
}

/// The heartbeat file's beat, if it has one (a missing or unreadable file has none: nobody
/// is beating there).
async fn read_beat(path: &Path, engine: &dyn DiskEngine) -> Result<Option<Beat>> {
    let owned = path.to_path_buf();
    let read = blocking(engine, move || -> std::io::Result<Option<String>> {
        match File::open(&owned) {
            Ok(mut file) => Ok(read_line(&mut file)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(e),
        }
    })
    .await
    .and_then(|r| r)
    .map_err(|e| StorageError::io("read heartbeat", path, e))?;
    // A beat that cannot be read whole is watched like another host's: whoever wrote it may
    // be beating still.
    Ok(read.filter(|line| !line.trim().is_empty()).map(|line| {
        Beat::parse(&line).unwrap_or(Beat {
            seq: UNREADABLE_SEQ,
            host: "(unreadable)".to_string(),
            holder: format!("an unreadable heartbeat {line:?}"),
        })
    }))
}

/// Writes one beat: a temporary file renamed over the heartbeat, so a reader finds the old
/// beat or the new one whole, never a file cut short.
async fn write_beat(
    path: &Path,
    engine: &dyn DiskEngine,
    seq: u64,
    host: &str,
    holder: &str,
) -> Result<()> {
    let owned = path.to_path_buf();
    let line = format!("{seq} {host} {holder}\n");
    blocking(engine, move || {
        let temporary = owned.with_extension("new");
        std::fs::write(&temporary, line)?;
        std::fs::rename(&temporary, &owned)
    })
    .await
    .and_then(|r| r)
    .map_err(|e| StorageError::io("write heartbeat", path, e))
}

/// The first line of `file`, at most [`FILE_BYTES_MAX`] bytes read.
fn read_line(file: &mut File) -> Option<String> {
    let mut text = String::new();
    file.seek(SeekFrom::Start(0)).ok()?;
    file.take(FILE_BYTES_MAX).read_to_string(&mut text).ok()?;
    Some(text.lines().next().unwrap_or("").to_string())
}

/// `flock(fd, LOCK_EX | LOCK_NB)`: true if taken, false if another open file holds it. The
/// lock belongs to this open file: closing it (dropping `file`, or the process dying) lets go.
fn try_lock_exclusive(file: &File) -> std::io::Result<bool> {
    use std::os::fd::AsRawFd as _;
    // SAFETY: flock on a descriptor `file` owns for the call's length; no memory is passed.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let error = std::io::Error::last_os_error();
    if error.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(error)
    }
}

/// This host's name (`gethostname(2)`), or `unknown-host`.
fn host_name() -> String {
    let mut buf = [0u8; 256];
    // SAFETY: `buf` is a writable buffer of the length passed; gethostname writes at most
    // that many bytes into it.
    let rc = unsafe { libc::gethostname(buf.as_mut_ptr().cast(), buf.len()) };
    if rc != 0 {
        return "unknown-host".to_string();
    }
    let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
    let name: String = String::from_utf8_lossy(&buf[..end])
        .chars()
        .filter(|c| !c.is_whitespace() && !c.is_control())
        .collect();
    if name.is_empty() {
        "unknown-host".to_string()
    } else {
        name
    }
}

fn unix_now_s() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A start's first sequence number: from the clock and the pid, so two starts (here or on
/// another host) do not begin alike, and never [`SEQ_CLEAN`].
fn first_seq() -> u64 {
    let nanos = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let mixed = nanos ^ (u64::from(std::process::id()) << 40);
    next_seq(mixed)
}

/// The sequence number after `seq`, never [`SEQ_CLEAN`] or [`UNREADABLE_SEQ`].
fn next_seq(seq: u64) -> u64 {
    match seq.wrapping_add(1) {
        SEQ_CLEAN | UNREADABLE_SEQ => 1,
        next => next,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_lock_on_a_directory_is_refused_naming_the_holder_and_freed_on_release() {
        let dir = tempfile::tempdir().unwrap();
        let mut first = DirGuard::lock(dir.path(), "OST0000").unwrap();
        let refused = DirGuard::lock(dir.path(), "OST0000").unwrap_err();
        let text = refused.to_string();
        assert!(
            matches!(refused, StorageError::DirectoryInUse { .. }),
            "{text}"
        );
        assert!(
            text.contains(&format!("pid {}", std::process::id())),
            "{text}"
        );
        first.release();
        DirGuard::lock(dir.path(), "OST0000").expect("free once released");
    }

    #[test]
    fn beats_parse_and_sequence_numbers_skip_the_clean_mark() {
        assert_eq!(
            Beat::parse("17 ion3 pid 5 on host ion3: iopath oss\n"),
            Some(Beat {
                seq: 17,
                host: "ion3".into(),
                holder: "pid 5 on host ion3: iopath oss".into()
            })
        );
        assert_eq!(Beat::parse("not a beat"), None);
        let beat = |line: &str| Beat::parse(line);
        // Another host's live beat is watched; a clean mark, this host's own, or none is not.
        assert!(to_watch(beat("9 far pid 1"), "here").is_some());
        assert!(to_watch(beat("0 far shut down cleanly"), "here").is_none());
        assert!(to_watch(beat("9 here pid 1"), "here").is_none());
        assert!(to_watch(None, "here").is_none());
        assert_eq!(Beat::parse(""), None);
        assert_eq!(next_seq(u64::MAX), 1);
        assert_eq!(next_seq(u64::MAX - 1), 1);
        assert_ne!(first_seq(), SEQ_CLEAN);
    }
}
