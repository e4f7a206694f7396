//! `iopath bench mount`: unmodified programs through an iopath mount, beside the same programs
//! through a plain FUSE passthrough of a directory on the same file system (bindfs) and on
//! that directory itself — all in one run, so the ratios say what the emulated path costs over
//! FUSE alone, and over the disk.
//!
//! The workloads ([`Workload`]), each the same command in every place:
//!
//! - `seq`: fio, `jobs` jobs each writing its own file sequentially in `bs` requests with
//!   O_DIRECT (no page cache on either side, so reads come from the servers' disks, not from
//!   memory), an fsync at the end, then reading it back;
//! - `rand4k`: fio, the same jobs writing then reading `small_size` each in random 4 KiB
//!   requests with O_DIRECT;
//! - `tar`: `tar -x` of an archive of a directory tree (`/usr/share/doc` by default: thousands
//!   of small files, directories, symbolic links), timed;
//! - `creates`: mdtest's file-creation phase — `create_jobs` threads each creating
//!   `create_files` empty files in a directory of its own (open with `O_CREAT|O_EXCL`, close).
//!
//! Every workload runs `runs` times in each place; the table and the ratios use the medians.

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Instant;

use iopath_client::Client;
use iopath_mount::Mount;
use iopath_stack::StackChoice;
use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::RoleName;
use serde::Serialize;

use crate::baseline::missing;
use crate::error::BenchError;
use crate::fio::require_fio;

/// The stack `iopath bench mount` measures when none is named.
pub const DEFAULT_PRESET: &str = "spider-mini";

/// Most runs of each workload.
pub const RUNS_MAX: u32 = 20;

/// Most files one creating thread makes in one run.
pub const CREATE_FILES_MAX: u32 = 1_000_000;

/// Most creating threads.
pub const CREATE_JOBS_MAX: u32 = 64;

/// One workload.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Workload {
    /// fio sequential write then read, `bs` requests, O_DIRECT.
    Seq,
    /// fio random 4 KiB write then read, O_DIRECT.
    Rand4k,
    /// `tar -x` of a tree of small files.
    Tar,
    /// mdtest-like file creates.
    Creates,
}

impl Workload {
    /// Every workload, in the order they run.
    pub const ALL: [Workload; 4] = [
        Workload::Seq,
        Workload::Rand4k,
        Workload::Tar,
        Workload::Creates,
    ];

    /// Its name on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Seq => "seq",
            Workload::Rand4k => "rand4k",
            Workload::Tar => "tar",
            Workload::Creates => "creates",
        }
    }
}

impl std::str::FromStr for Workload {
    type Err = String;

    fn from_str(text: &str) -> Result<Workload, String> {
        Workload::ALL
            .into_iter()
            .find(|w| w.name() == text)
            .ok_or_else(|| format!("{text:?} is not a workload: seq, rand4k, tar or creates"))
    }
}

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOptions {
    /// The stack (default: [`DEFAULT_PRESET`], direct-attached).
    pub choice: StackChoice,
    /// The workloads, in this order.
    pub workloads: Vec<Workload>,
    /// Runs of each workload in each place.
    pub runs: u32,
    /// fio jobs, each its own file.
    pub jobs: u32,
    /// Bytes each job writes and reads sequentially.
    pub size_bytes: u64,
    /// Bytes per sequential request.
    pub block_bytes: u64,
    /// Bytes each job writes and reads in random 4 KiB requests.
    pub small_size_bytes: u64,
    /// The tree `tar` extracts (archived once, before the runs).
    pub tar_source: PathBuf,
    /// Threads creating files.
    pub create_jobs: u32,
    /// Files each creating thread makes.
    pub create_files: u32,
    /// Where the stack's storage, the passthrough's directory and the raw runs live
    /// (default: a temporary directory in the current one).
    pub dir: Option<PathBuf>,
}

/// One figure measured in every run, and its median.
#[derive(Debug, Clone, Serialize)]
pub struct Measured {
    /// What it is, with its unit: `seq_write_mib_s`, `tar_x_s`, ...
    pub metric: String,
    /// Each run's value, in run order.
    pub runs: Vec<f64>,
    /// Their median.
    pub median: f64,
}

/// One place's figures.
#[derive(Debug, Clone, Serialize)]
pub struct Place {
    /// What it is: `iopath mount`, `bindfs passthrough`, `raw directory`.
    pub name: String,
    /// Every figure, in workload order.
    pub measured: Vec<Measured>,
}

