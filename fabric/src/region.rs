//! Bulk regions: memory a node registers so that peers can pull from it (a *source*, as a
//! client's write buffer) or push into it (a *sink*, as a client's read buffer), named by a
//! [`BufferDescriptor`].
//!
//! A region lives until its handle ([`SourceRegion`], [`SinkRegion`]) is dropped. Ids are
//! never reused, so a late request for a released region finds nothing rather than someone
//! else's memory. Registration is bounded in count and bytes.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

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

#[derive(Debug)]
enum Region {
    Source {
        data: Bytes,
        described: Mutex<VecDeque<(u64, u64, ChecksumKind, u32)>>,
    },
    Sink {
        data: Mutex<BytesMut>,
    },
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
        let mut table = self.table.lock().expect("region table lock poisoned");
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
        let mut table = self.table.lock().expect("region table lock poisoned");
        let region = table.regions.remove(&id)?;
        let len = match &*region {
            Region::Source { data, .. } => data.len() as u64,
            Region::Sink { data } => data.lock().expect("sink lock poisoned").len() as u64,
        };
        table.total_bytes -= len;
        Some(region)
    }

    fn lookup(&self, id: u64) -> Option<Arc<Region>> {
        self.table
            .lock()
            .expect("region table lock poisoned")
            .regions
            .get(&id)
            .cloned()
    }

    /// Registers `data` for peers to pull from. A checksum that comes with it is remembered,
    /// so describing the whole region does not compute it again.
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
                described: Mutex::new(described),
            },
            len,
        )?;
        Ok(SourceRegion {
            id,
            data,
            regions: Arc::clone(self),
        })
    }

    /// Registers `len` zeroed bytes for peers to push into.
    pub fn register_sink(self: &Arc<Self>, len: u64) -> Result<SinkRegion, FabricError> {
        if len > self.region_max_bytes {
            return Err(FabricError::TooLarge {
                what: "region",
                bytes: len,
                max_bytes: self.region_max_bytes,
            });
        }
        let data = BytesMut::zeroed(len as usize);
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
            .expect("region table lock poisoned")
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
        let remembered = described
            .lock()
            .expect("described lock poisoned")
            .iter()
            .find(|(o, l, k, _)| (*o, *l, *k) == (offset, length, kind))
            .map(|(.., crc)| *crc);
        let crc = remembered.unwrap_or_else(|| kind.compute(&bytes));
        Ok((bytes, crc))
    }

    /// Owner side of a bulk PUT chunk: checks its checksum, then copies it into the sink.
    pub(crate) fn write(
        &self,
        id: u64,
        offset: u64,
        payload: &[u8],
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
        let mut data = data.lock().expect("sink lock poisoned");
        let range = checked_range(id, offset, payload.len() as u64, data.len() as u64)?;
        data[range].copy_from_slice(payload);
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
        let region = self.regions.lookup(self.id);
        let described = match region.as_deref() {
            Some(Region::Source { described, .. }) => Some(described),
            _ => None,
        };
        let remembered = described.and_then(|d| {
            let d = d.lock().expect("described lock poisoned");
            d.iter()
                .find(|(o, l, k, _)| (*o, *l, *k) == (offset, length, kind))
                .map(|(.., crc)| *crc)
        });
        let checksum = match remembered {
            Some(crc) => crc,
            None => {
                let crc = kind.compute(&self.data[range]);
                if let Some(described) = described {
                    let mut described = described.lock().expect("described lock poisoned");
                    if described.len() == DESCRIBED_REMEMBERED_MAX {
                        described.pop_front();
                    }
                    described.push_back((offset, length, kind, crc));
                }
                crc
            }
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
                std::mem::take(&mut *data.lock().expect("sink lock poisoned")).freeze()
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
