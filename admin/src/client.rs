//! A client of one node's admin service, used by `iopath lctl` and by tests. Reads need
//! nothing more than the address; `set_param` and `shutdown` need the stack's [`Secret`],
//! given with [`Client::with_secret`].

use std::net::SocketAddr;
use std::time::Duration;

use iopath_proto::admin::admin_client::AdminClient;
use iopath_proto::admin::{
    GetParamRequest, ListParamRequest, SetParamRequest, ShutdownRequest, StatusReply, StatusRequest,
};
use tonic::transport::{Channel, Endpoint};

use crate::error::{AdminError, chain};
use crate::secret::{METADATA_KEY, Secret};
use crate::tree::{ParamInfo, ParamValue};

/// How long to wait for the TCP connection to an admin service.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(5);

/// How long to wait for any one call's reply.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(30);

/// A connection to the admin service at one address. Clones share the connection.
#[derive(Clone, Debug)]
pub struct Client {
    /// Where the service is, for error messages.
    addr: SocketAddr,
    /// The generated gRPC client.
    inner: AdminClient<Channel>,
    /// Sent with the calls that change the node, if given.
    secret: Option<Secret>,
}

impl Client {
    /// Connects to the admin service at `addr`; the error names the address if it cannot.
    pub async fn connect(addr: SocketAddr) -> Result<Client, AdminError> {
        let unreachable = |err: &dyn std::error::Error| AdminError::Connect {
            addr,
            detail: chain(err),
        };
        let endpoint = Endpoint::from_shared(format!("http://{addr}"))
            .map_err(|err| unreachable(&err))?
            .connect_timeout(CONNECT_TIMEOUT)
            .timeout(CALL_TIMEOUT);
        let channel = endpoint.connect().await.map_err(|err| unreachable(&err))?;
        Ok(Client {
            addr,
            inner: AdminClient::new(channel),
            secret: None,
        })
    }

    /// The same connection, sending `secret` with `set_param` and `shutdown` (which a node
    /// refuses without its stack's secret). Reads never send it.
    pub fn with_secret(mut self, secret: Secret) -> Client {
        self.secret = Some(secret);
        self
    }

    /// `message` as a request carrying the secret, if this client has one.
    fn signed<T>(&self, message: T) -> tonic::Request<T> {
        let mut request = tonic::Request::new(message);
        if let Some(secret) = &self.secret {
            // 14 ASCII letters, a space and 64 hex digits: always a valid metadata value.
            let value = secret
                .header_value()
                .parse()
                .expect("a secret's header value is printable ASCII");
            request.metadata_mut().insert(METADATA_KEY, value);
        }
        request
    }

    /// The service's address.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// Names and values of the parameters matching `pattern`, in name order.
    pub async fn get_param(&self, pattern: &str) -> Result<Vec<ParamValue>, AdminError> {
        let request = GetParamRequest {
            pattern: pattern.to_owned(),
        };
        let reply = self
            .inner
            .clone()
            .get_param(request)
            .await
            .map_err(|s| self.remote(s))?;
        Ok(reply
            .into_inner()
            .params
            .into_iter()
            .map(|p| ParamValue {
                name: p.name,
                value: p.value,
                writable: p.writable,
            })
            .collect())
    }

    /// Sets every parameter matching `pattern` to `value`; the names set. Refused
    /// (`Unauthenticated`) unless the client was given the stack's secret.
    pub async fn set_param(&self, pattern: &str, value: &str) -> Result<Vec<String>, AdminError> {
        let request = self.signed(SetParamRequest {
            pattern: pattern.to_owned(),
            value: value.to_owned(),
        });
        let reply = self
            .inner
            .clone()
            .set_param(request)
            .await
            .map_err(|s| self.remote(s))?;
        Ok(reply.into_inner().names)
    }

    /// Names of the parameters matching `pattern` or below a match, in name order.
    pub async fn list_param(&self, pattern: &str) -> Result<Vec<ParamInfo>, AdminError> {
        let request = ListParamRequest {
            pattern: pattern.to_owned(),
        };
        let reply = self
            .inner
            .clone()
            .list_param(request)
            .await
            .map_err(|s| self.remote(s))?;
        Ok(reply
            .into_inner()
            .params
            .into_iter()
            .map(|p| ParamInfo {
                name: p.name,
                writable: p.writable,
            })
            .collect())
    }

    /// The node's NIDs, roles, uptime, pid and version.
    pub async fn status(&self) -> Result<StatusReply, AdminError> {
        let reply = self
            .inner
            .clone()
            .status(StatusRequest {})
            .await
            .map_err(|s| self.remote(s))?;
        Ok(reply.into_inner())
    }

    /// Asks the node to stop, giving `reason` for its log. Returns once the node has the request.
    /// Refused (`Unauthenticated`) unless the client was given the stack's secret.
    pub async fn shutdown(&self, reason: &str) -> Result<(), AdminError> {
        let request = self.signed(ShutdownRequest {
            reason: reason.to_owned(),
        });
        self.inner
            .clone()
            .shutdown(request)
            .await
            .map_err(|s| self.remote(s))?;
        Ok(())
    }

    /// The error for a call the service answered with `status`.
    fn remote(&self, status: tonic::Status) -> AdminError {
        AdminError::Remote {
            addr: self.addr,
            code: status.code(),
            message: status.message().to_owned(),
        }
    }
}
