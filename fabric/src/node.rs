//! A fabric node: its interfaces, its regions, and the dispatch of every frame it receives —
//! LNet's part of a node. The RPC layer (`rpc`) and bulk transfers (`bulk`) sit on top of it.
//!
//! Received frames go by kind and portal (see [`crate::frame`]): requests to the handler the
//! RPC layer attached to their portal (`PortalHandler`), replies to the caller waiting on
//! their xid, GETs and bulk PUTs to the region table, REPLYs and ACKs to the transfer that
//! asked for them. Dispatch never waits: work that needs credits or a service is spawned, and
//! everything a peer can make the node hold is bounded by a [`Limits`] entry.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock, PoisonError, RwLock, Weak};
use std::time::Duration;

use bytes::Bytes;
use tokio::sync::{mpsc, oneshot};
use tracing::{debug, warn};

use crate::aligned::SizedPools;
use crate::checksum::ChecksumKind;
use crate::error::{FabricError, NO_SERVICE, encode_error_body};
use crate::fail::{FailPoints, Injected, Site};
use crate::fault::FaultHook;
use crate::frame::{
    BULK_PORTAL, FIRST_SERVICE_PORTAL, FLAG_CRC32C, Header, Kind, Message, PING_PORTAL,
    REPLY_PORTAL, status,
};
use crate::health::Checked;
use crate::landing::{LANDING_POOL_KEPT_BYTES_MAX, LANDING_POOLED_MAX_BYTES, Lender, Place};
use crate::limits::Limits;
use crate::link::LinkModel;
use crate::lnd::mem::MemNetwork;
use crate::lnd::tcp::{BoundTcp, TcpLnd, TcpSettings};
use crate::lnd::tcp::{POOLED_PAYLOAD_MIN_BYTES, RECEIVE_POOL_KEPT_BYTES_MAX};
use crate::lnd::{Admit, Deliver, Grant, Hold, Lnd};
use crate::ni::{Ni, NiCredits, SendCredits, WireModel};
use crate::nid::{NID_WIRE_BYTES, NetId, Nid};
use crate::region::Regions;
use crate::reply_cache::ReplyCache;
use crate::router::{RouterBuffers, RouterConfig, SMALL_BUFFER_BYTES};
use crate::routing::{RouteSpec, RouteTable};
use crate::rpc_stats::RpcStats;
use crate::torus::TorusNetwork;
use crate::trace::{self, Step, TraceId, TraceLog};

/// One interface to bring up.
#[derive(Debug, Clone)]
pub enum Interface {
    /// A node on an in-memory network.
    Mem {
        /// Its NID (`n@memN`).
        nid: Nid,
        /// The network, shared by every node on it.
        network: Arc<MemNetwork>,
    },
    /// A node on a TCP network; port 0 picks a free port.
    Tcp {
        /// Its NID (`ip:port@tcpN`).
        nid: Nid,
    },
}

/// How to start a node.
#[derive(Debug, Clone, Default)]
pub struct NodeConfig {
    /// Its interfaces; the first gives the node's primary NID.
    pub interfaces: Vec<Interface>,
    /// Its limits.
    pub limits: Limits,
    /// A fault hook on everything it sends (tests).
    pub fault: Option<Arc<dyn FaultHook>>,
    /// Routes to networks the node is not on.
    pub routes: Vec<RouteSpec>,
    /// Forward messages between its networks, with these buffers (the router role).
    pub router: Option<RouterConfig>,
    /// Modeled links, by network: each interface on one of these networks sends over a wire
    /// of that model (see [`crate::link`]).
    pub links: Vec<(NetId, LinkModel)>,
    /// Modeled tori, by network: an interface on one of these crosses it hop by hop (see
    /// [`crate::torus`]), whatever `links` says for the network.
    pub tori: Vec<(NetId, TorusNetwork)>,
}

/// What takes the requests (PUTs) that arrive on one service portal. The RPC layer attaches one
/// per service (`Node::register_service`, in `rpc/server.rs`), so the node hands requests on
/// without knowing what a service is — as LNet hands a PUT to whatever ptlrpc attached to its
/// portal.
pub(crate) trait PortalHandler: Send + Sync + 'static {
    /// Takes one request that arrived for the portal. Must not wait: work is spawned.
    fn on_request(&self, node: &NodeInner, message: Message);
}

/// Node-wide counters.
#[derive(Debug, Default)]
pub struct NodeCounters {
    /// Bulk chunks whose checksum did not match on arrival (each was asked for again).
    pub checksum_mismatches: AtomicU64,
    /// RPCs sent again after a timeout or failed send.
    pub rpc_resends: AtomicU64,
    /// Bulk chunks (or whole pulls) asked for again: after a checksum mismatch, a timeout or
    /// BUSY — the bulk resends a transfer survived.
    pub bulk_resends: AtomicU64,
    /// RPC requests executed by services.
    pub requests_executed: AtomicU64,
    /// Resent requests answered from the saved reply, without executing again.
    pub replies_reconstructed: AtomicU64,
    /// Requests answered BUSY.
    pub requests_busy: AtomicU64,
    /// Early replies sent: resends of requests still executing, answered "in progress".
    pub early_replies: AtomicU64,
    /// Frames that arrived with nothing waiting for them (late replies, stale chunks).
    pub unexpected: AtomicU64,
    /// The most answers ever being sent on behalf of peers at once (bounded by
    /// `Limits::detached_sends_max`).
    pub answers_in_flight_peak: AtomicU64,
    /// Answers dropped because `Limits::detached_sends_max` were being sent already (the
    /// peer asks again, as after a loss on the wire).
    pub answers_dropped: AtomicU64,
    /// Messages forwarded by this node as a router.
    pub forwarded: AtomicU64,
    /// Their payload bytes.
    pub forwarded_bytes: AtomicU64,
    /// Of the messages forwarded, those handed on by the task that read them (small,
    /// credits free).
    pub forwarded_inline: AtomicU64,
    /// Forwarded bulk chunks whose checksum did not match their bytes (counted here, caught
    /// again by the receiver).
    pub router_checksum_mismatches: AtomicU64,
    /// Bulk bytes pulled by this node.
    pub bulk_get_bytes: AtomicU64,
    /// Bulk bytes pushed by this node.
    pub bulk_put_bytes: AtomicU64,
    /// Bytes of multi-chunk pulls that the puller copied into their landing: chunks that came
    /// as payloads of their own instead of straight into place (a REPLY that arrived while
    /// another answer to the same chunk was being received). The LNDs count the rest.
    pub bulk_copied_bytes: AtomicU64,
}

