//! The OSS's parameters on the admin tree, named as Lustre's after the file system and the
//! target (`obdfilter.iopath-OST0000.sync_journal`): `sync_journal`
//! (writable: 1 for sync commits, 0 for async), `last_committed`, `commits` (journal commits
//! so far), `stats` and `brw_stats` (Lustre's layouts; writing clears them), and `lost`: the bytes acknowledged to clients that a restart dropped and
//! no client replayed, one line per object and range (`object START END`), which reads of
//! them are refused until they are written again. And `devices`, the targets as `lctl dl`
//! lists them.

use std::sync::Arc;

use iopath_admin::{AdminError, Device, Param, ParamTree, register_devices};

use std::time::SystemTime;

use crate::ost::{Oss, counters};

/// Hangs every target's parameters on `tree`, and the `devices` list `lctl dl` prints: one
/// `obdfilter` device per target.
pub fn register(oss: &Arc<Oss>, tree: &ParamTree) -> Result<(), AdminError> {
    let devices: Vec<Device> = oss
        .targets()
        .iter()
        .map(|target| Device {
            kind: "obdfilter",
            name: oss.target_name(target.index()).to_string(),
        })
        .collect();
    register_devices(tree, &devices)?;
    for (position, target) in oss.targets().iter().enumerate() {
        let target_name = oss.target_name(target.index());
        let name = |leaf: &str| format!("obdfilter.{target_name}.{leaf}");
        let weak = Arc::downgrade(oss);
        let (get, set) = (weak.clone(), weak.clone());
        tree.register(
            &name("sync_journal"),
            Param::read_write(
                move || get.upgrade().map(|o| u8::from(o.targets()[position].sync_journal()).to_string()).unwrap_or_default(),
                move |value| {
                    let sync = match value.trim() {
                        "1" => true,
                        "0" => false,
                        other => return Err(format!("sync_journal takes 0 (async commits) or 1 (sync commits), not {other:?}")),
                    };
                    let oss = set.upgrade().ok_or("server stopped")?;
                    oss.targets()[position].set_sync_journal(sync);
                    Ok(())
                },
            ),
        )?;
        let lc = weak.clone();
        tree.register(
            &name("last_committed"),
            Param::read_only(move || {
                lc.upgrade()
                    .map(|o| o.targets()[position].last_committed().0.to_string())
                    .unwrap_or_default()
            }),
        )?;
        let commits = weak.clone();
        tree.register(
            &name("commits"),
            Param::read_only(move || {
                commits
                    .upgrade()
                    .map(|o| o.targets()[position].stats().journal.commits.to_string())
                    .unwrap_or_default()
            }),
        )?;
        let lost = weak.clone();
        tree.register(
            &name("lost"),
            Param::read_only(move || {
                lost.upgrade()
                    .map(|o| lost_text(&o.targets()[position].lost_ranges()))
                    .unwrap_or_default()
            }),
        )?;
        // Lustre's stats files: read, or cleared by writing anything (`stats=clear`).
        for (leaf, text) in [
            ("stats", counters::stats_text as fn(&_, _) -> String),
            ("brw_stats", counters::brw_stats_text),
        ] {
            let (get, clear) = (weak.clone(), weak.clone());
            tree.register(
                &name(leaf),
                Param::read_write(
                    move || {
                        get.upgrade()
                            .map(|o| text(&o.targets()[position].counters(), SystemTime::now()))
                            .unwrap_or_default()
                    },
                    move |_| {
                        let oss = clear.upgrade().ok_or("server stopped")?;
                        oss.targets()[position].clear_counters();
                        Ok(())
                    },
                ),
            )?;
        }
    }
    Ok(())
}

/// `lost`'s text: a header with the totals, then a line per lost range.
fn lost_text(lost: &crate::recovery::LostRanges) -> String {
    let mut text = format!(
        "lost_bytes: {}\nlost_objects: {}\n",
        lost.lost_bytes(),
        lost.lost_objects()
    );
    for object in lost.objects() {
        if let Some(data) = lost.lost_of(object) {
            for range in data.ranges {
                text.push_str(&format!("{object} {} {}\n", range.start, range.end));
            }
        }
    }
    text
}
