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
//! - [`Mount`]: mounts, reports a stale mount with the command that clears it, unmounts.

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

/// A mounted stack. Dropping it unmounts (as [`Mount::unmount`] does, without the answer).
#[derive(Debug)]
pub struct Mount {
    session: Option<BackgroundSession>,
    path: PathBuf,
}

impl Mount {
    /// Mounts `client`'s view of the stack at `mountpoint` (an existing, empty directory).
    /// Calls are answered on `runtime`, which must outlive the mount.
    pub fn new(client: Client, runtime: Handle, mountpoint: &Path) -> Result<Mount, MountError> {
        check_mount_point(mountpoint)?;
        // The source names the stack and its file system, as Lustre's `mgsnode:/fsname`
        // does: `iopath lfs` finds the metadata service of a path under the mount from it.
        let source = format!("{}:/{}", client.mds(), client.fsname());
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
        let session =
            fuser::spawn_mount(fs, mountpoint, &config).map_err(|source| MountError::Fuse {
                path: mountpoint.to_owned(),
                source,
            })?;
        Ok(Mount {
            session: Some(session),
            path: mountpoint.to_owned(),
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
        match self.session.take() {
            Some(session) => session.umount_and_join(),
            None => Ok(()),
        }
    }
}

impl Drop for Mount {
    fn drop(&mut self) {
        if let Some(session) = self.session.take()
            && let Err(e) = session.umount_and_join()
        {
            tracing::warn!("unmount {}: {e}", self.path.display());
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
