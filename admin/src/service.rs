//! The admin gRPC service every node runs: the parameter tree, node status, and shutdown.
//!
//! [`serve`] binds the listener itself (so port 0 works and the caller learns the port), then
//! serves on a task until the node's [`Shutdown`] fires — whether from the `Shutdown` RPC or
//! from the node — and drains in-flight calls before the task ends. The reply to the
//! `Shutdown` RPC itself is one of those in-flight calls, so the caller always gets it.
//!
//! What changes the node — `SetParam` (fail points included: they are parameters) and
//! `Shutdown` — needs the stack's [`Secret`] in the call's metadata; a call without it, or
//! with another, is refused as `Unauthenticated` and changes nothing. `GetParam`, `ListParam`
//! and `Status` only read, and stay open.

use std::net::SocketAddr;

use iopath_proto::admin::admin_server::{Admin, AdminServer};
use iopath_proto::admin::{
    GetParamReply, GetParamRequest, ListParamReply, ListParamRequest, Param as WireParam,
    SetParamReply, SetParamRequest, ShutdownReply, ShutdownRequest, StatusReply, StatusRequest,
};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;
use tokio::time::Instant;
use tonic::transport::Server;
use tonic::transport::server::TcpIncoming;
use tonic::{Request, Response, Status};

use iopath_lprocfs::ParamError;

use crate::error::{AdminError, chain};
use crate::secret::{METADATA_KEY, SCHEME, Secret};
use crate::shutdown::Shutdown;
use crate::tree::ParamTree;

/// Calls served at once on one connection; admin traffic is a person or a script.
pub const CONCURRENT_CALLS_PER_CONNECTION_MAX: usize = 16;

/// Who a node is, for the `Status` RPC; supplied by the node that runs the service.
#[derive(Clone, Debug)]
pub struct NodeInfo {
    /// The node's NIDs as text, e.g. `127.0.0.1:7001@tcp0`.
    pub nids: Vec<String>,
    /// The roles this process plays: `selftest-server`, `oss`, `fyod`, `router`, ...
    pub roles: Vec<String>,
    /// The operating-system process id.
    pub pid: u32,
    /// The software version.
    pub version: String,
    /// When the node started; uptime counts from here.
    pub started: Instant,
}

impl NodeInfo {
    /// A node starting now, in this process, at this crate's version.
    pub fn new(nids: Vec<String>, roles: Vec<String>) -> NodeInfo {
        NodeInfo {
            nids,
            roles,
            pid: std::process::id(),
            version: env!("CARGO_PKG_VERSION").to_owned(),
            started: Instant::now(),
        }
    }
}

/// The `Admin` service over one node's tree.
#[derive(Debug)]
pub struct AdminService {
    /// The parameters it serves.
    tree: ParamTree,
    /// What `Status` reports.
    node: NodeInfo,
    /// Fired by the `Shutdown` RPC.
    shutdown: Shutdown,
    /// What `SetParam` and `Shutdown` callers must present.
    secret: Secret,
}

impl AdminService {
    /// A service over `tree` for `node`, whose `Shutdown` RPC fires `shutdown`, and whose
    /// `SetParam` and `Shutdown` need `secret`.
    pub fn new(
        tree: ParamTree,
        node: NodeInfo,
        shutdown: Shutdown,
        secret: Secret,
    ) -> AdminService {
        AdminService {
            tree,
            node,
            shutdown,
            secret,
        }
    }

    /// Lets `call` go ahead only if `metadata` carries this node's secret; otherwise the
    /// refusal says what was missing or wrong and how to send the right one.
    fn authorize(&self, metadata: &tonic::metadata::MetadataMap, call: &str) -> Result<(), Status> {
        let refusal = match presented_secret(metadata) {
            Presented::Secret(secret) if secret.matches(&self.secret) => return Ok(()),
            Presented::Secret(_) => format!(
                "{call} refused: the admin secret sent is not this node's; pass the secret file \
                 of the stack this node belongs to"
            ),
            Presented::Malformed(why) => format!("{call} refused: {why}"),
            Presented::Nothing => format!("{call} refused: no admin secret was sent"),
        };
        tracing::warn!(%call, "{refusal}");
        Err(Status::unauthenticated(format!("{refusal}. {SECRET_HINT}")))
    }
}

