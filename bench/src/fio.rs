//! fio as the raw-disk baseline of the journal benchmark, run in the same session: the same
//! request size, the same number of writers, one request in flight each (unless told
//! otherwise), O_DIRECT through io_uring, ending with an fsync — what the in-process raw
//! writer does, measured by a tool nobody has to take our word for.
//!
//! A missing fio is an error from [`require_fio`] saying how to install it; nothing here
//! installs it.

use std::path::Path;
use std::process::{Command, Stdio};

use crate::error::BenchError;

/// O_DIRECT needs block-aligned transfers; 4 KiB covers every common logical block size.
pub const FIO_ALIGN_BYTES: u64 = 4096;

/// Most jobs (writers) one fio run may start.
pub const FIO_JOBS_MAX: u32 = 256;

/// Deepest queue per job.
pub const FIO_IODEPTH_MAX: u32 = 1024;

/// Longest time-based run, seconds.
pub const FIO_SECONDS_MAX: u32 = 3600;

/// What one fio run measured.
#[derive(Debug, Clone, PartialEq, serde::Serialize)]
pub struct FioResult {
    /// The exact command line that was run.
    pub command: String,
    /// fio's version, as it reports it (`fio-3.33`).
    pub version: String,
    /// Write bandwidth over all jobs, MiB/s.
    pub mib_s: f64,
    /// Bytes written over all jobs.
    pub written_bytes: u64,
    /// The run's duration as fio reports it, seconds.
    pub seconds: f64,
}

/// The write side of fio's `--output-format=json` report, summed over its jobs.
#[derive(Debug, Clone, PartialEq)]
pub struct FioWrite {
    /// The `"fio version"` field.
    pub version: String,
    /// Sum of `write.io_bytes`.
    pub io_bytes: u64,
    /// Sum of `write.bw_bytes` (bytes per second).
    pub bw_bytes_s: u64,
    /// Longest `write.runtime`, milliseconds.
    pub runtime_ms: u64,
}

/// fio's version line, or an error saying how to install it (or to pass `--no-fio`).
pub fn require_fio() -> Result<String, BenchError> {
    fio_version().ok_or_else(|| {
        crate::baseline::missing("fio", "fio", "the raw-disk baseline (or pass --no-fio)")
    })
}

/// `fio --version`, if fio runs.
pub fn fio_version() -> Option<String> {
    let output = Command::new("fio").arg("--version").output().ok()?;
    if !output.status.success() {
        return None;
    }
    String::from_utf8_lossy(&output.stdout)
        .lines()
        .next()
        .map(|l| l.trim().to_owned())
        .filter(|l| !l.is_empty())
}

/// Runs fio: `numjobs` writers, each writing its own file of `job_size_bytes` sequentially in
/// `block_size_bytes` requests, `iodepth` in flight each, O_DIRECT through io_uring, then an
/// fsync. With `seconds`, fio stops after that long even if the files are not full. The files
/// live in a fresh directory inside `dir` (so on `dir`'s file system), removed afterwards.
pub fn fio_write(
    dir: &Path,
    job_size_bytes: u64,
    block_size_bytes: u64,
    iodepth: u32,
    numjobs: u32,
    seconds: Option<u32>,
) -> Result<FioResult, BenchError> {
    if block_size_bytes == 0 || !block_size_bytes.is_multiple_of(FIO_ALIGN_BYTES) {
        return Err(BenchError::refused(format!(
            "fio's O_DIRECT baseline needs a block size that is a multiple of {FIO_ALIGN_BYTES} bytes, not {block_size_bytes}"
        )));
    }
    if job_size_bytes < block_size_bytes {
        return Err(BenchError::refused(format!(
            "fio job size {job_size_bytes} bytes is smaller than one {block_size_bytes}-byte block"
        )));
    }
    if !(1..=FIO_JOBS_MAX).contains(&numjobs) {
        return Err(BenchError::refused(format!(
            "fio numjobs must be in 1..={FIO_JOBS_MAX}, not {numjobs}"
        )));
    }
    if !(1..=FIO_IODEPTH_MAX).contains(&iodepth) {
        return Err(BenchError::refused(format!(
            "fio iodepth must be in 1..={FIO_IODEPTH_MAX}, not {iodepth}"
        )));
    }
    if let Some(s) = seconds
        && !(1..=FIO_SECONDS_MAX).contains(&s)
    {
        return Err(BenchError::refused(format!(
            "fio runtime must be in 1..={FIO_SECONDS_MAX} seconds, not {s}"
        )));
    }
    // A directory of our own: whatever fio leaves behind goes with it.
    let work = iopath_stack::scratch::ScratchDir::new_in(dir, "iopath-fio-").map_err(|e| {
        BenchError::system(format!("create fio's directory in {}", dir.display()), e)
    })?;
    let mut args = vec![
        "--name=iopath-baseline".to_owned(),
        format!("--directory={}", work.path().display()),
        "--ioengine=io_uring".to_owned(),
        "--direct=1".to_owned(),
        "--rw=write".to_owned(),
        format!("--bs={block_size_bytes}"),
        // Whole blocks only: fio would otherwise round the size itself.
        format!(
            "--size={}",
            job_size_bytes / block_size_bytes * block_size_bytes
        ),
        format!("--iodepth={iodepth}"),
        format!("--numjobs={numjobs}"),
        "--group_reporting".to_owned(),
        // Durable at the end, like the in-process baseline's fdatasync of every file.
        "--end_fsync=1".to_owned(),
        // Extending writes into fresh files, like the in-process writer (which does not
        // preallocate): otherwise fio would measure overwrites of preallocated blocks.
        "--fallocate=none".to_owned(),
        "--unlink=1".to_owned(),
        "--output-format=json".to_owned(),
    ];
    if let Some(s) = seconds {
        args.push(format!("--runtime={s}"));
    }
    let command = format!("fio {}", args.join(" "));
    let mut fio = Command::new("fio");
    fio.args(&args).stdin(Stdio::null());
    ends_with_this_process(&mut fio);
    let output = fio.output().map_err(|e| {
        BenchError::system(
            "run fio (is it installed? scripts/install-tools installs it)",
            e,
        )
    })?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    if !output.status.success() {
        let stderr = String::from_utf8_lossy(&output.stderr);
        return Err(BenchError::tool(format!(
            "`{command}` failed ({}): {}",
            output.status,
            first_lines(&format!("{stderr}\n{stdout}"), 6)
        )));
    }
    let write = parse_fio_json(&stdout)
        .map_err(|e| BenchError::step(format!("read the JSON report of `{command}`"), e))?;
    work.close().map_err(|e| {
        BenchError::system(format!("remove fio's directory in {}", dir.display()), e)
    })?;
    Ok(FioResult {
        command,
        version: write.version,
        mib_s: write.bw_bytes_s as f64 / (1u64 << 20) as f64,
        written_bytes: write.io_bytes,
        seconds: write.runtime_ms as f64 / 1000.0,
    })
}

