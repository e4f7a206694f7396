//! Scratch: print the routed study.
use iopath_topology::presets::JaguarSpider;
use iopath_topology::study::{self, AnalyzeOptions};

fn main() {
    let machine = JaguarSpider::new();
    let options = AnalyzeOptions {
        routed: true,
        ..AnalyzeOptions::default()
    };
    let t = std::time::Instant::now();
    let rows = study::routed_study(&machine, &options).unwrap();
    for r in &rows {
        println!(
            "{:<18} {:<14?} steady {:>9.0} ior {:>9.0} maxpairs {:>6.1}",
            r.config.name(),
            r.placement,
            r.aggregate_mb_per_s,
            r.ior_aggregate_mb_per_s,
            r.max_pairs_per_link
        );
    }
    eprintln!("{:?}", t.elapsed());
}
