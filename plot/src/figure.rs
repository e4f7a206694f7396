//! [`Figure`]: what a plot shows — title, axes with their units, the measured or modeled
//! series, reference lines, and the footnote that says which is which — before any layout.

use crate::scale::{Scale, Span};

/// One plot: drawn by [`Figure::svg`] with the legend below the plot area (never over the
/// data) and the footnote under it.
#[derive(Debug, Clone, PartialEq)]
pub struct Figure {
    /// Above the plot; wrapped if long.
    pub title: String,
    /// The horizontal axis.
    pub x: Axis,
    /// The vertical axis.
    pub y: Axis,
    /// A second vertical axis, on the right, for the series in another unit
    /// ([`Series::on_right`]); their legend entries say `(right axis)`.
    pub y2: Option<Axis>,
    /// The data, drawn in order; each gets its own colour, dash pattern and marker shape.
    pub series: Vec<Series>,
    /// Reference lines across the plot area, each in the legend.
    pub rules: Vec<Rule>,
    /// Under the legend, wrapped: what was measured and what was modeled, and how.
    pub footnote: String,
}

/// One axis: its label (with the unit, as `bandwidth (MiB/s)`), scale, range and ticks.
#[derive(Debug, Clone, PartialEq)]
pub struct Axis {
    /// What the axis measures and in what unit.
    pub label: String,
    /// Linear or logarithmic.
    pub scale: Scale,
    /// Where it starts and ends.
    pub range: Range,
    /// Where its ticks are and what they say.
    pub ticks: Ticks,
}

/// Where an axis starts and ends.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Range {
    /// Round values around the data and the rules ([`Span::covering`]); with `include_zero`,
    /// a linear axis starts at zero (so heights compare as ratios).
    Auto {
        /// Whether zero is on the axis.
        include_zero: bool,
    },
    /// Exactly these.
    Fixed {
        /// The start.
        lo: f64,
        /// The end.
        hi: f64,
    },
}

/// Where an axis's ticks go.
#[derive(Debug, Clone, PartialEq)]
pub enum Ticks {
    /// Round values ([`Span::ticks`]).
    Auto,
    /// At these values, with these labels (as the sizes a sweep measured); a label that would
    /// overlap the one before it is left out.
    At(Vec<(f64, String)>),
}

/// One series of points.
#[derive(Debug, Clone, PartialEq)]
pub struct Series {
    /// In the legend.
    pub name: String,
    /// `(x, y)` in data units; for [`Draw::Line`] and [`Draw::Steps`], in order of x.
    pub points: Vec<(f64, f64)>,
    /// How the points are drawn.
    pub draw: Draw,
    /// Whether its y is on the figure's second axis ([`Figure::y2`]), on the right.
    pub right: bool,
}

/// How a series is drawn.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Draw {
    /// A line through the points, a marker on each.
    Line,
    /// A marker on each point, no line: points that do not follow from one another.
    Points,
    /// A cumulative step line: flat from the left edge at `y = 0`, up at each point's x to its
    /// y, flat to the right edge after the last; markers at a few quantiles, staggered between
    /// series so that curves lying on each other still show every series' markers.
    Steps,
    /// A bar from the bottom of the plot area to each point, one slot per whole x unit;
    /// several bar series stand side by side in the slot.
    Bars,
}

/// A reference line across the plot area, in the legend by name.
#[derive(Debug, Clone, PartialEq)]
pub struct Rule {
    /// In the legend: what the line is, with its value.
    pub name: String,
    /// Where it is.
    pub at: RuleAt,
}

/// Where a rule is.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum RuleAt {
    /// A vertical line at this x.
    X(f64),
    /// A horizontal line at this y.
    Y(f64),
}

impl Axis {
    /// A linear axis over the data, starting at zero.
    pub fn from_zero(label: impl Into<String>) -> Axis {
        Axis {
            label: label.into(),
            scale: Scale::Linear,
            range: Range::Auto { include_zero: true },
            ticks: Ticks::Auto,
        }
    }

    /// A linear axis over the data only.
    pub fn around_data(label: impl Into<String>) -> Axis {
        Axis {
            range: Range::Auto {
                include_zero: false,
            },
            ..Axis::from_zero(label)
        }
    }

    /// A logarithmic axis over the data.
    pub fn log(label: impl Into<String>) -> Axis {
        Axis {
            scale: Scale::Log,
            ..Axis::around_data(label)
        }
    }