impl Place {
    /// The median of `metric`, if measured.
    pub fn median(&self, metric: &str) -> Option<f64> {
        self.measured
            .iter()
            .find(|m| m.metric == metric)
            .map(|m| m.median)
    }
}

/// One metric's medians compared.
#[derive(Debug, Clone, Serialize)]
pub struct Ratio {
    /// The metric.
    pub metric: String,
    /// iopath's median over the passthrough's (for a time, above 1 is slower; for a rate,
    /// below 1 is slower).
    pub vs_passthrough: f64,
    /// iopath's median over the raw directory's.
    pub vs_raw: f64,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct MountResult {
    /// The stack.
    pub stack: String,
    /// Which parts were real and which modeled.
    pub modeled: String,
    /// Runs of each workload in each place.
    pub runs: u32,
    /// Every place measured, iopath first.
    pub places: Vec<Place>,
    /// iopath's medians over the others', metric by metric.
    pub ratios: Vec<Ratio>,
    /// The commands each workload ran (in the iopath mount; the others differ only in the
    /// directory).
    pub commands: Vec<String>,
}

/// Runs the benchmark; `progress` gets a line per step.
pub async fn measure(
    options: &MountOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<MountResult, BenchError> {
    check(options)?;
    require_fio()?;
    if !tool_runs("bindfs", "--version") {
        return Err(missing("bindfs", "bindfs", "the FUSE passthrough baseline"));
    }
    let stack = options.choice.load()?;
    let client_node = stack
        .nodes_of(RoleName::Client)
        .first()
        .copied()
        .ok_or_else(|| BenchError::BadOption {
            option: "--stack".into(),
            why: format!("{} has no client node to mount from", stack.origin),
        })?;
    let parent = options.dir.clone().unwrap_or_else(|| PathBuf::from("."));
    let storage = StorageDir::temporary("bench-mount", Some(&parent))?;
    let work = storage.path().join("bench");
    let dirs = ["raw", "under-bindfs", "bindfs", "iopath", "source"].map(|d| work.join(d));
    for d in &dirs {
        std::fs::create_dir_all(d)
            .map_err(|e| BenchError::system(format!("create {}", d.display()), e))?;
    }
    let [raw, under, bindfs, iopath, source] = dirs;
    let archive = if options.workloads.contains(&Workload::Tar) {
        progress(&format!("archiving {}", options.tar_source.display()));
        Some(archive_tree(&options.tar_source, &source)?)
    } else {
        None
    };
    let archive = archive.as_deref();

    progress(&format!("raw directory {}", raw.display()));
    let (raw_place, _) = run_place("raw directory", &raw, options, archive, progress, || Ok(()))?;

    progress("bindfs passthrough of a directory beside it");
    let mounted = Command::new("bindfs")
        .arg(&under)
        .arg(&bindfs)
        .status()
        .map_err(|e| BenchError::system("run bindfs", e))?;
    if !mounted.success() {
        return Err(BenchError::tool(format!(
            "bindfs {} {} failed ({mounted})",
            under.display(),
            bindfs.display()
        )));
    }
    let bindfs_place = run_place(
        "bindfs passthrough",
        &bindfs,
        options,
        archive,
        progress,
        || drop_from_page_cache(&under),
    );
    let _ = Command::new("fusermount3").arg("-u").arg(&bindfs).status();
    let (bindfs_place, _) = bindfs_place?;

    progress(&format!("starting {} in this process", stack.name));
    let name = stack.name.clone();
    let running = RunningStack::start(stack, Mode::Embedded, storage, None).await?;
    let node = running
        .clients()
        .into_iter()
        .find(|n| n.index == client_node)
        .ok_or_else(|| BenchError::tool("the client node did not start"))?;
    let client: Client = running.connect(node).await?;
    let mount = Mount::new(client.clone(), tokio::runtime::Handle::current(), &iopath)
        .map_err(|e| BenchError::tool(format!("mount the stack: {e}")))?;
    progress(&format!("iopath mount {}", iopath.display()));
    let (dir, opts, tarball) = (iopath.clone(), options.clone(), archive.map(Path::to_owned));
    // The programs block; the mount's calls are answered on this runtime meanwhile.
    let iopath_place = tokio::task::spawn_blocking(move || {
        let mut quiet = |line: &str| eprintln!("{line}");
        run_place(
            "iopath mount",
            &dir,
            &opts,
            tarball.as_deref(),
            &mut quiet,
            || Ok(()),
        )
    })
    .await
    .map_err(|e| BenchError::tool(format!("benchmark task: {e}")))?;
    let _ = tokio::task::spawn_blocking(move || mount.unmount()).await;
    let _ = client.close().await;
    running.stop().await?;
    let (iopath_place, commands) = iopath_place?;

    let ratio = |a: Option<f64>, b: Option<f64>| match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => a / b,
        _ => 0.0,
    };
    let ratios = iopath_place
        .measured
        .iter()
        .map(|m| Ratio {
            metric: m.metric.clone(),
            vs_passthrough: ratio(Some(m.median), bindfs_place.median(&m.metric)),
            vs_raw: ratio(Some(m.median), raw_place.median(&m.metric)),
        })
        .collect();
    Ok(MountResult {
        stack: name,
        modeled: "nothing: real bytes through FUSE, the fabric (in-memory network, one process) and the storage servers' O_DIRECT writes; every storage target on this machine's one file system".into(),
        runs: options.runs,
        places: vec![iopath_place, bindfs_place, raw_place],
        ratios,
        commands,
    })
}

fn check(options: &MountOptions) -> Result<(), BenchError> {
    let bad = |option: &str, why: String| {
        Err(BenchError::BadOption {
            option: option.into(),
            why,
        })
    };
    if options.workloads.is_empty() {
        return bad("--workloads", "name at least one".into());
    }
    if options.runs == 0 || options.runs > RUNS_MAX {
        return bad(
            "--runs",
            format!("{} runs: give 1 to {RUNS_MAX}", options.runs),
        );
    }
    if options.jobs == 0 || options.jobs > 64 {
        return bad("--jobs", format!("{} jobs: give 1 to 64", options.jobs));
    }
    if options.block_bytes == 0 || !options.block_bytes.is_multiple_of(4096) {
        return bad("--bs", "O_DIRECT needs a multiple of 4 KiB".into());
    }
    if options.size_bytes < options.block_bytes {
        return bad("--size", "smaller than one request".into());
    }
    if options.small_size_bytes < 4096 {
        return bad("--small-size", "smaller than one 4 KiB request".into());
    }
    if options.create_jobs == 0 || options.create_jobs > CREATE_JOBS_MAX {
        return bad(
            "--create-jobs",
            format!("{}: give 1 to {CREATE_JOBS_MAX}", options.create_jobs),
        );
    }
    if options.create_files == 0 || options.create_files > CREATE_FILES_MAX {
        return bad(
            "--create-files",
            format!("{}: give 1 to {CREATE_FILES_MAX}", options.create_files),
        );
    }
    if options.workloads.contains(&Workload::Tar) && !options.tar_source.is_dir() {
        return bad(
            "--tar-source",
            format!("{} is not a directory", options.tar_source.display()),
        );
    }
    Ok(())
}

/// The result as a table for people.
pub fn table(r: &MountResult) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "unmodified programs through an iopath mount of {} beside a FUSE passthrough and the raw directory\nmodeled: {}\nmedians of {} run(s)\n\n",
        r.stack, r.modeled, r.runs
    ));
    out.push_str(&format!("{:<20}", "metric"));
    for p in &r.places {
        out.push_str(&format!(" {:>20}", p.name));
    }
    out.push_str(&format!(" {:>14} {:>10}\n", "/ passthrough", "/ raw"));
    for ratio in &r.ratios {
        out.push_str(&format!("{:<20}", ratio.metric));
        for p in &r.places {
            out.push_str(&format!(
                " {:>20.1}",
                p.median(&ratio.metric).unwrap_or(0.0)
            ));
        }
        out.push_str(&format!(
            " {:>14.3} {:>10.3}\n",
            ratio.vs_passthrough, ratio.vs_raw
        ));
    }
    out.push_str("\n(a time's ratio above 1 is slower than the baseline; a rate's below 1)\n");
    for command in &r.commands {
        out.push_str(&format!("ran: {command}\n"));
    }
    out
}

