//! The server's memory of requests it has executed, so a resend (same client, same xid)
//! executes once: a pure core, no locks or sockets.
//!
//! As ptlrpc does with its reply state and the client's `last_xid`, every request carries the
//! oldest xid its client still waits on; saved replies below it are forgotten. And as ptlrpc
//! does with an export's last xid, a request below the highest such xid a client has sent is
//! a late copy of one whose reply the client already has (a resend the network held back
//! past its timeout): it is dropped, never executed again — its saved reply may be gone.
//! Everything is bounded: replies per client, clients, and requests executing at once.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;

use crate::nid::Nid;

/// A reply kept for resends.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SavedReply {
    /// Its status (errno, 0 for success).
    pub status: u32,
    /// Its body.
    pub body: Bytes,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    Executing,
    Done(SavedReply),
}

/// One client's saved replies and executing requests.
#[derive(Debug, Default)]
struct ClientSlots {
    slots: BTreeMap<u64, Slot>,
    /// The highest oldest-pending xid the client has sent: it waits on nothing below it.
    waits_on_nothing_below: u64,
}

/// What to do with an arriving request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// New: execute it, then call [`ReplyCache::complete`].
    Execute,
    /// A resend of a request still executing: its reply will answer this one too.
    AlreadyExecuting,
    /// A resend of a request already executed: send this saved reply again.
    Resend(SavedReply),
    /// A late copy of a request the client no longer waits on (it had the reply): drop it.
    Stale,
    /// At a limit: answer BUSY, the client retries.
    Busy,
}

/// Saved replies and executing requests, per client.
#[derive(Debug)]
pub struct ReplyCache {
    clients: HashMap<Nid, ClientSlots>,
    per_client_max: usize,
    clients_max: usize,
    executing: u32,
    executing_max: u32,
}

impl ReplyCache {
    /// An empty cache with its bounds.
    pub fn new(per_client_max: usize, clients_max: usize, executing_max: u32) -> ReplyCache {
        ReplyCache {
            clients: HashMap::new(),
            per_client_max: per_client_max.max(1),
            clients_max: clients_max.max(1),
            executing: 0,
            executing_max: executing_max.max(1),
        }
    }

    /// Decides what to do with request `xid` from `client`, which still waits on nothing
    /// older than `oldest_pending_xid`.
    pub fn admit(&mut self, client: Nid, xid: u64, oldest_pending_xid: u64) -> Admission {
        if let Some(known) = self.clients.get_mut(&client) {
            // The client has the replies of everything older than its oldest pending xid. A
            // late request may carry an older one: the floor never goes back.
            let floor = known.waits_on_nothing_below.max(oldest_pending_xid);
            known.waits_on_nothing_below = floor;
            known
                .slots
                .retain(|&saved, slot| saved >= floor || *slot == Slot::Executing);
            match known.slots.get(&xid) {
                Some(Slot::Executing) => return Admission::AlreadyExecuting,
                Some(Slot::Done(reply)) => return Admission::Resend(reply.clone()),
                // Below the floor: the client had its reply and moved on, and the saved reply
                // went with that. Executing it again would run it twice.
                None if xid < floor => return Admission::Stale,
                None => {}
            }
        }
        if self.executing >= self.executing_max {
            return Admission::Busy;
        }
        if !self.clients.contains_key(&client) && self.clients.len() >= self.clients_max {
            // Make room by forgetting a client that has nothing executing.
            let idle = self
                .clients
                .iter()
                .find(|(_, known)| known.slots.values().all(|s| *s != Slot::Executing))
                .map(|(nid, _)| *nid);
            match idle {
                Some(nid) => {
                    self.clients.remove(&nid);
                }
                None => return Admission::Busy,
            }
        }
        let known = self.clients.entry(client).or_default();
        known.waits_on_nothing_below = known.waits_on_nothing_below.max(oldest_pending_xid);
        let slots = &mut known.slots;
        if slots.len() >= self.per_client_max {
            // The oldest saved reply goes, but never the one of the request the client says
            // it still waits for: its reply was lost, its resend is coming, and a forgotten
            // reply would have it executed twice.
            let oldest_done = slots
                .iter()
                .find(|(x, s)| **s != Slot::Executing && **x != oldest_pending_xid)
                .map(|(x, _)| *x);
            match oldest_done {
                Some(old) => {
                    slots.remove(&old);
                }
                None => return Admission::Busy,
            }
        }
        slots.insert(xid, Slot::Executing);
        self.executing += 1;
        Admission::Execute
    }

    /// Records the reply of a request admitted with [`Admission::Execute`].
    pub fn complete(&mut self, client: Nid, xid: u64, reply: SavedReply) {
        assert!(
            self.executing > 0,
            "completion without an executing request"
        );
        self.executing -= 1;
        if let Some(slot) = self
            .clients
            .get_mut(&client)
            .and_then(|known| known.slots.get_mut(&xid))
        {
            *slot = Slot::Done(reply);
        }
    }

    /// Requests executing now.
    pub fn executing(&self) -> u32 {
        self.executing
    }

