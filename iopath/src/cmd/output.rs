//! A command's results on standard output: written and flushed, and a failed write (`>
//! /dev/full`, a reader gone) an error rather than `print!`'s panic. The `out!` and `outln!`
//! macros of [`super`] write through [`write_out`].

use anyhow::Context as _;

/// Writes `text` to standard output and flushes it.
pub(crate) fn write_out(text: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .context("write to standard output")
}

/// A paper's experiment's report as a user asked for it: its plot's SVG at the path given
/// (if asked and there is one; `drawn` says what it shows), then the report on standard
/// output, as JSON or as the table for people.
pub(crate) fn print_report<R: serde::Serialize>(
    report: &R,
    json: bool,
    table: impl FnOnce(&R) -> String,
    svg: Option<(&std::path::Path, Option<String>, &str)>,
) -> anyhow::Result<()> {
    use std::io::Write as _;
    if let Some((path, Some(svg), drawn)) = svg {
        std::fs::write(path, svg).with_context(|| format!("write the plot {}", path.display()))?;
        eprintln!("{drawn} drawn in {}", path.display());
    }
    let mut out = std::io::stdout();
    if json {
        let json = serde_json::to_string_pretty(report).context("encode the report as JSON")?;
        writeln!(out, "{json}").context("write the report")?;
    } else {
        write!(out, "{}", table(report)).context("write the report")?;
    }
    Ok(())
}
