//! [`FyodStats`]: what a fyod has done, read by tests, `lctl`-style views and clients.

use iopath_proto::fyod as pb;

use crate::error::{ForwarderError, Result};
use crate::modes::FileSystem;

/// A fyod's counters at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FyodStats {
    /// PFS or UFS.
    pub file_system: FileSystem,
    /// Compute nodes connected.
    pub clients_connected: u32,
    /// Files open.
    pub open_files: u32,
    /// Synchronous calls executing now.
    pub sync_calls_in_flight: u32,
    /// The most synchronous calls ever executing at once: 1 when they are serialised.
    pub sync_calls_in_flight_peak: u32,
    /// The most synchronous calls ever waiting for the fyod at once.
    pub sync_calls_waiting_peak: u32,
    /// Asynchronous calls executing now.
    pub async_calls_in_flight: u32,
    /// The most asynchronous calls ever executing at once.
    pub async_calls_in_flight_peak: u32,
    /// Calls finished.
    pub calls_completed: u64,
    /// MUNIX token acquisitions (managed here) that had to wait for another holder.
    pub token_waits: u64,
    /// Bytes this fyod itself pulled from or pushed to compute nodes (0 in PFS mode).
    pub bytes_through_fyod: u64,
    /// UFS: the most 128 KiB buffers ever in use at once.
    pub ufs_buffers_in_use_peak: u32,
    /// UFS: the pool's size.
    pub ufs_buffers_max: u32,
    /// UFS: reads served from the cache.
    pub ufs_cache_hits: u64,
    /// UFS: reads that went to storage.
    pub ufs_cache_misses: u64,
    /// UFS: writes acknowledged from the write-behind cache.
    pub ufs_writes_absorbed: u64,
    /// UFS: flushes of held-back writes to storage.
    pub ufs_flushes: u64,
    /// Storage requests sent.
    pub ost_requests: u64,
    /// Bytes the fyod keeps for replay itself (UFS: its copies of uncommitted writes).
    pub kept_bytes: u64,
    /// PFS writes replayed to restarted storage servers (pulled again from compute nodes).
    pub pfs_writes_replayed: u64,
}

impl FyodStats {
    /// The counters as `lctl get_param fyod.stats` prints them: a line each, name then value,
    /// as Lustre's single-value parameters read.
    pub fn text(&self) -> String {
        // Each field named once; the destructure has no `..`, so a field added to the struct
        // and not here does not compile.
        macro_rules! rows {
            ($($field:ident),* $(,)?) => {{
                let FyodStats { $($field),* } = *self;
                [$((stringify!($field), $field.to_string())),*]
            }};
        }
        let rows = rows!(
            file_system,
            clients_connected,
            open_files,
            sync_calls_in_flight,
            sync_calls_in_flight_peak,
            sync_calls_waiting_peak,
            async_calls_in_flight,
            async_calls_in_flight_peak,
            calls_completed,
            token_waits,
            bytes_through_fyod,
            ufs_buffers_in_use_peak,
            ufs_buffers_max,
            ufs_cache_hits,
            ufs_cache_misses,
            ufs_writes_absorbed,
            ufs_flushes,
            ost_requests,
            kept_bytes,
            pfs_writes_replayed,
        );
        rows.iter()
            .map(|(name, value)| format!("{name:<27} {value}\n"))
            .collect()
    }

    /// The wire form.
    pub fn to_wire(&self) -> pb::StatsReply {
        pb::StatsReply {
            file_system: self.file_system.to_wire() as i32,
            clients_connected: self.clients_connected,
            open_files: self.open_files,
            sync_calls_in_flight: self.sync_calls_in_flight,
            sync_calls_in_flight_peak: self.sync_calls_in_flight_peak,
            sync_calls_waiting_peak: self.sync_calls_waiting_peak,
            async_calls_in_flight: self.async_calls_in_flight,
            async_calls_in_flight_peak: self.async_calls_in_flight_peak,
            calls_completed: self.calls_completed,
            token_waits: self.token_waits,
            bytes_through_fyod: self.bytes_through_fyod,
            ufs_buffers_in_use_peak: self.ufs_buffers_in_use_peak,
            ufs_buffers_max: self.ufs_buffers_max,
            ufs_cache_hits: self.ufs_cache_hits,
            ufs_cache_misses: self.ufs_cache_misses,
            ufs_writes_absorbed: self.ufs_writes_absorbed,
            ufs_flushes: self.ufs_flushes,
            ost_requests: self.ost_requests,
            kept_bytes: self.kept_bytes,
            pfs_writes_replayed: self.pfs_writes_replayed,
        }
    }

    /// Parses the wire form.
    pub fn from_wire(wire: &pb::StatsReply) -> Result<FyodStats> {
        let file_system = FileSystem::from_wire(wire.file_system).ok_or_else(|| {
            ForwarderError::malformed("stats reply", format!("file system {}", wire.file_system))
        })?;
        Ok(FyodStats {
            file_system,
            clients_connected: wire.clients_connected,
            open_files: wire.open_files,
            sync_calls_in_flight: wire.sync_calls_in_flight,
            sync_calls_in_flight_peak: wire.sync_calls_in_flight_peak,
            sync_calls_waiting_peak: wire.sync_calls_waiting_peak,
            async_calls_in_flight: wire.async_calls_in_flight,
            async_calls_in_flight_peak: wire.async_calls_in_flight_peak,
            calls_completed: wire.calls_completed,
            token_waits: wire.token_waits,
            bytes_through_fyod: wire.bytes_through_fyod,
            ufs_buffers_in_use_peak: wire.ufs_buffers_in_use_peak,
            ufs_buffers_max: wire.ufs_buffers_max,
            ufs_cache_hits: wire.ufs_cache_hits,
            ufs_cache_misses: wire.ufs_cache_misses,
            ufs_writes_absorbed: wire.ufs_writes_absorbed,
            ufs_flushes: wire.ufs_flushes,
            ost_requests: wire.ost_requests,
            kept_bytes: wire.kept_bytes,
            pfs_writes_replayed: wire.pfs_writes_replayed,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_text_is_a_line_per_counter_name_then_value() {
        let mut wire = pb::StatsReply {
            file_system: pb::FileSystem::Pfs as i32,
            ..pb::StatsReply::default()
        };
        wire.open_files = 3;
        wire.kept_bytes = 1 << 20;
        let stats = FyodStats::from_wire(&wire).unwrap();
        let text = stats.text();
        let lines: Vec<(&str, &str)> = text
            .lines()
            .map(|l| l.split_once(' ').map(|(n, v)| (n, v.trim())).unwrap())
            .collect();
        assert_eq!(lines.len(), 20, "{text}");
        assert!(lines.contains(&("file_system", "pfs")), "{text}");
        assert!(lines.contains(&("open_files", "3")), "{text}");
        assert!(lines.contains(&("kept_bytes", "1048576")), "{text}");
        assert!(!text.contains('{'), "no debug dump: {text}");
    }
}
