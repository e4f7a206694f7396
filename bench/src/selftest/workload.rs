//! The client side of a selftest: `concurrency` workers per client node, each issuing one RPC
//! at a time until the deadline, checking every reply.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use bytes::Bytes;
use iopath_fabric::{ChecksumKind, Nid, Node};
use iopath_proto::selftest::{BrwReply, BrwRequest, PingReply, PingRequest};
use prost::Message as _;

use super::service::{BRW_READ, BRW_WRITE, OP_BRW, OP_PING, SELFTEST_PORTAL};
use crate::error::BenchError;
use iopath_stack::soak::percentile;

/// Which test to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum TestKind {
    /// `brw write`: servers pull the clients' buffers.
    BrwWrite,
    /// `brw read`: servers push into the clients' buffers.
    BrwRead,
    /// `ping`: empty round trips.
    Ping,
}

impl TestKind {
    /// The name in tables.
    pub fn label(self) -> &'static str {
        match self {
            TestKind::BrwWrite => "brw write",
            TestKind::BrwRead => "brw read",
            TestKind::Ping => "ping",
        }
    }
}

/// What one test run asks of one client node.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize)]
pub struct Workload {
    /// The test.
    pub test: TestKind,
    /// Servers, used round-robin by the workers.
    pub servers: Vec<String>,
    /// Bytes per `brw` RPC.
    pub size_bytes: u64,
    /// RPCs in flight per client node.
    pub concurrency: u32,
    /// How long to run.
    pub seconds: f64,
    /// Checksum for bulk.
    pub checksum: String,
}

/// What a client node measured.
#[derive(Debug, Clone, Default, serde::Serialize, serde::Deserialize)]
pub struct Measured {
    /// RPCs completed.
    pub rpcs: u64,
    /// Bulk bytes moved.
    pub bytes: u64,
    /// From the first request to the last reply.
    pub elapsed_s: f64,
    /// RPCs that failed.
    pub errors: u64,
    /// The first failure, if any.
    pub first_error: Option<String>,
    /// CPU seconds the client processes spent over the run, added up (a process per node
    /// only: in one process the nodes' time cannot be told apart).
    #[serde(default)]
    pub process_cpu_s: Option<f64>,
    /// The median time from an RPC's call to its checked reply, over the RPCs a client
    /// completed (the first [`RPC_TIMES_MAX`] of each worker); with several clients, the mean
    /// of their medians.
    #[serde(default)]
    pub median_rpc_us: Option<f64>,
    /// Clients whose medians `median_rpc_us` holds the mean of.
    #[serde(default)]
    pub medians: u32,
}

impl Measured {
    /// Adds another client's measurement into this total: counts add up, the elapsed time is
    /// the longest, the first error is kept, and the medians are averaged over the clients.
    pub fn add(&mut self, other: Measured) {
        self.rpcs += other.rpcs;
        self.bytes += other.bytes;
        self.errors += other.errors;
        self.elapsed_s = self.elapsed_s.max(other.elapsed_s);
        if self.first_error.is_none() {
            self.first_error = other.first_error;
        }
        self.process_cpu_s = match (self.process_cpu_s, other.process_cpu_s) {
            (Some(a), Some(b)) => Some(a + b),
            (a, b) => a.or(b),
        };
        if let Some(median) = other.median_rpc_us {
            let (n, m) = (f64::from(self.medians), f64::from(other.medians.max(1)));
            let mean = self.median_rpc_us.unwrap_or(0.0);
            self.median_rpc_us = Some((mean * n + median * m) / (n + m));
            self.medians += other.medians.max(1);
        }
    }
}

/// Most RPC times one worker keeps for the median: a minute of 1 ms RPCs, 480 kB.
pub const RPC_TIMES_MAX: usize = 60_000;

