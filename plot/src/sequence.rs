//! [`Sequence`]: one request followed hop by hop through the stack — client, router, storage
//! server — drawn as an SVG sequence diagram, for `iopath trace`.
//!
//! Each node is a lane: a header at the top and a grey lifeline down the page. Time runs
//! downwards, but not to scale: a request's frames cluster (dozens within 100 µs) and then wait
//! (900 ms for an asynchronous journal commit), so a linear axis would crush the cluster into a
//! line. The layout is *ordinal* instead: every distinct event time gets a row of its own, in
//! time order, labelled with the time at the left; where the gap between two rows is far
//! longer than usual (more than [`BREAK_RATIO`] times the median gap, and 10 µs) a grey band
//! marks the break and says how long it was, so a reader sees where time was compressed.
//!
//! A message is an arrow from its sender's lane at the row it was sent to its receiver's lane
//! at the row it arrived, its label above its start, reading away from the sender; a message
//! sent after waiting for credits is dashed and vermilion. Something that happened on one node
//! (a journal record written, a checksum verified, the commit) is a dot on its lane with its
//! label beside it. Labels that would cover each other on a row are stacked, and labels too
//! long for the room they have are cut short with an ellipsis (the whole label stays in the
//! element's `data-label` and its tooltip).
//!
//! The parts a reader (or `plot::check`) needs to find carry a class: groups `lane`
//! (with `data-lane`), `arrow` (with `data-label`, and `data-queued` when it waited), `mark`
//! (with `data-label`), `break` (with `data-gap-us`) and `key`; the `plot-area` rectangle
//! around the rows; and on texts `title`, `lane-name`, `time`, `arrow-label`, `mark-label`,
//! `break-label`, `more`, `empty` ("no events"), `key-label`, `footnote`. A diagram draws at
//! most [`ROWS_MAX`] rows; later events are counted in one line instead.

use std::fmt::Write as _;

use crate::svg::{LINE_SPACING, MARGIN_PX, Page};
use crate::text::{ASCENT_EM, DESCENT_EM, escape, width_px, wrap};

/// One request's path through the stack, as a sequence diagram: drawn by [`Sequence::svg`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Sequence {
    /// Above the diagram; wrapped if long.
    pub title: String,
    /// One lane per node, left to right, named as a reader knows it: `c0 (client)`,
    /// `rtr0 (router)`, `oss0 (OSS)`.
    pub lanes: Vec<String>,
    /// The frames sent between nodes, drawn in this order.
    pub messages: Vec<Arrow>,
    /// What happened on one node.
    pub marks: Vec<Mark>,
    /// Under the diagram, wrapped: what was modeled, and where time is measured from.
    pub footnote: String,
}

/// A frame from one lane to another.
#[derive(Debug, Clone, PartialEq)]
pub struct Arrow {
    /// The sender's lane, an index into [`Sequence::lanes`].
    pub from: usize,
    /// The receiver's lane. A message to its own lane is drawn as a [`Mark`] at `sent_us`.
    pub to: usize,
    /// When the frame left the sender, in µs from the time origin.
    pub sent_us: f64,
    /// When it reached the receiver, in µs from the same origin.
    pub arrived_us: f64,
    /// What the frame is: `WRITE xid 17 (1 MiB)`, `BULK GET 256 KiB #2`.
    pub label: String,
    /// Whether the sender had to wait for credits before sending it: drawn dashed, in
    /// vermilion, and explained in a key under the diagram.
    pub queued: bool,
}

/// Something that happened on one lane at one time.
#[derive(Debug, Clone, PartialEq)]
pub struct Mark {
    /// The lane, an index into [`Sequence::lanes`].
    pub lane: usize,
    /// When, in µs from the time origin.
    pub at_us: f64,
    /// What happened: `journal record written`, `checksum verified`.
    pub label: String,
    /// Whether it is the event the diagram is about (the commit): a larger dot, a bold label.
    pub emphasis: bool,
}

/// The most rows one diagram draws; events after the last of them are counted in one line.
pub const ROWS_MAX: usize = 400;
/// A gap between rows this many times the median gap is drawn as a break.
pub const BREAK_RATIO: f64 = 10.0;
/// No gap shorter than this is drawn as a break, however short the median gap: a few µs more
/// or less is not time a reader needs told was compressed.
const BREAK_MIN_US: f64 = 10.0;
/// Times from this many µs on are labelled in ms.
const MS_FROM_US: f64 = 10_000.0;

/// The narrowest picture.
const WIDTH_MIN_PX: f64 = 600.0;
/// The room each lane gets, at least.
const LANE_PX: f64 = 180.0;
/// Between the time column and the lanes.
const TIME_GAP_PX: f64 = 10.0;
const LANE_FONT_PX: f64 = 12.0;
const LABEL_FONT_PX: f64 = 11.0;
const TIME_FONT_PX: f64 = 10.0;
/// Lines of a lane's name, at most; the rest is cut short.
const LANE_NAME_LINES_MAX: usize = 2;
/// The least height of a row, from the one above.
const ROW_MIN_PX: f64 = 18.0;
/// A stacked label's line height.
const LABEL_LINE_PX: f64 = LABEL_FONT_PX * 1.25;
/// Between a label's descent and its row's line.
const LABEL_RISE_PX: f64 = 2.0;
/// Between a lifeline and the label beside it.
const LABEL_INSET_PX: f64 = 8.0;
/// How far a mark's label may reach, in lanes: past the next lifeline, which its halo
/// interrupts, so that `journal commit, transno 42` fits whole.
const MARK_LABEL_LANES: f64 = 1.5;
/// Least space between two labels on one line of a row.
const LABEL_GAP_PX: f64 = 6.0;
/// How much wider bold text is than the estimate for regular text (DejaVu Sans Bold is some
/// 10% wider than DejaVu Sans).
const BOLD_WIDENING: f64 = 1.12;
/// The height of a break's band.
const BREAK_PX: f64 = 26.0;
const ARROW_HEAD_PX: f64 = 8.0;

