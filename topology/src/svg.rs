//! Plots as hand-written SVG: no fonts, no system libraries, just text a browser can open.
//! Labels use the generic `sans-serif` family, which every viewer resolves itself.

use std::fmt::Write as _;

use crate::link_loads::HistogramBin;

const WIDTH: f64 = 720.0;
const HEIGHT: f64 = 420.0;
const LEFT: f64 = 70.0;
const RIGHT: f64 = 20.0;
const TOP: f64 = 40.0;
const BOTTOM: f64 = 50.0;
const COLOURS: [&str; 4] = ["#d62728", "#1f77b4", "#2ca02c", "#9467bd"];

/// A grouped bar chart of links per pair count, one colour per series, with a dashed line
/// after the saturation point.
pub fn histogram(
    title: &str,
    series: &[(&str, &[HistogramBin])],
    pairs_at_saturation: u32,
) -> String {
    let max_pairs = series
        .iter()
        .flat_map(|(_, bins)| bins.iter().map(|b| b.pairs))
        .max()
        .unwrap_or(1)
        .max(pairs_at_saturation + 1);
    let max_links = series
        .iter()
        .flat_map(|(_, bins)| bins.iter().map(|b| b.links))
        .max()
        .unwrap_or(1)
        .max(1);
    let mut svg = open(title);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    let slot = plot_w / f64::from(max_pairs + 1);
    let bar = slot / (series.len().max(1) as f64 + 0.5);
    axes(&mut svg, "pairs per link", "links (log scale)");
    // Log scale on links: counts run from one to tens of thousands.
    let y_of = |links: u64| {
        let top = (max_links as f64 + 1.0).log10();
        TOP + plot_h * (1.0 - (links as f64 + 1.0).log10() / top)
    };
    for (si, (_, bins)) in series.iter().enumerate() {
        for b in bins.iter() {
            let x = LEFT + slot * f64::from(b.pairs) + bar * si as f64;
            let y = y_of(b.links);
            let _ = writeln!(
                svg,
                r#"<rect x="{x:.1}" y="{y:.1}" width="{bar:.1}" height="{:.1}" fill="{}"/>"#,
                TOP + plot_h - y,
                COLOURS[si % COLOURS.len()]
            );
        }
    }
    let sx = LEFT + slot * (f64::from(pairs_at_saturation) + 0.95);
    let _ = writeln!(
        svg,
        r##"<line x1="{sx:.1}" y1="{TOP}" x2="{sx:.1}" y2="{:.1}" stroke="#555" stroke-dasharray="5,4"/>"##,
        TOP + plot_h
    );
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="{:.1}" font-size="11">saturation ({pairs_at_saturation} pairs)</text>"#,
        sx + 4.0,
        TOP + 14.0
    );
    for tick in ticks(f64::from(max_pairs)) {
        let x = LEFT + slot * (tick + 0.5);
        label(
            &mut svg,
            x,
            TOP + plot_h + 16.0,
            &format!("{tick}"),
            "middle",
        );
    }
    let mut decade = 1u64;
    while decade <= max_links {
        label(
            &mut svg,
            LEFT - 6.0,
            y_of(decade) + 4.0,
            &decade.to_string(),
            "end",
        );
        decade *= 10;
    }
    legend(&mut svg, series.iter().map(|(name, _)| *name));
    close(svg)
}

/// Cumulative distribution of completion times, one step line per series.
pub fn cdf(title: &str, series: &[(&str, &[f64])]) -> String {
    let max_t = series
        .iter()
        .flat_map(|(_, t)| t.iter().copied())
        .fold(0.0, f64::max)
        .max(1e-9)
        * 1.05;
    let mut svg = open(title);
    let plot_w = WIDTH - LEFT - RIGHT;
    let plot_h = HEIGHT - TOP - BOTTOM;
    axes(&mut svg, "completion time (s)", "fraction of writers done");
    let x_of = |t: f64| LEFT + plot_w * t / max_t;
    let y_of = |f: f64| TOP + plot_h * (1.0 - f);
    for (si, (_, times)) in series.iter().enumerate() {
        let mut sorted = times.to_vec();
        sorted.sort_by(f64::total_cmp);
        let n = sorted.len().max(1) as f64;
        let mut points = format!("{:.1},{:.1}", x_of(0.0), y_of(0.0));
        for (i, &t) in sorted.iter().enumerate() {
            let _ = write!(points, " {:.1},{:.1}", x_of(t), y_of(i as f64 / n));
            let _ = write!(points, " {:.1},{:.1}", x_of(t), y_of((i + 1) as f64 / n));
        }
        let _ = writeln!(
            svg,
            r#"<polyline points="{points}" fill="none" stroke="{}" stroke-width="2"/>"#,
            COLOURS[si % COLOURS.len()]
        );
    }
    for tick in ticks(max_t) {
        label(
            &mut svg,
            x_of(tick),
            TOP + plot_h + 16.0,
            &format!("{tick}"),
            "middle",
        );
    }
    for f in [0.0, 0.25, 0.5, 0.75, 1.0] {
        label(&mut svg, LEFT - 6.0, y_of(f) + 4.0, &format!("{f}"), "end");
    }
    legend(&mut svg, series.iter().map(|(name, _)| *name));
    close(svg)
}

