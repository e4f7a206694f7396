//! The server's memory of requests it has executed, so a resend (same client, same xid)
//! executes once: a pure core, no locks or sockets.
//!
//! As ptlrpc does with its reply state and the client's `last_xid`, every request carries the
//! oldest xid its client still waits on; saved replies below it are forgotten. And as ptlrpc
//! does with an export's last xid, a request below the highest such xid a client has sent is
//! a late copy of one whose reply the client already has (a resend the network held back
//! past its timeout): it is dropped, never executed again — its saved reply may be gone.
//! Everything is bounded: replies per client, clients, and requests executing at once.
//!
//! The same floor says which requests **still executing** their client has given up on: a
//! client that stops waiting for a request (its resends ran out) and sends the operation again
//! under a new xid must not have the old one change anything after the new one did — a write
//! still pulling its bytes would otherwise land them over the client's later writes (the
//! simulation's seed 32209). A service marks the point where a request begins to change state
//! ([`ReplyCache::begin_effect`]): one given up on before it got there never gets there, and a
//! request that arrives while one given up on is past it waits for it to end
//! ([`Admission::ExecuteAfterAbandoned`]), as ptlrpc aborts a request whose client reconnected
//! before its bulk and makes a resend wait for the copy in progress.

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

/// How far an executing request has gone in changing the server's state.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Effect {
    /// Nothing yet (it may be pulling its bytes, or waiting for a lock).
    NotBegun,
    /// Its service began changing state ([`ReplyCache::begin_effect`]): it runs to its end.
    Begun,
    /// Its client gave up on it before it began: it must change nothing.
    Abandoned,
}

#[derive(Debug, Clone, PartialEq, Eq)]
enum Slot {
    Executing(Effect),
    Done(SavedReply),
}

impl Slot {
    fn is_executing(&self) -> bool {
        matches!(self, Slot::Executing(_))
    }
}

/// One client's saved replies and executing requests.
#[derive(Debug, Default)]
struct ClientSlots {
    slots: BTreeMap<u64, Slot>,
    /// The highest oldest-pending xid the client has sent: it waits on nothing below it.
    waits_on_nothing_below: u64,
}

impl ClientSlots {
    /// Raises the floor to `oldest_pending_xid` (it never goes back), forgets the saved
    /// replies below it, and marks the requests below it that have not begun to change
    /// anything as given up on.
    fn raise_floor(&mut self, oldest_pending_xid: u64) -> u64 {
        let floor = self.waits_on_nothing_below.max(oldest_pending_xid);
        self.waits_on_nothing_below = floor;
        self.slots
            .retain(|&saved, slot| saved >= floor || slot.is_executing());
        for slot in self.slots.range_mut(..floor).map(|(_, slot)| slot) {
            if *slot == Slot::Executing(Effect::NotBegun) {
                *slot = Slot::Executing(Effect::Abandoned);
            }
        }
        floor
    }

    /// Whether a request given up on, below `xid`, is changing state now: `xid` must wait.
    fn abandoned_in_effect_below(&self, xid: u64) -> bool {
        self.slots
            .range(..self.waits_on_nothing_below.min(xid))
            .any(|(_, slot)| *slot == Slot::Executing(Effect::Begun))
    }
}

