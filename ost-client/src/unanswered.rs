//! The writes a client has sent and had no answer to. A server that restarts may have run
//! one and lost its reply with the crash; its recovery cuts the bytes back and, if it evicts
//! anyone, would mark them lost — though nobody was told they were written. The client names
//! them at its reconnect (`ConnectRequest.unanswered`) and sends each again after recovery.

use std::collections::BTreeMap;
use std::sync::{Mutex, PoisonError};

use iopath_proto::ost as pb;

use crate::wire::UNANSWERED_WRITES_MAX;

/// The writes under way, each from its send until its answer (or its caller gives up).
#[derive(Debug, Default)]
pub struct Unanswered {
    inner: Mutex<Inner>,
}

#[derive(Debug, Default)]
struct Inner {
    next: u64,
    writes: BTreeMap<u64, pb::UnansweredWrite>,
}

impl Unanswered {
    /// A write of `length` bytes at `offset` of `object` on `target` is under way until the
    /// returned guard is dropped.
    pub fn sent(&self, target: u32, object: u64, offset: u64, length: u64) -> UnderWay<'_> {
        let mut inner = self.lock();
        let key = inner.next;
        inner.next += 1;
        inner.writes.insert(
            key,
            pb::UnansweredWrite {
                target,
                object,
                offset,
                length,
            },
        );
        UnderWay { of: self, key }
    }

    /// The writes under way now, oldest first: at most [`UNANSWERED_WRITES_MAX`], what a
    /// server takes in one CONNECT (more would have the reconnect refused).
    pub fn now(&self) -> Vec<pb::UnansweredWrite> {
        self.lock()
            .writes
            .values()
            .take(UNANSWERED_WRITES_MAX)
            .copied()
            .collect()
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A write under way: answered (or given up) when dropped.
#[derive(Debug)]
pub struct UnderWay<'a> {
    of: &'a Unanswered,
    key: u64,
}

impl Drop for UnderWay<'_> {
    fn drop(&mut self) {
        self.of.lock().writes.remove(&self.key);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_write_is_unanswered_from_its_send_until_its_guard_goes() {
        let unanswered = Unanswered::default();
        let first = unanswered.sent(0, 7, 0, 4096);
        let second = unanswered.sent(1, 8, 4096, 8192);
        assert_eq!(unanswered.now().len(), 2);
        drop(first);
        let now = unanswered.now();
        assert_eq!(now.len(), 1);
        assert_eq!(
            (now[0].target, now[0].object, now[0].offset, now[0].length),
            (1, 8, 4096, 8192)
        );
        drop(second);
        assert!(unanswered.now().is_empty());
    }

    #[test]
    fn a_reconnect_names_no_more_than_a_server_takes_the_oldest_first() {
        let unanswered = Unanswered::default();
        let under_way: Vec<UnderWay<'_>> = (0..UNANSWERED_WRITES_MAX as u64 + 10)
            .map(|i| unanswered.sent(0, 1, i * 4096, 4096))
            .collect();
        let now = unanswered.now();
        assert_eq!(now.len(), UNANSWERED_WRITES_MAX);
        assert_eq!(
            (now[0].offset, now[now.len() - 1].offset),
            (0, (UNANSWERED_WRITES_MAX as u64 - 1) * 4096)
        );
        drop(under_way);
    }
}
