//! Fail points, as Lustre's `fail_loc`: named places on the I/O path that an operator arms at
//! run time (`iopath lctl set_param fail_loc=oss.before_commit:abort:once`) to make that step
//! return an errno, stall, lose a message or a reply, flip a bulk byte, or kill the process;
//! and LNet's drop and delay rules (`net_drop_add`, `net_delay_add`) by source and destination
//! NID.
//!
//! Every node holds one [`FailPoints`]; each site asks it [`FailPoints::check`] as it passes.
//! Disarmed — the normal case — that is one relaxed atomic load of a bit mask and a branch:
//! the points are compiled in always and cost nothing measurable when off (the fabric's
//! `fail_point_cost` example measures it).
//!
//! # The sites and what each can do
//!
//! | site               | where                                                  | actions |
//! |--------------------|--------------------------------------------------------|---------|
//! | `client.send`      | an RPC request leaving its client (every send, resends too) | errno, delay, drop, abort |
//! | `bulk.send`        | a bulk chunk leaving its node (a pull's REPLY, a push)  | delay, drop, corrupt, abort |
//! | `router.forward`   | a router about to forward a message                     | delay, drop, corrupt, abort |
//! | `fyod.forward`     | a fyod about to carry a write or read to the servers    | errno, delay, drop, abort |
//! | `fyod.reply`       | a fyod's call done, before its reply                    | errno, delay, drop, abort |
//! | `oss.after_write`  | an OST's data written, before its journal record        | errno, delay, drop, abort |
//! | `oss.before_commit`| a journal group about to commit, nothing of it written  | errno, delay, abort |
//! | `oss.after_commit` | a journal group durable, before anyone is told          | errno, delay, abort |
//! | `oss.before_reply` | an OST request done, before its reply                   | errno, delay, drop, abort |
//! | `mds.after_log`    | a metadata change durable in the log, before its reply  | errno, delay, drop, abort |
//!
//! - **errno** fails the step with that error: the request's reply carries it (a commit that
//!   fails stops its target, as a journal I/O error does; `client.send` fails the call).
//! - **delay** stalls the step, then goes on.
//! - **drop** loses a message: at `client.send` the request (the client times out and sends
//!   it again), at `bulk.send` and `router.forward` the frame; at a server's site the request
//!   is done but its **reply** is lost — it is kept for the resend, which execute-once answers.
//! - **corrupt** flips one payload byte after its checksum was taken; the receiver's check
//!   catches it and asks again.
//! - **abort** kills the process on the spot (in an embedded stack, the whole stack).
//!
//! A rule fires `always` (the default, as Lustre's plain `fail_loc`), `once`, on every Nth
//! pass (`every=N`), or with a probability (`prob=P`, drawn from a generator seeded by
//! `seed=S`, 1 by default, so a run can be repeated).

use std::fmt;
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::error::FabricError;
use crate::fault::SplitMix64;
use crate::frame::Header;
use crate::nid::{NetId, Nid};
use crate::status::errno;

/// A place on the I/O path where a fault can be injected.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Site {
    /// An RPC request leaving its client.
    ClientSend,
    /// A bulk chunk leaving its node.
    BulkSend,
    /// A router about to forward a message.
    RouterForward,
    /// A fyod about to carry a call to the servers.
    FyodForward,
    /// A fyod's call done, before its reply.
    FyodReply,
    /// An OST's data written, before its journal record.
    OssAfterWrite,
    /// A journal group about to commit, nothing of it written yet.
    OssBeforeCommit,
    /// A journal group durable, before anyone is told.
    OssAfterCommit,
    /// An OST request done, before its reply.
    OssBeforeReply,
    /// A metadata change durable in the log, before its reply.
    MdsAfterLog,
}

/// What a drop at a site loses.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Loses {
    /// The message the site was about to send.
    Message,
    /// The reply of the request being served.
    Reply,
    /// Nothing: the site cannot drop.
    Nothing,
}

impl Site {
    /// Every site, in the order of a write's path.
    pub const ALL: [Site; 10] = [
        Site::ClientSend,
        Site::BulkSend,
        Site::RouterForward,
        Site::FyodForward,
        Site::FyodReply,
        Site::OssAfterWrite,
        Site::OssBeforeCommit,
        Site::OssAfterCommit,
        Site::OssBeforeReply,
        Site::MdsAfterLog,
    ];