/// What a refused caller is told to do.
const SECRET_HINT: &str = "set_param and shutdown need this stack's admin secret: pass \
     --secret-file FILE (or set IOPATH_ADMIN_SECRET_FILE), FILE being where iopath up or \
     iopath launch said it wrote the secret";

/// What a call's metadata holds where the secret goes.
enum Presented {
    /// No `authorization` entry.
    Nothing,
    /// An entry that is not `iopath-secret <64 hex digits>`: why not.
    Malformed(String),
    /// A well-formed secret (not yet compared).
    Secret(Secret),
}

/// Reads the secret a caller sent in `metadata`, if any.
fn presented_secret(metadata: &tonic::metadata::MetadataMap) -> Presented {
    let Some(value) = metadata.get(METADATA_KEY) else {
        return Presented::Nothing;
    };
    let Some(hex) = value
        .to_str()
        .ok()
        .and_then(|text| text.strip_prefix(SCHEME))
        .and_then(|rest| rest.strip_prefix(' '))
    else {
        return Presented::Malformed(format!(
            "the {METADATA_KEY} metadata is not \"{SCHEME} <secret>\""
        ));
    };
    match Secret::from_hex(hex, "the secret sent") {
        Ok(secret) => Presented::Secret(secret),
        Err(e) => Presented::Malformed(e.to_string()),
    }
}

/// The gRPC status for a tree error: the code says what kind, the message says which param.
fn to_status(err: ParamError) -> Status {
    let message = err.to_string();
    match err {
        ParamError::NoMatch { .. } => Status::not_found(message),
        ParamError::ReadOnly { .. } => Status::permission_denied(message),
        ParamError::InvalidPattern { .. }
        | ParamError::ValueTooLong { .. }
        | ParamError::Rejected { .. } => Status::invalid_argument(message),
        _ => Status::internal(message),
    }
}

#[tonic::async_trait]
impl Admin for AdminService {
    async fn get_param(
        &self,
        request: Request<GetParamRequest>,
    ) -> Result<Response<GetParamReply>, Status> {
        let pattern = request.into_inner().pattern;
        let values = self.tree.get(&pattern).map_err(to_status)?;
        let params = values
            .into_iter()
            .map(|p| WireParam {
                name: p.name,
                value: p.value,
                writable: p.writable,
            })
            .collect();
        Ok(Response::new(GetParamReply { params }))
    }

    async fn set_param(
        &self,
        request: Request<SetParamRequest>,
    ) -> Result<Response<SetParamReply>, Status> {
        self.authorize(request.metadata(), "set_param")?;
        let SetParamRequest { pattern, value } = request.into_inner();
        match self.tree.set(&pattern, &value) {
            Ok(names) => {
                tracing::info!(%pattern, %value, ?names, "set_param");
                Ok(Response::new(SetParamReply { names }))
            }
            Err(err) => {
                tracing::warn!(%pattern, %value, error = %err, "set_param refused");
                Err(to_status(err))
            }
        }
    }

    async fn list_param(
        &self,
        request: Request<ListParamRequest>,
    ) -> Result<Response<ListParamReply>, Status> {
        let pattern = request.into_inner().pattern;
        let listed = self.tree.list(&pattern).map_err(to_status)?;
        let params = listed
            .into_iter()
            .map(|p| WireParam {
                name: p.name,
                value: String::new(),
                writable: p.writable,
            })
            .collect();
        Ok(Response::new(ListParamReply { params }))
    }

    async fn status(
        &self,
        _request: Request<StatusRequest>,
    ) -> Result<Response<StatusReply>, Status> {
        let uptime_ms = u64::try_from(self.node.started.elapsed().as_millis()).unwrap_or(u64::MAX);
        Ok(Response::new(StatusReply {
            nids: self.node.nids.clone(),
            roles: self.node.roles.clone(),
            uptime_ms,
            pid: self.node.pid,
            version: self.node.version.clone(),
        }))
    }

    async fn shutdown(
        &self,
        request: Request<ShutdownRequest>,
    ) -> Result<Response<ShutdownReply>, Status> {
        self.authorize(request.metadata(), "shutdown")?;
        let mut reason = request.into_inner().reason;
        if reason.is_empty() {
            reason = "asked over the admin service".to_owned();
        }
        if self.shutdown.trigger(&reason) {
            tracing::info!(%reason, "shutdown requested");
        }
        Ok(Response::new(ShutdownReply {}))
    }
}

