//! The metadata service on the fabric: requests decoded once into typed operations, changes
//! run on the blocking pool (each waits for its fsync), reads answered from memory, errors
//! sent as errnos with a sentence. On a disk that runs inline (the seeded simulation's) the
//! store's work runs in the request's own task instead.

use std::path::PathBuf;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use bytes::Bytes;
use iopath_fabric::fail::{FailPoints, Site};
use iopath_fabric::rpc::{Reply, Request, Service, ServiceError};
use iopath_fabric::{Nid, Node};
use iopath_proto::mds as pb;
use prost::Message;
use tracing::{Instrument as _, debug, debug_span};

use crate::error::{MdsError, Result};
use crate::limits::{MdsLimits, NAME_LEN_MAX_BYTES};
use crate::namespace::NamespaceConfig;
use crate::namespace::inode::{Owner, SetAttributes, StripeInfo};
use crate::namespace::op::{Keep, Op, Outcome};
use crate::orphans::{ORPHAN_GRACE, OrphanWatch};
use crate::path::MdsPath;
use crate::store::{MdsStore, RealDisk, RequestRef, StoreDisk};
use crate::wire;
use iopath_layout::{FsName, StripeRequest};

pub use iopath_proto::mds::{PORTAL as MDS_PORTAL, opcode};

/// One storage target layouts are placed on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MdsTarget {
    /// Its index (OST index).
    pub index: u32,
    /// The NID of the server holding it.
    pub nid: Nid,
}

/// How to start a metadata service.
#[derive(Debug, Clone)]
pub struct MdsConfig {
    /// The directory holding its log and snapshot.
    pub dir: PathBuf,
    /// The targets, in round-robin order.
    pub targets: Vec<MdsTarget>,
    /// The file system's default layout (every field filled in).
    pub default_stripe: StripeRequest,
    /// Sizes of the namespace.
    pub limits: MdsLimits,
    /// The file system's name, which clients learn with the targets (its targets are named
    /// after it: `iopath-OST0003`).
    pub fsname: FsName,
    /// Where the store's appends and fsyncs land: the file system ([`RealDisk`]), or the
    /// seeded simulation's crash model, whose store calls run inline.
    pub disk: Arc<dyn StoreDisk>,
    /// How long an orphan's holder may go unheard before the orphan is handed out for
    /// cleaning ([`ORPHAN_GRACE`]).
    pub orphan_grace: Duration,
}

impl MdsConfig {
    /// A service in `dir` over `targets`, with Lustre's default layout, the default limits
    /// and the default file system name ([`FsName::DEFAULT`]).
    pub fn new(dir: impl Into<PathBuf>, targets: Vec<MdsTarget>) -> MdsConfig {
        MdsConfig {
            dir: dir.into(),
            targets,
            default_stripe: StripeRequest::LUSTRE_DEFAULT,
            limits: MdsLimits::default(),
            fsname: FsName::default(),
            disk: Arc::new(RealDisk),
            orphan_grace: ORPHAN_GRACE,
        }
    }

    fn namespace_config(&self) -> NamespaceConfig {
        NamespaceConfig {
            targets: self.targets.iter().map(|t| t.index).collect(),
            default_stripe: self.default_stripe,
            limits: self.limits.clone(),
        }
    }
}

/// The metadata service: a durable namespace served on [`MDS_PORTAL`].
#[derive(Debug)]
pub struct MdsService {
    store: Arc<MdsStore>,
    targets: Vec<MdsTarget>,
    fsname: FsName,
    /// The serving node's fail points (`mds.after_log`).
    fail: Arc<FailPoints>,
    /// Who was heard from when: which orphans are abandoned.
    orphan_watch: Mutex<OrphanWatch>,
}

impl MdsService {
    /// Opens (or creates) the namespace in `config.dir`, replaying its log, and serves it on
    /// `node` at [`MDS_PORTAL`].
    pub async fn start(node: &Node, config: MdsConfig) -> Result<Arc<MdsService>> {
        let service = Arc::new(MdsService {
            fail: Arc::clone(node.fail_points()),
            ..MdsService::open(config).await?
        });
        node.register_service(MDS_PORTAL, service.clone())?;
        Ok(service)
    }

