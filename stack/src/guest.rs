//! A guest client: a command outside a running stack (`lfs --stack`, `trace --attach`) joins
//! it as one more client node, without taking any of the stack's own client nodes — so it
//! can run beside a program that holds them (`bench ior --attach`).
//!
//! The guest is a fabric node of its own on the network of the stack's first client node, at
//! this host's address towards that network's server nodes, with that client node's routes:
//! it reaches the metadata service and the storage servers through the stack's routers, as the
//! stack's clients do. Its client id is its own ([`client_id`]), never one of the stack's.

use std::sync::atomic::{AtomicU64, Ordering};

use iopath_client::{Client, ClientConfig};
use iopath_fabric::{Nid, Node};
use iopath_ost_client::ClientId;

use crate::error::StackError;
use crate::schema::{Address, RoleName, Stack};

/// A client id for a guest, unique among the stack's clients and other guests: the stack's
/// own clients count from 1 by their place in the stack, and a fyod's ids have 0xF7 in their
/// top byte; a guest's id is the wall clock in nanoseconds with bit 62 set (so its top byte is
/// 0x40 to 0x7F), mixed with this process's id and a count of the guests this process has
/// made, so two guests of one process, or of two processes started in the same nanosecond,
/// never share one.
pub fn client_id() -> ClientId {
    static MADE: AtomicU64 = AtomicU64::new(0);
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    let made = MADE.fetch_add(1, Ordering::Relaxed);
    // The count alone in the low 16 bits (so that two ids of one process differ unless 65,536
    // were made within one 65 µs tick of the clock); above them the clock's nanoseconds mixed
    // with the pid; bits 62 and 63 are the tag alone. (Mixing the count into the clock's low
    // bits instead let two calls a few nanoseconds apart come out equal.)
    let id = ((nanos & !0xFFFF) ^ (u64::from(std::process::id()) << 16)) & ((1 << 62) - 1)
        | 1 << 62
        | (made & 0xFFFF);
    ClientId::new(id)
}

/// The guest's fabric node on `stack`, as its first client node would be (that node's network
/// and routes), at this host's address towards the network's other nodes.
pub async fn node(stack: &Stack) -> Result<Node, StackError> {
    let like = stack
        .nodes_of(RoleName::Client)
        .first()
        .copied()
        .unwrap_or_else(|| stack.mds());
    let network = stack.nodes[like].interfaces[0].network;
    // Any other node's socket on that network: the kernel's route to it gives this host's
    // address there.
    let peer = stack
        .nodes
        .iter()
        .enumerate()
        .filter(|(i, n)| *i != like && n.role.kind() != RoleName::Client)
        .flat_map(|(_, n)| &n.interfaces)
        .find_map(|i| match i.address {
            Address::Socket(s) if i.network == network => Some(s),
            _ => None,
        })
        .ok_or_else(|| StackError::BadOption {
            option: "--stack".into(),
            why: format!(
                "{} has no server node with a TCP address on {}: give a stack file `iopath \
                 launch` or `iopath up --processes` wrote",
                stack.origin, stack.networks[network].name
            ),
        })?;
    let local = std::net::UdpSocket::bind(if peer.is_ipv4() {
        "0.0.0.0:0"
    } else {
        "[::]:0"
    })
    .and_then(|socket| {
        socket.connect(peer)?;
        socket.local_addr()
    })
    .map_err(|source| StackError::System {
        what: format!("find this host's address towards {peer}"),
        source,
    })?;
    let number = stack.networks[network].number;
    Node::start(iopath_fabric::NodeConfig {
        interfaces: vec![iopath_fabric::Interface::Tcp {
            nid: Nid::tcp(std::net::SocketAddr::new(local.ip(), 0), number),
        }],
        routes: stack.routes_of(like),
        ..Default::default()
    })
    .await
    .map_err(|e| StackError::io("start the guest's client node", e))
}

/// A client on the guest `node`, connected to the stack's metadata service at `mds` (through
/// the fyod `fyod`, if given), with a guest's id of its own.
pub async fn connect(node: &Node, mds: Nid, fyod: Option<Nid>) -> Result<Client, StackError> {
    let mut config = ClientConfig::new(node.clone(), mds, client_id());
    config.forwarder = fyod;
    Client::connect(config)
        .await
        .map_err(|e| StackError::io(format!("connect to the stack at {mds}"), e))
}

/// Joins `stack` as a guest: its node ([`node`]) and a client on it ([`connect`]).
pub async fn join(stack: &Stack, fyod: Option<Nid>) -> Result<(Node, Client), StackError> {
    let node = node(stack).await?;
    match connect(&node, stack.primary_nid(stack.mds()), fyod).await {
        Ok(client) => Ok((node, client)),
        Err(e) => {
            node.shutdown();
            Err(e)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn guest_ids_are_never_a_stacks_own_nor_each_others() {
        let ids: Vec<u64> = (0..1000).map(|_| client_id().get()).collect();
        let mut unique = ids.clone();
        unique.sort_unstable();
        unique.dedup();
        assert_eq!(
            unique.len(),
            ids.len(),
            "two guests of one process share an id"
        );
        // A stack's own clients are numbered 1 + their place in the stack.
        assert!(ids.iter().all(|&id| id >> 62 == 1), "{ids:?}");
    }
}
