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

/// What a node process says on standard output once it serves, one line:
/// `READY <nid>[,<nid>...] <admin address> [<metrics address>]`. Printed here (its
/// `Display`), read by whoever started the process (its `FromStr`): `iopath up`, `iopath
/// launch` and the selftest's node processes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Ready {
    /// The node's NIDs, as text (`10@tcp0`), its primary first.
    pub nids: Vec<String>,
    /// Its admin service.
    pub admin: SocketAddr,
    /// Its `/metrics`, if it serves them.
    pub metrics: Option<SocketAddr>,
}

impl std::fmt::Display for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "READY {} {}", self.nids.join(","), self.admin)?;
        match self.metrics {
            Some(metrics) => write!(f, " {metrics}"),
            None => Ok(()),
        }
    }
}

impl std::str::FromStr for Ready {
    type Err = AdminError;

    /// Parses a READY line; the error says what was wrong with it.
    fn from_str(line: &str) -> Result<Ready, AdminError> {
        let bad = |why: String| AdminError::NotReady { why };
        let mut words = line.split_whitespace();
        let (Some("READY"), Some(nids), Some(admin)) = (words.next(), words.next(), words.next())
        else {
            return Err(bad(format!(
                "said {line:?} instead of READY <nids> <admin>"
            )));
        };
        let admin = admin
            .parse()
            .map_err(|_| bad(format!("announced a bad admin address in {line:?}")))?;
        let metrics = match words.next() {
            None => None,
            Some(word) => Some(
                word.parse()
                    .map_err(|_| bad(format!("announced a bad metrics address in {line:?}")))?,
            ),
        };
        if words.next().is_some() {
            return Err(bad(format!(
                "said more than READY <nids> <admin> [<metrics>]: {line:?}"
            )));
        }
        Ok(Ready {
            nids: nids.split(',').map(str::to_owned).collect(),
            admin,
            metrics,
        })
    }
}

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
    let nids = info.nids.clone();
    let admin = crate::serve(admin_addr, tree, info, shutdown.clone(), secret).await?;
    let metrics = match metrics {
        Some((addr, registry)) => {
            Some(crate::metrics::serve(addr, registry, shutdown.clone()).await?)
        }
        None => None,
    };
    let ready = Ready {
        nids,
        admin: admin.local_addr(),
        metrics: metrics.as_ref().map(|m| m.local_addr()),
    };
    println!("{ready}");
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_ready_line_reads_back_as_it_was_written_and_a_bad_one_says_why() {
        let ready = Ready {
            nids: vec!["10@tcp0".into(), "10@tcp1".into()],
            admin: "127.0.0.1:7000".parse().unwrap(),
            metrics: Some("127.0.0.1:7001".parse().unwrap()),
        };
        let line = ready.to_string();
        assert_eq!(line, "READY 10@tcp0,10@tcp1 127.0.0.1:7000 127.0.0.1:7001");
        assert_eq!(line.parse::<Ready>().unwrap(), ready);
        let plain: Ready = "READY 1@mem0 127.0.0.1:9".parse().unwrap();
        assert_eq!((plain.nids.len(), plain.metrics), (1, None));
        for (bad, why) in [
            ("HELLO 1@mem0 127.0.0.1:9", "instead of READY"),
            ("READY 1@mem0", "instead of READY"),
            ("READY 1@mem0 nowhere", "bad admin address"),
            ("READY 1@mem0 127.0.0.1:9 nowhere", "bad metrics address"),
            ("READY 1@mem0 127.0.0.1:9 127.0.0.1:10 more", "more than"),
        ] {
            let error = bad.parse::<Ready>().unwrap_err().to_string();
            assert!(error.contains(why), "{bad:?}: {error}");
        }
    }
}
