//! Reading a journal back after a crash: the valid prefix, a torn tail, or corruption.
//!
//! A pure function over the journal's bytes. The rules:
//!
//! 1. Records are read in order. A transaction counts once its commit record is read and agrees
//!    with the records before it (count, first and last transno, transnos increasing).
//! 2. At the first defect (short, bad checksum, impossible fields, disagreeing commit) the
//!    scanner asks: is there a valid *commit* record anywhere after this point? If there is,
//!    committed transactions lie beyond the damage, and dropping them would lose acknowledged
//!    data — the journal is corrupt in the middle and the target must not start. If there is
//!    not, the damage is a torn tail: the last transaction was being written when the server
//!    died, nobody was told it committed, and it is cut off.
//! 3. Operation records after the last commit record, without damage, are an uncommitted
//!    transaction: also cut off.

use super::record::{
    CommitRecord, HEADER_LEN, JournalEntry, JournalHeader, OpRecord, RECORD_LEN, RECORD_MAGIC,
    RecordDefect,
};
use crate::error::{Result, StorageError};
use crate::ids::Transno;
use std::path::Path;

/// What a scan found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ScanReport {
    /// The header.
    pub header: JournalHeader,
    /// Operation records of committed transactions, in journal (= transno) order.
    pub committed: Vec<OpRecord>,
    /// Transno of the last commit record, or zero.
    pub last_committed: Transno,
    /// Bytes up to the end of the last commit record: the journal's valid length.
    pub valid_len: u64,
    /// What lies beyond `valid_len`, if anything.
    pub discarded: Option<Discarded>,
}

/// The part of a journal recovery cuts off.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Discarded {
    /// Where the cut is (= `valid_len`).
    pub offset: u64,
    /// Bytes cut.
    pub bytes: u64,
    /// Intact operation records of the uncommitted transaction.
    pub uncommitted_records: usize,
    /// The torn record, if the tail was torn rather than just uncommitted: its offset and defect.
    pub torn_at: Option<(u64, String)>,
}

/// Scans `bytes`, the whole journal at `path` (used only in error messages).
pub fn scan(bytes: &[u8], path: &Path) -> Result<ScanReport> {
    let corrupt = |offset: u64, reason: String| StorageError::JournalCorrupt {
        path: path.to_path_buf(),
        offset,
        reason,
    };
    let header = JournalHeader::decode(bytes).map_err(|reason| corrupt(0, reason))?;

    let mut committed = Vec::new();
    let mut group: Vec<OpRecord> = Vec::new();
    let mut last_committed = Transno::ZERO;
    let mut last_seen = Transno::ZERO;
    let mut valid_len = HEADER_LEN;
    let mut pos = HEADER_LEN;
    let mut torn_at = None;

    // Bounded: every pass advances `pos` by one record.
    while pos < bytes.len() {
        let end = (pos + RECORD_LEN).min(bytes.len());
        let defect = match JournalEntry::decode(&bytes[pos..end]) {
            Ok(JournalEntry::Op(record)) if record.transno > last_seen => {
                last_seen = record.transno;
                group.push(record);
                None
            }
            Ok(JournalEntry::Op(_)) => Some(RecordDefect::Inconsistent("transno not increasing")),
            Ok(JournalEntry::Commit(commit)) if closes(&commit, &group) => {
                last_committed = commit.last;
                committed.append(&mut group);
                valid_len = end;
                None
            }
            Ok(JournalEntry::Commit(_)) => Some(RecordDefect::Inconsistent(
                "commit record does not match its transaction",
            )),
            Err(defect) => Some(defect),
        };
        if let Some(defect) = defect {
            if let Some(commit_at) = find_commit_after(bytes, pos + 1) {
                return Err(corrupt(
                    pos as u64,
                    format!(
                        "{defect}, and a valid commit record follows at offset {commit_at}, so committed transactions would be lost"
                    ),
                ));
            }
            torn_at = Some((pos as u64, defect.to_string()));
            break;
        }
        pos = end;
    }

    let discarded = (valid_len < bytes.len()).then(|| Discarded {
        offset: valid_len as u64,
        bytes: (bytes.len() - valid_len) as u64,
        uncommitted_records: group.len(),
        torn_at,
    });
    Ok(ScanReport {
        header,
        committed,
        last_committed,
        valid_len: valid_len as u64,
        discarded,
    })
}

/// True when `commit` closes exactly the records in `group`.
fn closes(commit: &CommitRecord, group: &[OpRecord]) -> bool {
    match (group.first(), group.last()) {
        (Some(first), Some(last)) => {
            commit.first == first.transno
                && commit.last == last.transno
                && commit.count as usize == group.len()
        }
        _ => false,
    }
}