/// Arrows: the palette's blue; those that waited for credits, its vermilion, dashed.
const ARROW_COLOUR: &str = "#0072B2";
const QUEUED_COLOUR: &str = "#D55E00";
const QUEUED_DASH: &str = "5 3";
/// Marks: dark grey; the emphasized one, the palette's bluish green ringed in black.
const MARK_COLOUR: &str = "#444444";
const EMPHASIS_COLOUR: &str = "#009E73";
const LIFELINE_COLOUR: &str = "#b0b0b0";
const TEXT_COLOUR: &str = "#222222";
/// Every label has a white halo, so a line that crosses it leaves it readable.
const HALO: &str =
    r#"stroke="white" stroke-width="3" stroke-linejoin="round" paint-order="stroke""#;

/// A mark as drawn: a [`Mark`], or a message to its own lane.
#[derive(Debug, Clone, Copy)]
struct Dot<'a> {
    lane: usize,
    at_us: f64,
    label: &'a str,
    emphasis: bool,
}

/// A label placed on a row: where it is anchored, and the stretch of the row it covers.
#[derive(Debug, Clone)]
struct Label {
    class: &'static str,
    text: String,
    row: usize,
    /// The anchor's x.
    x: f64,
    /// `start` (the label reads rightwards from `x`) or `end`.
    anchor: &'static str,
    left: f64,
    right: f64,
    colour: &'static str,
    bold: bool,
    /// Which line of the row's stack it is on, 0 nearest the row.
    line: usize,
}

impl Sequence {
    /// The diagram as an SVG document.
    ///
    /// # Panics
    ///
    /// If a message or mark names a lane that is not in [`Sequence::lanes`], or a time that
    /// is not finite: the caller built the sequence wrong.
    pub fn svg(&self) -> String {
        self.check();
        let lane_count = self.lanes.len();
        let Drawn {
            arrows,
            dots,
            hidden,
            last_us,
        } = self.drawn();
        let rows = distinct_times(&arrows, &dots);
        let row_of = |t: f64| rows.partition_point(|&r| r < t);
        let breaks = breaks(&rows);
        let time_labels = time_labels(&rows);
        let columns = Columns::new(&time_labels, &breaks, lane_count);
        let lane_x = |lane: usize| columns.lane_x(lane);

        // Each row's labels, stacked where they would cover each other.
        let mut labels: Vec<Label> = arrows
            .iter()
            .map(|arrow| columns.arrow_label(arrow, row_of(arrow.sent_us)))
            .chain(
                dots.iter()
                    .map(|dot| columns.dot_label(dot, row_of(dot.at_us), lane_count)),
            )
            .collect();
        let lines_per_row = stack(&mut labels, rows.len());

        // Vertical layout, top down: the title, the lanes' names, the rows, then what was left
        // out, the key and the footnote.
        let page = Page::new(columns.width, &self.title, &self.footnote);
        let header_top = page.title_bottom() + 8.0;
        let lane_names: Vec<Vec<String>> = self
            .lanes
            .iter()
            .map(|name| lane_name_lines(name, columns.lane_px - 2.0 * LABEL_INSET_PX))
            .collect();
        let name_lines = lane_names.iter().map(Vec::len).max().unwrap_or(0).max(1);
        let header_bottom = header_top + LANE_FONT_PX * LINE_SPACING * name_lines as f64 + 10.0;
        let rows_top = header_bottom + 6.0;
        let mut row_y = Vec::with_capacity(rows.len());
        let mut y = rows_top;
        for (row, &lines) in lines_per_row.iter().enumerate() {
            if breaks[row].is_some() {
                y += BREAK_PX;
            }
            y += ROW_MIN_PX.max(2.0 * LABEL_RISE_PX + LABEL_LINE_PX * lines as f64);
            row_y.push(y);
        }
        let rows_bottom = if rows.is_empty() { y + 40.0 } else { y + 14.0 };
        let label_line_px = LABEL_FONT_PX * LINE_SPACING;
        let mut bottom = rows_bottom;
        let more_baseline = (hidden > 0).then(|| {
            bottom += label_line_px;
            bottom - DESCENT_EM * LABEL_FONT_PX
        });
        let key_centre = arrows.iter().any(|a| a.queued).then(|| {
            bottom += 8.0 + label_line_px;
            bottom - label_line_px / 2.0
        });
        let (left, right) = (columns.lanes_left, columns.lanes_right);
        let mut svg = String::new();
        page.open(&mut svg, bottom);
        // The rows' area, unstroked: where arrows and marks are drawn.
        let _ = writeln!(
            svg,
            r#"<rect class="plot-area" x="{left:.1}" y="{rows_top:.1}" width="{:.1}" height="{:.1}" fill="none"/>"#,
            right - left,
            rows_bottom - rows_top
        );
        // A faint line along each row, from its time across the lanes.
        for &y in &row_y {
            let _ = writeln!(
                svg,
                r##"<line x1="{left:.1}" y1="{y:.1}" x2="{right:.1}" y2="{y:.1}" stroke="#f0f0f0"/>"##
            );
        }
        let header = (header_top, header_bottom);
        for (lane, (name, lines)) in self.lanes.iter().zip(&lane_names).enumerate() {
            let lifeline_bottom = (!rows.is_empty()).then_some(rows_bottom);
            columns.draw_lane(&mut svg, lane, name, lines, header, lifeline_bottom);
        }
        for (row, gap) in breaks.iter().enumerate() {
            if let Some(gap_us) = gap {
                columns.draw_break(&mut svg, *gap_us, row_y[row - 1] + 4.0, lane_count);
            }
        }
        for (label, &y) in time_labels.iter().zip(&row_y) {
            let baseline = y + (ASCENT_EM - DESCENT_EM) / 2.0 * TIME_FONT_PX;
            text(
                &mut svg,
                "time",
                left - TIME_GAP_PX,
                baseline,
                TIME_FONT_PX,
                "end",
                label,
            );
        }
        for arrow in &arrows {
            draw_arrow(
                &mut svg,
                arrow,
                (lane_x(arrow.from), row_y[row_of(arrow.sent_us)]),
                (lane_x(arrow.to), row_y[row_of(arrow.arrived_us)]),
            );
        }
        for dot in &dots {
            let (lane, y) = (&self.lanes[dot.lane], row_y[row_of(dot.at_us)]);
            draw_dot(&mut svg, dot, lane, lane_x(dot.lane), y);
        }
        // Labels last, so no line is drawn across one after its halo.
        for label in &labels {
            draw_label(&mut svg, label, row_y[label.row]);
        }
        if rows.is_empty() {
            let baseline = rows_top + 20.0 + (ASCENT_EM - DESCENT_EM) / 2.0 * LABEL_FONT_PX;
            let centre = (left + right) / 2.0;
            text(
                &mut svg,
                "empty",
                centre,
                baseline,
                LABEL_FONT_PX,
                "middle",
                "no events",
            );
        }
        if let (Some(baseline), Some(last_us)) = (more_baseline, last_us) {
            let more = format!(
                "… {hidden} more events, up to {}, not drawn",
                time_label(last_us, 1)
            );
            text(
                &mut svg,
                "more",
                left,
                baseline,
                LABEL_FONT_PX,
                "start",
                &more,
            );
        }
        if let Some(centre) = key_centre {
            draw_key(&mut svg, left, centre);
        }
        page.close(&mut svg, bottom);
        svg
    }