/// A running admin service: where it listens, and its task.
#[derive(Debug)]
pub struct AdminHandle {
    /// The address actually bound (the real port when port 0 was asked for).
    local_addr: SocketAddr,
    /// The server task; ends after the shutdown signal, once in-flight calls are done.
    task: JoinHandle<Result<(), AdminError>>,
}

impl AdminHandle {
    /// The address the service listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.local_addr
    }

    /// Whether the server task has ended.
    pub fn is_finished(&self) -> bool {
        self.task.is_finished()
    }

    /// Waits for the server task to end (after the shutdown signal fires) and returns how it
    /// ended. Dropping the handle instead leaves the service running until the signal.
    pub async fn join(self) -> Result<(), AdminError> {
        match self.task.await {
            Ok(result) => result,
            Err(err) if err.is_panic() => std::panic::resume_unwind(err.into_panic()),
            Err(err) => Err(AdminError::Serve {
                addr: self.local_addr,
                detail: err.to_string(),
            }),
        }
    }
}

/// Binds `addr` (port 0 picks a free port): the listener and the address it got. The admin
/// service and `/metrics` both listen through it.
pub(crate) async fn bind(addr: SocketAddr) -> Result<(TcpListener, SocketAddr), AdminError> {
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| AdminError::Bind { addr, source })?;
    let local_addr = listener
        .local_addr()
        .map_err(|source| AdminError::Bind { addr, source })?;
    Ok((listener, local_addr))
}

