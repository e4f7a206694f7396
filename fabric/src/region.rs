//! Bulk regions: memory a node registers so that peers can pull from it (a *source*, as a
//! client's write buffer) or push into it (a *sink*, as a client's read buffer), named by a
//! [`BufferDescriptor`].
//!
//! A region lives until its handle ([`SourceRegion`], [`SinkRegion`]) is dropped. Ids are
//! never reused, so a late request for a released region finds nothing rather than someone
//! else's memory. Registration is bounded in count and bytes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::{Bytes, BytesMut};

use crate::checksum::{ChecksumKind, Checksummed};
use crate::descriptor::BufferDescriptor;
use crate::error::FabricError;
use crate::frame::status;
use crate::limits::Limits;
use crate::nid::Nid;

/// Checksums a source remembers per region, so a GET of exactly a described range does not
/// compute the same checksum again.
const DESCRIBED_REMEMBERED_MAX: usize = 8;

/// The checksums a source region remembers, by (offset, length, kind): the last few
/// described, and one that came with the data.
#[derive(Debug)]
struct Described(Mutex<VecDeque<(u64, u64, ChecksumKind, u32)>>);

/// Whether a checksum computed on a miss is remembered.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Remember {
    Yes,
    No,
}

impl Described {
    /// The `kind` checksum of `bytes`, found at `offset`: remembered, or computed now (outside
    /// the lock: other GETs of the region do not wait for it).
    fn checksum(&self, offset: u64, kind: ChecksumKind, bytes: &[u8], remember: Remember) -> u32 {
        let key = (offset, bytes.len() as u64, kind);
        let found = self
            .lock()
            .iter()
            .find(|(o, l, k, _)| (*o, *l, *k) == key)
            .map(|&(.., crc)| crc);
        if let Some(crc) = found {
            return crc;
        }
        let crc = kind.compute(bytes);
        if remember == Remember::Yes {
            let mut described = self.lock();
            if described.len() == DESCRIBED_REMEMBERED_MAX {
                described.pop_front();
            }
            described.push_back((key.0, key.1, key.2, crc));
        }
        crc
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, VecDeque<(u64, u64, ChecksumKind, u32)>> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[derive(Debug)]
enum Region {
    Source { data: Bytes, described: Described },
    Sink { data: Mutex<Sink> },
}

/// What peers have pushed into a sink so far.
#[derive(Debug)]
enum Sink {
    /// Nothing yet: `len` bytes that read as zeros.
    Empty { len: usize },
    /// One push that covered the whole region: its bytes, kept as they arrived (no copy, no
    /// zeroed buffer allocated to copy them into).
    Whole(Bytes),
    /// Pushes of parts: copied into one zero-initialised buffer.
    Parts(BytesMut),
}

impl Sink {
    fn len(&self) -> usize {
        match self {
            Sink::Empty { len } => *len,
            Sink::Whole(bytes) => bytes.len(),
            Sink::Parts(bytes) => bytes.len(),
        }
    }

    /// Stores `payload` at `range` (checked against `len()`).
    fn store(&mut self, range: std::ops::Range<usize>, payload: &Bytes) {
        if range.start == 0 && range.end == self.len() && !matches!(self, Sink::Parts(_)) {
            *self = Sink::Whole(payload.clone());
            return;
        }
        let parts = match std::mem::replace(self, Sink::Empty { len: 0 }) {
            Sink::Empty { len } => BytesMut::zeroed(len),
            Sink::Whole(bytes) => BytesMut::from(&bytes[..]),
            Sink::Parts(parts) => parts,
        };
        *self = Sink::Parts(parts);
        if let Sink::Parts(parts) = self {
            parts[range].copy_from_slice(payload);
        }
    }

    fn into_bytes(self) -> Bytes {
        match self {
            Sink::Empty { len } => Bytes::from(vec![0; len]),
            Sink::Whole(bytes) => bytes,
            Sink::Parts(parts) => parts.freeze(),
        }
    }
}

#[derive(Debug, Default)]
struct Table {
    next_id: u64,
    regions: HashMap<u64, Arc<Region>>,
    total_bytes: u64,
}

/// A node's table of registered regions.
#[derive(Debug)]
pub struct Regions {
    owner: Nid,
    regions_max: u32,
    region_max_bytes: u64,
    total_max_bytes: u64,
    table: Mutex<Table>,
}

/// A refusal to serve a bulk access, with the status to send back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Refusal {
    /// A [`status`] code.
    pub status: u32,
    /// Why, for the log.
    pub why: String,
}

impl Regions {
    /// An empty table for the node at `owner`.
    pub fn new(owner: Nid, limits: &Limits) -> Arc<Regions> {
        Arc::new(Regions {
            owner,
            regions_max: limits.regions_max,
            region_max_bytes: limits.region_max_bytes,
            total_max_bytes: limits.regions_total_max_bytes,
            table: Mutex::new(Table {
                next_id: 1,
                ..Table::default()
            }),
        })
    }

