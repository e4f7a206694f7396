//! LNet's routing table as a pure core: for each remote network, gateways with a hop count and
//! a priority; a sender picks among the **best alive class** — lowest priority value, then lowest
//! hop count — the gateway with the **fewest bytes outstanding** (sent through it and not yet
//! completed: LNet's `txqnob`), and among those the **least recently used** route (LNet's
//! `lr_seq`): round-robin, message by message, when the gateways are equally loaded, and no
//! gateway given a second 1 MiB bulk while the first is still in flight and another has none.
//! Once a bulk has completed, its gateway is as free as the others: the choice is blind to
//! what the next message is, so small requests and bulk still take turns. Worse routes carry traffic only
//! while every better one is down. No clocks or sockets: liveness is set from outside (by
//! health pings and failed sends), and time comes in as an argument.

use std::collections::BTreeMap;
use std::fmt;
use std::time::Duration;

use crate::error::FabricError;
use crate::nid::{NetId, Nid};

/// The largest hop count LNet accepts.
pub const HOPS_MAX: u32 = 255;

/// One route: reach `net` through `gateway`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RouteSpec {
    /// The remote network.
    pub net: NetId,
    /// The router to send through, on one of our own networks.
    pub gateway: Nid,
    /// Relative distance (LNet's hop count): lower is preferred.
    pub hops: u32,
    /// Preference before hops: lower is preferred.
    pub priority: u32,
}

impl fmt::Display for RouteSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} via {} hops {} priority {}",
            self.net, self.gateway, self.hops, self.priority
        )
    }
}

impl RouteSpec {
    /// Parses `NET GATEWAY [HOPS [PRIORITY]]`, the form `lnetctl route add` takes apart.
    pub fn parse(text: &str) -> Result<RouteSpec, FabricError> {
        let bad = |why: &str| FabricError::BadRoute {
            why: format!("{text:?}: {why}"),
        };
        let words: Vec<&str> = text.split_whitespace().collect();
        if !(2..=4).contains(&words.len()) {
            return Err(bad("expected NET GATEWAY [HOPS [PRIORITY]]"));
        }
        let net: NetId = words[0].parse()?;
        let gateway: Nid = words[1].parse()?;
        let hops = match words.get(2) {
            Some(h) => h.parse().map_err(|_| bad("hops must be a number"))?,
            None => 1,
        };
        let priority = match words.get(3) {
            Some(p) => p.parse().map_err(|_| bad("priority must be a number"))?,
            None => 0,
        };
        Ok(RouteSpec {
            net,
            gateway,
            hops,
            priority,
        })
    }
}

/// What a node knows about one gateway.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Gateway {
    /// Whether messages may be routed through it.
    pub alive: bool,
    /// When it last answered a ping (time since the table's epoch).
    pub last_alive: Option<Duration>,
    /// When it was first pinged: a gateway that never answered is silent since then, not
    /// since the node started (a route added at run time gets a full timeout too).
    pub first_ping: Option<Duration>,
    /// Pings sent to it.
    pub pings_sent: u64,
    /// Messages routed through it.
    pub messages: u64,
    /// Bytes sent through it and not yet completed (LNet's `lpni_txqnob`).
    pub outstanding_bytes: u64,
    /// Times it went from alive to down.
    pub downs: u64,
    /// Networks the gateway itself reports it cannot reach (its interface there is down), in
    /// its last ping reply: routes through it to these are not used, as LNet's
    /// `avoid_asym_router_failure` has it, though it answers.
    pub down_nets: Vec<NetId>,
}

impl Gateway {
    /// Whether a message to `net` may go through it.
    pub fn carries(&self, net: NetId) -> bool {
        self.alive && !self.down_nets.contains(&net)
    }
}

/// Routes and gateways of one node.
#[derive(Debug, Default)]
pub struct RouteTable {
    routes: BTreeMap<NetId, Vec<RouteSpec>>,
    /// When each route (`net`, gateway) was last chosen, in choices made.
    last_chosen: BTreeMap<(NetId, Nid), u64>,
    /// Choices made.
    chosen: u64,
    gateways: BTreeMap<Nid, Gateway>,
}