    /// This axis from `lo` to `hi`.
    pub fn fixed(self, lo: f64, hi: f64) -> Axis {
        Axis {
            range: Range::Fixed { lo, hi },
            ..self
        }
    }

    /// This axis with ticks at these values, so labelled.
    pub fn ticks_at(self, ticks: Vec<(f64, String)>) -> Axis {
        Axis {
            ticks: Ticks::At(ticks),
            ..self
        }
    }

    /// The axis's span over `values`.
    pub(crate) fn span(&self, values: impl IntoIterator<Item = f64>) -> Span {
        match self.range {
            Range::Auto { include_zero } => Span::covering(values, self.scale, include_zero),
            Range::Fixed { lo, hi } => Span::fixed(lo, hi, self.scale),
        }
    }

    /// The ticks inside `span`, labelled.
    pub(crate) fn tick_list(&self, span: &Span) -> Vec<(f64, String)> {
        match &self.ticks {
            Ticks::Auto => span.ticks(),
            Ticks::At(ticks) => ticks
                .iter()
                .filter(|(v, _)| (0.0..=1.0).contains(&span.fraction(*v)))
                .cloned()
                .collect(),
        }
    }
}

impl Series {
    /// A line through `points`, sorted by x.
    pub fn line(name: impl Into<String>, points: impl IntoIterator<Item = (f64, f64)>) -> Series {
        let mut points: Vec<(f64, f64)> = points.into_iter().collect();
        points.sort_by(|a, b| a.0.total_cmp(&b.0));
        Series {
            name: name.into(),
            points,
            draw: Draw::Line,
            right: false,
        }
    }

    /// The empirical cumulative distribution of `samples`: a step to `(i + 1) / n` at the
    /// `i`-th smallest sample.
    pub fn cdf(name: impl Into<String>, samples: &[f64]) -> Series {
        let mut sorted = samples.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len() as f64;
        Series {
            name: name.into(),
            points: sorted
                .into_iter()
                .enumerate()
                .map(|(i, x)| (x, (i + 1) as f64 / n))
                .collect(),
            draw: Draw::Steps,
            right: false,
        }
    }

    /// A marker at each of `points` and no line between them: measurements that are not a
    /// series in x (separate runs, one after another), sorted by x.
    pub fn points(name: impl Into<String>, points: impl IntoIterator<Item = (f64, f64)>) -> Series {
        Series {
            draw: Draw::Points,
            ..Series::line(name, points)
        }
    }

    /// This series on the figure's second axis ([`Figure::y2`]), on the right.
    pub fn on_right(self) -> Series {
        Series {
            right: true,
            ..self
        }
    }

    /// Bars of height `y` at each whole `x`.
    pub fn bars(name: impl Into<String>, points: impl IntoIterator<Item = (f64, f64)>) -> Series {
        Series {
            name: name.into(),
            points: points.into_iter().collect(),
            draw: Draw::Bars,
            right: false,
        }
    }
}

impl Rule {
    /// A vertical line at `x`.
    pub fn at_x(name: impl Into<String>, x: f64) -> Rule {
        Rule {
            name: name.into(),
            at: RuleAt::X(x),
        }
    }

    /// A horizontal line at `y`.
    pub fn at_y(name: impl Into<String>, y: f64) -> Rule {
        Rule {
            name: name.into(),
            at: RuleAt::Y(y),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cdf_steps_to_one_in_order_of_the_samples() {
        let s = Series::cdf("a", &[3.0, 1.0, 2.0, 2.0]);
        assert_eq!(s.points, [(1.0, 0.25), (2.0, 0.5), (2.0, 0.75), (3.0, 1.0)]);
        assert_eq!(s.draw, Draw::Steps);
        assert!(Series::cdf("empty", &[]).points.is_empty());
    }

    #[test]
    fn a_line_is_drawn_in_order_of_x() {
        let s = Series::line("a", [(4.0, 1.0), (1.0, 2.0)]);
        assert_eq!(s.points, [(1.0, 2.0), (4.0, 1.0)]);
    }

    #[test]
    fn given_ticks_outside_the_range_are_left_out() {
        let axis = Axis::from_zero("x").fixed(0.5, 2.5).ticks_at(vec![
            (1.0, "1".into()),
            (2.0, "2".into()),
            (3.0, "3".into()),
        ]);
        let span = axis.span([]);
        assert_eq!(axis.tick_list(&span).len(), 2);
    }
}