    fn insert(&self, region: Region, len: u64) -> Result<u64, FabricError> {
        if len > self.region_max_bytes {
            return Err(FabricError::TooLarge {
                what: "region",
                bytes: len,
                max_bytes: self.region_max_bytes,
            });
        }
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        if table.regions.len() >= self.regions_max as usize {
            return Err(FabricError::LimitReached {
                what: "regions",
                max: u64::from(self.regions_max),
            });
        }
        if table.total_bytes + len > self.total_max_bytes {
            return Err(FabricError::LimitReached {
                what: "bytes in regions",
                max: self.total_max_bytes,
            });
        }
        let id = table.next_id;
        table.next_id += 1;
        table.total_bytes += len;
        table.regions.insert(id, Arc::new(region));
        Ok(id)
    }

    fn remove(&self, id: u64) -> Option<Arc<Region>> {
        let mut table = self.table.lock().unwrap_or_else(PoisonError::into_inner);
        let region = table.regions.remove(&id)?;
        let len = match &*region {
            Region::Source { data, .. } => data.len() as u64,
            Region::Sink { data } => {
                data.lock().unwrap_or_else(PoisonError::into_inner).len() as u64
            }
        };
        table.total_bytes -= len;
        Some(region)
    }

    fn lookup(&self, id: u64) -> Option<Arc<Region>> {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .regions
            .get(&id)
            .cloned()
    }

    /// Registers `data` for peers to pull from. A checksum that comes with it is remembered,
    /// so describing the whole region does not compute it again.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "register_source",
        skip_all
    )]
    pub fn register_source(
        self: &Arc<Self>,
        data: impl Into<Checksummed>,
    ) -> Result<SourceRegion, FabricError> {
        let data = data.into();
        let len = data.len() as u64;
        let described: VecDeque<_> = data
            .known_checksum()
            .map(|(kind, crc)| (0, len, kind, crc))
            .into_iter()
            .collect();
        let data = data.into_data();
        let id = self.insert(
            Region::Source {
                data: data.clone(),
                described: Described(Mutex::new(described)),
            },
            len,
        )?;
        Ok(SourceRegion {
            id,
            data,
            regions: Arc::clone(self),
        })
    }

    /// Registers `len` bytes for peers to push into; what nobody pushes reads as zeros.
    pub fn register_sink(self: &Arc<Self>, len: u64) -> Result<SinkRegion, FabricError> {
        if len > self.region_max_bytes {
            return Err(FabricError::TooLarge {
                what: "region",
                bytes: len,
                max_bytes: self.region_max_bytes,
            });
        }
        let data = Sink::Empty { len: len as usize };
        let id = self.insert(
            Region::Sink {
                data: Mutex::new(data),
            },
            len,
        )?;
        Ok(SinkRegion {
            id,
            len,
            regions: Some(Arc::clone(self)),
        })
    }

    /// Regions registered now.
    pub fn count(&self) -> usize {
        self.table
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .regions
            .len()
    }

    /// Owner side of a GET: the bytes asked for and their checksum.
    pub(crate) fn read(
        &self,
        id: u64,
        offset: u64,
        length: u64,
        kind: ChecksumKind,
    ) -> Result<(Bytes, u32), Refusal> {
        let region = self.lookup(id).ok_or_else(|| Refusal {
            status: status::NO_SUCH_REGION,
            why: format!("no region {id}"),
        })?;
        let Region::Source { data, described } = &*region else {
            return Err(Refusal {
                status: status::WRONG_DIRECTION,
                why: format!("region {id} is a sink; GET needs a source"),
            });
        };
        let range = checked_range(id, offset, length, data.len() as u64)?;
        let bytes = data.slice(range);
        let crc = described.checksum(offset, kind, &bytes, Remember::No);
        Ok((bytes, crc))
    }

    /// Owner side of a bulk PUT chunk: checks its checksum, then stores it in the sink (a
    /// chunk that is the whole region is kept as it is; parts are copied into place).
    pub(crate) fn write(
        &self,
        id: u64,
        offset: u64,
        payload: &Bytes,
        kind: ChecksumKind,
        checksum: u32,
    ) -> Result<(), Refusal> {
        let region = self.lookup(id).ok_or_else(|| Refusal {
            status: status::NO_SUCH_REGION,
            why: format!("no region {id}"),
        })?;
        let Region::Sink { data } = &*region else {
            return Err(Refusal {
                status: status::WRONG_DIRECTION,
                why: format!("region {id} is a source; PUT needs a sink"),
            });
        };
        // Checked right before the bytes land: a corrupted chunk is never written.
        let actual = kind.compute(payload);
        if actual != checksum {
            return Err(Refusal {
                status: status::CHECKSUM_MISMATCH,
                why: format!(
                    "chunk at {offset} of region {id}: sent {checksum:#010x}, arrived {actual:#010x}"
                ),
            });
        }
        let mut data = data.lock().unwrap_or_else(PoisonError::into_inner);
        let range = checked_range(id, offset, payload.len() as u64, data.len() as u64)?;
        data.store(range, payload);
        Ok(())
    }
}

