//! What every OST operation returns: its value, its transno, and the target's last_committed.

use crate::ids::Transno;
use serde::{Deserialize, Serialize};

/// The result of one operation, as the RPC reply will carry it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpReply<T> {
    /// What the operation produced.
    pub value: T,
    /// The operation's transno; `None` for operations that change nothing (read, getattr).
    pub transno: Option<Transno>,
    /// The target's highest committed transno when the reply was made. A client drops every
    /// kept request with a transno at or below it.
    pub last_committed: Transno,
}

/// Attributes of an object.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectAttr {
    /// Current size, including acknowledged writes not yet committed.
    pub size_bytes: u64,
}

/// Counters of one target.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct OstStats {
    /// Highest committed transno.
    pub last_committed: Transno,
    /// Objects on the target.
    pub objects: usize,
    /// Journal work so far.
    pub journal: crate::journal::JournalCounters,
}
