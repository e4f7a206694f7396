//! Lustre's pinger: a connection reconnects every interval, so a client replays promptly after
//! a server restart even while nobody uses the connection, instead of being evicted for being
//! idle.

use std::sync::Weak;
use std::time::Duration;

use iopath_fabric::Nid;
use tracing::{info, warn};

use crate::client::{LostWrite, OstClient};

/// How often a client pings each storage server it is connected to (Lustre's pinger, every
/// `obd_timeout / 4` = 25 s against a 300 s recovery window; here 1 s against the storage
/// servers' 30 s window). A ping is a reconnect: if the server restarted, the client replays
/// what it kept at once, so an idle client does not hold every other client's recovery open
/// until its window runs out — or, evicted, make that window count every byte its startup
/// cut as lost.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// Lustre's pinger for one server connection: every `interval`, a reconnect. If the server
/// restarted, the kept writes are replayed right away (and the server told this client is
/// done), whether or not anyone is using the connection — an idle client is not evicted for
/// being idle. Writes the server would not take back go to `lost`. Ends when the connection
/// is dropped or disconnected.
pub async fn ping(
    connection: Weak<OstClient>,
    interval: Duration,
    lost: impl Fn(Nid, Vec<LostWrite>) + Send + 'static,
) {
    // Bounded by the connection's life: the loop ends when it is dropped or disconnected.
    loop {
        tokio::time::sleep(interval).await;
        let Some(server) = connection.upgrade() else {
            return;
        };
        if server.is_disconnected() {
            // The server has forgotten this client: a reconnect would register it again.
            return;
        }
        // Nothing sent while a disconnect is under way (it may yet fail: then pings go on).
        let Some(outcome) = server.ping().await else {
            continue;
        };
        match outcome {
            Ok(report) if !report.lost.is_empty() => {
                warn!(server = %server.server(), lost = report.lost.len(), "evicted: acknowledged writes were lost");
                lost(server.server(), report.lost);
            }
            Ok(report) => {
                if report.restarted {
                    info!(server = %server.server(), replayed = report.replayed, "server restarted: replayed");
                }
            }
            // Down or restarting: the next ping (or call) tries again.
            Err(error) => tracing::debug!(server = %server.server(), %error, "ping failed"),
        }
    }
}
