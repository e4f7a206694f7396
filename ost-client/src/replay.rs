//! [`ReplayList`]: every write a storage server acknowledged to this client and has not
//! committed yet, kept until a reply's `last_committed` covers it — a pure core: no sockets,
//! locks or clocks.
//!
//! With async journals a reply means "on disk, not yet committed": if the server crashes
//! before its next commit, recovery cuts the write, and only the client can bring it back, by
//! replaying it under its original transno ([`crate::OstClient`] does the replay). So every
//! acknowledged write whose transno is above its target's `last_committed` is kept, in transno
//! order per target, and dropped as soon as a `last_committed` covers it.
//!
//! A kept write holds one of two things for the server to pull from again ([`KeptData`]):
//! its bytes, or a descriptor of another node's memory whose owner keeps it registered.

use std::collections::{BTreeMap, HashMap};

use bytes::Bytes;
use iopath_fabric::BufferDescriptor;
use iopath_fabric::frame::status::errno;
use iopath_fabric::trace::TraceId;

/// What the server pulls a kept write's bytes from when it is replayed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum KeptData {
    /// The bytes themselves, held here: replay registers them again.
    Data(Bytes),
    /// Another node's memory: replay names it again, and its owner must still have it.
    Descriptor(BufferDescriptor),
}

impl KeptData {
    /// Bytes this client pins for the write: a descriptor's bytes are pinned by their owner.
    pub fn pinned_bytes(&self) -> u64 {
        match self {
            KeptData::Data(data) => data.len() as u64,
            KeptData::Descriptor(_) => 0,
        }
    }

    /// Whether a replay refused with `code` means the write is gone. `ESTALE`: the server
    /// evicted this client. `ENOENT` for a descriptor: its owner no longer has the region (or
    /// the object is gone). Our own bytes cannot be gone, so for them `ENOENT` is an error like
    /// any other.
    pub fn lost_by(&self, code: u32) -> bool {
        code == errno::ESTALE || (code == errno::ENOENT && matches!(self, KeptData::Descriptor(_)))
    }
}

/// An acknowledged write the server has not committed yet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Kept {
    /// The object written.
    pub object: u64,
    /// Where in it.
    pub offset: u64,
    /// What the server pulls the bytes from again.
    pub data: KeptData,
    /// The traced request it belongs to, if it was traced: its release is recorded.
    pub trace: Option<TraceId>,
}

/// Where a write sits in the replay order: its target and its transno there.
pub type KeptKey = (u32, u64);

/// What [`ReplayList::note`] did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Noted {
    /// The acknowledged write is kept now (it was not before).
    pub kept: bool,
    /// The kept writes of the target its commit covered, now forgotten.
    pub forgotten: Vec<(KeptKey, Kept)>,
}

/// The kept writes of one connection, and each target's `last_committed` as last heard.
#[derive(Debug, Clone, Default)]
pub struct ReplayList {
    last_committed: HashMap<u32, u64>,
    kept: BTreeMap<KeptKey, Kept>,
    pinned_bytes: u64,
}

impl ReplayList {
    /// Nothing kept.
    pub fn new() -> ReplayList {
        ReplayList::default()
    }

    /// A reply from `target` said `last_committed`, and acknowledged `write` under `transno`
    /// (0 and `None` for a reply that acknowledged no write): keeps the write if it is not
    /// committed yet, and forgets every kept write of the target the commit covers. Says
    /// whether the write is newly kept, and returns the writes it forgot.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "ReplayList::note",
        skip_all
    )]
    pub fn note(
        &mut self,
        target: u32,
        transno: u64,
        last_committed: u64,
        write: Option<Kept>,
    ) -> Noted {
        let committed = self.last_committed.entry(target).or_insert(0);
        *committed = (*committed).max(last_committed);
        let committed = *committed;
        let mut kept = false;
        if let Some(write) = write
            && transno > committed
        {
            self.pinned_bytes += write.data.pinned_bytes();
            match self.kept.insert((target, transno), write) {
                // A server gives a transno once; a second reply with it is the same write.
                Some(replaced) => self.pinned_bytes -= replaced.data.pinned_bytes(),
                None => kept = true,
            }
        }
        let covered: Vec<KeptKey> = self
            .kept
            .range((target, 0)..=(target, committed))
            .map(|(key, _)| *key)
            .collect();
        let forgotten = covered
            .into_iter()
            .filter_map(|key| self.forget(key).map(|kept| (key, kept)))
            .collect();
        self.check();
        Noted { kept, forgotten }
    }

    /// `target` has committed up to `last_committed`, learned another way (a sync through
    /// another connection, a read's reply).
    pub fn committed(&mut self, target: u32, last_committed: u64) -> Vec<(KeptKey, Kept)> {
        self.note(target, 0, last_committed, None).forgotten
    }

    /// Drops the kept write at `key` (replayed and committed, or lost); returns it.
    pub fn forget(&mut self, key: KeptKey) -> Option<Kept> {
        let kept = self.kept.remove(&key)?;
        self.pinned_bytes -= kept.data.pinned_bytes();
        Some(kept)
    }

    /// Drops everything: the server committed every target (a disconnect).
    pub fn clear(&mut self) {
        self.kept.clear();
        self.pinned_bytes = 0;
    }

    /// The kept writes in replay order: by target, then transno.
    pub fn in_replay_order(&self) -> Vec<(KeptKey, Kept)> {
        self.kept.iter().map(|(k, v)| (*k, v.clone())).collect()
    }

    /// How many writes are kept for each target that has any, by target.
    pub fn kept_by_target(&self) -> Vec<(u32, u64)> {
        let mut counts: Vec<(u32, u64)> = Vec::new();
        for (target, _) in self.kept.keys() {
            match counts.last_mut() {
                Some((t, n)) if t == target => *n += 1,
                _ => counts.push((*target, 1)),
            }
        }
        counts
    }

    /// How many writes are kept.
    pub fn len(&self) -> usize {
        self.kept.len()
    }

    /// True when nothing is kept.
    pub fn is_empty(&self) -> bool {
        self.kept.is_empty()
    }

    /// Bytes of this client's own memory the kept writes hold (descriptors hold none here).
    pub fn pinned_bytes(&self) -> u64 {
        self.pinned_bytes
    }

    /// `target`'s `last_committed` as last heard (0 before any reply).
    pub fn last_committed(&self, target: u32) -> u64 {
        self.last_committed.get(&target).copied().unwrap_or(0)
    }

    fn check(&self) {
        let pinned: u64 = self.kept.values().map(|k| k.data.pinned_bytes()).sum();
        assert_eq!(
            pinned, self.pinned_bytes,
            "pinned bytes are the kept writes' bytes"
        );
        for (target, transno) in self.kept.keys() {
            assert!(
                *transno > self.last_committed(*target),
                "nothing committed is kept"
            );
        }
    }
}