/// A fabric node. Cheap to clone; every clone is the same node.
#[derive(Clone)]
pub struct Node {
    pub(crate) inner: Arc<NodeInner>,
}

impl fmt::Debug for Node {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Node")
            .field("nid", &self.inner.nid)
            .finish()
    }
}

pub(crate) struct NodeInner {
    pub(crate) nid: Nid,
    pub(crate) limits: Limits,
    nis: OnceLock<Vec<Arc<Ni>>>,
    pub(crate) regions: Arc<Regions>,
    /// Bulk transfers in progress, by cookie: where their REPLYs and ACKs go.
    transfers: Mutex<HashMap<u64, TransferEntry>>,
    /// Where multi-chunk pulls land: page-aligned buffers, by size class.
    pub(crate) landing_pools: SizedPools,
    pub(crate) next_cookie: AtomicU64,
    /// Requests waiting for their reply (RPCs and pings), by xid (ordered: the oldest is sent
    /// with every RPC request).
    pub(crate) pending: Mutex<BTreeMap<u64, oneshot::Sender<Message>>>,
    /// The xids of RPC calls in progress, from the allocation of each xid to the call's end
    /// (replies, BUSY retries and resends included): the oldest to a peer is what every
    /// request to that peer carries as the oldest xid its client still waits on, and it never
    /// passes a call still going.
    /// Each call's peer, and how to tell it to send again now ([`Node::resend_calls_to`]).
    pub(crate) calls: Mutex<BTreeMap<u64, CallInProgress>>,
    pub(crate) next_xid: AtomicU64,
    /// What takes the requests on each service portal.
    portals: RwLock<HashMap<u32, Arc<dyn PortalHandler>>>,
    /// Requests executed and executing, for execute-once. Node-wide, as its bounds are
    /// (`Limits::requests_active_max` and the saved replies); the RPC server admits every
    /// request through it.
    pub(crate) replies: Mutex<ReplyCache>,
    /// Woken whenever an executing request ends: requests that wait for one their client gave
    /// up on ([`crate::reply_cache::Admission::ExecuteAfterAbandoned`]) look again.
    pub(crate) request_ended: tokio::sync::Notify,
    /// Replies, ACKs and chunks being sent on behalf of peers right now (see `send_detached`).
    pub(crate) detached_sends: Arc<AtomicU32>,
    pub(crate) counters: NodeCounters,
    /// What its services executed, by portal and opcode.
    pub(crate) rpc_stats: RpcStats,
    pub(crate) routes: Mutex<RouteTable>,
    pub(crate) router: Option<RouterBuffers>,
    /// When the node started: the zero of the route table's clock.
    pub(crate) epoch: tokio::time::Instant,
    pub(crate) stopped: AtomicBool,
    /// What it did with traced frames (see [`crate::trace`]).
    pub(crate) trace: TraceLog,
    /// Its fail points and network fault rules, armed at run time (see [`crate::fail`]).
    pub(crate) fail: Arc<FailPoints>,
    /// A router's ping reply body and when it was made: the interfaces it has lost change
    /// seldom, and every node routing through it asks each ping interval.
    ping_body: Mutex<Option<(tokio::time::Instant, Bytes)>>,
    /// This start of the node, as its ping replies name it: a peer that finds it changed
    /// knows the node restarted (see [`crate::restarts`]).
    pub(crate) incarnation: u64,
    /// The peers this node watches for restarts, each with the count of restarts seen.
    pub(crate) restart_watches: Mutex<HashMap<Nid, tokio::sync::watch::Receiver<u64>>>,
    pub(crate) me: Weak<NodeInner>,
}

