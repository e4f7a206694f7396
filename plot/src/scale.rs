//! [`Span`]: an axis's range in data units, its scale, and where its ticks go — pure
//! arithmetic, no drawing.

/// How data values map onto an axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scale {
    /// Equal steps for equal differences.
    Linear,
    /// Equal steps for equal ratios (base 10; only positive values can be drawn).
    Log,
}

/// An axis's range after ranging: `lo..=hi` in data units, on a scale.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Span {
    /// The value at the start of the axis (left, or bottom).
    pub lo: f64,
    /// The value at the end of the axis (right, or top).
    pub hi: f64,
    /// Linear or logarithmic.
    pub scale: Scale,
}

/// Most ticks an axis gets from [`Span::ticks`].
const TICKS_MAX: usize = 12;

/// Most steps a linear axis is divided into: its step is the roundest that gives no more.
const TICKS_WANTED_MAX: f64 = 8.0;

impl Span {
    /// A range over `values` with round ends: on a linear scale from a multiple of a round
    /// step below the least value (or zero, with `include_zero`) to one above the greatest; on
    /// a log scale half a step of 1.5× beyond both ends, so no point sits on the frame.
    /// Values that cannot be drawn (not finite; not positive on a log scale) are ignored.
    pub fn covering(
        values: impl IntoIterator<Item = f64>,
        scale: Scale,
        include_zero: bool,
    ) -> Span {
        let drawable = |v: &f64| v.is_finite() && (scale == Scale::Linear || *v > 0.0);
        let (mut lo, mut hi) = values
            .into_iter()
            .filter(drawable)
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), v| {
                (lo.min(v), hi.max(v))
            });
        if lo > hi {
            // Nothing to draw: an empty axis over a unit range.
            return match scale {
                Scale::Linear => Span {
                    lo: 0.0,
                    hi: 1.0,
                    scale,
                },
                Scale::Log => Span {
                    lo: 1.0,
                    hi: 10.0,
                    scale,
                },
            };
        }
        match scale {
            Scale::Log => Span {
                lo: lo / 1.5,
                hi: hi * 1.5,
                scale,
            },
            Scale::Linear => {
                if include_zero {
                    lo = lo.min(0.0);
                    hi = hi.max(0.0);
                }
                if hi - lo < f64::EPSILON * hi.abs().max(1.0) {
                    // One value: a range around it (or up from zero).
                    let pad = (hi.abs() * 0.1).max(1.0);
                    if !(include_zero && lo == 0.0) {
                        lo -= pad;
                    }
                    hi += pad;
                }
                // A little headroom, so the greatest value is not drawn on the frame.
                let headroom = (hi - lo) * 0.02;
                let step = nice_step((hi - lo + 2.0 * headroom) / TICKS_WANTED_MAX);
                let lo = if include_zero && lo == 0.0 {
                    0.0
                } else {
                    ((lo - headroom) / step).floor() * step
                };
                let hi = ((hi + headroom) / step).ceil() * step;
                Span { lo, hi, scale }
            }
        }
    }

    /// A given range.
    pub fn fixed(lo: f64, hi: f64, scale: Scale) -> Span {
        Span { lo, hi, scale }
    }

    /// Where `value` falls along the axis: 0 at `lo`, 1 at `hi` (outside for values beyond).
    pub fn fraction(&self, value: f64) -> f64 {
        let (lo, hi, v) = match self.scale {
            Scale::Linear => (self.lo, self.hi, value),
            Scale::Log => (self.lo.log10(), self.hi.log10(), value.log10()),
        };
        if hi > lo { (v - lo) / (hi - lo) } else { 0.5 }
    }

    /// Round ticks inside the range, labelled: multiples of a round step on a linear scale,
    /// at most eight steps apart end to end; powers of ten on a log scale (with 2× and 5× between them when the range
    /// spans less than two decades).
    pub fn ticks(&self) -> Vec<(f64, String)> {
        match self.scale {
            Scale::Linear => {
                let step = nice_step((self.hi - self.lo) / TICKS_WANTED_MAX);
                let decimals = (-step.log10().floor()).clamp(0.0, 9.0) as usize;
                let first = (self.lo / step - 1e-9).ceil() as i64;
                (0..TICKS_MAX as i64)
                    .map(|i| (first + i) as f64 * step)
                    .take_while(|&v| v <= self.hi + step * 1e-9)
                    .map(|v| {
                        // No "-0" from a zero reached by rounding.
                        let v = if v.abs() < step * 1e-9 { 0.0 } else { v };
                        (v, format!("{v:.decimals$}"))
                    })
                    .collect()
            }
            Scale::Log => {
                let (lo, hi) = (self.lo.max(f64::MIN_POSITIVE), self.hi);
                let decades = (lo.log10().ceil() as i32)..=(hi.log10().floor() as i32);
                let multiples: &[f64] = if hi / lo < 100.0 {
                    &[1.0, 2.0, 5.0]
                } else {
                    &[1.0]
                };
                let mut ticks = Vec::new();
                for k in (decades.start() - 1)..=*decades.end() {
                    for m in multiples {
                        let v = m * 10f64.powi(k);
                        if v >= lo * (1.0 - 1e-9)
                            && v <= hi * (1.0 + 1e-9)
                            && ticks.len() < TICKS_MAX
                        {
                            let decimals = (-k).clamp(0, 9) as usize;
                            ticks.push((v, format!("{v:.decimals$}")));
                        }
                    }
                }
                ticks
            }
        }
    }
}