    /// Opens the namespace without serving it (see [`MdsService::start`]).
    pub async fn open(config: MdsConfig) -> Result<MdsService> {
        let namespace_config = config.namespace_config();
        let (dir, disk) = (config.dir.clone(), Arc::clone(&config.disk));
        // Reading and replaying the log is blocking file I/O.
        let store = blocking(&*config.disk, "opening the store", move || {
            MdsStore::open_on(&dir, namespace_config, disk)
        })
        .await?;
        Ok(MdsService {
            store: Arc::new(store),
            targets: config.targets,
            fsname: config.fsname,
            fail: FailPoints::new(),
            orphan_watch: Mutex::new(OrphanWatch::new(config.orphan_grace, now())),
        })
    }

    /// The durable namespace it serves.
    pub fn store(&self) -> &Arc<MdsStore> {
        &self.store
    }

    /// The targets it places layouts on.
    pub fn targets(&self) -> &[MdsTarget] {
        &self.targets
    }

    /// Decodes a request, runs it, encodes its reply. Long (256 lines) on purpose: one arm per
    /// opcode, each the decode, the operation and the reply of one RPC, as ptlrpc's handler
    /// table reads.
    async fn dispatch(&self, request: &Request) -> Result<Bytes> {
        let (opcode, body) = (request.opcode, request.body.as_ref());
        // Who asked, in the change's log record: its resend is answered from it.
        let asked = RequestRef::new(request.source.to_string(), request.xid, opcode, body);
        let reply = match opcode {
            opcode::MKDIR => {
                let request: pb::MkdirRequest = decode(body, "mkdir request")?;
                let op = Op::Mkdir {
                    path: MdsPath::parse_new(&request.path)?,
                    mode: request.mode,
                    owner: Owner {
                        uid: request.uid,
                        gid: request.gid,
                    },
                };
                attributes_reply(self.change(op, &asked).await?)
            }
            opcode::CREATE => {
                let request: pb::CreateRequest = decode(body, "create request")?;
                // A proxy's create is the compute node's request behind it.
                let asked = match &request.origin {
                    Some(origin) if origin.client.len() > NAME_LEN_MAX_BYTES => {
                        return Err(MdsError::InvalidArgument {
                            why: format!(
                                "a create's origin of {} bytes is longer than any name",
                                origin.client.len()
                            ),
                        });
                    }
                    Some(origin) => RequestRef::new(
                        format!("origin {}", origin.client),
                        origin.request,
                        opcode,
                        body,
                    ),
                    None => asked.clone(),
                };
                let op = Op::Create {
                    path: MdsPath::parse_new(&request.path)?,
                    mode: request.mode,
                    owner: Owner {
                        uid: request.uid,
                        gid: request.gid,
                    },
                    stripe: request
                        .stripe
                        .as_ref()
                        .map_or(StripeRequest::INHERIT, wire::stripe_from_wire),
                };
                attributes_reply(self.change(op, &asked).await?)
            }
            opcode::OPEN | opcode::STAT => {
                let path = decode_path(body)?;
                let attributes = self.store.read(|ns| match opcode {
                    opcode::OPEN => ns.open(&path),
                    _ => ns.stat(&path),
                })?;
                pb::AttributesReply {
                    attributes: Some(wire::attributes_to_wire(&attributes)),
                }
                .encode_to_vec()
            }
            opcode::STAT_INO => {
                let request: pb::InoRequest = decode(body, "stat_ino request")?;
                let attributes = self.store.read(|ns| ns.stat_ino(request.ino))?;
                pb::AttributesReply {
                    attributes: Some(wire::attributes_to_wire(&attributes)),
                }
                .encode_to_vec()
            }
            opcode::SETATTR => {
                let request: pb::SetAttrRequest = decode(body, "setattr request")?;
                let op = Op::SetAttr {
                    ino: request.ino,
                    change: SetAttributes {
                        mode: request.mode,
                        uid: request.uid,
                        gid: request.gid,
                        atime_ns: request.atime_ns,
                        mtime_ns: request.mtime_ns,
                        ctime_ns: request.ctime_ns,
                    },
                };
                match self.change(op, &asked).await? {
                    Outcome::AttributesSet(attributes) => pb::AttributesReply {
                        attributes: Some(wire::attributes_to_wire(&attributes)),
                    }
                    .encode_to_vec(),
                    other => unexpected(other),
                }
            }
            opcode::READDIR => {
                let request: pb::ReaddirRequest = decode(body, "readdir request")?;
                if request.after.len() > NAME_LEN_MAX_BYTES {
                    return Err(MdsError::InvalidArgument {
                        why: format!(
                            "readdir cursor of {} bytes is longer than any name",
                            request.after.len()
                        ),
                    });
                }
                let path = MdsPath::parse(&request.path)?;
                let page = self
                    .store
                    .read(|ns| ns.readdir(&path, &request.after, request.entries_max))?;
                pb::ReaddirReply {
                    entries: page.entries.iter().map(wire::entry_to_wire).collect(),
                    more: page.more,
                }
                .encode_to_vec()
            }
            opcode::UNLINK => {
                let request: pb::UnlinkRequest = decode(body, "unlink request")?;
                let op = Op::Unlink {
                    path: MdsPath::parse(&request.path)?,
                    keep: keep(request.keep_ino, &asked),
                };
                unlink_reply(self.change(op, &asked).await?)
            }
            opcode::DROP_ORPHAN => {
                let request: pb::DropOrphanRequest = decode(body, "drop_orphan request")?;
                let op = Op::DropOrphan { ino: request.ino };
                unlink_reply(self.change(op, &asked).await?)
            }
            opcode::ORPHANS => {
                let _: pb::OrphansRequest = decode(body, "orphans request")?;
                let orphans = self.store.read(|ns| ns.orphans().clone());
                let abandoned = self
                    .orphan_watch
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .abandoned(&orphans, now());
                let orphans = self.store.read(|ns| {
                    abandoned
                        .iter()
                        .filter_map(|&ino| {
                            let layout = ns.stat_ino(ino).ok()?.layout?;
                            Some(pb::AbandonedOrphan {
                                ino,
                                layout: Some(wire::layout_to_wire(&layout)),
                            })
                        })
                        .collect()
                });
                pb::OrphansReply { orphans }.encode_to_vec()
            }
            opcode::LINK => {
                let request: pb::LinkRequest = decode(body, "link request")?;
                let op = Op::Link {
                    ino: request.ino,
                    path: MdsPath::parse_new(&request.path)?,
                };
                attributes_reply(self.change(op, &asked).await?)
            }
            opcode::SYMLINK => {
                let request: pb::SymlinkRequest = decode(body, "symlink request")?;
                let op = Op::Symlink {
                    path: MdsPath::parse_new(&request.path)?,
                    target: request.target,
                    owner: Owner {
                        uid: request.uid,
                        gid: request.gid,
                    },
                };
                attributes_reply(self.change(op, &asked).await?)
            }
            opcode::MKNOD => {
                let request: pb::MknodRequest = decode(body, "mknod request")?;
                let op = Op::Mknod {
                    path: MdsPath::parse_new(&request.path)?,
                    node: wire::special_from_wire(request.node)?,
                    mode: request.mode,
                    rdev: request.rdev,
                    owner: Owner {
                        uid: request.uid,
                        gid: request.gid,
                    },
                };
                attributes_reply(self.change(op, &asked).await?)
            }
            opcode::RMDIR => {
                let op = Op::Rmdir {
                    path: decode_path(body)?,
                };
                self.change(op, &asked).await?;
                pb::EmptyReply {}.encode_to_vec()
            }
            opcode::RENAME => {
                let request: pb::RenameRequest = decode(body, "rename request")?;
                let op = Op::Rename {
                    source: MdsPath::parse(&request.source)?,
                    target: MdsPath::parse_new(&request.target)?,
                    keep: keep(request.keep_ino, &asked),
                };
                match self.change(op, &asked).await? {
                    Outcome::Renamed { replaced, orphaned } => pb::RenameReply {
                        replaced: replaced.as_ref().map(wire::layout_to_wire),
                        orphaned,
                    }
                    .encode_to_vec(),
                    other => unexpected(other),
                }
            }
            opcode::SETSTRIPE => {
                let request: pb::SetStripeRequest = decode(body, "setstripe request")?;
                let op = Op::SetStripe {
                    path: MdsPath::parse(&request.path)?,
                    stripe: request.stripe.as_ref().map(wire::stripe_from_wire),
                };
                self.change(op, &asked).await?;
                pb::EmptyReply {}.encode_to_vec()
            }
            opcode::GETSTRIPE => {
                let path = decode_path(body)?;
                let reply = match self.store.read(|ns| ns.getstripe(&path))? {
                    StripeInfo::File(layout) => pb::GetStripeReply {
                        stripe: Some(pb::get_stripe_reply::Stripe::Layout(wire::layout_to_wire(
                            &layout,
                        ))),
                        set_here: true,
                    },
                    StripeInfo::Directory {
                        default_stripe,
                        set_here,
                    } => pb::GetStripeReply {
                        stripe: Some(pb::get_stripe_reply::Stripe::DefaultStripe(
                            wire::stripe_to_wire(&default_stripe),
                        )),
                        set_here,
                    },
                };
                reply.encode_to_vec()
            }
            opcode::TARGETS => {
                let _: pb::TargetsRequest = decode(body, "targets request")?;
                let default_stripe = self.store.read(|ns| ns.file_system_default());
                pb::TargetsReply {
                    targets: self
                        .targets
                        .iter()
                        .map(|t| pb::Target {
                            index: t.index,
                            nid: t.nid.to_string(),
                        })
                        .collect(),
                    default_stripe: Some(wire::stripe_to_wire(&default_stripe)),
                    fsname: self.fsname.to_string(),
                }
                .encode_to_vec()
            }
            other => {
                return Err(MdsError::UnknownOpcode { opcode: other });
            }
        };
        Ok(reply.into())
    }