fn tool_runs(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// Every workload, `runs` times, in `dir`: the place's figures, and the commands run.
///
/// `between` runs between a fio write and its read: for the passthrough it drops the
/// underlying files from the page cache, so its reads come from the disk as the others' do
/// (fio's O_DIRECT reaches bindfs, which reads its files through the cache).
fn run_place(
    name: &str,
    dir: &Path,
    o: &MountOptions,
    archive: Option<&Path>,
    progress: &mut dyn FnMut(&str),
    between: impl Fn() -> Result<(), BenchError>,
) -> Result<(Place, Vec<String>), BenchError> {
    let mut measured: Vec<Measured> = Vec::new();
    let mut commands = Vec::new();
    let mut record =
        |metric: &str, value: f64| match measured.iter_mut().find(|m| m.metric == metric) {
            Some(m) => m.runs.push(value),
            None => measured.push(Measured {
                metric: metric.to_owned(),
                runs: vec![value],
                median: 0.0,
            }),
        };
    for run in 0..o.runs {
        let here = dir.join(format!("run{run}"));
        std::fs::create_dir_all(&here)
            .map_err(|e| BenchError::system(format!("create {}", here.display()), e))?;
        for workload in &o.workloads {
            progress(&format!(
                "{name}: {} (run {} of {})",
                workload.name(),
                run + 1,
                o.runs
            ));
            match workload {
                Workload::Seq => {
                    let fio = Fio::new(&here.join("seq"), o.jobs, o.block_bytes, o.size_bytes)?;
                    let (write, command) = fio.run("write", &["--end_fsync=1"])?;
                    between()?;
                    let (read, _) = fio.run("read", &[])?;
                    record("seq_write_mib_s", write);
                    record("seq_read_mib_s", read);
                    commands.push(command);
                }
                Workload::Rand4k => {
                    let fio = Fio::new(&here.join("rand4k"), o.jobs, 4096, o.small_size_bytes)?;
                    let (write, command) = fio.run("randwrite", &["--end_fsync=1"])?;
                    between()?;
                    let (read, _) = fio.run("randread", &[])?;
                    record("rand4k_write_mib_s", write);
                    record("rand4k_read_mib_s", read);
                    commands.push(command);
                }
                Workload::Tar => {
                    let archive =
                        archive.ok_or_else(|| BenchError::tool("no archive to extract"))?;
                    let into = here.join("tar");
                    std::fs::create_dir_all(&into)
                        .map_err(|e| BenchError::system(format!("create {}", into.display()), e))?;
                    let command = format!("tar -x -f {} -C {}", archive.display(), into.display());
                    let started = Instant::now();
                    let out = Command::new("tar")
                        .arg("-x")
                        .arg("-f")
                        .arg(archive)
                        .arg("-C")
                        .arg(&into)
                        .output()
                        .map_err(|e| BenchError::system("run tar", e))?;
                    let seconds = started.elapsed().as_secs_f64();
                    if !out.status.success() {
                        return Err(BenchError::tool(format!(
                            "`{command}` failed: {}",
                            String::from_utf8_lossy(&out.stderr).trim()
                        )));
                    }
                    record("tar_x_s", seconds);
                    commands.push(command);
                }
                Workload::Creates => {
                    let (rate, command) =
                        creates(&here.join("creates"), o.create_jobs, o.create_files)?;
                    record("creates_per_s", rate);
                    commands.push(command);
                }
            }
        }
    }
    for m in &mut measured {
        m.median = median(&m.runs);
    }
    commands.truncate(o.workloads.len());
    Ok((
        Place {
            name: name.to_owned(),
            measured,
        },
        commands,
    ))
}

/// The median of `values` (the mean of the middle two for an even count; 0 for none), as
/// statrs reckons it.
pub fn median(values: &[f64]) -> f64 {
    use statrs::statistics::{Data, Median as _};
    if values.is_empty() {
        return 0.0;
    }
    Data::new(values.to_vec()).median()
}

/// One fio job set: its directory, jobs, request and file sizes.
struct Fio {
    common: Vec<String>,
}

impl Fio {
    fn new(dir: &Path, jobs: u32, block_bytes: u64, size_bytes: u64) -> Result<Fio, BenchError> {
        std::fs::create_dir_all(dir)
            .map_err(|e| BenchError::system(format!("create {}", dir.display()), e))?;
        Ok(Fio {
            common: vec![
                "--name=bench".to_owned(),
                format!("--directory={}", dir.display()),
                "--ioengine=psync".to_owned(),
                "--direct=1".to_owned(),
                format!("--bs={block_bytes}"),
                format!("--size={}", size_bytes / block_bytes * block_bytes),
                format!("--numjobs={jobs}"),
                "--group_reporting".to_owned(),
                "--output-format=json".to_owned(),
            ],
        })
    }

    /// Runs `rw` (write, read, randwrite, randread): MiB/s over all jobs, and the command.
    fn run(&self, rw: &str, extra: &[&str]) -> Result<(f64, String), BenchError> {
        let mut args = self.common.clone();
        args.push(format!("--rw={rw}"));
        args.extend(extra.iter().map(|s| (*s).to_owned()));
        let command = format!("fio {}", args.join(" "));
        let mut fio = Command::new("fio");
        fio.args(&args);
        crate::fio::ends_with_this_process(&mut fio);
        let out = fio.output().map_err(|e| BenchError::system("run fio", e))?;
        if !out.status.success() {
            return Err(BenchError::tool(format!(
                "`{command}` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let text = String::from_utf8_lossy(&out.stdout);
        let json: serde_json::Value = serde_json::from_str(&text[text.find('{').unwrap_or(0)..])
            .map_err(|e| BenchError::json("fio's JSON", e))?;
        let side = if rw.ends_with("write") {
            "write"
        } else {
            "read"
        };
        let bw = json["jobs"][0][side]["bw_bytes"].as_f64().unwrap_or(0.0);
        Ok((bw / f64::from(1u32 << 20), command))
    }
}

/// mdtest's create phase: `jobs` threads, each making `files` empty files in a directory of
/// its own under `dir` (open `O_CREAT|O_EXCL`, close). Files a second, and what ran.
fn creates(dir: &Path, jobs: u32, files: u32) -> Result<(f64, String), BenchError> {
    let mut dirs = Vec::new();
    for job in 0..jobs {
        let d = dir.join(format!("job{job}"));
        std::fs::create_dir_all(&d)
            .map_err(|e| BenchError::system(format!("create {}", d.display()), e))?;
        dirs.push(d);
    }
    let started = Instant::now();
    let results: Vec<Result<(), BenchError>> = std::thread::scope(|scope| {
        let handles: Vec<_> = dirs
            .iter()
            .map(|d| {
                scope.spawn(move || {
                    for i in 0..files {
                        let path = d.join(format!("file.{i}"));
                        std::fs::OpenOptions::new()
                            .write(true)
                            .create_new(true)
                            .open(&path)
                            .map_err(|e| {
                                BenchError::system(format!("create {}", path.display()), e)
                            })?;
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err(BenchError::tool("a creating thread panicked")))
            })
            .collect()
    });
    let seconds = started.elapsed().as_secs_f64();
    for result in results {
        result?;
    }
    let command = format!(
        "{jobs} threads x {files} creates (O_CREAT|O_EXCL, close), each in its own directory under {}",
        dir.display()
    );
    Ok((
        f64::from(jobs) * f64::from(files) / seconds.max(1e-9),
        command,
    ))
}

/// Archives `tree` into `dir/tree.tar` (once, before the runs): tar keeps its symbolic links,
/// hard links and modes, as a package's tree holds them.
fn archive_tree(tree: &Path, dir: &Path) -> Result<PathBuf, BenchError> {
    let archive = dir.join("tree.tar");
    let out = Command::new("tar")
        .arg("-c")
        .arg("-f")
        .arg(&archive)
        .arg("-C")
        .arg(tree)
        .arg(".")
        .output()
        .map_err(|e| BenchError::system("run tar", e))?;
    if !out.status.success() {
        return Err(BenchError::tool(format!(
            "archiving {}: {}",
            tree.display(),
            String::from_utf8_lossy(&out.stderr).trim()
        )));
    }
    Ok(archive)
}

/// Drops every file under `dir` from the page cache (they were fsync'd: their pages are
/// clean), with posix_fadvise(DONTNEED) on each.
fn drop_from_page_cache(dir: &Path) -> Result<(), BenchError> {
    use std::os::fd::AsRawFd;
    let entries = std::fs::read_dir(dir)
        .map_err(|e| BenchError::system(format!("list {}", dir.display()), e))?;
    for entry in entries.flatten() {
        let path = entry.path();
        if path.is_dir() {
            drop_from_page_cache(&path)?;
            continue;
        }
        if !path.is_file() {
            continue;
        }
        let file = std::fs::File::open(&path)
            .map_err(|e| BenchError::system(format!("open {}", path.display()), e))?;
        // SAFETY: a valid open descriptor; fadvise only advises the kernel.
        let rc = unsafe { libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
        if rc != 0 {
            return Err(BenchError::system(
                format!("drop {} from the page cache", path.display()),
                std::io::Error::from_raw_os_error(rc),
            ));
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_median_is_the_middle_value_or_the_mean_of_the_middle_two() {
        assert_eq!(median(&[3.0, 1.0, 2.0]), 2.0);
        assert_eq!(median(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        assert_eq!(median(&[7.0]), 7.0);
        assert_eq!(median(&[]), 0.0, "none: 0, not NaN");
    }

    #[test]
    fn workloads_are_named_as_on_the_command_line() {
        for w in Workload::ALL {
            assert_eq!(w.name().parse::<Workload>().unwrap(), w);
        }
        assert!("fast".parse::<Workload>().is_err());
    }
}
