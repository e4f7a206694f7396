//! The PFS path: the fyod splits each call by the file's layout and sends each storage server
//! a request naming a **sub-descriptor of the compute node's buffer**. The servers pull (write)
//! or push (read) straight from or into the compute node; the fyod never holds the data
//! (paper §2.4: "the I/O nodes transfer the data directly from user memory on the compute
//! node to the RAID hardware, bypassing the service node").
//!
//! One write, end to end:
//!
//! ```text
//! client: WRITE(handle, off, desc{17@mem0, r42, crc}) ─▶ fyod
//! fyod:   split by layout ─▶ OST WRITE(obj0, sub-desc 0) ─▶ OSS A pulls its bytes from 17@mem0
//!                        ─▶ OST WRITE(obj1, sub-desc 1) ─▶ OSS B pulls its bytes from 17@mem0
//!         each reply: transno, last_committed, checksum of what was pulled
//!         combine the pieces' checksums in buffer order == the client's crc? else EBADMSG
//! reply:  bytes, stamps [(target, transno)], committed — the client keeps region r42
//!         registered until every stamp is committed (a restarted OSS pulls it again in replay)
//! ```
//!
//! **Replay.** The fyod's descriptor link to each storage server
//! ([`OstClient::write_by_descriptor`](iopath_ost_client::OstClient::write_by_descriptor))
//! keeps each uncommitted piece as its descriptor and replays it after a storage server
//! restart; the server pulls from the compute node again. So in PFS mode the client's buffer
//! must stay registered until commit — the fyod reports each target's `last_committed` in every
//! reply and the client releases its regions by it ([`crate::policy::pins`]).

use std::sync::Arc;

use iopath_fabric::trace::{self, Step};
use iopath_fabric::{BufferDescriptor, ChecksumKind};
use iopath_ost_client::DescriptorReply;
use iopath_proto::fyod as pb;
use tokio::task::JoinSet;

use super::backend::{Backend, Direction};
use super::files::OpenFile;
use crate::error::{ForwarderError, Result};
use iopath_layout::visible_len;

use crate::policy::pfs::{PACKET_BYTES_MAX, Piece, split};

/// Sends every piece, at most `in_flight_max` at once; the replies in piece order.
async fn each_piece(
    backend: &Arc<Backend>,
    pieces: &[Piece],
    in_flight_max: usize,
    direction: Direction,
) -> Result<Vec<DescriptorReply>> {
    let mut replies: Vec<Option<DescriptorReply>> = vec![None; pieces.len()];
    let mut tasks = JoinSet::new();
    let mut next = 0;
    // Each turn reaps one piece: bounded by the number of pieces.
    while next < pieces.len() || !tasks.is_empty() {
        while next < pieces.len() && tasks.len() < in_flight_max.max(1) {
            let backend = Arc::clone(backend);
            let piece = pieces[next];
            let index = next;
            tasks.spawn(trace::inherit(async move {
                let reply = backend
                    .by_descriptor(
                        direction,
                        piece.object,
                        piece.object_offset_bytes,
                        piece.buffer,
                    )
                    .await;
                (index, reply)
            }));
            next += 1;
        }
        let Some(joined) = tasks.join_next().await else {
            break;
        };
        let (index, reply) = match joined {
            Ok(done) => done,
            // Tasks are never aborted; a panic in one is a bug, passed on as it is.
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        };
        // The first failure ends the call; dropping the set abandons the other pieces.
        replies[index] = Some(reply?);
    }
    Ok(replies
        .into_iter()
        .map(|r| r.expect("every piece was sent and reaped"))
        .collect())
}

/// Records how a traced call was split: each piece's target and the slice of the compute
/// node's buffer its storage server moves itself.
fn trace_split(backend: &Backend, what: &str, buffer: &BufferDescriptor, pieces: &[Piece]) {
    backend.node().trace_log().record_current(|| {
        let each: Vec<String> = pieces
            .iter()
            .map(|p| {
                format!(
                    "target {} object {} at {} ← buffer [{}, +{})",
                    p.object.target,
                    p.object.object_id,
                    p.object_offset_bytes,
                    p.buffer_offset_bytes,
                    p.buffer.length
                )
            })
            .collect();
        let direction = if what == "write" {
            "pulls from"
        } else {
            "pushes into"
        };
        Step::new(
            "fyod",
            "split",
            format!(
                "PFS {what} of {} B split by the layout into {} pieces, each a sub-descriptor: \
                 its storage server {direction} {} itself, the fyod never holds the bytes: {}",
                buffer.length,
                pieces.len(),
                buffer.owner,
                each.join("; ")
            ),
        )
    });
}

