//! The baselines `iopath bench ior` measures in the same run, so its figures are ratios and
//! not absolute numbers on a shared machine:
//!
//! - **disk**: iopath's raw writer ([`crate::raw`], the journal benchmark's too,
//!   XDD-style) — as many writers as IOR has tasks, each its own file and its own buffer,
//!   the same transfer size, one request in flight each, O_DIRECT through the same io_uring
//!   engine the storage targets use, an fdatasync of every file at the end; then the same
//!   files read back. Same bytes, same directory (so the same
//!   file system) as the stack's storage.
//! - **fio**, when it is installed: the same jobs, for a second opinion on the disk.
//! - **loopback TCP** (processes mode): one stream moving the same bytes in transfer-size
//!   writes, the most the bytes could move between two processes on this machine.

use std::path::Path;
use std::time::Instant;

use iopath_stack::pattern;
use iopath_storage_server::engine::{EngineConfig, open_engine};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::phase::Progress;
use crate::error::BenchError;
use crate::fio;
use crate::raw::{RawFiles, mib_s};
use crate::writers::{Phase, Requests};

/// Largest buffer the loopback TCP baseline writes at once.
const TCP_WRITE_MAX_BYTES: u64 = 4 << 20;

/// What the disk baseline measured.
#[derive(Debug, Clone, PartialEq)]
pub struct DiskBaseline {
    /// Writes, MiB/s (to the end of the last fdatasync).
    pub write_mib_s: f64,
    /// Reads of the same files, MiB/s.
    pub read_mib_s: f64,
    /// The engine's name (`io_uring`, or `psync` where io_uring is refused).
    pub engine: String,
    /// Files written: one per writer, up to [`DISK_FILES_MAX`].
    pub files: usize,
}

/// Most files the disk baseline writes at once, each with two descriptors open (buffered and
/// O_DIRECT): past it, the writers share the files, each writing its own contiguous part, so
/// a run of 18,688 tasks stays inside a usual open-file limit. The bytes, the requests and the
/// writers stay the test's.
pub const DISK_FILES_MAX: usize = 4096;

/// Measures the raw disk in a fresh directory inside `dir` with iopath's raw writer:
/// `writers` files of `bytes_per_writer` (whole requests), `request_bytes` per call, each
/// writer from a buffer of its own filled with its task's pattern; then the same files read
/// back.
pub async fn disk(
    dir: &Path,
    writers: u32,
    bytes_per_writer: u64,
    request_bytes: u64,
    progress: Progress,
) -> Result<DiskBaseline, BenchError> {
    let failed = |e: BenchError| BenchError::Baseline {
        what: "disk",
        why: e.to_string(),
    };
    let per_writer = (bytes_per_writer / request_bytes).max(1);
    let files = (writers as usize).clamp(1, DISK_FILES_MAX);
    let requests = Requests {
        files,
        writers: writers as usize,
        request_bytes,
        // Every writer's requests, over fewer files when there are more writers than files
        // (a few requests more in all when they do not divide evenly).
        requests_per_file: (per_writer * u64::from(writers)).div_ceil(files as u64),
    };
    // The bytes are real and written for real: each task's pattern, as its IOR task writes.
    let fill = |buffer: &mut [u8], writer: usize| {
        pattern::fill(buffer, writer as u32, 0, 0);
    };
    let engine = open_engine(&EngineConfig::default());
    let raw = RawFiles::create(engine, dir, "iopath-ior-baseline-", requests, &fill)
        .await
        .map_err(failed)?;
    let phase = Phase {
        name: "raw disk",
        run: 1,
    };
    // The baselines take much of a run's time: the line moves while they write.
    let written = raw
        .write(phase, None, &|p| {
            progress.show(&format!("baseline: {}", p.line()), false);
        })
        .await
        .map_err(failed)?;
    progress.show(
        &format!(
            "baseline: raw disk wrote {} MiB at {:.0} MiB/s; reading it back",
            written.bytes >> 20,
            written.mib_s()
        ),
        true,
    );
    let read_mib_s = raw.read().await.map_err(failed)?;
    let engine = raw.engine_name();
    raw.remove().map_err(failed)?;
    Ok(DiskBaseline {
        write_mib_s: written.mib_s(),
        read_mib_s,
        engine,
        files,
    })
}