impl Node {
    /// Brings up a node's interfaces and starts receiving.
    pub async fn start(config: NodeConfig) -> Result<Node, FabricError> {
        let first = config
            .interfaces
            .first()
            .ok_or_else(|| FabricError::BadNid {
                text: String::new(),
                why: "a node needs at least one interface".into(),
            })?;
        // Bind TCP listeners first, so port 0 becomes a real port in the node's NIDs.
        let mut bound = Vec::new();
        for interface in &config.interfaces {
            bound.push(match interface {
                Interface::Tcp { nid } => Some(BoundTcp::bind(*nid).await?),
                Interface::Mem { .. } => None,
            });
        }
        let nid = match (first, &bound[0]) {
            (_, Some(tcp)) => tcp.nid(),
            (Interface::Mem { nid, .. }, None) | (Interface::Tcp { nid }, None) => *nid,
        };
        let limits = config.limits.clone();
        let fail = FailPoints::new();
        // Xids begin at this start's clock, and so does the incarnation a ping names.
        let incarnation = initial_xid();
        let inner = Arc::new_cyclic(|me| NodeInner {
            nid,
            regions: Regions::new(nid, &limits),
            transfers: Mutex::default(),
            landing_pools: SizedPools::new(
                limits.bulk_chunk_bytes as usize,
                LANDING_POOLED_MAX_BYTES,
                LANDING_POOL_KEPT_BYTES_MAX,
            ),
            next_cookie: AtomicU64::new(1),
            pending: Mutex::default(),
            calls: Mutex::default(),
            next_xid: AtomicU64::new(incarnation),
            portals: RwLock::default(),
            replies: Mutex::new(ReplyCache::new(
                limits.replies_saved_per_client_max as usize,
                limits.reply_clients_max as usize,
                limits.requests_active_max,
            )),
            request_ended: tokio::sync::Notify::new(),
            detached_sends: Arc::default(),
            counters: NodeCounters::default(),
            rpc_stats: RpcStats::default(),
            routes: Mutex::new(RouteTable::new()),
            router: config
                .router
                .map(|c| RouterBuffers::new(c, limits.frame_payload_max_bytes)),
            epoch: tokio::time::Instant::now(),
            stopped: AtomicBool::new(false),
            trace: TraceLog::new(nid),
            fail: Arc::clone(&fail),
            ping_body: Mutex::new(None),
            incarnation,
            restart_watches: Mutex::default(),
            limits,
            nis: OnceLock::new(),
            me: me.clone(),
        });
        let credits = NiCredits {
            credits_max: inner.limits.ni_credits,
            peer_credits_max: inner.limits.peer_credits,
            peers_max: inner.limits.peers_max as usize,
        };
        let deliver: Weak<dyn Deliver> = Arc::downgrade(&inner) as Weak<dyn Deliver>;
        // One pool for all the node's TCP interfaces: it only ever holds as many buffers as
        // were in use at once, and what is in use is bounded by the credits that let it in.
        let receive_pool = Arc::new(SizedPools::new(
            POOLED_PAYLOAD_MIN_BYTES,
            inner.limits.frame_payload_max_bytes as usize,
            RECEIVE_POOL_KEPT_BYTES_MAX,
        ));
        let mut nis = Vec::new();
        for (interface, bound) in config.interfaces.iter().zip(bound) {
            let (nid, lnd): (Nid, Arc<dyn Lnd>) = match (interface, bound) {
                (Interface::Mem { nid, network }, _) => {
                    (*nid, Arc::new(network.attach(*nid, deliver.clone())?))
                }
                (Interface::Tcp { .. }, Some(bound)) => {
                    let settings = TcpSettings {
                        frame_payload_max_bytes: inner.limits.frame_payload_max_bytes,
                        peer_queue_max: inner.limits.peer_credits as usize,
                        connections_max: inner.limits.connections_max as usize,
                    };
                    let pool = Arc::clone(&receive_pool);
                    (
                        bound.nid(),
                        TcpLnd::start(bound, settings, deliver.clone(), pool),
                    )
                }
                (Interface::Tcp { .. }, None) => {
                    unreachable!("every TCP interface was bound above")
                }
            };
            if nis.iter().any(|ni: &Arc<Ni>| ni.nid().net == nid.net) {
                return Err(FabricError::BadNid {
                    text: nid.to_string(),
                    why: "a node has one interface per network".into(),
                });
            }
            let wire = match config.tori.iter().find(|(net, _)| *net == nid.net) {
                Some((_, torus)) => Some(WireModel::Torus(torus.clone())),
                None => config
                    .links
                    .iter()
                    .find(|(net, _)| *net == nid.net)
                    .map(|(_, model)| WireModel::Link(*model)),
            };
            nis.push(Arc::new(Ni::new(
                nid,
                lnd,
                credits,
                config.fault.clone(),
                Arc::clone(&fail),
                wire,
            )));
        }
        let _ = inner.nis.set(nis);
        let node = Node { inner };
        for spec in config.routes {
            node.add_route(spec)?;
        }
        tokio::spawn(crate::health::run(
            Arc::downgrade(&node.inner),
            node.inner.limits.router_ping_interval,
            node.inner.limits.router_dead_timeout,
        ));
        Ok(node)
    }

    /// Adds a route to a network this node is not on; the gateway must be on one it is on.
    pub fn add_route(&self, spec: RouteSpec) -> Result<(), FabricError> {
        if self.inner.nis().iter().any(|ni| ni.nid().net == spec.net) {
            return Err(FabricError::BadRoute {
                why: format!("{spec}: this node is on {} itself", spec.net),
            });
        }
        if !self
            .inner
            .nis()
            .iter()
            .any(|ni| ni.nid().net == spec.gateway.net)
        {
            return Err(FabricError::BadRoute {
                why: format!("{spec}: the gateway must be on one of this node's networks"),
            });
        }
        self.inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .add(spec)
    }

    /// Removes a route; false if there was none.
    pub fn remove_route(&self, net: NetId, gateway: Nid) -> bool {
        self.inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(net, gateway)
    }

    /// The routes with their gateways' liveness.
    pub fn routes(&self) -> Vec<(RouteSpec, bool)> {
        self.inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .routes()
    }

    /// Messages routed through each gateway so far.
    pub fn messages_per_gateway(&self) -> Vec<(Nid, u64)> {
        let routes = self
            .inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        routes
            .gateways()
            .map(|(nid, g)| (*nid, g.messages))
            .collect()
    }

    /// Bytes sent through any gateway and not yet completed: zero once every routed send has
    /// left. While a gateway has bytes outstanding the next message goes to another (see
    /// [`RouteTable::choose`]), so turns are strictly round robin only between quiet sends.
    pub fn bytes_outstanding_on_gateways(&self) -> u64 {
        let routes = self
            .inner
            .routes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        routes.gateways().map(|(_, g)| g.outstanding_bytes).sum()
    }

    /// Its fail points and network fault rules: where an operator's `fail_loc` lands, and
    /// what each site on this node's path asks as it passes.
    pub fn fail_points(&self) -> &Arc<FailPoints> {
        &self.inner.fail
    }

    /// What this node did with traced frames, and where the layers above record theirs.
    pub fn trace_log(&self) -> &TraceLog {
        &self.inner.trace
    }

    /// The router's buffers, if this node is a router.
    pub fn router_buffers(&self) -> Option<&RouterBuffers> {
        self.inner.router.as_ref()
    }

    /// The node's primary NID (its first interface).
    pub fn nid(&self) -> Nid {
        self.inner.nid
    }

    /// The NIDs of all its interfaces.
    pub fn nids(&self) -> Vec<Nid> {
        self.inner.nis().iter().map(|ni| ni.nid()).collect()
    }

    /// Its interfaces, for views and tests.
    pub fn interfaces(&self) -> &[Arc<Ni>] {
        self.inner.nis()
    }

    /// Its limits.
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// Its region table: register sources and sinks here.
    pub fn regions(&self) -> &Arc<Regions> {
        &self.inner.regions
    }

    /// Its counters.
    pub fn counters(&self) -> &NodeCounters {
        &self.inner.counters
    }

    /// RPCs waiting for replies right now.
    pub fn rpcs_pending(&self) -> usize {
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether [`Node::shutdown`] has run: a task working for the node should end.
    pub fn is_shut_down(&self) -> bool {
        self.inner.stopped.load(Ordering::Relaxed)
    }

    /// Stops every interface. In-flight sends fail; their callers see errors.
    pub fn shutdown(&self) {
        self.inner.stopped.store(true, Ordering::Relaxed);
        for ni in self.inner.nis() {
            ni.shutdown();
        }
        self.inner
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        // Each transfer dropped wakes the task waiting on it: in cookie order, so the order
        // they go on in is the order they began, whatever the table's hashing (a seeded
        // simulation replays the same run in another process).
        let mut transfers: Vec<(u64, TransferEntry)> = self
            .inner
            .transfers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .drain()
            .collect();
        transfers.sort_unstable_by_key(|(cookie, _)| *cookie);
        for transfer in transfers {
            drop(transfer);
        }
    }
}

/// Start xids from the clock, as ptlrpc does, so a restarted client does not reuse the xids of
/// its previous life while a server still holds their saved replies.
fn initial_xid() -> u64 {
    let micros = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_micros() as u64)
        .unwrap_or(1);
    micros.max(1)
}

