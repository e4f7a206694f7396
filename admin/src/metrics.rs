//! `/metrics`: a node's counters in the Prometheus text format, over plain HTTP/1.1 on an
//! address of its own (the admin service's port speaks gRPC, which is HTTP/2 only).
//!
//! Nothing is counted here. Each component registers a `prometheus_client` [`Collector`]
//! that reads its own counters and snapshots when a scrape comes, so serving `/metrics`
//! adds no work to the I/O path; [`counters`], [`gauges`] and [`histograms`]
//! (`iopath_lprocfs::families`, re-exported here) write one metric family each.
//!
//! [`fetch`] is the other side: one node's text, read by the live view and `bench monitoring`.
//!
//! The server is [`crate::http`]'s, bounded as everything else is; only `GET /metrics` is
//! answered (404 otherwise, 405 for another method).
//!
//! [`Collector`]: prometheus_client::collector::Collector

use std::net::SocketAddr;
use std::sync::Arc;

use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Full, Limited};
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HOST, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::TokioIo;
use prometheus_client::registry::Registry;

use crate::http::HttpHandle;
use crate::{AdminError, Shutdown};
pub use iopath_lprocfs::families::{HistogramSample, Labels, counters, gauges, histograms};
pub use iopath_lprocfs::scrape::render;

/// The one path answered.
pub const METRICS_PATH: &str = "/metrics";

/// Binds `addr` (port 0 picks a free port) and serves `registry` at `GET /metrics` on a new
/// task until `shutdown` fires; then open scrapes are dropped. Returns once bound.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    shutdown: Shutdown,
) -> Result<HttpHandle, AdminError> {
    crate::http::serve(
        addr,
        "metrics",
        Arc::new(move |request: &Request<Incoming>| answer(request, &registry)),
        shutdown,
    )
    .await
}

/// `GET /metrics` at `addr`: the text, at most `bytes_max` bytes of it and within `timeout`
/// (a longer or later answer is an error: the node is the peer here). What a reader of a
/// node's counters (the live view, `bench monitoring`) calls.
pub async fn fetch(
    addr: SocketAddr,
    bytes_max: usize,
    timeout: std::time::Duration,
) -> Result<String, String> {
    tokio::time::timeout(timeout, fetch_unbounded(addr, bytes_max))
        .await
        .map_err(|_| format!("http://{addr}/metrics took over {timeout:?}"))?
}

async fn fetch_unbounded(addr: SocketAddr, bytes_max: usize) -> Result<String, String> {
    let failed = |e: &dyn std::fmt::Display| format!("read http://{addr}/metrics: {e}");
    let stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| failed(&e))?;
    let (mut sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|e| failed(&e))?;
    let connection = tokio::spawn(connection);
    let request = Request::get(METRICS_PATH)
        .header(HOST, addr.to_string())
        .body(Empty::<Bytes>::new())
        .map_err(|e| failed(&e))?;
    let answer = async {
        let response = sender.send_request(request).await.map_err(|e| failed(&e))?;
        if !response.status().is_success() {
            return Err(failed(&response.status()));
        }
        let body = Limited::new(response.into_body(), bytes_max)
            .collect()
            .await
            .map_err(|e| failed(&e))?
            .to_bytes();
        String::from_utf8(Vec::from(body)).map_err(|e| failed(&e))
    }
    .await;
    connection.abort();
    answer
}

