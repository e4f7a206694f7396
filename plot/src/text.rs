//! Text as a plot lays it out without fonts: how wide a label will be in the viewer's
//! `sans-serif`, lines wrapped to a width, and XML escaping.
//!
//! The SVG names no font file, so the viewer picks its own sans-serif. The estimate below is
//! per character class and errs wide: it follows DejaVu Sans, the widest of the usual
//! defaults (Liberation Sans, Arial and Helvetica are narrower), so a label laid out to fit
//! by this estimate fits in any of them.

/// Estimated width of `text` drawn at `font_px`, in pixels.
pub fn width_px(text: &str, font_px: f64) -> f64 {
    text.chars().map(advance_em).sum::<f64>() * font_px
}

/// Height of a line of text above its baseline (the ascent), as a share of the font size.
pub const ASCENT_EM: f64 = 0.76;

/// Depth of a line of text below its baseline (the descent), as a share of the font size.
pub const DESCENT_EM: f64 = 0.24;

/// One character's advance, in ems, rounded up from DejaVu Sans.
fn advance_em(c: char) -> f64 {
    match c {
        'i' | 'j' | 'l' | '.' | ',' | ':' | ';' | '\'' | '|' | '!' => 0.32,
        ' ' | 'f' | 't' | 'r' | 'I' | '(' | ')' | '[' | ']' | '-' | '/' => 0.42,
        'm' | 'w' | 'M' | 'W' | '%' | '@' | '—' => 1.0,
        'A'..='Z' => 0.78,
        '0'..='9' => 0.64,
        _ => 0.64,
    }
}

/// `text` broken at spaces into lines no wider than `max_px` at `font_px` (a single word wider
/// than that keeps a line of its own).
pub fn wrap(text: &str, font_px: f64, max_px: f64) -> Vec<String> {
    let mut lines: Vec<String> = Vec::new();
    let mut line = String::new();
    for word in text.split_whitespace() {
        let candidate = if line.is_empty() {
            word.to_owned()
        } else {
            format!("{line} {word}")
        };
        if line.is_empty() || width_px(&candidate, font_px) <= max_px {
            line = candidate;
        } else {
            lines.push(std::mem::replace(&mut line, word.to_owned()));
        }
    }
    if !line.is_empty() {
        lines.push(line);
    }
    lines
}

/// `text` safe inside an SVG element or a double-quoted attribute.
pub fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wide_letters_are_estimated_wider_than_narrow_ones() {
        assert!(width_px("mmmm", 10.0) > 2.0 * width_px("iiii", 10.0));
        assert_eq!(width_px("", 10.0), 0.0);
        // Twice the font, twice the width.
        assert_eq!(width_px("MiB/s", 20.0), 2.0 * width_px("MiB/s", 10.0));
    }

    #[test]
    fn wrapping_keeps_every_word_and_every_line_within_the_width() {
        let text = "modeled: the data disk, 80 MiB/s, 4 ms per head move between data and journal";
        let lines = wrap(text, 10.0, 150.0);
        assert!(lines.len() > 1, "{lines:?}");
        assert_eq!(lines.join(" "), text);
        for line in &lines {
            assert!(width_px(line, 10.0) <= 150.0, "{line}");
        }
        assert_eq!(
            wrap("unbreakable-word-longer-than-the-width", 10.0, 20.0).len(),
            1
        );
        assert!(wrap("   ", 10.0, 100.0).is_empty());
    }

    #[test]
    fn markup_characters_are_escaped() {
        assert_eq!(
            escape(r#"a < b & "c" > d"#),
            "a &lt; b &amp; &quot;c&quot; &gt; d"
        );
    }
}
