//! Shared set-up for the fabric's integration tests: nodes on either transport and a small
//! service that pulls or pushes by descriptor and counts what it executed.

#![allow(dead_code)] // each test file uses part of this

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use bytes::Bytes;
use iopath_fabric::fault::FaultHook;
use iopath_fabric::rpc::{Reply, Request, Service, ServiceError};
use iopath_fabric::{BufferDescriptor, Interface, Limits, MemNetwork, Nid, Node, NodeConfig};
use prost::Message as _;

/// The portal the test service listens on.
pub const PORTAL: u32 = 20;
/// Pull the descriptor in the body; reply with the checksum of what arrived.
pub const OP_PULL: u32 = 1;
/// Push `fill` bytes into the descriptor in the body.
pub const OP_PUSH: u32 = 2;
/// Count an execution and reply with the count.
pub const OP_COUNT: u32 = 3;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Transport {
    Mem,
    Tcp,
}

pub const BOTH: [Transport; 2] = [Transport::Mem, Transport::Tcp];

/// Starts `count` nodes on one network of `transport`, each with `limits`.
pub async fn nodes(
    transport: Transport,
    count: u32,
    limits: Limits,
    fault: Option<Arc<dyn FaultHook>>,
) -> Vec<Node> {
    let network = MemNetwork::new();
    let mut nodes = Vec::new();
    for n in 0..count {
        let interface = match transport {
            Transport::Mem => Interface::Mem {
                nid: Nid::mem(n + 1, 0),
                network: Arc::clone(&network),
            },
            Transport::Tcp => Interface::Tcp {
                nid: "127.0.0.1:0@tcp0".parse().unwrap(),
            },
        };
        let config = NodeConfig {
            interfaces: vec![interface],
            limits: limits.clone(),
            fault: fault.clone(),
            ..Default::default()
        };
        nodes.push(Node::start(config).await.unwrap());
    }
    nodes
}

/// The test service.
#[derive(Debug, Default)]
pub struct TestService {
    pub executed: AtomicU64,
}

impl TestService {
    pub fn install(node: &Node) -> Arc<TestService> {
        let service = Arc::new(TestService::default());
        node.register_service(PORTAL, service.clone()).unwrap();
        service
    }
}

pub fn encode_desc(desc: &BufferDescriptor) -> Bytes {
    desc.to_proto().encode_to_vec().into()
}

impl Service for TestService {
    fn handle(self: Arc<Self>, request: Request) -> Reply {
        self.executed.fetch_add(1, Ordering::SeqCst);
        let executed = self.executed.load(Ordering::SeqCst);
        Box::pin(async move {
            match request.opcode {
                OP_COUNT => Ok(Bytes::from(executed.to_be_bytes().to_vec())),
                OP_PULL | OP_PUSH => {
                    let wire =
                        iopath_proto::fabric::BufferDescriptor::decode(request.body.as_ref())
                            .map_err(|e| ServiceError::new(71, e.to_string()))?;
                    let desc = BufferDescriptor::from_proto(&wire, request.node.limits())?;
                    if request.opcode == OP_PULL {
                        let data = request.node.bulk_get(&desc).await?;
                        Ok(Bytes::from(
                            desc.checksum_kind.compute(&data).to_be_bytes().to_vec(),
                        ))
                    } else {
                        let data = Bytes::from(pattern(desc.length as usize, desc.offset));
                        let crc = request.node.bulk_put(&desc, data).await?;
                        Ok(Bytes::from(crc.to_be_bytes().to_vec()))
                    }
                }
                other => Err(ServiceError::new(95, format!("no opcode {other}"))),
            }
        })
    }
}

/// Deterministic bytes that differ at every offset, so a misplaced chunk is caught.
pub fn pattern(len: usize, seed: u64) -> Vec<u8> {
    (0..len as u64)
        .map(|i| ((i.wrapping_mul(2_654_435_761) ^ seed) >> 3) as u8)
        .collect()
}

/// One counter of a node's `stats` view, as `lctl get_param stats` shows it.
pub fn stat(tree: &iopath_lprocfs::ParamTree, name: &str) -> u64 {
    let stats = tree.get("stats").unwrap().remove(0).value;
    stats
        .lines()
        .find_map(|line| line.strip_prefix(name)?.strip_prefix(' ')?.parse().ok())
        .unwrap_or_else(|| panic!("no {name} in stats:\n{stats}"))
}
