//! The replies of changes, kept durably (Lustre's `last_rcvd` and reply data): a pure core.
//!
//! The fabric's reply cache answers a resent request from memory, so it executes once — but
//! only in one server life. A create whose reply was lost, resent to the restarted service,
//! would run again and fail with EEXIST (the first run made the file), and an unlink with
//! ENOENT: the application would be told its change failed when it was made. So each change
//! is logged with the request that asked for it ([`RequestRef`]: client, xid, and a checksum
//! of the request), and the store keeps, per client, the outcomes of its last few changes in
//! a [`ReplyTable`] — rebuilt from the log at start and written into every snapshot. A
//! request found there is answered with the outcome it was given, without running again.
//!
//! Bounds: [`REPLIES_PER_CLIENT_MAX`] outcomes per client (a client has few changes in
//! flight at once: a fyod's concurrent opens are the most), and [`REPLY_CLIENTS_MAX`]
//! clients, forgetting the one whose last change is oldest. A resend of a change older than
//! that would run again, as it would without this table.
//!
//! The checksum guards against a client that restarted and began its xids again where its
//! earlier life's still stand in the table: a request whose xid matches but whose bytes do
//! not is a new request, and runs.

use std::collections::{BTreeMap, VecDeque};

use serde::{Deserialize, Serialize};

use crate::namespace::op::Outcome;

/// Outcomes kept per client.
pub const REPLIES_PER_CLIENT_MAX: usize = 32;
/// Clients whose outcomes are kept.
pub const REPLY_CLIENTS_MAX: usize = 4096;

/// Which request asked for a change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RequestRef {
    /// The client's NID, as text.
    pub client: String,
    /// The request's xid (the same on every resend).
    pub xid: u64,
    /// CRC32 of the opcode and the request body: a resend's bytes are the same.
    pub checksum: u32,
}

impl RequestRef {
    /// The request `xid` from `client`, with opcode `opcode` and body `body`.
    pub fn new(client: impl Into<String>, xid: u64, opcode: u32, body: &[u8]) -> RequestRef {
        let mut crc = crc32fast::Hasher::new();
        crc.update(&opcode.to_le_bytes());
        crc.update(body);
        RequestRef {
            client: client.into(),
            xid,
            checksum: crc.finalize(),
        }
    }
}

/// One change's outcome, as its client was (or will be) told.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct SavedOutcome {
    xid: u64,
    checksum: u32,
    /// The log sequence number of the change: which client's last change is oldest.
    seq: u64,
    outcome: Outcome,
}

/// Per client, the outcomes of its last changes (see the module documentation).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ReplyTable {
    /// By client NID; each client's outcomes oldest first.
    clients: BTreeMap<String, VecDeque<SavedOutcome>>,
}

impl ReplyTable {
    /// An empty table.
    pub fn new() -> ReplyTable {
        ReplyTable::default()
    }

    /// The outcome the change `request` was given, if it ran and is still kept.
    pub fn find(&self, request: &RequestRef) -> Option<&Outcome> {
        self.clients
            .get(&request.client)?
            .iter()
            .find(|saved| saved.xid == request.xid && saved.checksum == request.checksum)
            .map(|saved| &saved.outcome)
    }

    /// Keeps `outcome` of `request`, the change logged as record `seq`, forgetting the oldest
    /// beyond the bounds.
    pub fn keep(&mut self, request: &RequestRef, seq: u64, outcome: Outcome) {
        if !self.clients.contains_key(&request.client) && self.clients.len() >= REPLY_CLIENTS_MAX {
            let oldest = self
                .clients
                .iter()
                .min_by_key(|(_, saved)| saved.back().map_or(0, |s| s.seq))
                .map(|(client, _)| client.clone());
            if let Some(oldest) = oldest {
                self.clients.remove(&oldest);
            }
        }
        let saved = self.clients.entry(request.client.clone()).or_default();
        saved.push_back(SavedOutcome {
            xid: request.xid,
            checksum: request.checksum,
            seq,
            outcome,
        });
        while saved.len() > REPLIES_PER_CLIENT_MAX {
            saved.pop_front();
        }
    }

    /// Outcomes kept, over every client.
    pub fn len(&self) -> usize {
        self.clients.values().map(VecDeque::len).sum()
    }

    /// Whether none are kept.
    pub fn is_empty(&self) -> bool {
        self.clients.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn request(client: &str, xid: u64, body: &[u8]) -> RequestRef {
        RequestRef::new(client, xid, 2, body)
    }

    #[test]
    fn a_kept_outcome_answers_only_the_same_request() {
        let mut table = ReplyTable::new();
        let create = request("7@mem0", 40, b"/f");
        table.keep(&create, 1, Outcome::Removed);
        assert_eq!(table.find(&create), Some(&Outcome::Removed));
        // Another client's xid 40, or the same xid with other bytes (a client that restarted
        // and numbers its requests again), is a new request.
        assert_eq!(table.find(&request("8@mem0", 40, b"/f")), None);
        assert_eq!(table.find(&request("7@mem0", 40, b"/g")), None);
        assert_eq!(table.find(&RequestRef::new("7@mem0", 40, 6, b"/f")), None);
    }

    #[test]
    fn the_table_is_bounded_per_client_and_in_clients() {
        let mut table = ReplyTable::new();
        let first = request("7@mem0", 0, b"");
        for xid in 0..REPLIES_PER_CLIENT_MAX as u64 + 5 {
            table.keep(&request("7@mem0", xid, b""), xid + 1, Outcome::StripeSet);
        }
        assert_eq!(table.len(), REPLIES_PER_CLIENT_MAX);
        assert_eq!(table.find(&first), None, "the oldest went");
        for client in 0..REPLY_CLIENTS_MAX as u64 {
            let seq = 1000 + client;
            table.keep(
                &request(&format!("{client}@tcp"), 1, b""),
                seq,
                Outcome::Removed,
            );
        }
        // 7@mem0's last change is the oldest of all: it went to make room.
        assert_eq!(table.clients.len(), REPLY_CLIENTS_MAX);
        assert!(!table.clients.contains_key("7@mem0"));
        assert!(!table.is_empty());
    }
}
