//! Following one request through the stack: a trace id that every frame it causes carries,
//! and a bounded log of what each node did with those frames.
//!
//! A request is traced by running it inside [`traced`]. The id lives in a task-local while
//! the request's code runs; every frame the node sends from that task takes it into its header
//! (the four bytes the header kept as padding), and every frame sent in answer — a reply, a
//! GET's data, a chunk's ACK — copies it from the frame it answers. A server handles a traced
//! request inside the same task-local, so the RPCs *it* sends on the request's behalf (a fyod's
//! to the storage servers) and the bulk it pulls carry the id too. Nothing is traced that was
//! not asked for: an untraced frame costs one branch.
//!
//! Each node records what it did with traced frames in its [`TraceLog`]: the fabric records
//! sends (with the peer and interface credits the message saw, negative where it queued) and
//! arrivals, router buffers taken, requests handled and replied to, chunks verified; the
//! layers above record what only they know (a journal record and its transno, a commit, a
//! client keeping a request for replay). Events carry wall-clock time, so the logs of nodes in
//! different processes on one host interleave correctly. The log keeps the last
//! [`TRACE_EVENTS_MAX`] events and [`TRACE_BYTES_MAX`] of their text — a peer can mark every
//! frame it sends as traced, so the log is bounded whatever it sends, and `trace.events` on the
//! admin tree, which reads it as JSON Lines, always fits one admin reply.

use std::collections::VecDeque;
use std::future::Future;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{SystemTime, UNIX_EPOCH};

use serde::{Deserialize, Serialize};

use crate::frame::{Header, Kind};
use crate::nid::Nid;

/// Events a node keeps; older ones are dropped first (and counted).
pub const TRACE_EVENTS_MAX: usize = 8192;
/// Bytes of event text a node keeps (well inside an admin reply's 4 MiB).
pub const TRACE_BYTES_MAX: usize = 2 << 20;
/// The longest detail kept; a longer one is cut, marked with `…`.
pub const DETAIL_MAX_BYTES: usize = 2048;

tokio::task_local! {
    static CURRENT: Option<TraceId>;
}

/// A traced request's id: never zero (zero in a header means "not traced").
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct TraceId(pub u32);

impl TraceId {
    /// A fresh id: the clock's low bits mixed with a counter, so two tracers in different
    /// processes are unlikely to pick the same one.
    pub fn fresh() -> TraceId {
        static NEXT: AtomicU32 = AtomicU32::new(1);
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let mixed = nanos.rotate_left(13) ^ NEXT.fetch_add(0x9E37_79B9, Ordering::Relaxed);
        TraceId(mixed.max(1))
    }

    /// The id a header carries, if it is traced.
    pub fn of(header: &Header) -> Option<TraceId> {
        (header.trace != 0).then_some(TraceId(header.trace))
    }
}

impl std::fmt::Display for TraceId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{:08x}", self.0)
    }
}

/// Runs `work` traced as `id`: the frames it causes carry the id.
pub async fn traced<F: Future>(id: TraceId, work: F) -> F::Output {
    CURRENT.scope(Some(id), work).await
}

/// `work` in the running task's trace, if it has one: for work a traced task hands to a task
/// of its own (a task-local does not follow `spawn`).
pub fn inherit<F: Future>(work: F) -> impl Future<Output = F::Output> {
    within(current(), work)
}

/// `work` in trace `id`, or in none.
pub fn within<F: Future>(id: Option<TraceId>, work: F) -> impl Future<Output = F::Output> {
    CURRENT.scope(id, work)
}

/// The trace the running task belongs to, if any.
pub fn current() -> Option<TraceId> {
    CURRENT.try_with(|id| *id).ok().flatten()
}

/// Wall-clock nanoseconds since the Unix epoch: comparable across processes on one host.
pub fn now_ns() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// The name of a frame that both its sender and every node it reaches compute alike, so a
/// send and its arrivals pair up: kind, final source and target, portal, match bits, cookie
/// and offset.
pub fn frame_key(header: &Header) -> String {
    format!(
        "{}:{}>{}:p{}:m{}:c{}:o{}",
        kind_name(header.kind),
        header.source,
        header.target,
        header.portal,
        header.match_bits,
        header.cookie,
        header.offset
    )
}

/// A frame kind as LNet prints it.
pub fn kind_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Put => "PUT",
        Kind::Ack => "ACK",
        Kind::Get => "GET",
        Kind::Reply => "REPLY",
        Kind::Hello => "HELLO",
    }
}

