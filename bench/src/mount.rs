//! `iopath bench mount`: fio, unmodified, through an iopath mount, beside the same fio through
//! a plain FUSE passthrough of a directory on the same file system (bindfs) and on that
//! directory itself — all in one run, so the ratios say what the emulated path costs over
//! FUSE alone, and over the disk.
//!
//! Each place gets the same fio command: `numjobs` jobs, each writing its own file
//! sequentially in `bs` requests with O_DIRECT (no page cache on either side, so reads come
//! from the servers' disks, not from memory), an fsync at the end, then reading it back.

use std::path::{Path, PathBuf};
use std::process::Command;

use iopath_client::Client;
use iopath_mount::Mount;
use iopath_stack::StackChoice;
use iopath_stack::runtime::{Mode, RunningStack, StorageDir};
use iopath_stack::schema::RoleName;
use serde::Serialize;

use crate::baseline::install_package;
use crate::error::BenchError;
use crate::fio::ensure_fio;

/// What to measure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MountOptions {
    /// The stack (default: spider-mini, direct-attached).
    pub choice: StackChoice,
    /// fio jobs, each its own file.
    pub jobs: u32,
    /// Bytes each job writes and reads.
    pub size_bytes: u64,
    /// Bytes per request.
    pub block_bytes: u64,
    /// Where the stack's storage, the passthrough's directory and the raw runs live
    /// (default: a temporary directory in the current one).
    pub dir: Option<PathBuf>,
}

/// One place's fio figures.
#[derive(Debug, Clone, Serialize)]
pub struct Place {
    /// What it is: `iopath mount`, `bindfs passthrough`, `raw directory`.
    pub name: String,
    /// fio's sequential write, MiB/s over all jobs.
    pub write_mib_s: f64,
    /// fio's sequential read, MiB/s over all jobs.
    pub read_mib_s: f64,
    /// The fio command line used.
    pub command: String,
}

/// The benchmark's result.
#[derive(Debug, Clone, Serialize)]
pub struct MountResult {
    /// The stack, and what was real and what modeled.
    pub stack: String,
    /// Which parts were real and which modeled.
    pub modeled: String,
    /// Every place measured, iopath first.
    pub places: Vec<Place>,
    /// iopath's write over the passthrough's.
    pub write_vs_passthrough: f64,
    /// iopath's read over the passthrough's.
    pub read_vs_passthrough: f64,
    /// iopath's write over the raw directory's.
    pub write_vs_raw: f64,
    /// iopath's read over the raw directory's.
    pub read_vs_raw: f64,
}

