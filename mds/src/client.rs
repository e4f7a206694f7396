//! [`MdsClient`]: typed calls to a metadata service over the fabric. Replies are decoded once
//! into this crate's types; a reply the service could not have sent is
//! [`MdsError::Malformed`]. A refused request comes back as [`MdsError::Fabric`] holding
//! `FabricError::Remote` with the errno and the service's sentence; [`MdsError::errno`] reads
//! it either way.

use iopath_fabric::{Nid, Node};
use iopath_proto::mds as pb;
use prost::Message;

use crate::error::{MdsError, Result};
use crate::limits::READDIR_PAGE_ENTRIES_MAX;
use crate::namespace::inode::{
    Attributes, DirEntry, DirPage, Ino, Owner, SetAttributes, SpecialNode, StripeInfo,
};
use crate::service::{MDS_PORTAL, MdsTarget, opcode};
use crate::wire;
use iopath_layout::{FsName, Layout, StripeRequest};

/// Most pages [`MdsClient::readdir`] reads before giving up (4 Mi entries at 1024 a page).
pub const READDIR_PAGES_MAX: u32 = 4096;

/// The targets a service places layouts on, its file-system default, and the file system's
/// name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TargetList {
    /// The targets, in round-robin order.
    pub targets: Vec<MdsTarget>,
    /// The default layout for new files where no directory sets one.
    pub default_stripe: StripeRequest,
    /// The file system's name.
    pub fsname: FsName,
}

/// The request a proxy's call is made for (see [`MdsClient::create_for`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Origin {
    /// Who asked the proxy: a name unique in the file system and stable across its restarts.
    pub client: String,
    /// That request's number: the same every time the asker sends it again.
    pub request: u64,
}

/// What removing a name did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Removal {
    /// A file's layout, when its last name went and it was not kept: destroy its objects.
    pub layout: Option<Layout>,
    /// The file was kept as the caller's orphan.
    pub orphaned: bool,
}

/// What a rename did to what it replaced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Renamed {
    /// A replaced file's layout, when the rename took its last name and it was not kept.
    pub replaced: Option<Layout>,
    /// The replaced file was kept as the caller's orphan.
    pub orphaned: bool,
}

/// An unlink's or a drop's reply, checked: a file is destroyed or kept, not both.
fn removal(reply: &pb::UnlinkReply) -> Result<Removal> {
    let layout = reply
        .layout
        .as_ref()
        .map(wire::layout_from_wire)
        .transpose()?;
    if layout.is_some() && reply.orphaned {
        return Err(MdsError::Malformed {
            what: "unlink reply",
            why: "a file both destroyed and kept".into(),
        });
    }
    Ok(Removal {
        layout,
        orphaned: reply.orphaned,
    })
}

/// A client of one metadata service.
#[derive(Debug, Clone)]
pub struct MdsClient {
    node: Node,
    server: Nid,
}

impl MdsClient {
    /// A client sending from `node` to the service at `server`. The node watches the service
    /// for restarts ([`Node::watch_restarts`]): a call waiting on a service that restarted is
    /// sent again at once, and the service answers a change it already made from its log, so
    /// it still runs once.
    pub fn new(node: Node, server: Nid) -> MdsClient {
        node.watch_restarts(server);
        MdsClient { node, server }
    }

    /// The service's NID.
    pub fn server(&self) -> Nid {
        self.server
    }

    /// Makes directory `path` with permission bits `mode`, its owner not recorded.
    pub async fn mkdir(&self, path: &str, mode: u32) -> Result<Attributes> {
        self.mkdir_as(path, mode, Owner::UNRECORDED).await
    }

    /// Makes directory `path` with permission bits `mode`, owned by `owner`.
    pub async fn mkdir_as(&self, path: &str, mode: u32, owner: Owner) -> Result<Attributes> {
        let request = pb::MkdirRequest {
            path: path.to_owned(),
            mode,
            uid: owner.uid,
            gid: owner.gid,
        };
        let reply: pb::AttributesReply = self.call(opcode::MKDIR, &request).await?;
        wire::attributes_from_wire(reply.attributes.as_ref())
    }

    /// Creates file `path` with a layout chosen by the service from `stripe` and the
    /// directory's default. The objects are not created: the caller creates them on their
    /// targets. Fails with EEXIST if `path` exists.
    pub async fn create(&self, path: &str, mode: u32, stripe: StripeRequest) -> Result<Attributes> {
        self.create_for(path, (mode, Owner::UNRECORDED), stripe, None)
            .await
    }

