//! Bulk transfers by descriptor: **GET** pulls the bytes a descriptor names from its owner (a
//! server serving a write), **PUT** pushes bytes into the region a descriptor names (a server
//! serving a read).
//!
//! Both move the data in chunks of at most `bulk_chunk_bytes`, with at most
//! `bulk_window_chunks` in flight, so no message is unbounded and a pull never holds more
//! than its window in unverified data. Every chunk carries its sender's checksum and is checked
//! on arrival; a chunk that fails is asked for (or sent) again, up to `checksum_resends_max`
//! times, then the transfer fails — the bytes are never handed on. A GET also checks the whole
//! against the descriptor's checksum, combining the chunk checksums rather than reading the
//! data again.
//!
//! A GET of one chunk hands on the very `Bytes` that arrived. A GET of several lands in one
//! page-aligned buffer from the node's pools (a [`Landing`]): each REPLY's payload is received
//! straight into its chunk's place by the LND, checked there, and the buffer is handed on
//! whole, with nothing to assemble — so a storage server writes it with O_DIRECT as it is.

use std::sync::atomic::Ordering;
use std::time::Duration;

use bytes::Bytes;
use tracing::warn;

use crate::descriptor::BufferDescriptor;
use crate::error::FabricError;
use crate::frame::{BULK_PORTAL, Kind, Message, status};
use crate::landing::{Landing, Lender, Place};
use crate::node::{Arrival, Node, NodeInner, flags_of, kind_of};
use crate::trace::Step;

/// How long to wait before asking again a peer that answered BUSY.
const BUSY_BACKOFF: Duration = Duration::from_millis(5);

/// Per-chunk bookkeeping of one transfer.
struct Chunks {
    /// Chunk size.
    chunk_bytes: u64,
    /// Bytes in the transfer.
    length: u64,
    /// The checksum of each chunk that arrived and was verified.
    arrived: Vec<Option<u32>>,
    /// Times each chunk was resent after a checksum mismatch.
    mismatches: Vec<u32>,
    /// Times each chunk was resent after a timeout or BUSY.
    retries: Vec<u32>,
    /// Chunks sent so far (the next to send is this index).
    sent: usize,
    /// Chunks verified.
    done: usize,
}

impl Chunks {
    fn new(length: u64, chunk_bytes: u64) -> Chunks {
        let count = length.div_ceil(chunk_bytes) as usize;
        Chunks {
            chunk_bytes,
            length,
            arrived: vec![None; count],
            mismatches: vec![0; count],
            retries: vec![0; count],
            sent: 0,
            done: 0,
        }
    }

    fn count(&self) -> usize {
        self.arrived.len()
    }

    /// Offset (within the transfer) and length of chunk `index`.
    fn extent(&self, index: usize) -> (u64, u64) {
        let offset = index as u64 * self.chunk_bytes;
        (offset, self.chunk_bytes.min(self.length - offset))
    }

    /// Which chunk a frame at region offset `offset` belongs to, if any.
    fn index_of(&self, base: u64, offset: u64) -> Option<usize> {
        let relative = offset.checked_sub(base)?;
        let index = (relative / self.chunk_bytes) as usize;
        (relative % self.chunk_bytes == 0 && index < self.sent).then_some(index)
    }

    fn outstanding(&self) -> impl Iterator<Item = usize> + '_ {
        (0..self.sent).filter(|&i| self.arrived[i].is_none())
    }

    fn in_flight(&self) -> usize {
        self.sent - self.done
    }
}

impl Node {
    /// Pulls the bytes `desc` names from their owner, verified against every chunk's checksum
    /// and against the descriptor's.
    pub async fn bulk_get(&self, desc: &BufferDescriptor) -> Result<Bytes, FabricError> {
        self.bulk_get_checked(desc).await.map(|(data, _)| data)
    }

