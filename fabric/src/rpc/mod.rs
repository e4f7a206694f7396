//! ptlrpc-style RPC over the fabric: a request is a PUT to a service's portal with the xid in
//! its match bits; the reply is a PUT back to [`REPLY_PORTAL`](crate::frame::REPLY_PORTAL) with
//! the same xid. Bulk data never rides in either: the request carries a
//! [`BufferDescriptor`](crate::BufferDescriptor) and the server pulls or pushes by it.
//!
//! - [`client`]: `Node::call` — xids, the reply wait, timeouts and resends with the *same* xid.
//! - [`server`]: admission through the reply cache, execution, the reply.
//! - [`reply_cache`]: the pure core that makes a resent request execute once.

pub mod client;
pub mod reply_cache;
pub mod server;

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use bytes::Bytes;
use prost::Message as _;

use crate::error::FabricError;
use crate::nid::Nid;
use crate::node::Node;

pub use client::CallOptions;

/// A request as a service sees it.
#[derive(Debug)]
pub struct Request {
    /// The node serving it; use it to pull or push bulk by descriptor.
    pub node: Node,
    /// Who sent it.
    pub source: Nid,
    /// Its xid: unique per client, the same on every resend.
    pub xid: u64,
    /// What it asks for; meaning defined by the service.
    pub opcode: u32,
    /// The encoded request body.
    pub body: Bytes,
}

/// A failed request, as the client will see it: an errno and a sentence.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServiceError {
    /// An errno value (see [`crate::frame::status::errno`]).
    pub code: u32,
    /// What went wrong, for a person.
    pub message: String,
}

impl ServiceError {
    /// An error with `code` and `message`.
    pub fn new(code: u32, message: impl Into<String>) -> Self {
        ServiceError {
            code,
            message: message.into(),
        }
    }
}

impl From<FabricError> for ServiceError {
    fn from(error: FabricError) -> Self {
        ServiceError {
            code: error.errno(),
            message: error.to_string(),
        }
    }
}

/// The future a service returns.
pub type Reply = Pin<Box<dyn Future<Output = Result<Bytes, ServiceError>> + Send + 'static>>;

/// Something that serves requests on a portal.
pub trait Service: Send + Sync + 'static {
    /// Executes one request. Called once per xid, however often the client resends it.
    fn handle(self: Arc<Self>, request: Request) -> Reply;
}

/// Encodes the body of an error reply.
pub(crate) fn encode_error(code: u32, message: &str) -> Bytes {
    iopath_proto::fabric::RpcError {
        code,
        message: message.to_owned(),
    }
    .encode_to_vec()
    .into()
}

/// Decodes the body of an error reply; a body that does not decode still yields the code.
pub(crate) fn decode_error(peer: Nid, code: u32, body: &[u8]) -> FabricError {
    let message = iopath_proto::fabric::RpcError::decode(body)
        .map(|e| e.message)
        .unwrap_or_else(|_| "(undecodable error body)".into());
    FabricError::Remote {
        peer,
        code,
        message,
    }
}