    /// [`MdsClient::create`], made by a proxy (a fyod) for `origin`, a compute node's
    /// request: the service answers the same origin's create again with the reply it had —
    /// when the compute node sends its open again through the proxy's next start, the create
    /// the first start made is this one's, not a file that already existed.
    /// The new file's permission bits and owner are `mode` and `owner`.
    pub async fn create_for(
        &self,
        path: &str,
        (mode, owner): (u32, Owner),
        stripe: StripeRequest,
        origin: Option<&Origin>,
    ) -> Result<Attributes> {
        let request = pb::CreateRequest {
            path: path.to_owned(),
            mode,
            uid: owner.uid,
            gid: owner.gid,
            stripe: Some(wire::stripe_to_wire(&stripe)),
            origin: origin.map(|o| pb::Origin {
                client: o.client.clone(),
                request: o.request,
            }),
        };
        let reply: pb::AttributesReply = self.call(opcode::CREATE, &request).await?;
        let attributes = wire::attributes_from_wire(reply.attributes.as_ref())?;
        if attributes.layout.is_none() {
            return Err(MdsError::Malformed {
                what: "create reply",
                why: "no layout".into(),
            });
        }
        Ok(attributes)
    }

    /// Opens regular file `path`: its attributes with its layout (EISDIR for a directory).
    pub async fn open(&self, path: &str) -> Result<Attributes> {
        let reply: pb::AttributesReply = self.call(opcode::OPEN, &path_request(path)).await?;
        wire::attributes_from_wire(reply.attributes.as_ref())
    }

    /// The attributes of `path`.
    pub async fn stat(&self, path: &str) -> Result<Attributes> {
        let reply: pb::AttributesReply = self.call(opcode::STAT, &path_request(path)).await?;
        wire::attributes_from_wire(reply.attributes.as_ref())
    }

    /// The attributes of the inode numbered `ino` (a file's with its layout).
    pub async fn stat_ino(&self, ino: Ino) -> Result<Attributes> {
        let request = pb::InoRequest { ino };
        let reply: pb::AttributesReply = self.call(opcode::STAT_INO, &request).await?;
        let attributes = wire::attributes_from_wire(reply.attributes.as_ref())?;
        if attributes.ino != ino {
            return Err(MdsError::Malformed {
                what: "stat_ino reply",
                why: format!("asked for inode {ino}, told of {}", attributes.ino),
            });
        }
        Ok(attributes)
    }

    /// Changes the attributes of the inode numbered `ino`; returns them as they are now.
    pub async fn setattr(&self, ino: Ino, change: &SetAttributes) -> Result<Attributes> {
        let request = pb::SetAttrRequest {
            ino,
            mode: change.mode,
            uid: change.uid,
            gid: change.gid,
            atime_ns: change.atime_ns,
            mtime_ns: change.mtime_ns,
            ctime_ns: change.ctime_ns,
        };
        let reply: pb::AttributesReply = self.call(opcode::SETATTR, &request).await?;
        wire::attributes_from_wire(reply.attributes.as_ref())
    }

    /// One page of directory `path`: up to `entries_max` entries after name `after`.
    pub async fn readdir_page(&self, path: &str, after: &str, entries_max: u32) -> Result<DirPage> {
        let request = pb::ReaddirRequest {
            path: path.to_owned(),
            after: after.to_owned(),
            entries_max,
        };
        let reply: pb::ReaddirReply = self.call(opcode::READDIR, &request).await?;
        let entries = reply
            .entries
            .iter()
            .map(wire::entry_from_wire)
            .collect::<Result<Vec<_>>>()?;
        // Pages come in name order, after the cursor: anything else would loop or skip.
        let mut previous = after;
        for entry in &entries {
            if entry.name.as_str() <= previous {
                return Err(MdsError::Malformed {
                    what: "readdir reply",
                    why: format!("entry {:?} is not after {previous:?}", entry.name),
                });
            }
            previous = &entry.name;
        }
        if reply.more && entries.is_empty() {
            return Err(MdsError::Malformed {
                what: "readdir reply",
                why: "an empty page that says more follow".into(),
            });
        }
        Ok(DirPage {
            entries,
            more: reply.more,
        })
    }