/// A routed message's bytes, outstanding on its gateway (LNet's `txqnob`) until this is
/// dropped: when the send completes or fails, or when whoever sent it gave up waiting.
pub(crate) struct Outstanding {
    node: Weak<NodeInner>,
    gateway: Nid,
    bytes: u64,
}

impl Drop for Outstanding {
    fn drop(&mut self) {
        if let Some(node) = self.node.upgrade() {
            node.routes
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .completed(self.gateway, self.bytes);
        }
    }
}

impl NodeInner {
    pub(crate) fn nis(&self) -> &[Arc<Ni>] {
        self.nis.get().map(Vec::as_slice).unwrap_or(&[])
    }

    pub(crate) fn node(&self) -> Option<Node> {
        self.me.upgrade().map(|inner| Node { inner })
    }

    /// This node's interface on network `net`, if it has one.
    fn ni_on(&self, net: NetId) -> Option<&Arc<Ni>> {
        self.nis().iter().find(|ni| ni.nid().net == net)
    }

    /// Whether `nid` is one of this node's own.
    pub(crate) fn is_local(&self, nid: &Nid) -> bool {
        self.nis().iter().any(|ni| ni.nid() == *nid)
    }

    /// The interface and next hop for `target`: directly on a shared network, else through the
    /// gateway the routing table chooses (best alive class, then fewest bytes outstanding, then
    /// least recently used). A routed message of `bytes` counts as outstanding on its gateway
    /// for as long as the returned [`Outstanding`] lives.
    pub(crate) fn route_to(
        &self,
        target: Nid,
        bytes: u64,
    ) -> Result<(Arc<Ni>, Nid, Option<Outstanding>), FabricError> {
        if let Some(ni) = self.ni_on(target.net) {
            return Ok((Arc::clone(ni), target, None));
        }
        let mut routes = self.routes.lock().unwrap_or_else(PoisonError::into_inner);
        let Some(gateway) = routes.choose(target.net, bytes) else {
            let why = if routes.knows(target.net) {
                format!("every route to {} is down", target.net)
            } else {
                format!(
                    "this node has no interface on {} and no route to it",
                    target.net
                )
            };
            return Err(FabricError::NoRoute { target, why });
        };
        drop(routes);
        let outstanding = Outstanding {
            node: self.me.clone(),
            gateway,
            bytes,
        };
        let ni = self
            .ni_on(gateway.net)
            .ok_or_else(|| FabricError::NoRoute {
                target,
                why: format!("gateway {gateway} is on no network of this node"),
            })?;
        Ok((Arc::clone(ni), gateway, Some(outstanding)))
    }

    /// A header from this node to `target`. The source NID is fixed when the message is sent,
    /// to the interface its next hop is on, as LNet does.
    pub(crate) fn header(&self, kind: Kind, target: Nid) -> Header {
        Header::new(kind, self.nid, target)
    }

    /// Sends under credits (waiting for them if need be), directly or through a router.
    pub(crate) async fn send(
        &self,
        mut message: Message,
        notify: Option<oneshot::Sender<Result<(), FabricError>>>,
    ) -> Result<(), FabricError> {
        let bytes = (crate::frame::HEADER_BYTES + message.payload.len()) as u64;
        let (ni, next_hop, outstanding) = self.route_to(message.header.target, bytes)?;
        if self.is_local(&message.header.source) {
            message.header.source = ni.nid();
        }
        // A frame sent from a traced task joins its trace; an answer already carries the trace
        // of the frame it answers.
        if message.header.trace == 0
            && let Some(id) = trace::current()
        {
            message.header.trace = id.0;
        }
        let traced = TraceId::of(&message.header)
            .map(|id| (id, SendTrace::before(next_hop, &message.header)));
        if next_hop == message.header.target {
            let taken = ni.send(next_hop, message, notify).await?;
            if let Some((id, before)) = traced {
                before.record(&self.trace, id, taken);
            }
            return Ok(());
        }
        // Routed: the bytes stay outstanding on the gateway until the send completes (or this
        // send is given up, however: `outstanding` lets them go when dropped); a send that
        // fails marks the gateway down at once, so the resend that follows takes another route
        // rather than waiting for the next ping to notice.
        let (sent_tx, sent_rx) = oneshot::channel();
        let taken = ni.send(next_hop, message, Some(sent_tx)).await?;
        if let Some((id, before)) = traced {
            before.record(&self.trace, id, taken);
        }
        let me = self.me.clone();
        tokio::spawn(async move {
            let outcome = sent_rx.await.unwrap_or(Err(FabricError::ShuttingDown));
            drop(outstanding);
            if outcome.is_err()
                && let Some(node) = me.upgrade()
                && node
                    .routes
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .set_alive(next_hop, false)
            {
                warn!(node = %node.nid, gateway = %next_hop, "router marked down: a send through it failed");
            }
            if let Some(notify) = notify {
                let _ = notify.send(outcome);
            }
        });
        Ok(())
    }

    /// Sends from a task of its own, for dispatch, which must not wait. These are answers to
    /// peers (replies, ACKs, GET data), so a peer decides how many there are: beyond
    /// `detached_sends_max` at once they are dropped and counted, and the peer, hearing nothing,
    /// resends — the same as a message lost on the wire.
    fn send_detached(&self, message: Message) {
        let Some(node) = self.me.upgrade() else {
            return;
        };
        let in_progress = Arc::clone(&self.detached_sends);
        let before = in_progress.fetch_add(1, Ordering::AcqRel);
        if before >= self.limits.detached_sends_max {
            in_progress.fetch_sub(1, Ordering::AcqRel);
            self.counters
                .answers_dropped
                .fetch_add(1, Ordering::Relaxed);
            warn!(peer = %message.header.target, "dropping an answer: {} already being sent", self.limits.detached_sends_max);
            return;
        }
        self.counters
            .answers_in_flight_peak
            .fetch_max(u64::from(before) + 1, Ordering::Relaxed);
        tokio::spawn(async move {
            let target = message.header.target;
            if let Err(e) = node.send(message, None).await {
                debug!(%target, "send from dispatch failed: {e}");
            }
            in_progress.fetch_sub(1, Ordering::AcqRel);
        });
    }

