//! [`StatusLine`]: the one line of progress a benchmark shows on standard error, drawn by
//! indicatif — rewritten in place on a terminal (at most a few times a second), and hidden
//! elsewhere (a log, CI), where only the lines meant to be kept are written, one each.

use std::sync::{Mutex, PoisonError};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A progress line on standard error.
#[derive(Debug, Default)]
pub struct StatusLine {
    /// The line being drawn in place, if one is.
    drawn: Mutex<Option<ProgressBar>>,
}

impl StatusLine {
    /// A line on standard error: drawn in place if it is a terminal.
    pub fn new() -> StatusLine {
        StatusLine::default()
    }

    /// Shows `text` in place of what the line showed; nothing off a terminal.
    pub fn set(&self, text: &str) {
        let mut drawn = self.drawn.lock().unwrap_or_else(PoisonError::into_inner);
        let bar = drawn.get_or_insert_with(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{wide_msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        bar.set_message(text.to_owned());
    }

    /// Clears the line and writes `text` as a line of its own, kept, on a terminal or not.
    pub fn keep(&self, text: &str) {
        self.clear();
        eprintln!("{text}");
    }

    /// Clears the line, leaving the terminal as it was before the line was drawn.
    pub fn clear(&self) {
        if let Some(bar) = self
            .drawn
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .take()
        {
            bar.finish_and_clear();
        }
    }
}

impl Drop for StatusLine {
    fn drop(&mut self) {
        self.clear();
    }
}
