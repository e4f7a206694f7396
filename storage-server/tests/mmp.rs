//! Multiple-mount protection: a directory one server serves is refused to a second — on this
//! host by its lock, from another host by its heartbeat — and a server whose heartbeat
//! another overwrote stops. A server that crashed is no obstacle to its restart.

#![allow(clippy::unwrap_used)] // a test that panics has failed; that is its job

mod common;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_ost_client::OstClient;
use iopath_storage_server::StorageError;
use iopath_storage_server::engine::EngineConfig;
use iopath_storage_server::ids::ObjectId;
use iopath_storage_server::ost::mmp::MMP_FILE;
use iopath_storage_server::ost::{OssConfig, Ost, OstConfig, OstEngines};
use iopath_storage_server::service::{OssService, ServiceConfig};

fn oss_config(root: &Path) -> OssConfig {
    let mut template = OstConfig::new(0, root);
    template.commit_interval_ms = 3_600_000; // async: writes stay uncommitted, as a crash finds them
    template.object_size_max_bytes = 8 << 20;
    OssConfig {
        root: root.to_path_buf(),
        targets: OssConfig::indices(2),
        template,
        engine: EngineConfig::default(),
        disk_model: None,
        external_journal_dir: None,
        fsname: Default::default(),
    }
}

async fn node(network: &Arc<MemNetwork>, n: u32) -> Node {
    Node::start(NodeConfig {
        interfaces: vec![Interface::Mem {
            nid: Nid::mem(n, 0),
            network: network.clone(),
        }],
        ..NodeConfig::default()
    })
    .await
    .unwrap()
}

fn data(seed: u8) -> Bytes {
    Bytes::from(
        (0..256 << 10)
            .map(|i| (i % 251) as u8 ^ seed)
            .collect::<Vec<u8>>(),
    )
}

/// The red team's case: a second `iopath node --name oss1 --dir ./s/oss1` started while oss1
/// served a put recovered the live directory and cut the live server's uncommitted tails (the
/// put read back ~82 MB of zeros). Now the second is refused before it reads anything, and
/// names the first; every acknowledged write reads back. Once the first has crashed, the
/// second opens the directory and recovers it, as a restart must.
#[tokio::test]
async fn a_second_server_on_a_live_directory_is_refused_and_the_first_loses_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let network = MemNetwork::new();
    let first_node = node(&network, 1).await;
    let first = OssService::open(
        &first_node,
        oss_config(dir.path()),
        ServiceConfig::default(),
    )
    .await
    .unwrap();
    let client_node = node(&network, 9).await;
    let client = OstClient::connect(client_node.clone(), first_node.nid(), 7)
        .await
        .unwrap();
    for (target, object) in [(0, 1), (1, 2)] {
        client.create(target, object).await.unwrap();
        let stamp = client
            .write(target, object, 0, data(object as u8))
            .await
            .unwrap();
        assert!(stamp.transno > stamp.last_committed, "kept uncommitted");
    }

    let second_node = node(&network, 2).await;
    let refused = OssService::open(
        &second_node,
        oss_config(dir.path()),
        ServiceConfig::default(),
    )
    .await
    .map(drop)
    .unwrap_err();
    let text = refused.to_string();
    assert!(
        matches!(refused, StorageError::DirectoryInUse { .. }),
        "{text}"
    );
    assert!(
        text.contains(&format!("pid {}", std::process::id())),
        "names the holder: {text}"
    );

    for (target, object) in [(0, 1), (1, 2)] {
        let back = client.read(target, object, 0, 256 << 10).await.unwrap();
        assert_eq!(back, data(object as u8), "the live server lost nothing");
    }
    // A crash lets go of the directory as a dead process would: the next start opens it.
    first.crash();
    let restarted = OssService::open(
        &second_node,
        oss_config(dir.path()),
        ServiceConfig::default(),
    )
    .await;
    assert!(restarted.is_ok(), "{:?}", restarted.err());
}

fn target_config(dir: &Path, interval_ms: u64) -> OstConfig {
    let mut config = common::config(dir, false);
    config.mmp_interval_ms = interval_ms;
    config
}

async fn open_target(config: OstConfig) -> Result<Ost, StorageError> {
    Ost::open(config, OstEngines::shared(common::psync())).await
}

/// A server on another host, whose locks do not reach this one, still beats in the directory:
/// a start here watches the heartbeat for two intervals and a second and refuses while it
/// moves. Once it stops moving (that server is gone), the start takes the directory.
#[tokio::test]
async fn a_directory_whose_heartbeat_moves_on_another_host_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let config = target_config(dir.path(), 100);
    std::fs::create_dir_all(&config.dir).unwrap();
    let beat_path = config.dir.join(MMP_FILE);
    let beating = Arc::new(AtomicBool::new(true));
    let other_host = {
        let beating = Arc::clone(&beating);
        let beat_path = beat_path.clone();
        std::thread::spawn(move || {
            let mut seq = 40u64;
            while beating.load(Ordering::Relaxed) {
                // As a server beats: a whole line renamed into place.
                let line = format!("{seq} ion-far pid 4242 on host ion-far: iopath oss\n");
                let temporary = beat_path.with_extension("far");
                std::fs::write(&temporary, line).unwrap();
                std::fs::rename(&temporary, &beat_path).unwrap();
                seq += 1;
                std::thread::sleep(Duration::from_millis(50));
            }
        })
    };
    std::thread::sleep(Duration::from_millis(60));
    let refused = open_target(config.clone()).await.map(drop).unwrap_err();
    let text = refused.to_string();
    assert!(
        matches!(refused, StorageError::DirectoryInUse { .. }),
        "{text}"
    );
    assert!(
        text.contains("ion-far") && text.contains("heartbeat moved"),
        "{text}"
    );
    beating.store(false, Ordering::Relaxed);
    other_host.join().unwrap();
    let ost = open_target(config).await.unwrap();
    ost.shutdown().await.unwrap();
}

/// A holder whose heartbeat it finds overwritten (another server took the directory) stops
/// its target rather than write beside the other; a clean shutdown marks the heartbeat clean
/// (a start elsewhere then need not watch it: `ost::mmp`'s own tests).
#[tokio::test]
async fn a_target_whose_heartbeat_another_server_overwrote_stops() {
    let dir = tempfile::tempdir().unwrap();
    let config = target_config(dir.path(), 100);
    let ost = open_target(config.clone()).await.unwrap();
    ost.create(ObjectId(1)).await.unwrap();
    ost.write(ObjectId(1), 0, common::block(1, 4096))
        .await
        .unwrap();
    std::fs::write(
        config.dir.join(MMP_FILE),
        "77 ion-far pid 4242 on host ion-far: iopath oss\n",
    )
    .unwrap();
    tokio::time::sleep(Duration::from_millis(350)).await;
    let stopped = ost
        .write(ObjectId(1), 4096, common::block(2, 4096))
        .await
        .map(drop)
        .unwrap_err();
    let text = stopped.to_string();
    assert!(
        matches!(stopped, StorageError::TargetStopped { .. }) && text.contains("another server"),
        "{text}"
    );
    drop(ost);

    let ost = open_target(config.clone()).await.unwrap();
    ost.shutdown().await.unwrap();
    let beat = std::fs::read_to_string(config.dir.join(MMP_FILE)).unwrap();
    assert!(beat.starts_with("0 "), "marked clean: {beat}");
}