    /// Attaches `handler` to service portal `portal`: one handler per portal, and none on the
    /// portals the fabric keeps for itself.
    pub(crate) fn attach_portal(
        &self,
        portal: u32,
        handler: Arc<dyn PortalHandler>,
    ) -> Result<(), FabricError> {
        if portal < FIRST_SERVICE_PORTAL {
            return Err(FabricError::BadBulkAccess {
                region: 0,
                why: format!("portal {portal} is reserved"),
            });
        }
        let mut portals = self.portals.write().unwrap_or_else(PoisonError::into_inner);
        if portals.contains_key(&portal) {
            return Err(FabricError::LimitReached {
                what: "one service per portal",
                max: 1,
            });
        }
        portals.insert(portal, handler);
        Ok(())
    }

    /// What a ping's reply carries: this start's incarnation (8 bytes, little-endian), so a
    /// peer can tell a restart; then, for a router, the NIDs of its interfaces that have lost
    /// their network (see [`Ni::link_down`]), 24 bytes each in the wire form, so that nodes
    /// routing through it stop sending it what it cannot pass on (LNet's ping buffer carries
    /// its NIs' status for `avoid_asym_router_failure`).
    fn ping_body(&self) -> Bytes {
        if self.router.is_none() {
            return Bytes::copy_from_slice(&self.incarnation.to_le_bytes());
        }
        let mut cached = self
            .ping_body
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let now = tokio::time::Instant::now();
        if let Some((made, body)) = cached.as_ref()
            && now.duration_since(*made) < PING_BODY_FRESH
        {
            return body.clone();
        }
        let mut body = self.incarnation.to_le_bytes().to_vec();
        for ni in self.nis().iter().filter(|ni| ni.link_down()) {
            let mut wire = [0u8; NID_WIRE_BYTES];
            ni.nid().encode(&mut wire);
            body.extend_from_slice(&wire);
        }
        let body = Bytes::from(body);
        *cached = Some((now, body.clone()));
        body
    }