impl RouteTable {
    /// An empty table.
    pub fn new() -> RouteTable {
        RouteTable::default()
    }

    /// Adds a route. A gateway starts alive (as LNet assumes until a ping says otherwise).
    pub fn add(&mut self, spec: RouteSpec) -> Result<(), FabricError> {
        if !(1..=HOPS_MAX).contains(&spec.hops) {
            return Err(FabricError::BadRoute {
                why: format!("{spec}: hops must be 1 to {HOPS_MAX}"),
            });
        }
        if spec.gateway.net == spec.net {
            return Err(FabricError::BadRoute {
                why: format!("{spec}: a gateway cannot be on the network it leads to"),
            });
        }
        let routes = self.routes.entry(spec.net).or_default();
        if routes.iter().any(|r| r.gateway == spec.gateway) {
            return Err(FabricError::BadRoute {
                why: format!(
                    "{spec}: a route to {} via {} exists",
                    spec.net, spec.gateway
                ),
            });
        }
        routes.push(spec);
        self.gateways.entry(spec.gateway).or_insert(Gateway {
            alive: true,
            last_alive: None,
            first_ping: None,
            pings_sent: 0,
            messages: 0,
            outstanding_bytes: 0,
            downs: 0,
            down_nets: Vec::new(),
        });
        Ok(())
    }

    /// Removes the route to `net` through `gateway`; false if there was none.
    pub fn remove(&mut self, net: NetId, gateway: Nid) -> bool {
        let Some(routes) = self.routes.get_mut(&net) else {
            return false;
        };
        let before = routes.len();
        routes.retain(|r| r.gateway != gateway);
        let removed = routes.len() != before;
        if routes.is_empty() {
            self.routes.remove(&net);
        }
        if !self.routes.values().flatten().any(|r| r.gateway == gateway) {
            self.gateways.remove(&gateway);
        }
        removed
    }

    /// The gateway for the next message to `net`, one of `bytes`, as LNet's
    /// `lnet_compare_routes` picks it: among the alive routes of the best class, the gateway
    /// with the fewest bytes outstanding, then the route least recently chosen; `None` if
    /// every route to `net` is down (or none exists). The bytes count as outstanding on the
    /// gateway until [`RouteTable::completed`] takes them off.
    pub fn choose(&mut self, net: NetId, bytes: u64) -> Option<Nid> {
        let routes = self.routes.get(&net)?;
        let alive = |r: &&RouteSpec| {
            self.gateways
                .get(&r.gateway)
                .is_some_and(|g| g.carries(net))
        };
        let best = routes
            .iter()
            .filter(alive)
            .map(|r| (r.priority, r.hops))
            .min()?;
        let outstanding = |gateway: &Nid| {
            self.gateways
                .get(gateway)
                .map_or(0, |g| g.outstanding_bytes)
        };
        let gateway = routes
            .iter()
            .filter(alive)
            .filter(|r| (r.priority, r.hops) == best)
            .map(|r| r.gateway)
            .min_by_key(|g| {
                (
                    outstanding(g),
                    self.last_chosen.get(&(net, *g)).copied().unwrap_or(0),
                )
            })?;
        self.chosen += 1;
        self.last_chosen.insert((net, gateway), self.chosen);
        if let Some(state) = self.gateways.get_mut(&gateway) {
            state.messages += 1;
            state.outstanding_bytes += bytes;
        }
        Some(gateway)
    }

    /// A message of `bytes` sent through `gateway` has completed (or failed): its bytes are no
    /// longer outstanding there.
    pub fn completed(&mut self, gateway: Nid, bytes: u64) {
        if let Some(state) = self.gateways.get_mut(&gateway) {
            state.outstanding_bytes = state.outstanding_bytes.saturating_sub(bytes);
        }
    }

    /// Whether any route leads to `net` at all (alive or not).
    pub fn knows(&self, net: NetId) -> bool {
        self.routes.contains_key(&net)
    }

