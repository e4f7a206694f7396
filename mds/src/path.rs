//! Namespace paths, parsed once at the edge into components.

use std::fmt;

use crate::error::{MdsError, Result};
use crate::limits::{NAME_LEN_MAX_BYTES, PATH_DEPTH_MAX, PATH_LEN_MAX_BYTES};

/// How much of a refused path an error message quotes.
const QUOTED_BYTES_MAX: usize = 128;

/// An absolute path: `/` and then names separated by `/`. No empty components (so no `//` and
/// no trailing `/`), no `.` or `..`, no NUL bytes, at most [`PATH_LEN_MAX_BYTES`] long, names
/// at most [`NAME_LEN_MAX_BYTES`], at most [`PATH_DEPTH_MAX`] components.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct MdsPath {
    components: Vec<String>,
}

impl MdsPath {
    /// The root directory, `/`.
    pub fn root() -> MdsPath {
        MdsPath {
            components: Vec::new(),
        }
    }

    /// Parses `text`, refusing anything that is not a path the namespace can hold.
    pub fn parse(text: &str) -> Result<MdsPath> {
        // Length first, so nothing below works on an unbounded string.
        if text.len() > PATH_LEN_MAX_BYTES {
            return Err(MdsError::NameTooLong {
                path: quote(text),
                what: "path length in bytes",
                actual: text.len(),
                max: PATH_LEN_MAX_BYTES,
            });
        }
        let invalid = |why| MdsError::InvalidPath {
            path: quote(text),
            why,
        };
        let Some(rest) = text.strip_prefix('/') else {
            return Err(invalid(if text.is_empty() {
                "the path is empty"
            } else {
                "the path is not absolute (it must start with '/')"
            }));
        };
        if rest.is_empty() {
            return Ok(MdsPath::root());
        }
        let mut components = Vec::new();
        for name in rest.split('/') {
            if components.len() == PATH_DEPTH_MAX {
                return Err(MdsError::NameTooLong {
                    path: quote(text),
                    what: "number of components",
                    actual: rest.split('/').count(),
                    max: PATH_DEPTH_MAX,
                });
            }
            check_name(name).map_err(|e| match e {
                NameDefect::Invalid(why) => invalid(why),
                NameDefect::TooLong(actual) => MdsError::NameTooLong {
                    path: quote(text),
                    what: "a component's length in bytes",
                    actual,
                    max: NAME_LEN_MAX_BYTES,
                },
            })?;
            components.push(name.to_owned());
        }
        Ok(MdsPath { components })
    }

    /// Parses the path of an entry about to be made (created, made a directory, renamed to):
    /// as [`MdsPath::parse`], and its last name may not contain a control character. A
    /// newline or a tab in a name would make every listing of it lie (`lfs ls` would print
    /// one entry as two). Names already in the namespace stay reachable: lookups, removal and
    /// renaming *from* them parse as before.
    pub fn parse_new(text: &str) -> Result<MdsPath> {
        let path = MdsPath::parse(text)?;
        if let Some(name) = path.components.last()
            && let Some(c) = name.chars().find(|c| c.is_control())
        {
            return Err(MdsError::InvalidPath {
                path: quote(text),
                why: match c {
                    '\n' => "a new name cannot contain a newline (listings would show two names)",
                    '\t' => "a new name cannot contain a tab (a control character)",
                    _ => "a new name cannot contain a control character",
                },
            });
        }
        Ok(path)
    }

    /// Its names, root first; empty for the root.
    pub fn components(&self) -> &[String] {
        &self.components
    }

    /// Whether it is `/`.
    pub fn is_root(&self) -> bool {
        self.components.is_empty()
    }

    /// The parent directory and the last name, or `None` for the root.
    pub fn split_last(&self) -> Option<(MdsPath, &str)> {
        let (last, parent) = self.components.split_last()?;
        Some((
            MdsPath {
                components: parent.to_vec(),
            },
            last.as_str(),
        ))
    }

    /// The path of its first `depth` components.
    pub fn prefix(&self, depth: usize) -> MdsPath {
        MdsPath {
            components: self.components[..depth.min(self.components.len())].to_vec(),
        }
    }
}

impl fmt::Display for MdsPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.components.is_empty() {
            return f.write_str("/");
        }
        for name in &self.components {
            write!(f, "/{name}")?;
        }
        Ok(())
    }
}

/// Why a name is not one.
pub(crate) enum NameDefect {
    /// Not a name at all.
    Invalid(&'static str),
    /// Longer than [`NAME_LEN_MAX_BYTES`] (its length).
    TooLong(usize),
}

/// Checks one directory entry name; used by the parser and again on every name replayed
/// from the log or a snapshot.
pub(crate) fn check_name(name: &str) -> Result<(), NameDefect> {
    match name {
        "" => Err(NameDefect::Invalid(
            "it has an empty component ('//' or a trailing '/')",
        )),
        "." | ".." => Err(NameDefect::Invalid("'.' and '..' are not allowed")),
        _ if name.len() > NAME_LEN_MAX_BYTES => Err(NameDefect::TooLong(name.len())),
        _ if name.contains('\0') => Err(NameDefect::Invalid("it contains a NUL byte")),
        _ if name.contains('/') => Err(NameDefect::Invalid("a name cannot contain '/'")),
        _ => Ok(()),
    }
}

/// The first bytes of `text`, cut at a character boundary, for an error message.
fn quote(text: &str) -> String {
    if text.len() <= QUOTED_BYTES_MAX {
        return text.to_owned();
    }
    let mut end = QUOTED_BYTES_MAX;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}