/// Runs the benchmark; `progress` gets a line per step.
pub async fn measure(
    options: &MountOptions,
    progress: &mut dyn FnMut(&str),
) -> Result<MountResult, BenchError> {
    if options.jobs == 0 || options.jobs > 64 {
        return Err(BenchError::BadOption {
            option: "--jobs".into(),
            why: format!("{} jobs: give 1 to 64", options.jobs),
        });
    }
    if options.block_bytes == 0 || !options.block_bytes.is_multiple_of(4096) {
        return Err(BenchError::BadOption {
            option: "--bs".into(),
            why: "O_DIRECT needs a multiple of 4 KiB".into(),
        });
    }
    if options.size_bytes < options.block_bytes {
        return Err(BenchError::BadOption {
            option: "--size".into(),
            why: "smaller than one request".into(),
        });
    }
    ensure_fio(progress)?;
    if !tool_runs("bindfs", "--version") {
        install_package(
            "bindfs",
            "the FUSE passthrough baseline",
            "install bindfs (apt-get install bindfs)",
            progress,
        )?;
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
    let dirs = ["raw", "under-bindfs", "bindfs", "iopath"].map(|d| work.join(d));
    for d in &dirs {
        std::fs::create_dir_all(d)
            .map_err(|e| BenchError::system(format!("create {}", d.display()), e))?;
    }
    let [raw, under, bindfs, iopath] = dirs;

    progress(&format!("raw directory {}", raw.display()));
    let raw_place = fio_place("raw directory", &raw, options, || Ok(()))?;

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
    let bindfs_place = fio_place("bindfs passthrough", &bindfs, options, || {
        drop_from_page_cache(&under)
    });
    let _ = Command::new("fusermount3").arg("-u").arg(&bindfs).status();
    let bindfs_place = bindfs_place?;

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
    let fio_dir = iopath.clone();
    let opts = options.clone();
    // fio blocks; the mount's calls are answered on this runtime meanwhile.
    let iopath_place =
        tokio::task::spawn_blocking(move || fio_place("iopath mount", &fio_dir, &opts, || Ok(())))
            .await
            .map_err(|e| BenchError::tool(format!("fio task: {e}")))?;
    let _ = tokio::task::spawn_blocking(move || mount.unmount()).await;
    let _ = client.close().await;
    running.stop().await?;
    let iopath_place = iopath_place?;

    let ratio = |a: f64, b: f64| if b > 0.0 { a / b } else { 0.0 };
    Ok(MountResult {
        stack: name,
        modeled: "nothing: real bytes through FUSE, the fabric (in-memory network, one process) and the storage servers' O_DIRECT writes; every storage target on this machine's one file system".into(),
        write_vs_passthrough: ratio(iopath_place.write_mib_s, bindfs_place.write_mib_s),
        read_vs_passthrough: ratio(iopath_place.read_mib_s, bindfs_place.read_mib_s),
        write_vs_raw: ratio(iopath_place.write_mib_s, raw_place.write_mib_s),
        read_vs_raw: ratio(iopath_place.read_mib_s, raw_place.read_mib_s),
        places: vec![iopath_place, bindfs_place, raw_place],
    })
}

/// The result as a table for people.
pub fn table(r: &MountResult) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "fio through an iopath mount of {} beside a FUSE passthrough and the raw directory\nmodeled: {}\n\n",
        r.stack, r.modeled
    ));
    out.push_str(&format!(
        "{:<20} {:>12} {:>12}\n",
        "place", "write MiB/s", "read MiB/s"
    ));
    for p in &r.places {
        out.push_str(&format!(
            "{:<20} {:>12.1} {:>12.1}\n",
            p.name, p.write_mib_s, p.read_mib_s
        ));
    }
    out.push_str(&format!(
        "\nratios: iopath / passthrough write {:.3}, read {:.3}; iopath / raw write {:.3}, read {:.3}\n",
        r.write_vs_passthrough, r.read_vs_passthrough, r.write_vs_raw, r.read_vs_raw
    ));
    out.push_str(&format!("fio: {}\n", r.places[0].command));
    out
}

fn tool_runs(tool: &str, arg: &str) -> bool {
    Command::new(tool)
        .arg(arg)
        .output()
        .is_ok_and(|o| o.status.success())
}

/// fio's write then read in `dir`, one command each.
///
/// `between` runs after the write and before the read: for the passthrough it drops the
/// underlying files from the page cache, so its reads come from the disk as the others' do
/// (fio's O_DIRECT reaches bindfs, which reads its files through the cache).
fn fio_place(
    name: &str,
    dir: &Path,
    o: &MountOptions,
    between: impl FnOnce() -> Result<(), BenchError>,
) -> Result<Place, BenchError> {
    let common = vec![
        "--name=seq".to_owned(),
        format!("--directory={}", dir.display()),
        "--ioengine=psync".to_owned(),
        "--direct=1".to_owned(),
        format!("--bs={}", o.block_bytes),
        format!("--size={}", o.size_bytes / o.block_bytes * o.block_bytes),
        format!("--numjobs={}", o.jobs),
        "--group_reporting".to_owned(),
        "--output-format=json".to_owned(),
    ];
    let run = |rw: &str, extra: &[&str]| -> Result<(f64, String), BenchError> {
        let mut args = common.clone();
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
        let side = if rw == "write" { "write" } else { "read" };
        let bw = json["jobs"][0][side]["bw_bytes"].as_f64().unwrap_or(0.0);
        Ok((bw / f64::from(1u32 << 20), command))
    };
    let (write_mib_s, command) = run("write", &["--end_fsync=1"])?;
    between()?;
    let (read_mib_s, _) = run("read", &[])?;
    Ok(Place {
        name: name.to_owned(),
        write_mib_s,
        read_mib_s,
        command,
    })
}

/// Drops every file under `dir` from the page cache (they were fsync'd: their pages are
/// clean), with posix_fadvise(DONTNEED) on each.
fn drop_from_page_cache(dir: &Path) -> Result<(), BenchError> {
    use std::os::fd::AsRawFd;
    let entries = std::fs::read_dir(dir)
        .map_err(|e| BenchError::system(format!("list {}", dir.display()), e))?;
    for entry in entries.flatten() {
        let path = entry.path();
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
