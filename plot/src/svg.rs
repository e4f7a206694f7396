//! [`Figure::svg`]: a figure laid out and drawn as SVG text.
//!
//! Top to bottom the picture is: the title; the plot area, with the y axis's label and ticks
//! to its left (a second y axis's, for series in another unit, to its right) and the x
//! axis's below; the legend, in a box of its own under the x axis's
//! label, so it can never hide data; and the footnote. Every text is placed by its estimated
//! width ([`crate::text`]) so that it stays inside the picture, and the elements a reader (or
//! `plot::check`) needs to find carry a class: `plot-area`, `series` (with `data-series`,
//! its name), `markers`, `rule`, `legend-box`, and on texts `title`, `tick`, `axis-label`,
//! `legend-label`, `footnote`.
//!
//! Series are told apart three ways, so a reader without colour, or a print in grey, still
//! can: colour (the Okabe–Ito palette, chosen to stay distinct under common colour
//! blindness), dash pattern and marker shape. Where lines lie on each other, the earlier ones
//! are drawn wider and the later dashed, so each shows around or through the next.

use std::fmt::Write as _;

use crate::figure::{Draw, Figure, RuleAt, Series};
use crate::scale::{Scale, Span};
use crate::text::{ASCENT_EM, DESCENT_EM, escape, width_px, wrap};

/// The picture's width; its height follows from what is in it.
const WIDTH_PX: f64 = 760.0;
/// The plot area's height.
const PLOT_HEIGHT_PX: f64 = 300.0;
/// Empty space around everything.
pub(crate) const MARGIN_PX: f64 = 12.0;
const TITLE_FONT_PX: f64 = 15.0;
const AXIS_LABEL_FONT_PX: f64 = 12.0;
const TICK_FONT_PX: f64 = 11.0;
const LEGEND_FONT_PX: f64 = 11.0;
const FOOTNOTE_FONT_PX: f64 = 10.0;
/// Line height as a share of the font size.
pub(crate) const LINE_SPACING: f64 = 1.35;
const TICK_LENGTH_PX: f64 = 5.0;
/// Space between a tick and its label.
const TICK_GAP_PX: f64 = 3.0;
/// Least space between two x tick labels; a label closer than this to the one before is left
/// out.
const TICK_LABEL_GAP_PX: f64 = 6.0;
/// The sample of a series' style in the legend.
const SWATCH_PX: f64 = 30.0;
const LEGEND_ROW_PX: f64 = 18.0;
const LEGEND_PAD_PX: f64 = 8.0;
/// Space between one legend entry and the next on a row.
const LEGEND_ENTRY_GAP_PX: f64 = 18.0;
/// Markers on a step line: one per this share of the samples.
const STEP_MARKERS: usize = 8;
/// How many later lines can widen an earlier one.
const WIDENING_MAX: usize = 3;

/// Series colours: Okabe & Ito's palette, distinct under common colour blindness.
const PALETTE: [&str; 6] = [
    "#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9",
];
/// Series dash patterns (`None`: solid). With six colours, twelve series have distinct pairs.
const DASHES: [Option<&str>; 4] = [None, Some("8 4"), Some("2 3"), Some("10 3 2 3")];
/// Series marker shapes.
const MARKERS: [Marker; 4] = [
    Marker::Circle,
    Marker::Square,
    Marker::Triangle,
    Marker::Diamond,
];
/// Reference lines: dark grey, dashed, so they read as scaffolding, not data.
const RULE_COLOUR: &str = "#444444";
const RULE_DASH: &str = "6 4";

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Marker {
    Circle,
    Square,
    Triangle,
    Diamond,
}

/// How one series is drawn.
#[derive(Debug, Clone, Copy)]
struct Style {
    colour: &'static str,
    dash: Option<&'static str>,
    marker: Marker,
    line_px: f64,
    marker_px: f64,
}

impl Style {
    /// The style of series `index`, with `lines_after` line series drawn on top of it.
    fn of(index: usize, lines_after: usize) -> Style {
        let widen = lines_after.min(WIDENING_MAX) as f64;
        Style {
            colour: PALETTE[index % PALETTE.len()],
            dash: DASHES[index % DASHES.len()],
            marker: MARKERS[index % MARKERS.len()],
            line_px: 2.0 + 1.25 * widen,
            marker_px: 4.0 + widen,
        }
    }

