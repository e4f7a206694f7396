//! # iopath-mount
//!
//! A FUSE mount of an iopath stack: `cp`, `dd`, `fio`, IOR or any program does its I/O
//! through the client library — buffer descriptors, pulls by the storage servers, checksums,
//! journals and replay — without knowing it. A Lustre client mounts the file system in the
//! kernel; here the kernel hands each call to this process ([`fs::IopathFs`]), which answers
//! it as a client of the stack, direct-attached or through a fyod as the client was
//! connected.
//!
//! - [`inodes`]: the kernel's inode numbers for the client's paths (a pure core).
//! - [`fs`]: the calls, answered on the client's runtime.
//! - [`Mount`]: mounts, reports a stale mount with the command that clears it, cleans up the
//!   orphans of crashed mounts while mounted, unmounts.

pub mod fs;
pub mod inodes;

use std::path::{Path, PathBuf};

use fuser::{BackgroundSession, MountOption, SessionACL};
use iopath_client::Client;
use tokio::runtime::Handle;

pub use fs::{IopathFs, MAX_WRITE_BYTES, posix_errno};

/// What can go wrong mounting.
#[derive(Debug, thiserror::Error)]
pub enum MountError {
    /// The mount point is not an empty directory this process can use.
    #[error("mount point {path}: {why}")]
    MountPoint {
        /// The mount point.
        path: PathBuf,
        /// What is wrong with it.
        why: String,
    },
    /// A mount is still registered there but nothing answers it (its process died).
    #[error(
        "mount point {path}: a stale iopath mount (its process is gone); clear it with `fusermount3 -u {path}` (or `umount -l {path}` as root)"
    )]
    Stale {
        /// The mount point.
        path: PathBuf,
    },
    /// The kernel refused the mount.
    #[error(
        "mount {path}: {source} (is /dev/fuse there and fuse3 installed? scripts/test installs it)"
    )]
    Fuse {
        /// The mount point.
        path: PathBuf,
        /// What the kernel or fusermount said.
        #[source]
        source: std::io::Error,
    },
}

/// How often a mount asks the metadata service for abandoned orphans to clean up — which
/// also tells the service, well within its grace period, that this mount is alive and still
/// holds its own.
pub const ORPHAN_CHECK_EVERY: std::time::Duration = std::time::Duration::from_secs(2);

/// A mounted stack. Dropping it unmounts (as [`Mount::unmount`] does, without the answer).
#[derive(Debug)]
pub struct Mount {
    session: Option<BackgroundSession>,
    path: PathBuf,
    /// Cleans up orphans whose holders crashed, while mounted.
    reaper: tokio::task::JoinHandle<()>,
}

impl Mount {
    /// Mounts `client`'s view of the stack at `mountpoint` (an existing, empty directory).
    /// Calls are answered on `runtime`, which must outlive the mount.
    pub fn new(client: Client, runtime: Handle, mountpoint: &Path) -> Result<Mount, MountError> {
        check_mount_point(mountpoint)?;
        // The source names the stack and its file system, as Lustre's `mgsnode:/fsname`
        // does: `iopath lfs` finds the metadata service of a path under the mount from it.
        let source = format!("{}:/{}", client.mds(), client.fsname());
        let reaper = runtime.spawn(reap_orphans(client.clone()));
        let fs = IopathFs::new(client, runtime);
        let mut config = fuser::Config::default();
        config.mount_options = vec![
            MountOption::FSName(source),
            MountOption::Subtype("iopath".to_owned()),
            MountOption::NoAtime,
            MountOption::DefaultPermissions,
        ];
        // The kernel checks permissions (DefaultPermissions); anyone may use the mount
        // when root mounts it, as with a shared file system.
        config.acl = if is_root() {
            SessionACL::All
        } else {
            SessionACL::Owner
        };
        // Several threads take calls from the kernel: one blocked reading a large write's
        // bytes does not hold the next call back.
        config.n_threads = Some(4);
        let session = match fuser::spawn_mount(fs, mountpoint, &config) {
            Ok(session) => session,
            Err(source) => {
                reaper.abort();
                return Err(MountError::Fuse {
                    path: mountpoint.to_owned(),
                    source,
                });
            }
        };
        Ok(Mount {
            session: Some(session),
            path: mountpoint.to_owned(),
            reaper,
        })
    }

    /// Where it is mounted.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether the mount went away from outside (`fusermount3 -u`, `umount`).
    pub fn is_finished(&self) -> bool {
        self.session.as_ref().is_none_or(|s| s.guard.is_finished())
    }

    /// Unmounts and waits for the calls in progress to be answered.
    pub fn unmount(mut self) -> std::io::Result<()> {
        self.reaper.abort();
        match self.session.take() {
            Some(session) => session.umount_and_join(),
            None => Ok(()),
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        self.reaper.abort();
        if let Some(session) = self.session.take()
            && let Err(e) = session.umount_and_join()
        {
            tracing::warn!("unmount {}: {e}", self.path.display());
        }
    }
}

/// Every [`ORPHAN_CHECK_EVERY`], cleans up the orphans the metadata service says are
/// abandoned: files a crashed mount held open after their last name went.
async fn reap_orphans(client: Client) {
    let mut tick = tokio::time::interval(ORPHAN_CHECK_EVERY);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        tick.tick().await;
        match client.reap_orphans().await {
            Ok(0) => {}
            Ok(dropped) => tracing::info!(dropped, "cleaned up files a crashed client held open"),
            // Said by the next try, or by the calls the stack's absence fails anyway.
            Err(error) => tracing::debug!(%error, "looking for abandoned orphans"),
        }
    }
}

fn is_root() -> bool {
    // SAFETY: geteuid cannot fail and touches no memory.
    unsafe { libc::geteuid() == 0 }
}

/// An existing empty directory; a stale FUSE mount (ENOTCONN) said as such.
fn check_mount_point(path: &Path) -> Result<(), MountError> {
    let bad = |why: String| MountError::MountPoint {
        path: path.to_owned(),
        why,
    };
    match std::fs::read_dir(path) {
        Ok(mut entries) => {
            if entries.next().is_some() {
                return Err(bad("not empty".to_owned()));
            }
            Ok(())
        }
        Err(e) if e.raw_os_error() == Some(libc::ENOTCONN) => Err(MountError::Stale {
            path: path.to_owned(),
        }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            Err(bad("no such directory (create it first)".to_owned()))
        }
        Err(e) => Err(bad(e.to_string())),
    }
}
