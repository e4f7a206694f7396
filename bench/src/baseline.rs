//! Baseline tools, run in the same session as the benchmark they anchor: `iperf3` for loopback
//! TCP. A library installs nothing: a tool that is absent is an error naming it, what it was
//! for and how to install it (`scripts/install-tools`, which `scripts/test` runs, installs every
//! tool a benchmark or test uses).

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use crate::error::BenchError;

/// A baseline measurement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct Baseline {
    /// What was run, as a command line.
    pub command: String,
    /// The tool's version line.
    pub version: String,
    /// The rate it measured.
    pub mib_s: f64,
}

/// `iperf3`'s version line, or an error saying how to install it.
pub fn require_iperf3() -> Result<String, BenchError> {
    version_of("iperf3").ok_or_else(|| missing("iperf3", "iperf3", "the loopback TCP baseline"))
}

/// The error for a tool `tool` (Debian package `package`) that is not installed: what needed
/// it and how to install it.
pub fn missing(tool: &str, package: &str, purpose: &str) -> BenchError {
    BenchError::tool(format!(
        "{tool} is not installed, and {purpose} needs it: install it with scripts/install-tools \
         (or apt-get install {package}) and run again"
    ))
}

/// Whether this process runs as root.
pub fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self").is_ok_and(|m| m.uid() == 0)
}

fn version_of(tool: &str) -> Option<String> {
    let output = Command::new(tool).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .next()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
}

/// Measures single-stream loopback TCP with iperf3's defaults for `seconds`. A failed run
/// (a port taken between our pick and iperf3's bind, a server that lost its one test) is tried
/// again with a fresh server on a fresh port, up to three times; the last error is reported.
pub fn iperf3_loopback(
    seconds: u32,
    progress: &mut dyn FnMut(&str),
) -> Result<Baseline, BenchError> {
    let version = require_iperf3()?;
    let mut last_error = None;
    for _ in 0..3 {
        match iperf3_once(seconds, &version, progress) {
            Ok(baseline) => return Ok(baseline),
            Err(e) => {
                progress(&format!("baseline attempt failed, trying again: {e}"));
                last_error = Some(e);
            }
        }
    }
    Err(last_error.expect("three attempts were made"))
}

fn iperf3_once(
    seconds: u32,
    version: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<Baseline, BenchError> {
    let port = TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .map_err(|e| BenchError::system("pick a port for iperf3", e))?
        .port()
        .to_string();
    let mut server = Command::new("iperf3");
    server.args(["-s", "-1", "-B", "127.0.0.1", "-p", &port]);
    let seconds_arg = seconds.to_string();
    let args = ["-c", "127.0.0.1", "-p", &port, "-t", &seconds_arg, "-J"];
    progress(&format!(
        "baseline: iperf3 {} ({seconds} s)",
        args.join(" ")
    ));
    let output = iperf3_pair(server, || {
        let mut client = Command::new("iperf3");
        client.args(args);
        client
    })?;
    Ok(Baseline {
        command: format!("iperf3 {}", args.join(" ")),
        version: version.to_owned(),
        mib_s: iperf3_received_mib_s(&output)?,
    })
}

/// Runs an iperf3 test: starts `server` (an `iperf3 -s -1 ...`), runs the client `client`
/// makes, and stops the server. The server takes a moment to listen, and probing it with a
/// connection of our own would use up its one test (`-1`), so the client itself is retried
/// while it cannot connect, a bounded number of times.
pub(crate) fn iperf3_pair(
    mut server: Command,
    client: impl Fn() -> Command,
) -> Result<std::process::Output, BenchError> {
    let mut server = server
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|e| BenchError::system("start iperf3 -s", e))?;
    let run = || {
        client()
            .output()
            .map_err(|e| BenchError::system("run iperf3 -c", e))
    };
    let mut output = run();
    for _ in 0..IPERF3_CONNECT_TRIES {
        // Said on standard output (-J) whatever the exit status.
        let refused = output
            .as_ref()
            .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).contains("unable to connect"));
        if !refused {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        output = run();
    }
    let _ = server.kill();
    let _ = server.wait();
    output
}

/// How often an iperf3 client is tried while its server is not listening yet (100 ms apart).
const IPERF3_CONNECT_TRIES: u32 = 50;

/// What an `iperf3 -c ... -J` run received, MiB/s, from its JSON; its error if it failed.
pub(crate) fn iperf3_received_mib_s(output: &std::process::Output) -> Result<f64, BenchError> {
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).map_err(|e| {
        BenchError::json(
            format!("parse iperf3 -J output (exit {})", output.status),
            e,
        )
    })?;
    if let Some(error) = json["error"].as_str() {
        return Err(BenchError::tool(format!("iperf3 -c failed: {error}")));
    }
    let bits = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .ok_or_else(|| {
            BenchError::tool("iperf3 -J output has no end.sum_received.bits_per_second")
        })?;
    Ok(bits / 8.0 / (1 << 20) as f64)
}
