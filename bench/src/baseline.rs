//! Baseline tools, run in the same session as the benchmark they anchor: `iperf3` for loopback
//! TCP. A tool that is absent is installed with the system's package manager when we are root;
//! when that is impossible the benchmark says why and prints no ratio.

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

/// Makes sure `iperf3` is on the PATH, installing the Debian package if we can.
pub fn ensure_iperf3(progress: &mut dyn FnMut(&str)) -> Result<String, BenchError> {
    if let Some(version) = version_of("iperf3") {
        return Ok(version);
    }
    install_package(
        "iperf3",
        "the loopback TCP baseline",
        "install iperf3 and run again",
        progress,
    )?;
    version_of("iperf3").ok_or_else(|| BenchError::tool("iperf3 was installed but does not run"))
}

/// Installs Debian package `package` with apt-get (running `apt-get update` once if the first
/// try fails: a fresh machine may have no package lists). Refuses clearly when we are not root
/// or there is no apt-get; `hint` says what the user can do instead.
pub fn install_package(
    package: &str,
    purpose: &str,
    hint: &str,
    progress: &mut dyn FnMut(&str),
) -> Result<(), BenchError> {
    if !is_root() {
        return Err(BenchError::tool(format!(
            "{package} is not installed and we are not root, so it cannot be installed here; {hint}"
        )));
    }
    if !Command::new("apt-get")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        return Err(BenchError::tool(format!(
            "{package} is not installed and there is no apt-get to install it with; {hint}"
        )));
    }
    progress(&format!(
        "{package} not found: installing it with apt-get for {purpose}"
    ));
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", package])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
    };
    if !install().is_ok_and(|s| s.success()) {
        progress(&format!(
            "apt-get install {package} failed: running apt-get update and trying again"
        ));
        let _ = Command::new("apt-get")
            .args(["update", "-q"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let status = install()
            .map_err(|e| BenchError::system(format!("run apt-get install {package}"), e))?;
        if !status.success() {
            return Err(BenchError::tool(format!(
                "apt-get install {package} failed ({status}); is the package archive reachable? {hint}"
            )));
        }
    }
    Ok(())
}

/// Whether this process runs as root (and so may install packages).
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
    let version = ensure_iperf3(progress)?;
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
