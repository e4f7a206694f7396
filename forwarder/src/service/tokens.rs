//! MUNIX tokens at run time: the [`TokenManager`] around the pure
//! [`TokenTable`](crate::policy::token::TokenTable) on the fyod that manages tokens (the
//! *token home*), and [`Tokens`], which every fyod's calls use — directly when the home is
//! this fyod, by RPC to the home's fyod portal otherwise.
//!
//! An acquire that has to wait parks until a release hands it the token, or until the
//! holder's lease ends, when it takes the token from the holder itself (so a dead holder
//! delays others by at most one lease).

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use iopath_fabric::rpc::CallOptions;
use iopath_fabric::{Nid, Node};
use iopath_proto::fyod as pb;
use prost::Message as _;
use tokio::sync::oneshot;
use tokio::time::Instant;
use tracing::warn;

use super::wire::{FYOD_PORTAL, opcode};
use crate::error::{ForwarderError, Result};
use crate::limits::FyodLimits;
use crate::policy::token::{Acquired, Grant, Holder, TokenTable, Wake};

#[derive(Debug)]
struct Shared {
    table: TokenTable,
    waiting: HashMap<u64, oneshot::Sender<Grant>>,
}

/// The token manager of the token home.
#[derive(Debug)]
pub(crate) struct TokenManager {
    shared: Mutex<Shared>,
    epoch: Instant,
    /// Bounds the waiting loop: each turn an expiry passes the token on.
    waiters_max: u32,
}

/// Takes a waiter's ticket out of the table if its acquire is dropped before the grant.
struct Ticket<'a> {
    manager: &'a TokenManager,
    ino: u64,
    ticket: u64,
    /// The table holds the ticket no more: granted, or its wait ended by a restart.
    settled: bool,
}

impl Drop for Ticket<'_> {
    fn drop(&mut self) {
        if !self.settled {
            let mut shared = self
                .manager
                .shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            shared.table.cancel(self.ino, self.ticket);
            shared.waiting.remove(&self.ticket);
        }
    }
}

impl TokenManager {
    pub(crate) fn new(limits: &FyodLimits) -> TokenManager {
        TokenManager {
            shared: Mutex::new(Shared {
                table: TokenTable::new(
                    limits.token_files_max,
                    limits.token_waiters_max,
                    limits.token_lease.as_millis().max(1) as u64,
                ),
                waiting: HashMap::new(),
            }),
            epoch: Instant::now(),
            waiters_max: limits.token_waiters_max,
        }
    }

    fn now_ms(&self) -> u64 {
        self.epoch.elapsed().as_millis() as u64
    }

    /// Acquisitions that waited, so far.
    pub(crate) fn waits(&self) -> u64 {
        self.shared
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .table
            .waits()
    }

    /// Hands the token to a woken waiter; one that has gone away releases it at once, and
    /// the token moves on (bounded by the waiters queued).
    fn deliver(&self, shared: &mut Shared, ino: u64, mut wake: Option<Wake>) {
        while let Some(Wake { ticket, grant }) = wake.take() {
            let delivered = shared
                .waiting
                .remove(&ticket)
                .is_some_and(|tx| tx.send(grant).is_ok());
            if !delivered {
                let now = self.now_ms();
                wake = shared.table.release(ino, grant.grant, now).ok().flatten();
            }
        }
    }