/// Binds `addr` (port 0 picks a free port) and serves `tree` and `node` there on a new task
/// until `shutdown` fires, changes allowed only to callers who present `secret`. Returns once
/// the listener is bound, so calls can be made at once.
pub async fn serve(
    addr: SocketAddr,
    tree: ParamTree,
    node: NodeInfo,
    shutdown: Shutdown,
    secret: Secret,
) -> Result<AdminHandle, AdminError> {
    let (listener, local_addr) = bind(addr).await?;
    let service = AdminServer::new(AdminService::new(tree, node, shutdown.clone(), secret));
    // Admin replies are small; don't let Nagle hold them back.
    let incoming = TcpIncoming::from(listener).with_nodelay(Some(true));
    tracing::info!(%local_addr, "admin service listening");
    let task = tokio::spawn(async move {
        // When the signal fires, tonic stops accepting, lets in-flight calls finish
        // (including the `Shutdown` call that fired it), closes connections and returns.
        let stop = async move {
            let reason = shutdown.triggered().await;
            tracing::info!(%local_addr, %reason, "admin service stopping");
        };
        Server::builder()
            .concurrency_limit_per_connection(CONCURRENT_CALLS_PER_CONNECTION_MAX)
            .add_service(service)
            .serve_with_incoming_shutdown(incoming, stop)
            .await
            .map_err(|err| AdminError::Serve {
                addr: local_addr,
                detail: chain(&err),
            })
    });
    Ok(AdminHandle { local_addr, task })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::param::Param;
    use std::sync::Arc;
    use std::sync::atomic::AtomicU64;
    use std::time::Duration;

    fn service() -> (AdminService, Shutdown, Secret) {
        let tree = ParamTree::new();
        tree.register("fabric.tcp0.credits", Param::read_only(|| "8".into()))
            .unwrap();
        let fail_loc = Arc::new(AtomicU64::new(0));
        tree.register("fail_loc", Param::u64(fail_loc, 0..=0xffff))
            .unwrap();
        let node = NodeInfo::new(vec!["127.0.0.1:7001@tcp0".into()], vec!["oss".into()]);
        let shutdown = Shutdown::new();
        let secret = Secret::generate().unwrap();
        let service = AdminService::new(tree, node, shutdown.clone(), secret.clone());
        (service, shutdown, secret)
    }

    /// `message` in a request carrying `secret`, if any, as a client would send it.
    fn signed<T>(message: T, secret: Option<&Secret>) -> Request<T> {
        let mut request = Request::new(message);
        if let Some(secret) = secret {
            request
                .metadata_mut()
                .insert(METADATA_KEY, secret.header_value().parse().unwrap());
        }
        request
    }

    fn set(pattern: &str, value: &str) -> SetParamRequest {
        SetParamRequest {
            pattern: pattern.into(),
            value: value.into(),
        }
    }

    #[tokio::test(start_paused = true)]
    async fn status_reports_the_node_and_its_uptime() {
        let (service, _, _) = service();
        tokio::time::advance(Duration::from_millis(1500)).await;
        let status = service
            .status(Request::new(StatusRequest {}))
            .await
            .unwrap()
            .into_inner();
        assert_eq!(status.uptime_ms, 1500);
        assert_eq!(status.nids, ["127.0.0.1:7001@tcp0"]);
        assert_eq!(status.roles, ["oss"]);
        assert_eq!(status.pid, std::process::id());
        assert_eq!(status.version, env!("CARGO_PKG_VERSION"));
    }

    #[tokio::test]
    async fn errors_map_to_status_codes_that_name_the_param() {
        let (service, _, secret) = service();
        let get = |pattern: &str| GetParamRequest {
            pattern: pattern.into(),
        };
        let status = service
            .get_param(Request::new(get("lnet.*")))
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::NotFound);
        assert_eq!(status.message(), "no parameter matches lnet.*");
        let status = service
            .get_param(Request::new(get("a..b")))
            .await
            .unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        let request = signed(set("fabric.tcp0.credits", "4"), Some(&secret));
        let status = service.set_param(request).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
        assert_eq!(
            status.message(),
            "parameter fabric.tcp0.credits is read-only"
        );
        let request = signed(set("fail_loc", "65536"), Some(&secret));
        let status = service.set_param(request).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::InvalidArgument);
        assert_eq!(
            status.message(),
            "fail_loc: cannot set \"65536\": 65536 is outside 0..=65535"
        );
    }

    #[tokio::test]
    async fn set_param_without_the_secret_is_refused_and_changes_nothing() {
        let (service, _, secret) = service();
        let other = Secret::generate().unwrap();
        for (presented, said) in [
            (None, "set_param refused: no admin secret was sent."),
            (
                Some(&other),
                "set_param refused: the admin secret sent is not this node's",
            ),
        ] {
            let request = signed(set("fail_loc", "0x1"), presented);
            let status = service.set_param(request).await.unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated);
            assert!(status.message().starts_with(said), "{}", status.message());
            assert!(
                status.message().contains("--secret-file FILE"),
                "the refusal says what to do: {}",
                status.message()
            );
        }
        // A malformed header is refused too, and says what is wrong with it.
        let mut request = Request::new(set("fail_loc", "1"));
        let metadata = request.metadata_mut();
        metadata.insert(METADATA_KEY, "Bearer 1234".parse().unwrap());
        let status = service.set_param(request).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::Unauthenticated);
        assert!(
            status
                .message()
                .contains("is not \"iopath-secret <secret>\""),
            "{}",
            status.message()
        );
        let get = |pattern: &str| {
            Request::new(GetParamRequest {
                pattern: pattern.into(),
            })
        };
        let value = |reply: Response<GetParamReply>| reply.into_inner().params[0].value.clone();
        // Reads stay open, and show nothing was set.
        assert_eq!(
            value(service.get_param(get("fail_loc")).await.unwrap()),
            "0"
        );
        let request = signed(set("fail_loc", "1"), Some(&secret));
        service.set_param(request).await.unwrap();
        assert_eq!(
            value(service.get_param(get("fail_loc")).await.unwrap()),
            "1"
        );
    }

    #[tokio::test]
    async fn shutdown_rpc_fires_the_signal_with_its_reason() {
        let (service, shutdown, secret) = service();
        let request = ShutdownRequest {
            reason: String::new(),
        };
        service
            .shutdown(signed(request, Some(&secret)))
            .await
            .unwrap();
        assert_eq!(shutdown.triggered().await, "asked over the admin service");
    }

    #[tokio::test]
    async fn shutdown_without_the_secret_is_refused_and_the_node_runs_on() {
        let (service, shutdown, _) = service();
        let other = Secret::generate().unwrap();
        for presented in [None, Some(&other)] {
            let request = ShutdownRequest {
                reason: "not mine to stop".into(),
            };
            let status = service
                .shutdown(signed(request, presented))
                .await
                .unwrap_err();
            assert_eq!(status.code(), tonic::Code::Unauthenticated);
            assert!(
                status.message().starts_with("shutdown refused: "),
                "{}",
                status.message()
            );
        }
        assert_eq!(shutdown.reason(), None, "the signal did not fire");
    }
}