    /// LNet's ping, as its router checker sends it: a PUT to [`PING_PORTAL`], which every node
    /// answers itself, with a reply matched by xid like an RPC's. `Some` if `target` answered
    /// within `timeout`, with the networks it reports it cannot reach (a router whose
    /// interface there is down); sent once, never resent.
    pub(crate) async fn send_ping(&self, target: Nid, timeout: Duration) -> Option<PingReply> {
        let xid = self.next_xid.fetch_add(1, Ordering::Relaxed);
        let (reply_tx, reply_rx) = oneshot::channel();
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(xid, reply_tx);
        let mut header = self.header(Kind::Put, target);
        header.portal = PING_PORTAL;
        header.match_bits = xid;
        let (sent_tx, sent_rx) = oneshot::channel();
        let sent = self
            .send(Message::new(header, Bytes::new()), Some(sent_tx))
            .await;
        let answered = match sent {
            Err(_) => None,
            Ok(()) => tokio::time::timeout(timeout, async {
                // A send that fails (gateway down) ends the wait at once.
                if let Ok(Err(_)) = sent_rx.await {
                    return None;
                }
                match reply_rx.await {
                    Ok(reply) if reply.header.status == status::OK => {
                        Some(PingReply::decode(&reply.payload))
                    }
                    _ => None,
                }
            })
            .await
            .unwrap_or(None),
        };
        self.pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&xid);
        answered
    }

    /// Opens a bulk transfer's mailbox, holding `depth` REPLYs or ACKs. A pull that lands in
    /// one buffer gives its `lender`, so its REPLYs are received straight into place.
    pub(crate) fn open_transfer(&self, depth: usize, lender: Option<Lender>) -> Transfer {
        let cookie = self.next_cookie.fetch_add(1, Ordering::Relaxed);
        let (tx, rx) = mpsc::channel(depth.max(1));
        self.transfers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(cookie, TransferEntry { tx, lender });
        Transfer {
            cookie,
            rx,
            node: self.me.clone(),
        }
    }

    fn on_request(&self, message: Message) {
        let header = &message.header;
        if header.portal == PING_PORTAL {
            self.send_reply(header, status::OK, self.ping_body());
            return;
        }
        let handler = self
            .portals
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&header.portal)
            .cloned();
        let Some(handler) = handler else {
            let error = format!("{NO_SERVICE} {}", header.portal);
            self.reply_error(header, status::errno::EOPNOTSUPP, &error);
            return;
        };
        handler.on_request(self, message);
    }

    pub(crate) fn reply_error(&self, request: &Header, code: u32, message: &str) {
        let body = encode_error_body(code, message);
        self.send_reply(request, code, body);
    }

    pub(crate) fn send_reply(&self, request: &Header, code: u32, body: Bytes) {
        let mut header = Header::new(Kind::Put, request.target, request.source);
        header.portal = REPLY_PORTAL;
        header.match_bits = request.match_bits;
        header.status = code;
        header.trace = request.trace;
        self.send_detached(Message::new(header, body));
    }

    fn on_rpc_reply(&self, message: Message) {
        let waiter = self
            .pending
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&message.header.match_bits);
        match waiter {
            Some(waiter) => {
                let _ = waiter.send(message);
            }
            // A reply to a resent request whose first reply already came, or to a caller that
            // gave up: nothing to do.
            None => {
                self.counters.unexpected.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// Owner side of a GET: send the bytes (or why not) back.
    fn on_get(&self, get: Header) {
        let kind = kind_of(get.flags);
        let mut reply = Header::new(Kind::Reply, get.target, get.source);
        reply.cookie = get.cookie;
        reply.offset = get.offset;
        reply.flags = get.flags;
        reply.trace = get.trace;
        // The payload is a slice of the registered region: serving a GET copies nothing.
        let payload =
            match self
                .regions
                .read(get.match_bits, get.offset, u64::from(get.length), kind)
            {
                Ok((bytes, crc)) => {
                    reply.checksum = crc;
                    bytes
                }
                Err(refusal) => {
                    debug!(peer = %get.source, "refusing GET: {}", refusal.why);
                    reply.status = refusal.status;
                    Bytes::new()
                }
            };
        self.send_detached(Message::new(reply, payload));
    }

    /// Owner side of a pushed chunk: check, write, acknowledge.
    fn on_bulk_put(&self, message: Message) {
        let put = &message.header;
        let mut ack = Header::new(Kind::Ack, put.target, put.source);
        ack.cookie = put.cookie;
        ack.offset = put.offset;
        ack.flags = put.flags;
        ack.trace = put.trace;
        if let Err(refusal) = self.regions.write(
            put.match_bits,
            put.offset,
            &message.payload,
            kind_of(put.flags),
            put.checksum,
        ) {
            if refusal.status == status::CHECKSUM_MISMATCH {
                self.counters
                    .checksum_mismatches
                    .fetch_add(1, Ordering::Relaxed);
                warn!(peer = %put.source, "bulk PUT refused: {}", refusal.why);
            }
            ack.status = refusal.status;
        }
        self.send_detached(Message::new(ack, Bytes::new()));
    }

    fn on_transfer_frame(&self, arrival: Arrival) {
        let sender = self
            .transfers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&arrival.message.header.cookie)
            .map(|entry| entry.tx.clone());
        // A transfer holds room for its window; a frame beyond it (a duplicate after a
        // resend) or for a finished transfer is dropped and counted — and a place it filled
        // opens again as it drops, to be received anew.
        if sender.is_none_or(|s| s.try_send(arrival).is_err()) {
            self.counters.unexpected.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// For a REPLY to one of this node's pulls that lands in one buffer: the place in that
    /// buffer where the REPLY's payload goes, if its chunk is open. A REPLY without a place
    /// (a duplicate while its chunk is being received, one for a finished transfer) is
    /// received as bytes of its own and handed to the transfer, or dropped, as before.
    fn place_for(&self, header: &Header) -> Option<Place> {
        if header.kind != Kind::Reply || header.status != status::OK || header.payload_len == 0 {
            return None;
        }
        let lender = self
            .transfers
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(&header.cookie)?
            .lender
            .clone()?;
        lender.lend(header.offset, header.payload_len as usize)
    }
}

/// The checksum a frame's flags name.
pub(crate) fn kind_of(flags: u8) -> ChecksumKind {
    if flags & FLAG_CRC32C != 0 {
        ChecksumKind::Crc32c
    } else {
        ChecksumKind::Crc32
    }
}

/// Most interfaces a ping reply may report down: more than any router has; a longer body is
/// not believed (a peer's reply must not cost this node more than a small, fixed amount).
const DOWN_NETS_MAX: usize = 64;

/// How long a router's ping reply body is reused before its interfaces are looked at again.
const PING_BODY_FRESH: Duration = Duration::from_millis(250);

/// What a ping's reply said.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct PingReply {
    /// The start of the node that answered; `None` from a node of a make that does not say.
    pub(crate) incarnation: Option<u64>,
    /// The networks it reports it cannot reach (a router).
    pub(crate) down: Vec<NetId>,
}

impl PingReply {
    /// Reads a ping reply's body: the incarnation, then whole NIDs. A body that is whole NIDs
    /// alone (a peer of an earlier make) names no incarnation; any other reports nothing.
    pub(crate) fn decode(body: &[u8]) -> PingReply {
        let incarnation_bytes = body.len() % NID_WIRE_BYTES;
        match body.split_first_chunk::<8>() {
            Some((incarnation, nids)) if incarnation_bytes == 8 => PingReply {
                incarnation: Some(u64::from_le_bytes(*incarnation)),
                down: down_nets(nids),
            },
            _ => PingReply {
                incarnation: None,
                down: down_nets(body),
            },
        }
    }
}

/// The networks a ping reply's NIDs report down: their networks. A body that is not whole
/// NIDs (a peer of another make) reports nothing.
fn down_nets(body: &[u8]) -> Vec<NetId> {
    if !body.len().is_multiple_of(NID_WIRE_BYTES) || body.len() > DOWN_NETS_MAX * NID_WIRE_BYTES {
        return Vec::new();
    }
    let mut nets: Vec<NetId> = body
        .chunks_exact(NID_WIRE_BYTES)
        .filter_map(|chunk| {
            let wire: &[u8; NID_WIRE_BYTES] = chunk.try_into().ok()?;
            Nid::decode(wire).ok().map(|nid| nid.net)
        })
        .collect();
    nets.sort_unstable();
    nets.dedup();
    nets
}

/// The frame flags for a checksum.
pub(crate) fn flags_of(kind: ChecksumKind) -> u8 {
    match kind {
        ChecksumKind::Crc32 => 0,
        ChecksumKind::Crc32c => FLAG_CRC32C,
    }
}

impl NodeInner {
    /// Router side: check what can be checked, then send the message on towards its target,
    /// holding its router buffer until it has left. Like LNet's, a router keeps no order
    /// between the messages it forwards: a small one can leave before a bulk chunk that came
    /// in ahead of it. Nothing above depends on order: replies are matched by xid, bulk
    /// chunks by cookie and offset.
    fn forward(&self, mut message: Message, mut buffer: Hold) {
        self.counters.forwarded.fetch_add(1, Ordering::Relaxed);
        self.counters
            .forwarded_bytes
            .fetch_add(message.payload.len() as u64, Ordering::Relaxed);
        let bulk = message.header.is_bulk() && !message.payload.is_empty();
        let fate = self.fail.pass_frame(Site::RouterForward, bulk);
        // A small message no fail point holds up is checked and handed to the next hop's
        // LND right here, on the task that read it, when the credits are free: no task to
        // spawn and schedule per message, which is most of what forwarding a small message
        // costs in CPU (routed pings at 8 in flight: a third more RPC/s). A bulk chunk is
        // checked and sent on from a task of its own, which writes it to an idle connection
        // itself: forwarding bulk on the reading task too measured no better, and slowed a
        // router many writers share (`bench routing`'s placed run).
        let small = message.payload.len() <= SMALL_BUFFER_BYTES as usize;
        let checked = matches!(fate, Ok(None)) && small;
        if checked {
            self.check_forwarded(&message);
            match self.try_send_on(message, buffer) {
                Ok(()) => {
                    self.counters
                        .forwarded_inline
                        .fetch_add(1, Ordering::Relaxed);
                    return;
                }
                Err(back) => (message, buffer) = *back,
            }
        }
        let Some(node) = self.me.upgrade() else {
            return;
        };
        // Otherwise on a task of its own, so the connection the message came on is read again
        // at once while this one is checked (a bulk chunk) and waits for credits.
        tokio::spawn(async move {
            match fate {
                Ok(None) => {}
                Ok(Some(delay)) => tokio::time::sleep(delay).await,
                Err(Injected::Corrupt) => {
                    let mut payload = bytes::BytesMut::from(&message.payload[..]);
                    let middle = payload.len() / 2;
                    payload[middle] ^= 0x5A;
                    message.payload = payload.freeze();
                }
                Err(injected) => {
                    // Lost in the router: its sender's timeout and resend see to it.
                    debug!(target = %message.header.target, "{}", injected.message(Site::RouterForward));
                    return;
                }
            }
            if !checked {
                node.check_forwarded(&message);
            }
            let target = message.header.target;
            let (sent_tx, sent_rx) = oneshot::channel();
            match node.send(message, Some(sent_tx)).await {
                Ok(()) => {
                    let _ = sent_rx.await;
                }
                Err(e) => {
                    node.counters.unexpected.fetch_add(1, Ordering::Relaxed);
                    debug!(%target, "router cannot forward: {e}");
                }
            }
            // The buffer returns only now: a router holds at most its buffers' worth.
            drop(buffer);
        });
    }

    /// Spider's routers spent their time here: every bulk chunk checked in passing. A
    /// mismatch is counted and the chunk sent on; its receiver refuses it and asks again.
    fn check_forwarded(&self, message: &Message) {
        let header = &message.header;
        let checks = self
            .router
            .as_ref()
            .is_some_and(RouterBuffers::checks_checksums);
        if !checks || !header.is_bulk() || message.payload.is_empty() {
            return;
        }
        let actual = kind_of(header.flags).compute(&message.payload);
        if actual != header.checksum {
            self.counters
                .router_checksum_mismatches
                .fetch_add(1, Ordering::Relaxed);
            warn!(source = %header.source, target = %header.target, "router: bulk chunk checksum mismatch: sent {:#010x}, arrived {actual:#010x}", header.checksum);
        }
    }

    /// Hands a forwarded message to the LND of the network its target is on, holding its
    /// router buffer until it has left, if that needs no wait: the target is on one of this
    /// router's networks (not behind another router, which [`NodeInner::send`] chooses) and
    /// both credits are free. A traced message takes the full path, which records its send.
    fn try_send_on(&self, message: Message, buffer: Hold) -> Result<(), Box<(Message, Hold)>> {
        let target = message.header.target;
        if TraceId::of(&message.header).is_some() {
            return Err(Box::new((message, buffer)));
        }
        let Some(ni) = self.ni_on(target.net) else {
            return Err(Box::new((message, buffer)));
        };
        ni.try_send(target, message, buffer).map(|_| ())
    }
}

impl Checked for NodeInner {
    fn nid(&self) -> Nid {
        self.nid
    }

    fn routes(&self) -> &Mutex<RouteTable> {
        &self.routes
    }

    fn elapsed(&self) -> Duration {
        self.epoch.elapsed()
    }

    fn stopped(&self) -> bool {
        self.stopped.load(Ordering::Relaxed)
    }

    async fn ping(self: Arc<Self>, gateway: Nid, timeout: Duration) -> Option<Vec<NetId>> {
        self.send_ping(gateway, timeout)
            .await
            .map(|reply| reply.down)
    }
}

impl Deliver for NodeInner {
    fn admit(&self, header: &Header) -> Admit {
        if !self.is_local(&header.target) {
            return match &self.router {
                Some(router) => router.admit(header),
                None => Admit::Now(Grant::default()),
            };
        }
        Admit::Now(Grant {
            hold: None,
            place: self.place_for(header),
        })
    }

    fn deliver(&self, via: Nid, message: Message, grant: Grant) {
        // Counted where it came in, whether it is for this node or passes through (a router).
        // The header's length: a payload received into its place is not in the message.
        if let Some(incoming) = self.nis().iter().find(|ni| ni.nid() == via) {
            let counters = &incoming.counters;
            counters.recv_count.fetch_add(1, Ordering::Relaxed);
            counters
                .recv_bytes
                .fetch_add(u64::from(message.header.payload_len), Ordering::Relaxed);
        }
        // Most messages are for the interface they came in on: one look, not a scan.
        let target = message.header.target;
        if target != via && !self.is_local(&target) {
            match grant.hold {
                Some(buffer) => {
                    if let Some(id) = TraceId::of(&message.header) {
                        self.trace_forward(id, &message.header);
                    }
                    self.forward(message, buffer)
                }
                // Not for us, and we do not forward (or could not take a buffer).
                None => {
                    self.counters.unexpected.fetch_add(1, Ordering::Relaxed);
                }
            }
            return;
        }
        if let Some(id) = TraceId::of(&message.header) {
            let header = &message.header;
            let mut step = Step::new("lnet", "arrive", describe_frame(header));
            step.frame = Some(trace::frame_key(header));
            step.peer = Some(header.source);
            self.trace.record(id, step);
        }
        let place = grant.place;
        match (message.header.kind, message.header.portal) {
            (Kind::Put, REPLY_PORTAL) => self.on_rpc_reply(message),
            (Kind::Put, BULK_PORTAL) => self.on_bulk_put(message),
            (Kind::Put, _) => self.on_request(message),
            (Kind::Get, BULK_PORTAL) => self.on_get(message.header),
            (Kind::Reply | Kind::Ack, _) => self.on_transfer_frame(Arrival { message, place }),
            (Kind::Get | Kind::Hello, _) => {
                self.counters.unexpected.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
}

/// A transfer in the node's table: where its frames go, and the landing its REPLYs are
/// received into, for a pull that has one.
struct TransferEntry {
    /// The transfer's mailbox, holding its window's worth (see `open_transfer`).
    tx: mpsc::Sender<Arrival>,
    /// Lends places in the transfer's landing, for a pull that lands in one buffer.
    lender: Option<Lender>,
}

/// A REPLY or ACK as it reaches its transfer. A REPLY received straight into its place in
/// the transfer's landing comes with the filled place, and its message's payload is empty.
#[derive(Debug)]
pub(crate) struct Arrival {
    /// The frame; its payload is empty when the bytes are in `place`.
    pub(crate) message: Message,
    /// The filled place, for a REPLY received straight into the transfer's landing.
    pub(crate) place: Option<Place>,
}

/// A bulk transfer's mailbox for its REPLYs or ACKs; closed when dropped.
pub(crate) struct Transfer {
    /// Names the transfer in its GETs and PUTs; their REPLYs and ACKs carry it back.
    pub(crate) cookie: u64,
    /// Where those REPLYs and ACKs arrive.
    pub(crate) rx: mpsc::Receiver<Arrival>,
    /// The node whose table lists the transfer, until this is dropped.
    node: Weak<NodeInner>,
}

impl Drop for Transfer {
    fn drop(&mut self) {
        if let Some(node) = self.node.upgrade() {
            node.transfers
                .lock()
                .unwrap_or_else(PoisonError::into_inner)
                .remove(&self.cookie);
        }
    }
}

/// A frame in words: `PUT portal 17 xid 42, 512 B`, `GET region 5 [0, +1 MiB)`.
pub(crate) fn describe_frame(header: &Header) -> String {
    let kind = trace::kind_name(header.kind);
    let bytes = if header.kind == Kind::Get {
        header.length
    } else {
        header.payload_len
    };
    match (header.kind, header.portal) {
        (Kind::Put, REPLY_PORTAL) => {
            format!(
                "RPC reply xid {} ({bytes} B, status {})",
                header.match_bits, header.status
            )
        }
        (Kind::Put, BULK_PORTAL) => format!(
            "bulk PUT region {} at {} ({bytes} B, crc {:#010x})",
            header.match_bits, header.offset, header.checksum
        ),
        (Kind::Put, PING_PORTAL) => format!("ping xid {}", header.match_bits),
        (Kind::Put, portal) => format!(
            "RPC request xid {} opcode {} on portal {portal} ({bytes} B)",
            header.match_bits, header.hdr_data
        ),
        (Kind::Get, _) => format!(
            "GET region {} at {} ({bytes} B)",
            header.match_bits, header.offset
        ),
        (Kind::Reply, _) => format!(
            "{kind} bulk data at {} ({bytes} B, crc {:#010x})",
            header.offset, header.checksum
        ),
        (Kind::Ack, _) => format!(
            "ACK of the chunk at {} (status {})",
            header.offset, header.status
        ),
        (Kind::Hello, _) => kind.to_owned(),
    }
}

/// An RPC call in progress: its peer, and what wakes its wait for a reply to send again at
/// once.
#[derive(Debug)]
pub(crate) struct CallInProgress {
    pub(crate) target: Nid,
    pub(crate) resend: Arc<tokio::sync::Notify>,
}

/// A traced send, described before it waits for its credits.
struct SendTrace {
    peer: Nid,
    frame: String,
    detail: String,
    /// When the send began ([`trace::now_ns`]), before any wait for credits.
    at_ns: u64,
}

impl SendTrace {
    fn before(next_hop: Nid, header: &Header) -> SendTrace {
        SendTrace {
            peer: next_hop,
            frame: trace::frame_key(header),
            detail: describe_frame(header),
            at_ns: trace::now_ns(),
        }
    }

    /// Records the send, at the time it began (an in-memory network may deliver it before
    /// `send` returns, so the time is taken before), once the interface has taken it: with
    /// the counts its peer and interface credits left when it asked for them (read under the
    /// pools' locks, so values the node's own `peers` and `nis` views held at that moment)
    /// and the time it queued for them, as the credit gates measured it.
    fn record(self, log: &TraceLog, id: TraceId, taken: SendCredits) {
        let mut step = Step::new("lnet", "send", self.detail);
        step.frame = Some(self.frame);
        step.peer = Some(self.peer);
        step.credits = vec![
            ("peer".to_owned(), taken.peer_credits),
            ("ni".to_owned(), taken.ni_credits),
        ];
        step.waited_ns = u64::try_from(taken.waited.as_nanos()).unwrap_or(u64::MAX);
        log.record_at(id, self.at_ns, step);
    }
}

impl NodeInner {
    /// A router took a buffer for a traced frame: which pool, and what is left in it and in
    /// the sender's router credits.
    fn trace_forward(&self, id: TraceId, header: &Header) {
        let Some(router) = &self.router else { return };
        let class = crate::router::BufferClass::of(header.payload_len);
        let mut credits = Vec::new();
        if let Some((_, _, pool)) = router.pools().into_iter().find(|(c, _, _)| *c == class) {
            credits.push((format!("{} buffers", class.name()), pool.credits));
        }
        if let Some(peer) = router.peer_snapshot(&header.source) {
            credits.push(("router peer".to_owned(), peer.credits));
        }
        let mut step = Step::new(
            "router",
            "forward",
            format!(
                "{} buffer taken for {}",
                class.name(),
                describe_frame(header)
            ),
        );
        // The arrival of the frame its sender sent: the router's send onward is the next hop.
        step.frame = Some(trace::frame_key(header));
        step.peer = Some(header.source);
        step.credits = credits;
        self.trace.record(id, step);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn wire(nid: &str) -> [u8; NID_WIRE_BYTES] {
        let mut out = [0u8; NID_WIRE_BYTES];
        nid.parse::<Nid>().unwrap().encode(&mut out);
        out
    }

    #[test]
    fn a_ping_reply_reports_each_network_once_and_a_long_one_nothing() {
        let mut body = Vec::new();
        for nid in ["10.0.0.1:1@tcp1", "10.0.0.2:2@tcp1", "10.0.1.1:3@tcp2"] {
            body.extend_from_slice(&wire(nid));
        }
        let nets = down_nets(&body);
        assert_eq!(nets, ["tcp1".parse().unwrap(), "tcp2".parse().unwrap()]);
        // A peer's reply longer than any router's is not believed.
        let long: Vec<u8> = (0..=DOWN_NETS_MAX)
            .flat_map(|_| wire("10.0.0.1:1@tcp1"))
            .collect();
        assert!(down_nets(&long).is_empty());
        assert!(
            down_nets(&body[..NID_WIRE_BYTES - 1]).is_empty(),
            "not whole NIDs"
        );
    }
}