#[cfg(test)]
mod tests {
    use iopath_fabric::ChecksumKind;

    use super::*;

    fn bytes(n: usize) -> Kept {
        Kept {
            object: 1,
            offset: 0,
            data: KeptData::Data(Bytes::from(vec![7; n])),
            trace: None,
        }
    }

    fn descriptor() -> KeptData {
        KeptData::Descriptor(BufferDescriptor {
            owner: "17@mem0".parse().expect("a NID"),
            region: 42,
            offset: 0,
            length: 4096,
            checksum: None,
            checksum_kind: ChecksumKind::Crc32,
        })
    }

    #[test]
    fn an_uncommitted_write_is_kept_until_a_commit_covers_it() {
        let mut list = ReplayList::new();
        list.note(0, 11, 10, Some(bytes(100)));
        list.note(0, 12, 10, Some(bytes(50)));
        list.note(1, 5, 0, Some(bytes(10)));
        assert_eq!((list.len(), list.pinned_bytes()), (3, 160));
        // Target 0 commits through 11: the first write goes, target 1's stays.
        let forgotten: Vec<KeptKey> = list.committed(0, 11).into_iter().map(|(k, _)| k).collect();
        assert_eq!(forgotten, [(0, 11)]);
        assert_eq!((list.len(), list.pinned_bytes()), (2, 60));
        let order: Vec<KeptKey> = list.in_replay_order().iter().map(|(k, _)| *k).collect();
        assert_eq!(order, [(0, 12), (1, 5)]);
        // A later reply's last_committed covers the rest of target 0.
        list.note(0, 13, 13, Some(bytes(1)));
        assert_eq!(list.in_replay_order().len(), 1);
        assert_eq!(list.last_committed(0), 13);
    }

    #[test]
    fn a_write_committed_when_acknowledged_is_not_kept_and_commits_never_go_back() {
        let mut list = ReplayList::new();
        list.note(0, 5, 5, Some(bytes(100)));
        assert!(list.is_empty(), "sync mode: committed at its reply");
        list.note(0, 0, 3, None);
        assert_eq!(
            list.last_committed(0),
            5,
            "an older last_committed changes nothing"
        );
        list.note(0, 4, 5, Some(bytes(1)));
        assert!(list.is_empty(), "at or below last_committed: already safe");
    }

    #[test]
    fn forget_and_clear_release_what_was_pinned() {
        let mut list = ReplayList::new();
        list.note(0, 7, 0, Some(bytes(30)));
        list.note(
            0,
            8,
            0,
            Some(Kept {
                object: 2,
                offset: 0,
                data: descriptor(),
                trace: None,
            }),
        );
        assert_eq!(list.pinned_bytes(), 30, "a descriptor pins nothing here");
        assert_eq!(list.forget((0, 7)).map(|k| k.object), Some(1));
        assert_eq!(list.forget((0, 7)), None);
        assert_eq!(list.pinned_bytes(), 0);
        list.clear();
        assert!(list.is_empty());
    }

    #[test]
    fn a_descriptor_whose_memory_is_gone_is_lost_but_our_own_bytes_cannot_be() {
        let data = KeptData::Data(Bytes::from_static(b"kept"));
        assert!(data.lost_by(errno::ESTALE), "evicted");
        assert!(!data.lost_by(errno::ENOENT), "an error, not a loss");
        assert!(descriptor().lost_by(errno::ESTALE), "evicted");
        assert!(
            descriptor().lost_by(errno::ENOENT),
            "the owner dropped its region"
        );
        assert!(!descriptor().lost_by(errno::EIO));
    }
}
