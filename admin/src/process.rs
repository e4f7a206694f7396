//! The life of a node process: serve the admin service (and `/metrics`, if asked), say `READY
//! <nids> <admin address> [<metrics address>]` on standard output, and run until SIGTERM or
//! SIGINT arrives, an admin asks for a shutdown, or — for a process whose parent watches over
//! it (a benchmark, a test, `iopath up`) — standard input closes; then let the admin service
//! finish answering before returning. Without a parent (`iopath launch`, a script, a
//! scheduler), standard input is not watched: the node runs as a daemon.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use prometheus_client::registry::Registry;

use tokio::io::AsyncReadExt;

use crate::{AdminError, NodeInfo, ParamTree, Secret, Shutdown};

/// Serves `tree` on `admin_addr` (its changes only for callers presenting `secret`) and, if
/// `metrics` names an address, the registry's `/metrics` there; announces the node, and waits
/// for a reason to stop, which it returns. With `watch_stdin`, the end of standard input is
/// one (the parent is gone).
pub async fn serve_until_stopped(
    admin_addr: SocketAddr,
    tree: ParamTree,
    info: NodeInfo,
    secret: Secret,
    metrics: Option<(SocketAddr, Arc<Registry>)>,
    watch_stdin: bool,
) -> Result<String, AdminError> {
    let shutdown = Shutdown::new();
    let nids = info.nids.join(",");
    let admin = crate::serve(admin_addr, tree, info, shutdown.clone(), secret).await?;
    let metrics = match metrics {
        Some((addr, registry)) => {
            Some(crate::metrics::serve(addr, registry, shutdown.clone()).await?)
        }
        None => None,
    };
    match &metrics {
        Some(m) => println!("READY {nids} {} {}", admin.local_addr(), m.local_addr()),
        None => println!("READY {nids} {}", admin.local_addr()),
    }
    let mut stdin = tokio::io::stdin();
    let mut byte = [0u8; 1];
    let stdin_closed = async {
        if watch_stdin {
            // Bounded by the input: each read returns data, or 0 at its end.
            while stdin.read(&mut byte).await.is_ok_and(|n| n > 0) {}
        } else {
            std::future::pending::<()>().await
        }
    };
    let signal = |kind: tokio::signal::unix::SignalKind| async move {
        match tokio::signal::unix::signal(kind) {
            Ok(mut signal) => {
                signal.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    // Whichever comes first: the parent going away, a signal, or an admin's Shutdown.
    let reason = tokio::select! {
        _ = stdin_closed => "standard input closed".to_owned(),
        _ = signal(tokio::signal::unix::SignalKind::terminate()) => "SIGTERM".to_owned(),
        _ = signal(tokio::signal::unix::SignalKind::interrupt()) => "SIGINT".to_owned(),
        reason = shutdown.triggered() => reason,
    };
    shutdown.trigger(&reason);
    if tokio::time::timeout(Duration::from_secs(5), admin.join())
        .await
        .is_err()
    {
        tracing::warn!("admin service did not stop within 5 s");
    }
    if let Some(metrics) = metrics {
        metrics.join().await;
    }
    Ok(reason)
}
