//! The admin gRPC service every node runs: the parameter tree, node status, and shutdown.
//!
//! [`serve`] binds the listener itself (so port 0 works and the caller learns the port), then
//! serves on a task until the node's [`Shutdown`] fires — whether from the `Shutdown` RPC or
//! from the node — and drains in-flight calls before the task ends. The reply to the
//! `Shutdown` RPC itself is one of those in-flight calls, so the caller always gets it.

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

use crate::error::{AdminError, chain};
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
}

impl AdminService {
    /// A service over `tree` for `node`, whose `Shutdown` RPC fires `shutdown`.
    pub fn new(tree: ParamTree, node: NodeInfo, shutdown: Shutdown) -> AdminService {
        AdminService {
            tree,
            node,
            shutdown,
        }
    }
}

/// The gRPC status for a tree error: the code says what kind, the message says which param.
fn to_status(err: AdminError) -> Status {
    let message = err.to_string();
    match err {
        AdminError::NoMatch { .. } => Status::not_found(message),
        AdminError::ReadOnly { .. } => Status::permission_denied(message),
        AdminError::InvalidPattern { .. }
        | AdminError::ValueTooLong { .. }
        | AdminError::Rejected { .. } => Status::invalid_argument(message),
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
/// until `shutdown` fires. Returns once the listener is bound, so calls can be made at once.
pub async fn serve(
    addr: SocketAddr,
    tree: ParamTree,
    node: NodeInfo,
    shutdown: Shutdown,
) -> Result<AdminHandle, AdminError> {
    let (listener, local_addr) = bind(addr).await?;
    let service = AdminServer::new(AdminService::new(tree, node, shutdown.clone()));
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
    use std::time::Duration;

    fn service() -> (AdminService, Shutdown) {
        let tree = ParamTree::new();
        tree.register("fabric.tcp0.credits", Param::read_only(|| "8".into()))
            .unwrap();
        let node = NodeInfo::new(vec!["127.0.0.1:7001@tcp0".into()], vec!["oss".into()]);
        let shutdown = Shutdown::new();
        (AdminService::new(tree, node, shutdown.clone()), shutdown)
    }

    #[tokio::test(start_paused = true)]
    async fn status_reports_the_node_and_its_uptime() {
        let (service, _) = service();
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
        let (service, _) = service();
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
        let set = SetParamRequest {
            pattern: "fabric.tcp0.credits".into(),
            value: "4".into(),
        };
        let status = service.set_param(Request::new(set)).await.unwrap_err();
        assert_eq!(status.code(), tonic::Code::PermissionDenied);
        assert_eq!(
            status.message(),
            "parameter fabric.tcp0.credits is read-only"
        );
    }

    #[tokio::test]
    async fn shutdown_rpc_fires_the_signal_with_its_reason() {
        let (service, shutdown) = service();
        let request = ShutdownRequest {
            reason: String::new(),
        };
        service.shutdown(Request::new(request)).await.unwrap();
        assert_eq!(shutdown.triggered().await, "asked over the admin service");
    }
}