    /// Every entry of directory `path`, in name order, read a page at a time.
    pub async fn readdir(&self, path: &str) -> Result<Vec<DirEntry>> {
        let mut entries: Vec<DirEntry> = Vec::new();
        for _ in 0..READDIR_PAGES_MAX {
            let after = entries.last().map_or("", |e| e.name.as_str()).to_owned();
            let page = self
                .readdir_page(path, &after, READDIR_PAGE_ENTRIES_MAX)
                .await?;
            entries.extend(page.entries);
            if !page.more {
                return Ok(entries);
            }
        }
        Err(MdsError::LimitReached {
            what: "readdir pages",
            max: u64::from(READDIR_PAGES_MAX),
        })
    }

    /// Removes name `path` (not a directory): when it was a file's last, returns its layout
    /// so the caller can destroy its objects.
    pub async fn unlink(&self, path: &str) -> Result<Removal> {
        self.unlink_keeping(path, None).await
    }

    /// [`MdsClient::unlink`]; if the name was the last of file `keep_ino`, which the caller
    /// holds open, the file is kept as the caller's orphan instead (objects and all) until
    /// it drops it ([`MdsClient::drop_orphan`]).
    pub async fn unlink_keeping(&self, path: &str, keep_ino: Option<Ino>) -> Result<Removal> {
        let request = pb::UnlinkRequest {
            path: path.to_owned(),
            keep_ino,
        };
        let reply: pb::UnlinkReply = self.call(opcode::UNLINK, &request).await?;
        removal(&reply)
    }

    /// Forgets orphan `ino` (closed by its holder, or abandoned); returns a file's layout so
    /// the caller can destroy its objects.
    pub async fn drop_orphan(&self, ino: Ino) -> Result<Removal> {
        let request = pb::DropOrphanRequest { ino };
        let reply: pb::UnlinkReply = self.call(opcode::DROP_ORPHAN, &request).await?;
        removal(&reply)
    }

    /// Orphans whose holders the service has not heard from for its grace period, each with
    /// its layout: the caller destroys their objects and drops them. Each is handed to one
    /// caller at a time.
    pub async fn abandoned_orphans(&self) -> Result<Vec<(Ino, Layout)>> {
        let reply: pb::OrphansReply = self.call(opcode::ORPHANS, &pb::OrphansRequest {}).await?;
        reply
            .orphans
            .iter()
            .map(|o| {
                let layout = o.layout.as_ref().ok_or_else(|| MdsError::Malformed {
                    what: "orphans reply",
                    why: format!("orphan {} without a layout", o.ino),
                })?;
                Ok((o.ino, wire::layout_from_wire(layout)?))
            })
            .collect()
    }

    /// Gives inode `ino` (not a directory) the new name `path`; returns its attributes.
    pub async fn link(&self, ino: Ino, path: &str) -> Result<Attributes> {
        let request = pb::LinkRequest {
            ino,
            path: path.to_owned(),
        };
        let reply: pb::AttributesReply = self.call(opcode::LINK, &request).await?;
        wire::attributes_from_wire(reply.attributes.as_ref())
    }

    /// Makes symbolic link `path` pointing to `target`, owned by `owner`.
    pub async fn symlink(&self, path: &str, target: &str, owner: Owner) -> Result<Attributes> {
        let request = pb::SymlinkRequest {
            path: path.to_owned(),
            target: target.to_owned(),
            uid: owner.uid,
            gid: owner.gid,
        };
        let reply: pb::AttributesReply = self.call(opcode::SYMLINK, &request).await?;
        wire::attributes_from_wire(reply.attributes.as_ref())
    }

    /// Makes a FIFO, socket or device node `path` (`rdev`: a device's number).
    pub async fn mknod(
        &self,
        path: &str,
        node: SpecialNode,
        (mode, rdev): (u32, u64),
        owner: Owner,
    ) -> Result<Attributes> {
        let request = pb::MknodRequest {
            path: path.to_owned(),
            node: wire::special_to_wire(node) as i32,
            mode,
            rdev,
            uid: owner.uid,
            gid: owner.gid,
        };
        let reply: pb::AttributesReply = self.call(opcode::MKNOD, &request).await?;
        wire::attributes_from_wire(reply.attributes.as_ref())
    }