/// A write: the storage servers pull the client's buffer piece by piece.
pub(crate) async fn write(
    backend: &Arc<Backend>,
    file: &OpenFile,
    offset: u64,
    buffer: BufferDescriptor,
    in_flight_max: usize,
) -> Result<pb::CallReply> {
    let pieces = split(&file.layout, offset, &buffer, PACKET_BYTES_MAX)?;
    trace_split(backend, "write", &buffer, &pieces);
    let replies = each_piece(backend, &pieces, in_flight_max, Direction::Write).await?;
    // What the servers received, combined in buffer order, must be what the client described.
    let kind = buffer.checksum_kind;
    let mut checksum = kind.empty();
    for (piece, reply) in pieces.iter().zip(&replies) {
        checksum = kind.combine(checksum, reply.checksum, piece.buffer.length);
    }
    if let Some(expected) = buffer.checksum
        && expected != checksum
    {
        return Err(ForwarderError::ChecksumMismatch {
            what: "PFS write (the bytes the storage servers pulled)",
            expected,
            actual: checksum,
        });
    }
    let stamps = pieces
        .iter()
        .zip(&replies)
        .map(|(piece, reply)| pb::Stamp {
            target: piece.object.target,
            transno: reply.transno,
        })
        .collect();
    Ok(pb::CallReply {
        bytes: buffer.length,
        checksum,
        stamps,
        ..pb::CallReply::default()
    })
}

/// A read: the storage servers push into the client's sink piece by piece. Holes stay zero
/// (the sink starts zeroed); the reply says how many bytes are inside the file.
pub(crate) async fn read(
    backend: &Arc<Backend>,
    file: &OpenFile,
    offset: u64,
    buffer: BufferDescriptor,
    in_flight_max: usize,
) -> Result<pb::CallReply> {
    let pieces = split(&file.layout, offset, &buffer, PACKET_BYTES_MAX)?;
    trace_split(backend, "read", &buffer, &pieces);
    let replies = each_piece(backend, &pieces, in_flight_max, Direction::Read).await?;
    let whole = pieces
        .iter()
        .zip(&replies)
        .all(|(piece, reply)| reply.bytes == piece.buffer.length);
    let mut visible = if whole {
        buffer.length
    } else {
        // A short piece is a hole or the end of the file: only the size tells which.
        visible_len(offset, buffer.length, size(backend, file).await?)
    };
    // Bytes a server returned are inside the file, whatever a racing truncate says.
    for (piece, reply) in pieces.iter().zip(&replies) {
        if reply.bytes > 0 {
            visible = visible.max(piece.buffer_offset_bytes + reply.bytes);
        }
    }
    let kind = buffer.checksum_kind;
    let mut checksum = kind.empty();
    for (piece, reply) in pieces.iter().zip(&replies) {
        if piece.buffer_offset_bytes >= visible {
            break;
        }
        let inside = (visible - piece.buffer_offset_bytes).min(piece.buffer.length);
        checksum = kind.combine(checksum, reply.checksum, reply.bytes);
        checksum = combine_zeros(kind, checksum, inside - reply.bytes);
    }
    Ok(pb::CallReply {
        bytes: visible,
        checksum,
        ..pb::CallReply::default()
    })
}

/// The file's size, glimpsed from its objects' sizes (asked of all at once).
pub(crate) async fn size(backend: &Backend, file: &OpenFile) -> Result<u64> {
    let sizes = backend.object_sizes(file.layout.objects()).await?;
    Ok(file.layout.file_size_bytes(&sizes)?)
}

/// Cuts or extends the file to `size_bytes`: each object to its share of a file written
/// densely up to there, all at once.
pub(crate) async fn truncate(backend: &Backend, file: &OpenFile, size_bytes: u64) -> Result<()> {
    let mut objects = Vec::with_capacity(file.layout.objects().len());
    for (index, object) in file.layout.objects().iter().enumerate() {
        objects.push((
            *object,
            file.layout.object_size_bytes(index as u32, size_bytes)?,
        ));
    }
    backend.punch_objects(objects).await
}

/// Commits every target the file has an object on, all at once; fails if writes to one of
/// its objects were found lost meanwhile.
pub(crate) async fn fsync(backend: &Backend, file: &OpenFile) -> Result<()> {
    let targets = file.layout.objects().iter().map(|o| o.target);
    backend.sync_targets(targets).await?;
    backend.check_lost(file, file.layout.objects())
}

/// `crc` extended by `count` zero bytes (the holes a read returns).
fn combine_zeros(kind: ChecksumKind, mut crc: u32, mut count: u64) -> u32 {
    const BLOCK: usize = 64 * 1024;
    static ZEROS: [u8; BLOCK] = [0; BLOCK];
    let full = kind.compute(&ZEROS);
    // Bounded by count / 64 KiB, itself bounded by the largest request.
    while count > 0 {
        let step = count.min(BLOCK as u64);
        let piece = if step == BLOCK as u64 {
            full
        } else {
            kind.compute(&ZEROS[..step as usize])
        };
        crc = kind.combine(crc, piece, step);
        count -= step;
    }
    crc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_combine_like_computed_zeros() {
        for kind in [ChecksumKind::Crc32, ChecksumKind::Crc32c] {
            let head = b"iopath";
            for count in [0u64, 1, 1000, 65_536, 65_537, 200_000] {
                let mut bytes = head.to_vec();
                bytes.resize(head.len() + count as usize, 0);
                assert_eq!(
                    combine_zeros(kind, kind.compute(head), count),
                    kind.compute(&bytes),
                    "{kind} with {count} zeros"
                );
            }
        }
    }
}