    /// Its name in `fail_loc`.
    pub fn name(self) -> &'static str {
        match self {
            Site::ClientSend => "client.send",
            Site::BulkSend => "bulk.send",
            Site::RouterForward => "router.forward",
            Site::FyodForward => "fyod.forward",
            Site::FyodReply => "fyod.reply",
            Site::OssAfterWrite => "oss.after_write",
            Site::OssBeforeCommit => "oss.before_commit",
            Site::OssAfterCommit => "oss.after_commit",
            Site::OssBeforeReply => "oss.before_reply",
            Site::MdsAfterLog => "mds.after_log",
        }
    }

    fn bit(self) -> u32 {
        1 << (self as u32)
    }

    fn loses(self) -> Loses {
        match self {
            Site::ClientSend | Site::BulkSend | Site::RouterForward => Loses::Message,
            Site::OssBeforeCommit | Site::OssAfterCommit => Loses::Nothing,
            _ => Loses::Reply,
        }
    }

    /// Whether `action` means something here.
    pub fn allows(self, action: &Action) -> bool {
        match action {
            Action::Delay(_) | Action::Abort => true,
            Action::Errno(_) => !matches!(self, Site::BulkSend | Site::RouterForward),
            Action::Drop => self.loses() != Loses::Nothing,
            Action::Corrupt => matches!(self, Site::BulkSend | Site::RouterForward),
        }
    }

    /// The actions this site takes, for messages and `fail_sites`.
    pub fn actions(self) -> Vec<&'static str> {
        let all = [
            (Action::Errno(errno::EIO), "errno"),
            (Action::Delay(Duration::ZERO), "delay"),
            (Action::Drop, "drop"),
            (Action::Corrupt, "corrupt"),
            (Action::Abort, "abort"),
        ];
        all.iter()
            .filter(|(action, _)| self.allows(action))
            .map(|(_, name)| *name)
            .collect()
    }
}

impl fmt::Display for Site {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Site {
    type Err = String;

    fn from_str(text: &str) -> Result<Site, String> {
        Site::ALL
            .into_iter()
            .find(|site| site.name() == text)
            .ok_or_else(|| {
                let names: Vec<_> = Site::ALL.iter().map(|s| s.name()).collect();
                format!("no fail point {text:?}: the sites are {}", names.join(", "))
            })
    }
}

/// What an armed site does when its rule fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Action {
    /// Fail the step with this errno.
    Errno(u32),
    /// Stall the step this long.
    Delay(Duration),
    /// Lose the message, or the reply (see the module's table).
    Drop,
    /// Flip one byte of the bulk payload.
    Corrupt,
    /// Kill the process.
    Abort,
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Action::Errno(code) => write!(f, "errno={code}"),
            Action::Delay(d) => write!(f, "delay={}ms", d.as_millis()),
            Action::Drop => f.write_str("drop"),
            Action::Corrupt => f.write_str("corrupt"),
            Action::Abort => f.write_str("abort"),
        }
    }
}

/// Errno names `fail_loc` accepts besides numbers.
const ERRNO_NAMES: [(&str, u32); 9] = [
    ("EIO", errno::EIO),
    ("ENOSPC", errno::ENOSPC),
    ("EAGAIN", errno::EAGAIN),
    ("EINVAL", errno::EINVAL),
    ("ENOENT", errno::ENOENT),
    ("ETIMEDOUT", errno::ETIMEDOUT),
    ("ESHUTDOWN", errno::ESHUTDOWN),
    ("EPROTO", errno::EPROTO),
    ("EBADMSG", errno::EBADMSG),
];

/// Longest delay a rule may ask for: a stall, not a hang.
pub const DELAY_MAX: Duration = Duration::from_secs(600);

impl FromStr for Action {
    type Err = String;

    fn from_str(text: &str) -> Result<Action, String> {
        let (word, value) = match text.split_once('=') {
            Some((word, value)) => (word, Some(value)),
            None => (text, None),
        };
        match (word, value) {
            ("drop", None) => Ok(Action::Drop),
            ("corrupt", None) => Ok(Action::Corrupt),
            ("abort", None) => Ok(Action::Abort),
            ("errno", Some(value)) => parse_errno(value).map(Action::Errno),
            ("delay", Some(value)) => {
                let delay = parse_duration(value)?;
                if delay > DELAY_MAX {
                    return Err(format!(
                        "delay={value} is longer than the {} s a fail point may stall",
                        DELAY_MAX.as_secs()
                    ));
                }
                Ok(Action::Delay(delay))
            }
            _ => Err(format!(
                "no action {text:?}: use errno=N (or a name such as ENOSPC), delay=DURATION \
                 (500ms, 2s), drop, corrupt or abort"
            )),
        }
    }
}

