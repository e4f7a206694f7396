//! A small HTTP/1.1 server for what a browser or a scraper reads from a node or a stack:
//! `/metrics` ([`crate::metrics`]) and the live view's page. Each server answers through one
//! handler, a function from a request to its response, computed from state already at hand
//! (nothing here waits on the I/O path).
//!
//! Bounded as everything else is: at most [`CONNECTIONS_MAX`] connections at once (more wait
//! in the listen queue), one request per connection, a request head of at most
//! [`REQUEST_HEAD_MAX_BYTES`] read within [`REQUEST_HEAD_TIMEOUT`], the whole exchange within
//! [`CONNECTION_TIMEOUT`] (a client that never reads its answer is dropped).

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Incoming;
use hyper::{Request, Response};
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

use crate::{AdminError, Shutdown};

/// The most requests served at once.
pub const CONNECTIONS_MAX: usize = 16;
/// The most bytes of a request's line and headers.
pub const REQUEST_HEAD_MAX_BYTES: usize = 8 * 1024;
/// How long a client may take to send its request's head.
pub const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a connection may take, request and answer together.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);

/// What answers each request.
pub type Handler = Arc<dyn Fn(&Request<Incoming>) -> Response<Full<bytes::Bytes>> + Send + Sync>;

/// A running server: where it listens, and its task.
#[derive(Debug)]
pub struct HttpHandle {
    local_addr: SocketAddr,
    task: JoinHandle<()>,
}

impl HttpHandle {
    /// The address it listens on (the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Waits for the server to end (after the shutdown signal fires).
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

/// Binds `addr` (port 0 picks a free port) and answers every request with `handler` on a new
/// task until `shutdown` fires; then open requests are dropped. Returns once bound. `name`
/// says which server it is in the log.
pub async fn serve(
    addr: SocketAddr,
    name: &'static str,
    handler: Handler,
    shutdown: Shutdown,
) -> Result<HttpHandle, AdminError> {
    let (listener, local_addr) = crate::service::bind(addr).await?;
    tracing::info!(%local_addr, "{name} listening");
    let task = tokio::spawn(async move {
        let permits = Arc::new(Semaphore::new(CONNECTIONS_MAX));
        let mut connections = JoinSet::new();
        loop {
            // Back-pressure: a connection is accepted only once a permit is free, so at most
            // CONNECTIONS_MAX are served and the rest wait in the kernel's listen queue.
            let permit = tokio::select! {
                reason = shutdown.triggered() => {
                    tracing::info!(%local_addr, %reason, "{name} stopping");
                    break;
                }
                permit = Arc::clone(&permits).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break, // never closed; the loop is the only owner
                },
            };
            let stream = tokio::select! {
                reason = shutdown.triggered() => {
                    tracing::info!(%local_addr, %reason, "{name} stopping");
                    break;
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!(%local_addr, %error, "{name} accept failed");
                        continue;
                    }
                },
            };
            // Reap finished connections so the set stays as small as the permits.
            while connections.try_join_next().is_some() {}
            let handler = Arc::clone(&handler);
            connections.spawn(async move {
                let _permit = permit;
                let service = hyper::service::service_fn(move |request| {
                    let handler = Arc::clone(&handler);
                    async move { Ok::<_, Infallible>(handler(&request)) }
                });
                let serving = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(REQUEST_HEAD_TIMEOUT)
                    .max_buf_size(REQUEST_HEAD_MAX_BYTES)
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(stream), service);
                // A client that asks and never reads the answer gives its permit back.
                match tokio::time::timeout(CONNECTION_TIMEOUT, serving).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => tracing::debug!(%error, "{name} connection ended badly"),
                    Err(_) => tracing::debug!("{name} connection took too long; dropped"),
                }
            });
        }
        // Dropping the set aborts requests still being answered.
        connections.shutdown().await;
    });
    Ok(HttpHandle { local_addr, task })
}