    /// Acquires `ino`'s token for `holder`, waiting as long as it takes (each holder at most
    /// one lease).
    pub(crate) async fn acquire(&self, ino: u64, holder: Holder) -> Result<Grant> {
        let (ticket, mut rx) = {
            let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
            let now = self.now_ms();
            // A fyod that restarted: what its earlier start held goes on now, and its waits end.
            let restarted = shared.table.note_start(holder, now)?;
            // The table has taken their tickets out already; their callers are told below.
            for (_, ticket) in restarted.cancelled {
                shared.waiting.remove(&ticket);
            }
            for (file, wake) in restarted.wakes {
                self.deliver(&mut shared, file, Some(wake));
            }
            match shared.table.acquire(ino, holder, now)? {
                Acquired::Granted(grant) => return Ok(grant),
                Acquired::Queued { ticket } => {
                    let (tx, rx) = oneshot::channel();
                    shared.waiting.insert(ticket, tx);
                    (ticket, rx)
                }
            }
        };
        let mut guard = Ticket {
            manager: self,
            ino,
            ticket,
            settled: false,
        };
        // Each turn either receives the grant or expires one holder's lease, which moves the
        // token one waiter closer: at most one turn per waiter ahead of us.
        for _ in 0..=self.waiters_max {
            let lease_end = self
                .shared
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .table
                .lease_end_ms(ino);
            let deadline = match lease_end {
                Some(end) => self.epoch + Duration::from_millis(end),
                // Not held: our grant is on its way.
                None => Instant::now() + Duration::from_millis(1),
            };
            match tokio::time::timeout_at(deadline, &mut rx).await {
                Ok(Ok(grant)) => {
                    guard.settled = true;
                    return Ok(grant);
                }
                // Our wait was ended: the fyod that asked has restarted since.
                Ok(Err(_)) => {
                    guard.settled = true;
                    return Err(ForwarderError::invalid(
                        "token acquire",
                        format!(
                            "fyod {} has restarted since it asked for the token of inode {ino}",
                            holder.fyod
                        ),
                    ));
                }
                Err(_) => {
                    let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
                    let now = self.now_ms();
                    let wake = shared.table.expire(ino, now);
                    self.deliver(&mut shared, ino, wake);
                }
            }
        }
        Err(ForwarderError::LimitReached {
            what: "turns waiting for a MUNIX token",
            max: u64::from(self.waiters_max) + 1,
        })
    }

    /// Releases `ino`'s token held under `grant`.
    pub(crate) fn release(&self, ino: u64, grant: u64) -> Result<()> {
        let mut shared = self.shared.lock().unwrap_or_else(PoisonError::into_inner);
        let now = self.now_ms();
        let wake = shared.table.release(ino, grant, now)?;
        self.deliver(&mut shared, ino, wake);
        Ok(())
    }
}

/// How often an acquire still waiting at the home is sent again (see [`Tokens::acquire`]).
const ACQUIRE_RESEND_INTERVAL: Duration = Duration::from_secs(1);

/// Sends of an acquire beyond its first: as many intervals as a lease lasts, and three more
/// for the messages in between.
fn acquire_resends(lease: Duration) -> u32 {
    let intervals = lease.as_millis() / ACQUIRE_RESEND_INTERVAL.as_millis().max(1);
    u32::try_from(intervals)
        .unwrap_or(u32::MAX)
        .saturating_add(3)
}

/// How every call of this fyod gets and gives back tokens.
#[derive(Debug)]
pub(crate) struct Tokens {
    node: Node,
    /// The fyod managing tokens; `None` when it is this one.
    home: Option<Nid>,
    /// This fyod's manager (serves its own calls when it is the home, and other fyods').
    pub(crate) manager: TokenManager,
    lease: Duration,
    /// When this fyod started, microseconds since the epoch: a token home that sees a newer
    /// start of a fyod frees what the earlier one held.
    start: u64,
}

/// Every start number this process has given out: the latest.
static LAST_START: AtomicU64 = AtomicU64::new(0);

/// A number for a new start of a fyod: the clock in microseconds since the epoch, and
/// always past every start made before in this process, so two fyods of one process started
/// within a microsecond (a test, an embedded stack restarting one) are told apart. Across
/// processes it is the clock's: a start after the clock was set back by more than the fyod
/// was down is refused by the token home until the home restarts (docs/reliability.md).
fn next_start() -> u64 {
    let clock = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(1, |d| d.as_micros().max(1) as u64);
    let mut start = clock;
    // Never fails: the closure always gives a value.
    let _ = LAST_START.fetch_update(Ordering::AcqRel, Ordering::Acquire, |last| {
        start = clock.max(last + 1);
        Some(start)
    });
    start
}