    /// Panics on a message or mark naming a lane that is not in [`Sequence::lanes`], or a time
    /// that is not finite.
    fn check(&self) {
        let lane_count = self.lanes.len();
        for arrow in &self.messages {
            assert!(
                arrow.from < lane_count && arrow.to < lane_count,
                "message {:?} goes from lane {} to lane {}, of {lane_count}",
                arrow.label,
                arrow.from,
                arrow.to
            );
            assert!(
                arrow.sent_us.is_finite() && arrow.arrived_us.is_finite(),
                "message {:?} has a time that is not finite",
                arrow.label
            );
        }
        for mark in &self.marks {
            assert!(
                mark.lane < lane_count,
                "mark {:?} is on lane {}, of {lane_count}",
                mark.label,
                mark.lane
            );
            assert!(
                mark.at_us.is_finite(),
                "mark {:?} has a time that is not finite",
                mark.label
            );
        }
    }

    /// Every mark, and every message to its own lane, as a dot.
    fn dots(&self) -> Vec<Dot<'_>> {
        self.marks
            .iter()
            .map(|m| Dot {
                lane: m.lane,
                at_us: m.at_us,
                label: &m.label,
                emphasis: m.emphasis,
            })
            .chain(
                self.messages
                    .iter()
                    .filter(|a| a.from == a.to)
                    .map(|a| Dot {
                        lane: a.from,
                        at_us: a.sent_us,
                        label: &a.label,
                        emphasis: false,
                    }),
            )
            .collect()
    }

    /// What is drawn: messages between lanes as arrows, everything else as dots; and of them,
    /// those within the first `ROWS_MAX` rows.
    fn drawn(&self) -> Drawn<'_> {
        let mut arrows: Vec<&Arrow> = self.messages.iter().filter(|a| a.from != a.to).collect();
        let mut dots = self.dots();
        let all_rows = distinct_times(&arrows, &dots);
        let last_us = all_rows.last().copied();
        let mut hidden = 0;
        if all_rows.len() > ROWS_MAX {
            let cut_us = all_rows[ROWS_MAX - 1];
            let before = arrows.len() + dots.len();
            arrows.retain(|a| a.sent_us.max(a.arrived_us) <= cut_us);
            dots.retain(|d| d.at_us <= cut_us);
            hidden = before - arrows.len() - dots.len();
        }
        Drawn {
            arrows,
            dots,
            hidden,
            last_us,
        }
    }
}

/// The arrows and dots a diagram draws, how many it leaves out, and the last time of all.
struct Drawn<'a> {
    arrows: Vec<&'a Arrow>,
    dots: Vec<Dot<'a>>,
    hidden: usize,
    last_us: Option<f64>,
}

/// The horizontal layout: the time column, then the lanes, each at least `LANE_PX` wide and
/// together filling the picture.
struct Columns {
    width: f64,
    lanes_left: f64,
    lanes_right: f64,
    lane_px: f64,
}

impl Columns {
    fn new(time_labels: &[String], breaks: &[Option<f64>], lane_count: usize) -> Columns {
        let time_width = time_labels
            .iter()
            .map(|l| width_px(l, TIME_FONT_PX))
            .chain(
                breaks
                    .iter()
                    .flatten()
                    .map(|gap| width_px(&break_label(*gap), TIME_FONT_PX)),
            )
            .fold(0.0, f64::max);
        let lanes_left = MARGIN_PX + time_width + TIME_GAP_PX;
        let width = (lanes_left + LANE_PX * lane_count as f64 + MARGIN_PX)
            .max(WIDTH_MIN_PX)
            .ceil();
        let lanes_right = width - MARGIN_PX;
        let lane_px = (lanes_right - lanes_left) / lane_count.max(1) as f64;
        Columns {
            width,
            lanes_left,
            lanes_right,
            lane_px,
        }
    }

    /// The centre of lane `lane`.
    fn lane_x(&self, lane: usize) -> f64 {
        self.lanes_left + self.lane_px * (lane as f64 + 0.5)
    }

    /// An arrow's label, on row `row`: from its start, along the arrow, cut to fit between
    /// the lanes.
    fn arrow_label(&self, arrow: &Arrow, row: usize) -> Label {
        let (x_from, x_to) = (self.lane_x(arrow.from), self.lane_x(arrow.to));
        let room = (x_to - x_from).abs() - 2.0 * LABEL_INSET_PX;
        let text = fit(&arrow.label, LABEL_FONT_PX, room);
        let text_width = width_px(&text, LABEL_FONT_PX);
        let (x, anchor, left) = beside(x_from, x_to > x_from, text_width);
        Label {
            class: "arrow-label",
            text,
            row,
            x,
            anchor,
            left,
            right: left + text_width,
            colour: if arrow.queued {
                QUEUED_COLOUR
            } else {
                TEXT_COLOUR
            },
            bold: false,
            line: 0,
        }
    }

