//! [`serve`]: the sampler, which reads every node's counters once per interval, and the HTTP
//! server the browser talks to: `/` (the page), `/view.json` (what is drawn),
//! `/state.json` (the latest sample). Both end when the handle is stopped.

use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use bytes::Bytes;
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::header::{CACHE_CONTROL, CONTENT_TYPE, HeaderValue};
use hyper::{Method, Request, Response, StatusCode};
use iopath_admin::http::HttpHandle;
use iopath_admin::{AdminError, Shutdown};
use tokio::task::{JoinHandle, JoinSet};
use tokio::time::Instant;

use crate::reading::Reading;
use crate::state::{NodeState, State};
use crate::view::{Source, View};

/// The page: markup, style and script in one file, served as is.
const PAGE: &str = include_str!("page.html");
/// The longest one node's reading may take before it counts as not read this time.
pub const READ_TIMEOUT: Duration = Duration::from_secs(2);
/// The most bytes of one node's `/metrics` text read (a router with many peers writes a
/// few hundred kilobytes).
pub const READ_BYTES_MAX: usize = 16 << 20;
/// The shortest interval between samples.
pub const INTERVAL_MIN: Duration = Duration::from_millis(100);

/// How many sampling intervals [`LiveHandle::end`] keeps serving the last state: a page
/// asks once per interval, so an open one reads it.
pub const ENDED_HOLD_INTERVALS: u32 = 2;

/// A running live view.
#[derive(Debug)]
pub struct LiveHandle {
    http: HttpHandle,
    sampler: JoinHandle<()>,
    shutdown: Shutdown,
    latest: Arc<Mutex<Arc<String>>>,
    last: Arc<tokio::sync::Mutex<Sampler>>,
    started: Instant,
    interval: Duration,
}

impl LiveHandle {
    /// Where the page is served.
    pub fn local_addr(&self) -> SocketAddr {
        self.http.local_addr()
    }

    /// The page's address, for a person to open.
    pub fn url(&self) -> String {
        format!("http://{}/", self.local_addr())
    }

    /// Ends the view with the run: takes a last sample, marked as ended for `reason` (`the
    /// benchmark finished`), serves it for [`ENDED_HOLD_INTERVALS`] intervals so that an open
    /// page draws it and says the run ended (the page then keeps it), and stops.
    pub async fn end(self, reason: &str) {
        // Aborted, the sampler drops its hold on the readings at its next await.
        self.sampler.abort();
        let state = self
            .last
            .lock()
            .await
            .sample(self.started, Some(reason.to_owned()))
            .await;
        *self.latest.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(state);
        tokio::time::sleep(self.interval * ENDED_HOLD_INTERVALS).await;
        self.stop().await;
    }

    /// Stops the sampler and the server.
    pub async fn stop(self) {
        self.shutdown.trigger("the live view stops");
        self.sampler.abort();
        let _ = self.sampler.await;
        self.http.join().await;
    }
}

/// Serves the live view of `view` on `addr` (port 0 picks one), reading every node's
/// counters every `view.interval_ms` (raised to [`INTERVAL_MIN`]). Returns once the address is
/// bound and the first sample is taken.
pub async fn serve(addr: SocketAddr, mut view: View) -> Result<LiveHandle, AdminError> {
    let interval = Duration::from_millis(view.interval_ms).max(INTERVAL_MIN);
    view.interval_ms = interval.as_millis() as u64;
    let view = Arc::new(view);
    let view_json: Arc<String> =
        Arc::new(serde_json::to_string(view.as_ref()).expect("a view serializes: plain data"));
    let started = Instant::now();
    let mut sampler = Sampler::new(Arc::clone(&view));
    let first = sampler.sample(started, None).await;
    let sampler = Arc::new(tokio::sync::Mutex::new(sampler));
    let latest = Arc::new(Mutex::new(Arc::new(first)));
    let shutdown = Shutdown::new();
    let handler = {
        let latest = Arc::clone(&latest);
        Arc::new(move |request: &Request<Incoming>| {
            let state = Arc::clone(&latest.lock().unwrap_or_else(PoisonError::into_inner));
            answer(request, &view_json, &state)
        })
    };
    let http = iopath_admin::http::serve(addr, "live view", handler, shutdown.clone()).await?;
    let task = {
        let latest = Arc::clone(&latest);
        let sampler = Arc::clone(&sampler);
        tokio::spawn(async move {
            let mut ticks = tokio::time::interval(interval);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            ticks.tick().await; // the first tick is now: the first sample is taken
            loop {
                ticks.tick().await;
                let state = sampler.lock().await.sample(started, None).await;
                *latest.lock().unwrap_or_else(PoisonError::into_inner) = Arc::new(state);
            }
        })
    };
    Ok(LiveHandle {
        http,
        sampler: task,
        shutdown,
        latest,
        last: sampler,
        started,
        interval,
    })
}