fn parse_errno(value: &str) -> Result<u32, String> {
    if let Some((_, code)) = ERRNO_NAMES.iter().find(|(name, _)| *name == value) {
        return Ok(*code);
    }
    match value.parse::<u32>() {
        Ok(code) if (1..4096).contains(&code) => Ok(code),
        _ => {
            let names: Vec<_> = ERRNO_NAMES.iter().map(|(n, _)| *n).collect();
            Err(format!(
                "errno={value}: give a number from 1 to 4095 or one of {}",
                names.join(", ")
            ))
        }
    }
}

/// `250ms`, `2s`, `100us`, or a bare number of milliseconds.
pub fn parse_duration(text: &str) -> Result<Duration, String> {
    let split = text
        .find(|c: char| !(c.is_ascii_digit() || c == '.'))
        .unwrap_or(text.len());
    let (number, unit) = text.split_at(split);
    let value: f64 = number
        .parse()
        .map_err(|_| format!("{text:?} is not a duration: write 500ms, 2s or 100us"))?;
    let seconds = match unit {
        "" | "ms" => value / 1e3,
        "s" => value,
        "us" => value / 1e6,
        _ => return Err(format!("{text:?}: the units are us, ms and s")),
    };
    if !(0.0..=1e6).contains(&seconds) {
        return Err(format!("{text:?} is out of range"));
    }
    Ok(Duration::from_secs_f64(seconds))
}

/// When an armed rule fires.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum When {
    /// Every pass.
    Always,
    /// The first pass only; the rule then disarms itself.
    Once,
    /// Every Nth pass (the Nth, the 2Nth, ...).
    Every(u64),
    /// Each pass with this probability, from the rule's seeded generator.
    Probability(f64),
}

impl fmt::Display for When {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            When::Always => f.write_str("always"),
            When::Once => f.write_str("once"),
            When::Every(n) => write!(f, "every={n}"),
            When::Probability(p) => write!(f, "prob={p}"),
        }
    }
}

impl FromStr for When {
    type Err = String;

    fn from_str(text: &str) -> Result<When, String> {
        match text.split_once('=') {
            None if text == "always" => Ok(When::Always),
            None if text == "once" => Ok(When::Once),
            Some(("every", n)) => match n.parse::<u64>() {
                Ok(n) if n >= 1 => Ok(When::Every(n)),
                _ => Err(format!(
                    "every={n}: give a whole number of passes, at least 1"
                )),
            },
            Some(("prob", p)) => match p.parse::<f64>() {
                Ok(p) if p > 0.0 && p <= 1.0 => Ok(When::Probability(p)),
                _ => Err(format!("prob={p}: give a probability above 0, at most 1")),
            },
            _ => Err(format!(
                "no frequency {text:?}: use always, once, every=N or prob=P"
            )),
        }
    }
}

/// One armed site: what it does, when, and what it has done.
#[derive(Debug)]
struct Rule {
    action: Action,
    when: When,
    seed: u64,
    rng: SplitMix64,
    /// Times the site was passed while armed.
    passes: u64,
    /// Times the rule fired.
    fired: u64,
}

impl Rule {
    /// Counts a pass; whether the rule fires on it.
    fn pass(&mut self) -> bool {
        self.passes += 1;
        let fires = match self.when {
            When::Always | When::Once => true,
            When::Every(n) => self.passes.is_multiple_of(n),
            When::Probability(p) => self.rng.unit() < p,
        };
        self.fired += u64::from(fires);
        fires
    }
}

/// A rule, as `fail_loc` reads and writes it: `SITE:ACTION[:WHEN][:seed=S]`.
#[derive(Debug, Clone, PartialEq)]
pub struct FailSpec {
    /// Where.
    pub site: Site,
    /// What.
    pub action: Action,
    /// How often.
    pub when: When,
    /// The seed of `prob=` draws.
    pub seed: u64,
}

impl FromStr for FailSpec {
    type Err = String;

    fn from_str(text: &str) -> Result<FailSpec, String> {
        let mut parts = text.split(':');
        let site: Site = parts.next().unwrap_or_default().parse()?;
        let action: Action = parts
            .next()
            .ok_or_else(|| format!("{text:?} names no action: write {site}:ACTION[:WHEN]"))?
            .parse()?;
        if !site.allows(&action) {
            return Err(format!(
                "{site} cannot {action}: it takes {}",
                site.actions().join(", ")
            ));
        }
        let mut spec = FailSpec {
            site,
            action,
            when: When::Always,
            seed: 1,
        };
        for part in parts {
            match part.strip_prefix("seed=") {
                Some(seed) => {
                    spec.seed = seed
                        .parse()
                        .map_err(|_| format!("seed={seed}: give a whole number"))?;
                }
                None => spec.when = part.parse()?,
            }
        }
        Ok(spec)
    }
}