/// A token held for one call.
#[derive(Debug, Clone, Copy)]
pub(crate) struct HeldToken {
    pub(crate) ino: u64,
    pub(crate) grant: Grant,
}

impl Tokens {
    pub(crate) fn new(node: Node, home: Option<Nid>, limits: &FyodLimits) -> Tokens {
        let me = node.nid();
        let home = home.filter(|h| *h != me);
        if let Some(home) = home {
            // An acquire waits at the home for as long as a lease, and is sent twice more: one
            // in flight when the home restarted waited out a lease per try (60 s) before the
            // new start answered. Watched, it goes to the new start at once.
            node.watch_restarts(home);
        }
        Tokens {
            home,
            node,
            manager: TokenManager::new(limits),
            lease: limits.token_lease,
            start: next_start(),
        }
    }

    /// Acquires `ino`'s token for this fyod's open file `handle`.
    pub(crate) async fn acquire(&self, ino: u64, handle: u64) -> Result<HeldToken> {
        let Some(home) = self.home else {
            let holder = Holder {
                fyod: self.node.nid(),
                handle,
                start: self.start,
            };
            let grant = self.manager.acquire(ino, holder).await?;
            return Ok(HeldToken { ino, grant });
        };
        let body: Bytes = pb::TokenAcquireRequest {
            ino,
            handle,
            start: self.start,
        }
        .encode_to_vec()
        .into();
        // The reply waits for the grant, up to a lease. It is asked again every
        // ACQUIRE_RESEND_INTERVAL meanwhile, for a lease and a few more: the home drops a copy
        // of an acquire it is still serving, and answers one it has served from its saved
        // reply — so a lost reply costs an interval, not the lease (60 s) that one attempt
        // per lease waited (found in a soak: a path through fyods served again 53 s after a
        // kill, its acquire's reply dropped).
        let options = CallOptions {
            timeout: Some(ACQUIRE_RESEND_INTERVAL),
            resends_max: Some(acquire_resends(self.lease)),
        };
        let reply = self
            .node
            .call_with(home, FYOD_PORTAL, opcode::TOKEN_ACQUIRE, body, options)
            .await?;
        let grant = pb::TokenGrant::decode(reply.as_ref())
            .map_err(|e| ForwarderError::malformed("token grant", e.to_string()))?;
        let previous = if grant.previous_holder.is_empty() {
            None
        } else {
            Some(grant.previous_holder.parse().map_err(|_| {
                ForwarderError::malformed("token grant", "previous holder is not a NID")
            })?)
        };
        Ok(HeldToken {
            ino,
            grant: Grant {
                grant: grant.grant,
                previous,
            },
        })
    }

    /// Gives the token back. A failure is logged, not returned: the call it guarded is done,
    /// and the lease bounds how long the token stays with us.
    pub(crate) async fn release(&self, token: HeldToken) {
        let Some(home) = self.home else {
            if let Err(e) = self.manager.release(token.ino, token.grant.grant) {
                warn!(ino = token.ino, "releasing a MUNIX token: {e}");
            }
            return;
        };
        let body = pb::TokenReleaseRequest {
            ino: token.ino,
            grant: token.grant.grant,
        }
        .encode_to_vec()
        .into();
        if let Err(e) = self
            .node
            .call(home, FYOD_PORTAL, opcode::TOKEN_RELEASE, body)
            .await
        {
            warn!(ino = token.ino, %home, "releasing a MUNIX token: {e}");
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn starts_made_within_one_microsecond_are_still_told_apart() {
        // The clock alone gave two starts of one microsecond the same number, and a token
        // home then took the second start for the first.
        let starts: Vec<u64> = (0..10_000).map(|_| next_start()).collect();
        assert!(
            starts.windows(2).all(|w| w[0] < w[1]),
            "every start is past the one before"
        );
    }
}