    /// [`Node::bulk_get`], also returning the checksum of the bytes pulled — combined from the
    /// verified chunks', so a caller that needs it (a descriptor cut without one) does not
    /// read the data again.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "bulk_get_checked",
        skip_all
    )]
    pub async fn bulk_get_checked(
        &self,
        desc: &BufferDescriptor,
    ) -> Result<(Bytes, u32), FabricError> {
        let inner = &self.inner;
        let limits = &inner.limits;
        check_descriptor(desc, limits)?;
        let kind = desc.checksum_kind;
        let chunk_bytes =
            u64::from(limits.bulk_chunk_bytes.min(limits.frame_payload_max_bytes)).max(1);
        let window = limits.bulk_window_chunks.max(1) as usize;
        let mut whole_attempts = 0;
        loop {
            let mut chunks = Chunks::new(desc.length, chunk_bytes);
            let mut gathered = Gathered::new(inner, desc, &chunks);
            // A mailbox per attempt: a late REPLY to an earlier attempt finds nothing.
            let mut transfer = inner.open_transfer(window * 2, gathered.lender());
            while chunks.done < chunks.count() {
                while chunks.sent < chunks.count() && chunks.in_flight() < window {
                    request_chunk(inner, desc, &chunks, chunks.sent, transfer.cookie).await?;
                    chunks.sent += 1;
                }
                let Arrival {
                    message: reply,
                    place,
                } = match tokio::time::timeout(limits.bulk_timeout, transfer.rx.recv()).await {
                    Ok(Some(arrival)) => arrival,
                    Ok(None) => return Err(FabricError::ShuttingDown),
                    Err(_) => {
                        // Nothing for a whole timeout: ask again for everything outstanding.
                        for index in chunks.outstanding().collect::<Vec<_>>() {
                            retry(inner, desc, &mut chunks, index, "bulk GET REPLY")?;
                            request_chunk(inner, desc, &chunks, index, transfer.cookie).await?;
                        }
                        continue;
                    }
                };
                let header = &reply.header;
                let Some(index) = chunks.index_of(desc.offset, header.offset) else {
                    continue;
                };
                if chunks.arrived[index].is_some() {
                    continue; // a duplicate after a resend
                }
                match header.status {
                    status::OK => {}
                    status::BUSY => {
                        retry(inner, desc, &mut chunks, index, "GET (busy)")?;
                        tokio::time::sleep(BUSY_BACKOFF).await;
                        request_chunk(inner, desc, &chunks, index, transfer.cookie).await?;
                        continue;
                    }
                    code => return Err(refusal_error(desc, code)),
                }
                // The chunk's bytes: in its place in the landing, or in the message.
                let (arrived_len, actual) = {
                    let bytes = place.as_ref().map_or(&reply.payload[..], |p| p.as_slice());
                    (bytes.len() as u64, kind.compute(bytes))
                };
                // Checked on arrival, before anything keeps it: a chunk that does not match
                // is asked for again (its place, dropped here, opens for the next answer).
                if arrived_len != chunks.extent(index).1
                    || kind_of(header.flags) != kind
                    || actual != header.checksum
                {
                    drop(place);
                    mismatch(inner, desc, &mut chunks, index, header.checksum, actual)?;
                    request_chunk(inner, desc, &chunks, index, transfer.cookie).await?;
                    continue;
                }
                if !gathered.keep(inner, index, reply.payload, place) {
                    continue; // received into place by another answer, still on its way
                }
                chunks.arrived[index] = Some(actual);
                chunks.done += 1;
            }
            // The whole transfer against the descriptor, from the chunk checksums alone.
            let mut whole = kind.empty();
            for (index, crc) in chunks.arrived.iter().enumerate() {
                let crc = crc.expect("every chunk arrived");
                whole = kind.combine(whole, crc, chunks.extent(index).1);
            }
            if desc.checksum.is_none_or(|expected| expected == whole) {
                inner
                    .counters
                    .bulk_get_bytes
                    .fetch_add(desc.length, Ordering::Relaxed);
                inner.trace.record_current(|| {
                    let against = match desc.checksum {
                        Some(_) => "matches the descriptor's",
                        None => "(the descriptor carried none to check against)",
                    };
                    Step::new(
                        "bulk",
                        "verify",
                        format!(
                            "pulled {} B of region {} from {} in {} chunks, every chunk's {kind:?} checked; whole {whole:#010x} {against}",
                            desc.length,
                            desc.region,
                            desc.owner,
                            chunks.count()
                        ),
                    )
                });
                return Ok((gathered.into_bytes(), whole));
            }
            let expected = desc.checksum.unwrap_or_default();
            whole_attempts += 1;
            inner
                .counters
                .checksum_mismatches
                .fetch_add(1, Ordering::Relaxed);
            warn!(owner = %desc.owner, region = desc.region, "bulk GET: whole checksum {whole:#010x}, descriptor says {expected:#010x}");
            if whole_attempts > limits.checksum_resends_max {
                return Err(FabricError::ChecksumMismatch {
                    peer: desc.owner,
                    region: desc.region,
                    expected,
                    actual: whole,
                    attempts: whole_attempts,
                });
            }
            inner.counters.bulk_resends.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Pushes `data` into the region `desc` names; returns the checksum of what was sent.
    pub async fn bulk_put(&self, desc: &BufferDescriptor, data: Bytes) -> Result<u32, FabricError> {
        let inner = &self.inner;
        let limits = &inner.limits;
        check_descriptor(desc, limits)?;
        if data.len() as u64 != desc.length {
            return Err(FabricError::BadBulkAccess {
                region: desc.region,
                why: format!(
                    "{} bytes to push into a descriptor of {}",
                    data.len(),
                    desc.length
                ),
            });
        }
        let kind = desc.checksum_kind;
        let chunk_bytes =
            u64::from(limits.bulk_chunk_bytes.min(limits.frame_payload_max_bytes)).max(1);
        let window = limits.bulk_window_chunks.max(1) as usize;
        let mut transfer = inner.open_transfer(window * 2, None);
        let mut chunks = Chunks::new(desc.length, chunk_bytes);
        // Each chunk's checksum once; resends reuse it.
        let crcs: Vec<u32> = (0..chunks.count())
            .map(|i| {
                let (offset, len) = chunks.extent(i);
                kind.compute(&data[offset as usize..(offset + len) as usize])
            })
            .collect();
        let push = |chunks: &Chunks, index: usize| {
            let (offset, len) = chunks.extent(index);
            let payload = data.slice(offset as usize..(offset + len) as usize);
            push_chunk(inner, desc, offset, payload, crcs[index], transfer.cookie)
        };
        while chunks.done < chunks.count() {
            while chunks.sent < chunks.count() && chunks.in_flight() < window {
                push(&chunks, chunks.sent).await?;
                chunks.sent += 1;
            }
            let ack = match tokio::time::timeout(limits.bulk_timeout, transfer.rx.recv()).await {
                Ok(Some(arrival)) => arrival.message,
                Ok(None) => return Err(FabricError::ShuttingDown),
                Err(_) => {
                    for index in chunks.outstanding().collect::<Vec<_>>() {
                        retry(inner, desc, &mut chunks, index, "bulk PUT ACK")?;
                        push(&chunks, index).await?;
                    }
                    continue;
                }
            };
            let Some(index) = chunks.index_of(desc.offset, ack.header.offset) else {
                continue;
            };
            if chunks.arrived[index].is_some() {
                continue;
            }
            match ack.header.status {
                status::OK => {
                    chunks.arrived[index] = Some(crcs[index]);
                    chunks.done += 1;
                }
                status::CHECKSUM_MISMATCH => {
                    mismatch(inner, desc, &mut chunks, index, crcs[index], 0)?;
                    push(&chunks, index).await?;
                }
                status::BUSY => {
                    retry(inner, desc, &mut chunks, index, "bulk PUT (busy)")?;
                    tokio::time::sleep(BUSY_BACKOFF).await;
                    push(&chunks, index).await?;
                }
                code => return Err(refusal_error(desc, code)),
            }
        }
        let mut whole = kind.empty();
        for (index, crc) in crcs.iter().enumerate() {
            whole = kind.combine(whole, *crc, chunks.extent(index).1);
        }
        inner
            .counters
            .bulk_put_bytes
            .fetch_add(desc.length, Ordering::Relaxed);
        inner.trace.record_current(|| {
            Step::new(
                "bulk",
                "verify",
                format!(
                    "pushed {} B into region {} of {} in {} chunks, each acknowledged; whole {kind:?} {whole:#010x}",
                    desc.length,
                    desc.region,
                    desc.owner,
                    chunks.count()
                ),
            )
        });
        Ok(whole)
    }
}

fn check_descriptor(
    desc: &BufferDescriptor,
    limits: &crate::limits::Limits,
) -> Result<(), FabricError> {
    if desc.length > limits.bulk_max_bytes {
        return Err(FabricError::TooLarge {
            what: "bulk transfer",
            bytes: desc.length,
            max_bytes: limits.bulk_max_bytes,
        });
    }
    if !limits.checksums_accepted.contains(&desc.checksum_kind) {
        return Err(FabricError::ChecksumRefused {
            kind: desc.checksum_kind,
        });
    }
    Ok(())
}

/// Sends the GET for chunk `index`.
async fn request_chunk(
    inner: &NodeInner,
    desc: &BufferDescriptor,
    chunks: &Chunks,
    index: usize,
    cookie: u64,
) -> Result<(), FabricError> {
    let (offset, len) = chunks.extent(index);
    let mut header = inner.header(Kind::Get, desc.owner);
    header.portal = BULK_PORTAL;
    header.match_bits = desc.region;
    header.cookie = cookie;
    header.offset = desc.offset + offset;
    header.length = len as u32;
    header.flags = flags_of(desc.checksum_kind);
    let mut message = Message::new(header, Bytes::new());
    message.header.length = len as u32;
    inner.send(message, None).await
}

/// Sends one chunk of a PUT.
async fn push_chunk(
    inner: &NodeInner,
    desc: &BufferDescriptor,
    offset: u64,
    payload: Bytes,
    crc: u32,
    cookie: u64,
) -> Result<(), FabricError> {
    let mut header = inner.header(Kind::Put, desc.owner);
    header.portal = BULK_PORTAL;
    header.match_bits = desc.region;
    header.cookie = cookie;
    header.offset = desc.offset + offset;
    header.checksum = crc;
    header.flags = flags_of(desc.checksum_kind);
    inner.send(Message::new(header, payload), None).await
}

/// Counts a checksum mismatch on chunk `index`; fails once the resends are used up.
fn mismatch(
    inner: &NodeInner,
    desc: &BufferDescriptor,
    chunks: &mut Chunks,
    index: usize,
    expected: u32,
    actual: u32,
) -> Result<(), FabricError> {
    inner
        .counters
        .checksum_mismatches
        .fetch_add(1, Ordering::Relaxed);
    chunks.mismatches[index] += 1;
    warn!(owner = %desc.owner, region = desc.region, chunk = index, attempt = chunks.mismatches[index], "bulk checksum mismatch: sent {expected:#010x}, arrived {actual:#010x}");
    if chunks.mismatches[index] > inner.limits.checksum_resends_max {
        return Err(FabricError::ChecksumMismatch {
            peer: desc.owner,
            region: desc.region,
            expected,
            actual,
            attempts: chunks.mismatches[index],
        });
    }
    inner.counters.bulk_resends.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Counts a resend of chunk `index` after a timeout or BUSY; fails once they are used up.
fn retry(
    inner: &NodeInner,
    desc: &BufferDescriptor,
    chunks: &mut Chunks,
    index: usize,
    what: &'static str,
) -> Result<(), FabricError> {
    chunks.retries[index] += 1;
    if chunks.retries[index] > inner.limits.rpc_resends_max {
        return Err(FabricError::Timeout {
            what,
            peer: desc.owner,
            attempts: chunks.retries[index],
        });
    }
    inner.counters.bulk_resends.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

fn refusal_error(desc: &BufferDescriptor, code: u32) -> FabricError {
    match code {
        status::NO_SUCH_REGION => FabricError::NoSuchRegion {
            owner: desc.owner,
            region: desc.region,
        },
        status::OUT_OF_RANGE => FabricError::BadBulkAccess {
            region: desc.region,
            why: format!(
                "{} bytes at offset {} are outside the region on {}",
                desc.length, desc.offset, desc.owner
            ),
        },
        status::WRONG_DIRECTION => FabricError::BadBulkAccess {
            region: desc.region,
            why: format!(
                "wrong direction: {} refused (a GET needs a source, a PUT a sink)",
                desc.owner
            ),
        },
        code => FabricError::Remote {
            peer: desc.owner,
            code,
            message: "bulk access refused".into(),
        },
    }
}

/// Where a pull's verified chunks go.
enum Gathered {
    /// A pull of at most one chunk: kept as the very `Bytes` that arrived, without a copy
    /// (over TCP a large one already sits in an aligned buffer of the receive pool).
    One(Option<Bytes>),
    /// A pull of several: the one aligned buffer they are received into.
    Landed(Landing),
}

impl Gathered {
    /// For a pull of `chunks`: a landing from the node's pools when there is more than one.
    fn new(inner: &NodeInner, desc: &BufferDescriptor, chunks: &Chunks) -> Gathered {
        if chunks.count() <= 1 {
            return Gathered::One(None);
        }
        let buffer = inner.landing_pools.take(desc.length as usize);
        Gathered::Landed(Landing::new(
            buffer,
            chunks.chunk_bytes as usize,
            desc.offset,
        ))
    }

    /// What the node lends places from, for a pull that lands in one buffer.
    fn lender(&self) -> Option<Lender> {
        match self {
            Gathered::One(_) => None,
            Gathered::Landed(landing) => Some(landing.lender()),
        }
    }

    /// Keeps verified chunk `index`: the place it was received into, or its own `payload`
    /// (copied into the landing for a pull of several chunks, and counted). False when the
    /// chunk's place is lent to another answer still on its way — that one will bring it.
    fn keep(
        &mut self,
        inner: &NodeInner,
        index: usize,
        payload: Bytes,
        place: Option<Place>,
    ) -> bool {
        match (self, place) {
            (Gathered::Landed(landing), Some(place)) => {
                assert_eq!(place.index(), index, "a REPLY's place is its chunk's");
                landing.keep(place);
                true
            }
            (Gathered::Landed(landing), None) => {
                let copied = landing.copy_in(index, &payload);
                if copied {
                    inner
                        .counters
                        .bulk_copied_bytes
                        .fetch_add(payload.len() as u64, Ordering::Relaxed);
                }
                copied
            }
            (Gathered::One(kept), None) => {
                *kept = Some(payload);
                true
            }
            (Gathered::One(_), Some(_)) => unreachable!("a one-chunk pull lends no places"),
        }
    }

    /// The whole transfer, every chunk kept.
    fn into_bytes(self) -> Bytes {
        match self {
            Gathered::One(kept) => kept.unwrap_or_default(),
            Gathered::Landed(landing) => landing.into_bytes(),
        }
    }
}