/// What an armed site tells its caller to do, after delays and aborts, which
/// [`FailPoints::pass`] carries out itself.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Injected {
    /// Fail the step with this errno.
    Errno(u32),
    /// Lose the message the site was about to send.
    Drop,
    /// Flip a byte of the payload.
    Corrupt,
}

impl Injected {
    /// The errno a step that fails by it answers with: its own, or EIO for a drop or a
    /// corruption a site could not carry out as such.
    pub fn errno(self) -> u32 {
        match self {
            Injected::Errno(code) => code,
            Injected::Drop | Injected::Corrupt => errno::EIO,
        }
    }

    /// The error of the step it failed at `site`.
    pub fn error(self, site: Site) -> FabricError {
        FabricError::Injected {
            site: site.name(),
            code: self.errno(),
        }
    }

    /// The sentence a failed request carries.
    pub fn message(self, site: Site) -> String {
        match self {
            Injected::Errno(code) => format!("fail point {site} returned errno {code}"),
            Injected::Drop => format!("fail point {site} dropped the message"),
            Injected::Corrupt => format!("fail point {site} corrupted the payload"),
        }
    }
}

tokio::task_local! {
    /// Set while a request is served: a drop at a server's site loses its reply.
    static REPLY_LOST: Arc<AtomicBool>;
}

/// Runs `work` as a served request; returns its output and whether a fail point lost its reply.
pub async fn serving<F: Future>(work: F) -> (F::Output, bool) {
    let lost = Arc::new(AtomicBool::new(false));
    let output = REPLY_LOST.scope(Arc::clone(&lost), work).await;
    (output, lost.load(Ordering::Relaxed))
}

/// One node's fail points and network fault rules.
#[derive(Debug, Default)]
pub struct FailPoints {
    /// One bit per armed [`Site`]: the only thing a disarmed pass reads.
    armed: AtomicU32,
    rules: Mutex<[Option<Rule>; Site::ALL.len()]>,
    /// Faults injected since the node started, by every site and rule.
    injected: AtomicU64,
    /// LNet-style drop and delay rules on what this node sends.
    net: NetRules,
}

impl FailPoints {
    /// Disarmed.
    pub fn new() -> Arc<FailPoints> {
        Arc::new(FailPoints::default())
    }

    /// Arms `spec`'s site, replacing what it had.
    pub fn arm(&self, spec: &FailSpec) {
        let mut rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        rules[spec.site as usize] = Some(Rule {
            action: spec.action,
            when: spec.when,
            seed: spec.seed,
            rng: SplitMix64(spec.seed),
            passes: 0,
            fired: 0,
        });
        self.armed.fetch_or(spec.site.bit(), Ordering::Release);
        tracing::warn!(site = %spec.site, action = %spec.action, when = %spec.when, "fail point armed");
    }

    /// Disarms `site`.
    pub fn disarm(&self, site: Site) {
        let mut rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        rules[site as usize] = None;
        self.armed.fetch_and(!site.bit(), Ordering::Release);
    }

    /// Disarms every site (the network rules stay).
    pub fn disarm_all(&self) {
        let mut rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        *rules = Default::default();
        self.armed.store(0, Ordering::Release);
    }

    /// Applies a `fail_loc` value: `off` (or `0`) disarms every site, `SITE:off` one site,
    /// and `SITE:ACTION[:WHEN][:seed=S]` arms one.
    pub fn set_fail_loc(&self, value: &str) -> Result<(), String> {
        let value = value.trim();
        if value == "off" || value == "0" {
            self.disarm_all();
            return Ok(());
        }
        if let Some(site) = value.strip_suffix(":off") {
            self.disarm(site.parse()?);
            return Ok(());
        }
        self.arm(&value.parse()?);
        Ok(())
    }

