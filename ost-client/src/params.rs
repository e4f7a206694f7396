//! A client node's osc parameters on its admin tree (a fyod's too: it reaches the targets for
//! its compute nodes), named as Lustre names an osc device — after the target it reaches and
//! the client it belongs to: `osc.iopath-OST0003-osc-c0.stats` and
//! `osc.iopath-OST0003-osc-c0.rpc_stats` (where Lustre puts the mount's instance, iopath puts
//! the node's name). Reading gives Lustre's layouts ([`crate::counters`]); writing any value
//! (`stats=clear`) starts that file's tallies again, as in Lustre. And `devices`: the osc
//! devices as `lctl dl` lists them.

use std::sync::Arc;
use std::time::SystemTime;

use iopath_admin::{AdminError, Device, Param, ParamTree, register_devices};
use iopath_layout::FsName;

use crate::counters;
use crate::stats::OscStats;

/// The osc device of `target` on node `node`: `iopath-OST0003-osc-c0`. A dot in the node's
/// name would split the parameter's name, so it is written `_`.
pub fn device_name(fsname: &FsName, target: u32, node: &str) -> String {
    format!("{}-osc-{}", fsname.ost(target), node.replace('.', "_"))
}

/// Hangs `stats` and `rpc_stats` of every target of `osc` on `tree`, named for node `node`
/// of file system `fsname`, and the `devices` list `lctl dl` prints.
pub fn register(
    osc: &OscStats,
    tree: &ParamTree,
    fsname: &FsName,
    node: &str,
) -> Result<(), AdminError> {
    let devices: Vec<Device> = osc
        .targets()
        .iter()
        .map(|target| Device {
            kind: "osc",
            name: device_name(fsname, target.index(), node),
        })
        .collect();
    register_devices(tree, &devices)?;
    for (target, device) in osc.targets().iter().zip(&devices) {
        let name = |leaf: &str| format!("osc.{}.{leaf}", device.name);
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
                            counters::rpc_stats_text(
                                &t.counters(),
                                t.under_way(),
                                SystemTime::now(),
                            )
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
    }
    Ok(())
}
