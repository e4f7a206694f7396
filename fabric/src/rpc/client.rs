//! The client side of an RPC: a fresh xid, the request, the wait for its reply, and resends
//! with the same xid after a timeout or a failed send.

use std::sync::atomic::Ordering;
use std::sync::{Arc, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{Notify, oneshot};
use tracing::debug;

use crate::error::{FabricError, decode_error_body};
use crate::fail::{Injected, Site};
use crate::frame::{Kind, Message, status};
use crate::nid::Nid;
use crate::node::{CallInProgress, Node, NodeInner};

/// Per-call overrides of the node's limits.
#[derive(Debug, Clone, Copy, Default)]
pub struct CallOptions {
    /// How long to wait for a reply before resending (default: the node's `rpc_timeout`).
    pub timeout: Option<Duration>,
    /// Resends before giving up (default: the node's `rpc_resends_max`).
    pub resends_max: Option<u32>,
}

/// Removes the xid from the pending table however the call ends.
struct PendingGuard<'a> {
    node: &'a NodeInner,
    xid: u64,
}

impl Drop for PendingGuard<'_> {
    fn drop(&mut self) {
        self.node
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.xid);
        self.node
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.xid);
    }
}

impl NodeInner {
    /// A fresh xid for a call to `target`, counted among the calls in progress in the same
    /// step: a call that took a higher xid can never tell a server its client waits on nothing
    /// below this one. With it, what wakes the call to send again at once.
    fn begin_call(&self, target: Nid) -> (u64, Arc<Notify>) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);
        let resend = Arc::new(Notify::new());
        calls.insert(
            xid,
            CallInProgress {
                target,
                resend: Arc::clone(&resend),
            },
        );
        (xid, resend)
    }

    /// The oldest xid of a call to `target` still in progress: what this node tells `target`
    /// it still waits on. Per peer, because each server's reply cache sees only the xids sent
    /// to it: a slow call to another server must not keep this one from learning that a call
    /// to it was given up on (its effect is then refused, `ReplyCache::begin_effect`).
    fn oldest_call_to(&self, target: Nid, this: u64) -> u64 {
        let calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        calls
            .iter()
            .find(|(_, call)| call.target == target)
            .map_or(this, |(&xid, _)| xid)
    }
}

/// The longest a call waits before it asks a BUSY server again.
pub const BUSY_BACKOFF_MAX: Duration = Duration::from_secs(1);

/// How long a call waits before its `busy`-th retry of a server that answered BUSY: 2 ms,
/// doubling to [`BUSY_BACKOFF_MAX`]. Clients held off by a server at its limit of executing
/// requests (thousands at one fyod) then ask a few times a second, not forty: the retries
/// must not take the CPU the server needs to drain its queue.
pub fn busy_backoff(busy: u32) -> Duration {
    Duration::from_millis(1u64 << busy.min(20)).min(BUSY_BACKOFF_MAX)
}

/// How many times one call sends again because its peer restarted ([`Node::resend_calls_to`]),
/// beyond its resends after timeouts: a bound of our own on a peer that keeps restarting.
const RESENDS_ON_RESTART_MAX: u32 = 8;

impl Node {
    /// `target` restarted, as a reconnect found: it forgot every request it had not answered.
    /// Each call to it now waiting for a reply sends its request again at once (same xid),
    /// instead of at its timeout — ptlrpc resends an import's in-flight requests once it has
    /// reconnected to the new server instance. A copy the new start already has is answered
    /// by its reply cache, as any resend is. Returns how many calls were told.
    pub fn resend_calls_to(&self, target: Nid) -> usize {
        let calls = self
            .inner
            .calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut told = 0;
        for call in calls.values().filter(|call| call.target == target) {
            call.resend.notify_waiters();
            told += 1;
        }
        told
    }

    /// Sends request `opcode` with `body` to the service on `portal` at `target` and waits for
    /// the reply body. Resends carry the same xid, so the server executes the request once.
    pub async fn call(
        &self,
        target: Nid,
        portal: u32,
        opcode: u32,
        body: Bytes,
    ) -> Result<Bytes, FabricError> {
        self.call_with(target, portal, opcode, body, CallOptions::default())
            .await
    }

    /// [`Node::call`] with per-call options.
    pub async fn call_with(
        &self,
        target: Nid,
        portal: u32,
        opcode: u32,
        body: Bytes,
        options: CallOptions,
    ) -> Result<Bytes, FabricError> {
        self.call_counting_sends(target, portal, opcode, body, options, &mut 0)
            .await
    }