/// What to do with an arriving request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Admission {
    /// New: execute it, then call [`ReplyCache::complete`].
    Execute,
    /// New, but a request its client gave up on is changing state here now: execute it once
    /// that one has ended ([`ReplyCache::waits_for_abandoned`] is false), then call
    /// [`ReplyCache::complete`].
    ExecuteAfterAbandoned,
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
            // The client has the replies of everything older than its oldest pending xid, or
            // gave up on them. A late request may carry an older one: the floor never goes
            // back.
            let floor = known.raise_floor(oldest_pending_xid);
            match known.slots.get(&xid) {
                Some(Slot::Executing(_)) => return Admission::AlreadyExecuting,
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
                .find(|(_, known)| known.slots.values().all(|s| !s.is_executing()))
                .map(|(nid, _)| *nid);
            match idle {
                Some(nid) => {
                    self.clients.remove(&nid);
                }
                None => return Admission::Busy,
            }
        }
        let known = self.clients.entry(client).or_default();
        known.raise_floor(oldest_pending_xid);
        let slots = &mut known.slots;
        if slots.len() >= self.per_client_max {
            // The oldest saved reply goes, but never the one of the request the client says
            // it still waits for: its reply was lost, its resend is coming, and a forgotten
            // reply would have it executed twice.
            let oldest_done = slots
                .iter()
                .find(|(x, s)| !s.is_executing() && **x != oldest_pending_xid)
                .map(|(x, _)| *x);
            match oldest_done {
                Some(old) => {
                    slots.remove(&old);
                }
                None => return Admission::Busy,
            }
        }
        slots.insert(xid, Slot::Executing(Effect::NotBegun));
        self.executing += 1;
        if known.abandoned_in_effect_below(xid) {
            Admission::ExecuteAfterAbandoned
        } else {
            Admission::Execute
        }
    }

    /// Request `xid` of `client` begins to change the server's state. Returns false — and it
    /// must then change nothing — if its client has given up on it (sent a request that says
    /// it waits on nothing this old). Otherwise, from now on, what the client sends waits for
    /// this request to end. A request the cache does not know (a service called outside the
    /// RPC server) goes ahead.
    pub fn begin_effect(&mut self, client: Nid, xid: u64) -> bool {
        let Some(slot) = self
            .clients
            .get_mut(&client)
            .and_then(|known| known.slots.get_mut(&xid))
        else {
            return true;
        };
        match slot {
            Slot::Executing(Effect::Abandoned) => false,
            Slot::Executing(effect) => {
                *effect = Effect::Begun;
                true
            }
            Slot::Done(_) => true,
        }
    }

    /// Whether request `xid` of `client`, admitted with [`Admission::ExecuteAfterAbandoned`],
    /// must still wait: a request its client gave up on is changing state.
    pub fn waits_for_abandoned(&self, client: Nid, xid: u64) -> bool {
        self.clients
            .get(&client)
            .is_some_and(|known| known.abandoned_in_effect_below(xid))
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
                    .filter(|slot| !slot.is_executing())
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

    /// Found by the seeded simulation (seed 32209): a write's handler was still pulling its
    /// bytes (its chunks' replies held up by crashed routers) when the client gave up on it and
    /// sent the write again under a new xid, which ran, followed by a newer write to the same
    /// place. The old handler's pull then completed, and it wrote its stale bytes over the
    /// newer ones. A request given up on before its effect began must never begin it.
    #[test]
    fn a_request_given_up_on_before_its_effect_never_begins_it() {
        let client: Nid = "1@mem0".parse().unwrap();
        let mut cache = ReplyCache::new(8, 8, 8);
        assert_eq!(cache.admit(client, 10, 10), Admission::Execute);
        // The client gave up on 10 and sends the operation again as 11.
        assert_eq!(cache.admit(client, 11, 11), Admission::Execute);
        assert!(cache.begin_effect(client, 11));
        assert!(!cache.begin_effect(client, 10), "10 was given up on");
        assert!(!cache.begin_effect(client, 10), "and stays so");
        cache.complete(client, 10, reply(0));
        cache.complete(client, 11, reply(1));
        assert_eq!(cache.executing(), 0);
        // A request still waited on begins when it likes, however late.
        assert_eq!(cache.admit(client, 12, 12), Admission::Execute);
        assert_eq!(cache.admit(client, 13, 12), Admission::Execute);
        assert!(cache.begin_effect(client, 13));
        assert!(cache.begin_effect(client, 12));
    }

    /// A request given up on after its effect began runs to its end, and what its client
    /// sends meanwhile waits for it: the new request's effect comes after the old one's.
    #[test]
    fn a_request_given_up_on_after_its_effect_began_is_waited_for() {
        let client: Nid = "1@mem0".parse().unwrap();
        let other: Nid = "2@mem0".parse().unwrap();
        let mut cache = ReplyCache::new(8, 8, 8);
        assert_eq!(cache.admit(client, 10, 10), Admission::Execute);
        assert!(cache.begin_effect(client, 10));
        // Still waited on: a newer request runs beside it.
        assert_eq!(cache.admit(client, 11, 10), Admission::Execute);
        // Given up on (the client's oldest pending is now 12): what comes waits.
        assert_eq!(
            cache.admit(client, 12, 12),
            Admission::ExecuteAfterAbandoned
        );
        assert!(cache.waits_for_abandoned(client, 12));
        assert!(!cache.waits_for_abandoned(other, 12), "others never wait");
        assert_eq!(cache.admit(other, 12, 12), Admission::Execute);
        cache.complete(client, 10, reply(0));
        assert!(!cache.waits_for_abandoned(client, 12));
        assert_eq!(cache.admit(client, 13, 12), Admission::Execute);
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
