//! The progress line on stderr, as a pure state machine: events in, text to write out.

use crate::writers::BenchProgress;

/// What the benchmark tells its progress line.
#[derive(Debug, Clone, Copy)]
pub enum ProgressEvent<'a> {
    /// A step worth a line of its own (where it runs, fio starting, sizing).
    Note(&'a str),
    /// A phase's progress: about twice a second, and once at its end.
    Phase(&'a BenchProgress),
}

/// The progress line on stderr, as a pure state machine: events in, text to write out. On a
/// terminal one line is rewritten in place; elsewhere (a log, CI) each phase gets one line,
/// when it ends, so logs stay short.
#[derive(Debug)]
pub struct ProgressLine {
    terminal: bool,
    /// The last phase and run given a line (non-terminal mode).
    last_printed: Option<(String, u32)>,
    /// Something is on the current terminal line.
    dirty: bool,
}

/// Clears the terminal line and returns the cursor to its start.
const CLEAR_LINE: &str = "\r\x1b[2K";

impl ProgressLine {
    /// A progress line for a terminal (`terminal`) or for a log.
    pub fn new(terminal: bool) -> ProgressLine {
        ProgressLine {
            terminal,
            last_printed: None,
            dirty: false,
        }
    }

    /// The text to write for `event`, if any.
    pub fn render(&mut self, event: ProgressEvent<'_>) -> Option<String> {
        match event {
            ProgressEvent::Note(text) if self.terminal => {
                self.dirty = false;
                Some(format!("{CLEAR_LINE}{text}\n"))
            }
            ProgressEvent::Note(text) => Some(format!("{text}\n")),
            ProgressEvent::Phase(p) if self.terminal => {
                self.dirty = true;
                Some(format!("{CLEAR_LINE}{}", p.line()))
            }
            ProgressEvent::Phase(p) => {
                let key = (p.phase.clone(), p.run);
                if p.bytes_done < p.bytes_total || self.last_printed.as_ref() == Some(&key) {
                    return None;
                }
                self.last_printed = Some(key);
                Some(format!("{}\n", p.line()))
            }
        }
    }

    /// The text that leaves the terminal clean at the end.
    pub fn finish(&mut self) -> Option<String> {
        let dirty = std::mem::replace(&mut self.dirty, false);
        (self.terminal && dirty).then(|| CLEAR_LINE.to_owned())
    }
}