/// Reads fio's `--output-format=json` report: the write bandwidth and bytes, summed over the
/// jobs (one entry with `--group_reporting`). Text before the JSON (fio prints some notes on
/// stdout) is skipped; a job that reports an error, or no write at all, is an error.
pub fn parse_fio_json(text: &str) -> Result<FioWrite, BenchError> {
    let start = text.find('{').ok_or_else(|| {
        BenchError::tool("fio printed no JSON report (was --output-format=json given?)")
    })?;
    let json: serde_json::Value = serde_json::from_str(&text[start..])
        .map_err(|e| BenchError::json("parse fio's JSON report", e))?;
    let version = json["fio version"]
        .as_str()
        .ok_or_else(|| BenchError::tool("fio's JSON report has no \"fio version\""))?
        .to_owned();
    let jobs = json["jobs"]
        .as_array()
        .ok_or_else(|| BenchError::tool("fio's JSON report has no \"jobs\" array"))?;
    if jobs.is_empty() {
        return Err(BenchError::tool("fio's JSON report lists no jobs"));
    }
    let mut write = FioWrite {
        version,
        io_bytes: 0,
        bw_bytes_s: 0,
        runtime_ms: 0,
    };
    for job in jobs {
        let name = job["jobname"].as_str().unwrap_or("?");
        let error = job["error"]
            .as_i64()
            .ok_or_else(|| BenchError::tool(format!("fio job {name} has no \"error\" field")))?;
        if error != 0 {
            return Err(BenchError::tool(format!(
                "fio job {name} failed with error {error}"
            )));
        }
        let field = |key: &str| {
            job["write"][key]
                .as_u64()
                .ok_or_else(|| BenchError::tool(format!("fio job {name} has no write.{key}")))
        };
        write.io_bytes += field("io_bytes")?;
        write.bw_bytes_s += field("bw_bytes")?;
        write.runtime_ms = write.runtime_ms.max(field("runtime")?);
    }
    if write.io_bytes == 0 || write.bw_bytes_s == 0 {
        return Err(BenchError::tool("fio reports no bytes written"));
    }
    Ok(write)
}

fn first_lines(text: &str, count: usize) -> String {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .take(count)
        .collect::<Vec<_>>()
        .join(" | ")
}

/// Arranges that `command`'s process is killed when the thread that starts it ends — at the
/// latest when this process does, however it ends (a signal that ends a benchmark must not
/// leave fio writing gigabytes into a directory that is being removed). The thread waits for
/// the command to end, so it never ends first otherwise.
pub(crate) fn ends_with_this_process(command: &mut Command) {
    use std::os::unix::process::CommandExt as _;
    // SAFETY: between fork and exec the closure only calls prctl(2), which is
    // async-signal-safe, and allocates nothing.
    unsafe {
        command.pre_exec(|| {
            if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL) == -1 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
}
