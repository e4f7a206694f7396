//! SIGINT and SIGTERM, as a command-line tool should take them: the first ends the command
//! with what it made removed, a second ends the process at once.
//!
//! Most commands know nothing of signals ([`Handling::Ends`]): [`run_until_signal`] drops the
//! command at the first one — its stack stops, its node processes are killed, its temporary
//! directories are removed as they are dropped — and [`end_on`] removes any that outlived it
//! ([`iopath_stack::scratch`]) and ends the process by the same signal, so a shell or a batch
//! script sees what happened. The commands that run until stopped and stop cleanly
//! ([`Handling::Tells`]: `up`, `launch`, `mount`, and `sim`, which finishes the seeds under
//! way) wait on [`stop_requested`], which a signal that came before they began to wait
//! completes too. `node` and `oss` ([`Handling::Own`])
//! catch the signals in the libraries they run. Either way, after the first signal a second
//! ends the process at once.

use std::future::Future;
use std::time::Duration;

use tokio::signal::unix::{SignalKind, signal};

/// How long the end of the process waits for work still running on blocking threads.
pub const STRAGGLERS_WAIT: Duration = Duration::from_millis(500);

/// How a command takes SIGINT and SIGTERM.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Handling {
    /// The first signal ends it here, its temporary directories removed.
    Ends,
    /// It waits on [`stop_requested`] and stops itself.
    Tells,
    /// The library it runs catches the signals itself.
    Own,
}

/// The first stop signal this process received, if any: set by [`run_until_signal`].
static STOP: std::sync::OnceLock<tokio::sync::watch::Sender<Option<libc::c_int>>> =
    std::sync::OnceLock::new();

fn stop_channel() -> &'static tokio::sync::watch::Sender<Option<libc::c_int>> {
    STOP.get_or_init(|| tokio::sync::watch::channel(None).0)
}

/// Waits for SIGINT or SIGTERM — one that came before this was called included — and says
/// which (`SIGINT`, `SIGTERM`).
pub async fn stop_requested() -> &'static str {
    let mut stop = stop_channel().subscribe();
    // The value is copied out at once: the channel's guard is not held across an await.
    let signal = stop.wait_for(Option::is_some).await.map(|signal| *signal);
    match signal {
        Ok(signal) => name(signal.unwrap_or(libc::SIGINT)),
        // The sender lives in a static, so the channel never closes; if it did, never stop.
        Err(_) => std::future::pending().await,
    }
}

/// How a command ended.
#[derive(Debug)]
pub enum Ended {
    /// It returned.
    Returned(anyhow::Result<()>),
    /// A signal ended it: SIGINT or SIGTERM.
    Signal(libc::c_int),
}

/// Runs `command` until it returns or, if its `handling` is [`Handling::Ends`], until SIGINT
/// or SIGTERM.
pub async fn run_until_signal(
    command: impl Future<Output = anyhow::Result<()>>,
    handling: Handling,
) -> Ended {
    if handling == Handling::Own {
        return Ended::Returned(command.await);
    }
    let (mut interrupt, mut terminate) = match (
        signal(SignalKind::interrupt()),
        signal(SignalKind::terminate()),
    ) {
        (Ok(i), Ok(t)) => (i, t),
        // No signal handling (no such facility): the default actions stay.
        _ => return Ended::Returned(command.await),
    };
    if handling == Handling::Tells {
        // The command waits on `stop_requested` and stops; a second signal must not wait for
        // it.
        tokio::spawn(async move {
            let signal = tokio::select! {
                _ = interrupt.recv() => libc::SIGINT,
                _ = terminate.recv() => libc::SIGTERM,
            };
            restore_default_actions();
            stop_channel().send_replace(Some(signal));
        });
        return Ended::Returned(command.await);
    }
    tokio::pin!(command);
    let signal = tokio::select! {
        // A command that has finished is not interrupted.
        biased;
        result = &mut command => return Ended::Returned(result),
        _ = interrupt.recv() => libc::SIGINT,
        _ = terminate.recv() => libc::SIGTERM,
    };
    // From here a second signal ends the process at once, leaving what is left.
    restore_default_actions();
    eprintln!(
        "iopath: {}: stopping and removing the temporary directories (again to end at once, leaving them)",
        name(signal)
    );
    Ended::Signal(signal)
    // `command` is dropped here: the stack stops, node processes are killed, temporary
    // directories are removed.
}

/// Ends the process on `signal` once its temporary directories are gone: any left by work the
/// command could not drop, or removed while a killed node process was still writing, are
/// removed now.
pub fn end_on(signal: libc::c_int) -> std::process::ExitCode {
    for (path, error) in iopath_stack::scratch::remove_left() {
        eprintln!("iopath: could not remove {}: {error}", path.display());
    }
    let _ = std::io::Write::flush(&mut std::io::stdout());
    // SAFETY: restoring the default action and raising the signal touch no memory of ours.
    unsafe {
        libc::signal(signal, libc::SIG_DFL);
        libc::raise(signal);
    }
    // Not reached where the signal's default action ends the process; the shell's status
    // for it otherwise.
    std::process::ExitCode::from(128 + signal as u8)
}

/// SIGINT and SIGTERM end the process again, as before any handler was installed.
fn restore_default_actions() {
    // SAFETY: setting a signal's action to the default has no memory effects.
    unsafe {
        libc::signal(libc::SIGINT, libc::SIG_DFL);
        libc::signal(libc::SIGTERM, libc::SIG_DFL);
    }
}

fn name(signal: libc::c_int) -> &'static str {
    match signal {
        libc::SIGINT => "SIGINT",
        libc::SIGTERM => "SIGTERM",
        _ => "signal",
    }
}
