//! The fyod's tests run on the one in-process test stack (`iopath_stack::testing`): an MDS,
//! storage servers, fyods and compute nodes on one in-memory network, storage in a temporary
//! directory. This module adds what the fyod's tests speak in: compute nodes connected to a
//! fyod by number, and the options they vary.
//!
//! NIDs: the MDS is `1@mem0`, OSS `i` is `10+i@mem0`, fyod `i` is `20+i@mem0`, compute node
//! `c` is `1000+c@mem0`. Targets are dealt to the servers in turn (OST `t` is on OSS
//! `t mod oss_count`).

#![allow(dead_code)] // each test file uses a different subset
#![allow(clippy::unwrap_used)] // test helpers: a panic is a failed test

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::fault::FaultHook;
use iopath_fabric::{Interface, MemNetwork, Nid, Node, NodeConfig};
use iopath_forwarder::{FileSystem, FyodClient, FyodLimits, FyodService};
use iopath_stack::testing::{TestStack, TestStackConfig};

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

/// A fabric node numbered `n` on `network`, with `fault` on what it sends.
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

/// The test stack, and the fyods' services and nodes as the tests use them.
pub struct Stack {
    pub stack: TestStack,
    pub network: Arc<MemNetwork>,
    pub mds: Nid,
    pub fyods: Vec<Arc<FyodService>>,
    pub fyod_nodes: Vec<Node>,
    pub options: Options,
}

impl Stack {
    pub async fn start(options: Options) -> Stack {
        let stack = TestStack::start(TestStackConfig {
            oss_count: options.oss_count,
            targets_per_oss: options.targets_per_oss,
            sync_journal: options.sync_journal,
            commit_interval_ms: options.commit_interval_ms,
            recovery_window: options.recovery_window,
            fyods: options.fyods,
            fyod_file_system: options.mode,
            fyod_limits: options.limits.clone(),
            clients_per_fyod: options.clients_per_fyod,
            fyod_faults: options.fyod_faults.clone(),
            oss_fault: options.oss_fault.clone(),
            ..TestStackConfig::default()
        })
        .await
        .unwrap();
        let mut fyods = Vec::new();
        let mut fyod_nodes = Vec::new();
        for f in 0..options.fyods as usize {
            fyods.push(stack.fyod(f).await.unwrap());
            fyod_nodes.push(stack.fyod_node(f).await.unwrap());
        }
        Stack {
            network: Arc::clone(stack.network()),
            mds: stack.mds_nid(),
            stack,
            fyods,
            fyod_nodes,
            options,
        }
    }

    /// A compute node numbered `client`, connected to fyod `fyod`.
    pub async fn client(&self, fyod: usize, client: u32) -> FyodClient {
        self.client_with_node(fyod, client).await.0
    }

    /// A compute node numbered `client` and its node, connected to fyod `fyod`.
    pub async fn client_with_node(&self, fyod: usize, client: u32) -> (FyodClient, Node) {
        self.stack
            .fyod_client(fyod, 1000 + client, u64::from(client))
            .await
            .unwrap()
    }

    /// Crashes OSS `index` (nothing more committed, its node gone) and starts it again on the
    /// same storage: an unclean restart, so it opens a recovery window for its clients.
    pub async fn crash_and_restart_oss(&mut self, index: usize) {
        self.stack.restart_oss(index).await.unwrap();
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
