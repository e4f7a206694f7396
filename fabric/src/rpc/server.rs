//! The server side of an RPC: a service attached to its portal, admission through the reply
//! cache, execution on a task of its own, the reply.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};

use tracing::{Instrument, debug, info_span};

use crate::error::{FabricError, encode_error_body};
use crate::fail;
use crate::frame::{Message, status};
use crate::nid::Nid;
use crate::node::{Node, NodeInner, PortalHandler};
use crate::reply_cache::{Admission, SavedReply};
use crate::rpc::{Request, Service};
use crate::rpc_stats::Executed;
use crate::trace::{self, Step, TraceId};

impl Node {
    /// Serves RPC requests that arrive on `portal` with `service`.
    pub fn register_service(
        &self,
        portal: u32,
        service: Arc<dyn Service>,
    ) -> Result<(), FabricError> {
        self.inner
            .attach_portal(portal, Arc::new(ServicePortal { service }))
    }
}

/// A service attached to its portal: what the node hands the portal's requests to.
struct ServicePortal {
    service: Arc<dyn Service>,
}

impl PortalHandler for ServicePortal {
    fn on_request(&self, node: &NodeInner, message: Message) {
        admit(node, Arc::clone(&self.service), message);
    }
}

/// Admits a request that arrived for `service`: executes it, answers a resend from the saved
/// reply, ignores a resend of one still executing or a late copy of one whose reply the client
/// has, or answers BUSY. Never waits.
#[tracing::instrument(target = "walkthrough", level = "trace", name = "admit", skip_all)]
fn admit(node: &NodeInner, service: Arc<dyn Service>, message: Message) {
    let header = message.header;
    let (client, xid) = (header.source, header.match_bits);
    let admission = node
        .replies
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .admit(client, xid, header.cookie);
    let after_abandoned = match admission {
        Admission::Execute => false,
        Admission::ExecuteAfterAbandoned => true,
        Admission::AlreadyExecuting => {
            // The client timed out waiting: tell it the request is here and under way, so it
            // waits on rather than spend its resends on a server that is merely slow (a
            // queue of thousands of clients at one fyod).
            node.counters.early_replies.fetch_add(1, Ordering::Relaxed);
            debug!(%client, xid, "resend of a request still executing: an early reply");
            node.reply_error(
                &header,
                status::IN_PROGRESS,
                "request in progress: its reply will follow",
            );
            return;
        }
        Admission::Resend(saved) => {
            node.counters
                .replies_reconstructed
                .fetch_add(1, Ordering::Relaxed);
            debug!(%client, xid, "resend of an executed request: sending the saved reply");
            node.send_reply(&header, saved.status, saved.body);
            return;
        }
        Admission::Stale => {
            debug!(%client, xid, "a late copy of a request the client has the reply of: dropped");
            return;
        }
        Admission::Busy => {
            node.counters.requests_busy.fetch_add(1, Ordering::Relaxed);
            node.reply_error(
                &header,
                status::BUSY,
                "server busy: at its limit of executing requests",
            );
            return;
        }
    };
    let Some(handle) = node.node() else { return };
    node.counters
        .requests_executed
        .fetch_add(1, Ordering::Relaxed);
    let request = Request {
        node: handle.clone(),
        source: client,
        xid,
        opcode: header.hdr_data as u32,
        body: message.payload,
    };
    let span = info_span!("rpc", xid, %client, opcode = request.opcode);
    let started = tokio::time::Instant::now();
    let (portal, opcode) = (header.portal, request.opcode);
    let request_bytes = request.body.len() as u64;
    let traced = TraceId::of(&header);
    let work = async move {
        if after_abandoned {
            // A request this client gave up on is changing state here: this one's change
            // comes after it, never before.
            debug!(%client, xid, "waiting for a request its client gave up on to end");
            wait_for_abandoned(&handle.inner, client, xid).await;
        }
        let name = service.op_name(opcode);
        if let Some(id) = traced {
            let what = format!(
                "handling {} (xid {xid}) for {client}",
                name.unwrap_or("request")
            );
            handle
                .trace_log()
                .record(id, Step::new("rpc", "handle", what));
        }
        // A fail point at one of the service's sites may lose the reply; the request stays
        // executed, so its resend is answered from the saved reply.
        let (handled, reply_lost) = fail::serving(service.handle(request)).await;
        let (code, body) = match handled {
            Ok(body) => (status::OK, body),
            Err(error) => {
                debug!(code = error.code, "request failed: {}", error.message);
                (error.code, encode_error_body(error.code, &error.message))
            }
        };
        let inner = &handle.inner;
        let saved = SavedReply {
            status: code,
            body: body.clone(),
        };
        inner
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .complete(client, xid, saved);
        inner.request_ended.notify_waiters();
        let reply_bytes = body.len() as u64;
        if let Some(id) = traced {
            let what = format!(
                "replying to {} (xid {xid}): status {code}, {reply_bytes} B, handled in {} µs",
                name.unwrap_or("request"),
                started.elapsed().as_micros()
            );
            handle
                .trace_log()
                .record(id, Step::new("rpc", "reply", what));
        }
        // Admission to reply, as the histogram says; counted once the reply is on its way,
        // off the reply's path (a scrape may see a reply's operation a moment late).
        let latency = started.elapsed();
        if reply_lost {
            debug!(%client, xid, "a fail point lost this reply");
        } else {
            inner.send_reply(&header, code, body);
        }
        inner.rpc_stats.record(Executed {
            portal,
            opcode,
            name,
            request_bytes,
            reply_bytes,
            failed: code != status::OK,
            latency,
        });
    }
    .instrument(span);
    // A traced request is handled inside its trace: what the service sends on its behalf
    // carries the id too.
    tokio::spawn(trace::within(traced, work));
}

/// Returns once no request that `client` gave up on is changing state below `xid`. Each such
/// request runs to its end (its effect began), and every end wakes this to look again.
async fn wait_for_abandoned(node: &NodeInner, client: Nid, xid: u64) {
    loop {
        let ended = node.request_ended.notified();
        tokio::pin!(ended);
        // Listening before looking: an end between the look and the wait is not missed.
        ended.as_mut().enable();
        let waits = node
            .replies
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .waits_for_abandoned(client, xid);
        if !waits {
            return;
        }
        ended.await;
    }
}