/// The offset of the first valid commit record starting at or after `from`, at any byte offset.
fn find_commit_after(bytes: &[u8], from: usize) -> Option<usize> {
    let last_start = bytes.len().checked_sub(RECORD_LEN)?;
    (from..=last_start).find(|&at| {
        bytes[at..at + 4] == RECORD_MAGIC
            && matches!(
                JournalEntry::decode(&bytes[at..at + RECORD_LEN]),
                Ok(JournalEntry::Commit(_))
            )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::ObjectId;
    use crate::journal::record::Operation;

    fn op(transno: u64, object: u64) -> OpRecord {
        OpRecord {
            transno: Transno(transno),
            operation: Operation::Write,
            object: ObjectId(object),
            offset_bytes: 0,
            length_bytes: 10,
            size_after_bytes: 10,
        }
    }

    /// A journal of transactions, each a list of transnos.
    fn journal(transactions: &[&[u64]]) -> Vec<u8> {
        let mut bytes = JournalHeader { target: 0 }.encode();
        for transnos in transactions {
            for &t in *transnos {
                JournalEntry::Op(op(t, 1)).encode(&mut bytes);
            }
            JournalEntry::Commit(CommitRecord {
                first: Transno(transnos[0]),
                last: Transno(transnos[transnos.len() - 1]),
                count: transnos.len() as u32,
            })
            .encode(&mut bytes);
        }
        bytes
    }

    #[test]
    fn an_intact_journal_is_all_committed() {
        let bytes = journal(&[&[1, 2], &[3], &[5, 9]]);
        let report = scan(&bytes, Path::new("j")).unwrap();
        assert_eq!(report.last_committed, Transno(9));
        assert_eq!(
            report
                .committed
                .iter()
                .map(|r| r.transno.0)
                .collect::<Vec<_>>(),
            [1, 2, 3, 5, 9]
        );
        assert_eq!(report.valid_len, bytes.len() as u64);
        assert_eq!(report.discarded, None);
    }

    #[test]
    fn an_empty_journal_has_nothing_committed() {
        let bytes = JournalHeader { target: 5 }.encode();
        let report = scan(&bytes, Path::new("j")).unwrap();
        assert_eq!(report.header.target, 5);
        assert_eq!(report.last_committed, Transno::ZERO);
        assert!(report.committed.is_empty());
    }

    #[test]
    fn records_without_a_commit_record_are_uncommitted() {
        let mut bytes = journal(&[&[1, 2]]);
        let prefix = bytes.len();
        JournalEntry::Op(op(3, 1)).encode(&mut bytes);
        JournalEntry::Op(op(4, 1)).encode(&mut bytes);
        let report = scan(&bytes, Path::new("j")).unwrap();
        assert_eq!(report.last_committed, Transno(2));
        let discarded = report.discarded.unwrap();
        assert_eq!(discarded.offset, prefix as u64);
        assert_eq!(discarded.uncommitted_records, 2);
        assert_eq!(discarded.torn_at, None);
    }

    /// The torn-tail sweep: cut the journal at every offset inside its last record.
    #[test]
    fn a_journal_cut_anywhere_in_its_last_record_keeps_the_valid_prefix() {
        let full = journal(&[&[1, 2], &[3, 4, 5]]);
        let prefix = journal(&[&[1, 2]]);
        let last_record_start = full.len() - RECORD_LEN;
        for cut in last_record_start..full.len() {
            let report = scan(&full[..cut], Path::new("j")).unwrap();
            assert_eq!(report.last_committed, Transno(2), "cut at {cut}");
            assert_eq!(report.valid_len, prefix.len() as u64, "cut at {cut}");
            assert_eq!(report.committed.len(), 2);
            let discarded = report.discarded.unwrap();
            assert_eq!(discarded.uncommitted_records, 3);
            assert_eq!(
                discarded.torn_at.is_some(),
                cut > last_record_start,
                "cut at {cut}"
            );
        }
    }

    #[test]
    fn a_torn_tail_of_garbage_or_zeros_is_cut() {
        for filler in [0u8, 0xff, b'I'] {
            let mut bytes = journal(&[&[1]]);
            let valid = bytes.len();
            bytes.extend(std::iter::repeat_n(filler, 3 * RECORD_LEN + 7));
            let report = scan(&bytes, Path::new("j")).unwrap();
            assert_eq!(report.valid_len, valid as u64);
            assert!(report.discarded.unwrap().torn_at.is_some());
        }
    }

    #[test]
    fn damage_before_a_later_commit_refuses_with_the_offset() {
        let full = journal(&[&[1, 2], &[3, 4]]);
        // Flip one byte in every record position that has a commit after it.
        let second_transaction_commit = full.len() - RECORD_LEN;
        for record_start in (HEADER_LEN..second_transaction_commit).step_by(RECORD_LEN) {
            let mut bytes = full.clone();
            bytes[record_start + 20] ^= 0x40;
            let error = scan(&bytes, Path::new("/ost0/journal")).unwrap_err();
            let message = error.to_string();
            assert!(
                message.starts_with(&format!(
                    "journal /ost0/journal is corrupt at offset {record_start}: checksum mismatch"
                )),
                "{message}"
            );
            assert!(message.contains("refusing to start"), "{message}");
        }
    }

    #[test]
    fn damage_in_an_uncommitted_tail_is_a_torn_tail() {
        let mut bytes = journal(&[&[1]]);
        let valid = bytes.len();
        JournalEntry::Op(op(2, 1)).encode(&mut bytes);
        JournalEntry::Op(op(3, 1)).encode(&mut bytes);
        bytes[valid + 10] ^= 1; // first of the two uncommitted records
        let report = scan(&bytes, Path::new("j")).unwrap();
        assert_eq!(report.valid_len, valid as u64);
        assert_eq!(report.discarded.unwrap().torn_at.unwrap().0, valid as u64);
    }

    #[test]
    fn a_commit_that_disagrees_with_its_records_is_refused_when_more_follows() {
        let mut bytes = JournalHeader { target: 0 }.encode();
        JournalEntry::Op(op(1, 1)).encode(&mut bytes);
        JournalEntry::Commit(CommitRecord {
            first: Transno(1),
            last: Transno(2),
            count: 2,
        })
        .encode(&mut bytes);
        bytes.extend(journal(&[&[3]]).split_off(HEADER_LEN));
        let message = scan(&bytes, Path::new("j")).unwrap_err().to_string();
        assert!(
            message.contains("commit record does not match its transaction"),
            "{message}"
        );
    }

    #[test]
    fn a_bad_header_refuses_at_offset_zero() {
        let mut bytes = journal(&[&[1]]);
        bytes[3] ^= 1;
        let message = scan(&bytes, Path::new("j")).unwrap_err().to_string();
        assert!(message.contains("corrupt at offset 0"), "{message}");
    }
}
