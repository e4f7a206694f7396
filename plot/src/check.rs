//! [`Drawing`]: a plot's SVG read back with an XML parser, and [`Drawing::problems`], what in
//! it reads badly — for tests, here and in the crates that draw plots (feature `check`).
//!
//! It reads what any SVG says (positions, anchors, font sizes, strokes) and finds the parts
//! [`crate::Figure::svg`] names by class: the plot area, the legend box, the series.

use std::fmt;

use crate::text::{ASCENT_EM, DESCENT_EM, width_px};

/// How far a point may stray outside the plot area (rounding to a tenth of a pixel).
const SLACK_PX: f64 = 0.5;

/// A rectangle in the picture's coordinates.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Rect {
    /// Left edge.
    pub left: f64,
    /// Top edge.
    pub top: f64,
    /// Right edge.
    pub right: f64,
    /// Bottom edge.
    pub bottom: f64,
}

impl Rect {
    /// Whether `other` lies wholly inside this rectangle.
    pub fn contains(&self, other: &Rect) -> bool {
        other.left >= self.left - SLACK_PX
            && other.right <= self.right + SLACK_PX
            && other.top >= self.top - SLACK_PX
            && other.bottom <= self.bottom + SLACK_PX
    }

    /// Whether the two rectangles share any area.
    pub fn intersects(&self, other: &Rect) -> bool {
        self.left < other.right
            && other.left < self.right
            && self.top < other.bottom
            && other.top < self.bottom
    }
}

/// One `<text>`.
#[derive(Debug, Clone, PartialEq)]
pub struct Text {
    /// Its `class`, if any.
    pub class: String,
    /// What it says.
    pub content: String,
    /// Its anchor point (`x`, `y`).
    pub anchor: (f64, f64),
    /// The box it covers, by [`crate::text::width_px`]'s estimate, turned if it is turned.
    pub extent: Rect,
}

/// One element of class `series`: a line, or a group of bars.
#[derive(Debug, Clone, PartialEq)]
pub struct SeriesShape {
    /// Its `data-series`.
    pub name: String,
    /// `path` (a line) or `g` (bars).
    pub element: String,
    /// Its stroke colour (a line) or fill (bars).
    pub colour: String,
    /// Its `stroke-dasharray`, if any.
    pub dash: Option<String>,
    /// The path's vertices, or each bar's top centre.
    pub points: Vec<(f64, f64)>,
    /// Whether a line joins its points (a shown path); not for markers alone or bars.
    pub joined: bool,
}

/// A plot's SVG, read back.
#[derive(Debug, Clone, PartialEq)]
pub struct Drawing {
    /// The `viewBox`: the picture.
    pub view_box: Rect,
    /// The `plot-area` rectangle: where the data is drawn.
    pub plot_area: Rect,
    /// The `legend-box` rectangle, if there is a legend.
    pub legend: Option<Rect>,
    /// Every `<text>`.
    pub texts: Vec<Text>,
    /// Every series, in drawing order.
    pub series: Vec<SeriesShape>,
}

/// Why an SVG could not be read as a plot.
#[derive(Debug, Clone, PartialEq)]
pub enum ReadError {
    /// Not XML.
    Xml(String),
    /// An element or attribute a plot has is missing or unreadable.
    Missing(String),
}

impl fmt::Display for ReadError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ReadError::Xml(e) => write!(f, "not XML: {e}"),
            ReadError::Missing(what) => write!(f, "not a plot: no readable {what}"),
        }
    }
}

impl std::error::Error for ReadError {}

/// Something in a plot that reads badly.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// A text reaches outside the picture (clipped, or gone).
    TextOutside {
        /// What it says.
        content: String,
        /// Where it reaches.
        extent: Rect,
    },
    /// Two texts cover each other.
    TextsOverlap {
        /// What the first says.
        first: String,
        /// What the second says.
        second: String,
    },
    /// The legend box covers part of the plot area.
    LegendOverData,
    /// A series has a point outside the plot area.
    PointOutside {
        /// The series.
        series: String,
        /// The point, in pixels.
        at: (f64, f64),
    },
    /// Two series look alike (same colour and dash): a reader cannot tell them apart.
    SeriesAlike {
        /// The first series.
        first: String,
        /// The second series.
        second: String,
    },
}

