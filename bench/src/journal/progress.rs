//! The progress line on stderr, as a pure state machine: events in, what to show out (drawn
//! by [`crate::status_line::StatusLine`]).

use crate::writers::BenchProgress;

/// What the benchmark tells its progress line.
#[derive(Debug, Clone, Copy)]
pub enum ProgressEvent<'a> {
    /// A step worth a line of its own (where it runs, fio starting, sizing).
    Note(&'a str),
    /// A phase's progress: about twice a second, and once at its end.
    Phase(&'a BenchProgress),
}

/// What the progress line shows for an event.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Shown {
    /// This text in place of the line's (a terminal only).
    InPlace(String),
    /// This text as a line of its own, kept.
    Kept(String),
}

/// The progress line on stderr, as a pure state machine: events in, what to show out. On a
/// terminal one line is rewritten in place; elsewhere (a log, CI) each phase gets one line,
/// when it ends, so logs stay short.
#[derive(Debug)]
pub struct ProgressLine {
    terminal: bool,
    /// The last phase and run given a line (non-terminal mode).
    last_printed: Option<(String, u32)>,
}

impl ProgressLine {
    /// A progress line for a terminal (`terminal`) or for a log.
    pub fn new(terminal: bool) -> ProgressLine {
        ProgressLine {
            terminal,
            last_printed: None,
        }
    }

    /// What to show for `event`, if anything.
    pub fn render(&mut self, event: ProgressEvent<'_>) -> Option<Shown> {
        match event {
            ProgressEvent::Note(text) => Some(Shown::Kept(text.to_owned())),
            ProgressEvent::Phase(p) if self.terminal => Some(Shown::InPlace(p.line())),
            ProgressEvent::Phase(p) => {
                let key = (p.phase.clone(), p.run);
                if p.bytes_done < p.bytes_total || self.last_printed.as_ref() == Some(&key) {
                    return None;
                }
                self.last_printed = Some(key);
                Some(Shown::Kept(p.line()))
            }
        }
    }
}
