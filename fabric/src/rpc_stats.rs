//! What a node's services executed, by portal and opcode: requests, their bytes in and out,
//! errors, and how long each took from admission to its reply — the per-operation counters a
//! `/metrics` scrape reads (ptlrpc's `stats` per service, in miniature).
//!
//! The table is bounded: an opcode the service names always has its row (a service names a
//! fixed set); opcodes it does not name get rows of their own while the table has fewer than
//! [`OPS_MAX`], and are counted together under [`OVERFLOW_OPCODE`] after that — so a peer
//! sending made-up opcodes can neither grow the table nor push a real operation out of it.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::Duration;

use iopath_lprocfs::families::HistogramSample;

use crate::histogram::LatencyHistogram;

/// The most (portal, opcode) pairs counted one by one before unnamed opcodes are counted
/// together.
pub const OPS_MAX: usize = 64;

/// The opcode under which requests beyond [`OPS_MAX`] pairs are counted.
pub const OVERFLOW_OPCODE: u32 = u32::MAX;

/// One operation's counters.
#[derive(Debug)]
struct OpCounters {
    /// The service's name for the opcode, if it gave one.
    name: Option<&'static str>,
    requests: AtomicU64,
    errors: AtomicU64,
    request_bytes: AtomicU64,
    reply_bytes: AtomicU64,
    latency: LatencyHistogram,
}

/// One executed request, as the RPC server reports it.
#[derive(Debug, Clone, Copy)]
pub struct Executed {
    /// The portal it came on.
    pub portal: u32,
    /// Its opcode.
    pub opcode: u32,
    /// The service's name for the opcode, if it has one.
    pub name: Option<&'static str>,
    /// Its body's bytes.
    pub request_bytes: u64,
    /// The reply body's bytes.
    pub reply_bytes: u64,
    /// Whether the service answered with an error.
    pub failed: bool,
    /// Admission to reply.
    pub latency: Duration,
}

/// A reading of one operation's counters.
#[derive(Debug, Clone, PartialEq)]
pub struct OpSnapshot {
    /// The portal.
    pub portal: u32,
    /// The opcode ([`OVERFLOW_OPCODE`] for the pairs past the bound).
    pub opcode: u32,
    /// The service's name for it, or `opcode_N` (`other` past the bound).
    pub name: String,
    /// Requests executed.
    pub requests: u64,
    /// Of those, answered with an error.
    pub errors: u64,
    /// Request body bytes.
    pub request_bytes: u64,
    /// Reply body bytes.
    pub reply_bytes: u64,
    /// Admission-to-reply times.
    pub latency: HistogramSample,
}

/// The node's table of executed operations.
#[derive(Debug, Default)]
pub struct RpcStats {
    ops: RwLock<BTreeMap<(u32, u32), Arc<OpCounters>>>,
}

impl RpcStats {
    /// Counts one executed request. Finds its row under the table's read lock; only an
    /// operation's first request takes the write lock, to add the row.
    pub fn record(&self, executed: Executed) {
        let mut key = (executed.portal, executed.opcode);
        let mut name = executed.name;
        if executed.opcode == OVERFLOW_OPCODE && name.is_none() {
            name = Some("other");
        }
        let found = self
            .ops
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&key)
            .cloned();
        let row = match found {
            Some(row) => row,
            None => {
                let mut ops = self.ops.write().unwrap_or_else(PoisonError::into_inner);
                if name.is_none() && !ops.contains_key(&key) && ops.len() >= OPS_MAX {
                    key = (executed.portal, OVERFLOW_OPCODE);
                    name = Some("other");
                }
                Arc::clone(ops.entry(key).or_insert_with(|| {
                    Arc::new(OpCounters {
                        name,
                        requests: AtomicU64::new(0),
                        errors: AtomicU64::new(0),
                        request_bytes: AtomicU64::new(0),
                        reply_bytes: AtomicU64::new(0),
                        latency: LatencyHistogram::default(),
                    })
                }))
            }
        };
        row.requests.fetch_add(1, Ordering::Relaxed);
        if executed.failed {
            row.errors.fetch_add(1, Ordering::Relaxed);
        }
        row.request_bytes
            .fetch_add(executed.request_bytes, Ordering::Relaxed);
        row.reply_bytes
            .fetch_add(executed.reply_bytes, Ordering::Relaxed);
        row.latency.record(executed.latency);
    }

    /// Every operation counted so far, by portal and opcode.
    pub fn snapshot(&self) -> Vec<OpSnapshot> {
        let ops = self.ops.read().unwrap_or_else(PoisonError::into_inner);
        ops.iter()
            .map(|(&(portal, opcode), row)| OpSnapshot {
                portal,
                opcode,
                name: row
                    .name
                    .map_or_else(|| format!("opcode_{opcode}"), str::to_owned),
                requests: row.requests.load(Ordering::Relaxed),
                errors: row.errors.load(Ordering::Relaxed),
                request_bytes: row.request_bytes.load(Ordering::Relaxed),
                reply_bytes: row.reply_bytes.load(Ordering::Relaxed),
                latency: row.latency.snapshot(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn executed(opcode: u32, failed: bool) -> Executed {
        Executed {
            portal: 7,
            opcode,
            name: (opcode == 3).then_some("write"),
            request_bytes: 100,
            reply_bytes: 20,
            failed,
            latency: Duration::from_millis(1),
        }
    }

    #[test]
    fn requests_are_counted_by_operation_with_their_bytes_errors_and_times() {
        let stats = RpcStats::default();
        stats.record(executed(3, false));
        stats.record(executed(3, true));
        stats.record(executed(5, false));
        let ops = stats.snapshot();
        assert_eq!(ops.len(), 2);
        assert_eq!((ops[0].opcode, ops[0].name.as_str()), (3, "write"));
        assert_eq!((ops[0].requests, ops[0].errors), (2, 1));
        assert_eq!((ops[0].request_bytes, ops[0].reply_bytes), (200, 40));
        assert_eq!(ops[0].latency.count, 2);
        assert_eq!(ops[1].name, "opcode_5");
    }

    #[test]
    fn opcodes_past_the_bound_are_counted_together() {
        let stats = RpcStats::default();
        for opcode in 0..(OPS_MAX as u32 + 10) {
            stats.record(executed(opcode, false));
        }
        let ops = stats.snapshot();
        assert_eq!(ops.len(), OPS_MAX + 1);
        let other = ops.last().unwrap();
        assert_eq!(
            (other.opcode, other.name.as_str()),
            (OVERFLOW_OPCODE, "other")
        );
        assert_eq!(other.requests, 10);
        // A named operation still gets its own row in a full table; a made-up opcode that
        // happens to be the overflow's own is counted as other.
        let mut named = executed(1000, false);
        named.name = Some("destroy");
        stats.record(named);
        stats.record(executed(OVERFLOW_OPCODE, false));
        let ops = stats.snapshot();
        assert!(ops.iter().any(|o| o.name == "destroy" && o.requests == 1));
        assert_eq!(ops.iter().filter(|o| o.name == "other").count(), 1);
        assert_eq!(ops.iter().find(|o| o.name == "other").unwrap().requests, 11);
    }
}
