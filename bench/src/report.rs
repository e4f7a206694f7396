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