    /// What `get_param fail_loc` prints: `off`, or a line per armed site with its counts.
    pub fn fail_loc(&self) -> String {
        let rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        let lines: Vec<String> = Site::ALL
            .iter()
            .filter_map(|&site| {
                let rule = rules[site as usize].as_ref()?;
                Some(format!(
                    "{site}:{}:{}:seed={} passes={} fired={}",
                    rule.action, rule.when, rule.seed, rule.passes, rule.fired
                ))
            })
            .collect();
        if lines.is_empty() {
            "off".to_owned()
        } else {
            lines.join("\n")
        }
    }

    /// Faults injected so far, by fail points and network rules together.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed) + self.net.injected()
    }

    /// The network rules.
    pub fn net(&self) -> &NetRules {
        &self.net
    }

    /// The action `site` takes on this pass, if it is armed and its rule fires. Disarmed, this
    /// is one relaxed load.
    #[inline]
    pub fn check(&self, site: Site) -> Option<Action> {
        self.check_frame(site, true)
    }

    /// [`FailPoints::check`] for a frame that carries bulk bytes or not: a `corrupt` rule
    /// passes over frames without bulk (an RPC's own body has no checksum to catch a flipped
    /// byte, so it would not be the bulk corruption the rule is for), and they do not count.
    #[inline]
    pub fn check_frame(&self, site: Site, bulk: bool) -> Option<Action> {
        if self.armed.load(Ordering::Relaxed) & site.bit() == 0 {
            return None;
        }
        self.check_armed(site, bulk)
    }

    #[cold]
    fn check_armed(&self, site: Site, bulk: bool) -> Option<Action> {
        let mut rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        let slot = &mut rules[site as usize];
        let rule = slot.as_mut()?;
        if rule.action == Action::Corrupt && !bulk {
            return None;
        }
        if !rule.pass() {
            return None;
        }
        let action = rule.action;
        if rule.when == When::Once {
            *slot = None;
            self.armed.fetch_and(!site.bit(), Ordering::Release);
        }
        drop(rules);
        self.injected.fetch_add(1, Ordering::Relaxed);
        tracing::debug!(%site, %action, "fail point fired");
        Some(action)
    }

    /// Passes `site`: does nothing when it does not fire; stalls for a delay and kills the
    /// process for an abort, then goes on; loses the served request's reply for a drop at a
    /// server's site. What is left for the caller to do is returned.
    pub async fn pass(&self, site: Site) -> Result<(), Injected> {
        let Some(action) = self.check(site) else {
            return Ok(());
        };
        match action {
            Action::Delay(delay) => {
                tokio::time::sleep(delay).await;
                Ok(())
            }
            other => act(site, other),
        }
    }

    /// [`FailPoints::pass`] for a frame (with bulk bytes or not, see
    /// [`FailPoints::check_frame`]) where the caller cannot wait: a delay is returned to it.
    pub fn pass_frame(&self, site: Site, bulk: bool) -> Result<Option<Duration>, Injected> {
        match self.check_frame(site, bulk) {
            None => Ok(None),
            Some(Action::Delay(delay)) => Ok(Some(delay)),
            Some(other) => act(site, other).map(|()| None),
        }
    }
}

/// Carries out an abort or a reply drop; returns what the caller must do.
fn act(site: Site, action: Action) -> Result<(), Injected> {
    match action {
        Action::Delay(_) => Ok(()),
        Action::Abort => abort(site),
        Action::Errno(code) => Err(Injected::Errno(code)),
        Action::Corrupt => Err(Injected::Corrupt),
        Action::Drop if site.loses() == Loses::Reply => {
            let marked = REPLY_LOST.try_with(|lost| lost.store(true, Ordering::Relaxed));
            if marked.is_err() {
                tracing::warn!(%site, "fail point drop outside a served request: nothing to lose");
            }
            Ok(())
        }
        Action::Drop => Err(Injected::Drop),
    }
}

/// Kills the process, saying why on standard error first.
fn abort(site: Site) -> ! {
    eprintln!(
        "iopath: fail point {site} aborts the process (pid {})",
        std::process::id()
    );
    std::process::abort()
}

/// Which NIDs a network rule matches: `*`, `*@NET` or one NID.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NidPattern {
    /// Every NID.
    Any,
    /// Every NID on this network (`tcp0`).
    Net(NetId),
    /// This NID.
    One(Nid),
}

impl NidPattern {
    fn matches(&self, nid: &Nid) -> bool {
        match self {
            NidPattern::Any => true,
            NidPattern::Net(net) => nid.net == *net,
            NidPattern::One(one) => one == nid,
        }
    }
}

impl fmt::Display for NidPattern {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            NidPattern::Any => f.write_str("*"),
            NidPattern::Net(net) => write!(f, "*@{net}"),
            NidPattern::One(nid) => write!(f, "{nid}"),
        }
    }
}

