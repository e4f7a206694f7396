//! The selftest service every selftest server runs: `ping` and `brw`.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use bytes::Bytes;
use iopath_fabric::BufferDescriptor;
use iopath_fabric::frame::status::errno;
use iopath_fabric::rpc::{Reply, Request, Service, ServiceError};
use iopath_proto::selftest::{BrwReply, BrwRequest, PingReply, PingRequest};
use prost::Message as _;

/// The portal selftest requests go to.
pub const SELFTEST_PORTAL: u32 = 40;
/// `ping`: an empty round trip.
pub const OP_PING: u32 = 1;
/// `brw`: bulk read or write by descriptor.
pub const OP_BRW: u32 = 2;
/// `brw` mode: the server pulls the client's buffer.
pub const BRW_WRITE: u32 = 0;
/// `brw` mode: the server pushes into the client's buffer.
pub const BRW_READ: u32 = 1;

/// Fill buffers kept for reads, by (size, byte); few sizes are ever used in one run.
const FILL_BUFFERS_MAX: usize = 4;

/// Serves `ping` and `brw`, counting what it did.
#[derive(Debug, Default)]
pub struct SelftestService {
    fills: Mutex<HashMap<(u64, u8), Bytes>>,
    /// Pings answered.
    pub pings: AtomicU64,
    /// Bulk bytes moved by `brw`.
    pub brw_bytes: AtomicU64,
}

impl SelftestService {
    fn fill(&self, length: u64, byte: u8) -> Bytes {
        let mut fills = self.fills.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some(buffer) = fills.get(&(length, byte)) {
            return buffer.clone();
        }
        let buffer = Bytes::from(vec![byte; length as usize]);
        if fills.len() < FILL_BUFFERS_MAX {
            fills.insert((length, byte), buffer.clone());
        }
        buffer
    }
}

fn malformed(e: prost::DecodeError) -> ServiceError {
    ServiceError::new(errno::EPROTO, format!("malformed selftest request: {e}"))
}

impl Service for SelftestService {
    fn handle(self: Arc<Self>, request: Request) -> Reply {
        let service = self;
        Box::pin(async move {
            match request.opcode {
                OP_PING => {
                    let ping = PingRequest::decode(request.body.as_ref()).map_err(malformed)?;
                    service.pings.fetch_add(1, Ordering::Relaxed);
                    Ok(PingReply {
                        sequence: ping.sequence,
                    }
                    .encode_to_vec()
                    .into())
                }
                OP_BRW => {
                    let brw = BrwRequest::decode(request.body.as_ref()).map_err(malformed)?;
                    let wire = brw
                        .buffer
                        .ok_or_else(|| ServiceError::new(errno::EPROTO, "brw without a buffer"))?;
                    let desc = BufferDescriptor::from_proto(&wire, request.node.limits())?;
                    let checksum = match brw.mode {
                        // Pulled and verified against every chunk's and the descriptor's checksum.
                        BRW_WRITE => request.node.bulk_get_checked(&desc).await?.1,
                        BRW_READ => {
                            let data = service.fill(desc.length, brw.fill as u8);
                            request.node.bulk_put(&desc, data).await?
                        }
                        other => {
                            return Err(ServiceError::new(
                                errno::EINVAL,
                                format!("brw mode {other} unknown"),
                            ));
                        }
                    };
                    service.brw_bytes.fetch_add(desc.length, Ordering::Relaxed);
                    Ok(BrwReply {
                        bytes: desc.length,
                        checksum,
                    }
                    .encode_to_vec()
                    .into())
                }
                other => Err(ServiceError::new(
                    errno::EOPNOTSUPP,
                    format!("selftest has no opcode {other}"),
                )),
            }
        })
    }
}
