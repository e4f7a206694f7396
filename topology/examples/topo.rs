//! The Spider paper's placement study, in one call: on Jaguar with its 96 direct-attached
//! OSSes, 672 writers placed in launcher order and placed nearest their targets — the load on
//! the busiest torus link, the share of the raw back end each gets, and how far apart the
//! writers finish — printed as `iopath topo analyze` prints it.
//!
//! ```text
//! cargo run --release -p iopath-topology --example topo
//! ```
//!
//! `iopath topo analyze | routes | layout` runs this and the other studies with options.

use iopath_topology::presets::JaguarSpider;
use iopath_topology::render;
use iopath_topology::study::{self, AnalyzeOptions};

fn main() -> Result<(), iopath_topology::TopologyError> {
    let machine = JaguarSpider::new();
    let report = study::analyze(&machine, &AnalyzeOptions::default())?;
    print!(
        "{}",
        render::analyze_table(&report, &study::dims_text(&machine))
    );
    Ok(())
}