impl FromStr for NidPattern {
    type Err = String;

    fn from_str(text: &str) -> Result<NidPattern, String> {
        if text == "*" {
            return Ok(NidPattern::Any);
        }
        if let Some(net) = text.strip_prefix("*@") {
            return net
                .parse::<NetId>()
                .map(NidPattern::Net)
                .map_err(|e| format!("{text:?}: {e}"));
        }
        text.parse::<Nid>()
            .map(NidPattern::One)
            .map_err(|e| format!("{text:?} is not *, *@NET or a NID: {e}"))
    }
}

/// A network rule: drop, or delay, one of every `rate` messages from `source` to `target`.
#[derive(Debug)]
struct NetRule {
    source: NidPattern,
    target: NidPattern,
    rate: u64,
    /// For a delay rule, how long.
    latency: Option<Duration>,
    seen: AtomicU64,
    hit: AtomicU64,
}

impl NetRule {
    /// A delay rule if it holds messages, a drop rule otherwise.
    fn kind(&self) -> NetKind {
        if self.latency.is_some() {
            NetKind::Delay
        } else {
            NetKind::Drop
        }
    }
}

/// LNet's fault rules (`net_drop_add`, `net_delay_add`) on what one node sends: a message from
/// a matching source to a matching target is dropped, or delayed, once in every `rate`
/// (deterministically: the `rate`-th, `2·rate`-th, ... match).
#[derive(Debug, Default)]
pub struct NetRules {
    count: AtomicU32,
    rules: Mutex<Vec<Arc<NetRule>>>,
    injected: AtomicU64,
}

/// Most network rules one node holds.
pub const NET_RULES_MAX: usize = 64;

/// What a network rule does to one message.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetFate {
    /// Sent as it is.
    Pass,
    /// Lost.
    Drop,
    /// Sent this much later.
    Delay(Duration),
}

impl NetRules {
    /// Applies a rule command: `add drop SRC DST RATE`, `add delay SRC DST RATE LATENCY`,
    /// `del drop|delay SRC DST` or `clear drop|delay`.
    pub fn command(&self, kind: NetKind, text: &str) -> Result<(), String> {
        let words: Vec<&str> = text.split_whitespace().collect();
        let mut rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        match words.as_slice() {
            ["clear"] => rules.retain(|r| r.kind() != kind),
            ["del", source, target] => {
                let (source, target) = (source.parse()?, target.parse()?);
                let before = rules.len();
                rules.retain(|r| !(r.kind() == kind && r.source == source && r.target == target));
                if rules.len() == before {
                    return Err(format!("no {kind} rule from {source} to {target}"));
                }
            }
            ["add", source, target, rest @ ..] => {
                if rules.len() >= NET_RULES_MAX {
                    return Err(format!(
                        "a node holds at most {NET_RULES_MAX} network rules"
                    ));
                }
                let rate = match rest.first().and_then(|r| r.strip_prefix("rate=")) {
                    Some(rate) => match rate.parse::<u64>() {
                        Ok(rate) if rate >= 1 => rate,
                        _ => return Err(format!("rate={rate}: give 1 or more (1 in every N)")),
                    },
                    None => return Err("give rate=N: one message in every N".to_owned()),
                };
                let latency = match (kind, rest.get(1)) {
                    (NetKind::Drop, None) => None,
                    (NetKind::Delay, Some(l)) => match l.strip_prefix("latency=") {
                        Some(l) => Some(parse_duration(l)?)
                            .filter(|d| *d <= DELAY_MAX)
                            .map_or_else(
                                || {
                                    Err(format!(
                                        "latency={l} is longer than {} s",
                                        DELAY_MAX.as_secs()
                                    ))
                                },
                                |d| Ok(Some(d)),
                            )?,
                        None => return Err(format!("{l:?}: give latency=DURATION")),
                    },
                    (NetKind::Delay, None) => {
                        return Err("a delay rule needs latency=DURATION".to_owned());
                    }
                    (NetKind::Drop, Some(extra)) => {
                        return Err(format!("a drop rule takes no {extra:?}"));
                    }
                };
                rules.push(Arc::new(NetRule {
                    source: source.parse()?,
                    target: target.parse()?,
                    rate,
                    latency,
                    seen: AtomicU64::new(0),
                    hit: AtomicU64::new(0),
                }));
            }
            _ => {
                return Err(format!(
                    "{text:?}: write add SRC DST rate=N{}, del SRC DST, or clear",
                    if kind == NetKind::Delay {
                        " latency=D"
                    } else {
                        ""
                    }
                ));
            }
        }
        self.count.store(rules.len() as u32, Ordering::Release);
        Ok(())
    }