/// fio's write rate for the same jobs, when fio is installed: `(MiB/s, command)`, or why not.
pub async fn fio(
    dir: &Path,
    jobs: u32,
    bytes_per_job: u64,
    request_bytes: u64,
) -> Result<(f64, String), String> {
    let Some(version) = fio::fio_version() else {
        return Err("fio is not installed (apt-get install fio adds this second opinion)".into());
    };
    if jobs > fio::FIO_JOBS_MAX {
        return Err(format!("more tasks than fio's {} jobs", fio::FIO_JOBS_MAX));
    }
    let dir = dir.to_path_buf();
    let measured = tokio::task::spawn_blocking(move || {
        fio::fio_write(&dir, bytes_per_job, request_bytes, 1, jobs, None)
    })
    .await
    .map_err(|e| format!("fio did not finish: {e}"))?;
    match measured {
        Ok(result) => Ok((result.mib_s, format!("{version}: {}", result.command))),
        Err(e) => Err(format!("fio failed: {e:#}")),
    }
}

/// One loopback TCP stream moving `bytes` in `request_bytes` writes: MiB/s from the first
/// byte sent to the last byte received.
pub async fn loopback_tcp(bytes: u64, request_bytes: u64) -> Result<f64, BenchError> {
    let failed = |why: String| BenchError::Baseline {
        what: "loopback TCP",
        why,
    };
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .map_err(|e| failed(format!("listen: {e}")))?;
    let addr = listener
        .local_addr()
        .map_err(|e| failed(format!("listen: {e}")))?;
    let receiver = tokio::spawn(async move {
        let (mut stream, _) = listener.accept().await?;
        let mut buffer = vec![0u8; 1 << 20];
        let mut received = 0u64;
        // Bounded by the sender: it sends `bytes` and closes.
        while received < bytes {
            let n = stream.read(&mut buffer).await?;
            if n == 0 {
                break;
            }
            received += n as u64;
        }
        Ok::<u64, std::io::Error>(received)
    });
    let mut stream = tokio::net::TcpStream::connect(addr)
        .await
        .map_err(|e| failed(format!("connect: {e}")))?;
    let _ = stream.set_nodelay(true);
    let chunk = request_bytes.clamp(1, TCP_WRITE_MAX_BYTES) as usize;
    let payload = vec![0x5a_u8; chunk];
    let started = Instant::now();
    let mut sent = 0u64;
    while sent < bytes {
        let n = chunk.min((bytes - sent) as usize);
        stream
            .write_all(&payload[..n])
            .await
            .map_err(|e| failed(format!("send: {e}")))?;
        sent += n as u64;
    }
    stream
        .shutdown()
        .await
        .map_err(|e| failed(format!("close: {e}")))?;
    let received = receiver
        .await
        .map_err(|e| failed(format!("the receiver stopped: {e}")))?
        .map_err(|e| failed(format!("receive: {e}")))?;
    if received != bytes {
        return Err(failed(format!("received {received} bytes of {bytes}")));
    }
    Ok(mib_s(bytes, started.elapsed().as_secs_f64()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn baselines_measure_something() {
        let dir = tempfile::tempdir_in(".").unwrap();
        let disk = disk(dir.path(), 2, 1 << 20, 256 << 10, Progress::Silent)
            .await
            .unwrap();
        assert!(disk.write_mib_s > 0.0 && disk.read_mib_s > 0.0);
        let tcp = loopback_tcp(8 << 20, 1 << 20).await.unwrap();
        assert!(tcp > 0.0);
        // Nothing is left behind.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
    }
}