/// Reads every node, and keeps each one's last reading for the next sample's rates.
#[derive(Debug)]
struct Sampler {
    view: Arc<View>,
    seq: u64,
    last: Vec<Option<(Reading, Instant)>>,
}

impl Sampler {
    fn new(view: Arc<View>) -> Sampler {
        let last = view.nodes.iter().map(|_| None).collect();
        Sampler { view, seq: 0, last }
    }

    /// One sample of every node, read at once, as JSON; `ended` marks the run's last.
    async fn sample(&mut self, started: Instant, ended: Option<String>) -> String {
        let mut reads = JoinSet::new();
        for (index, node) in self.view.nodes.iter().enumerate() {
            let source = node.source.clone();
            reads.spawn(async move { (index, read(&source).await, Instant::now()) });
        }
        let mut readings: Vec<Option<(Result<Reading, String>, Instant)>> =
            self.view.nodes.iter().map(|_| None).collect();
        while let Some(done) = reads.join_next().await {
            if let Ok((index, reading, at)) = done {
                readings[index] = Some((reading, at));
            }
        }
        self.seq += 1;
        let mut state = State {
            seq: self.seq,
            at_ms: started.elapsed().as_millis() as u64,
            nodes: Vec::with_capacity(readings.len()),
            ended,
        };
        for (index, reading) in readings.into_iter().enumerate() {
            let node = &self.view.nodes[index];
            let node_state = match reading {
                Some((Ok(now), at)) => {
                    let before = self.last[index]
                        .as_ref()
                        .map(|(r, then)| (r, at.duration_since(*then).as_secs_f64()));
                    let node_state = NodeState::of(&node.name, &now, before);
                    self.last[index] = Some((now, at));
                    node_state
                }
                Some((Err(why), _)) => NodeState::unread(&node.name, Some(why)),
                None => NodeState::unread(&node.name, Some("its reader failed".into())),
            };
            state.nodes.push(node_state);
        }
        serde_json::to_string(&state).expect("a state serializes: plain data")
    }
}

/// One node's reading from `source`.
async fn read(source: &Source) -> Result<Reading, String> {
    let text = match source {
        Source::Unread(why) => return Err(why.clone()),
        Source::Registry(registry) => iopath_admin::metrics::render(registry)
            .map_err(|_| "a collector failed to encode".to_owned())?,
        Source::Scrape(addr) => {
            iopath_admin::metrics::fetch(*addr, READ_BYTES_MAX, READ_TIMEOUT).await?
        }
    };
    Reading::parse(&text)
}

/// The answer to one request.
fn answer(request: &Request<Incoming>, view: &str, state: &str) -> Response<Full<Bytes>> {
    let reply = |status: StatusCode, kind: &'static str, body: Bytes| {
        let mut response = Response::new(Full::new(body));
        *response.status_mut() = status;
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(kind));
        response
            .headers_mut()
            .insert(CACHE_CONTROL, HeaderValue::from_static("no-store"));
        response
    };
    let text = "text/plain; charset=utf-8";
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return reply(
            StatusCode::METHOD_NOT_ALLOWED,
            text,
            Bytes::from_static(b"the live view answers GET\n"),
        );
    }
    let json = "application/json";
    match request.uri().path() {
        "/" | "/index.html" => reply(
            StatusCode::OK,
            "text/html; charset=utf-8",
            Bytes::from_static(PAGE.as_bytes()),
        ),
        "/view.json" => reply(StatusCode::OK, json, Bytes::from(view.to_owned())),
        "/state.json" => reply(StatusCode::OK, json, Bytes::from(state.to_owned())),
        other => reply(
            StatusCode::NOT_FOUND,
            text,
            Bytes::from(format!(
                "{other}: not here (the live view serves /, /view.json and /state.json)\n"
            )),
        ),
    }
}