    fn dash_attribute(&self) -> String {
        self.dash
            .map(|d| format!(r#" stroke-dasharray="{d}""#))
            .unwrap_or_default()
    }
}

/// The plot area in pixels, and the spans that map data into it.
#[derive(Debug, Clone, Copy)]
struct Frame {
    left: f64,
    top: f64,
    right: f64,
    bottom: f64,
    x: Span,
    y: Span,
    /// The second vertical axis's span, if the figure has one.
    y2: Option<Span>,
}

impl Frame {
    /// The frame `series` is drawn in: its y on the second axis if it is on that one.
    fn of(&self, series: &Series) -> Frame {
        match (series.right, self.y2) {
            (true, Some(y2)) => Frame { y: y2, ..*self },
            _ => *self,
        }
    }

    fn width(&self) -> f64 {
        self.right - self.left
    }

    fn height(&self) -> f64 {
        self.bottom - self.top
    }

    fn x_px(&self, x: f64) -> f64 {
        self.left + self.width() * self.x.fraction(x)
    }

    fn y_px(&self, y: f64) -> f64 {
        self.bottom - self.height() * self.y.fraction(y)
    }

    /// Whether a point can be drawn on these scales.
    fn drawable(&self, (x, y): (f64, f64)) -> bool {
        let fits = |v: f64, span: &Span| v.is_finite() && (span.scale == Scale::Linear || v > 0.0);
        fits(x, &self.x) && fits(y, &self.y)
    }
}

/// One entry of the legend: a series or a rule.
#[derive(Debug, Clone, Copy)]
enum Swatch {
    Line(Style),
    Marker(Style),
    Bar(Style),
    Rule,
}

impl Figure {
    /// The figure as an SVG document.
    pub fn svg(&self) -> String {
        let mut xs: Vec<f64> = Vec::new();
        let mut ys: Vec<f64> = Vec::new();
        let mut ys_right: Vec<f64> = Vec::new();
        for series in &self.series {
            let on_right = series.right && self.y2.is_some();
            for &(x, y) in &series.points {
                if series.draw == Draw::Bars {
                    // A bar fills its slot, half a unit each side of its x.
                    xs.extend([x - 0.5, x + 0.5]);
                } else {
                    xs.push(x);
                }
                if on_right {
                    ys_right.push(y);
                } else {
                    ys.push(y);
                }
            }
        }
        for rule in &self.rules {
            match rule.at {
                RuleAt::X(x) => xs.push(x),
                RuleAt::Y(y) => ys.push(y),
            }
        }
        let x_span = self.x.span(xs);
        let y_span = self.y.span(ys);
        let x_ticks = self.x.tick_list(&x_span);
        let y_ticks = self.y.tick_list(&y_span);
        let y2_span = self.y2.as_ref().map(|axis| axis.span(ys_right));
        let y2_ticks = match (&self.y2, &y2_span) {
            (Some(axis), Some(span)) => axis.tick_list(span),
            _ => Vec::new(),
        };

        // Horizontal layout: the y axis's label (turned on its side) and tick labels on the
        // left; on the right, room for half of an x tick label at the very edge.
        let y_tick_width = y_ticks
            .iter()
            .map(|(_, label)| width_px(label, TICK_FONT_PX))
            .fold(0.0, f64::max);
        let x_tick_half = x_ticks
            .iter()
            .map(|(_, label)| width_px(label, TICK_FONT_PX) / 2.0)
            .fold(0.0, f64::max);
        let left =
            (MARGIN_PX + AXIS_LABEL_FONT_PX + 8.0 + y_tick_width + TICK_GAP_PX + TICK_LENGTH_PX)
                .max(MARGIN_PX + x_tick_half);
        // A second axis takes the right as the first takes the left.
        let y2_tick_width = y2_ticks
            .iter()
            .map(|(_, label)| width_px(label, TICK_FONT_PX))
            .fold(0.0, f64::max);
        let right_room = if self.y2.is_some() {
            (MARGIN_PX + AXIS_LABEL_FONT_PX + 8.0 + y2_tick_width + TICK_GAP_PX + TICK_LENGTH_PX)
                .max(MARGIN_PX + x_tick_half)
        } else {
            MARGIN_PX + x_tick_half.max(8.0)
        };
        let right = WIDTH_PX - right_room;

        // Vertical layout, top down.
        let page = Page::new(WIDTH_PX, &self.title, &self.footnote);
        let top = page.title_bottom() + 10.0;
        let frame = Frame {
            left,
            top,
            right,
            bottom: top + PLOT_HEIGHT_PX,
            x: x_span,
            y: y_span,
            y2: y2_span,
        };
        let x_tick_baseline =
            frame.bottom + TICK_LENGTH_PX + TICK_GAP_PX + ASCENT_EM * TICK_FONT_PX;
        let x_label_baseline =
            x_tick_baseline + DESCENT_EM * TICK_FONT_PX + 8.0 + ASCENT_EM * AXIS_LABEL_FONT_PX;
        let legend_top = x_label_baseline + DESCENT_EM * AXIS_LABEL_FONT_PX + 12.0;
        let legend = self.legend_entries();
        let placed = place_legend(&legend, frame.left, legend_top, frame.width());
        let legend_bottom = placed.as_ref().map_or(legend_top, |p| p.bottom);
        let mut svg = String::new();
        page.open(&mut svg, legend_bottom);
        self.draw_axes(
            &mut svg,
            &frame,
            &x_ticks,
            &y_ticks,
            x_tick_baseline,
            x_label_baseline,
        );
        self.draw_right_axis(&mut svg, &frame, &y2_ticks);
        self.draw_data(&mut svg, &frame);
        let _ = writeln!(
            svg,
            r##"<rect class="plot-area" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="none" stroke="#777777"/>"##,
            frame.left,
            frame.top,
            frame.width(),
            frame.height()
        );
        if let Some(placed) = placed {
            draw_legend(&mut svg, &legend, &placed);
        }
        page.close(&mut svg, legend_bottom);
        svg
    }

    /// Grid lines, ticks, tick labels and the axes' labels.
    fn draw_axes(
        &self,
        svg: &mut String,
        frame: &Frame,
        x_ticks: &[(f64, String)],
        y_ticks: &[(f64, String)],
        x_tick_baseline: f64,
        x_label_baseline: f64,
    ) {
        for (value, label) in y_ticks {
            let y = frame.y_px(*value);
            let _ = writeln!(
                svg,
                r##"<line class="grid" x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#e4e4e4"/>"##,
                frame.left, frame.right
            );
            let _ = writeln!(
                svg,
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="black"/>"#,
                frame.left - TICK_LENGTH_PX,
                frame.left
            );
            text(
                svg,
                "tick",
                frame.left - TICK_LENGTH_PX - TICK_GAP_PX,
                y + 0.35 * TICK_FONT_PX,
                TICK_FONT_PX,
                "end",
                label,
            );
        }
        let mut last_label_right = f64::NEG_INFINITY;
        for (value, label) in x_ticks {
            let x = frame.x_px(*value);
            let _ = writeln!(
                svg,
                r#"<line x1="{x:.1}" y1="{:.1}" x2="{x:.1}" y2="{:.1}" stroke="black"/>"#,
                frame.bottom,
                frame.bottom + TICK_LENGTH_PX
            );
            let half = width_px(label, TICK_FONT_PX) / 2.0;
            if x - half >= last_label_right + TICK_LABEL_GAP_PX {
                text(
                    svg,
                    "tick",
                    x,
                    x_tick_baseline,
                    TICK_FONT_PX,
                    "middle",
                    label,
                );
                last_label_right = x + half;
            }
        }
        text(
            svg,
            "axis-label",
            (frame.left + frame.right) / 2.0,
            x_label_baseline,
            AXIS_LABEL_FONT_PX,
            "middle",
            &self.x.label,
        );
        // The y label turned a quarter anticlockwise: its ascent lies to the left of its
        // baseline, which is placed so the ascent starts at the margin.
        let (ax, ay) = (
            MARGIN_PX + ASCENT_EM * AXIS_LABEL_FONT_PX,
            (frame.top + frame.bottom) / 2.0,
        );
        let _ = writeln!(
            svg,
            r#"<text class="axis-label" x="{ax:.1}" y="{ay:.1}" font-size="{AXIS_LABEL_FONT_PX}" text-anchor="middle" transform="rotate(-90 {ax:.1} {ay:.1})">{}</text>"#,
            escape(&self.y.label)
        );
    }

    /// The second axis, if any: ticks and their labels right of the plot area, and its label
    /// turned a quarter clockwise at the right margin.
    fn draw_right_axis(&self, svg: &mut String, frame: &Frame, ticks: &[(f64, String)]) {
        let (Some(axis), Some(span)) = (&self.y2, frame.y2) else {
            return;
        };
        let on_axis = Frame { y: span, ..*frame };
        for (value, label) in ticks {
            let y = on_axis.y_px(*value);
            let _ = writeln!(
                svg,
                r#"<line x1="{:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="black"/>"#,
                frame.right,
                frame.right + TICK_LENGTH_PX
            );
            text(
                svg,
                "tick",
                frame.right + TICK_LENGTH_PX + TICK_GAP_PX,
                y + 0.35 * TICK_FONT_PX,
                TICK_FONT_PX,
                "start",
                label,
            );
        }
        // Its ascent lies to the right of its baseline, placed so the ascent ends at the
        // margin.
        let (ax, ay) = (
            WIDTH_PX - MARGIN_PX - ASCENT_EM * AXIS_LABEL_FONT_PX,
            (frame.top + frame.bottom) / 2.0,
        );
        let _ = writeln!(
            svg,
            r#"<text class="axis-label" x="{ax:.1}" y="{ay:.1}" font-size="{AXIS_LABEL_FONT_PX}" text-anchor="middle" transform="rotate(90 {ax:.1} {ay:.1})">{}</text>"#,
            escape(&axis.label)
        );
    }

    /// Bars, then rules, then lines, then every line's markers on top.
    fn draw_data(&self, svg: &mut String, frame: &Frame) {
        let bars: Vec<(usize, &Series)> = self
            .series
            .iter()
            .enumerate()
            .filter(|(_, s)| s.draw == Draw::Bars)
            .collect();
        let slot_px = frame.x_px(1.0) - frame.x_px(0.0);
        for (rank, (index, series)) in bars.iter().enumerate() {
            let style = self.style(*index);
            let bar_px = 0.8 * slot_px / bars.len() as f64;
            let _ = writeln!(
                svg,
                r#"<g class="series" data-series="{}" fill="{}">"#,
                escape(&series.name),
                style.colour
            );
            let frame = frame.of(series);
            for &(x, y) in &series.points {
                if !frame.drawable((x, y)) || frame.y.fraction(y) <= 0.0 {
                    continue;
                }
                let left = frame.x_px(x) - 0.4 * slot_px + bar_px * rank as f64;
                let top = frame.y_px(y).max(frame.top);
                let _ = writeln!(
                    svg,
                    r#"<rect x="{left:.1}" y="{top:.1}" width="{bar_px:.1}" height="{:.1}"/>"#,
                    frame.bottom - top
                );
            }
            svg.push_str("</g>\n");
        }
        for rule in &self.rules {
            let (x1, y1, x2, y2) = match rule.at {
                RuleAt::X(x) => {
                    let x = frame.x_px(x);
                    (x, frame.top, x, frame.bottom)
                }
                RuleAt::Y(y) => {
                    let y = frame.y_px(y);
                    (frame.left, y, frame.right, y)
                }
            };
            let _ = writeln!(
                svg,
                r#"<line class="rule" data-rule="{}" x1="{x1:.1}" y1="{y1:.1}" x2="{x2:.1}" y2="{y2:.1}" stroke="{RULE_COLOUR}" stroke-width="1.5" stroke-dasharray="{RULE_DASH}"/>"#,
                escape(&rule.name)
            );
        }
        let mut markers = String::new();
        for (index, series) in self.series.iter().enumerate() {
            if series.draw == Draw::Bars {
                continue;
            }
            let style = self.style(index);
            let frame = &frame.of(series);
            let points: Vec<(f64, f64)> = series
                .points
                .iter()
                .copied()
                .filter(|&p| frame.drawable(p))
                .collect();
            if points.is_empty() {
                continue;
            }
            let (path, marked) = match series.draw {
                Draw::Steps => (step_path(frame, &points), self.step_markers(index, &points)),
                Draw::Line | Draw::Points | Draw::Bars => (
                    points
                        .iter()
                        .map(|&(x, y)| (frame.x_px(x), frame.y_px(y)))
                        .collect(),
                    points.clone(),
                ),
            };
            let d: Vec<String> = path
                .iter()
                .enumerate()
                .map(|(i, (x, y))| format!("{}{x:.1},{y:.1}", if i == 0 { "M" } else { "L" }))
                .collect();
            // Points not joined: the path keeps them for a reader, and is not stroked.
            let (stroke_width, visibility) = match series.draw {
                Draw::Points => (0.0, r#" visibility="hidden""#),
                _ => (style.line_px, ""),
            };
            let _ = writeln!(
                svg,
                r#"<path class="series" data-series="{}" d="{}" fill="none" stroke="{}" stroke-width="{:.2}"{}{visibility} stroke-linejoin="round"/>"#,
                escape(&series.name),
                d.join(" "),
                style.colour,
                stroke_width,
                style.dash_attribute()
            );
            let _ = writeln!(
                markers,
                r#"<g class="markers" data-series="{}" fill="{}" stroke="white" stroke-width="1">"#,
                escape(&series.name),
                style.colour
            );
            for (x, y) in marked {
                marker(
                    &mut markers,
                    style.marker,
                    frame.x_px(x),
                    frame.y_px(y),
                    style.marker_px,
                );
            }
            markers.push_str("</g>\n");
        }
        svg.push_str(&markers);
    }

    /// Series `index`'s style: earlier lines are drawn wider, by how many lines come after.
    fn style(&self, index: usize) -> Style {
        let lines_after = self.series[index + 1..]
            .iter()
            .filter(|s| s.draw != Draw::Bars)
            .count();
        let lines_after = if self.series[index].draw == Draw::Bars {
            0
        } else {
            lines_after
        };
        Style::of(index, lines_after)
    }

    /// Where a step series' markers go: on its risers, at quantiles staggered by the series'
    /// place among the step series, so two curves that coincide show both series' markers.
    fn step_markers(&self, index: usize, points: &[(f64, f64)]) -> Vec<(f64, f64)> {
        let steps: Vec<usize> = (0..self.series.len())
            .filter(|&i| self.series[i].draw == Draw::Steps)
            .collect();
        let rank = steps.iter().position(|&i| i == index).unwrap_or(0);
        let offset = (rank + 1) as f64 / (steps.len() + 1) as f64;
        let n = points.len();
        (0..STEP_MARKERS)
            .map(|k| {
                let q = (k as f64 + offset) / STEP_MARKERS as f64;
                // The first sample whose step reaches q: q lies on its riser.
                let i = points.iter().position(|&(_, f)| f >= q).unwrap_or(n - 1);
                (points[i].0, q.min(points[i].1))
            })
            .collect()
    }

    fn legend_entries(&self) -> Vec<(String, Swatch)> {
        let mut entries: Vec<(String, Swatch)> = self
            .series
            .iter()
            .enumerate()
            .map(|(index, series)| {
                let style = self.style(index);
                let swatch = match series.draw {
                    Draw::Bars => Swatch::Bar(style),
                    Draw::Points => Swatch::Marker(style),
                    Draw::Line | Draw::Steps => Swatch::Line(style),
                };
                let name = if series.right && self.y2.is_some() {
                    format!("{} (right axis)", series.name)
                } else {
                    series.name.clone()
                };
                (name, swatch)
            })
            .collect();
        entries.extend(self.rules.iter().map(|r| (r.name.clone(), Swatch::Rule)));
        entries
    }
}

/// A step line's corners in pixels: from the left edge at zero (or the bottom, on a log
/// scale), across and up at each point, and on to the right edge after the last.
fn step_path(frame: &Frame, points: &[(f64, f64)]) -> Vec<(f64, f64)> {
    let mut level = match frame.y.scale {
        Scale::Linear => frame.y_px(0.0).clamp(frame.top, frame.bottom),
        Scale::Log => frame.bottom,
    };
    let mut path = vec![(frame.left, level)];
    for &(x, y) in points {
        let (px, py) = (frame.x_px(x), frame.y_px(y));
        path.push((px, level));
        path.push((px, py));
        level = py;
    }
    path.push((frame.right, level));
    path
}

/// Where the legend's entries go: rows of entries, left to right, wrapped at `width`.
#[derive(Debug)]
struct PlacedLegend {
    /// Each entry's swatch start and row centre.
    at: Vec<(f64, f64)>,
    left: f64,
    top: f64,
    width: f64,
    bottom: f64,
}

fn place_legend(
    entries: &[(String, Swatch)],
    left: f64,
    top: f64,
    width: f64,
) -> Option<PlacedLegend> {
    if entries.is_empty() {
        return None;
    }
    let inner_left = left + LEGEND_PAD_PX;
    let inner_right = left + width - LEGEND_PAD_PX;
    let mut at = Vec::new();
    let (mut x, mut row, mut widest) = (inner_left, 0usize, 0.0f64);
    for (name, _) in entries {
        let entry = SWATCH_PX + 6.0 + width_px(name, LEGEND_FONT_PX);
        if x > inner_left && x + entry > inner_right {
            row += 1;
            x = inner_left;
        }
        at.push((x, top + LEGEND_PAD_PX + LEGEND_ROW_PX * (row as f64 + 0.5)));
        widest = widest.max(x + entry);
        x += entry + LEGEND_ENTRY_GAP_PX;
    }
    Some(PlacedLegend {
        at,
        left,
        top,
        width: widest + LEGEND_PAD_PX - left,
        bottom: top + 2.0 * LEGEND_PAD_PX + LEGEND_ROW_PX * (row + 1) as f64,
    })
}

fn draw_legend(svg: &mut String, entries: &[(String, Swatch)], placed: &PlacedLegend) {
    let _ = writeln!(
        svg,
        r##"<rect class="legend-box" x="{:.1}" y="{:.1}" width="{:.1}" height="{:.1}" fill="white" stroke="#bbbbbb"/>"##,
        placed.left,
        placed.top,
        placed.width,
        placed.bottom - placed.top
    );
    for ((name, swatch), &(x, y)) in entries.iter().zip(&placed.at) {
        match swatch {
            Swatch::Line(style) => {
                let _ = writeln!(
                    svg,
                    r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{}" stroke-width="{:.2}"{}/>"#,
                    x + SWATCH_PX,
                    style.colour,
                    style.line_px.min(3.0),
                    style.dash_attribute()
                );
                let _ = writeln!(
                    svg,
                    r#"<g fill="{}" stroke="white" stroke-width="1">"#,
                    style.colour
                );
                marker(
                    svg,
                    style.marker,
                    x + SWATCH_PX / 2.0,
                    y,
                    style.marker_px.min(4.5),
                );
                svg.push_str("</g>\n");
            }
            Swatch::Marker(style) => {
                let _ = writeln!(
                    svg,
                    r#"<g fill="{}" stroke="white" stroke-width="1">"#,
                    style.colour
                );
                marker(
                    svg,
                    style.marker,
                    x + SWATCH_PX / 2.0,
                    y,
                    style.marker_px.min(4.5),
                );
                svg.push_str("</g>\n");
            }
            Swatch::Bar(style) => {
                let _ = writeln!(
                    svg,
                    r#"<rect x="{:.1}" y="{:.1}" width="12" height="12" fill="{}"/>"#,
                    x + SWATCH_PX / 2.0 - 6.0,
                    y - 6.0,
                    style.colour
                );
            }
            Swatch::Rule => {
                let _ = writeln!(
                    svg,
                    r#"<line x1="{x:.1}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="{RULE_COLOUR}" stroke-width="1.5" stroke-dasharray="{RULE_DASH}"/>"#,
                    x + SWATCH_PX
                );
            }
        }
        text(
            svg,
            "legend-label",
            x + SWATCH_PX + 6.0,
            y + 0.35 * LEGEND_FONT_PX,
            LEGEND_FONT_PX,
            "start",
            name,
        );
    }
}

fn marker(svg: &mut String, shape: Marker, x: f64, y: f64, r: f64) {
    let _ = match shape {
        Marker::Circle => writeln!(svg, r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r:.1}"/>"#),
        Marker::Square => {
            let side = 1.7 * r;
            writeln!(
                svg,
                r#"<rect x="{:.1}" y="{:.1}" width="{side:.1}" height="{side:.1}"/>"#,
                x - side / 2.0,
                y - side / 2.0
            )
        }
        Marker::Triangle => writeln!(
            svg,
            r#"<path d="M{x:.1},{:.1} L{:.1},{:.1} L{:.1},{:.1} Z"/>"#,
            y - 1.2 * r,
            x + 1.1 * r,
            y + 0.8 * r,
            x - 1.1 * r,
            y + 0.8 * r
        ),
        Marker::Diamond => writeln!(
            svg,
            r#"<path d="M{x:.1},{:.1} L{:.1},{y:.1} L{x:.1},{:.1} L{:.1},{y:.1} Z"/>"#,
            y - 1.25 * r,
            x + r,
            y + 1.25 * r,
            x - r
        ),
    };
}

/// What every picture has around its content: a white page of `width`, the title wrapped on
/// top and the footnote wrapped below the content, in the same fonts and margins.
pub(crate) struct Page {
    width: f64,
    title: String,
    title_lines: Vec<String>,
    footnote_lines: Vec<String>,
}

impl Page {
    pub(crate) fn new(width: f64, title: &str, footnote: &str) -> Page {
        Page {
            width,
            title: title.to_owned(),
            title_lines: wrap(title, TITLE_FONT_PX, width - 2.0 * MARGIN_PX),
            footnote_lines: wrap(footnote, FOOTNOTE_FONT_PX, width - 2.0 * MARGIN_PX),
        }
    }

    /// Where the title ends: the content goes below.
    pub(crate) fn title_bottom(&self) -> f64 {
        MARGIN_PX + TITLE_FONT_PX * LINE_SPACING * self.title_lines.len() as f64
    }

    fn footnote_top(content_bottom: f64) -> f64 {
        content_bottom + 10.0
    }

    /// Opens the picture — its height fits content ending at `content_bottom` and the
    /// footnote — with the white page and the title.
    pub(crate) fn open(&self, svg: &mut String, content_bottom: f64) {
        let line_px = FOOTNOTE_FONT_PX * LINE_SPACING;
        let height = (Page::footnote_top(content_bottom)
            + line_px * self.footnote_lines.len() as f64
            + MARGIN_PX)
            .ceil();
        let width = self.width;
        let _ = writeln!(
            svg,
            r#"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" font-family="sans-serif">"#
        );
        let _ = writeln!(svg, "<title>{}</title>", escape(&self.title));
        let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
        let line_px = TITLE_FONT_PX * LINE_SPACING;
        for (i, line) in self.title_lines.iter().enumerate() {
            let baseline = MARGIN_PX + ASCENT_EM * TITLE_FONT_PX + line_px * i as f64;
            text(
                svg,
                "title",
                width / 2.0,
                baseline,
                TITLE_FONT_PX,
                "middle",
                line,
            );
        }
    }

    /// The footnote below content ending at `content_bottom`, and the picture's end.
    pub(crate) fn close(&self, svg: &mut String, content_bottom: f64) {
        let top = Page::footnote_top(content_bottom);
        let line_px = FOOTNOTE_FONT_PX * LINE_SPACING;
        for (i, line) in self.footnote_lines.iter().enumerate() {
            let baseline = top + ASCENT_EM * FOOTNOTE_FONT_PX + line_px * i as f64;
            text(
                svg,
                "footnote",
                MARGIN_PX,
                baseline,
                FOOTNOTE_FONT_PX,
                "start",
                line,
            );
        }
        svg.push_str("</svg>\n");
    }
}

fn text(svg: &mut String, class: &str, x: f64, y: f64, font_px: f64, anchor: &str, content: &str) {
    let _ = writeln!(
        svg,
        r#"<text class="{class}" x="{x:.1}" y="{y:.1}" font-size="{font_px}" text-anchor="{anchor}">{}</text>"#,
        escape(content)
    );
}
