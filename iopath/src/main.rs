//! `iopath`: run emulated HPC I/O stacks, their benchmarks, and the tools to inspect them.
//!
//! The commands live in [`cmd`], one file per family; this file starts the log and says what
//! failed, on one line.

mod cmd;

use clap::Parser;

#[tokio::main]
async fn main() -> std::process::ExitCode {
    match run(cmd::Cli::parse()).await {
        Ok(()) => std::process::ExitCode::SUCCESS,
        // The reader went away (`iopath topo layout --csv | head`): nothing to say, as for
        // any Unix tool, and the status a shell gives a process SIGPIPE ended (128 + 13).
        Err(error) if is_broken_pipe(&error) => std::process::ExitCode::from(141),
        Err(error) => {
            // The chain of causes, one line: what failed and why, without a backtrace.
            let line = one_line(&error);
            eprintln!("iopath: error: {line}");
            if line.contains("Too many open files") {
                eprintln!(
                    "iopath: this run needs more open files than the limit allows: raise it (ulimit -n, or LimitNOFILE= for a service) and run again"
                );
            }
            std::process::ExitCode::FAILURE
        }
    }
}

/// Whether the error is a write to a pipe whose reader has gone.
fn is_broken_pipe(error: &anyhow::Error) -> bool {
    error.chain().any(|cause| {
        cause
            .downcast_ref::<std::io::Error>()
            .is_some_and(|e| e.kind() == std::io::ErrorKind::BrokenPipe)
    })
}

/// An error and its causes on one line, each said once: many of the libraries' messages
/// already end with their cause's own text, which the chain would otherwise repeat.
fn one_line(error: &anyhow::Error) -> String {
    let mut line = String::new();
    for cause in error.chain() {
        let text = cause.to_string();
        if line.contains(&text) {
            continue;
        }
        if !line.is_empty() {
            line.push_str(": ");
        }
        line.push_str(&text);
    }
    line
}

async fn run(cli: cmd::Cli) -> anyhow::Result<()> {
    use std::io::IsTerminal as _;
    tracing_subscriber::fmt()
        .with_env_filter(
            // IOPATH_LOG, else RUST_LOG as Rust programs' users expect, else warnings.
            tracing_subscriber::EnvFilter::try_from_env("IOPATH_LOG")
                .or_else(|_| tracing_subscriber::EnvFilter::try_from_default_env())
                .unwrap_or_else(|_| "warn".into()),
        )
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: a log written to a file or a pipe is read
        // by grep and editors, where escape codes are noise.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    iopath_stack::runtime::open_files::raise_open_file_limit();
    cmd::run(cli).await
}
