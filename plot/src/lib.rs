//! iopath's plots: what `iopath topo analyze` and the benchmarks draw, as hand-written SVG —
//! no fonts, no system libraries, text any browser or `rsvg-convert` opens.
//!
//! A plot is described first ([`Figure`]: title, axes with units, series, reference lines, a
//! footnote saying what was measured and what modeled) and laid out second
//! ([`Figure::svg`]), so the rules that make a plot read well live in one place: every label
//! inside the picture, the legend in a box of its own below the data, every series told apart
//! by colour, dash and marker.
//!
//! # Layout
//!
//! - [`figure`]: [`Figure`], [`Axis`], [`Series`], [`Rule`]: what a plot shows.
//! - [`mod@svg`]: [`Figure::svg`], the layout and the drawing.
//! - [`scale`]: [`Span`], an axis's range and ticks, linear or logarithmic.
//! - [`sequence`]: [`Sequence`], one request followed hop by hop across the nodes, drawn as a
//!   sequence diagram with time running down in rows, not to scale.
//! - [`text`]: label widths estimated without fonts, wrapping, escaping.
//! - `check` (feature `check`): a plot's SVG read back with an XML parser, and what in it
//!   reads badly — text outside the picture, a legend over the data, series alike.

#[cfg(any(test, feature = "check"))]
pub mod check;
pub mod figure;
pub mod scale;
pub mod sequence;
pub mod svg;
pub mod text;

pub use figure::{Axis, Draw, Figure, Range, Rule, RuleAt, Series, Ticks};
pub use scale::{Scale, Span};
pub use sequence::{Arrow, Mark, Sequence};

#[cfg(test)]
mod tests;
