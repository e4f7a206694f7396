//! The client's side of PFS replay: memory kept registered until the storage commits it.
//!
//! In PFS mode a storage server pulls a write's bytes straight from the compute node. If the
//! server restarts before it commits the write (async journal), the fyod replays the write,
//! and the server pulls the same bytes again — from the same compute-node region. So the
//! client keeps each PFS write's region registered (pinned) until every storage write it
//! fed is covered by its target's `last_committed`, which the fyod reports in every reply.
//! In UFS mode the fyod keeps its own copy, and the client pins nothing.
//!
//! Generic over what is pinned (the runtime pins a registered region), so it is tested
//! without a fabric.

use std::collections::{BTreeMap, HashMap};

#[derive(Debug)]
struct Pin<T> {
    value: T,
    bytes: u64,
    /// (target, transno) storage writes still uncommitted.
    waiting: Vec<(u32, u64)>,
}

/// Pinned values and the commits they wait for.
#[derive(Debug)]
pub struct PinTable<T> {
    pins: BTreeMap<u64, Pin<T>>,
    committed: HashMap<u32, u64>,
    next_id: u64,
    pinned_bytes: u64,
}

impl<T> Default for PinTable<T> {
    fn default() -> Self {
        PinTable {
            pins: BTreeMap::new(),
            committed: HashMap::new(),
            next_id: 1,
            pinned_bytes: 0,
        }
    }
}

impl<T> PinTable<T> {
    /// An empty table.
    pub fn new() -> PinTable<T> {
        PinTable::default()
    }

    /// Bytes pinned now.
    pub fn pinned_bytes(&self) -> u64 {
        self.pinned_bytes
    }

    /// Values pinned now.
    pub fn len(&self) -> usize {
        self.pins.len()
    }

    /// Whether nothing is pinned.
    pub fn is_empty(&self) -> bool {
        self.pins.is_empty()
    }

    /// The targets pinned values still wait for, in order.
    pub fn targets(&self) -> Vec<u32> {
        let mut targets: Vec<u32> = self
            .pins
            .values()
            .flat_map(|p| p.waiting.iter().map(|(t, _)| *t))
            .collect();
        targets.sort_unstable();
        targets.dedup();
        targets
    }

    fn is_committed(&self, target: u32, transno: u64) -> bool {
        self.committed.get(&target).is_some_and(|c| *c >= transno)
    }

    /// Pins `value` (`bytes` long) until every (target, transno) in `stamps` is committed.
    /// Returns it at once if nothing is left to wait for.
    pub fn pin(&mut self, value: T, bytes: u64, stamps: &[(u32, u64)]) -> Option<T> {
        let waiting: Vec<(u32, u64)> = stamps
            .iter()
            .copied()
            .filter(|(t, transno)| *transno != 0 && !self.is_committed(*t, *transno))
            .collect();
        if waiting.is_empty() {
            return Some(value);
        }
        let id = self.next_id;
        self.next_id += 1;
        self.pinned_bytes += bytes;
        self.pins.insert(
            id,
            Pin {
                value,
                bytes,
                waiting,
            },
        );
        None
    }

    /// `target` has committed up to `last_committed`: the values no longer waiting for
    /// anything, released.
    pub fn note_committed(&mut self, target: u32, last_committed: u64) -> Vec<T> {
        let known = self.committed.entry(target).or_insert(0);
        if last_committed <= *known {
            return Vec::new();
        }
        *known = last_committed;
        let mut done = Vec::new();
        for (id, pin) in self.pins.iter_mut() {
            pin.waiting
                .retain(|(t, transno)| !(*t == target && *transno <= last_committed));
            if pin.waiting.is_empty() {
                done.push(*id);
            }
        }
        let mut released = Vec::with_capacity(done.len());
        for id in done {
            let pin = self.pins.remove(&id).expect("found above");
            self.pinned_bytes -= pin.bytes;
            released.push(pin.value);
        }
        released
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_pin_waits_for_every_target_it_fed() {
        let mut pins = PinTable::new();
        assert_eq!(pins.pin("a", 100, &[(0, 5), (1, 7)]), None);
        assert_eq!(pins.pin("b", 50, &[(1, 3)]), None);
        assert_eq!(pins.pinned_bytes(), 150);
        assert_eq!(pins.targets(), [0, 1]);
        assert_eq!(pins.note_committed(1, 6), ["b"]);
        assert_eq!(
            pins.note_committed(0, 5),
            Vec::<&str>::new(),
            "a waits for target 1"
        );
        assert_eq!(pins.note_committed(1, 7), ["a"]);
        assert!(pins.is_empty());
        assert_eq!(pins.pinned_bytes(), 0);
    }

    #[test]
    fn nothing_to_wait_for_is_returned_at_once() {
        let mut pins = PinTable::new();
        assert_eq!(pins.pin(1, 10, &[]), Some(1), "UFS: no stamps");
        pins.note_committed(0, 9);
        assert_eq!(pins.pin(2, 10, &[(0, 9)]), Some(2), "already committed");
        assert_eq!(
            pins.pin(3, 10, &[(0, 0)]),
            Some(3),
            "transno 0 changed nothing"
        );
        assert_eq!(pins.len(), 0);
    }

    #[test]
    fn commits_never_go_backwards() {
        let mut pins = PinTable::new();
        pins.note_committed(0, 10);
        assert!(pins.note_committed(0, 4).is_empty());
        assert_eq!(pins.pin("x", 1, &[(0, 8)]), Some("x"));
    }
}
