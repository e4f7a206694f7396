//! [`StackError`], the crate's one error type: what went wrong, in a sentence that names the
//! stack file's field, the node, or the step that failed.

use std::path::PathBuf;

/// Everything that can go wrong reading a stack, running it, or demonstrating it.
#[derive(Debug, thiserror::Error)]
pub enum StackError {
    /// The stack file is not valid TOML, or a field has the wrong type or an unknown name.
    #[error("{origin}: {detail}")]
    Parse {
        /// The file (or preset) being read.
        origin: String,
        /// The TOML parser's account, with the line and the field.
        detail: String,
    },
    /// The stack file parses but says something impossible; `field` names where.
    #[error("{origin}: {field}: {why}")]
    Invalid {
        /// The file (or preset) being read.
        origin: String,
        /// The offending field, as a path: `nodes[3] (oss1).targets`.
        field: String,
        /// What is wrong with it.
        why: String,
    },
    /// No preset has this name.
    #[error("no preset named {name:?} (presets: {known})")]
    UnknownPreset {
        /// The name asked for.
        name: String,
        /// The presets there are.
        known: String,
    },
    /// A stack file could not be read or written.
    #[error("{what} {path}: {source}")]
    File {
        /// What was being done: "read the stack file", "write the resolved stack file".
        what: &'static str,
        /// Which file.
        path: PathBuf,
        /// Why not.
        source: std::io::Error,
    },
    /// A node of the stack would not start.
    #[error("start {node} ({role}): {why}")]
    Start {
        /// The node's name in the stack file.
        node: String,
        /// Its role.
        role: &'static str,
        /// Why not.
        why: String,
    },
    /// A node process misbehaved (did not start, said something unexpected, died).
    #[error("node process {node}: {why}")]
    Process {
        /// The node's name.
        node: String,
        /// What happened.
        why: String,
    },
    /// A demo or node option is out of range.
    #[error("{option}: {why}")]
    BadOption {
        /// The option, as typed: `-t`, `--size`.
        option: String,
        /// What is wrong.
        why: String,
    },
    /// An I/O through the emulated path failed.
    #[error("{what}: {why}")]
    Io {
        /// What was being done: "write /demo/striped at 1048576".
        what: String,
        /// The client library's or the fabric's account.
        why: String,
    },
    /// Data read back is not what was written.
    #[error("verification failed: {what}")]
    Verify {
        /// Where and how the data differs.
        what: String,
    },
    /// The local system refused something (a temporary directory, a port, standard input).
    #[error("{what}: {source}")]
    System {
        /// What was being done.
        what: String,
        /// Why not.
        source: std::io::Error,
    },
}

impl StackError {
    /// An [`StackError::Invalid`] for `origin`.
    pub(crate) fn invalid(origin: &str, field: impl Into<String>, why: impl Into<String>) -> Self {
        StackError::Invalid {
            origin: origin.to_owned(),
            field: field.into(),
            why: why.into(),
        }
    }

    /// An [`StackError::Io`].
    pub(crate) fn io(what: impl Into<String>, why: impl std::fmt::Display) -> Self {
        StackError::Io {
            what: what.into(),
            why: why.to_string(),
        }
    }

    /// A [`StackError::System`].
    pub(crate) fn system(what: impl Into<String>, source: std::io::Error) -> Self {
        StackError::System {
            what: what.into(),
            source,
        }
    }
}