    /// Marks `gateway` alive or down; returns whether that changed anything.
    pub fn set_alive(&mut self, gateway: Nid, alive: bool) -> bool {
        let Some(state) = self.gateways.get_mut(&gateway) else {
            return false;
        };
        let changed = state.alive != alive;
        if changed && !alive {
            state.downs += 1;
        }
        state.alive = alive;
        changed
    }

    /// Records a ping answered at `now`: the gateway is alive.
    pub fn ping_answered(&mut self, gateway: Nid, now: Duration) -> bool {
        if let Some(state) = self.gateways.get_mut(&gateway) {
            state.last_alive = Some(now);
        }
        self.set_alive(gateway, true)
    }

    /// Records the networks `gateway` reported down in its ping reply (sorted, as the fabric
    /// decodes them); only networks this table routes to are kept, so what a gateway reports
    /// costs no more than the table's own size. Returns the change, as (newly down, up again),
    /// for the log: empty, without allocating, when nothing changed.
    pub fn set_down_nets(
        &mut self,
        gateway: Nid,
        mut nets: Vec<NetId>,
    ) -> (Vec<NetId>, Vec<NetId>) {
        nets.retain(|n| self.routes.contains_key(n));
        let Some(state) = self.gateways.get_mut(&gateway) else {
            return (Vec::new(), Vec::new());
        };
        if state.down_nets == nets {
            return (Vec::new(), Vec::new());
        }
        let newly: Vec<NetId> = nets
            .iter()
            .filter(|n| !state.down_nets.contains(n))
            .copied()
            .collect();
        let back: Vec<NetId> = state
            .down_nets
            .iter()
            .filter(|n| !nets.contains(n))
            .copied()
            .collect();
        state.down_nets = nets;
        (newly, back)
    }

    /// Records a ping sent at `now`.
    pub fn ping_sent(&mut self, gateway: Nid, now: Duration) {
        if let Some(state) = self.gateways.get_mut(&gateway) {
            state.pings_sent += 1;
            state.first_ping.get_or_insert(now);
        }
    }

    /// Marks down every gateway that has not answered for `dead_after` — since its last
    /// answer, or since its first ping if it never answered; one never pinged is not judged —
    /// and returns those newly marked down.
    pub fn expire(&mut self, now: Duration, dead_after: Duration) -> Vec<Nid> {
        let stale: Vec<Nid> = self
            .gateways
            .iter()
            .filter(|(_, g)| {
                g.last_alive
                    .or(g.first_ping)
                    .is_some_and(|since| g.alive && now.saturating_sub(since) > dead_after)
            })
            .map(|(nid, _)| *nid)
            .collect();
        for nid in &stale {
            self.set_alive(*nid, false);
        }
        stale
    }

    /// Every gateway and its state.
    pub fn gateways(&self) -> impl Iterator<Item = (&Nid, &Gateway)> {
        self.gateways.iter()
    }

