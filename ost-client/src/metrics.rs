//! The osc families on a client node's (or a fyod's) `/metrics`, read from [`OscStats`] when a
//! scrape comes: writes kept for replay (acknowledged, not yet committed) and RPCs under way,
//! by target. The live view draws the first as each client's uncommitted requests.

use std::sync::{Arc, Weak};

use iopath_admin::lprocfs::Rw;
use iopath_admin::metrics::gauges;
use iopath_layout::FsName;
use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use crate::stats::OscStats;

/// The osc collector of one node.
#[derive(Debug)]
pub struct OscCollector {
    stats: Weak<OscStats>,
    fsname: FsName,
}

impl OscCollector {
    /// A collector reading `stats`, labelling each target with its name in file system
    /// `fsname` (`iopath-OST0003`).
    pub fn new(stats: &Arc<OscStats>, fsname: FsName) -> OscCollector {
        OscCollector {
            stats: Arc::downgrade(stats),
            fsname,
        }
    }
}

impl Collector for OscCollector {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        let Some(stats) = self.stats.upgrade() else {
            return Ok(());
        };
        let target = |index: u32| vec![("target", self.fsname.ost(index).to_string())];
        gauges(
            &mut encoder,
            "iopath_osc_uncommitted_writes",
            "Writes the target acknowledged and has not committed yet, kept for replay by the node's OST clients.",
            stats
                .targets()
                .into_iter()
                .map(|t| (target(t.index()), t.uncommitted() as f64)),
        )?;
        let mut in_flight = Vec::new();
        for t in stats.targets() {
            let under_way = t.under_way();
            for (rw, name) in [(Rw::Read, "read"), (Rw::Write, "write")] {
                let mut labels = target(t.index());
                labels.push(("rw", name.to_owned()));
                in_flight.push((labels, under_way.rpcs[rw as usize] as f64));
            }
        }
        gauges(
            &mut encoder,
            "iopath_osc_rpcs_in_flight",
            "Read and write RPCs sent to the target and not yet answered.",
            in_flight,
        )
    }
}
