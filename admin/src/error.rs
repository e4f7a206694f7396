//! The admin crate's one error type.

use std::net::SocketAddr;
use std::path::PathBuf;

/// Everything that can go wrong with the admin service, a call to it, or (through
/// [`AdminError::Param`]) the parameter tree it serves.
#[derive(Debug, thiserror::Error)]
pub enum AdminError {
    /// The parameter tree refused: a bad pattern or name, no match, a read-only parameter, a
    /// value too long or refused by its setter.
    #[error(transparent)]
    Param(#[from] iopath_lprocfs::ParamError),
    /// The admin service could not listen on its address.
    #[error("cannot bind the admin service to {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// The admin service's server stopped with an error, or its task was lost.
    #[error("admin service on {addr} failed: {detail}")]
    Serve {
        /// The address it was serving on.
        addr: SocketAddr,
        /// The error and its causes.
        detail: String,
    },
    /// A client could not connect to an admin service.
    #[error("cannot reach the admin service at {addr}: {detail}")]
    Connect {
        /// The address tried.
        addr: SocketAddr,
        /// The error and its causes.
        detail: String,
    },
    /// An admin service answered a call with an error.
    #[error("admin service at {addr}: {message}")]
    Remote {
        /// The service's address.
        addr: SocketAddr,
        /// The gRPC status code.
        code: tonic::Code,
        /// The service's message (the [`AdminError`] it hit, as text).
        message: String,
    },
    /// An admin secret file that could not be read, replaced or written.
    #[error("{action} the admin secret file {}: {source}", path.display())]
    SecretFile {
        /// What was being done: `read`, `create`, `write`, `replace`.
        action: &'static str,
        /// The file.
        path: PathBuf,
        /// What the operating system said.
        source: std::io::Error,
    },
    /// An admin secret file its group or others may read or write: refused, since anyone who
    /// can read it can change the stack.
    #[error(
        "the admin secret file {} has mode {mode:04o}, so other users may read it; \
         make it private with `chmod 600 {}`",
        path.display(),
        path.display()
    )]
    SecretFileShared {
        /// The file.
        path: PathBuf,
        /// Its permission bits.
        mode: u32,
    },
    /// Text that should hold an admin secret and does not.
    #[error("{origin} does not hold an admin secret: {why}")]
    BadSecret {
        /// Where the text came from: a file's path, or standard input.
        origin: String,
        /// What is wrong with it.
        why: String,
    },
    /// The operating system's random source failed, so no secret could be made.
    #[error("cannot draw an admin secret from the operating system's random source: {detail}")]
    Random {
        /// What the source said.
        detail: String,
    },
    /// A node process's first line was not a READY line ([`crate::process::Ready`]).
    #[error("{why}")]
    NotReady {
        /// What the line said, and what was wrong with it.
        why: String,
    },
}

/// An error followed by its causes, `a: b: c`: tonic's transport errors say only
/// "transport error" at the top and keep the useful part ("connection refused") below. A
/// cause that says what the text already ends with is left out: hyper wraps its "tcp connect
/// error" in another of the same words.
pub(crate) fn chain(err: &dyn std::error::Error) -> String {
    let mut text = err.to_string();
    let mut source = err.source();
    // Cause chains are short; the bound only guards against a cycle.
    for _ in 0..16 {
        let Some(cause) = source else { break };
        let said = cause.to_string();
        if !text.ends_with(&said) {
            text.push_str(": ");
            text.push_str(&said);
        }
        source = cause.source();
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An error with a message and, below it, `cause`.
    #[derive(Debug)]
    struct Wrapped(&'static str, Option<Box<Wrapped>>);

    impl std::fmt::Display for Wrapped {
        fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
            f.write_str(self.0)
        }
    }

    impl std::error::Error for Wrapped {
        fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
            self.1.as_deref().map(|e| e as _)
        }
    }

    #[test]
    fn a_cause_that_repeats_the_words_above_it_is_said_once() {
        let refused = Wrapped("Connection refused", None);
        let inner = Wrapped("tcp connect error", Some(Box::new(refused)));
        let outer = Wrapped("tcp connect error", Some(Box::new(inner)));
        let top = Wrapped("transport error", Some(Box::new(outer)));
        assert_eq!(
            chain(&top),
            "transport error: tcp connect error: Connection refused"
        );
    }
}
