//! `topo analyze`'s plots, read back with an XML parser: every label inside the picture, the
//! legend off the data, each placement's bars and curve its own, and the footnote saying that
//! every figure is modeled.

#![allow(clippy::unwrap_used)] // helpers outside #[test] fns: a panic here is a failed test

use iopath_plot::check::Drawing;
use iopath_topology::presets::JaguarSpider;
use iopath_topology::render;
use iopath_topology::study::{self, AnalyzeOptions, AnalyzeReport};

fn report() -> AnalyzeReport {
    let options = AnalyzeOptions {
        run_offsets: 1,
        confined_offsets: 0,
        ..AnalyzeOptions::default()
    };
    study::analyze(&JaguarSpider::new(), &options).unwrap()
}

fn read_well(svg: &str) -> Drawing {
    Drawing::read_clean(svg).unwrap_or_else(|e| panic!("{e}"))
}

fn file<'a>(files: &'a [(&'static str, String)], name: &str) -> &'a str {
    &files.iter().find(|(n, _)| *n == name).unwrap().1
}

#[test]
fn the_plots_keep_their_labels_inside_and_their_legend_off_the_data() {
    let report = report();
    let files = render::plot_files(&report);
    for name in ["link_histogram.svg", "completion_cdf.svg"] {
        let drawing = read_well(file(&files, name));
        let legend = drawing.legend.unwrap();
        assert!(
            legend.top > drawing.plot_area.bottom,
            "{name}: legend below the data"
        );
        let footnote = drawing.texts_of("footnote").join(" ");
        assert!(
            footnote.starts_with("Modeled, not measured"),
            "{name}: {footnote}"
        );
        let axes = drawing.texts_of("axis-label");
        assert_eq!(axes.len(), 2, "{name}");
        assert!(
            axes.iter()
                .any(|a| a.contains("(s)") || a.contains("count")),
            "{name}: {axes:?}"
        );
    }
}

#[test]
fn each_placement_has_its_own_bars_with_a_bar_per_bin() {
    let report = report();
    let drawing = read_well(file(&render::plot_files(&report), "link_histogram.svg"));
    assert_eq!(drawing.series.len(), report.scenarios.len());
    for (shape, scenario) in drawing.series.iter().zip(&report.scenarios) {
        assert!(shape.name.starts_with(&scenario.name), "{}", shape.name);
        assert_eq!(
            shape.points.len(),
            scenario.histogram.len(),
            "{}",
            shape.name
        );
    }
    let svg = file(&render::plot_files(&report), "link_histogram.svg").to_owned();
    assert!(svg.contains(r#"class="rule" data-rule="saturation point: 17 pairs per link"#));
}

#[test]
fn both_completion_curves_are_drawn_each_in_its_own_style() {
    let report = report();
    let drawing = read_well(file(&render::plot_files(&report), "completion_cdf.svg"));
    let [default, placed] = &drawing.series[..] else {
        panic!("two curves: {:?}", drawing.series);
    };
    assert_eq!(default.element, "path");
    assert!(default.name.starts_with("default") && placed.name.starts_with("placed"));
    assert_ne!(default.colour, placed.colour);
    assert_ne!(default.dash, placed.dash);
    // A step per writer: up and across for each, plus the two ends.
    for (shape, scenario) in [default, placed].into_iter().zip(&report.scenarios) {
        assert_eq!(
            shape.points.len(),
            2 * scenario.completion_times_s.len() + 2
        );
    }
}
