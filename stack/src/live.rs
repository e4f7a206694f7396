//! The live view of a running stack (`iopath up --web`, `iopath bench ior --web`): what the
//! page draws, and where each node's counters are read — a node in this process from its
//! own registry, a node process from its `/metrics`.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use iopath_live::{LiveHandle, Source, View, ViewInterface, ViewNode};

use crate::describe;
use crate::error::StackError;
use crate::runtime::{ChildNode, RunningNode, RunningStack};
use crate::schema::{RoleName, Stack};

/// How often the live view reads every node: the page updates as often.
pub const LIVE_INTERVAL: Duration = Duration::from_secs(1);

/// The view of `stack` running as `mode` says (in words: [`crate::runtime::Mode::describe`]'s): nodes in
/// `local` are read in this process, node processes in `children` from their `/metrics` (they
/// must have been started with `--metrics`), and the rest are drawn but not read.
pub fn view(
    stack: &Stack,
    mode: &str,
    workload: &str,
    local: &[&RunningNode],
    children: &[ChildNode],
    admin: &dyn Fn(usize) -> Option<SocketAddr>,
) -> View {
    let nodes = stack
        .nodes
        .iter()
        .enumerate()
        .map(|(index, spec)| {
            let here = local.iter().find(|n| n.index == index);
            let child = children.iter().find(|c| c.index == index);
            let source = match (here, child.and_then(|c| c.metrics)) {
                (Some(node), _) => Source::Registry(Arc::new(node.metrics_registry())),
                (None, Some(metrics)) => Source::Scrape(metrics),
                (None, None) if spec.role.kind() == RoleName::Client => {
                    Source::Unread("runs in the application, not here".into())
                }
                (None, None) => Source::Unread("its process serves no /metrics".into()),
            };
            ViewNode {
                name: spec.name.clone(),
                role: spec.role.kind().as_str().to_owned(),
                detail: describe::node_detail(stack, index),
                interfaces: stack.nodes[index]
                    .interfaces
                    .iter()
                    .zip(stack.nids(index))
                    .map(|(interface, nid)| ViewInterface {
                        network: interface.network,
                        nid: nid.to_string(),
                    })
                    .collect(),
                torus: spec.torus,
                admin: admin(index).map(|a| a.to_string()),
                source,
            }
        })
        .collect();
    View {
        title: format!("{} ({})", stack.name, stack.origin),
        description: stack.description.clone(),
        mode: mode.to_owned(),
        modeled: stack.modeled(),
        workload: workload.to_owned(),
        networks: (0..stack.networks.len())
            .map(|k| stack.net_id(k).to_string())
            .collect(),
        nodes,
        interval_ms: LIVE_INTERVAL.as_millis() as u64,
    }
}

/// The view of a running stack, with `workload` said on the page.
pub fn view_of(running: &RunningStack, workload: &str) -> View {
    let children = match running {
        RunningStack::Embedded(_) | RunningStack::Attached { .. } => &[][..],
        RunningStack::Processes { servers, .. } => servers.children(),
    };
    view(
        running.stack(),
        running.mode().describe(),
        workload,
        &running.local_nodes(),
        children,
        &|index| running.admin_addr(index),
    )
}

/// Serves `view` on `addr`, naming the address in the error if it cannot.
pub async fn serve(addr: SocketAddr, view: View) -> Result<LiveHandle, StackError> {
    iopath_live::serve(addr, view)
        .await
        .map_err(|e| StackError::BadOption {
            option: "--web".into(),
            why: format!("serve the live view on {addr}: {e}"),
        })
}
