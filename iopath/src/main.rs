//! `iopath`: run emulated HPC I/O stacks, their benchmarks, and the tools to inspect them.
//!
//! The commands live in [`cmd`], one file per family; this file starts the log, runs the
//! command on a runtime it ends without waiting for stragglers, ends the command on SIGINT or
//! SIGTERM with its temporary directories removed, and says what failed, on one line.

mod cmd;
mod signals;

use clap::Parser;

fn main() -> std::process::ExitCode {
    // Lustre's `lfs find -type f` is `--type f` to the parser.
    let cli =
        match cmd::Cli::try_parse_from(cmd::lfs::lustre_spellings(std::env::args_os().collect())) {
            Ok(cli) => cli,
            Err(error) => return parse_error(&error),
        };
    if let Err(error) = start_log() {
        eprintln!("iopath: error: {error}");
        return std::process::ExitCode::from(2);
    }
    iopath_stack::runtime::open_files::raise_open_file_limit();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(error) => {
            eprintln!("iopath: error: start the async runtime: {error}");
            return std::process::ExitCode::FAILURE;
        }
    };
    let handling = cli.signal_handling();
    let ended = runtime.block_on(signals::run_until_signal(cmd::run(cli), handling));
    // Whatever still runs on a blocking thread is left, not waited for: a read of a terminal's
    // standard input (`iopath up` watches it) ends only at Enter, and a command that has
    // returned has nothing more to wait for.
    runtime.shutdown_timeout(signals::STRAGGLERS_WAIT);
    match ended {
        signals::Ended::Returned(result) => exit_code(result),
        signals::Ended::Signal(signal) => signals::end_on(signal),
    }
}

/// What clap's answer to the command line ends with: `--help` and `--version` written to
/// standard output — a write that fails ends the run as any result's does (141 for a reader
/// gone, 1 with the reason otherwise), where clap would exit 0 — and a usage error as clap
/// says it.
fn parse_error(error: &clap::Error) -> std::process::ExitCode {
    use std::io::Write as _;
    if error.use_stderr() || std::io::IsTerminal::is_terminal(&std::io::stdout()) {
        // A usage error, on standard error with clap's status (2); or help for a person, in
        // clap's colours.
        let _ = error.print();
        return std::process::ExitCode::from(u8::try_from(error.exit_code()).unwrap_or(2));
    }
    let text = error.render().to_string();
    let mut stdout = std::io::stdout().lock();
    match stdout
        .write_all(text.as_bytes())
        .and_then(|()| stdout.flush())
    {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => exit_code(Err(anyhow::Error::new(e).context("write the help"))),
    }
}

/// The exit status for what the command returned, and its error said on standard error.
fn exit_code(result: anyhow::Result<()>) -> std::process::ExitCode {
    match result {
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

/// The log: IOPATH_LOG, else RUST_LOG as Rust programs' users expect, else warnings. A filter
/// that does not parse, or a bare word that is not a level, is an error rather than a log
/// that silently shows something else.
fn start_log() -> Result<(), String> {
    use std::io::IsTerminal as _;
    let (name, value) = match std::env::var("IOPATH_LOG") {
        Ok(value) => ("IOPATH_LOG", Some(value)),
        Err(_) => ("RUST_LOG", std::env::var("RUST_LOG").ok()),
    };
    let filter = match &value {
        Some(value) => log_filter(value).map_err(|why| format!("{name}={value:?}: {why}"))?,
        None => "warn".into(),
    };
    // The walkthrough's steps are spans (docs/walkthrough.md): a filter that names their
    // target shows each as it opens. Other spans stay silent, as they always were.
    let steps = value
        .as_deref()
        .is_some_and(|v| v.contains(WALKTHROUGH_TARGET));
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_span_events(if steps {
            tracing_subscriber::fmt::format::FmtSpan::NEW
        } else {
            tracing_subscriber::fmt::format::FmtSpan::NONE
        })
        .with_writer(std::io::stderr)
        // Colour only for a person at a terminal: a log written to a file or a pipe is read
        // by grep and editors, where escape codes are noise.
        .with_ansi(std::io::stderr().is_terminal())
        .init();
    Ok(())
}

/// The target of the spans the walkthrough's steps open (`IOPATH_LOG=walkthrough=trace`).
const WALKTHROUGH_TARGET: &str = "walkthrough";

/// The levels a bare word in a log filter may be.
const LOG_LEVELS: [&str; 6] = ["off", "error", "warn", "info", "debug", "trace"];

/// A log filter from its text: tracing's syntax (`info`, `iopath_fabric=debug,warn`), where a
/// bare word must be a level or one of iopath's own crates or modules (`iopath_fabric`); any
/// other bare word is far likelier a misspelt level than a target.
fn log_filter(text: &str) -> Result<tracing_subscriber::EnvFilter, String> {
    for directive in text.split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let bare = !directive.contains(['=', '[', '{']);
        let word = directive.to_ascii_lowercase();
        if bare && !LOG_LEVELS.contains(&word.as_str()) && !word.starts_with("iopath") {
            return Err(format!(
                "{directive:?} is not a level ({}) nor TARGET=LEVEL",
                LOG_LEVELS.join(", ")
            ));
        }
    }
    tracing_subscriber::EnvFilter::builder()
        .parse(text)
        .map_err(|e| e.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_log_filter_takes_levels_and_targets_and_refuses_misspelt_levels() {
        for good in [
            "info",
            "WARN",
            "iopath_fabric=debug,info",
            "iopath_stack",
            "off",
        ] {
            assert!(log_filter(good).is_ok(), "{good}");
        }
        for bad in ["verbose", "debgu", "info,foo=loud"] {
            assert!(log_filter(bad).is_err(), "{bad}");
        }
    }
}