/// One thing a node did for a traced request.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct TraceEvent {
    /// The trace it belongs to.
    pub trace: TraceId,
    /// Wall-clock nanoseconds since the Unix epoch.
    pub at_ns: u64,
    /// The node, by its first NID.
    pub node: String,
    /// Which layer: `lnet`, `router`, `rpc`, `bulk`, `client`, `osc`, `ost`, `journal`, `fyod`.
    pub layer: String,
    /// What happened, one word: `send`, `arrive`, `forward`, `handle`, `reply`, `verify`,
    /// `record`, `commit`, `keep`, `release`, ...
    pub what: String,
    /// The sentence a person reads.
    pub detail: String,
    /// For `send` and `arrive`: the frame, as [`frame_key`] names it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<String>,
    /// For `send`: the next hop; for `arrive`: the node it came from (its final source).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub peer: Option<String>,
    /// Credit counts as this node saw them, after taking its own (`peer`, `ni`, router
    /// buffer pools): negative by the senders queued ahead.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub credits: Vec<(String, i64)>,
    /// Nanoseconds it waited (for credits, a router buffer, a worker).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub waited_ns: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

/// What a layer records; the log adds the trace, the time and the node.
#[derive(Debug, Clone, Default)]
pub struct Step {
    /// See [`TraceEvent::layer`].
    pub layer: &'static str,
    /// See [`TraceEvent::what`].
    pub what: &'static str,
    /// See [`TraceEvent::detail`].
    pub detail: String,
    /// See [`TraceEvent::frame`].
    pub frame: Option<String>,
    /// See [`TraceEvent::peer`].
    pub peer: Option<Nid>,
    /// See [`TraceEvent::credits`].
    pub credits: Vec<(String, i64)>,
    /// See [`TraceEvent::waited_ns`].
    pub waited_ns: u64,
}

impl Step {
    /// A step with only its layer, word and sentence.
    pub fn new(layer: &'static str, what: &'static str, detail: impl Into<String>) -> Step {
        Step {
            layer,
            what,
            detail: detail.into(),
            ..Step::default()
        }
    }
}

/// A node's traced events, newest last, bounded.
#[derive(Debug)]
pub struct TraceLog {
    node: String,
    events: Mutex<Held>,
    dropped: AtomicU64,
}

impl TraceLog {
    /// An empty log for the node at `nid`.
    pub fn new(nid: Nid) -> TraceLog {
        TraceLog {
            node: nid.to_string(),
            events: Mutex::default(),
            dropped: AtomicU64::new(0),
        }
    }

    /// Records `step` for `trace`, now.
    pub fn record(&self, trace: TraceId, step: Step) {
        self.record_at(trace, now_ns(), step);
    }

    /// Records `step` for `trace` as having happened at `at_ns` ([`now_ns`]'s clock).
    pub fn record_at(&self, trace: TraceId, at_ns: u64, step: Step) {
        let event = TraceEvent {
            trace,
            at_ns,
            node: self.node.clone(),
            layer: step.layer.to_owned(),
            what: step.what.to_owned(),
            detail: cut(step.detail, DETAIL_MAX_BYTES),
            frame: step.frame,
            peer: step.peer.map(|p| p.to_string()),
            credits: step.credits,
            waited_ns: step.waited_ns,
        };
        let size = size_of(&event);
        let mut held = self.events.lock().unwrap_or_else(PoisonError::into_inner);
        while held.events.len() >= TRACE_EVENTS_MAX || held.bytes + size > TRACE_BYTES_MAX {
            let Some(oldest) = held.events.pop_front() else {
                break;
            };
            held.bytes -= size_of(&oldest);
            self.dropped.fetch_add(1, Ordering::Relaxed);
        }
        held.bytes += size;
        held.events.push_back(event);
    }

    /// Records `step` for the running task's trace, if it has one.
    pub fn record_current(&self, step: impl FnOnce() -> Step) {
        if let Some(trace) = current() {
            self.record(trace, step());
        }
    }

    /// The events of `trace` (every trace's with `None`), oldest first.
    pub fn events(&self, trace: Option<TraceId>) -> Vec<TraceEvent> {
        self.events
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .events
            .iter()
            .filter(|e| trace.is_none_or(|t| e.trace == t))
            .cloned()
            .collect()
    }

    /// Events dropped to keep the bound.
    pub fn dropped(&self) -> u64 {
        self.dropped.load(Ordering::Relaxed)
    }

    /// Forgets every event.
    pub fn clear(&self) {
        *self.events.lock().unwrap_or_else(PoisonError::into_inner) = Held::default();
    }