    /// A dot's label, on row `row`: beside the dot on its right, unless that is the picture's
    /// edge; as far as `MARK_LABEL_LANES` lanes, but not past the edge.
    fn dot_label(&self, dot: &Dot<'_>, row: usize, lane_count: usize) -> Label {
        let lane_at = self.lane_x(dot.lane);
        let rightwards = dot.lane + 1 < lane_count || lane_count == 1;
        let edge_px = if rightwards {
            self.lanes_right - lane_at
        } else {
            lane_at - self.lanes_left
        };
        let room = (MARK_LABEL_LANES * self.lane_px).min(edge_px) - 2.0 * LABEL_INSET_PX;
        let widening = if dot.emphasis { BOLD_WIDENING } else { 1.0 };
        let text = fit(dot.label, LABEL_FONT_PX, room / widening);
        let text_width = width_px(&text, LABEL_FONT_PX) * widening;
        let (x, anchor, left) = beside(lane_at, rightwards, text_width);
        Label {
            class: "mark-label",
            text,
            row,
            x,
            anchor,
            left,
            right: left + text_width,
            colour: TEXT_COLOUR,
            bold: dot.emphasis,
            line: 0,
        }
    }

    /// Lane `lane`: its name's box between `header` (top, bottom), and its lifeline down to
    /// `lifeline_bottom` when there are rows.
    fn draw_lane(
        &self,
        svg: &mut String,
        lane: usize,
        name: &str,
        lines: &[String],
        (header_top, header_bottom): (f64, f64),
        lifeline_bottom: Option<f64>,
    ) {
        let x = self.lane_x(lane);
        let _ = writeln!(svg, r#"<g class="lane" data-lane="{}">"#, escape(name));
        if let Some(rows_bottom) = lifeline_bottom {
            let _ = writeln!(
                svg,
                r#"<line class="lifeline" x1="{x:.1}" y1="{header_bottom:.1}" x2="{x:.1}" y2="{rows_bottom:.1}" stroke="{LIFELINE_COLOUR}" stroke-width="1.5"/>"#
            );
        }
        // As wide as a lane of the least width, or as the name needs, up to the lane's.
        let name_width = lines
            .iter()
            .map(|l| width_px(l, LANE_FONT_PX))
            .fold(0.0, f64::max);
        let box_width = (name_width + 4.0 * LABEL_INSET_PX)
            .max(LANE_PX - LABEL_INSET_PX)
            .min(self.lane_px - LABEL_INSET_PX);
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{header_top:.1}" width="{box_width:.1}" height="{:.1}" rx="4" fill="#f4f4f4" stroke="#999999"/>"##,
            x - box_width / 2.0,
            header_bottom - header_top
        );
        // The name's lines, centred in the box.
        let lane_line_px = LANE_FONT_PX * LINE_SPACING;
        let first_baseline = (header_top + header_bottom) / 2.0
            - lane_line_px * (lines.len() as f64 - 1.0) / 2.0
            + (ASCENT_EM - DESCENT_EM) / 2.0 * LANE_FONT_PX;
        for (i, line) in lines.iter().enumerate() {
            let baseline = first_baseline + lane_line_px * i as f64;
            text(svg, "lane-name", x, baseline, LANE_FONT_PX, "middle", line);
        }
        svg.push_str("</g>\n");
    }