    /// Runs a change `request` asked for on the blocking pool: it returns once the change is
    /// durable (or, for a resend of a change that ran, with the outcome it had).
    async fn change(&self, op: Op, request: &RequestRef) -> Result<Outcome> {
        let store = Arc::clone(&self.store);
        let now_ns = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos() as u64);
        let request = request.clone();
        let outcome = blocking(self.store.disk(), "the change", move || {
            store.execute_for(&op, now_ns, Some(&request))
        })
        .await?;
        // Durable in the log; its reply may yet stall, fail or be lost.
        self.fail
            .pass(Site::MdsAfterLog)
            .await
            .map_err(|injected| MdsError::Fabric(injected.error(Site::MdsAfterLog)))?;
        Ok(outcome)
    }
}

impl Service for MdsService {
    fn op_name(&self, opcode: u32) -> Option<&'static str> {
        opcode::name(opcode)
    }

    fn handle(self: Arc<Self>, request: Request) -> Reply {
        let span = debug_span!(
            "mds",
            xid = request.xid,
            opcode = request.opcode,
            source = %request.source
        );
        // Every request counts as its sender's ping: whose orphans are still held.
        self.orphan_watch
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .heard(&request.source.to_string(), now());
        Box::pin(
            async move {
                self.dispatch(&request).await.map_err(|error| {
                    // Handled here: the client gets the errno and the sentence.
                    debug!(%error, "request refused");
                    ServiceError::new(error.errno(), error.to_string())
                })
            }
            .instrument(span),
        )
    }
}

