//! ptlrpc-style RPC over the fabric: a request is a PUT to a service's portal with the xid in
//! its match bits; the reply is a PUT back to [`REPLY_PORTAL`](crate::frame::REPLY_PORTAL) with
//! the same xid. Bulk data never rides in either: the request carries a
//! [`BufferDescriptor`](crate::BufferDescriptor) and the server pulls or pushes by it.
//!
//! - [`client`]: `Node::call` — xids, the reply wait, timeouts and resends with the *same* xid.
//! - [`server`]: `Node::register_service`, admission through the reply cache, execution, the
//!   reply.
//!
//! The reply cache that makes a resent request execute once is a pure core of its own,
//! [`crate::reply_cache`]; the node holds it (its bounds are node-wide) and the server admits
//! every request through it. RPC sits on top of the node: the node knows a service only as the
//! [`PortalHandler`](crate::node) attached to its portal.

pub mod client;
pub mod server;

use std::future::Future;
use std::pin::Pin;
use std::sync::{Arc, PoisonError};

use bytes::Bytes;

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

impl Request {
    /// Marks the point where this request begins to change the server's state — after its
    /// bulk pull and the waits before it, right before the change. Fails (`ECANCELED`), and
    /// the request must then change nothing, if its client has given up on it: it sent a
    /// request since that says it waits on nothing this old (it sent the operation again
    /// under a new xid, which may have run already). From this point on, what the client
    /// sends waits for this request to end, so its effect is never overtaken.
    pub fn begin_effect(&self) -> Result<(), ServiceError> {
        self.node.begin_effect(self.source, self.xid)
    }
}

impl Node {
    /// [`Request::begin_effect`] for request `xid` of `client`, for a service that has handed
    /// the request's parts down to the code that makes the change.
    pub fn begin_effect(&self, client: Nid, xid: u64) -> Result<(), ServiceError> {
        let begun = self
            .inner
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .begin_effect(client, xid);
        if begun {
            Ok(())
        } else {
            Err(ServiceError::new(
                crate::frame::status::errno::ECANCELED,
                format!(
                    "{client} gave up on request {xid} before it changed anything (it sent a \
                     newer one): not executed"
                ),
            ))
        }
    }
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

    /// The service's name for `opcode` (`write`, `mkdir`), for the per-operation counters
    /// (`Node::rpc_stats`, `/metrics`); `None` counts it as `opcode_N`.
    fn op_name(&self, opcode: u32) -> Option<&'static str> {
        let _ = opcode;
        None
    }
}