    /// [`Node::call_with`], counting in `sends` how often the request went out. More than
    /// once means a resend, which a server that restarted in between executes as new (its
    /// saved replies went with it): a caller whose request is not idempotent checks for that.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "call_counting_sends",
        skip_all
    )]
    pub async fn call_counting_sends(
        &self,
        target: Nid,
        portal: u32,
        opcode: u32,
        body: Bytes,
        options: CallOptions,
        sends: &mut u32,
    ) -> Result<Bytes, FabricError> {
        let inner = &self.inner;
        let limits = &inner.limits;
        if body.len() as u64 > u64::from(limits.frame_payload_max_bytes) {
            return Err(FabricError::TooLarge {
                what: "RPC request body",
                bytes: body.len() as u64,
                max_bytes: u64::from(limits.frame_payload_max_bytes),
            });
        }
        let timeout = options.timeout.unwrap_or(limits.rpc_timeout);
        let resends_max = options.resends_max.unwrap_or(limits.rpc_resends_max);
        let (xid, resend) = inner.begin_call(target);
        let _pending = PendingGuard { node: inner, xid };
        *sends = 0;
        let mut busy = 0u32;
        let mut resent_on_restart = 0u32;
        // Early replies taken; after one, the next wait sends nothing (the server has it).
        let mut early = 0u32;
        let mut quiet = false;
        loop {
            // Listening before the send: a restart found while the request is on its way
            // counts too.
            let restarted = resend.notified();
            tokio::pin!(restarted);
            restarted.as_mut().enable();
            let (reply_tx, reply_rx) = oneshot::channel();
            inner
                .pending
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .insert(xid, reply_tx);
            let oldest_pending = inner.oldest_call_to(target, xid);
            let mut header = inner.header(Kind::Put, target);
            header.portal = portal;
            header.match_bits = xid;
            header.hdr_data = u64::from(opcode);
            header.cookie = oldest_pending;
            let (sent_tx, sent_rx) = oneshot::channel();
            if std::mem::take(&mut quiet) {
                // An early reply said the server has the request under way: wait for its
                // reply again, sending nothing.
                drop(sent_tx);
            } else {
                *sends += 1;
                match inner.fail.pass(Site::ClientSend).await {
                    Err(injected @ Injected::Errno(_)) => {
                        return Err(injected.error(Site::ClientSend));
                    }
                    // Lost on the way out: no send, so the wait below ends at the timeout.
                    Err(Injected::Drop) => drop(sent_tx),
                    // Waits here for credits when the interface or the peer is saturated.
                    Ok(()) | Err(Injected::Corrupt) => {
                        inner
                            .send(Message::new(header, body.clone()), Some(sent_tx))
                            .await?;
                    }
                }
            }
            let outcome = tokio::time::timeout(timeout, async {
                let reply = async {
                    // A send that fails (peer down) ends the wait at once, not at the timeout.
                    if let Ok(Err(error)) = sent_rx.await {
                        return Err(error);
                    }
                    reply_rx.await.map_err(|_| FabricError::ShuttingDown)
                };
                tokio::select! {
                    biased;
                    reply = reply => Some(reply),
                    () = &mut restarted, if resent_on_restart < RESENDS_ON_RESTART_MAX => None,
                }
            })
            .await;
            let outcome = match outcome {
                Ok(Some(reply)) => Ok(reply),
                Ok(None) => {
                    // The peer restarted: this request went to the start that is gone.
                    // It counts among `sends` (it went out again: the start that is gone may
                    // have executed it), not among the resends timeouts may use up.
                    resent_on_restart += 1;
                    inner.counters.rpc_resends.fetch_add(1, Ordering::Relaxed);
                    debug!(%target, xid, "resending RPC: its peer restarted");
                    continue;
                }
                Err(elapsed) => Err(elapsed),
            };
            let failure = match outcome {
                Ok(Ok(reply))
                    if reply.header.status == status::BUSY
                        && busy < limits.rpc_busy_retries_max =>
                {
                    busy += 1;
                    *sends -= 1; // BUSY was an answer: it does not use up a resend
                    tokio::time::sleep(busy_backoff(busy)).await;
                    continue;
                }
                Ok(Ok(reply)) if reply.header.status == status::IN_PROGRESS => {
                    // An early reply to a resend: the server has the request and is still
                    // executing it. Wait on, up to `rpc_early_replies_max` times.
                    if early < limits.rpc_early_replies_max {
                        early += 1;
                        quiet = true;
                        debug!(%target, xid, early, "early reply: the request is under way");
                        continue;
                    }
                    return Err(FabricError::Timeout {
                        what: "RPC reply (its server was still executing it)",
                        peer: target,
                        attempts: *sends,
                    });
                }
                Ok(Ok(reply)) if reply.header.status == status::OK => return Ok(reply.payload),
                Ok(Ok(reply)) => {
                    return Err(decode_error_body(
                        target,
                        reply.header.status,
                        &reply.payload,
                    ));
                }
                Ok(Err(FabricError::ShuttingDown)) => return Err(FabricError::ShuttingDown),
                Ok(Err(send_error)) => {
                    // Do not spin on a dead peer: wait a little before the resend.
                    tokio::time::sleep(timeout.min(Duration::from_millis(100)) * *sends).await;
                    send_error
                }
                Err(_) => FabricError::Timeout {
                    what: "RPC reply",
                    peer: target,
                    attempts: *sends,
                },
            };
            // A send an early reply answered was not lost: it uses up no resend.
            if sends.saturating_sub(resent_on_restart + early) > resends_max {
                return Err(match failure {
                    FabricError::Timeout { .. } => failure,
                    other => FabricError::Timeout {
                        what: "RPC reply",
                        peer: target,
                        attempts: *sends,
                    }
                    .with_cause(other),
                });
            }
            inner.counters.rpc_resends.fetch_add(1, Ordering::Relaxed);
            debug!(%target, xid, attempt = *sends + 1, "resending RPC: {failure}");
        }
    }
}

impl FabricError {
    /// Keeps the more specific of a final timeout and the failure behind it.
    fn with_cause(self, cause: FabricError) -> FabricError {
        match cause {
            FabricError::Unreachable { .. } | FabricError::NoRoute { .. } => cause,
            _ => self,
        }
    }
}
