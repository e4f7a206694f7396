//! A storage server on a full file system still takes its clients' connects and disconnects,
//! and answers statfs: `lfs df` and `lfs getstripe` on a full file system must work. Before
//! its client list kept room past its end, a new client's connect failed with ENOSPC
//! ("append to .../clients: No space left on device"), and so did every `lfs` command.
//!
//! The test mounts a small tmpfs of its own (it needs root, as the suite does) and unmounts it
//! however it ends.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;

use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_ost_client::OstClient;
use iopath_storage_server::engine::{EngineConfig, EngineKind};
use iopath_storage_server::ost::{OssConfig, OstConfig};
use iopath_storage_server::service::{OssService, ServiceConfig};

/// A tmpfs mounted for one test, unmounted when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    fn mount(size: &str) -> SmallDisk {
        let dir = tempfile::tempdir().unwrap();
        let status = Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .status()
            .expect("run mount(8)");
        assert!(
            status.success(),
            "mounting a tmpfs needs root (the suite runs as root): mount exited {status}"
        );
        SmallDisk { dir }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Writes a file until the file system says it is full.
    fn fill(&self) -> PathBuf {
        let path = self.path().join("filler");
        let mut file = std::fs::File::create(&path).unwrap();
        let block = vec![0xa5u8; 64 << 10];
        loop {
            match file.write_all(&block).and_then(|()| file.sync_data()) {
                Ok(()) => {}
                Err(e) if e.raw_os_error() == Some(ENOSPC) => return path,
                Err(e) => panic!("fill the disk: {e}"),
            }
        }
    }
}

/// No space left on device.
const ENOSPC: i32 = 28;

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = Command::new("umount").arg(self.dir.path()).status();
    }
}

async fn node(network: &Arc<MemNetwork>, n: u32) -> Node {
    Node::start(NodeConfig {
        interfaces: vec![Interface::Mem {
            nid: Nid::mem(n, 0),
            network: Arc::clone(network),
        }],
        ..NodeConfig::default()
    })
    .await
    .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_full_disk_still_takes_connects_disconnects_and_statfs() {
    let disk = SmallDisk::mount("8m");
    let root = disk.path().join("oss0");
    let mut template = OstConfig::new(0, &root);
    template.direct_io = false; // tmpfs has no O_DIRECT
    let config = OssConfig {
        root: root.clone(),
        targets: OssConfig::indices(1),
        template,
        engine: EngineConfig {
            kind: EngineKind::Psync,
            ..EngineConfig::default()
        },
        disk_model: None,
        external_journal_dir: None,
        fsname: Default::default(),
    };
    let network = MemNetwork::new();
    let server = node(&network, 1).await;
    OssService::open(&server, config, ServiceConfig::default())
        .await
        .unwrap();
    let client_node = node(&network, 2).await;
    let writer = OstClient::connect(client_node.clone(), server.nid(), 1)
        .await
        .unwrap();
    writer.create(0, 1).await.unwrap();
    disk.fill();

    // New clients, one after another, as `lfs` commands are: each connects (it is put on the
    // list, durably), asks for the capacity, and disconnects (taken off, durably) — enough of
    // them that the list's lines outgrow the page the first client's line took.
    for id in 10..160 {
        let client = OstClient::connect(client_node.clone(), server.nid(), id)
            .await
            .unwrap_or_else(|e| panic!("client {id} on a full disk: {e}"));
        let capacity = client.statfs(0).await.unwrap();
        assert!(capacity.available_bytes < 256 << 10, "full: {capacity:?}");
        client
            .disconnect()
            .await
            .unwrap_or_else(|e| panic!("client {id}'s disconnect on a full disk: {e}"));
    }
    // A write is refused as the disk is full (ENOSPC), not as a broken server.
    let refused = writer
        .write(0, 1, 0, bytes::Bytes::from(vec![1u8; 1 << 20]))
        .await
        .unwrap_err()
        .to_string();
    assert!(
        refused.contains("error 28") || refused.contains("space"),
        "{refused}"
    );
}