/// The round step (1, 2 or 5 times a power of ten) at or above `raw`.
fn nice_step(raw: f64) -> f64 {
    let raw = if raw.is_finite() && raw > 0.0 {
        raw
    } else {
        1.0
    };
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw * (1.0 - 1e-12))
        .unwrap_or(10.0 * magnitude)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn labels(span: &Span) -> Vec<String> {
        span.ticks().into_iter().map(|(_, l)| l).collect()
    }

    #[test]
    fn a_linear_range_has_round_ends_beyond_the_data() {
        let span = Span::covering([16.67, 27.55], Scale::Linear, false);
        assert_eq!((span.lo, span.hi), (16.0, 28.0));
        assert_eq!(labels(&span), ["16", "18", "20", "22", "24", "26", "28"]);
        let span = Span::covering([310.0, 1480.0], Scale::Linear, true);
        assert_eq!((span.lo, span.hi), (0.0, 1600.0));
        assert_eq!(span.fraction(800.0), 0.5);
    }

    #[test]
    fn fractional_ticks_are_labelled_without_float_noise() {
        let span = Span::fixed(0.0, 1.0, Scale::Linear);
        assert_eq!(labels(&span), ["0.0", "0.2", "0.4", "0.6", "0.8", "1.0"]);
        let span = Span::fixed(-0.3, 0.3, Scale::Linear);
        assert!(
            labels(&span).iter().all(|l| l != "-0.0"),
            "{:?}",
            labels(&span)
        );
    }

    #[test]
    fn a_single_value_still_gets_a_range() {
        let span = Span::covering([5.0], Scale::Linear, false);
        assert!(span.lo < 5.0 && span.hi > 5.0, "{span:?}");
        let span = Span::covering([0.0], Scale::Linear, true);
        assert_eq!(span.lo, 0.0);
        assert!(span.hi > 0.0);
        let span = Span::covering([], Scale::Linear, true);
        assert_eq!((span.lo, span.hi), (0.0, 1.0));
    }

    #[test]
    fn a_log_range_ignores_what_it_cannot_draw_and_ticks_decades() {
        let span = Span::covering([0.0, -1.0, 1.0, 1900.0], Scale::Log, false);
        assert_eq!(span.lo, 1.0 / 1.5);
        assert_eq!(span.hi, 1900.0 * 1.5);
        assert_eq!(labels(&span), ["1", "10", "100", "1000"]);
        assert!((span.fraction(span.lo)).abs() < 1e-12);
        assert!((span.fraction(span.hi) - 1.0).abs() < 1e-12);
        // Under two decades: 2× and 5× between the powers of ten.
        let span = Span::covering([3.0, 40.0], Scale::Log, false);
        assert_eq!(labels(&span), ["2", "5", "10", "20", "50"]);
    }
}