/// The answer to one request.
fn answer(request: &Request<Incoming>, registry: &Registry) -> Response<Full<bytes::Bytes>> {
    let reply = |status: StatusCode, body: String| {
        let mut response = Response::new(Full::new(bytes::Bytes::from(body)));
        *response.status_mut() = status;
        response
    };
    if request.uri().path() != METRICS_PATH {
        return reply(
            StatusCode::NOT_FOUND,
            format!("only {METRICS_PATH} is served\n"),
        );
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            format!("{METRICS_PATH} answers GET\n"),
        );
    }
    match render(registry) {
        Ok(text) => {
            let mut response = reply(StatusCode::OK, text);
            response.headers_mut().insert(
                CONTENT_TYPE,
                HeaderValue::from_static(
                    prometheus_client::encoding::prometheus_text::CONTENT_TYPE,
                ),
            );
            response
        }
        Err(_) => {
            tracing::error!("a metrics collector failed to encode");
            reply(
                StatusCode::INTERNAL_SERVER_ERROR,
                "a collector failed\n".into(),
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::http::REQUEST_HEAD_MAX_BYTES;
    use prometheus_client::collector::Collector;
    use prometheus_client::encoding::DescriptorEncoder;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[derive(Debug)]
    struct Fixed;

    impl Collector for Fixed {
        fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
            let labels = |op: &str| vec![("op", op.to_owned())];
            counters(
                &mut encoder,
                "iopath_test_requests",
                "Requests.",
                [(labels("read"), 3u64), (labels("write"), 5)],
            )?;
            gauges(
                &mut encoder,
                "iopath_test_credits",
                "Credits.",
                [(Labels::new(), -2.0)],
            )?;
            histograms(
                &mut encoder,
                "iopath_test_latency_seconds",
                "Latency.",
                [(
                    Labels::new(),
                    HistogramSample {
                        sum: 0.5,
                        count: 2,
                        buckets: vec![(0.1, 1), (1.0, 2)],
                    },
                )],
            )
        }
    }

    async fn get(addr: SocketAddr, request: &str) -> String {
        let mut stream = tokio::net::TcpStream::connect(addr).await.unwrap();
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut answer = String::new();
        stream.read_to_string(&mut answer).await.unwrap();
        answer
    }

    #[tokio::test]
    async fn a_scrape_gets_every_family_in_the_text_format_and_other_paths_get_404() {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(Fixed));
        let shutdown = Shutdown::new();
        let server = serve(
            "127.0.0.1:0".parse().unwrap(),
            Arc::new(registry),
            shutdown.clone(),
        )
        .await
        .unwrap();
        let addr = server.local_addr();
        let answer = get(addr, "GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 200 OK"), "{answer}");
        assert!(answer.contains("text/plain; version=0.0.4"), "{answer}");
        for line in [
            "# TYPE iopath_test_requests_total counter",
            "iopath_test_requests_total{op=\"write\"} 5",
            "iopath_test_credits -2.0",
            "iopath_test_latency_seconds_bucket{le=\"0.1\"} 1",
            "iopath_test_latency_seconds_bucket{le=\"1\"} 2",
            "iopath_test_latency_seconds_bucket{le=\"+Inf\"} 2",
            "iopath_test_latency_seconds_count 2",
        ] {
            assert!(answer.contains(line), "{line} missing from {answer}");
        }
        // Every scrape has the process's own families and the build.
        let build = format!(
            "iopath_build_info{{version=\"{}\"}} 1",
            env!("CARGO_PKG_VERSION")
        );
        for family in [
            "process_cpu_seconds_total ",
            "process_resident_memory_bytes ",
            "process_open_fds ",
            "process_start_time_seconds ",
            &build,
        ] {
            assert!(answer.contains(family), "{family} missing from {answer}");
        }
        let answer = get(addr, "GET /other HTTP/1.1\r\nHost: x\r\n\r\n").await;
        assert!(answer.starts_with("HTTP/1.1 404"), "{answer}");
        let answer = get(
            addr,
            "POST /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 0\r\n\r\n",
        )
        .await;
        assert!(answer.starts_with("HTTP/1.1 405"), "{answer}");
        // A request head past the bound is refused, not buffered.
        let huge = format!(
            "GET /metrics HTTP/1.1\r\nX: {}\r\n\r\n",
            "a".repeat(REQUEST_HEAD_MAX_BYTES * 2)
        );
        let answer = get(addr, &huge).await;
        assert!(answer.starts_with("HTTP/1.1 431"), "{answer}");
        shutdown.trigger("test over");
        server.join().await;
        assert!(
            tokio::net::TcpStream::connect(addr).await.is_err(),
            "stopped with the node"
        );
    }
}
