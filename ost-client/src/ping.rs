//! Lustre's pinger: a connection reconnects every interval, so a client replays promptly after
//! a server restart even while nobody uses the connection, instead of being evicted for being
//! idle.

use std::sync::Weak;
use std::time::Duration;

use iopath_fabric::Nid;
use tracing::{info, warn};

use crate::client::OstClient;
use crate::import::LostWrite;

/// How often a client pings each storage server it is connected to (Lustre's pinger, every
/// `obd_timeout / 4` = 25 s against a 300 s recovery window; here 1 s against the storage
/// servers' 30 s window). A ping is a reconnect: if the server restarted, the client replays
/// what it kept at once, so an idle client does not hold every other client's recovery open
/// until its window runs out — or, evicted, make that window count every byte its startup
/// cut as lost.
pub const INTERVAL: Duration = Duration::from_secs(1);

/// After a ping that failed (the server is down, or its reply was lost), the next one goes
/// this soon, and each further failure doubles the wait up to the interval: a server killed
/// and started again in half a second is found within a fifth of one, not at the next full
/// interval. Its window closes when the last client has replayed, so every client's delay
/// is everyone's recovery time (the soaks: storage-server recoveries through fyods took
/// 1.8-2.3 s, most of it clients waiting for their next ping).
pub const RETRY_AFTER_FAILURE: Duration = Duration::from_millis(200);

/// The wait before the next ping, after `failures` failed pings in a row: the interval after
/// an answer, and after failures a short wait that doubles per failure, never past the
/// interval.
fn next_wait(interval: Duration, failures: u32) -> Duration {
    if failures == 0 {
        return interval;
    }
    RETRY_AFTER_FAILURE
        .saturating_mul(1 << (failures - 1).min(16))
        .min(interval)
}

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
    let mut failures = 0;
    loop {
        tokio::time::sleep(next_wait(interval, failures)).await;
        let Some(server) = connection.upgrade() else {
            return;
        };
        if server.is_disconnected() {
            // The server has forgotten this client: a reconnect would register it again.
            return;
        }
        // Nothing sent while a disconnect is under way (it may yet fail: then pings go on).
        let Some(outcome) = server.ping().await else {
            failures = 0;
            continue;
        };
        failures = if outcome.is_err() { failures + 1 } else { 0 };
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_failed_ping_is_followed_soon_and_then_less_and_less_often() {
        let second = Duration::from_secs(1);
        let waits: Vec<u128> = (0..7).map(|n| next_wait(second, n).as_millis()).collect();
        assert_eq!(waits, [1000, 200, 400, 800, 1000, 1000, 1000]);
        assert_eq!(next_wait(second, u32::MAX), second, "no overflow");
        assert_eq!(
            next_wait(Duration::from_millis(50), 1),
            Duration::from_millis(50),
            "never past a short interval"
        );
    }
}