fn open(title: &str) -> String {
    let mut svg = String::new();
    let _ = writeln!(
        svg,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif">"#
    );
    let _ = writeln!(svg, r#"<rect width="100%" height="100%" fill="white"/>"#);
    let _ = writeln!(
        svg,
        r#"<text x="{:.1}" y="24" font-size="15" text-anchor="middle">{}</text>"#,
        WIDTH / 2.0,
        escape(title)
    );
    svg
}

fn close(mut svg: String) -> String {
    svg.push_str("</svg>\n");
    svg
}

fn axes(svg: &mut String, x_label: &str, y_label: &str) {
    let (x0, y0, x1, y1) = (LEFT, HEIGHT - BOTTOM, WIDTH - RIGHT, TOP);
    let _ = writeln!(
        svg,
        r#"<path d="M{x0},{y1} L{x0},{y0} L{x1},{y0}" fill="none" stroke="black"/>"#
    );
    label(svg, (x0 + x1) / 2.0, HEIGHT - 12.0, x_label, "middle");
    let _ = writeln!(
        svg,
        r#"<text x="16" y="{:.1}" font-size="12" text-anchor="middle" transform="rotate(-90 16 {:.1})">{}</text>"#,
        (y0 + y1) / 2.0,
        (y0 + y1) / 2.0,
        escape(y_label)
    );
}

fn label(svg: &mut String, x: f64, y: f64, text: &str, anchor: &str) {
    let _ = writeln!(
        svg,
        r#"<text x="{x:.1}" y="{y:.1}" font-size="11" text-anchor="{anchor}">{}</text>"#,
        escape(text)
    );
}

fn legend<'a>(svg: &mut String, names: impl Iterator<Item = &'a str>) {
    for (i, name) in names.enumerate() {
        let y = TOP + 8.0 + 18.0 * i as f64;
        let x = WIDTH - RIGHT - 150.0;
        let _ = writeln!(
            svg,
            r#"<rect x="{x}" y="{y}" width="12" height="12" fill="{}"/>"#,
            COLOURS[i % COLOURS.len()]
        );
        label(svg, x + 18.0, y + 10.0, name, "start");
    }
}

/// Round tick values from 0 to `max`, about six of them.
fn ticks(max: f64) -> Vec<f64> {
    let raw = max / 6.0;
    let magnitude = 10f64.powf(raw.max(1e-9).log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|&s| s >= raw)
        .unwrap_or(10.0 * magnitude);
    (0..=((max / step).floor() as usize).min(50))
        .map(|i| i as f64 * step)
        .collect()
}

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plots_are_well_formed_svg() {
        let bins = [
            HistogramBin {
                pairs: 1,
                links: 100,
            },
            HistogramBin {
                pairs: 20,
                links: 3,
            },
        ];
        let h = histogram("loads <test>", &[("default", &bins[..])], 17);
        assert!(h.starts_with("<svg") && h.trim_end().ends_with("</svg>"));
        assert!(h.contains("&lt;test&gt;"));
        assert_eq!(h.matches("<rect").count(), 1 + 2 + 1); // background, bars, legend
        let c = cdf("cdf", &[("a", &[1.0, 2.0][..]), ("b", &[3.0][..])]);
        assert_eq!(c.matches("<polyline").count(), 2);
        assert_eq!(ticks(10.0), vec![0.0, 2.0, 4.0, 6.0, 8.0, 10.0]);
    }
}