    /// The rules of `kind`, a line each with its counts.
    pub fn list(&self, kind: NetKind) -> String {
        let rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        let lines: Vec<String> = rules
            .iter()
            .filter(|r| r.kind() == kind)
            .map(|r| {
                let latency = r
                    .latency
                    .map(|l| format!(" latency={}ms", l.as_millis()))
                    .unwrap_or_default();
                format!(
                    "{} {} rate={}{latency} seen={} {}={}",
                    r.source,
                    r.target,
                    r.rate,
                    r.seen.load(Ordering::Relaxed),
                    if kind == NetKind::Drop {
                        "dropped"
                    } else {
                        "delayed"
                    },
                    r.hit.load(Ordering::Relaxed)
                )
            })
            .collect();
        lines.join("\n")
    }

    /// Messages dropped or delayed by these rules.
    pub fn injected(&self) -> u64 {
        self.injected.load(Ordering::Relaxed)
    }

    /// What happens to the message `header` describes. No rules: one relaxed load.
    #[inline]
    pub fn fate(&self, header: &Header) -> NetFate {
        if self.count.load(Ordering::Relaxed) == 0 {
            return NetFate::Pass;
        }
        self.fate_ruled(header)
    }

    #[cold]
    fn fate_ruled(&self, header: &Header) -> NetFate {
        let rules = self.rules.lock().unwrap_or_else(PoisonError::into_inner);
        for rule in rules.iter() {
            if !(rule.source.matches(&header.source) && rule.target.matches(&header.target)) {
                continue;
            }
            let seen = rule.seen.fetch_add(1, Ordering::Relaxed) + 1;
            if !seen.is_multiple_of(rule.rate) {
                continue;
            }
            rule.hit.fetch_add(1, Ordering::Relaxed);
            self.injected.fetch_add(1, Ordering::Relaxed);
            return match rule.latency {
                Some(latency) => NetFate::Delay(latency),
                None => NetFate::Drop,
            };
        }
        NetFate::Pass
    }
}

/// A drop rule or a delay rule.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NetKind {
    /// `net_drop_add`.
    Drop,
    /// `net_delay_add`.
    Delay,
}

