//! Tables for people: fixed-width columns, numbers right-aligned.

use std::fmt::Write as _;

/// A table with a header row.
#[derive(Debug, Default)]
pub struct Table {
    header: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column names.
    pub fn new(header: &[&str]) -> Table {
        Table {
            header: header.iter().map(|h| (*h).to_owned()).collect(),
            rows: Vec::new(),
        }
    }

    /// Adds a row; the first column is left-aligned, the rest right-aligned.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text.
    pub fn render(&self) -> String {
        let columns = self.header.len();
        let mut widths: Vec<usize> = self.header.iter().map(String::len).collect();
        for row in &self.rows {
            for (i, cell) in row.iter().enumerate().take(columns) {
                widths[i] = widths[i].max(cell.len());
            }
        }
        let mut out = String::new();
        let line = |out: &mut String, cells: &[String]| {
            for (i, cell) in cells.iter().enumerate().take(columns) {
                if i == 0 {
                    let _ = write!(out, "{cell:<w$}", w = widths[0]);
                } else {
                    let _ = write!(out, "  {cell:>w$}", w = widths[i]);
                }
            }
            out.push('\n');
        };
        line(&mut out, &self.header);
        for row in &self.rows {
            line(&mut out, row);
        }
        out
    }
}

/// A rate with sensible precision.
pub fn rate(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}")
    } else {
        format!("{value:.2}")
    }
}

/// A size as a person reads it: in the largest binary unit it is a whole number of (`4 KiB`,
/// `1 MiB`, `1536 B`).
pub fn size_text(bytes: u64) -> String {
    const UNITS: [(u64, &str); 3] = [(1 << 30, "GiB"), (1 << 20, "MiB"), (1 << 10, "KiB")];
    UNITS
        .iter()
        .find(|&&(unit, _)| bytes >= unit && bytes.is_multiple_of(unit))
        .map_or_else(
            || format!("{bytes} B"),
            |&(unit, name)| format!("{} {name}", bytes / unit),
        )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_read_in_the_largest_whole_unit() {
        assert_eq!(size_text(4096), "4 KiB");
        assert_eq!(size_text(1 << 20), "1 MiB");
        assert_eq!(size_text(3 << 20), "3 MiB");
        assert_eq!(size_text(1536), "1536 B");
        assert_eq!(size_text(2 << 30), "2 GiB");
        assert_eq!(size_text(0), "0 B");
    }
}
