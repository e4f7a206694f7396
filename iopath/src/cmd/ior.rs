//! `iopath bench ior`: IOR's flags, with IOR's names and defaults, turned into
//! `iopath_bench::ior::IorOptions`; IOR's output on standard output, the progress line on
//! standard error.

use std::path::PathBuf;

use iopath_bench::ior::phase::Progress;
use iopath_bench::ior::{IorOptions, measure};
use iopath_fabric::units::parse_size;

use super::stack::StackArgs;

/// `iopath bench ior`'s options: IOR's flags, and where to run.
#[derive(clap::Args, Debug, Clone)]
pub struct IorArgs {
    /// Number of tasks (IOR numTasks); default: one per client node of the stack.
    #[arg(short = 'N', value_name = "N")]
    tasks: Option<u32>,
    /// Contiguous bytes to write per task per segment (IOR blockSize; k, m, g suffixes).
    #[arg(short = 'b', value_name = "SIZE", default_value = "1m", value_parser = parse_size)]
    block_size_bytes: u64,
    /// Bytes per read or write call (IOR transferSize; k, m, g suffixes).
    #[arg(short = 't', value_name = "SIZE", default_value = "256k", value_parser = parse_size)]
    transfer_size_bytes: u64,
    /// Number of segments (IOR segmentCount).
    #[arg(short = 's', value_name = "COUNT", default_value_t = 1)]
    segments: u64,
    /// A file per task instead of one shared file (IOR filePerProc).
    #[arg(short = 'F')]
    file_per_proc: bool,
    /// Write the file (IOR writeFile); with neither -w nor -r, both.
    #[arg(short = 'w')]
    write: bool,
    /// Read the file back, verifying every byte (IOR readFile, with checkRead).
    #[arg(short = 'r')]
    read: bool,
    /// Read back what the task one node over wrote, so nothing is read from where it was
    /// written (IOR reorderTasks).
    #[arg(short = 'C')]
    reorder_tasks: bool,
    /// fsync each file before closing it after writing (IOR fsync).
    #[arg(short = 'e')]
    fsync: bool,
    /// fsync after every write call (IOR fsyncPerWrite).
    #[arg(short = 'Y')]
    fsync_per_write: bool,
    /// Each task makes its transfers in a random order (IOR randomOffset); every word is
    /// still checked on the read-back.
    #[arg(short = 'z')]
    random_offset: bool,
    /// Open the files an earlier test of this run kept (-k) instead of creating them (IOR
    /// useExistingTestFile). Each run starts a fresh stack, so this belongs in a -f script.
    #[arg(short = 'E')]
    use_existing_file: bool,
    /// Each task starts no transfer once SECONDS have passed since its first (IOR
    /// deadlineForStonewalling); the read-back reads what was written. IOR's stonewalling
    /// figures only with `-O stoneWallingWearOut=1`, as IOR prints them. 0: no deadline.
    #[arg(short = 'D', value_name = "SECONDS", default_value_t = 0)]
    deadline_s: u64,
    /// Stop a test after MINUTES (IOR maxTimeDuration), looked at before each phase as IOR
    /// does: no phase starts after it, one under way runs to its end. 0: no limit.
    #[arg(short = 'T', value_name = "MINUTES", default_value_t = 0)]
    max_minutes: u64,
    /// More lines (IOR verbose): -v the phases' start times, -vv each task's times.
    #[arg(short = 'v', action = clap::ArgAction::Count)]
    verbose: u8,
    /// The tasks wait for each other between open, transfers and close (IOR
    /// intraTestBarriers), so each interval times all tasks doing the same thing.
    #[arg(short = 'g')]
    intra_test_barriers: bool,
    /// MPI-IO collective I/O (IOR collective): refused, with the reason — iopath's tasks make
    /// independent calls, as IOR's POSIX api does.
    #[arg(short = 'c')]
    collective: bool,
    /// A file (or a file per task) per repetition: the test file's name gets `.N` (IOR
    /// multiFile).
    #[arg(short = 'm')]
    multi_file: bool,
    /// With -F, each task's file in a directory of its own, `DIR/N/` (IOR uniqueDir).
    #[arg(short = 'u')]
    unique_dir: bool,
    /// Never retry a short transfer (IOR singleXferAttempt). iopath's transfers are whole or
    /// an error, so this is always so; accepted for IOR's scripts.
    #[arg(short = 'x')]
    single_xfer_attempt: bool,
    /// Bypass client caches (IOR useO_DIRECT, IOR 4's --posix.odirect). iopath's client
    /// library keeps no cache, so every transfer reaches the servers either way; accepted for
    /// IOR's scripts.
    #[arg(short = 'B', long = "posix.odirect")]
    direct_io: bool,
    /// A script of tests (IOR's -f): `IOR START`, `KEY=VALUE` directives, a `RUN` per test,
    /// `IOR STOP`. Each test starts from the one before, the first from these flags; all run
    /// on one stack, so a later test reads what an earlier one kept.
    #[arg(short = 'f', value_name = "SCRIPT")]
    script: Option<PathBuf>,
    /// The data each transfer carries (IOR 3/4 dataPacketType): `timestamp` or `t` (the
    /// default), a task fills its buffer once per repetition, as IOR does, and the read-back
    /// catches the wrong task, the wrong repetition, holes, shifts and flipped bits; `offset`
    /// or `o` stamps every word with its file offset too, filling the buffer again for each
    /// transfer, so data that lands at the wrong offset is caught as well. IOR's
    /// `incompressible` and `random` are refused: every read checks iopath's own pattern.
    #[arg(short = 'l', long = "dataPacketType", value_name = "TYPE", value_parser = packet_type)]
    store_file_offset: Option<bool>,
    /// Repetitions (IOR repetitions).
    #[arg(short = 'i', value_name = "COUNT", default_value_t = 1)]
    repetitions: u32,
    /// The test file's path in the stack's namespace (IOR testFile); with -F, each task's
    /// file is this with `.NNNNNNNN` appended.
    #[arg(short = 'o', value_name = "PATH", default_value = "/ior/testFile")]
    test_file: String,
    /// Keep the files at the end (IOR keepFile).
    #[arg(short = 'k')]
    keep_file: bool,
    /// The I/O calls each transfer makes (IOR's api): `sync` — blocking read/write, ASCI Red's
    /// synchronous calls, which a fyod serves one at a time; `async` — iwrite/iread then
    /// iowait, ASCI Red's asynchronous calls, which a fyod runs concurrently (a worker per
    /// open file). Either way a task has one transfer in flight.
    #[arg(short = 'a', value_name = "API", default_value = "async")]
    api: String,
    /// IOR directives, as IOR's -O takes them (`KEY=VALUE[,KEY=VALUE]`): any key a -f script
    /// takes, among them `summaryFormat=JSON|CSV` (the results as JSON or IOR's CSV lines) and
    /// `summaryFile=PATH` (the results to PATH; the log lines stay on standard output).
    #[arg(short = 'O', value_name = "KEY=VALUE")]
    ior_options: Vec<String>,
    /// The stack to run on.
    #[command(flatten)]
    choice: StackArgs,
    /// A process per server node on loopback TCP (the tasks run in this process, on the
    /// stack's client nodes); default: every node in this process on in-memory networks.
    #[arg(long)]
    processes: bool,
    /// Run on a stack `iopath launch` started, given the file it wrote: the tasks run here on
    /// the stack's client nodes (placed on this host), the servers where launch put them.
    #[arg(long, value_name = "FILE", conflicts_with_all = ["processes", "preset", "stack"])]
    attach: Option<PathBuf>,
    /// Directory for the stack's storage and the disk baseline; default: a temporary
    /// directory in the current directory (on its file system, not /tmp, which may be tmpfs).
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Serve the live view of the stack on this address (`127.0.0.1:8080`; port 0 picks
    /// one) while IOR runs: a page that draws the stack and follows bandwidth, credits,
    /// router buffers, journal commits and uncommitted writes every second.
    #[arg(long, value_name = "ADDR")]
    web: Option<std::net::SocketAddr>,
}

/// IOR's `-l` value: whether it asks for offsets in the data.
fn packet_type(text: &str) -> Result<bool, String> {
    match text {
        "offset" | "o" => Ok(true),
        "timestamp" | "t" => Ok(false),
        "incompressible" | "i" | "random" | "r" => Err(format!(
            "{text}: iopath writes its own pattern (task, repetition, offset in every word), \
             which every read checks; incompressible or random data would leave nothing to \
             check — use timestamp (the default) or offset"
        )),
        _ => Err(format!(
            "{text}: IOR's packet types are offset (o), timestamp (t), incompressible (i) and \
             random (r)"
        )),
    }
}

impl From<IorArgs> for IorOptions {
    fn from(args: IorArgs) -> IorOptions {
        IorOptions {
            tasks: args.tasks,
            block_size_bytes: args.block_size_bytes,
            transfer_size_bytes: args.transfer_size_bytes,
            segments: args.segments,
            file_per_proc: args.file_per_proc,
            write: args.write,
            read: args.read,
            reorder_tasks: args.reorder_tasks,
            fsync: args.fsync,
            fsync_per_write: args.fsync_per_write,
            random_offset: args.random_offset,
            use_existing_file: args.use_existing_file,
            deadline_s: args.deadline_s,
            stonewall_wear_out: false,
            max_minutes: args.max_minutes,
            inter_test_delay_s: 0,
            verbose: args.verbose,
            intra_test_barriers: args.intra_test_barriers,
            collective: args.collective,
            multi_file: args.multi_file,
            unique_dir: args.unique_dir,
            single_xfer_attempt: args.single_xfer_attempt,
            direct_io: args.direct_io,
            store_file_offset: args.store_file_offset.unwrap_or(false),
            repetitions: args.repetitions,
            test_file: args.test_file,
            keep_file: args.keep_file,
            api: args.api,
            summary_format: "default".to_owned(),
            summary_file: None,
            ior_options: args.ior_options,
            script: args.script,
            choice: args.choice.into(),
            processes: args.processes,
            attach: args.attach,
            dir: args.dir,
            web: args.web,
        }
    }
}

/// Runs `iopath bench ior`: the progress line on standard error, IOR's output (or its JSON)
/// on standard output, with this command line as IOR's "Command line".
pub async fn run(args: IorArgs) -> anyhow::Result<()> {
    let command_line = std::env::args().collect::<Vec<_>>().join(" ");
    let mut out = std::io::stdout();
    measure(
        &args.into(),
        &command_line,
        &mut out,
        Progress::Stderr,
        None,
    )
    .await?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;
    use iopath_stack::StackChoice;

    use super::*;

    #[derive(Parser)]
    struct Cli {
        #[command(flatten)]
        ior: IorArgs,
    }

    fn options(args: &[&str]) -> IorOptions {
        Cli::try_parse_from(std::iter::once("ior").chain(args.iter().copied()))
            .unwrap_or_else(|e| panic!("{args:?}: {e}"))
            .ior
            .into()
    }

    #[test]
    fn no_flags_are_iors_defaults() {
        let defaults = IorOptions {
            choice: StackChoice {
                preset: Some(iopath_stack::DEFAULT_PRESET.into()),
                ..StackChoice::default()
            },
            ..IorOptions::default()
        };
        assert_eq!(options(&[]), defaults);
    }

    #[test]
    fn every_flag_reaches_its_option() {
        let given = options(&[
            "-N",
            "3",
            "-b",
            "4m",
            "-t",
            "64k",
            "-s",
            "2",
            "-F",
            "-w",
            "-r",
            "-C",
            "-e",
            "-Y",
            "-z",
            "-E",
            "-D",
            "30",
            "-T",
            "2",
            "-vv",
            "-g",
            "-c",
            "-m",
            "-u",
            "-x",
            "-B",
            "-f",
            "tests.ior",
            "-l",
            "offset",
            "-i",
            "5",
            "-o",
            "/x/y",
            "-k",
            "-a",
            "sync",
            "-O",
            "summaryFormat=JSON",
            "--preset",
            "spider-mini",
            "--route-set",
            "rr",
            "--processes",
            "--dir",
            "/d",
        ]);
        let expected = IorOptions {
            tasks: Some(3),
            block_size_bytes: 4 << 20,
            transfer_size_bytes: 64 << 10,
            segments: 2,
            file_per_proc: true,
            write: true,
            read: true,
            reorder_tasks: true,
            fsync: true,
            fsync_per_write: true,
            random_offset: true,
            use_existing_file: true,
            deadline_s: 30,
            stonewall_wear_out: false,
            max_minutes: 2,
            inter_test_delay_s: 0,
            verbose: 2,
            intra_test_barriers: true,
            collective: true,
            multi_file: true,
            unique_dir: true,
            single_xfer_attempt: true,
            direct_io: true,
            store_file_offset: true,
            repetitions: 5,
            test_file: "/x/y".into(),
            keep_file: true,
            api: "sync".into(),
            summary_format: "default".into(),
            summary_file: None,
            ior_options: vec!["summaryFormat=JSON".into()],
            script: Some(PathBuf::from("tests.ior")),
            choice: StackChoice {
                preset: Some("spider-mini".into()),
                stack: None,
                route_set: Some("rr".into()),
            },
            processes: true,
            attach: None,
            dir: Some(PathBuf::from("/d")),
            web: None,
        };
        assert_eq!(given, expected);
        assert_eq!(
            options(&["--stack", "s.toml"]).choice.stack,
            Some("s.toml".into())
        );
        assert!(
            Cli::try_parse_from(["ior", "--preset", "spider-mini", "--stack", "b"]).is_err(),
            "a preset or a stack file, not both"
        );
        assert!(Cli::try_parse_from(["ior", "-t", "1x"]).is_err());
        assert!(
            options(&["--posix.odirect"]).direct_io,
            "IOR 4's spelling of -B"
        );
        assert_eq!(options(&["-t", "1.5m"]).transfer_size_bytes, 3 << 19);
    }
}
