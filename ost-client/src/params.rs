//! A client node's osc parameters on its admin tree (a fyod's too: it reaches the targets for
//! its compute nodes), named as Lustre names an osc device — after the target it reaches and
//! the client it belongs to: `osc.iopath-OST0003-osc-c0.stats` and
//! `osc.iopath-OST0003-osc-c0.rpc_stats` (where Lustre puts the mount's instance, iopath puts
//! the node's name). Reading gives Lustre's layouts ([`crate::counters`]); writing any value
//! (`stats=clear`) starts that file's tallies again, as in Lustre. And `devices`: the osc
//! devices as `lctl dl` lists them.

use std::sync::Arc;
use std::time::SystemTime;

use iopath_admin::{AdminError, DEVICES_PARAM, Device, Param, ParamTree, devices_text};
use iopath_layout::FsName;

use crate::counters;
use crate::stats::{OscStats, TargetStats};

/// The osc device of `target` on node `node`: `iopath-OST0003-osc-c0`. A dot in the node's
/// name would split the parameter's name, so it is written `_`.
pub fn device_name(fsname: &FsName, target: u32, node: &str) -> String {
    format!("{}-osc-{}", fsname.ost(target), node.replace('.', "_"))
}

/// Hangs `stats` and `rpc_stats` of every row of `osc` on `tree` — those it has now and each
/// it makes later (see [`OscStats`]) — named for node `node` of file system `fsname`, and the
/// `devices` list `lctl dl` prints: an osc device for every target, made when read.
pub fn register(
    osc: &Arc<OscStats>,
    tree: &ParamTree,
    fsname: &FsName,
    node: &str,
) -> Result<(), AdminError> {
    let (table, devices_fsname, devices_node) =
        (Arc::downgrade(osc), fsname.clone(), node.to_owned());
    tree.register(
        DEVICES_PARAM,
        Param::read_only(move || {
            let Some(table) = table.upgrade() else {
                return String::new();
            };
            let devices: Vec<Device> = table
                .known_targets()
                .iter()
                .map(|&target| Device {
                    kind: "osc",
                    name: device_name(&devices_fsname, target, &devices_node),
                })
                .collect();
            devices_text(&devices)
        }),
    )?;
    for target in osc.targets() {
        register_row(&target, tree, fsname, node)?;
    }
    let (tree, fsname, node) = (tree.clone(), fsname.clone(), node.to_owned());
    osc.on_new_row(move |target| {
        // Two parameters of a new name on the node's own tree: nothing else registers them.
        if let Err(error) = register_row(target, &tree, &fsname, &node) {
            tracing::warn!(%error, target = target.index(), "osc parameters not registered");
        }
    });
    Ok(())
}

/// Hangs one row's `stats` and `rpc_stats` on `tree`.
fn register_row(
    target: &Arc<TargetStats>,
    tree: &ParamTree,
    fsname: &FsName,
    node: &str,
) -> Result<(), AdminError> {
    let device = device_name(fsname, target.index(), node);
    let name = |leaf: &str| format!("osc.{device}.{leaf}");
    // The getters hold a `Weak`: a registered parameter does not keep the table alive.
    let (read, clear) = (Arc::downgrade(target), Arc::downgrade(target));
    tree.register(
        &name("stats"),
        Param::read_write(
            move || {
                read.upgrade()
                    .map(|t| counters::stats_text(&t.counters(), SystemTime::now()))
                    .unwrap_or_default()
            },
            move |_| {
                let target = clear.upgrade().ok_or("the node has stopped")?;
                target.clear_stats(SystemTime::now());
                Ok(())
            },
        ),
    )?;
    let (read, clear) = (Arc::downgrade(target), Arc::downgrade(target));
    tree.register(
        &name("rpc_stats"),
        Param::read_write(
            move || {
                read.upgrade()
                    .map(|t| {
                        counters::rpc_stats_text(&t.counters(), t.under_way(), SystemTime::now())
                    })
                    .unwrap_or_default()
            },
            move |_| {
                clear
                    .upgrade()
                    .ok_or("the node has stopped")?
                    .clear_rpc_stats();
                Ok(())
            },
        ),
    )?;
    Ok(())
}
