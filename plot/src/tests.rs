//! Figures of every kind, drawn and read back: nothing outside the picture, the legend off the
//! data, every series its own; and the reader itself, shown plots that read badly.

use crate::check::{Drawing, Problem};
use crate::{Axis, Figure, Rule, Series};

fn read(figure: &Figure) -> Drawing {
    let svg = figure.svg();
    let drawing = Drawing::read(&svg).unwrap_or_else(|e| panic!("{e}\n{svg}"));
    let problems = drawing.problems();
    assert!(
        problems.is_empty(),
        "{}\n{svg}",
        problems
            .iter()
            .map(ToString::to_string)
            .collect::<Vec<_>>()
            .join("\n")
    );
    drawing
}

fn sweep_figure(series: usize, points: usize) -> Figure {
    Figure {
        title: "selftest: bulk bandwidth by RPC size".into(),
        x: Axis::log("RPC size (bytes, log scale)").ticks_at(
            (0..points)
                .map(|i| ((4096u64 << (2 * i)) as f64, format!("{} KiB", 4 << (2 * i))))
                .collect(),
        ),
        y: Axis::from_zero("bandwidth (MiB/s)"),
        y2: None,
        series: (0..series)
            .map(|s| {
                Series::line(
                    format!("OST, internal journal, configuration number {s}"),
                    (0..points).map(|i| ((4096u64 << (2 * i)) as f64, 100.0 * (i + s) as f64)),
                )
            })
            .collect(),
        rules: vec![Rule::at_y(
            "iperf3 loopback baseline, measured in this run",
            1234.0,
        )],
        footnote: "modeled: nothing: real bytes, real checksums, real loopback TCP sockets. "
            .repeat(4),
    }
}

#[test]
fn a_line_per_series_with_a_vertex_and_a_marker_per_point() {
    let drawing = read(&sweep_figure(5, 6));
    assert_eq!(drawing.series.len(), 5);
    for series in &drawing.series {
        assert_eq!(series.element, "path");
        assert_eq!(series.points.len(), 6, "{}", series.name);
    }
    // Long legend entries wrap onto rows below the data, and the footnote onto lines.
    assert!(
        drawing
            .legend
            .is_some_and(|l| l.top > drawing.plot_area.bottom)
    );
    assert!(drawing.texts_of("footnote").len() > 1);
    assert!(
        drawing.texts_of("legend-label").len() == 6,
        "5 series and the rule"
    );
}

#[test]
fn twelve_series_are_all_told_apart() {
    let drawing = read(&sweep_figure(12, 2));
    assert_eq!(drawing.series.len(), 12);
}