impl fmt::Display for Problem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Problem::TextOutside { content, extent } => {
                write!(
                    f,
                    "text {content:?} reaches outside the picture: {extent:?}"
                )
            }
            Problem::TextsOverlap { first, second } => {
                write!(f, "texts {first:?} and {second:?} overlap")
            }
            Problem::LegendOverData => write!(f, "the legend box covers the plot area"),
            Problem::PointOutside { series, at } => {
                write!(
                    f,
                    "series {series:?} has a point outside the plot area at {at:?}"
                )
            }
            Problem::SeriesAlike { first, second } => {
                write!(
                    f,
                    "series {first:?} and {second:?} have the same colour and dash"
                )
            }
        }
    }
}

impl Drawing {
    /// Reads `svg`.
    pub fn read(svg: &str) -> Result<Drawing, ReadError> {
        let doc = roxmltree::Document::parse(svg).map_err(|e| ReadError::Xml(e.to_string()))?;
        let root = doc.root_element();
        let view_box = root
            .attribute("viewBox")
            .and_then(|v| {
                let n: Vec<f64> = v
                    .split_whitespace()
                    .filter_map(|s| s.parse().ok())
                    .collect();
                (n.len() == 4).then(|| Rect {
                    left: n[0],
                    top: n[1],
                    right: n[0] + n[2],
                    bottom: n[1] + n[3],
                })
            })
            .ok_or_else(|| ReadError::Missing("viewBox".into()))?;
        let rect_of = |class: &str| {
            doc.descendants()
                .find(|n| n.has_tag_name("rect") && n.attribute("class") == Some(class))
                .map(|n| {
                    let x = number(n, "x")?;
                    let y = number(n, "y")?;
                    Ok(Rect {
                        left: x,
                        top: y,
                        right: x + number(n, "width")?,
                        bottom: y + number(n, "height")?,
                    })
                })
                .transpose()
        };
        let plot_area =
            rect_of("plot-area")?.ok_or_else(|| ReadError::Missing("plot-area".into()))?;
        let legend = rect_of("legend-box")?;
        let mut texts = Vec::new();
        for node in doc.descendants().filter(|n| n.has_tag_name("text")) {
            texts.push(read_text(node)?);
        }
        let mut series = Vec::new();
        for node in doc
            .descendants()
            .filter(|n| n.attribute("class") == Some("series"))
        {
            series.push(read_series(node)?);
        }
        Ok(Drawing {
            view_box,
            plot_area,
            legend,
            texts,
            series,
        })
    }

    /// Reads `svg` and checks it: the drawing, or one message with every problem found (and
    /// the SVG), for a test to fail with.
    pub fn read_clean(svg: &str) -> Result<Drawing, String> {
        let drawing = Drawing::read(svg).map_err(|e| format!("{e}\n{svg}"))?;
        let problems: Vec<String> = drawing.problems().iter().map(ToString::to_string).collect();
        if problems.is_empty() {
            Ok(drawing)
        } else {
            Err(format!("{}\n{svg}", problems.join("\n")))
        }
    }

    /// Everything that reads badly; empty for a good plot.
    pub fn problems(&self) -> Vec<Problem> {
        let mut problems = Vec::new();
        for text in &self.texts {
            if !self.view_box.contains(&text.extent) {
                problems.push(Problem::TextOutside {
                    content: text.content.clone(),
                    extent: text.extent,
                });
            }
        }
        for (i, a) in self.texts.iter().enumerate() {
            for b in &self.texts[i + 1..] {
                if a.extent.intersects(&b.extent) {
                    problems.push(Problem::TextsOverlap {
                        first: a.content.clone(),
                        second: b.content.clone(),
                    });
                }
            }
        }
        if self.legend.is_some_and(|l| l.intersects(&self.plot_area)) {
            problems.push(Problem::LegendOverData);
        }
        for series in &self.series {
            if let Some(&at) = series.points.iter().find(|&&(x, y)| {
                !self.plot_area.contains(&Rect {
                    left: x,
                    top: y,
                    right: x,
                    bottom: y,
                })
            }) {
                problems.push(Problem::PointOutside {
                    series: series.name.clone(),
                    at,
                });
            }
        }
        for (i, a) in self.series.iter().enumerate() {
            for b in &self.series[i + 1..] {
                if a.colour == b.colour && a.dash == b.dash {
                    problems.push(Problem::SeriesAlike {
                        first: a.name.clone(),
                        second: b.name.clone(),
                    });
                }
            }
        }
        problems
    }

