//! [`BenchError`], the crate's one error type: what a benchmark could not do, in a sentence
//! that names the option, the tool or the step that failed, followed by why.
//!
//! Each variant's text carries its cause's text too, so a caller that prints only the error
//! reads the whole story; one that walks [`std::error::Error::source`] (the `iopath` binary
//! does) finds each cause already said and prints it once.

use iopath_admin::AdminError;
use iopath_fabric::FabricError;
use iopath_stack::StackError;
use iopath_storage_server::StorageError;

/// Everything that can go wrong setting up, running or reporting a benchmark.
#[derive(Debug, thiserror::Error)]
pub enum BenchError {
    /// An option is out of range; `option` names it as typed (`-t`, `--size`).
    #[error("{option}: {why}")]
    BadOption {
        /// The option, as typed.
        option: String,
        /// What is wrong with its value.
        why: String,
    },
    /// Settings that cannot run, together or at all, said in one sentence that names them
    /// (`--processes needs --transport tcp: ...`).
    #[error("{why}")]
    Refused {
        /// The sentence.
        why: String,
    },
    /// A benchmark's parameters are out of range (checked before anything is written).
    #[error("invalid configuration: {reason}")]
    InvalidConfig {
        /// What is wrong.
        reason: String,
    },
    /// The fabric failed: a node, a registration, an RPC, a NID or route that does not parse.
    #[error(transparent)]
    Fabric(#[from] FabricError),
    /// A fabric node would not start.
    #[error("{what}: {source}")]
    NodeStart {
        /// Which node: "start a router".
        what: String,
        /// Why not.
        source: FabricError,
    },
    /// A storage target or disk engine failed.
    #[error(transparent)]
    Storage(#[from] StorageError),
    /// A stack could not be read, started, reached or stopped.
    #[error(transparent)]
    Stack(#[from] StackError),
    /// A run failed, and server nodes of its stack no longer answer: what is gone is the
    /// cause, said first; what the clients saw of it follows.
    #[error("{}; the clients saw: {source}", gone_sentence(gone))]
    NodesGone {
        /// The nodes that do not answer, in stack order.
        gone: Vec<iopath_stack::runtime::GoneNode>,
        /// The failure the run met.
        source: Box<BenchError>,
    },
    /// A node's admin service failed.
    #[error(transparent)]
    Admin(#[from] AdminError),
    /// The local system refused something: a file, a directory, a process, a socket.
    #[error("{what}: {source}")]
    System {
        /// What was being done: "create fio's directory in /data".
        what: String,
        /// Why not.
        source: std::io::Error,
    },
    /// A program the benchmark runs — fio, iperf3, apt-get, a node process of its own — is
    /// missing, failed, or said something unexpected.
    #[error("{what}")]
    Tool {
        /// What happened, with the program named.
        what: String,
    },
    /// JSON that does not parse or encode.
    #[error("{what}: {source}")]
    Json {
        /// Whose JSON: "parse fio's JSON report".
        what: String,
        /// The JSON library's account.
        source: serde_json::Error,
    },
    /// A reply or a piece of data is not what the protocol or the test says it must be.
    #[error("{what}")]
    Mismatch {
        /// What differs: "ping 7 answered with 8".
        what: String,
    },
    /// An I/O through the emulated path failed.
    #[error("{what}: {why}")]
    Io {
        /// What was being done: "task 3: write /ior/testFile.00000003".
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
    /// A baseline measurement failed.
    #[error("baseline {what}: {why}")]
    Baseline {
        /// Which baseline: "disk", "loopback TCP".
        what: &'static str,
        /// Why.
        why: String,
    },
    /// A step of a larger run failed: the step, then why.
    #[error("{what}: {source}")]
    Step {
        /// The step: "run the journal benchmark".
        what: String,
        /// What went wrong inside it.
        source: Box<BenchError>,
    },
}

impl BenchError {
    /// A [`BenchError::Refused`].
    pub fn refused(why: impl Into<String>) -> Self {
        BenchError::Refused { why: why.into() }
    }

    /// A [`BenchError::Io`].
    pub fn io(what: impl Into<String>, why: impl std::fmt::Display) -> Self {
        BenchError::Io {
            what: what.into(),
            why: why.to_string(),
        }
    }

    /// A [`BenchError::System`].
    pub fn system(what: impl Into<String>, source: std::io::Error) -> Self {
        BenchError::System {
            what: what.into(),
            source,
        }
    }

    /// A [`BenchError::Tool`].
    pub fn tool(what: impl Into<String>) -> Self {
        BenchError::Tool { what: what.into() }
    }

    /// A [`BenchError::Json`].
    pub(crate) fn json(what: impl Into<String>, source: serde_json::Error) -> Self {
        BenchError::Json {
            what: what.into(),
            source,
        }
    }

    /// A [`BenchError::Step`]: `error` happened while doing `what`.
    pub(crate) fn step(what: impl Into<String>, error: impl Into<BenchError>) -> Self {
        BenchError::Step {
            what: what.into(),
            source: Box::new(error.into()),
        }
    }
}

/// A benchmark that prints the flow model beside its runs cannot run without it.
impl From<crate::prediction::NotPredicted> for BenchError {
    fn from(crate::prediction::NotPredicted(why): crate::prediction::NotPredicted) -> Self {
        BenchError::refused(format!("the flow model of the run: {why}"))
    }
}

/// A NID or route that does not parse is a fabric error, said as the fabric says it.
impl From<iopath_fabric::nid::NidError> for BenchError {
    fn from(e: iopath_fabric::nid::NidError) -> Self {
        BenchError::Fabric(e.into())
    }
}

/// `oss1 is gone (its admin service at ADDR does not answer: WHY)`, or for several `rtr0,
/// oss1 and mds are gone (...)`, each address given and the first node's reason.
fn gone_sentence(gone: &[iopath_stack::runtime::GoneNode]) -> String {
    let Some(first) = gone.first() else {
        return "no node is gone".into();
    };
    let names: Vec<&str> = gone.iter().map(|g| g.name.as_str()).collect();
    match names.split_last() {
        Some((last, rest)) if !rest.is_empty() => format!(
            "{} and {last} are gone (their admin services do not answer; {} at {}: {})",
            rest.join(", "),
            first.name,
            first.addr,
            first.why
        ),
        _ => format!(
            "{} is gone (its admin service at {} does not answer: {})",
            first.name, first.addr, first.why
        ),
    }
}