#[test]
fn coinciding_cdfs_each_keep_their_own_line_and_markers() {
    let same = [16.67; 40];
    let mut tail = same;
    tail[39] = 27.55;
    let figure = Figure {
        title: "Per-writer completion time".into(),
        x: Axis::around_data("completion time (s)"),
        y: Axis::from_zero("fraction of writers done").fixed(-0.03, 1.05),
        y2: None,
        series: vec![Series::cdf("default", &tail), Series::cdf("placed", &same)],
        rules: vec![],
        footnote: String::new(),
    };
    let svg = figure.svg();
    let drawing = read(&figure);
    let (a, b) = (&drawing.series[0], &drawing.series[1]);
    assert_ne!((&a.colour, &a.dash), (&b.colour, &b.dash));
    // Each starts at zero, which is above the bottom of this axis, and ends at one, below its
    // top.
    for series in [a, b] {
        let (first, last) = (series.points[0], series.points[series.points.len() - 1]);
        assert!(first.1 < drawing.plot_area.bottom - 5.0, "{first:?}");
        assert!(last.1 > drawing.plot_area.top + 5.0, "{last:?}");
    }
    // The first is drawn wider, so the second (dashed) shows on top of it where they meet.
    let width = |name: &str| {
        let tag = svg
            .lines()
            .find(|l| l.contains(&format!(r#"class="series" data-series="{name}""#)))
            .unwrap();
        let at = tag.find("stroke-width=\"").unwrap() + 14;
        tag[at..].split('"').next().unwrap().parse::<f64>().unwrap()
    };
    assert!(width("default") > width("placed"));
    assert!(b.dash.is_some());
    // Markers of both, at staggered heights: none of one on top of one of the other.
    let markers = |name: &str| {
        svg.split(&format!(r#"<g class="markers" data-series="{name}""#))
            .nth(1)
            .unwrap()
            .split("</g>")
            .next()
            .unwrap()
            .to_owned()
    };
    assert_eq!(markers("default").matches("<circle").count(), 8);
    assert_eq!(markers("placed").matches("<rect").count(), 8);
    assert!(
        markers("default")
            .lines()
            .filter_map(|l| l.split("cy=\"").nth(1))
            .all(|cy| !markers("placed").contains(&format!("y=\"{cy}")))
    );
}

#[test]
fn bars_on_a_log_scale_stand_side_by_side_in_their_slot() {
    let figure = Figure {
        title: "Pairs per torus link".into(),
        x: Axis::around_data("client-OST pairs per link"),
        y: Axis::log("links (log scale)"),
        y2: None,
        series: vec![
            Series::bars("default", [(1.0, 1900.0), (19.0, 1.0)]),
            Series::bars("placed", [(1.0, 550.0), (3.0, 23.0)]),
        ],
        rules: vec![Rule::at_x("saturation point: 17 pairs per link", 17.5)],
        footnote: "modeled".into(),
    };
    let drawing = read(&figure);
    let (default, placed) = (&drawing.series[0], &drawing.series[1]);
    assert_eq!((default.element.as_str(), default.points.len()), ("g", 2));
    assert_eq!(placed.points.len(), 2);
    // At x = 1 the placed bar stands right of the default bar, and is shorter.
    assert!(placed.points[0].0 > default.points[0].0);
    assert!(placed.points[0].1 > default.points[0].1);
}

#[test]
fn a_long_title_and_crowded_ticks_still_fit() {
    let mut figure = sweep_figure(1, 2);
    figure.title = "a title long enough that it cannot fit on one line of a picture this wide, \
                    so it is wrapped onto a second line instead of running off the edge"
        .into();
    figure.x = Axis::from_zero("run")
        .fixed(0.5, 100.5)
        .ticks_at((1..=100).map(|r| (f64::from(r), r.to_string())).collect());
    figure.series = vec![Series::line("only", (1..=100).map(|r| (f64::from(r), 1.0)))];
    let drawing = read(&figure);
    assert_eq!(drawing.texts_of("title").len(), 2);
    let ticks = drawing.texts_of("tick");
    assert!(ticks.contains(&"1") && !ticks.contains(&"2"), "{ticks:?}");
    assert_eq!(drawing.series[0].points.len(), 100);
}

#[test]
fn markup_in_names_is_escaped() {
    let mut figure = sweep_figure(1, 2);
    figure.series[0].name = "a <b> & \"c\"".into();
    let drawing = read(&figure);
    assert!(drawing.series("a <b> & \"c\"").is_some());
}

/// A plot with the old faults: a label past the right edge, a legend inside the data area,
/// two series in one colour.
#[test]
fn the_reader_finds_what_reads_badly() {
    let svg = r##"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 720 420">
<rect class="plot-area" x="70" y="40" width="630" height="330"/>
<path class="series" data-series="a" d="M70,370 L700,40" stroke="#d62728"/>
<path class="series" data-series="b" d="M70,370 L710,40" stroke="#d62728"/>
<rect class="legend-box" x="550" y="48" width="140" height="40"/>
<text class="tick" x="704" y="54" font-size="11" text-anchor="start">saturation (17 pairs)</text>
<text class="tick" x="100" y="54" font-size="11" text-anchor="middle">one</text>
<text class="tick" x="105" y="56" font-size="11" text-anchor="middle">two</text>
<text class="axis-label" x="16" y="205" font-size="12" text-anchor="middle" transform="rotate(-90 16 205)">links</text>
</svg>"##;
    let drawing = Drawing::read(svg).unwrap();
    let problems = drawing.problems();
    let has = |f: &dyn Fn(&Problem) -> bool| problems.iter().any(f);
    assert!(has(
        &|p| matches!(p, Problem::TextOutside { content, .. } if content.starts_with("saturation"))
    ));
    assert!(has(
        &|p| matches!(p, Problem::TextsOverlap { first, second } if first == "one" && second == "two")
    ));
    assert!(has(&|p| *p == Problem::LegendOverData));
    assert!(has(
        &|p| matches!(p, Problem::PointOutside { series, .. } if series == "b")
    ));
    assert!(has(&|p| matches!(p, Problem::SeriesAlike { .. })));
    assert_eq!(problems.len(), 5, "{problems:?}");
    // The turned label lies across its anchor: 12 px wide, as tall as the word is long.
    let label = &drawing.texts[3];
    assert!(label.extent.bottom - label.extent.top > label.extent.right - label.extent.left);
    assert!(Drawing::read("<svg").is_err());
    assert!(
        Drawing::read(r#"<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 1 1"/>"#).is_err()
    );
}

/// A series in another unit goes on a second axis on the right, with its own ticks and label,
/// instead of being scaled onto the first axis: its highest point reaches the top of the plot
/// whatever its unit, and the legend says which axis it reads against.
#[test]
fn a_series_in_another_unit_reads_against_a_second_axis_on_the_right() {
    let figure = Figure {
        title: "bandwidth and congestion against load".into(),
        x: Axis::log("IOR tasks"),
        y: Axis::from_zero("IOR bandwidth (MiB/s)"),
        y2: Some(Axis::from_zero("router congestion (s queued per s)")),
        series: vec![
            Series::line("IOR bandwidth (MiB/s)", [(1.0, 100.0), (2.0, 1000.0)]),
            Series::line(
                "router congestion (s queued per s)",
                [(1.0, 0.5), (2.0, 2.0)],
            )
            .on_right(),
        ],
        rules: Vec::new(),
        footnote: "made-up figures".into(),
    };
    let drawing = read(&figure);
    let labels = drawing.texts_of("axis-label");
    assert!(
        labels.contains(&"router congestion (s queued per s)"),
        "{labels:?}"
    );
    let legend = drawing.texts_of("legend-label").join("\n");
    assert!(
        legend.contains("router congestion (s queued per s) (right axis)"),
        "{legend}"
    );
    // Congestion of 2 s/s on its own axis stands high; scaled onto 0..1000 MiB/s it would
    // lie on the floor. Each series' top is at the top tick of its axis or below it, and
    // the congestion's is within a tick of the top, as the bandwidth's is.
    let top = |name: &str| {
        drawing
            .series(name)
            .unwrap()
            .points
            .iter()
            .map(|p| p.1)
            .fold(f64::INFINITY, f64::min)
    };
    let (bandwidth_top, congestion_top) = (
        top("IOR bandwidth (MiB/s)"),
        top("router congestion (s queued per s)"),
    );
    let plot = drawing.plot_area;
    let height = plot.bottom - plot.top;
    assert!(
        congestion_top < plot.top + 0.25 * height,
        "{congestion_top} in {plot:?}"
    );
    assert!(bandwidth_top < plot.top + 0.25 * height);
    // Tick labels right of the plot area: the second axis's.
    assert!(
        drawing
            .texts
            .iter()
            .any(|t| t.class == "tick" && t.extent.left > plot.right),
        "no ticks on the right"
    );
}

/// Points that are separate measurements are markers, not joined by a line.
#[test]
fn points_are_not_joined() {
    let figure = Figure {
        series: vec![Series::points("runs", [(1.0, 3.0), (2.0, 5.0), (3.0, 4.0)])],
        ..sweep_figure(1, 2)
    };
    let drawing = read(&figure);
    assert_eq!(drawing.series[0].points.len(), 3);
    assert!(!drawing.series[0].joined);
    assert!(read(&sweep_figure(1, 2)).series[0].joined);
}
