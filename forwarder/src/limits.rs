//! Every maximum the fyod enforces, in one place, with ASCI Red's numbers where the paper
//! gives one.

use std::time::Duration;

/// The largest buffer a UFS fyod pulls data into, and so the chunk it breaks requests into:
/// "the fyod allocates a data buffer of up to 128KB and breaks up I/O requests into 128KB
/// chunks" (§3.3.1). Also the UFS cache's block.
pub const UFS_CHUNK_BYTES: u64 = 128 * 1024;

/// Compute nodes per fyod unless configured otherwise: "by default, the yod allocates one
/// fyod for each 256 compute nodes" (§2.2).
pub const CLIENTS_PER_FYOD_DEFAULT: u32 = 256;

/// The fyod's bounds. Everything a client can make the fyod hold is bounded by one of these.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FyodLimits {
    /// Files open at once, over all clients. Each open file is one worker's queue (the
    /// paper's example: 256 nodes × 10 files = 2560 threads).
    pub open_files_max: u32,
    /// Calls accepted and not yet finished, over all clients; more are refused with EAGAIN.
    pub calls_queued_max: u32,
    /// How far ahead of a handle's next call a call may arrive (calls travel concurrently and
    /// may arrive out of order; they run in order).
    pub reorder_window_calls: u64,
    /// The largest read or write one call may name.
    pub request_max_bytes: u64,
    /// PFS: storage requests of one call in flight at once.
    pub pfs_pieces_in_flight_max: u32,
    /// UFS: 128 KiB buffers in the pool. A transfer waits for a buffer; the fyod never holds
    /// more than `ufs_buffers_max × 128 KiB` of data in transit.
    pub ufs_buffers_max: u32,
    /// UFS: 128 KiB blocks the cache holds.
    pub ufs_cache_blocks_max: u32,
    /// UFS: cache blocks holding written data not yet sent to storage (write-behind). 0 turns
    /// write-behind off: every write goes to storage before its reply. Must be below
    /// `ufs_cache_blocks_max`.
    pub ufs_dirty_blocks_max: u32,
    /// MUNIX: files with a token record (holder or waiters) at once, on the fyod that manages
    /// their tokens.
    pub token_files_max: u32,
    /// MUNIX: fyods' calls waiting for one file's token.
    pub token_waiters_max: u32,
    /// MUNIX: how long a grant is honoured. A holder that has not released by then (a fyod
    /// that died holding it) loses the token to the next waiter — the paper's fyods that
    /// "lock the files" until a reboot, bounded.
    pub token_lease: Duration,
}

impl Default for FyodLimits {
    fn default() -> Self {
        FyodLimits {
            open_files_max: 4096,
            calls_queued_max: 4096,
            reorder_window_calls: 64,
            request_max_bytes: 256 << 20,
            pfs_pieces_in_flight_max: 16,
            ufs_buffers_max: 64,
            ufs_cache_blocks_max: 64,
            ufs_dirty_blocks_max: 16,
            token_files_max: 65_536,
            token_waiters_max: 1024,
            token_lease: Duration::from_secs(60),
        }
    }
}

/// A modeled service node under the fyod (the 004 paper's fyods ran on service nodes of a few
/// CPUs and their own memory): each call on an open file takes `call` of one of `cpus` CPUs
/// before its I/O starts, in host time; while the open files' worker threads — one per open
/// file, as the asynchronous calls had — number more than `threads_fit`, the node pages and
/// each call's CPU time is multiplied by the overcommit (open files over `threads_fit`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ServiceNode {
    /// CPUs: calls worked on at once.
    pub cpus: u32,
    /// CPU time per call, host time.
    pub call: Duration,
    /// Worker threads the node's memory holds; `None`: it never pages.
    pub threads_fit: Option<u64>,
}

impl ServiceNode {
    /// The CPU time one call takes with `open_files` threads: `call`, times the overcommit
    /// once the threads outgrow the memory.
    pub fn call_time(&self, open_files: u64) -> Duration {
        match self.threads_fit {
            Some(fit) if open_files > fit => {
                self.call.mul_f64(open_files as f64 / fit.max(1) as f64)
            }
            _ => self.call,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_call_costs_its_cpu_time_until_the_threads_outgrow_the_memory() {
        let node = ServiceNode {
            cpus: 2,
            call: Duration::from_millis(4),
            threads_fit: Some(64),
        };
        assert_eq!(node.call_time(1), Duration::from_millis(4));
        assert_eq!(node.call_time(64), Duration::from_millis(4));
        // Twice the threads the memory holds: every call pages, twice the time.
        assert_eq!(node.call_time(128), Duration::from_millis(8));
        assert_eq!(node.call_time(256), Duration::from_millis(16));
        let unbounded = ServiceNode {
            threads_fit: None,
            ..node
        };
        assert_eq!(unbounded.call_time(10_000), Duration::from_millis(4));
    }
}