    /// Replies saved now, over all clients.
    pub fn saved(&self) -> usize {
        self.clients
            .values()
            .map(|known| {
                known
                    .slots
                    .values()
                    .filter(|x| **x != Slot::Executing)
                    .count()
            })
            .sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reply(n: u8) -> SavedReply {
        SavedReply {
            status: 0,
            body: Bytes::from(vec![n]),
        }
    }

    #[test]
    fn a_resend_executes_once() {
        let client: Nid = "1@mem0".parse().unwrap();
        let mut cache = ReplyCache::new(8, 8, 8);
        assert_eq!(cache.admit(client, 10, 10), Admission::Execute);
        assert_eq!(cache.admit(client, 10, 10), Admission::AlreadyExecuting);
        cache.complete(client, 10, reply(1));
        assert_eq!(cache.admit(client, 10, 10), Admission::Resend(reply(1)));
        // Once the client moves past xid 10 the reply is forgotten.
        assert_eq!(cache.admit(client, 11, 11), Admission::Execute);
        assert_eq!(cache.saved(), 0);
        // Other clients' xids are their own.
        let other: Nid = "2@mem0".parse().unwrap();
        assert_eq!(cache.admit(other, 10, 10), Admission::Execute);
    }

    /// Found by the seeded simulation (seed 391): a write's last resend was held up in the
    /// network past the client's timeout; the client went on with new requests, which told the
    /// server to forget the write's saved reply; then the late copy arrived and ran again.
    #[test]
    fn a_late_copy_of_a_request_whose_reply_was_forgotten_is_dropped() {
        let client: Nid = "1@mem0".parse().unwrap();
        let mut cache = ReplyCache::new(8, 8, 8);
        assert_eq!(cache.admit(client, 10, 10), Admission::Execute);
        cache.complete(client, 10, reply(1));
        // The client's next request says it waits on nothing below 11: the reply goes.
        assert_eq!(cache.admit(client, 11, 11), Admission::Execute);
        assert_eq!(cache.saved(), 0);
        assert_eq!(
            cache.admit(client, 10, 10),
            Admission::Stale,
            "not run again"
        );
        // A late request with an older floor does not lower it.
        cache.complete(client, 11, reply(2));
        assert_eq!(cache.admit(client, 12, 9), Admission::Execute);
        assert_eq!(cache.admit(client, 10, 9), Admission::Stale);
        // Other clients' xids are their own.
        let other: Nid = "2@mem0".parse().unwrap();
        assert_eq!(cache.admit(other, 10, 10), Admission::Execute);
    }

    #[test]
    fn bounds_hold() {
        let client: Nid = "1@mem0".parse().unwrap();
        let mut cache = ReplyCache::new(2, 1, 3);
        assert_eq!(cache.admit(client, 1, 1), Admission::Execute);
        assert_eq!(cache.admit(client, 2, 1), Admission::Execute);
        // Both slots executing: no room.
        assert_eq!(cache.admit(client, 3, 1), Admission::Busy);
        cache.complete(client, 1, reply(1));
        // The only saved reply is the one the client still waits for: it is kept.
        assert_eq!(cache.admit(client, 3, 1), Admission::Busy);
        assert_eq!(cache.admit(client, 1, 1), Admission::Resend(reply(1)));
        // Once the client has it, there is room again.
        assert_eq!(cache.admit(client, 3, 2), Admission::Execute);
        assert_eq!(cache.executing(), 2);
        // One client only, and it is busy: a second is refused.
        let other: Nid = "2@mem0".parse().unwrap();
        assert_eq!(cache.admit(other, 1, 1), Admission::Busy);
        cache.complete(client, 2, reply(2));
        cache.complete(client, 3, reply(3));
        // Now the first client is idle and can be forgotten.
        assert_eq!(cache.admit(other, 1, 1), Admission::Execute);
        assert_eq!(cache.executing(), 1);
    }

    /// Eight writers of one client, one of whose replies was lost: the seven others go on
    /// and fill the client's saved replies; the oldest saved one is the lost reply's, which
    /// the client's oldest pending xid says it still waits for. It must survive, so that its
    /// resend is answered and not executed again.
    #[test]
    fn the_reply_a_client_still_waits_for_is_never_evicted() {
        let client: Nid = "1@mem0".parse().unwrap();
        let mut cache = ReplyCache::new(4, 8, 8);
        assert_eq!(cache.admit(client, 1, 1), Admission::Execute);
        cache.complete(client, 1, reply(1));
        for xid in 2..=20 {
            assert_eq!(cache.admit(client, xid, 1), Admission::Execute, "xid {xid}");
            cache.complete(client, xid, reply(xid as u8));
        }
        assert_eq!(cache.admit(client, 1, 1), Admission::Resend(reply(1)));
        assert_eq!(cache.saved(), 4);
    }

    #[test]
    fn executing_limit_answers_busy() {
        let mut cache = ReplyCache::new(8, 8, 2);
        let a: Nid = "1@mem0".parse().unwrap();
        assert_eq!(cache.admit(a, 1, 1), Admission::Execute);
        assert_eq!(cache.admit(a, 2, 1), Admission::Execute);
        assert_eq!(cache.admit(a, 3, 1), Admission::Busy);
        // A resend of an executing request is still recognised at the limit.
        assert_eq!(cache.admit(a, 2, 1), Admission::AlreadyExecuting);
    }
}
