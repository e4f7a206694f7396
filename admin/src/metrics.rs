//! `/metrics`: a node's counters in the Prometheus text format, over plain HTTP/1.1 on an
//! address of its own (the admin service's port speaks gRPC, which is HTTP/2 only).
//!
//! Nothing is counted here. Each component registers a `prometheus_client` [`Collector`]
//! that reads its own counters and snapshots when a scrape comes, so serving `/metrics`
//! adds no work to the I/O path; [`counters`], [`gauges`] and [`histograms`] write one metric
//! family each, with Prometheus's names (`iopath_` prefix, base units, `_total` added to
//! counters by the encoder).
//!
//! The server is bounded as everything else is: at most [`CONNECTIONS_MAX`] connections at
//! once (more wait in the listen queue), one request per connection, a request head of at
//! most [`REQUEST_HEAD_MAX_BYTES`] read within [`REQUEST_HEAD_TIMEOUT`], the whole exchange
//! within [`CONNECTION_TIMEOUT`] (a scraper that never reads its answer is dropped), and only `GET
//! /metrics` answered (404 otherwise, 405 for another method).
//!
//! [`Collector`]: prometheus_client::collector::Collector

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use hyper_util::rt::{TokioIo, TokioTimer};
use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeLabelSet, EncodeMetric,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;
use prometheus_client::registry::Registry;
use tokio::sync::Semaphore;
use tokio::task::{JoinHandle, JoinSet};

use crate::{AdminError, Shutdown};

/// The most scrapes served at once.
pub const CONNECTIONS_MAX: usize = 16;
/// The most bytes of a request's line and headers.
pub const REQUEST_HEAD_MAX_BYTES: usize = 8 * 1024;
/// How long a client may take to send its request's head.
pub const REQUEST_HEAD_TIMEOUT: Duration = Duration::from_secs(10);
/// Longest a connection may take, request and answer together.
pub const CONNECTION_TIMEOUT: Duration = Duration::from_secs(30);
/// The one path answered.
pub const METRICS_PATH: &str = "/metrics";

/// Labels of one sample: `(name, value)` pairs.
pub type Labels = Vec<(&'static str, String)>;

/// Writes counter family `name` (without `_total`: the encoder adds it) with one sample per
/// label set.
pub fn counters<L: EncodeLabelSet, V: EncodeCounterValue + std::fmt::Debug + Send + Sync>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, V)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in samples {
        ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Writes gauge family `name` with one sample per label set.
pub fn gauges<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, f64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in samples {
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// One histogram sample: its sum, its count, and its cumulative buckets `(upper bound,
/// count at or below it)` without `+Inf`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSample {
    /// The sum of the values.
    pub sum: f64,
    /// How many values.
    pub count: u64,
    /// Cumulative buckets, by upper bound.
    pub buckets: Vec<(f64, u64)>,
}

/// Writes histogram family `name` with one sample per label set.
pub fn histograms<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, HistogramSample)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, sample) in samples {
        // The encoder takes each bucket's own count and accumulates them itself; the last
        // bucket it writes must be +Inf.
        let mut buckets = Vec::with_capacity(sample.buckets.len() + 1);
        let mut below = 0;
        for (bound, cumulative) in sample.buckets {
            buckets.push((bound, cumulative.saturating_sub(below)));
            below = below.max(cumulative);
        }
        buckets.push((f64::INFINITY, sample.count.saturating_sub(below)));
        family.encode_family(&labels)?.encode_histogram::<Labels>(
            sample.sum,
            sample.count,
            &buckets,
            None,
        )?;
    }
    Ok(())
}

/// The registry's text, as a scrape gets it.
pub fn render(registry: &Registry) -> Result<String, std::fmt::Error> {
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, registry)?;
    Ok(text)
}

/// A running `/metrics` server: where it listens, and its task.
#[derive(Debug)]
pub struct MetricsHandle {
    local_addr: SocketAddr,
    task: JoinHandle<()>,
}

impl MetricsHandle {
    /// The address it listens on (the real port when port 0 was asked for).
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Waits for the server to end (after the shutdown signal fires).
    pub async fn join(self) {
        let _ = self.task.await;
    }
}

/// Binds `addr` (port 0 picks a free port) and serves `registry` at `GET /metrics` on a new
/// task until `shutdown` fires; then open scrapes are dropped. Returns once bound.
pub async fn serve(
    addr: SocketAddr,
    registry: Arc<Registry>,
    shutdown: Shutdown,
) -> Result<MetricsHandle, AdminError> {
    let (listener, local_addr) = crate::service::bind(addr).await?;
    tracing::info!(%local_addr, "metrics listening");
    let task = tokio::spawn(async move {
        let permits = Arc::new(Semaphore::new(CONNECTIONS_MAX));
        let mut connections = JoinSet::new();
        loop {
            // Back-pressure: a connection is accepted only once a permit is free, so at most
            // CONNECTIONS_MAX are served and the rest wait in the kernel's listen queue.
            let permit = tokio::select! {
                reason = shutdown.triggered() => {
                    tracing::info!(%local_addr, %reason, "metrics stopping");
                    break;
                }
                permit = Arc::clone(&permits).acquire_owned() => match permit {
                    Ok(permit) => permit,
                    Err(_) => break, // never closed; the loop is the only owner
                },
            };
            let stream = tokio::select! {
                reason = shutdown.triggered() => {
                    tracing::info!(%local_addr, %reason, "metrics stopping");
                    break;
                }
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    Err(error) => {
                        tracing::warn!(%local_addr, %error, "metrics accept failed");
                        continue;
                    }
                },
            };
            // Reap finished connections so the set stays as small as the permits.
            while connections.try_join_next().is_some() {}
            let registry = Arc::clone(&registry);
            connections.spawn(async move {
                let _permit = permit;
                let service = hyper::service::service_fn(move |request| {
                    let registry = Arc::clone(&registry);
                    async move { Ok::<_, Infallible>(answer(&request, &registry)) }
                });
                let serving = hyper::server::conn::http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(REQUEST_HEAD_TIMEOUT)
                    .max_buf_size(REQUEST_HEAD_MAX_BYTES)
                    .keep_alive(false)
                    .serve_connection(TokioIo::new(stream), service);
                // A scraper that asks and never reads the answer gives its permit back.
                match tokio::time::timeout(CONNECTION_TIMEOUT, serving).await {
                    Ok(Ok(())) => {}
                    Ok(Err(error)) => tracing::debug!(%error, "metrics connection ended badly"),
                    Err(_) => tracing::debug!("metrics connection took too long; dropped"),
                }
            });
        }
        // Dropping the set aborts scrapes still being answered.
        connections.shutdown().await;
    });
    Ok(MetricsHandle { local_addr, task })
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
    use prometheus_client::collector::Collector;
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