fn checked_range(
    id: u64,
    offset: u64,
    length: u64,
    len: u64,
) -> Result<std::ops::Range<usize>, Refusal> {
    match offset.checked_add(length) {
        Some(end) if end <= len => Ok(offset as usize..end as usize),
        _ => Err(Refusal {
            status: status::OUT_OF_RANGE,
            why: format!("{length} bytes at {offset} outside region {id} of {len} bytes"),
        }),
    }
}

/// A registered source region. Peers can pull from it until it is dropped.
#[derive(Debug)]
pub struct SourceRegion {
    id: u64,
    data: Bytes,
    regions: Arc<Regions>,
}

impl SourceRegion {
    /// The region's id on its owner.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Describes `length` bytes at `offset`, computing their checksum now.
    pub fn describe(
        &self,
        offset: u64,
        length: u64,
        kind: ChecksumKind,
    ) -> Result<BufferDescriptor, FabricError> {
        let range =
            checked_range(self.id, offset, length, self.data.len() as u64).map_err(|r| {
                FabricError::BadBulkAccess {
                    region: self.id,
                    why: r.why,
                }
            })?;
        let bytes = &self.data[range];
        let checksum = match self.regions.lookup(self.id).as_deref() {
            Some(Region::Source { described, .. }) => {
                described.checksum(offset, kind, bytes, Remember::Yes)
            }
            _ => kind.compute(bytes),
        };
        Ok(BufferDescriptor {
            owner: self.regions.owner,
            region: self.id,
            offset,
            length,
            checksum: Some(checksum),
            checksum_kind: kind,
        })
    }

    /// Describes the whole region.
    #[tracing::instrument(
        target = "walkthrough",
        level = "trace",
        name = "describe_all",
        skip_all
    )]
    pub fn describe_all(&self, kind: ChecksumKind) -> BufferDescriptor {
        self.describe(0, self.data.len() as u64, kind)
            .expect("the whole region is in range")
    }
}

impl Drop for SourceRegion {
    fn drop(&mut self) {
        self.regions.remove(self.id);
    }
}

/// A registered sink region. Peers can push into it until it is taken or dropped.
#[derive(Debug)]
pub struct SinkRegion {
    id: u64,
    len: u64,
    regions: Option<Arc<Regions>>,
}

impl SinkRegion {
    /// The region's id on its owner.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Describes `length` bytes at `offset` for a peer to fill (no checksum: the filler
    /// reports the checksum of what it wrote).
    pub fn describe(
        &self,
        offset: u64,
        length: u64,
        kind: ChecksumKind,
    ) -> Result<BufferDescriptor, FabricError> {
        checked_range(self.id, offset, length, self.len).map_err(|r| {
            FabricError::BadBulkAccess {
                region: self.id,
                why: r.why,
            }
        })?;
        let owner = self
            .regions
            .as_ref()
            .map(|r| r.owner)
            .expect("a live sink has its table");
        Ok(BufferDescriptor {
            owner,
            region: self.id,
            offset,
            length,
            checksum: None,
            checksum_kind: kind,
        })
    }

    /// Unregisters the region and returns what peers wrote into it.
    pub fn into_bytes(mut self) -> Bytes {
        let regions = self.regions.take().expect("a live sink has its table");
        match regions.remove(self.id).as_deref() {
            Some(Region::Sink { data }) => {
                let mut data = data.lock().unwrap_or_else(PoisonError::into_inner);
                std::mem::replace(&mut *data, Sink::Empty { len: 0 }).into_bytes()
            }
            _ => unreachable!("a sink handle always names a registered sink"),
        }
    }
}

impl Drop for SinkRegion {
    fn drop(&mut self) {
        if let Some(regions) = self.regions.take() {
            regions.remove(self.id);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_sink_keeps_a_whole_push_copies_parts_and_reads_zeros_elsewhere() {
        let untouched = Sink::Empty { len: 4 };
        assert_eq!(untouched.into_bytes(), Bytes::from_static(&[0; 4]));

        let whole = Bytes::from_static(b"abcdef");
        let mut sink = Sink::Empty { len: 6 };
        sink.store(0..6, &whole);
        let kept = sink.into_bytes();
        assert_eq!(
            kept.as_ptr(),
            whole.as_ptr(),
            "the pushed bytes themselves, not a copy"
        );

        let mut sink = Sink::Empty { len: 6 };
        sink.store(2..4, &Bytes::from_static(b"xy"));
        assert_eq!(sink.into_bytes(), Bytes::from_static(b"\0\0xy\0\0"));

        // A part resent after a whole push lands on a copy of it.
        let mut sink = Sink::Empty { len: 6 };
        sink.store(0..6, &whole);
        sink.store(0..2, &Bytes::from_static(b"AB"));
        sink.store(0..6, &Bytes::from_static(b"ghijkl"));
        assert_eq!(sink.into_bytes(), Bytes::from_static(b"ghijkl"));
    }
}
