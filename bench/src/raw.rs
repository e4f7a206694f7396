//! iopath's raw-disk writer: the disk baseline of every benchmark (XDD-style, as the Spider
//! paper's block-level figures were taken), and the calibration that sizes timed runs.
//!
//! Writers keep one request in flight each ([`crate::writers`]), each from an aligned buffer
//! of its own — filled once before the clock starts and written at every offset, as an IOR
//! task or a fio job does — through the same disk engine the storage targets use, O_DIRECT
//! where the request is aligned. Each writer ends with an fdatasync of every file it wrote,
//! as fio's `end_fsync` does, and the time runs to the end of the last one: every figure is
//! bytes made durable per second. The files can then be read back the same way.
//!
//! Whether a write really bypassed the page cache is counted, not assumed: an unaligned
//! request size, or a file system without O_DIRECT, sends it through the cache.

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use bytes::Bytes;
use iopath_storage_server::engine::aligned::AlignedBuf;
use iopath_storage_server::engine::{DiskEngine, EngineFile, FileRole, OpenMode, SyncKind};
use tokio::task::JoinSet;
use tokio::time::Instant;

use crate::error::BenchError;
use crate::writers::{self, BenchProgress, Phase, Requests};

/// Files written by the raw writer, in a directory of their own, and the writers' buffers.
#[derive(Debug)]
pub struct RawFiles {
    engine: Arc<dyn DiskEngine>,
    requests: Requests,
    dir: iopath_stack::scratch::ScratchDir,
    files: Vec<Arc<EngineFile>>,
    /// One buffer per writer, `request_bytes` long.
    buffers: Vec<Bytes>,
}

/// What one write pass measured.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RawWrite {
    /// Bytes written (fewer than the requests' total when a time limit stopped the writers).
    pub bytes: u64,
    /// From the first write to the end of the last fdatasync.
    pub seconds: f64,
    /// Write calls made.
    pub writes: u64,
    /// Of those, the ones that went O_DIRECT.
    pub direct_writes: u64,
}

impl RawWrite {
    /// The rate, MiB/s.
    pub fn mib_s(&self) -> f64 {
        mib_s(self.bytes, self.seconds)
    }

    /// How the writes reached the disk, in words: `O_DIRECT`, `through the page cache`, or
    /// `O_DIRECT for 3 of 4 writes`.
    pub fn how(&self) -> String {
        if self.direct_writes == self.writes {
            "O_DIRECT".to_owned()
        } else if self.direct_writes == 0 {
            "through the page cache".to_owned()
        } else {
            format!(
                "O_DIRECT for {} of {} writes",
                self.direct_writes, self.writes
            )
        }
    }
}

/// MiB/s of `bytes` in `seconds`.
pub fn mib_s(bytes: u64, seconds: f64) -> f64 {
    bytes as f64 / (1u64 << 20) as f64 / seconds.max(1e-9)
}

impl RawFiles {
    /// Creates `requests.files` empty files in a fresh directory named `prefix*` inside
    /// `parent` (so on `parent`'s file system), and a buffer per writer filled by
    /// `fill(buffer, writer)`.
    pub async fn create(
        engine: Arc<dyn DiskEngine>,
        parent: &Path,
        prefix: &str,
        requests: Requests,
        fill: &dyn Fn(&mut [u8], usize),
    ) -> Result<RawFiles, BenchError> {
        let request_bytes = usize::try_from(requests.request_bytes).map_err(|_| {
            BenchError::refused(format!(
                "a {}-byte request does not fit in memory",
                requests.request_bytes
            ))
        })?;
        let dir = iopath_stack::scratch::ScratchDir::new_in(parent, prefix).map_err(|e| {
            BenchError::system(format!("create a directory in {}", parent.display()), e)
        })?;
        let mut files = Vec::with_capacity(requests.files);
        for index in 0..requests.files {
            let path = dir.path().join(format!("raw{index}"));
            let file =
                EngineFile::open_async(path.clone(), FileRole::Data, OpenMode::CreateNew, true)
                    .await
                    .map_err(|e| BenchError::system(format!("create {}", path.display()), e))?;
            files.push(file);
        }
        // Aligned, so that every aligned request can go O_DIRECT without a copy.
        let buffers = (0..requests.writers)
            .map(|writer| {
                let mut buffer = AlignedBuf::zeroed(request_bytes);
                fill(buffer.as_mut_slice(), writer);
                buffer.into_bytes()
            })
            .collect();
        Ok(RawFiles {
            engine,
            requests,
            dir,
            files,
            buffers,
        })
    }

    /// The engine's name (`io_uring`, or `psync` where io_uring is refused).
    pub fn engine_name(&self) -> String {
        self.engine.name()
    }

