//! `iopath mount`: a running stack mounted as a directory, so any program does its I/O
//! through the emulated path. Runs until Ctrl-C, SIGTERM or an unmount from outside
//! (`fusermount3 -u`), then commits what it wrote and leaves the stack cleanly.

use std::path::PathBuf;

use anyhow::Context;
use iopath_fabric::Nid;
use iopath_mount::Mount;

/// `iopath mount`'s options.
#[derive(clap::Args, Debug, Clone)]
pub struct MountArgs {
    /// The metadata service's NID (printed when the stack starts).
    #[arg(long, env = "IOPATH_MDS")]
    mds: Nid,
    /// Go through the fyod at this NID instead of straight to the storage servers.
    #[arg(long)]
    fyod: Option<Nid>,
    /// An existing, empty directory to mount the stack on.
    mountpoint: PathBuf,
}

/// Runs `iopath mount`: mounts, prints a READY line, waits for a signal or an unmount,
/// unmounts, closes the client.
pub async fn run(args: MountArgs) -> anyhow::Result<()> {
    let MountArgs {
        mds,
        fyod,
        mountpoint,
    } = args;
    // Caught from the start (by `main`): a Ctrl-C right after READY unmounts cleanly too.
    let stop = crate::signals::stop_requested();
    tokio::pin!(stop);
    let (node, client) = super::lfs::connect(mds, fyod).await?;
    let mount = Mount::new(
        client.clone(),
        tokio::runtime::Handle::current(),
        &mountpoint,
    )
    .context("mount the stack")?;
    let via = fyod.map_or_else(
        || "direct-attached".to_owned(),
        |f| format!("through the fyod at {f}"),
    );
    outln!(
        "READY mounted the stack at {mds} on {} ({via}); Ctrl-C or `fusermount3 -u {}` unmounts",
        mountpoint.display(),
        mountpoint.display()
    )?;
    let mut tick = tokio::time::interval(std::time::Duration::from_millis(200));
    // The stack is watched: a metadata service that stops answering for as long as a
    // storage server may (the stack was stopped) unmounts, rather than leave a directory
    // whose every call fails.
    let mut watch = tokio::time::interval(std::time::Duration::from_secs(2));
    let mut silent_since: Option<tokio::time::Instant> = None;
    // Why the mount ends, and whether it is because the stack went away.
    let (why, stack_gone) = loop {
        tokio::select! {
            signal = &mut stop => break (if signal == "SIGINT" { "interrupted" } else { "terminated" }, false),
            _ = tick.tick() => if mount.is_finished() { break ("unmounted from outside", false) },
            _ = watch.tick() => {
                let answered = tokio::time::timeout(
                    std::time::Duration::from_secs(5),
                    client.stat("/"),
                )
                .await
                .is_ok_and(|r| r.is_ok());
                if answered {
                    silent_since = None;
                } else if silent_since
                    .get_or_insert_with(tokio::time::Instant::now)
                    .elapsed()
                    >= iopath_client::UNREACHABLE_FOR_MAX
                {
                    break (
                        "the stack's metadata service stopped answering (the stack stopped?)",
                        true,
                    );
                }
            }
        }
    };
    eprintln!("iopath mount: {why}; unmounting {}", mountpoint.display());
    let unmounted = tokio::task::spawn_blocking(move || mount.unmount())
        .await
        .context("unmount task")?;
    // What the servers acknowledged is committed before this process, the only other copy,
    // goes away (as `lfs` does). A stack that stopped has nobody to commit with: that is an
    // error only if this client still holds writes it was told were written.
    let closed = if stack_gone && client.kept_bytes() == 0 {
        Err(anyhow::anyhow!(
            "the stack at {mds} stopped answering; unmounted (no write of this mount was left uncommitted)"
        ))
    } else {
        client
            .close()
            .await
            .context("commit what was written and disconnect: it may not survive a server crash")
    };
    node.shutdown();
    if let Err(e) = unmounted {
        eprintln!(
            "iopath mount: unmount {}: {e}; clear it with `fusermount3 -u {}`",
            mountpoint.display(),
            mountpoint.display()
        );
    }
    closed
}

/// `iopath bench mount`'s options.
#[derive(clap::Args, Debug, Clone)]
#[command(mut_arg("preset", |a| a.default_value(iopath_bench::mount::DEFAULT_PRESET)))]
pub struct BenchMountArgs {
    /// The stack (direct-attached, without fyods, by default).
    #[command(flatten)]
    choice: super::stack::StackArgs,
    /// The workloads, comma-separated: seq (fio, sequential, --bs), rand4k (fio, random
    /// 4 KiB), tar (tar -x of --tar-source), creates (mdtest-like file creates).
    #[arg(long, value_delimiter = ',', default_value = "seq,rand4k,tar,creates")]
    workloads: Vec<iopath_bench::mount::Workload>,
    /// Runs of each workload in each place; the table and ratios use the medians.
    #[arg(long, default_value_t = 3)]
    runs: u32,
    /// fio jobs, each writing and reading its own file.
    #[arg(long, default_value_t = 4)]
    jobs: u32,
    /// Bytes each job writes and reads sequentially (k, m, g suffixes).
    #[arg(long, default_value = "256m", value_parser = iopath_fabric::units::parse_size)]
    size: u64,
    /// Bytes per sequential request (a multiple of 4k: the runs are O_DIRECT).
    #[arg(long, default_value = "1m", value_parser = iopath_fabric::units::parse_size)]
    bs: u64,
    /// Bytes each job writes and reads in random 4 KiB requests.
    #[arg(long, default_value = "16m", value_parser = iopath_fabric::units::parse_size)]
    small_size: u64,
    /// The tree `tar` extracts (archived once first).
    #[arg(long, default_value = "/usr/share/doc")]
    tar_source: PathBuf,
    /// Threads creating files, each in a directory of its own.
    #[arg(long, default_value_t = 4)]
    create_jobs: u32,
    /// Files each creating thread makes.
    #[arg(long, default_value_t = 1000)]
    create_files: u32,
    /// Directory for the stack's storage and the baselines' files; default: a temporary
    /// directory in the current one.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
}

/// Runs `iopath bench mount`: progress on standard error, the table (or JSON) on standard
/// output.
pub async fn bench(args: BenchMountArgs) -> anyhow::Result<()> {
    let choice = args.choice.into();
    let options = iopath_bench::mount::MountOptions {
        choice,
        workloads: args.workloads,
        runs: args.runs,
        jobs: args.jobs,
        size_bytes: args.size,
        block_bytes: args.bs,
        small_size_bytes: args.small_size,
        tar_source: args.tar_source,
        create_jobs: args.create_jobs,
        create_files: args.create_files,
        dir: args.dir,
    };
    let mut progress = |line: &str| eprintln!("{line}");
    let result = iopath_bench::mount::measure(&options, &mut progress).await?;
    if args.json {
        outln!("{}", serde_json::to_string_pretty(&result)?)?;
    } else {
        out!("{}", iopath_bench::mount::table(&result))?;
    }
    Ok(())
}