    /// A break of `gap_us` from `top`: a band over the lifelines, each drawn through it as a
    /// zigzag, and how long the gap was beside it.
    fn draw_break(&self, svg: &mut String, gap_us: f64, top: f64, lane_count: usize) {
        let band = BREAK_PX - 8.0;
        let _ = writeln!(svg, r#"<g class="break" data-gap-us="{gap_us}">"#);
        // Over the lifelines, which it interrupts; under the arrows, which cross it.
        let _ = writeln!(
            svg,
            r##"<rect x="{:.1}" y="{top:.1}" width="{:.1}" height="{band:.1}" fill="#ececec" stroke="#999999" stroke-dasharray="3 3"/>"##,
            self.lanes_left,
            self.lanes_right - self.lanes_left
        );
        for lane in 0..lane_count {
            let x = self.lane_x(lane);
            let _ = writeln!(
                svg,
                r#"<path d="M{x:.1},{top:.1} L{:.1},{:.1} L{:.1},{:.1} L{x:.1},{:.1}" fill="none" stroke="{LIFELINE_COLOUR}" stroke-width="1.5"/>"#,
                x + 4.0,
                top + band / 3.0,
                x - 4.0,
                top + 2.0 * band / 3.0,
                top + band
            );
        }
        text(
            svg,
            "break-label",
            self.lanes_left - TIME_GAP_PX,
            top + band / 2.0 + (ASCENT_EM - DESCENT_EM) / 2.0 * TIME_FONT_PX,
            TIME_FONT_PX,
            "end",
            &break_label(gap_us),
        );
        svg.push_str("</g>\n");
    }
}

/// Where a label of `text_width` starts when it reads away from `at`, rightwards or not:
/// its `x`, the SVG anchor there, and its left edge.
fn beside(at: f64, rightwards: bool, text_width: f64) -> (f64, &'static str, f64) {
    if rightwards {
        let x = at + LABEL_INSET_PX;
        (x, "start", x)
    } else {
        let x = at - LABEL_INSET_PX;
        (x, "end", x - text_width)
    }
}

/// A label on its row, at `row_y`, on its line of the row's stack, with its halo.
fn draw_label(svg: &mut String, label: &Label, row_y: f64) {
    let baseline =
        row_y - LABEL_RISE_PX - DESCENT_EM * LABEL_FONT_PX - LABEL_LINE_PX * label.line as f64;
    let _ = writeln!(
        svg,
        r#"<text class="{}" x="{:.1}" y="{baseline:.1}" font-size="{LABEL_FONT_PX}" text-anchor="{}" fill="{}"{} {HALO}>{}</text>"#,
        label.class,
        label.x,
        label.anchor,
        label.colour,
        if label.bold {
            r#" font-weight="bold""#
        } else {
            ""
        },
        escape(&label.text)
    );
}

/// Every time an arrow or a dot is drawn at, once each, in order.
fn distinct_times(arrows: &[&Arrow], dots: &[Dot<'_>]) -> Vec<f64> {
    let mut times: Vec<f64> = arrows
        .iter()
        .flat_map(|a| [a.sent_us, a.arrived_us])
        .chain(dots.iter().map(|d| d.at_us))
        .collect();
    times.sort_by(f64::total_cmp);
    times.dedup();
    times
}

/// For each row, the gap before it if it is drawn as a break: longer than [`BREAK_RATIO`]
/// times the median gap, and than [`BREAK_MIN_US`].
fn breaks(rows: &[f64]) -> Vec<Option<f64>> {
    let gaps: Vec<f64> = rows.windows(2).map(|w| w[1] - w[0]).collect();
    let mut sorted = gaps.clone();
    sorted.sort_by(f64::total_cmp);
    // The lower median: with two gaps, the shorter, so one long wait after one short hop
    // still shows as a break.
    let median = sorted.get(sorted.len().saturating_sub(1) / 2).copied();
    let mut breaks = vec![None];
    breaks.extend(gaps.iter().map(|&gap| {
        median.and_then(|m| (gap > BREAK_RATIO * m && gap > BREAK_MIN_US).then_some(gap))
    }));
    breaks.truncate(rows.len());
    breaks
}

/// Each row's time label: with one decimal, or as many more (up to four) as it takes to
/// read differently from the rows either side, so rows a few µs apart in a slow trace read
/// `+912.478 ms`, `+912.480 ms`, not `+912.5 ms` twice.
fn time_labels(rows: &[f64]) -> Vec<String> {
    (0..rows.len())
        .map(|i| {
            let neighbours = [i.checked_sub(1), Some(i + 1)];
            let alike = |decimals: usize| {
                neighbours
                    .iter()
                    .filter_map(|&j| rows.get(j?))
                    .any(|&t| time_label(t, decimals) == time_label(rows[i], decimals))
            };
            let decimals = (1..4).find(|&d| !alike(d)).unwrap_or(4);
            time_label(rows[i], decimals)
        })
        .collect()
}

/// A time from the origin: `+3.2 µs`, `+912.4 ms`.
fn time_label(us: f64, decimals: usize) -> String {
    let sign = if us < 0.0 { "-" } else { "+" };
    format!("{sign}{}", duration(us.abs(), decimals))
}

/// What a break's band says: `⋯ 903.1 ms ⋯`.
fn break_label(gap_us: f64) -> String {
    format!("⋯ {} ⋯", duration(gap_us, 1))
}

/// A length of time: in µs, or in ms from [`MS_FROM_US`] on.
fn duration(us: f64, decimals: usize) -> String {
    if us >= MS_FROM_US {
        format!("{:.decimals$} ms", us / 1000.0)
    } else {
        format!("{us:.decimals$} µs")
    }
}

/// Puts each label on the lowest line of its row's stack where it covers no other, and
/// returns how many lines each row needs (at least one).
fn stack(labels: &mut [Label], row_count: usize) -> Vec<usize> {
    let mut order: Vec<usize> = (0..labels.len()).collect();
    order.sort_by(|&a, &b| {
        (labels[a].row, labels[a].left)
            .partial_cmp(&(labels[b].row, labels[b].left))
            .unwrap_or(std::cmp::Ordering::Equal)
    });
    let mut lines_per_row = vec![1; row_count];
    // The right end of each line of the current row's stack.
    let mut line_ends: Vec<f64> = Vec::new();
    let mut row = usize::MAX;
    for i in order {
        if labels[i].row != row {
            row = labels[i].row;
            line_ends.clear();
        }
        let left = labels[i].left;
        let line = line_ends
            .iter()
            .position(|&end| end + LABEL_GAP_PX <= left)
            .unwrap_or(line_ends.len());
        if line == line_ends.len() {
            line_ends.push(labels[i].right);
        } else {
            line_ends[line] = labels[i].right;
        }
        labels[i].line = line;
        lines_per_row[row] = line_ends.len();
    }
    lines_per_row
}

/// `text` as it fits in `max_px` at `font_px`: whole, or cut short with an ellipsis.
fn fit(text: &str, font_px: f64, max_px: f64) -> String {
    if width_px(text, font_px) <= max_px {
        return text.to_owned();
    }
    let room = max_px - width_px("…", font_px);
    let mut cut = String::new();
    for c in text.chars() {
        cut.push(c);
        if width_px(&cut, font_px) > room {
            cut.pop();
            break;
        }
    }
    let mut cut = cut.trim_end().to_owned();
    cut.push('…');
    cut
}

/// A lane's name in lines no wider than `max_px`, at most [`LANE_NAME_LINES_MAX`] of them.
fn lane_name_lines(name: &str, max_px: f64) -> Vec<String> {
    let mut lines = wrap(name, LANE_FONT_PX, max_px);
    if lines.len() > LANE_NAME_LINES_MAX {
        let rest = lines.split_off(LANE_NAME_LINES_MAX - 1).join(" ");
        lines.push(rest);
    }
    lines
        .iter()
        .map(|line| fit(line, LANE_FONT_PX, max_px))
        .collect()
}

/// A message: its line and arrowhead in a group that names it (its label is drawn with the
/// others, on top).
fn draw_arrow(svg: &mut String, arrow: &Arrow, from: (f64, f64), to: (f64, f64)) {
    let _ = writeln!(
        svg,
        r#"<g class="arrow" data-label="{}"{}>"#,
        escape(&arrow.label),
        if arrow.queued {
            r#" data-queued="true""#
        } else {
            ""
        }
    );
    let _ = writeln!(
        svg,
        "<title>{}: sent {}, arrived {}</title>",
        escape(&arrow.label),
        time_label(arrow.sent_us, 1),
        time_label(arrow.arrived_us, 1)
    );
    arrow_line(svg, arrow.queued, from, to);
    svg.push_str("</g>\n");
}

/// A line from `(x1, y1)` with an arrowhead at `(x2, y2)`: blue, or dashed vermilion if the
/// message was `queued`.
fn arrow_line(svg: &mut String, queued: bool, (x1, y1): (f64, f64), (x2, y2): (f64, f64)) {
    let (colour, dash) = if queued {
        (
            QUEUED_COLOUR,
            format!(r#" stroke-dasharray="{QUEUED_DASH}""#),
        )
    } else {
        (ARROW_COLOUR, String::new())
    };
    // The line stops where the head begins, so a dashed line does not show through it.
    let length = (x2 - x1).hypot(y2 - y1);
    let (ux, uy) = ((x2 - x1) / length, (y2 - y1) / length);
    let (bx, by) = (x2 - ARROW_HEAD_PX * ux, y2 - ARROW_HEAD_PX * uy);
    let _ = writeln!(
        svg,
        r#"<line x1="{x1:.1}" y1="{y1:.1}" x2="{bx:.1}" y2="{by:.1}" stroke="{colour}" stroke-width="1.5"{dash}/>"#
    );
    let half = ARROW_HEAD_PX * 0.45;
    let _ = writeln!(
        svg,
        r#"<path d="M{x2:.1},{y2:.1} L{:.1},{:.1} L{:.1},{:.1} Z" fill="{colour}"/>"#,
        bx - half * uy,
        by + half * ux,
        bx + half * uy,
        by - half * ux
    );
}

/// A mark's dot (its label is drawn with the others, on top).
fn draw_dot(svg: &mut String, dot: &Dot<'_>, lane: &str, x: f64, y: f64) {
    let _ = writeln!(
        svg,
        r#"<g class="mark" data-label="{}"{}>"#,
        escape(dot.label),
        if dot.emphasis {
            r#" data-emphasis="true""#
        } else {
            ""
        }
    );
    let _ = writeln!(
        svg,
        "<title>{}: {}, {}</title>",
        escape(dot.label),
        escape(lane),
        time_label(dot.at_us, 1)
    );
    let _ = if dot.emphasis {
        writeln!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="6" fill="{EMPHASIS_COLOUR}" stroke="black" stroke-width="1.5"/>"#
        )
    } else {
        writeln!(
            svg,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="4" fill="{MARK_COLOUR}"/>"#
        )
    };
    svg.push_str("</g>\n");
}

/// The key to the arrows' two styles, on one line centred at `y`.
fn draw_key(svg: &mut String, left: f64, y: f64) {
    let _ = writeln!(svg, r#"<g class="key">"#);
    let mut x = left;
    for (name, queued) in [("message", false), ("sent after waiting for credits", true)] {
        arrow_line(svg, queued, (x, y), (x + 36.0, y));
        x += 42.0;
        text(
            svg,
            "key-label",
            x,
            y + (ASCENT_EM - DESCENT_EM) / 2.0 * LABEL_FONT_PX,
            LABEL_FONT_PX,
            "start",
            name,
        );
        x += width_px(name, LABEL_FONT_PX) + 24.0;
    }
    svg.push_str("</g>\n");
}

fn text(svg: &mut String, class: &str, x: f64, y: f64, font_px: f64, anchor: &str, content: &str) {
    let _ = writeln!(
        svg,
        r#"<text class="{class}" x="{x:.1}" y="{y:.1}" font-size="{font_px}" text-anchor="{anchor}" fill="{TEXT_COLOUR}">{}</text>"#,
        escape(content)
    );
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::check::Drawing;

    fn arrow(from: usize, to: usize, sent_us: f64, arrived_us: f64, label: &str) -> Arrow {
        Arrow {
            from,
            to,
            sent_us,
            arrived_us,
            label: label.into(),
            queued: false,
        }
    }

    fn mark(lane: usize, at_us: f64, label: &str) -> Mark {
        Mark {
            lane,
            at_us,
            label: label.into(),
            emphasis: false,
        }
    }

    /// One 1 MiB write through a router, its reply, and its commit 900 ms later.
    fn write_through_a_router() -> Sequence {
        let mut messages = vec![
            arrow(0, 1, 0.0, 2.1, "WRITE xid 17 (1 MiB)"),
            arrow(1, 2, 2.6, 4.8, "WRITE xid 17 (1 MiB)"),
            arrow(2, 1, 6.0, 8.1, "BULK GET 4 × 256 KiB"),
            arrow(1, 0, 8.4, 10.5, "BULK GET 4 × 256 KiB"),
        ];
        for i in 0..4 {
            let sent = 11.0 + 6.0 * f64::from(i);
            let mut pull = arrow(0, 1, sent, sent + 20.0, &format!("PUT 256 KiB #{i}"));
            // The last two waited for router credits.
            pull.queued = i >= 2;
            messages.push(pull);
            messages.push(arrow(
                1,
                2,
                sent + 21.0,
                sent + 41.0,
                &format!("PUT 256 KiB #{i}"),
            ));
        }
        messages.extend([
            arrow(2, 1, 90.0, 92.0, "REPLY xid 17, transno 42"),
            arrow(1, 0, 92.5, 94.5, "REPLY xid 17, transno 42"),
            arrow(2, 1, 912_480.0, 912_482.0, "last_committed 42"),
            arrow(1, 0, 912_482.5, 912_484.5, "last_committed 42"),
        ]);
        Sequence {
            title: "iopath trace: one 1 MiB write, c0 → oss0 through rtr0 (async commit)".into(),
            lanes: vec![
                "c0 (client)".into(),
                "rtr0 (router)".into(),
                "oss0 (OSS)".into(),
            ],
            messages,
            marks: vec![
                mark(2, 78.0, "checksum verified"),
                mark(2, 85.0, "journal record written"),
                Mark {
                    emphasis: true,
                    ..mark(2, 912_478.0, "journal commit, transno 42")
                },
            ],
            footnote: "Times in µs from the client's send. Modeled: links at 100 Gb/s, 2 µs \
                       per hop; the journal commits every second."
                .into(),
        }
    }

    /// The SVG, read back and checked: no text outside the picture, none over another.
    fn read(sequence: &Sequence) -> (String, Drawing) {
        let svg = sequence.svg();
        let drawing = Drawing::read_clean(&svg).unwrap_or_else(|e| panic!("{e}"));
        (svg, drawing)
    }

    /// The elements of class `class`, each as its attributes.
    fn elements(svg: &str, class: &str) -> Vec<Vec<(String, String)>> {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .filter(|n| n.attribute("class") == Some(class))
            .map(|n| {
                n.attributes()
                    .map(|a| (a.name().to_owned(), a.value().to_owned()))
                    .collect()
            })
            .collect()
    }

    fn attribute<'a>(element: &'a [(String, String)], name: &str) -> &'a str {
        element
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
            .unwrap_or_else(|| panic!("no {name} in {element:?}"))
    }

    /// An arrow as drawn: its label and its line's ends.
    #[derive(Debug)]
    struct Line {
        label: String,
        start: (f64, f64),
        end: (f64, f64),
    }

    /// Each arrow's line, in drawing order.
    fn arrow_lines(svg: &str) -> Vec<Line> {
        let doc = roxmltree::Document::parse(svg).unwrap();
        doc.descendants()
            .filter(|n| n.attribute("class") == Some("arrow"))
            .map(|g| {
                let line = g.children().find(|n| n.has_tag_name("line")).unwrap();
                let at = |name: &str| line.attribute(name).unwrap().parse::<f64>().unwrap();
                Line {
                    label: g.attribute("data-label").unwrap().to_owned(),
                    start: (at("x1"), at("y1")),
                    end: (at("x2"), at("y2")),
                }
            })
            .collect()
    }

    #[test]
    fn a_write_reads_cleanly_with_a_lane_per_node_an_arrow_per_message_and_a_mark_per_mark() {
        let sequence = write_through_a_router();
        let (svg, drawing) = read(&sequence);
        let lanes = elements(&svg, "lane");
        assert_eq!(lanes.len(), 3);
        assert_eq!(attribute(&lanes[2], "data-lane"), "oss0 (OSS)");
        assert_eq!(elements(&svg, "arrow").len(), sequence.messages.len());
        assert_eq!(elements(&svg, "mark").len(), sequence.marks.len());
        assert_eq!(
            drawing.texts_of("arrow-label").len(),
            sequence.messages.len()
        );
        assert_eq!(drawing.texts_of("mark-label").len(), 3);
        let queued = elements(&svg, "arrow")
            .iter()
            .filter(|a| a.iter().any(|(n, _)| n == "data-queued"))
            .count();
        assert_eq!(queued, 2);
        assert_eq!(
            drawing.texts_of("key-label").len(),
            2,
            "a key, for the queued"
        );
        let emphasized = elements(&svg, "mark")
            .iter()
            .filter(|m| m.iter().any(|(n, _)| n == "data-emphasis"))
            .count();
        assert_eq!(emphasized, 1);
        // Every distinct time has its row and its label; the first is the origin.
        let times = drawing.texts_of("time");
        assert_eq!(times[0], "+0.0 µs");
        assert!(times.contains(&"+912.478 ms"), "{times:?}");
        assert!(drawing.texts_of("title")[0].starts_with("iopath trace"));
        assert!(!drawing.texts_of("footnote").is_empty());
    }

    #[test]
    fn a_message_sent_later_is_drawn_lower_and_ends_where_it_arrived() {
        let sequence = write_through_a_router();
        let (svg, _) = read(&sequence);
        let lines = arrow_lines(&svg);
        for (message, line) in sequence.messages.iter().zip(&lines) {
            assert_eq!(message.label, line.label);
            // Time runs down: from the send's row down to the arrival's.
            assert!(line.end.1 > line.start.1, "{line:?}");
            // Left or right, as the lanes are.
            assert_eq!(
                message.to > message.from,
                line.end.0 > line.start.0,
                "{line:?}"
            );
        }
        // Whatever their order in the list: sent later, drawn lower.
        for (a, a_line) in sequence.messages.iter().zip(&lines) {
            for (b, b_line) in sequence.messages.iter().zip(&lines) {
                if b.sent_us > a.sent_us {
                    assert!(
                        b_line.start.1 > a_line.start.1,
                        "{b_line:?} after {a_line:?}"
                    );
                }
            }
        }
        // An arrow that arrives at the time another is sent ends on that one's row.
        let mut crossing = write_through_a_router();
        crossing.messages[1].sent_us = crossing.messages[0].arrived_us;
        let lines = arrow_lines(&crossing.svg());
        // (The line stops at its arrowhead's base, a few pixels short of the row.)
        assert!((lines[0].end.1 - lines[1].start.1).abs() < 4.0, "{lines:?}");
    }

    #[test]
    fn a_long_wait_is_a_break_saying_how_long_and_short_hops_are_not() {
        let (svg, drawing) = read(&write_through_a_router());
        let breaks = elements(&svg, "break");
        assert_eq!(breaks.len(), 1, "{svg}");
        let gap_us: f64 = attribute(&breaks[0], "data-gap-us").parse().unwrap();
        assert_eq!(gap_us, 912_478.0 - 94.5);
        assert_eq!(drawing.texts_of("break-label"), ["⋯ 912.4 ms ⋯"]);
        // The band lies between the reply's row and the commit's.
        let band_y = drawing
            .texts
            .iter()
            .find(|t| t.class == "break-label")
            .unwrap()
            .anchor
            .1;
        let row_y = |label: &str| {
            drawing
                .texts
                .iter()
                .find(|t| t.class == "time" && t.content == label)
                .unwrap()
                .anchor
                .1
        };
        assert!(row_y("+94.5 µs") < band_y && band_y < row_y("+912.478 ms"));

        // Evenly spaced events, however slow, have no break.
        let even = Sequence {
            lanes: vec!["a".into(), "b".into()],
            messages: (0..10)
                .map(|i| {
                    let t = 5_000.0 * f64::from(i);
                    arrow(i as usize % 2, 1 - i as usize % 2, t, t + 2_500.0, "x")
                })
                .collect(),
            ..Sequence::default()
        };
        let (svg, _) = read(&even);
        assert!(elements(&svg, "break").is_empty());
    }

    #[test]
    fn markup_in_names_and_labels_is_escaped() {
        let sequence = Sequence {
            title: "a <b> & c".into(),
            lanes: vec!["c0 <client>".into(), "s & t".into(), "\"q\"".into()],
            messages: vec![arrow(0, 2, 0.0, 3.0, "GET <&>")],
            marks: vec![mark(1, 1.0, "x < y & z")],
            footnote: "<&>".into(),
        };
        let (svg, drawing) = read(&sequence);
        assert_eq!(
            attribute(&elements(&svg, "arrow")[0], "data-label"),
            "GET <&>"
        );
        assert_eq!(drawing.texts_of("arrow-label"), ["GET <&>"]);
        assert_eq!(drawing.texts_of("mark-label"), ["x < y & z"]);
        assert_eq!(drawing.texts_of("lane-name")[0], "c0 <client>");
        assert_eq!(drawing.texts_of("footnote"), ["<&>"]);
    }

    #[test]
    fn an_empty_sequence_is_a_small_picture_saying_no_events() {
        for lanes in [vec![], vec!["c0 (client)".to_owned()]] {
            let sequence = Sequence {
                title: "nothing traced".into(),
                lanes,
                ..Sequence::default()
            };
            let (svg, drawing) = read(&sequence);
            assert_eq!(drawing.texts_of("empty"), ["no events"]);
            assert!(elements(&svg, "arrow").is_empty());
            assert!(drawing.view_box.bottom < 200.0, "{:?}", drawing.view_box);
            assert_eq!(drawing.view_box.right, WIDTH_MIN_PX);
        }
    }

    #[test]
    fn the_picture_widens_with_the_lanes() {
        let lanes = |n: usize| Sequence {
            lanes: (0..n).map(|i| format!("oss{i} (OSS)")).collect(),
            messages: vec![arrow(0, n - 1, 0.0, 1.0, "x")],
            ..Sequence::default()
        };
        let (_, two) = read(&lanes(2));
        let (_, eight) = read(&lanes(8));
        assert_eq!(two.view_box.right, WIDTH_MIN_PX);
        assert!(
            eight.view_box.right >= 8.0 * LANE_PX,
            "{:?}",
            eight.view_box
        );
    }

    #[test]
    fn crowded_rows_stack_their_labels_and_long_ones_are_cut_short() {
        let long = "BULK PUT 256 KiB to ost0003 at offset 1048576, checksum crc32c 0x1a2b3c4d";
        let sequence = Sequence {
            lanes: vec![
                "c0 (client)".into(),
                "a client node with a name far too long for its lane's header".into(),
                "oss0 (OSS)".into(),
                "oss1 (OSS)".into(),
            ],
            // At one instant: four frames out of lane 1, each way, two marks on it and one on
            // the last lane, whose label goes to the left.
            messages: vec![
                arrow(1, 0, 0.0, 3.0, long),
                arrow(1, 2, 0.0, 3.0, long),
                arrow(1, 3, 0.0, 4.0, long),
                arrow(2, 1, 0.0, 3.0, long),
                arrow(3, 2, 0.0, 2.0, long),
            ],
            marks: vec![
                mark(1, 0.0, long),
                mark(1, 0.0, "short"),
                mark(3, 0.0, long),
            ],
            ..Sequence::default()
        };
        // Clean: no label over another, none outside the picture.
        let (svg, drawing) = read(&sequence);
        let labels = drawing.texts_of("arrow-label");
        assert_eq!(labels.len(), 5);
        assert!(labels.iter().all(|l| l.ends_with('…')), "{labels:?}");
        // Nothing is lost: the whole label is the element's.
        assert_eq!(attribute(&elements(&svg, "arrow")[0], "data-label"), long);
        let name = drawing.texts_of("lane-name");
        assert!(name.len() == 5 && name[2].ends_with('…'), "{name:?}");
    }

    #[test]
    fn a_mark_label_stops_short_of_the_edge() {
        let long = "journal commit of transaction 42, with 17 writes in it, made durable";
        for lanes in 1..=3 {
            let sequence = Sequence {
                lanes: (0..lanes).map(|i| format!("oss{i}")).collect(),
                marks: (0..lanes).map(|lane| mark(lane, 0.0, long)).collect(),
                ..Sequence::default()
            };
            // Clean: inside the picture, none over another.
            let (_, drawing) = read(&sequence);
            assert_eq!(drawing.texts_of("mark-label").len(), lanes);
        }
    }

    #[test]
    fn a_message_to_its_own_lane_is_a_mark() {
        let sequence = Sequence {
            lanes: vec!["c0".into(), "oss0".into()],
            messages: vec![
                arrow(0, 1, 0.0, 2.0, "WRITE"),
                arrow(1, 1, 3.0, 3.0, "to disk"),
            ],
            ..Sequence::default()
        };
        let (svg, drawing) = read(&sequence);
        assert_eq!(elements(&svg, "arrow").len(), 1);
        assert_eq!(
            attribute(&elements(&svg, "mark")[0], "data-label"),
            "to disk"
        );
        assert_eq!(drawing.texts_of("mark-label"), ["to disk"]);
    }

    #[test]
    fn a_long_trace_draws_its_first_rows_and_counts_the_rest() {
        // A striped write's 500 frames, each on rows of its own: 1000 rows.
        let sequence = Sequence {
            lanes: vec!["c0".into(), "oss0".into()],
            messages: (0..500)
                .map(|i| {
                    let t = 10.0 * f64::from(i);
                    arrow(0, 1, t, t + 5.0, &format!("PUT #{i}"))
                })
                .collect(),
            ..Sequence::default()
        };
        let (svg, drawing) = read(&sequence);
        assert_eq!(drawing.texts_of("time").len(), ROWS_MAX);
        assert_eq!(elements(&svg, "arrow").len(), ROWS_MAX / 2);
        assert_eq!(
            drawing.texts_of("more"),
            ["… 300 more events, up to +4995.0 µs, not drawn"]
        );
    }

    #[test]
    fn times_read_in_us_then_ms_and_no_two_rows_alike() {
        assert_eq!(
            time_labels(&[
                0.0, 3.25, 9_999.94, 12_345.6, 912_400.0, 912_412.3, 912_412.5
            ]),
            [
                "+0.0 µs",
                "+3.2 µs",
                "+9999.9 µs",
                "+12.3 ms",
                "+912.40 ms",
                "+912.412 ms",
                "+912.413 ms",
            ]
        );
        assert_eq!(time_label(-2.0, 1), "-2.0 µs");
        assert_eq!(
            breaks(&[0.0, 1.0, 2.0, 3.0, 903_003.0]),
            [None, None, None, None, Some(903_000.0)]
        );
        // Gaps of a few µs are never breaks, whatever the median.
        assert_eq!(breaks(&[0.0, 0.1, 0.2, 5.0]), [None; 4]);
        assert!(breaks(&[]).is_empty());
    }

    #[test]
    #[should_panic(expected = "lane 3, of 3")]
    fn a_message_to_a_lane_that_is_not_there_is_the_callers_bug() {
        let mut sequence = write_through_a_router();
        sequence.messages[0].to = 3;
        let _ = sequence.svg();
    }
}