impl fmt::Display for NetKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            NetKind::Drop => "drop",
            NetKind::Delay => "delay",
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_spec_reads_as_written_and_refuses_what_its_site_cannot_do() {
        let spec: FailSpec = "oss.before_commit:delay=250ms:every=3".parse().unwrap();
        assert_eq!(spec.site, Site::OssBeforeCommit);
        assert_eq!(spec.action, Action::Delay(Duration::from_millis(250)));
        assert_eq!(spec.when, When::Every(3));
        let spec: FailSpec = "client.send:errno=ENOSPC:prob=0.5:seed=9".parse().unwrap();
        assert_eq!(spec.action, Action::Errno(errno::ENOSPC));
        assert_eq!((spec.when, spec.seed), (When::Probability(0.5), 9));

        let err = "router.forward:errno=5".parse::<FailSpec>().unwrap_err();
        assert!(err.contains("router.forward cannot errno=5"), "{err}");
        assert!(err.contains("delay, drop, corrupt, abort"), "{err}");
        let err = "oss.before_commit:drop".parse::<FailSpec>().unwrap_err();
        assert!(err.contains("cannot drop"), "{err}");
        let err = "oss.nowhere:drop".parse::<FailSpec>().unwrap_err();
        assert!(err.contains("the sites are client.send"), "{err}");
        let err = "client.send:delay=10000s".parse::<FailSpec>().unwrap_err();
        assert!(err.contains("longer than"), "{err}");
        let err = "client.send:drop:every=0".parse::<FailSpec>().unwrap_err();
        assert!(err.contains("at least 1"), "{err}");
        let err = "client.send:errno=0".parse::<FailSpec>().unwrap_err();
        assert!(err.contains("from 1 to 4095"), "{err}");
    }

    #[test]
    fn once_fires_once_every_n_fires_on_the_nth_and_off_disarms() {
        let points = FailPoints::new();
        assert_eq!(points.check(Site::ClientSend), None);
        points.set_fail_loc("client.send:drop:once").unwrap();
        assert_eq!(points.check(Site::ClientSend), Some(Action::Drop));
        assert_eq!(points.check(Site::ClientSend), None, "once means once");
        assert_eq!(points.fail_loc(), "off");

        points
            .set_fail_loc("oss.after_write:errno=5:every=3")
            .unwrap();
        let fired: Vec<bool> = (0..6)
            .map(|_| points.check(Site::OssAfterWrite).is_some())
            .collect();
        assert_eq!(fired, [false, false, true, false, false, true]);
        assert!(
            points.fail_loc().contains("passes=6 fired=2"),
            "{}",
            points.fail_loc()
        );
        assert_eq!(
            points.check(Site::OssBeforeReply),
            None,
            "other sites stay off"
        );
        assert_eq!(points.injected(), 3);

        points.set_fail_loc("oss.after_write:off").unwrap();
        assert_eq!(points.check(Site::OssAfterWrite), None);
        points.set_fail_loc("mds.after_log:delay=1ms").unwrap();
        points.set_fail_loc("off").unwrap();
        assert_eq!(points.fail_loc(), "off");
    }

    #[test]
    fn a_probability_is_repeatable_from_its_seed() {
        let draws = |seed: u64| {
            let points = FailPoints::new();
            points
                .set_fail_loc(&format!("bulk.send:corrupt:prob=0.3:seed={seed}"))
                .unwrap();
            (0..200)
                .map(|_| points.check(Site::BulkSend).is_some())
                .collect::<Vec<_>>()
        };
        let first = draws(7);
        assert_eq!(first, draws(7));
        assert_ne!(first, draws(8));
        let fired = first.iter().filter(|f| **f).count();
        assert!((30..90).contains(&fired), "{fired} of 200 at 0.3");
    }

    #[tokio::test]
    async fn a_drop_at_a_server_site_loses_the_reply_and_at_a_sender_the_message() {
        let points = FailPoints::new();
        points.set_fail_loc("oss.before_reply:drop").unwrap();
        let (result, lost) = serving(points.pass(Site::OssBeforeReply)).await;
        assert_eq!((result, lost), (Ok(()), true));
        let (_, lost) = serving(async {}).await;
        assert!(!lost);
        points.set_fail_loc("client.send:drop").unwrap();
        let (result, lost) = serving(points.pass(Site::ClientSend)).await;
        assert_eq!((result, lost), (Err(Injected::Drop), false));
        points.set_fail_loc("fyod.reply:errno=ENOSPC").unwrap();
        assert_eq!(
            points.pass(Site::FyodReply).await,
            Err(Injected::Errno(errno::ENOSPC))
        );
    }

    #[test]
    fn network_rules_match_source_and_target_and_hit_one_in_rate() {
        let rules = NetRules::default();
        let a: Nid = "1@mem0".parse().unwrap();
        let b: Nid = "2@mem0".parse().unwrap();
        let header = |s: Nid, t: Nid| Header::new(crate::frame::Kind::Put, s, t);
        assert_eq!(rules.fate(&header(a, b)), NetFate::Pass);
        rules
            .command(NetKind::Drop, "add 1@mem0 *@mem0 rate=2")
            .unwrap();
        rules
            .command(NetKind::Delay, "add * 1@mem0 rate=1 latency=5ms")
            .unwrap();
        let fates: Vec<_> = (0..4).map(|_| rules.fate(&header(a, b))).collect();
        assert_eq!(
            fates,
            [NetFate::Pass, NetFate::Drop, NetFate::Pass, NetFate::Drop]
        );
        assert_eq!(
            rules.fate(&header(b, a)),
            NetFate::Delay(Duration::from_millis(5))
        );
        assert!(rules.list(NetKind::Drop).contains("seen=4 dropped=2"));
        assert_eq!(rules.injected(), 3);
        let err = rules.command(NetKind::Drop, "del 9@mem0 *").unwrap_err();
        assert!(err.contains("no drop rule"), "{err}");
        rules.command(NetKind::Drop, "del 1@mem0 *@mem0").unwrap();
        assert_eq!(rules.list(NetKind::Drop), "");
        let err = rules.command(NetKind::Delay, "add * * rate=1").unwrap_err();
        assert!(err.contains("latency"), "{err}");
        let err = rules
            .command(NetKind::Drop, "add nowhere * rate=1")
            .unwrap_err();
        assert!(err.contains("not *, *@NET or a NID"), "{err}");
        rules.command(NetKind::Delay, "clear").unwrap();
        assert_eq!(rules.fate(&header(b, a)), NetFate::Pass);
    }
}
