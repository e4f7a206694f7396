//! The life of a node process started by another program (a benchmark, a test, `iopath up`):
//! serve the admin service, say `READY <nids> <admin address>` on standard output, and run until
//! standard input closes (the parent is gone), SIGTERM arrives, or an admin asks for a
//! shutdown — then let the admin service finish answering before returning.

use std::net::SocketAddr;
use std::time::Duration;

use tokio::io::AsyncReadExt;

use crate::{AdminError, NodeInfo, ParamTree, Shutdown};

/// Serves `tree` on `admin_addr`, announces the node, and waits for a reason to stop, which
/// it returns.
pub async fn serve_until_stopped(
    admin_addr: SocketAddr,
    tree: ParamTree,
    info: NodeInfo,
) -> Result<String, AdminError> {
    let shutdown = Shutdown::new();
    let nids = info.nids.join(",");
    let admin = crate::serve(admin_addr, tree, info, shutdown.clone()).await?;
    println!("READY {nids} {}", admin.local_addr());
    let mut stdin = tokio::io::stdin();
    let mut byte = [0u8; 1];
    let stdin_closed = async { while stdin.read(&mut byte).await.is_ok_and(|n| n > 0) {} };
    let sigterm = async {
        match tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            Ok(mut term) => {
                term.recv().await;
            }
            Err(_) => std::future::pending::<()>().await,
        }
    };
    // Whichever comes first: the parent going away, SIGTERM, or an admin's Shutdown.
    let reason = tokio::select! {
        _ = stdin_closed => "standard input closed".to_owned(),
        _ = sigterm => "SIGTERM".to_owned(),
        reason = shutdown.triggered() => reason,
    };
    shutdown.trigger(&reason);
    if tokio::time::timeout(Duration::from_secs(5), admin.join())
        .await
        .is_err()
    {
        tracing::warn!("admin service did not stop within 5 s");
    }
    Ok(reason)
}