    /// Writes every request (or as many as fit in `limit`), reporting `phase`'s progress.
    pub async fn write(
        &self,
        phase: Phase<'_>,
        limit: Option<Duration>,
        progress: &(dyn Fn(&BenchProgress) + Send + Sync),
    ) -> Result<RawWrite, BenchError> {
        let direct_writes = Arc::new(AtomicU64::new(0));
        let writes = Arc::new(AtomicU64::new(0));
        let write = {
            let (engine, files) = (Arc::clone(&self.engine), self.files.clone());
            let buffers = self.buffers.clone();
            let (direct_writes, writes) = (Arc::clone(&direct_writes), Arc::clone(&writes));
            move |writer: usize, file: usize, offset: u64| {
                let file = Arc::clone(&files[file]);
                let pending = engine.write_at(&file, offset, buffers[writer].clone());
                let (direct_writes, writes) = (Arc::clone(&direct_writes), Arc::clone(&writes));
                async move {
                    let done = pending.await.map_err(|e| {
                        BenchError::system(
                            format!("write {} at {offset}", file.path().display()),
                            e,
                        )
                    })?;
                    writes.fetch_add(1, Ordering::Relaxed);
                    if done.direct {
                        direct_writes.fetch_add(1, Ordering::Relaxed);
                    }
                    Ok(())
                }
            }
        };
        // Each writer makes its own files durable as soon as it is done with them.
        let finish = {
            let (engine, files) = (Arc::clone(&self.engine), self.files.clone());
            move |_writer: usize, written: Vec<usize>| {
                let (engine, files) = (Arc::clone(&engine), files.clone());
                async move {
                    for index in written {
                        let file = &files[index];
                        engine.fsync(file, SyncKind::Data).await.map_err(|e| {
                            BenchError::system(format!("fdatasync {}", file.path().display()), e)
                        })?;
                    }
                    Ok(())
                }
            }
        };
        let started = Instant::now();
        let deadline = limit.map(|limit| started + limit);
        let bytes = writers::drive(self.requests, phase, deadline, progress, write, finish).await?;
        Ok(RawWrite {
            bytes,
            seconds: started.elapsed().as_secs_f64(),
            writes: writes.load(Ordering::Relaxed),
            direct_writes: direct_writes.load(Ordering::Relaxed),
        })
    }

    /// Reads every request back, the writers' shares read by as many readers, one read in
    /// flight each: MiB/s. Every byte written must come back.
    pub async fn read(&self) -> Result<f64, BenchError> {
        let request_bytes = self.requests.request_bytes as usize;
        let started = Instant::now();
        let mut readers = JoinSet::new();
        for reader in 0..self.requests.writers {
            let (engine, files) = (Arc::clone(&self.engine), self.files.clone());
            let share = self.requests.of_writer(reader);
            readers.spawn(async move {
                let mut read = 0u64;
                for (file, offset) in share {
                    let file = &files[file];
                    let data = engine
                        .read_at(file, offset, request_bytes)
                        .await
                        .map_err(|e| {
                            BenchError::system(
                                format!("read {} at {offset}", file.path().display()),
                                e,
                            )
                        })?;
                    read += data.len() as u64;
                }
                Ok::<u64, BenchError>(read)
            });
        }
        let mut read = 0;
        while let Some(joined) = readers.join_next().await {
            read += joined.map_err(|e| BenchError::tool(format!("a reader stopped: {e}")))??;
        }
        let total = self.requests.total_bytes();
        if read != total {
            return Err(BenchError::Mismatch {
                what: format!("read back {read} bytes of {total}"),
            });
        }
        Ok(mib_s(total, started.elapsed().as_secs_f64()))
    }

    /// Removes the files and their directory.
    pub fn remove(self) -> Result<(), BenchError> {
        let RawFiles { dir, files, .. } = self;
        drop(files);
        let path = dir.path().to_path_buf();
        dir.close()
            .map_err(|e| BenchError::system(format!("remove {}", path.display()), e))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use iopath_storage_server::engine::{EngineConfig, open_engine};

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn writes_each_writer_from_its_own_buffer_reads_back_and_removes_its_files() {
        let parent = tempfile::tempdir_in(".").unwrap();
        let requests = Requests {
            files: 2,
            writers: 2,
            request_bytes: 64 << 10,
            requests_per_file: 4,
        };
        let fill = |buffer: &mut [u8], writer: usize| buffer.fill(writer as u8 + 1);
        let raw = RawFiles::create(
            open_engine(&EngineConfig::default()),
            parent.path(),
            "raw-test-",
            requests,
            &fill,
        )
        .await
        .unwrap();
        let phase = Phase {
            name: "raw",
            run: 1,
        };
        let last = std::sync::Mutex::new(None);
        let written = raw
            .write(phase, None, &|p: &BenchProgress| {
                *last.lock().unwrap() = Some(p.bytes_done)
            })
            .await
            .unwrap();
        assert_eq!(written.bytes, 512 << 10);
        assert_eq!(written.writes, 8);
        assert_eq!(
            *last.lock().unwrap(),
            Some(512 << 10),
            "the end is reported"
        );
        // Writer w wrote file w, every request from its own buffer.
        for w in 0..2u8 {
            let bytes = std::fs::read(raw.dir.path().join(format!("raw{w}"))).unwrap();
            assert_eq!(bytes.len(), 256 << 10);
            assert!(bytes.iter().all(|&b| b == w + 1), "file {w}");
        }
        assert!(raw.read().await.unwrap() > 0.0);
        raw.remove().unwrap();
        assert_eq!(std::fs::read_dir(parent.path()).unwrap().count(), 0);
    }

    #[tokio::test]
    async fn a_time_limit_stops_the_writers_and_still_makes_their_files_durable() {
        let parent = tempfile::tempdir_in(".").unwrap();
        let requests = Requests {
            files: 1,
            writers: 1,
            request_bytes: 4096,
            requests_per_file: 1 << 20,
        };
        let raw = RawFiles::create(
            open_engine(&EngineConfig::default()),
            parent.path(),
            "raw-test-",
            requests,
            &|_, _| {},
        )
        .await
        .unwrap();
        let phase = Phase {
            name: "raw",
            run: 1,
        };
        let written = raw
            .write(phase, Some(Duration::from_millis(50)), &|_| {})
            .await
            .unwrap();
        assert!(written.bytes > 0 && written.bytes < requests.total_bytes());
        let on_disk = std::fs::metadata(raw.dir.path().join("raw0"))
            .unwrap()
            .len();
        assert_eq!(on_disk, written.bytes);
        raw.remove().unwrap();
    }
}
