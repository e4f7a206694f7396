//! What the clients of one seed share: the block geometry of their workload, the oracles that
//! check what they read, the event log, and the failures found; and the error classes their
//! events name.

use std::sync::{Arc, Mutex, PoisonError};

use iopath_fabric::FabricError;

use crate::events::EventLog;
use crate::namespace::NamespaceOracle;
use crate::oracle::Oracle;

/// Bytes per block: writes and reads are whole blocks.
pub(crate) const BLOCK_BYTES: u64 = 4096;
/// Blocks per object (and per fyod client's file).
pub(crate) const OBJECT_BLOCKS: u64 = 8;
/// What every client task shares.
pub(crate) struct Shared {
    oracle: Mutex<Oracle>,
    names: Mutex<NamespaceOracle>,
    pub(crate) events: Arc<EventLog>,
    failures: Mutex<Vec<String>>,
}

impl Shared {
    pub(crate) fn new(events: Arc<EventLog>) -> Shared {
        Shared {
            oracle: Mutex::new(Oracle::new()),
            names: Mutex::new(NamespaceOracle::new()),
            events,
            failures: Mutex::default(),
        }
    }

    /// The failures found so far, taken (the seed's verdict).
    pub(crate) fn take_failures(&self) -> Vec<String> {
        std::mem::take(&mut *self.failures.lock().unwrap_or_else(PoisonError::into_inner))
    }

    pub(crate) fn oracle(&self) -> std::sync::MutexGuard<'_, Oracle> {
        self.oracle.lock().unwrap_or_else(PoisonError::into_inner)
    }

    pub(crate) fn names(&self) -> std::sync::MutexGuard<'_, NamespaceOracle> {
        self.names.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Checks the bytes a read of `key` returned, records the read as event `kind` (`label`
    /// names the op), and fails the seed, naming `reader`, if the oracle finds them wrong.
    #[allow(clippy::too_many_arguments)] // one read's what and where, and who did it
    pub(crate) fn read_back(
        &self,
        kind: &'static str,
        reader: &str,
        label: &str,
        key: crate::pattern::ObjectKey,
        offset: u64,
        length: u64,
        bytes: &[u8],
        last: bool,
    ) {
        let checked = self.oracle().check_read(key, offset, length, bytes);
        self.events.record(
            kind,
            format_args!("{label} {key} @{offset}+{length}: {} bytes", bytes.len()),
        );
        if let Err(violation) = checked {
            let when = if last {
                "after the final recovery"
            } else {
                "during the run"
            };
            self.fail(format!("read {when} by {reader}: {violation}"));
        }
    }

    pub(crate) fn fail(&self, failure: String) {
        self.events.record("violation", &failure);
        self.failures
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .push(failure);
    }
}

/// An error's kind, without the parts (xids, wall-clock numbers) that differ run to run.
pub(crate) fn error_class(error: &FabricError) -> String {
    match error {
        FabricError::Remote { code, .. } => format!("remote errno {code}"),
        other => {
            let text = other.to_string();
            text.split(':').next().unwrap_or_default().to_string()
        }
    }
}
