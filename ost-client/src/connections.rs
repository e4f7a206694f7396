//! [`OstConnections`]: a file system's storage servers as one client reaches them — one
//! [`OstClient`] per server (shared by that server's targets), made at first need or all at
//! once, each pinged; and the acknowledged writes its connections found lost. The client library
//! holds one set; a fyod holds two, under its two identities (its own writes by bytes, the PFS
//! writes it forwards by descriptor).

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use iopath_fabric::{Nid, Node};
use iopath_layout::TargetMap;
use tokio::sync::OnceCell;
use tokio::task::JoinSet;

use crate::client::OstClient;
use crate::error::OstClientError;
use crate::id::ClientId;
use crate::import::LostWrite;
use crate::ping::ping;
use crate::stats::OscStats;

/// Acknowledged writes a server no longer had after a restart and would not take back (the
/// client was evicted, or a descriptor's owner let go of the memory): lost, and said so.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LostWrites {
    /// The server.
    pub server: Nid,
    /// Each write: its target, its object and its transno.
    pub writes: Vec<LostWrite>,
}

impl LostWrites {
    /// How many of them were writes to `object` on `target`.
    pub fn to_object(&self, target: u32, object: u64) -> usize {
        self.writes
            .iter()
            .filter(|w| w.target == target && w.object == object)
            .count()
    }
}

/// How many of a file's lost writes one open handle of it has been told of. Each is told
/// once, as Linux reports a write-back error once to each open file: a handle's next fsync
/// succeeds unless more were lost since. A handle starts told of none, so one opened after
/// a loss is told too, and no loss goes unreported.
#[derive(Debug, Default)]
pub struct LossesTold(AtomicUsize);

impl LossesTold {
    /// Of `found` lost writes found so far, how many this handle had not been told of; from
    /// now on they count as told.
    pub fn untold(&self, found: usize) -> usize {
        found.saturating_sub(self.0.fetch_max(found, Ordering::AcqRel))
    }
}

/// One connection per storage server of a file system, under one client id.
#[derive(Debug)]
pub struct OstConnections {
    node: Node,
    client: ClientId,
    targets: TargetMap<Nid>,
    ping_interval: Duration,
    /// By server; a cell is filled by the first caller that needs the server.
    servers: Mutex<BTreeMap<Nid, Arc<OnceCell<Arc<OstClient>>>>>,
    /// The node's osc counters, which every connection counts into, if it keeps them.
    stats: Option<Arc<OscStats>>,
}

impl OstConnections {
    /// The servers of `targets`, reached from `node` as `client`, not connected yet; each
    /// connection is pinged every `ping_interval` once made.
    pub fn new(
        node: Node,
        client: ClientId,
        targets: TargetMap<Nid>,
        ping_interval: Duration,
    ) -> OstConnections {
        OstConnections {
            node,
            client,
            targets,
            ping_interval,
            servers: Mutex::default(),
            stats: None,
        }
    }

    /// The same set, its connections counting what they ask of each target in `stats`, the
    /// node's osc counters (`osc.*.stats`, `osc.*.rpc_stats`).
    pub fn counted_in(self, stats: Option<Arc<OscStats>>) -> OstConnections {
        OstConnections { stats, ..self }
    }

    /// The node's osc counters the connections count into, if any.
    pub fn stats(&self) -> Option<&Arc<OscStats>> {
        self.stats.as_ref()
    }

    /// The file system's targets.
    pub fn targets(&self) -> &TargetMap<Nid> {
        &self.targets
    }

    /// The id this set connects as.
    pub fn client_id(&self) -> ClientId {
        self.client
    }

    /// Connects to every server now, one after another; the first failure.
    pub async fn connect_all(&self) -> Result<(), OstClientError> {
        for server in self.targets.servers() {
            self.to_server(server).await?;
        }
        Ok(())
    }

    /// The connection to the server holding `target`, made now if it is not yet.
    pub async fn to_target(&self, target: u32) -> Result<Arc<OstClient>, OstClientError> {
        let server = self.targets.server(target)?;
        self.to_server(server).await
    }

    /// The connection to `server`, made now (and its pinger started) if it is not yet.
    pub async fn to_server(&self, server: Nid) -> Result<Arc<OstClient>, OstClientError> {
        let cell = Arc::clone(
            self.servers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .entry(server)
                .or_default(),
        );
        let connection = cell
            .get_or_try_init(|| async {
                let connection = OstClient::connect_counted(
                    self.node.clone(),
                    server,
                    self.client,
                    self.stats.clone(),
                )
                .await
                .map_err(|source| OstClientError::Connect { server, source })?;
                let connection = Arc::new(connection);
                // What a ping finds lost the connection records itself ([`OstClient::lost_writes`]).
                tokio::spawn(ping(
                    Arc::downgrade(&connection),
                    self.ping_interval,
                    |_, _| {},
                ));
                Ok::<_, OstClientError>(connection)
            })
            .await?;
        Ok(Arc::clone(connection))
    }

    /// The connections made so far.
    pub fn connected(&self) -> Vec<Arc<OstClient>> {
        self.servers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .values()
            .filter_map(|cell| cell.get().cloned())
            .collect()
    }

    /// Bytes every connection holds for replay: acknowledged writes not yet committed.
    pub fn kept_bytes(&self) -> u64 {
        self.connected().iter().map(|c| c.kept_bytes()).sum()
    }

    /// Acknowledged writes not yet committed, over every connection.
    pub fn kept_writes(&self) -> usize {
        self.connected().iter().map(|c| c.kept_writes()).sum()
    }

    /// Writes replayed to restarted servers over the connections' lives.
    pub fn replayed(&self) -> u64 {
        self.connected().iter().map(|c| c.replayed()).sum()
    }

    /// Acknowledged writes found lost so far, by server: by a ping with nobody's call
    /// waiting, or by a call that met the restart (and failed, saying so — though the writes
    /// it found may be another file's, whose fsync then asks here).
    pub fn lost_writes(&self) -> Vec<LostWrites> {
        self.connected()
            .iter()
            .map(|c| LostWrites {
                server: c.server(),
                writes: c.lost_writes(),
            })
            .filter(|l| !l.writes.is_empty())
            .collect()
    }

    /// Ends the session with every server connected so far, all at once: each commits its
    /// targets, so every write it acknowledged to this client is committed, and forgets the
    /// client. The first failure after all were tried; writes found lost are an error too.
    pub async fn disconnect(&self) -> Result<(), OstClientError> {
        let mut set = JoinSet::new();
        for connection in self.connected() {
            set.spawn(async move {
                let server = connection.server();
                connection
                    .disconnect()
                    .await
                    .map_err(|source| OstClientError::Disconnect { server, source })
            });
        }
        let mut first = Ok(());
        // Bounded: one result per connection.
        while let Some(joined) = set.join_next().await {
            // The tasks are never aborted: a join error is a panic, passed on as one.
            let outcome = joined.unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()));
            if first.is_ok() {
                first = outcome;
            }
        }
        first
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_lost_write_is_told_to_a_handle_once() {
        let told = LossesTold::default();
        assert_eq!(told.untold(0), 0);
        assert_eq!(told.untold(3), 3, "the first fsync is told all");
        assert_eq!(told.untold(3), 0, "the next, nothing new");
        assert_eq!(told.untold(5), 2, "only what was lost since");
        assert_eq!(told.untold(4), 0, "an older count takes nothing back");
    }
}
