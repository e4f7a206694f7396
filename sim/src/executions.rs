//! Execute-once, checked: every request a simulated server executes — a storage server, the
//! metadata server, a fyod — is logged by a wrapper in front of its service ([`Counted`] for
//! a storage server, which also notes what each write was; [`CountedService`] for the
//! others), and [`ExecutionLog::check`] — a pure check — finds any (client NID, xid) executed
//! more than once in one server life: the reply cache let a resend through.
//!
//! Across a crash the front cannot tell an execution from an answer: a replay at or below the
//! target's `last_committed` is answered "already committed" without running, with the same
//! reply a run would give, and the metadata server answers a resent change from the reply it
//! logged with it. A storage replay applied twice is caught by the data oracle instead where
//! it matters — an older write run again over a newer acknowledged one reads back wrong — and
//! a metadata change run twice by the namespace oracle (a create told EEXIST, an unlink told
//! ENOENT).

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex, PoisonError};

use iopath_fabric::rpc::{Reply, Request, Service};
use iopath_ost_client::opcode;
use iopath_proto::ost as pb;
use iopath_storage_server::service::OssService;
use prost::Message as _;

/// Which kind of server executed a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Role {
    /// A storage server (OSS).
    Oss,
    /// The metadata server.
    Mds,
    /// A fyod.
    Fyod,
}

impl std::fmt::Display for Role {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Role::Oss => "server",
            Role::Mds => "mds",
            Role::Fyod => "fyod",
        })
    }
}

/// One executed request, as the server's front saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Execution {
    /// Which kind of server.
    pub role: Role,
    /// Which simulated server of its kind (its index).
    pub server: usize,
    /// Which of its lives (0 until its first crash).
    pub life: u32,
    /// The requesting node.
    pub source: String,
    /// The request's xid.
    pub xid: u64,
    /// Its opcode.
    pub opcode: u32,
    /// For writes: the target, and the transno the reply carried (0 when it failed).
    pub write: Option<WriteExecution>,
}

/// What a write's execution was.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteExecution {
    /// The target written.
    pub target: u32,
    /// The transno it was given (0: it failed).
    pub transno: u64,
    /// Non-zero for a replay: the transno of the execution it repeats.
    pub replay_of: u64,
}

/// A request that ran twice.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Twice {
    /// What happened, for a person.
    pub what: String,
}

impl std::fmt::Display for Twice {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.what)
    }
}

/// Every execution, in order, shared by the servers' fronts.
#[derive(Debug, Default)]
pub struct ExecutionLog {
    executions: Mutex<Vec<Execution>>,
}

impl ExecutionLog {
    /// An empty log.
    pub fn new() -> Arc<ExecutionLog> {
        Arc::new(ExecutionLog::default())
    }

    /// Records one execution.
    pub fn record(&self, execution: Execution) {
        self.lock().push(execution);
    }

    /// Executions so far.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether none were recorded.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Finds requests that ran twice in one server life.
    pub fn check(&self) -> Vec<Twice> {
        check(&self.lock())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Vec<Execution>> {
        self.executions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }
}

/// [`ExecutionLog::check`] on a list of executions.
pub fn check(executions: &[Execution]) -> Vec<Twice> {
    let mut found = Vec::new();
    let mut per_life: BTreeMap<(Role, usize, u32, &str, u64), u32> = BTreeMap::new();
    for e in executions {
        let count = per_life
            .entry((e.role, e.server, e.life, e.source.as_str(), e.xid))
            .or_default();
        *count += 1;
        if *count == 2 {
            found.push(Twice {
                what: format!(
                    "{} {} life {}: {} xid {} (opcode {}) executed more than once",
                    e.role, e.server, e.life, e.source, e.xid, e.opcode
                ),
            });
        }
    }
    found
}

/// A storage server's service with every execution logged: what the simulation puts on the
/// server's portal ([`OssService::open_on_engine`]'s front).
#[derive(Debug)]
pub struct Counted {
    /// The service that executes.
    pub inner: Arc<OssService>,
    /// Where executions go.
    pub log: Arc<ExecutionLog>,
    /// The server's index.
    pub server: usize,
    /// The server's life.
    pub life: u32,
}

impl Service for Counted {
    fn handle(self: Arc<Self>, request: Request) -> Reply {
        let source = request.source.to_string();
        let (xid, op) = (request.xid, request.opcode);
        let write = (op == opcode::WRITE)
            .then(|| pb::WriteRequest::decode(request.body.as_ref()).ok())
            .flatten();
        let reply = Arc::clone(&self.inner).handle(request);
        Box::pin(async move {
            let reply = reply.await;
            let write = write.map(|w| WriteExecution {
                target: w.target,
                transno: reply
                    .as_ref()
                    .ok()
                    .and_then(|body| pb::OpReply::decode(body.as_ref()).ok())
                    .map_or(0, |r| r.transno),
                replay_of: w.replay_transno,
            });
            self.log.record(Execution {
                role: Role::Oss,
                server: self.server,
                life: self.life,
                source,
                xid,
                opcode: op,
                write,
            });
            reply
        })
    }

    fn op_name(&self, opcode: u32) -> Option<&'static str> {
        self.inner.op_name(opcode)
    }
}

/// Any other server's service with every execution logged: the metadata server's, a
/// fyod's.
pub struct CountedService {
    /// The service that executes.
    pub inner: Arc<dyn Service>,
    /// Where executions go.
    pub log: Arc<ExecutionLog>,
    /// The server's kind.
    pub role: Role,
    /// The server's index among its kind.
    pub server: usize,
    /// The server's life.
    pub life: u32,
}

impl std::fmt::Debug for CountedService {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "CountedService({} {} life {})",
            self.role, self.server, self.life
        )
    }
}

impl Service for CountedService {
    fn handle(self: Arc<Self>, request: Request) -> Reply {
        let source = request.source.to_string();
        let (xid, opcode) = (request.xid, request.opcode);
        let reply = Arc::clone(&self.inner).handle(request);
        Box::pin(async move {
            let reply = reply.await;
            self.log.record(Execution {
                role: self.role,
                server: self.server,
                life: self.life,
                source,
                xid,
                opcode,
                write: None,
            });
            reply
        })
    }

    fn op_name(&self, opcode: u32) -> Option<&'static str> {
        self.inner.op_name(opcode)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(life: u32, xid: u64, transno: u64, replay_of: u64) -> Execution {
        Execution {
            role: Role::Oss,
            server: 0,
            life,
            source: "100@mem0".into(),
            xid,
            opcode: opcode::WRITE,
            write: Some(WriteExecution {
                target: 0,
                transno,
                replay_of,
            }),
        }
    }

    #[test]
    fn one_xid_executed_twice_in_one_life_is_caught() {
        let log = [write(0, 7, 1, 0), write(0, 7, 2, 0)];
        let found = check(&log);
        assert_eq!(found.len(), 1);
        assert!(found[0].what.contains("xid 7"), "{}", found[0]);
        // The same xid in the next life (a resend to the restarted server) is another life's.
        assert!(check(&[write(0, 7, 1, 0), write(1, 7, 1, 0)]).is_empty());
        // And the same xid at another kind of server is another server's.
        let at_mds = Execution {
            role: Role::Mds,
            ..write(0, 7, 1, 0)
        };
        assert!(check(&[write(0, 7, 1, 0), at_mds.clone()]).is_empty());
        assert_eq!(check(&[at_mds.clone(), at_mds]).len(), 1);
    }
}
