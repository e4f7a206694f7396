//! Baseline tools, run in the same session as the benchmark they anchor: `iperf3` for loopback
//! TCP. A tool that is absent is installed with the system's package manager when we are root;
//! when that is impossible the benchmark says why and prints no ratio.

use std::net::TcpListener;
use std::process::{Command, Stdio};
use std::time::Duration;

use anyhow::{Context, Result, bail};

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
pub fn ensure_iperf3(progress: &mut dyn FnMut(&str)) -> Result<String> {
    if let Some(version) = version_of("iperf3") {
        return Ok(version);
    }
    progress("iperf3 not found: installing it with apt-get for the baseline");
    if !Command::new("apt-get")
        .arg("--version")
        .stdout(Stdio::null())
        .status()
        .is_ok_and(|s| s.success())
    {
        bail!(
            "iperf3 is not installed and there is no apt-get to install it with; install iperf3 and run again"
        );
    }
    let install = || {
        Command::new("apt-get")
            .args(["install", "-y", "-q", "iperf3"])
            .env("DEBIAN_FRONTEND", "noninteractive")
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status()
    };
    if !install().is_ok_and(|s| s.success()) {
        // The package lists may be missing on a fresh machine.
        let _ = Command::new("apt-get")
            .args(["update", "-q"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .status();
        let status = install().context("run apt-get install iperf3")?;
        if !status.success() {
            bail!(
                "apt-get install iperf3 failed ({status}); are we root, and is the package archive reachable?"
            );
        }
    }
    version_of("iperf3").context("iperf3 was installed but does not run")
}

fn version_of(tool: &str) -> Option<String> {
    let output = Command::new(tool).arg("--version").output().ok()?;
    let text = String::from_utf8_lossy(&output.stdout);
    text.lines()
        .next()
        .map(str::to_owned)
        .filter(|l| !l.is_empty())
}

/// Measures single-stream loopback TCP with iperf3's defaults for `seconds`.
pub fn iperf3_loopback(seconds: u32, progress: &mut dyn FnMut(&str)) -> Result<Baseline> {
    let version = ensure_iperf3(progress)?;
    let port = TcpListener::bind("127.0.0.1:0")?
        .local_addr()?
        .port()
        .to_string();
    let mut server = Command::new("iperf3")
        .args(["-s", "-1", "-B", "127.0.0.1", "-p", &port])
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .context("start iperf3 -s")?;
    let args = [
        "-c",
        "127.0.0.1",
        "-p",
        &port,
        "-t",
        &seconds.to_string(),
        "-J",
    ];
    progress(&format!(
        "baseline: iperf3 {} ({} s)",
        args.join(" "),
        seconds
    ));
    // The server takes a moment to listen. Probing it with a connection of our own would use
    // up its one test (`-1`), so the client itself is retried, a bounded number of times.
    let mut output = Command::new("iperf3")
        .args(args)
        .output()
        .context("run iperf3 -c")?;
    for _ in 0..50 {
        let refused = String::from_utf8_lossy(&output.stdout).contains("unable to connect");
        if output.status.success() || !refused {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
        output = Command::new("iperf3")
            .args(args)
            .output()
            .context("run iperf3 -c")?;
    }
    let _ = server.kill();
    let _ = server.wait();
    if !output.status.success() {
        bail!(
            "iperf3 -c failed: {}",
            String::from_utf8_lossy(&output.stdout)
                .lines()
                .take(5)
                .collect::<Vec<_>>()
                .join(" ")
        );
    }
    let json: serde_json::Value =
        serde_json::from_slice(&output.stdout).context("parse iperf3 -J output")?;
    let bits = json["end"]["sum_received"]["bits_per_second"]
        .as_f64()
        .context("iperf3 -J output has no end.sum_received.bits_per_second")?;
    Ok(Baseline {
        command: format!("iperf3 {}", args.join(" ")),
        version,
        mib_s: bits / 8.0 / (1 << 20) as f64,
    })
}
