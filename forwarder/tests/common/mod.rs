//! An in-process stack for the fyod's tests: an MDS, OSS nodes, fyods and compute nodes on
//! one in-memory network, storage in a temporary directory.
//!
//! NIDs: the MDS is `1@mem0`, OSS `i` is `10+i@mem0`, fyod `i` is `100+i@mem0`, compute
//! node `c` is `1000+c@mem0`. OSS `i`'s local target `t` is file-system target
//! `i × targets_per_oss + t`.

#![allow(dead_code)] // each test file uses a different subset
#![allow(clippy::unwrap_used)] // test helpers: a panic is a failed test

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::fault::FaultHook;
use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_forwarder::{FileSystem, FyodClient, FyodConfig, FyodLimits, FyodService};
use iopath_mds::{MdsConfig, MdsService, MdsTarget};
use iopath_storage_server::engine::EngineConfig;
use iopath_storage_server::ost::{OssConfig, OstConfig};
use iopath_storage_server::service::{OssService, ServiceConfig};

pub const KIB: u64 = 1024;
pub const MIB: u64 = 1024 * KIB;

/// What to build.
#[derive(Debug, Clone)]
pub struct Options {
    pub oss_count: u32,
    pub targets_per_oss: u32,
    pub fyods: u32,
    pub mode: FileSystem,
    pub sync_journal: bool,
    /// Async journals: how often commits start (long: the test decides when).
    pub commit_interval_ms: u64,
    pub clients_per_fyod: u32,
    pub limits: FyodLimits,
    /// A fault hook per fyod node (by index), if any.
    pub fyod_faults: Vec<Option<Arc<dyn FaultHook>>>,
    /// A fault hook on every OSS node.
    pub oss_fault: Option<Arc<dyn FaultHook>>,
    pub recovery_window: Duration,
}

impl Default for Options {
    fn default() -> Self {
        Options {
            oss_count: 2,
            targets_per_oss: 1,
            fyods: 1,
            mode: FileSystem::Pfs,
            sync_journal: false,
            commit_interval_ms: 200,
            clients_per_fyod: 256,
            limits: FyodLimits::default(),
            fyod_faults: Vec::new(),
            oss_fault: None,
            recovery_window: Duration::from_secs(2),
        }
    }
}

/// One running OSS.
pub struct OssServer {
    pub nid: Nid,
    pub root: PathBuf,
    pub node: Node,
    pub service: Arc<OssService>,
}

pub struct Stack {
    pub network: Arc<MemNetwork>,
    pub dir: tempfile::TempDir,
    pub mds: Nid,
    pub mds_service: Arc<MdsService>,
    pub oss: Vec<OssServer>,
    pub fyods: Vec<Arc<FyodService>>,
    pub fyod_nodes: Vec<Node>,
    pub options: Options,
}

pub async fn node(network: &Arc<MemNetwork>, n: u32, fault: Option<Arc<dyn FaultHook>>) -> Node {
    Node::start(NodeConfig {
        interfaces: vec![Interface::Mem {
            nid: Nid::mem(n, 0),
            network: Arc::clone(network),
        }],
        fault,
        ..NodeConfig::default()
    })
    .await
    .unwrap()
}

/// Server `server`'s targets: `targets_per_oss` consecutive indices, as the metadata
/// service's list below names them.
fn oss_config(options: &Options, server: u32, root: PathBuf) -> OssConfig {
    let mut template = OstConfig::new(0, &root);
    template.sync_journal = options.sync_journal;
    template.commit_interval_ms = options.commit_interval_ms;
    template.group_records_max = 256;
    template.uncommitted_records_max = 4096;
    template.object_size_max_bytes = 1 << 34;
    OssConfig {
        root,
        targets: (0..options.targets_per_oss)
            .map(|t| server * options.targets_per_oss + t)
            .collect(),
        template,
        engine: EngineConfig::default(),
        disk_model: None,
        external_journal_dir: None,
    }
}

async fn start_oss(
    options: &Options,
    network: &Arc<MemNetwork>,
    index: u32,
    root: PathBuf,
) -> OssServer {
    let nid = Nid::mem(10 + index, 0);
    let node = node(network, 10 + index, options.oss_fault.clone()).await;
    let config = ServiceConfig {
        recovery_window: options.recovery_window,
        ..ServiceConfig::default()
    };
    let service = OssService::open(&node, oss_config(options, index, root.clone()), config)
        .await
        .unwrap();
    OssServer {
        nid,
        root,
        node,
        service,
    }
}