/// Runs the store's blocking `call` where its disk says such calls run: on tokio's blocking
/// pool (the real disk), or right here (the simulation's, which runs inline).
async fn blocking<T: Send + 'static>(
    disk: &dyn StoreDisk,
    what: &'static str,
    call: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    if disk.runs_inline() {
        return call();
    }
    tokio::task::spawn_blocking(call)
        .await
        .map_err(|e| MdsError::Failed {
            why: format!("{what} stopped: {e}"),
        })?
}

fn decode<M: Message + Default>(body: &[u8], what: &'static str) -> Result<M> {
    M::decode(body).map_err(|e| MdsError::Malformed {
        what,
        why: e.to_string(),
    })
}

fn decode_path(body: &[u8]) -> Result<MdsPath> {
    let request: pb::PathRequest = decode(body, "path request")?;
    MdsPath::parse(&request.path)
}

/// The orphan to keep: `keep_ino`, held open by the request's sender.
fn keep(keep_ino: Option<u64>, asked: &RequestRef) -> Option<Keep> {
    keep_ino.map(|ino| Keep {
        ino,
        owner: asked.client.clone(),
    })
}

/// Now, on the runtime's clock (paused in tests and in the simulation).
fn now() -> std::time::Instant {
    tokio::time::Instant::now().into_std()
}

fn unlink_reply(outcome: Outcome) -> Vec<u8> {
    let (layout, orphaned) = match outcome {
        Outcome::Unlinked(layout) => (Some(wire::layout_to_wire(&layout)), false),
        Outcome::Removed => (None, false),
        Outcome::Orphaned => (None, true),
        other => return unexpected(other),
    };
    pb::UnlinkReply { layout, orphaned }.encode_to_vec()
}

fn attributes_reply(outcome: Outcome) -> Vec<u8> {
    match outcome {
        Outcome::Created(attributes) => pb::AttributesReply {
            attributes: Some(wire::attributes_to_wire(&attributes)),
        }
        .encode_to_vec(),
        other => unexpected(other),
    }
}

/// Each operation has one kind of outcome; another is a bug in the namespace core.
fn unexpected(outcome: Outcome) -> Vec<u8> {
    unreachable!("operation produced the wrong kind of outcome: {outcome:?}")
}
