//! Every maximum the fabric enforces, in one place, with LNet's and ptlrpc's defaults where
//! they have one.

use std::time::Duration;

use crate::checksum::ChecksumKind;

/// The named limits of one node. Everything a peer can make a node hold is bounded by one of
/// these.
#[derive(Debug, Clone)]
pub struct Limits {
    /// Largest frame payload accepted (LNet's MTU is 1 MiB).
    pub frame_payload_max_bytes: u32,
    /// Bulk is moved in chunks of this size (at most `frame_payload_max_bytes`).
    pub bulk_chunk_bytes: u32,
    /// Chunks of one transfer in flight at once: bounds the memory a pull can fill at once.
    pub bulk_window_chunks: u32,
    /// Largest single bulk transfer (one descriptor).
    pub bulk_max_bytes: u64,
    /// Largest region a node may register.
    pub region_max_bytes: u64,
    /// Regions registered at once.
    pub regions_max: u32,
    /// Bytes registered in all regions at once.
    pub regions_total_max_bytes: u64,
    /// Sends in flight per interface (LNet `credits`, socklnd default 256).
    pub ni_credits: u32,
    /// Sends in flight per peer (LNet `peer_credits`, socklnd default 8).
    pub peer_credits: u32,
    /// Peers an interface tracks.
    pub peers_max: u32,
    /// Accepted TCP connections at once.
    pub connections_max: u32,
    /// How long an RPC waits for its reply before resending.
    pub rpc_timeout: Duration,
    /// Resends of an RPC after a timeout or failed send, before it fails.
    pub rpc_resends_max: u32,
    /// Retries of an RPC the server answered with BUSY, each after a wait that doubles from
    /// 2 ms to 1 s (`rpc::busy_backoff`): 1,000 is about sixteen minutes.
    pub rpc_busy_retries_max: u32,
    /// Early replies an RPC takes (its server has it and is still executing it) before it
    /// fails: each extends its wait by one `rpc_timeout`, so 60 at 10 s is ten minutes,
    /// Lustre's `at_max`.
    pub rpc_early_replies_max: u32,
    /// How long a bulk chunk may take before it is asked for again.
    pub bulk_timeout: Duration,
    /// Times a bulk chunk is asked for again after a checksum mismatch, before failing.
    pub checksum_resends_max: u32,
    /// Requests a node executes at once; more are answered BUSY.
    pub requests_active_max: u32,
    /// Saved replies per client, for resends (oldest evicted first).
    pub replies_saved_per_client_max: u32,
    /// Clients a node keeps saved replies for.
    pub reply_clients_max: u32,
    /// Answers (RPC replies, ACKs, GET data) a node sends on behalf of peers at once; beyond
    /// it they are dropped and counted, and the peer resends.
    pub detached_sends_max: u32,
    /// How often a node pings each gateway in its routing table.
    pub router_ping_interval: Duration,
    /// A gateway that has not answered for this long is marked down; traffic moves to the
    /// next routes until it answers again.
    pub router_dead_timeout: Duration,
    /// Checksums this node accepts in descriptors.
    pub checksums_accepted: Vec<ChecksumKind>,
}

/// One mebibyte.
pub const MIB: u64 = 1 << 20;

impl Default for Limits {
    fn default() -> Self {
        Limits {
            frame_payload_max_bytes: MIB as u32,
            bulk_chunk_bytes: MIB as u32,
            bulk_window_chunks: 8,
            bulk_max_bytes: 256 * MIB,
            region_max_bytes: 1024 * MIB,
            regions_max: 16_384,
            regions_total_max_bytes: 8 * 1024 * MIB,
            ni_credits: 256,
            peer_credits: 8,
            peers_max: 4096,
            connections_max: 4096,
            rpc_timeout: Duration::from_secs(10),
            rpc_resends_max: 5,
            rpc_busy_retries_max: 1000,
            rpc_early_replies_max: 60,
            bulk_timeout: Duration::from_secs(10),
            checksum_resends_max: 3,
            requests_active_max: 512,
            replies_saved_per_client_max: 256,
            reply_clients_max: 4096,
            detached_sends_max: 4096,
            router_ping_interval: Duration::from_secs(1),
            router_dead_timeout: Duration::from_secs(3),
            checksums_accepted: vec![ChecksumKind::Crc32, ChecksumKind::Crc32c],
        }
    }
}