impl Stack {
    pub async fn start(options: Options) -> Stack {
        let network = MemNetwork::new();
        let dir = tempfile::tempdir().unwrap();
        let mut oss = Vec::new();
        let mut targets = Vec::new();
        for i in 0..options.oss_count {
            let server = start_oss(&options, &network, i, dir.path().join(format!("oss{i}"))).await;
            for t in 0..options.targets_per_oss {
                targets.push(MdsTarget {
                    index: i * options.targets_per_oss + t,
                    nid: server.nid,
                });
            }
            oss.push(server);
        }
        let mds_node = node(&network, 1, None).await;
        let mds_service =
            MdsService::start(&mds_node, MdsConfig::new(dir.path().join("mds"), targets))
                .await
                .unwrap();
        let token_home = Nid::mem(100, 0);
        let mut fyods = Vec::new();
        let mut fyod_nodes = Vec::new();
        for f in 0..options.fyods {
            let fault = options.fyod_faults.get(f as usize).cloned().flatten();
            let fyod_node = node(&network, 100 + f, fault).await;
            let config = FyodConfig {
                clients_per_fyod: options.clients_per_fyod,
                token_home: Some(token_home),
                limits: options.limits.clone(),
                ..FyodConfig::new(mds_node.nid(), options.mode)
            };
            fyods.push(FyodService::start(&fyod_node, config).await.unwrap());
            fyod_nodes.push(fyod_node);
        }
        std::mem::forget(mds_node); // lives for the test, with its service
        Stack {
            network,
            dir,
            mds: Nid::mem(1, 0),
            mds_service,
            oss,
            fyods,
            fyod_nodes,
            options,
        }
    }

    /// A compute node numbered `client`, connected to fyod `fyod`.
    pub async fn client(&self, fyod: usize, client: u32) -> FyodClient {
        let node = node(&self.network, 1000 + client, None).await;
        FyodClient::connect(node, self.fyods[fyod].nid(), u64::from(client))
            .await
            .unwrap()
    }

    /// A compute node numbered `client` and its node, connected to fyod `fyod`.
    pub async fn client_with_node(&self, fyod: usize, client: u32) -> (FyodClient, Node) {
        let node = node(&self.network, 1000 + client, None).await;
        let c = FyodClient::connect(node.clone(), self.fyods[fyod].nid(), u64::from(client))
            .await
            .unwrap();
        (c, node)
    }

    /// Crashes OSS `index` (nothing more committed, its node gone) and starts it again on the
    /// same storage: an unclean restart, so it opens a recovery window for its clients.
    pub async fn crash_and_restart_oss(&mut self, index: usize) {
        let old = self.oss.remove(index);
        old.service.crash();
        old.node.shutdown();
        let OssServer {
            nid,
            root,
            node,
            service,
        } = old;
        drop(service);
        drop(node);
        // The in-memory network frees the NID once every handle to the old node is gone
        // (requests still executing hold one): try again for a bounded time.
        let mut restarted = None;
        for _ in 0..200 {
            let attempt = Node::start(NodeConfig {
                interfaces: vec![Interface::Mem {
                    nid,
                    network: Arc::clone(&self.network),
                }],
                fault: self.options.oss_fault.clone(),
                ..NodeConfig::default()
            })
            .await;
            if let Ok(node) = attempt {
                restarted = Some(node);
                break;
            }
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        let node = restarted.expect("the old OSS node went away");
        let config = ServiceConfig {
            recovery_window: self.options.recovery_window,
            ..ServiceConfig::default()
        };
        let targets = oss_config(&self.options, index as u32, root.clone());
        let service = OssService::open(&node, targets, config).await.unwrap();
        self.oss.insert(
            index,
            OssServer {
                nid,
                root,
                node,
                service,
            },
        );
    }
}

/// `len` bytes that say who wrote them: each 8-byte word holds the writer, the round and the
/// word's index, so a region shows at a glance whether one write filled it.
pub fn stamped(writer: u16, round: u16, len: u64) -> Bytes {
    let mut out = Vec::with_capacity(len as usize);
    let mut word = 0u64;
    while (out.len() as u64) < len {
        let value = (u64::from(writer) << 48) | (u64::from(round) << 32) | (word & 0xFFFF_FFFF);
        out.extend_from_slice(&value.to_le_bytes());
        word += 1;
    }
    out.truncate(len as usize);
    Bytes::from(out)
}

/// The (writer, round) of every 8-byte word of `data` (which must start at a multiple of
/// 8 of a stamped write), checking each word's index.
pub fn writers_of(data: &[u8]) -> Vec<(u16, u16)> {
    data.chunks_exact(8)
        .enumerate()
        .map(|(i, word)| {
            let value = u64::from_le_bytes(word.try_into().unwrap());
            if value == 0 {
                return (0, 0);
            }
            assert_eq!(
                value & 0xFFFF_FFFF,
                i as u64,
                "word {i} is where its write put it"
            );
            ((value >> 48) as u16, (value >> 32) as u16)
        })
        .collect()
}

/// Bytes seeded by `seed`, different at every offset.
pub fn pattern(seed: u64, len: u64) -> Bytes {
    let mut x = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..len)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect::<Vec<u8>>()
        .into()
}

/// The errno of a remote error.
pub fn errno_of(error: &iopath_forwarder::ForwarderError) -> u32 {
    error.errno()
}