    /// The series named `name`.
    pub fn series(&self, name: &str) -> Option<&SeriesShape> {
        self.series.iter().find(|s| s.name == name)
    }

    /// The texts of class `class`, in order.
    pub fn texts_of(&self, class: &str) -> Vec<&str> {
        self.texts
            .iter()
            .filter(|t| t.class == class)
            .map(|t| t.content.as_str())
            .collect()
    }
}

fn number(node: roxmltree::Node<'_, '_>, name: &str) -> Result<f64, ReadError> {
    node.attribute(name)
        .and_then(|v| v.trim().parse().ok())
        .ok_or_else(|| ReadError::Missing(format!("{name} on <{}>", node.tag_name().name())))
}

fn read_text(node: roxmltree::Node<'_, '_>) -> Result<Text, ReadError> {
    let content: String = node
        .descendants()
        .filter(|n| n.is_text())
        .filter_map(|n| n.text())
        .collect();
    let (x, y) = (number(node, "x")?, number(node, "y")?);
    let font_px = number(node, "font-size")?;
    let width = width_px(&content, font_px);
    let start = match node.attribute("text-anchor").unwrap_or("start") {
        "middle" => -width / 2.0,
        "end" => -width,
        _ => 0.0,
    };
    // Along the baseline from `start` to `start + width`; across it from the ascent to the
    // descent.
    let (along, across) = (
        (start, start + width),
        (-ASCENT_EM * font_px, DESCENT_EM * font_px),
    );
    let extent = match node.attribute("transform") {
        None => Rect {
            left: x + along.0,
            right: x + along.1,
            top: y + across.0,
            bottom: y + across.1,
        },
        // A quarter turn anticlockwise about the anchor: the baseline runs up the page and
        // the ascent lies to its left.
        Some(t) if t.trim_start().starts_with("rotate(-90") => Rect {
            left: x + across.0,
            right: x + across.1,
            top: y - along.1,
            bottom: y - along.0,
        },
        // A quarter turn clockwise (a right-hand axis's label): the baseline runs down the
        // page and the ascent lies to its right.
        Some(t) if t.trim_start().starts_with("rotate(90") => Rect {
            left: x - across.1,
            right: x - across.0,
            top: y + along.0,
            bottom: y + along.1,
        },
        Some(t) => {
            return Err(ReadError::Missing(format!(
                "a transform this reader knows (got {t:?})"
            )));
        }
    };
    Ok(Text {
        class: node.attribute("class").unwrap_or("").to_owned(),
        content,
        anchor: (x, y),
        extent,
    })
}

fn read_series(node: roxmltree::Node<'_, '_>) -> Result<SeriesShape, ReadError> {
    let name = node.attribute("data-series").unwrap_or("").to_owned();
    let element = node.tag_name().name().to_owned();
    let (colour, points) = if node.has_tag_name("path") {
        let d = node
            .attribute("d")
            .ok_or_else(|| ReadError::Missing("d on a series path".into()))?;
        let numbers: Vec<f64> = d
            .split(|c: char| c.is_ascii_alphabetic() || c == ',' || c.is_whitespace())
            .filter(|s| !s.is_empty())
            .map(|s| {
                s.parse()
                    .map_err(|_| ReadError::Missing(format!("a number in d, not {s:?}")))
            })
            .collect::<Result<_, _>>()?;
        let points = numbers.chunks_exact(2).map(|p| (p[0], p[1])).collect();
        (node.attribute("stroke").unwrap_or("").to_owned(), points)
    } else {
        let mut points = Vec::new();
        for bar in node.children().filter(|n| n.has_tag_name("rect")) {
            points.push((
                number(bar, "x")? + number(bar, "width")? / 2.0,
                number(bar, "y")?,
            ));
        }
        (node.attribute("fill").unwrap_or("").to_owned(), points)
    };
    let joined = node.has_tag_name("path") && node.attribute("visibility") != Some("hidden");
    Ok(SeriesShape {
        joined,
        name,
        element,
        colour,
        dash: node.attribute("stroke-dasharray").map(str::to_owned),
        points,
    })
}