/// Runs `workload` from `node`, reporting progress (RPCs and bytes so far) through `counters`.
pub async fn run(
    node: &Node,
    workload: &Workload,
    counters: Arc<(AtomicU64, AtomicU64)>,
) -> Result<Measured, BenchError> {
    let servers: Vec<Nid> = workload
        .servers
        .iter()
        .map(|s| {
            s.parse()
                .map_err(|e| BenchError::step(format!("parse server NID {s:?}"), e))
        })
        .collect::<Result<_, _>>()?;
    if servers.is_empty() {
        return Err(BenchError::refused("a selftest needs at least one server"));
    }
    let kind: ChecksumKind = workload.checksum.parse().map_err(BenchError::refused)?;
    let payload = Bytes::from(vec![0xA5u8; workload.size_bytes as usize]);
    let started = Instant::now();
    let deadline = started + Duration::from_secs_f64(workload.seconds);
    let mut tasks = Vec::new();
    for worker in 0..workload.concurrency.max(1) as usize {
        let node = node.clone();
        let server = servers[worker % servers.len()];
        let payload = payload.clone();
        let counters = Arc::clone(&counters);
        let test = workload.test;
        tasks.push(tokio::spawn(async move {
            let mut measured = Measured::default();
            let mut times_us = Vec::new();
            let mut sequence = worker as u64;
            while Instant::now() < deadline {
                let called = Instant::now();
                match one_rpc(&node, server, test, &payload, kind, sequence).await {
                    Ok(bytes) => {
                        if times_us.len() < RPC_TIMES_MAX {
                            times_us.push(called.elapsed().as_secs_f64() * 1e6);
                        }
                        measured.rpcs += 1;
                        measured.bytes += bytes;
                        counters.0.fetch_add(1, Ordering::Relaxed);
                        counters.1.fetch_add(bytes, Ordering::Relaxed);
                    }
                    Err(e) => {
                        measured.errors += 1;
                        measured.first_error.get_or_insert_with(|| e.to_string());
                        if measured.errors >= 10 {
                            break; // a broken setup: report it rather than spin
                        }
                    }
                }
                sequence += 1024;
            }
            (measured, times_us)
        }));
    }
    let mut total = Measured::default();
    let mut times_us: Vec<f64> = Vec::new();
    for task in tasks {
        let (measured, times) = task
            .await
            .map_err(|e| BenchError::tool(format!("selftest worker panicked: {e}")))?;
        times_us.extend(times);
        total.rpcs += measured.rpcs;
        total.bytes += measured.bytes;
        total.errors += measured.errors;
        if total.first_error.is_none() {
            total.first_error = measured.first_error;
        }
    }
    total.elapsed_s = started.elapsed().as_secs_f64();
    total.median_rpc_us = (!times_us.is_empty()).then(|| percentile(&times_us, 0.5));
    total.medians = u32::from(total.median_rpc_us.is_some());
    Ok(total)
}

/// One RPC, checked; returns the bulk bytes it moved.
async fn one_rpc(
    node: &Node,
    server: Nid,
    test: TestKind,
    payload: &Bytes,
    kind: ChecksumKind,
    sequence: u64,
) -> Result<u64, BenchError> {
    match test {
        TestKind::Ping => {
            let body = PingRequest { sequence }.encode_to_vec().into();
            let reply = node.call(server, SELFTEST_PORTAL, OP_PING, body).await?;
            let reply = PingReply::decode(reply.as_ref()).map_err(|e| decode("ping", e))?;
            if reply.sequence != sequence {
                return Err(BenchError::Mismatch {
                    what: format!("ping {sequence} answered with {}", reply.sequence),
                });
            }
            Ok(0)
        }
        TestKind::BrwWrite => {
            // A fresh registration and checksum per write, as a client writing new data pays.
            let region = node.regions().register_source(payload.clone())?;
            let desc = region.describe_all(kind);
            let body = BrwRequest {
                mode: BRW_WRITE,
                buffer: Some(desc.to_proto()),
                fill: 0,
            };
            let reply = node
                .call(server, SELFTEST_PORTAL, OP_BRW, body.encode_to_vec().into())
                .await?;
            let reply = BrwReply::decode(reply.as_ref()).map_err(|e| decode("brw", e))?;
            if reply.bytes != desc.length || Some(reply.checksum) != desc.checksum {
                return Err(BenchError::Mismatch {
                    what: format!(
                        "brw write: server received {} bytes with checksum {:#010x}",
                        reply.bytes, reply.checksum
                    ),
                });
            }
            Ok(desc.length)
        }
        TestKind::BrwRead => {
            let sink = node.regions().register_sink(payload.len() as u64)?;
            let desc = sink.describe(0, payload.len() as u64, kind)?;
            let fill = (sequence % 251) as u32;
            let body = BrwRequest {
                mode: BRW_READ,
                buffer: Some(desc.to_proto()),
                fill,
            };
            let reply = node
                .call(server, SELFTEST_PORTAL, OP_BRW, body.encode_to_vec().into())
                .await?;
            let reply = BrwReply::decode(reply.as_ref()).map_err(|e| decode("brw", e))?;
            let data = sink.into_bytes();
            // Right after the data arrived: its checksum against what the server sent.
            if kind.compute(&data) != reply.checksum
                || data.first().is_some_and(|&b| u32::from(b) != fill)
            {
                return Err(BenchError::Mismatch {
                    what: "brw read: received data does not match the server's checksum".into(),
                });
            }
            Ok(data.len() as u64)
        }
    }
}

/// A reply that does not decode, as the error it is.
fn decode(what: &str, e: prost::DecodeError) -> BenchError {
    BenchError::Mismatch {
        what: format!("decode {what} reply: {e}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clients_medians_average() {
        let client = |median| Measured {
            median_rpc_us: Some(median),
            medians: 1,
            ..Measured::default()
        };
        let mut total = Measured::default();
        total.add(client(100.0));
        total.add(client(200.0));
        total.add(Measured::default());
        total.add(client(300.0));
        assert_eq!((total.median_rpc_us, total.medians), (Some(200.0), 3));
    }
}
