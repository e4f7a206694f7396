//! `ObjectTable`: the committed state of a target — which objects exist and their sizes.
//!
//! Built by applying committed journal records in transno order on top of the last
//! checkpoint. Recovery compares it with the object files on disk; the journal task keeps one
//! up to date so that it can write a checkpoint and empty the journal.

use super::record::{OpRecord, Operation};
use crate::ids::ObjectId;
use std::collections::BTreeMap;

/// Committed object sizes by id.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ObjectTable {
    sizes: BTreeMap<ObjectId, u64>,
}

impl ObjectTable {
    /// An empty table.
    pub fn new() -> ObjectTable {
        ObjectTable::default()
    }

    /// Applies one committed record. Errors name a record that cannot follow the state so far
    /// (a write to an object that was never created, a second create), which means the journal
    /// does not describe this target.
    pub fn apply(&mut self, record: &OpRecord) -> Result<(), String> {
        let object = record.object;
        match record.operation {
            Operation::Create => {
                if self.sizes.insert(object, 0).is_some() {
                    return Err(format!(
                        "transno {}: create of existing object {object}",
                        record.transno
                    ));
                }
            }
            Operation::Write => {
                let Some(size) = self.sizes.get_mut(&object) else {
                    return Err(format!(
                        "transno {}: write to unknown object {object}",
                        record.transno
                    ));
                };
                // Concurrent writes to one object may commit in either order, so a write's
                // effect on the size is "at least its end", never the size it recorded.
                *size = (*size).max(record.offset_bytes + record.length_bytes);
            }
            Operation::Punch => {
                let Some(size) = self.sizes.get_mut(&object) else {
                    return Err(format!(
                        "transno {}: punch of unknown object {object}",
                        record.transno
                    ));
                };
                *size = record.size_after_bytes;
            }
            Operation::Destroy => {
                if self.sizes.remove(&object).is_none() {
                    return Err(format!(
                        "transno {}: destroy of unknown object {object}",
                        record.transno
                    ));
                }
            }
        }
        Ok(())
    }

    /// Inserts an object with a size (used when loading a checkpoint).
    pub fn insert(&mut self, object: ObjectId, size_bytes: u64) {
        self.sizes.insert(object, size_bytes);
    }

    /// The committed size of `object`, if it exists.
    pub fn size(&self, object: ObjectId) -> Option<u64> {
        self.sizes.get(&object).copied()
    }

    /// Number of objects.
    pub fn len(&self) -> usize {
        self.sizes.len()
    }

    /// True when no object exists.
    pub fn is_empty(&self) -> bool {
        self.sizes.is_empty()
    }

    /// Objects and sizes in id order.
    pub fn iter(&self) -> impl Iterator<Item = (ObjectId, u64)> + '_ {
        self.sizes.iter().map(|(&object, &size)| (object, size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::Transno;

    fn record(transno: u64, operation: Operation, offset: u64, length: u64, size: u64) -> OpRecord {
        OpRecord {
            transno: Transno(transno),
            operation,
            object: ObjectId(1),
            offset_bytes: offset,
            length_bytes: length,
            size_after_bytes: size,
        }
    }

    #[test]
    fn records_build_sizes_and_writes_never_shrink() {
        let mut table = ObjectTable::new();
        table.apply(&record(1, Operation::Create, 0, 0, 0)).unwrap();
        table
            .apply(&record(2, Operation::Write, 100, 50, 150))
            .unwrap();
        // Committed after a larger concurrent write: recorded size 40 does not shrink it.
        table
            .apply(&record(3, Operation::Write, 0, 40, 40))
            .unwrap();
        assert_eq!(table.size(ObjectId(1)), Some(150));
        table.apply(&record(4, Operation::Punch, 0, 0, 10)).unwrap();
        assert_eq!(table.size(ObjectId(1)), Some(10));
        table
            .apply(&record(5, Operation::Destroy, 0, 0, 0))
            .unwrap();
        assert_eq!(table.size(ObjectId(1)), None);
    }

    #[test]
    fn records_that_cannot_follow_are_named() {
        let mut table = ObjectTable::new();
        let error = table
            .apply(&record(7, Operation::Write, 0, 1, 1))
            .unwrap_err();
        assert_eq!(error, "transno 7: write to unknown object 0x1");
        table.apply(&record(8, Operation::Create, 0, 0, 0)).unwrap();
        assert!(
            table
                .apply(&record(9, Operation::Create, 0, 0, 0))
                .unwrap_err()
                .contains("create of existing")
        );
    }
}