    /// The events as JSON Lines, oldest first.
    pub fn json_lines(&self) -> String {
        let mut out = String::new();
        for event in self.events(None) {
            if let Ok(line) = serde_json::to_string(&event) {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }
}

/// The events a log holds, and the bytes of their text.
#[derive(Debug, Default)]
struct Held {
    events: VecDeque<TraceEvent>,
    bytes: usize,
}

/// About what an event takes as JSON: its texts and a fixed allowance for the rest.
fn size_of(event: &TraceEvent) -> usize {
    const FIXED_BYTES: usize = 200;
    event.node.len()
        + event.layer.len()
        + event.what.len()
        + event.detail.len()
        + event.frame.as_ref().map_or(0, String::len)
        + event.peer.as_ref().map_or(0, String::len)
        + event
            .credits
            .iter()
            .map(|(k, _)| k.len() + 24)
            .sum::<usize>()
        + FIXED_BYTES
}

/// `text` cut to at most `max` bytes (on a character boundary), with `…` where it was cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max - '…'.len_utf8();
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
        text.push('…');
    }
    text
}

/// Parses `trace.events`' JSON Lines back into events, refusing a line that is not one.
pub fn parse_json_lines(text: &str) -> Result<Vec<TraceEvent>, String> {
    text.lines()
        .filter(|l| !l.trim().is_empty())
        .enumerate()
        .map(|(i, line)| {
            serde_json::from_str(line).map_err(|e| format!("trace event line {}: {e}", i + 1))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nid() -> Nid {
        "3@mem0".parse().unwrap()
    }

    #[tokio::test]
    async fn the_task_local_id_is_seen_inside_traced_only() {
        assert_eq!(current(), None);
        let id = TraceId(7);
        let seen = traced(id, async { current() }).await;
        assert_eq!(seen, Some(id));
        assert_eq!(current(), None);
        let spawned = traced(id, async {
            tokio::spawn(inherit(async { current() })).await
        })
        .await
        .unwrap();
        assert_eq!(
            spawned,
            Some(id),
            "inherit carries the id into a spawned task"
        );
    }

    #[tokio::test]
    async fn record_current_records_only_inside_a_trace() {
        let log = TraceLog::new(nid());
        log.record_current(|| Step::new("client", "send", "not traced"));
        traced(TraceId(9), async {
            log.record_current(|| Step::new("client", "send", "traced"));
        })
        .await;
        let events = log.events(None);
        assert_eq!(events.len(), 1);
        assert_eq!(events[0].detail, "traced");
        assert_eq!(events[0].trace, TraceId(9));
        assert_eq!(events[0].node, "3@mem0");
    }

    #[test]
    fn the_log_is_bounded_and_counts_what_it_dropped() {
        let log = TraceLog::new(nid());
        for i in 0..TRACE_EVENTS_MAX + 5 {
            log.record(TraceId(1), Step::new("lnet", "send", format!("{i}")));
        }
        let events = log.events(Some(TraceId(1)));
        assert_eq!(events.len(), TRACE_EVENTS_MAX);
        assert_eq!(events[0].detail, "5");
        assert_eq!(log.dropped(), 5);
    }

    #[test]
    fn the_log_is_bounded_in_bytes_and_a_long_detail_is_cut() {
        let log = TraceLog::new(nid());
        let long = "é".repeat(DETAIL_MAX_BYTES);
        log.record(TraceId(1), Step::new("fyod", "split", long));
        let kept = &log.events(None)[0].detail;
        assert!(kept.len() <= DETAIL_MAX_BYTES && kept.ends_with('…'));
        for _ in 0..TRACE_EVENTS_MAX {
            log.record(
                TraceId(1),
                Step::new("fyod", "split", "x".repeat(DETAIL_MAX_BYTES)),
            );
        }
        assert!(
            log.json_lines().len() <= TRACE_BYTES_MAX,
            "the admin reply stays bounded"
        );
        assert!(
            log.events(None).len() < TRACE_EVENTS_MAX,
            "bytes bound before the count"
        );
        assert_eq!(
            log.dropped() as usize + log.events(None).len(),
            TRACE_EVENTS_MAX + 1
        );
    }

    #[test]
    fn json_lines_round_trip_and_filter_by_trace() {
        let log = TraceLog::new(nid());
        let mut step = Step::new("lnet", "send", "PUT to 4@mem0");
        step.credits = vec![("peer".into(), -2), ("ni".into(), 100)];
        step.waited_ns = 1500;
        step.peer = Some("4@mem0".parse().unwrap());
        log.record(TraceId(1), step);
        log.record(TraceId(2), Step::new("ost", "handle", "write"));
        let parsed = parse_json_lines(&log.json_lines()).unwrap();
        assert_eq!(parsed, log.events(None));
        assert_eq!(parsed[0].credits[0], ("peer".to_string(), -2));
        assert_eq!(log.events(Some(TraceId(2))).len(), 1);
        assert!(
            parse_json_lines("{not json}\n")
                .unwrap_err()
                .contains("line 1")
        );
    }

    #[test]
    fn fresh_ids_are_never_zero_and_differ() {
        let a = TraceId::fresh();
        let b = TraceId::fresh();
        assert_ne!(a.0, 0);
        assert_ne!(a, b);
    }
}