    /// Removes empty directory `path`.
    pub async fn rmdir(&self, path: &str) -> Result<()> {
        let _: pb::EmptyReply = self.call(opcode::RMDIR, &path_request(path)).await?;
        Ok(())
    }

    /// Renames `source` to `target`; returns the layout of a file it replaced, if it took
    /// that file's last name.
    pub async fn rename(&self, source: &str, target: &str) -> Result<Option<Layout>> {
        Ok(self.rename_keeping(source, target, None).await?.replaced)
    }

    /// [`MdsClient::rename`]; a file it replaces that is `keep_ino`, held open by the caller,
    /// is kept as the caller's orphan if this was its last name.
    pub async fn rename_keeping(
        &self,
        source: &str,
        target: &str,
        keep_ino: Option<Ino>,
    ) -> Result<Renamed> {
        let request = pb::RenameRequest {
            source: source.to_owned(),
            target: target.to_owned(),
            keep_ino,
        };
        let reply: pb::RenameReply = self.call(opcode::RENAME, &request).await?;
        let replaced = reply
            .replaced
            .as_ref()
            .map(wire::layout_from_wire)
            .transpose()?;
        if replaced.is_some() && reply.orphaned {
            return Err(MdsError::Malformed {
                what: "rename reply",
                why: "a replaced file both destroyed and kept".into(),
            });
        }
        Ok(Renamed {
            replaced,
            orphaned: reply.orphaned,
        })
    }

    /// Sets directory `path`'s default layout for new files, or removes it with `None`.
    pub async fn setstripe(&self, path: &str, stripe: Option<StripeRequest>) -> Result<()> {
        let request = pb::SetStripeRequest {
            path: path.to_owned(),
            stripe: stripe.as_ref().map(wire::stripe_to_wire),
        };
        let _: pb::EmptyReply = self.call(opcode::SETSTRIPE, &request).await?;
        Ok(())
    }

    /// A file's layout, or a directory's effective default.
    pub async fn getstripe(&self, path: &str) -> Result<StripeInfo> {
        let reply: pb::GetStripeReply = self.call(opcode::GETSTRIPE, &path_request(path)).await?;
        match reply.stripe {
            Some(pb::get_stripe_reply::Stripe::Layout(layout)) => {
                Ok(StripeInfo::File(wire::layout_from_wire(&layout)?))
            }
            Some(pb::get_stripe_reply::Stripe::DefaultStripe(stripe)) => {
                Ok(StripeInfo::Directory {
                    default_stripe: wire::stripe_from_wire(&stripe),
                    set_here: reply.set_here,
                })
            }
            None => Err(MdsError::Malformed {
                what: "getstripe reply",
                why: "neither a layout nor a default".into(),
            }),
        }
    }

    /// The targets, the file-system default and the file system's name.
    pub async fn targets(&self) -> Result<TargetList> {
        let reply: pb::TargetsReply = self.call(opcode::TARGETS, &pb::TargetsRequest {}).await?;
        let targets = reply
            .targets
            .iter()
            .map(|t| {
                let nid = t.nid.parse().map_err(|e| MdsError::Malformed {
                    what: "targets reply",
                    why: format!("target {}: {e}", t.index),
                })?;
                Ok(MdsTarget {
                    index: t.index,
                    nid,
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let default_stripe = reply
            .default_stripe
            .as_ref()
            .map(wire::stripe_from_wire)
            .ok_or_else(|| MdsError::Malformed {
                what: "targets reply",
                why: "no default layout".into(),
            })?;
        let fsname = FsName::new(&reply.fsname).map_err(|e| MdsError::Malformed {
            what: "targets reply",
            why: e.to_string(),
        })?;
        Ok(TargetList {
            targets,
            default_stripe,
            fsname,
        })
    }

    async fn call<Req: Message, Rep: Message + Default>(
        &self,
        opcode: u32,
        request: &Req,
    ) -> Result<Rep> {
        let reply = self
            .node
            .call(
                self.server,
                MDS_PORTAL,
                opcode,
                request.encode_to_vec().into(),
            )
            .await?;
        Rep::decode(reply.as_ref()).map_err(|e| MdsError::Malformed {
            what: "reply",
            why: e.to_string(),
        })
    }
}

fn path_request(path: &str) -> pb::PathRequest {
    pb::PathRequest {
        path: path.to_owned(),
    }
}
