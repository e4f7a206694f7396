//! What a selftest runs: the transport, the groups, the tests and their sizes.

use super::workload::TestKind;

/// Which transport the nodes use.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Transport {
    /// In-memory: one process, no copies.
    Mem,
    /// TCP on loopback.
    Tcp,
}

/// A selftest run.
#[derive(Debug, Clone)]
pub struct SelftestConfig {
    /// The transport.
    pub transport: Transport,
    /// Each node in its own process (TCP only).
    pub processes: bool,
    /// Client nodes.
    pub clients: u32,
    /// Server nodes.
    pub servers: u32,
    /// The tests, in order.
    pub tests: Vec<TestKind>,
    /// Bytes per `brw` RPC.
    pub size_bytes: u64,
    /// RPCs in flight per client.
    pub concurrency: u32,
    /// Seconds per test.
    pub seconds: f64,
    /// `crc32` or `crc32c`.
    pub checksum: String,
    /// Measure loopback TCP with iperf3 first.
    pub baseline: bool,
    /// Routers between clients (network 0) and servers (network 1); 0 for direct.
    pub routers: u32,
    /// With routers: run the same tests without them too, and report the ratio.
    pub compare_direct: bool,
    /// Whether the routers verify the checksums of the bulk chunks they forward.
    pub router_checksums: bool,
}