    /// Every route with whether it is used: its gateway alive and not reporting the route's
    /// network down.
    pub fn routes(&self) -> Vec<(RouteSpec, bool)> {
        self.routes
            .values()
            .flatten()
            .map(|r| {
                let carries = self
                    .gateways
                    .get(&r.gateway)
                    .is_some_and(|g| g.carries(r.net));
                (*r, carries)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn route(net: &str, gateway: &str, hops: u32, priority: u32) -> RouteSpec {
        RouteSpec {
            net: net.parse().unwrap(),
            gateway: gateway.parse().unwrap(),
            hops,
            priority,
        }
    }

    fn picks(table: &mut RouteTable, net: &str, n: usize) -> Vec<u32> {
        (0..n)
            .map(
                |_| match table.choose(net.parse().unwrap(), 0).map(|nid| nid.addr) {
                    Some(crate::nid::Addr::Num(n)) => n,
                    other => panic!("unexpected {other:?}"),
                },
            )
            .collect()
    }

    #[test]
    fn a_gateway_that_reports_a_network_down_is_not_used_for_it_alone() {
        let mut table = RouteTable::new();
        for gw in 1..=2 {
            table
                .add(route("mem1", &format!("{gw}@mem0"), 1, 0))
                .unwrap();
            table
                .add(route("mem2", &format!("{gw}@mem0"), 1, 0))
                .unwrap();
        }
        let one: Nid = "1@mem0".parse().unwrap();
        let (newly, back) = table.set_down_nets(one, vec!["mem1".parse().unwrap()]);
        assert_eq!((newly.len(), back.len()), (1, 0));
        // It answers its pings, but cannot reach mem1: mem1 goes through 2 only, mem2 through
        // both still.
        assert_eq!(picks(&mut table, "mem1", 4), [2, 2, 2, 2]);
        assert_eq!(picks(&mut table, "mem2", 4), [1, 2, 1, 2]);
        let shown: Vec<bool> = table
            .routes()
            .iter()
            .filter(|(r, _)| r.gateway == one)
            .map(|(_, used)| *used)
            .collect();
        assert_eq!(
            shown,
            [false, true],
            "the route to mem1 through it shows down"
        );
        // A network this table does not route to is not kept, and a report repeated changes
        // nothing.
        let (newly, _) =
            table.set_down_nets(one, vec!["mem1".parse().unwrap(), "mem9".parse().unwrap()]);
        assert!(newly.is_empty(), "{newly:?}");
        assert_eq!(
            table
                .gateways()
                .find(|(n, _)| **n == one)
                .unwrap()
                .1
                .down_nets
                .len(),
            1
        );
        // Its interface back: both again.
        let (newly, back) = table.set_down_nets(one, Vec::new());
        assert_eq!((newly.len(), back.len()), (0, 1));
        assert_eq!(picks(&mut table, "mem1", 2), [1, 2]);
    }

    /// A writer's small requests and 1 MiB bulk messages alternate: strict round-robin would
    /// put every bulk on the same two of four gateways. Counting the bytes outstanding spreads
    /// the bulk over all four, and completions let a gateway be chosen again.
    #[test]
    fn bytes_outstanding_come_before_turn() {
        let mut table = RouteTable::new();
        for gw in 1..=4 {
            table
                .add(route("mem1", &format!("{gw}@mem0"), 1, 0))
                .unwrap();
        }
        let net: NetId = "mem1".parse().unwrap();
        let mut bulk_through = Vec::new();
        for _ in 0..4 {
            table.choose(net, 100).unwrap();
            bulk_through.push(table.choose(net, 1 << 20).unwrap().addr);
        }
        let mut sorted: Vec<String> = bulk_through.iter().map(|a| a.to_string()).collect();
        sorted.sort();
        assert_eq!(sorted, ["1", "2", "3", "4"], "{bulk_through:?}");
        // All four carry a bulk: the next small message goes to the least loaded, and once
        // gateway 3's bulk completes, it is the one chosen.
        let three: Nid = "3@mem0".parse().unwrap();
        table.completed(three, 1 << 20);
        assert_eq!(table.choose(net, 1 << 20), Some(three));
        let state = table.gateways().find(|(n, _)| **n == three).unwrap().1;
        assert!(state.outstanding_bytes >= 1 << 20, "{state:?}");
    }

    #[test]
    fn round_robin_among_the_best_class_only() {
        let mut table = RouteTable::new();
        for gw in 1..=4 {
            table
                .add(route("mem1", &format!("{gw}@mem0"), 1, 0))
                .unwrap();
        }
        for gw in 5..=6 {
            table
                .add(route("mem1", &format!("{gw}@mem0"), 10, 0))
                .unwrap();
        }
        assert_eq!(picks(&mut table, "mem1", 8), [1, 2, 3, 4, 1, 2, 3, 4]);
        // Kill two primaries: the other two share the load.
        table.set_alive("1@mem0".parse().unwrap(), false);
        table.set_alive("3@mem0".parse().unwrap(), false);
        assert_eq!(
            picks(&mut table, "mem1", 4)
                .iter()
                .filter(|&&g| g == 2)
                .count(),
            2
        );
        assert!(
            picks(&mut table, "mem1", 4)
                .iter()
                .all(|g| [2, 4].contains(g))
        );
        // All primaries down: only then the hop-10 backups.
        table.set_alive("2@mem0".parse().unwrap(), false);
        table.set_alive("4@mem0".parse().unwrap(), false);
        let backups = picks(&mut table, "mem1", 4);
        assert!(
            backups.iter().all(|g| [5, 6].contains(g))
                && backups.contains(&5)
                && backups.contains(&6)
        );
        // One primary returns: it takes all the traffic again.
        table.ping_answered("3@mem0".parse().unwrap(), Duration::from_secs(1));
        assert_eq!(picks(&mut table, "mem1", 3), [3, 3, 3]);
        // Everything down: no route.
        for gw in 1..=6 {
            table.set_alive(format!("{gw}@mem0").parse().unwrap(), false);
        }
        assert_eq!(table.choose("mem1".parse().unwrap(), 0), None);
        assert_eq!(table.choose("mem9".parse().unwrap(), 0), None);
    }

    #[test]
    fn priority_comes_before_hops() {
        let mut table = RouteTable::new();
        table.add(route("mem1", "1@mem0", 1, 5)).unwrap();
        table.add(route("mem1", "2@mem0", 9, 0)).unwrap();
        assert_eq!(picks(&mut table, "mem1", 2), [2, 2]);
    }

    #[test]
    fn bad_routes_are_refused() {
        let mut table = RouteTable::new();
        assert!(table.add(route("mem1", "1@mem0", 0, 0)).is_err());
        assert!(table.add(route("mem1", "1@mem0", 256, 0)).is_err());
        assert!(table.add(route("mem0", "1@mem0", 1, 0)).is_err());
        table.add(route("mem1", "1@mem0", 1, 0)).unwrap();
        assert!(
            table.add(route("mem1", "1@mem0", 2, 0)).is_err(),
            "duplicate"
        );
        assert!(RouteSpec::parse("mem1").is_err());
        assert!(RouteSpec::parse("mem1 1@mem0 x").is_err());
        assert_eq!(
            RouteSpec::parse("mem1 1@mem0 10 3").unwrap(),
            route("mem1", "1@mem0", 10, 3)
        );
        assert!(table.remove("mem1".parse().unwrap(), "1@mem0".parse().unwrap()));
        assert!(!table.remove("mem1".parse().unwrap(), "1@mem0".parse().unwrap()));
        assert_eq!(table.gateways().count(), 0);
    }

    #[test]
    fn silent_gateways_expire() {
        let mut table = RouteTable::new();
        table.add(route("mem1", "1@mem0", 1, 0)).unwrap();
        table.add(route("mem1", "2@mem0", 1, 0)).unwrap();
        let s = Duration::from_secs;
        table.ping_sent("1@mem0".parse().unwrap(), s(0));
        table.ping_sent("2@mem0".parse().unwrap(), s(0));
        table.ping_answered("1@mem0".parse().unwrap(), s(10));
        assert_eq!(table.expire(s(12), s(5)), vec!["2@mem0".parse().unwrap()]);
        assert_eq!(table.expire(s(16), s(5)), vec!["1@mem0".parse().unwrap()]);
        assert!(table.expire(s(30), s(5)).is_empty(), "already down");
    }

    #[test]
    fn a_gateway_added_late_gets_a_whole_timeout_from_its_first_ping() {
        let mut table = RouteTable::new();
        let s = Duration::from_secs;
        let late: Nid = "3@mem0".parse().unwrap();
        table.add(route("mem1", "3@mem0", 1, 0)).unwrap();
        assert!(
            table.expire(s(100), s(5)).is_empty(),
            "never pinged: not judged"
        );
        table.ping_sent(late, s(100));
        assert!(
            table.expire(s(101), s(5)).is_empty(),
            "its first ping has not timed out"
        );
        assert_eq!(
            table.expire(s(106), s(5)),
            vec![late],
            "silent for a whole timeout"
        );
    }
}
