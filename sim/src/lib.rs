//! A seeded whole-stack simulation: clients, LNet routers, storage servers, the metadata
//! server and fyods, every node in one process on one thread with tokio's paused clock,
//! under message drops, delays, partitions, bulk bit flips, and server, router, metadata
//! server and fyod crashes — checked by an oracle that every acknowledged write reads back,
//! that no read returns bytes no write put there, that every acknowledged create and unlink
//! holds, and that no request executes twice. The same seed gives the same run: a failing
//! seed replays exactly (`IOPATH_SEED=N`, or `iopath sim --first N --seeds 1`).
//!
//! # Layout
//!
//! - [`pattern`]: the bytes clients write — every word names its object, write and place.
//! - [`oracle`]: the history of writes and the check of every read (a pure core).
//! - [`namespace`]: what the metadata server was asked and answered, and the check of what
//!   it holds after the final recovery (a pure core).
//! - [`executions`]: the wrapper that logs what servers execute, and the execute-once check.
//! - [`events`]: the run's record, its digest, and counts by kind.
//! - [`faults`]: the network's fault hook: drops, delays, bit flips, partitions.
//! - [`world`]: networks, routers, storage servers and the metadata server on simulated
//!   disks, fyods, client nodes; crash, restart.
//! - `shared`: what a seed's clients share — the oracles, the event log, the failures.
//! - `clients`: the direct clients' workload — objects, and files made at the metadata
//!   server — and their final check.
//! - `fyod_clients`: the clients behind fyods, what a fyod promises them, their final check.
//! - [`run`]: one seed — the world it draws, the workload, the fault schedule, the final
//!   recovery and the verdict.
//! - [`sweep`]: many seeds over worker threads, in blocks a long run can resume from.
//!
//! What is simulated and what is left out (client crashes, among others) is in
//! `docs/simulation.md`.

mod clients;
pub mod events;
pub mod executions;
pub mod faults;
mod fyod_clients;
pub mod namespace;
pub mod oracle;
pub mod pattern;
pub mod run;
mod shared;
pub mod sweep;
pub mod world;

use std::collections::BTreeMap;
use std::time::Duration;

pub use faults::MessageFaults;
pub use run::run_seed;
pub use world::{EngineWrap, MdsDiskWrap};

/// Every kind of fault the simulation injects, as its events count them: message drops,
/// delays and bulk bit flips, partitions (and the messages they drop), clients kept away past
/// a recovery window, and crashes of each role.
pub const FAULT_KINDS: [&str; 10] = [
    "drop",
    "delay",
    "bit_flip",
    "partition",
    "partition_drop",
    "away",
    "server_crash",
    "router_crash",
    "mds_crash",
    "fyod_crash",
];

/// The environment variable that picks one seed to run (and replay).
pub const SEED_VAR: &str = "IOPATH_SEED";

/// What every seed's run shares.
#[derive(Debug, Clone)]
pub struct SimConfig {
    /// Reads and writes each client issues.
    pub ops_per_client: u32,
    /// Message faults while the workload runs.
    pub message_faults: MessageFaults,
    /// Crash and restart servers and routers (partitions and message faults regardless).
    pub crashes: bool,
    /// A seed that runs longer than this in simulated time has failed.
    pub virtual_time_max: Duration,
    /// Keep every event line in the report (to print a failing seed's story).
    pub keep_events: bool,
    /// A planted bug around each server's engine (the simulation's own tests).
    pub engine_wrap: Option<EngineWrap>,
    /// A planted bug around the metadata server's disk (the simulation's own tests).
    pub mds_disk_wrap: Option<MdsDiskWrap>,
    /// Draw, per seed, whether the metadata server and fyods are in play. Off, every seed
    /// runs the storage path alone, exactly as it did before they were simulated (seeds
    /// found then replay as they were).
    pub other_roles: bool,
}

impl Default for SimConfig {
    /// 12 operations a client, default message faults, crashes on, an hour of simulated time.
    fn default() -> Self {
        SimConfig {
            ops_per_client: 12,
            message_faults: MessageFaults::default(),
            crashes: true,
            virtual_time_max: Duration::from_secs(3600),
            keep_events: false,
            engine_wrap: None,
            mds_disk_wrap: None,
            other_roles: true,
        }
    }
}

/// What one seed did.
#[derive(Debug, Clone)]
pub struct SeedReport {
    /// The seed.
    pub seed: u64,
    /// The digest of its events: equal for two runs of one seed.
    pub digest: u64,
    /// What the oracle (or the run itself) found wrong; empty when it passed.
    pub failures: Vec<String>,
    /// Events by kind: faults injected, crashes, operations.
    pub events: BTreeMap<&'static str, u64>,
    /// Writes acknowledged and still required to read back.
    pub writes_acknowledged: usize,
    /// Requests the servers executed.
    pub executions: usize,
    /// Simulated time the run took.
    pub simulated: Duration,
    /// Every event line, when [`SimConfig::keep_events`].
    pub lines: Vec<String>,
    /// Whether the seed drew the other roles ([`SimConfig::other_roles`]).
    pub other_roles: bool,
}

impl SeedReport {
    /// A seed that could not even start.
    fn failed(seed: u64, why: String, other_roles: bool) -> SeedReport {
        SeedReport {
            other_roles,
            seed,
            digest: 0,
            failures: vec![why],
            events: BTreeMap::new(),
            writes_acknowledged: 0,
            executions: 0,
            simulated: Duration::ZERO,
            lines: Vec::new(),
        }
    }

    /// Whether the oracle found nothing wrong.
    pub fn passed(&self) -> bool {
        self.failures.is_empty()
    }

    /// How to run this seed again.
    pub fn replay_hint(&self) -> String {
        let storage_only = if self.other_roles {
            ""
        } else {
            " --storage-only"
        };
        format!(
            "replay it with {SEED_VAR}={} (in the simulation's tests) or `iopath sim --first {} --seeds 1 --events{storage_only}`",
            self.seed, self.seed
        )
    }
}

impl std::fmt::Display for SeedReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.passed() {
            return write!(f, "seed {} passed (digest {:016x})", self.seed, self.digest);
        }
        writeln!(f, "seed {} FAILED; {}", self.seed, self.replay_hint())?;
        for failure in &self.failures {
            writeln!(f, "  {failure}")?;
        }
        Ok(())
    }
}

/// Why a run could not go on (as opposed to what the oracle found).
#[derive(Debug, thiserror::Error)]
pub enum SimError {
    /// A node, server or client could not be started or reached during setup.
    #[error("simulation setup: {0}")]
    Setup(String),
}

/// The seed `IOPATH_SEED` names, if set; an error naming the bad value otherwise.
pub fn seed_from_env() -> Result<Option<u64>, String> {
    match std::env::var(SEED_VAR) {
        Ok(text) => text
            .trim()
            .parse()
            .map(Some)
            .map_err(|e| format!("{SEED_VAR}={text:?} is not a seed: {e}")),
        Err(_) => Ok(None),
    }
}
