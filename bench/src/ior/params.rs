//! IOR's options, with IOR's names and meanings, checked once into [`IorParams`].
//!
//! | flag | IOR name | meaning |
//! |---|---|---|
//! | `-N` | numTasks | tasks (default: one per client node of the stack) |
//! | `-b` | blockSize | contiguous bytes each task writes per segment |
//! | `-t` | transferSize | bytes per read or write call |
//! | `-s` | segmentCount | segments (each: every task's block once) |
//! | `-F` | filePerProc | a file per task instead of one shared file |
//! | `-w` / `-r` | writeFile / readFile | write phase / read phase (neither: both) |
//! | `-C` | reorderTasks | read back the data of the task one node over |
//! | `-e` | fsync | fsync before close after writing |
//! | `-Y` | fsyncPerWrite | fsync after every write call |
//! | `-z` | randomOffset | each task visits its transfers in a random order |
//! | `-E` | useExistingTestFile | open the files an earlier test kept instead of creating them |
//! | `-D` | deadlineForStonewalling | a phase stops starting transfers after this many seconds |
//! | `-T` | maxTimeDuration | a test stops after this many minutes |
//! | `-g` | intraTestBarriers | the tasks wait for each other between open, transfers and close |
//! | `-m` | multiFile | a file (or set of files) per repetition |
//! | `-u` | uniqueDir | with `-F`, each task's file in a directory of its own |
//! | `-x` | singleXferAttempt | never retry a short transfer (iopath's transfers are whole or fail) |
//! | `-B` | useO_DIRECT | bypass client caches (iopath's client library keeps none) |
//! | `-c` | collective | refused: MPI-IO's collective buffering has no meaning here |
//! | `-v` | verbose | more lines: phase start times, per-task times, the parameters |
//! | `-i` | repetitions | write and read this many times |
//! | `-o` | testFile | the file's path in the stack's namespace |
//! | `-k` | keepFile | keep the files at the end |
//! | `-l offset` | dataPacketType | stamp every word with its file offset (`timestamp`: not) |
//! | `-f` | | a script of several tests (see [`super::directives`]) |
//! | `-O summaryFormat=` | | `default`, `JSON` or `CSV` |
//! | `-O summaryFile=` | | the results go to this file; log lines stay on standard output |

use std::path::PathBuf;
use std::time::Duration;

use iopath_stack::StackChoice;

use crate::error::BenchError;

/// Most tasks one run may start: as many as a stack may have nodes (Jaguar's 18,688 clients
/// fit), each task holding one transfer's buffer at a time.
pub const TASKS_MAX: u32 = 20_000;
/// Most repetitions.
pub const REPETITIONS_MAX: u32 = 1000;
/// Most segments.
pub const SEGMENTS_MAX: u64 = 1 << 20;
/// Largest transfer: one buffer of this size per task is in memory at once.
pub const TRANSFER_MAX_BYTES: u64 = 1 << 30;
/// Largest aggregate file size (the storage targets' object limit).
pub const AGGREGATE_MAX_BYTES: u64 = 1 << 40;
/// IOR writes 8-byte words; transfers and blocks are whole words.
pub const WORD_BYTES: u64 = 8;
/// Most transfers of all tasks together in a test with random offsets (`-z`): each task
/// holds its shuffled offsets, 8 bytes each, so this bounds that memory to 128 MiB.
pub const RANDOM_TRANSFERS_MAX: u64 = 1 << 24;
/// Longest stonewalling deadline (`-D`), seconds.
pub const DEADLINE_MAX_S: u64 = 24 * 3600;
/// Longest test (`-T`), minutes.
pub const MAX_TIME_MAX_MIN: u64 = 24 * 60;
/// Longest pause between the tests of a script (`interTestDelay`), seconds.
pub const INTER_TEST_DELAY_MAX_S: u64 = 3600;
/// Most `-v`.
pub const VERBOSE_MAX: u8 = 3;
/// Largest `-f` script (IOR's own example, every key listed, is 1.5 KiB).
pub const SCRIPT_MAX_BYTES: u64 = 1 << 20;

/// Reads the text file at `path`, refusing one larger than `max_bytes`.
pub fn read_bounded(path: &std::path::Path, max_bytes: u64) -> std::io::Result<String> {
    use std::io::Read;
    let mut text = String::new();
    std::fs::File::open(path)?
        .take(max_bytes + 1)
        .read_to_string(&mut text)?;
    if text.len() as u64 > max_bytes {
        return Err(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!("larger than {max_bytes} bytes"),
        ));
    }
    Ok(text)
}

/// `iopath bench ior`'s options, as given: IOR's flags (each field names its flag), and
/// where to run. [`IorOptions::tests`] checks them into the tests to run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IorOptions {
    /// Number of tasks (IOR numTasks, `-N`); default: one per client node of the stack.
    pub tasks: Option<u32>,
    /// Contiguous bytes to write per task per segment (IOR blockSize, `-b`).
    pub block_size_bytes: u64,
    /// Bytes per read or write call (IOR transferSize, `-t`).
    pub transfer_size_bytes: u64,
    /// Number of segments (IOR segmentCount, `-s`).
    pub segments: u64,
    /// A file per task instead of one shared file (IOR filePerProc, `-F`).
    pub file_per_proc: bool,
    /// Write the file (IOR writeFile, `-w`); with neither `write` nor `read`, both.
    pub write: bool,
    /// Read the file back, verifying every byte (IOR readFile with checkRead, `-r`).
    pub read: bool,
    /// Read back what the task one node over wrote (IOR reorderTasks, `-C`).
    pub reorder_tasks: bool,
    /// fsync each file before closing it after writing (IOR fsync, `-e`).
    pub fsync: bool,
    /// fsync after every write call (IOR fsyncPerWrite, `-Y`).
    pub fsync_per_write: bool,
    /// Each task makes its transfers in a random order (IOR randomOffset, `-z`).
    pub random_offset: bool,
    /// Open the files an earlier test of the run kept instead of creating them (IOR
    /// useExistingTestFile, `-E`).
    pub use_existing_file: bool,
    /// Seconds after which a phase starts no more transfers; 0: none (IOR
    /// deadlineForStonewalling, `-D`).
    pub deadline_s: u64,
    /// Once a deadline stopped a phase, every task goes on until it has made as many
    /// transfers as the task that made the most (IOR stoneWallingWearOut, `-O
    /// stoneWallingWearOut=1`; needs `-D`); the stonewalling figures are printed only then, as
    /// IOR prints them.
    pub stonewall_wear_out: bool,
    /// Minutes after which a test stops; 0: none (IOR maxTimeDuration, `-T`).
    pub max_minutes: u64,
    /// Seconds to wait before each test of a script after the first (IOR interTestDelay).
    pub inter_test_delay_s: u64,
    /// How much more to say (IOR verbose, `-v`, repeatable).
    pub verbose: u8,
    /// The tasks wait for each other between open, transfers and close (IOR
    /// intraTestBarriers, `-g`).
    pub intra_test_barriers: bool,
    /// MPI-IO collective calls (IOR collective, `-c`): refused, with the reason.
    pub collective: bool,
    /// A file per repetition (IOR multiFile, `-m`).
    pub multi_file: bool,
    /// With `-F`, each task's file in a directory of its own (IOR uniqueDir, `-u`).
    pub unique_dir: bool,
    /// Do not retry a short transfer (IOR singleXferAttempt, `-x`).
    pub single_xfer_attempt: bool,
    /// Bypass client caches (IOR useO_DIRECT, `-B`, `--posix.odirect`).
    pub direct_io: bool,
    /// Stamp every word with its file offset, filling the buffer again for each transfer
    /// (IOR storeFileOffset, `-l`).
    pub store_file_offset: bool,
    /// Repetitions (IOR repetitions, `-i`).
    pub repetitions: u32,
    /// The test file's path in the stack's namespace (IOR testFile, `-o`); with
    /// `file_per_proc`, each task's file is this with `.NNNNNNNN` appended.
    pub test_file: String,
    /// Keep the files at the end (IOR keepFile, `-k`).
    pub keep_file: bool,
    /// The I/O calls each transfer makes (IOR's api, `-a`): `sync` (or `posix`) or `async`.
    pub api: String,
    /// IOR's output format (`-O summaryFormat=`): `default`, `JSON` or `CSV`.
    pub summary_format: String,
    /// Where the results go (`-O summaryFile=`); default: standard output.
    pub summary_file: Option<PathBuf>,
    /// IOR's `-O` directives, `KEY=VALUE[,KEY=VALUE...]`, applied after the flags.
    pub ior_options: Vec<String>,
    /// A script of tests (IOR's `-f`), each starting from the one before, the first from the
    /// flags.
    pub script: Option<PathBuf>,
    /// The stack to run on (default asci-red-mini).
    pub choice: StackChoice,
    /// A process per server node on loopback TCP (the tasks run in this process, on the
    /// stack's client nodes); default: every node in this process on in-memory networks.
    pub processes: bool,
    /// Run on a stack `iopath launch` started, the file it wrote: its client nodes start in
    /// this process, and its servers are where it placed them.
    pub attach: Option<PathBuf>,
    /// Directory for the stack's storage and the disk baseline; default: a temporary
    /// directory in the current directory (on its file system, not /tmp, which may be tmpfs).
    pub dir: Option<PathBuf>,
    /// Serve the live view of the stack on this address while IOR runs.
    pub web: Option<std::net::SocketAddr>,
}

impl Default for IorOptions {
    /// IOR's defaults: `-b 1m -t 256k -s 1 -i 1 -o /ior/testFile -a async`, nothing else.
    fn default() -> Self {
        IorOptions {
            tasks: None,
            block_size_bytes: 1 << 20,
            transfer_size_bytes: 256 << 10,
            segments: 1,
            file_per_proc: false,
            write: false,
            read: false,
            reorder_tasks: false,
            fsync: false,
            fsync_per_write: false,
            random_offset: false,
            use_existing_file: false,
            deadline_s: 0,
            stonewall_wear_out: false,
            max_minutes: 0,
            inter_test_delay_s: 0,
            verbose: 0,
            intra_test_barriers: false,
            collective: false,
            multi_file: false,
            unique_dir: false,
            single_xfer_attempt: false,
            direct_io: false,
            store_file_offset: false,
            repetitions: 1,
            test_file: "/ior/testFile".to_owned(),
            keep_file: false,
            api: "async".to_owned(),
            summary_format: "default".to_owned(),
            summary_file: None,
            ior_options: Vec::new(),
            script: None,
            choice: StackChoice::default(),
            processes: false,
            attach: None,
            dir: None,
            web: None,
        }
    }
}

/// IOR's output formats.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SummaryFormat {
    /// IOR's text.
    Text,
    /// IOR's JSON (`-O summaryFormat=JSON`).
    Json,
    /// IOR's CSV (`-O summaryFormat=CSV`): a header and a line per phase.
    Csv,
}

/// Which calls the transfers make.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Api {
    /// `write_at`/`read_at`: ASCI Red's synchronous calls.
    Sync,
    /// `iwrite`/`iread` then `iowait`: ASCI Red's asynchronous calls.
    Async,
}

impl Api {
    /// The name `-a` takes.
    pub fn name(self) -> &'static str {
        match self {
            Api::Sync => "sync",
            Api::Async => "async",
        }
    }

    /// The name IOR's output gives it: `POSIX` for blocking calls, as IOR's POSIX api makes
    /// them; `iopath-async` for iwrite/iowait, which IOR has no api for.
    pub fn ior_name(self) -> &'static str {
        match self {
            Api::Sync => "POSIX",
            Api::Async => "iopath-async",
        }
    }
}

/// One checked IOR test (the number of tasks is fixed once the stack is known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IorParams {
    /// IOR's TestID: the test's place in the run, from 0.
    pub test_id: u32,
    /// Tasks asked for, if any.
    pub tasks: Option<u32>,
    /// IOR blockSize.
    pub block_size_bytes: u64,
    /// IOR transferSize.
    pub transfer_size_bytes: u64,
    /// IOR segmentCount.
    pub segments: u64,
    /// IOR filePerProc.
    pub file_per_proc: bool,
    /// Run the write phase.
    pub write: bool,
    /// Run the read phase.
    pub read: bool,
    /// IOR reorderTasks.
    pub reorder_tasks: bool,
    /// IOR fsync.
    pub fsync: bool,
    /// IOR fsyncPerWrite.
    pub fsync_per_write: bool,
    /// IOR randomOffset.
    pub random_offset: bool,
    /// IOR useExistingTestFile.
    pub use_existing_file: bool,
    /// IOR deadlineForStonewalling.
    pub deadline: Option<Duration>,
    /// IOR stoneWallingWearOut (only with a deadline).
    pub wear_out: bool,
    /// IOR maxTimeDuration.
    pub max_duration: Option<Duration>,
    /// IOR interTestDelay.
    pub inter_test_delay: Duration,
    /// IOR verbose.
    pub verbose: u8,
    /// IOR intraTestBarriers.
    pub intra_test_barriers: bool,
    /// IOR multiFile.
    pub multi_file: bool,
    /// IOR uniqueDir.
    pub unique_dir: bool,
    /// IOR singleXferAttempt.
    pub single_xfer_attempt: bool,
    /// IOR useO_DIRECT.
    pub direct_io: bool,
    /// IOR storeFileOffset.
    pub store_file_offset: bool,
    /// IOR repetitions.
    pub repetitions: u32,
    /// IOR testFile, absolute.
    pub test_file: String,
    /// IOR keepFile.
    pub keep_file: bool,
    /// Output format.
    pub format: SummaryFormat,
    /// Where the results go; `None`: standard output.
    pub summary_file: Option<PathBuf>,
    /// The calls transfers make.
    pub api: Api,
}

impl IorParams {
    /// Checks `args` as test `test_id`. IOR's rules: a transfer is whole 8-byte words, a block
    /// is whole transfers; neither -w nor -r means both.
    pub fn from_options(args: &IorOptions, test_id: u32) -> Result<IorParams, BenchError> {
        let (t, b) = check_sizes(args)?;
        check_bounds(args)?;
        check_modes(args)?;
        let test_file = test_file(args)?;
        let format = summary_format(args)?;
        let api = api(args)?;
        let (write, read) = match (args.write, args.read) {
            (false, false) => (true, true),
            both => both,
        };
        let seconds = |s: u64| (s > 0).then(|| Duration::from_secs(s));
        Ok(IorParams {
            test_id,
            tasks: args.tasks,
            block_size_bytes: b,
            transfer_size_bytes: t,
            segments: args.segments,
            file_per_proc: args.file_per_proc,
            write,
            read,
            reorder_tasks: args.reorder_tasks,
            fsync: args.fsync,
            fsync_per_write: args.fsync_per_write,
            random_offset: args.random_offset,
            use_existing_file: args.use_existing_file,
            deadline: seconds(args.deadline_s),
            wear_out: args.stonewall_wear_out,
            max_duration: seconds(args.max_minutes * 60),
            inter_test_delay: Duration::from_secs(args.inter_test_delay_s),
            verbose: args.verbose,
            intra_test_barriers: args.intra_test_barriers,
            multi_file: args.multi_file,
            unique_dir: args.unique_dir,
            single_xfer_attempt: args.single_xfer_attempt,
            direct_io: args.direct_io,
            store_file_offset: args.store_file_offset,
            repetitions: args.repetitions,
            test_file,
            keep_file: args.keep_file,
            format,
            summary_file: args.summary_file.clone(),
            api,
        })
    }

    /// The offset the data pattern of a transfer at file offset `offset` is made for: the
    /// offset itself with -l, else 0 (every transfer of a task carries the same bytes).
    pub fn pattern_offset(&self, offset: u64) -> u64 {
        if self.store_file_offset { offset } else { 0 }
    }

    /// Bytes all tasks move in one phase.
    pub fn aggregate_bytes(&self, tasks: u32) -> u64 {
        u64::from(tasks)
            .saturating_mul(self.block_size_bytes)
            .saturating_mul(self.segments)
    }

    /// Checks the size of the run once the number of tasks is known.
    pub fn check_tasks(&self, tasks: u32) -> Result<(), BenchError> {
        if !(1..=TASKS_MAX).contains(&tasks) {
            return Err(BenchError::BadOption {
                option: "-N".into(),
                why: format!("tasks must be 1 to {TASKS_MAX}"),
            });
        }
        let total = self.aggregate_bytes(tasks);
        if total > AGGREGATE_MAX_BYTES {
            return Err(BenchError::BadOption {
                option: "-b".into(),
                why: format!(
                    "{tasks} tasks x {} segments x {} bytes is more than {AGGREGATE_MAX_BYTES} bytes",
                    self.segments, self.block_size_bytes
                ),
            });
        }
        let transfers = total / self.transfer_size_bytes;
        if self.random_offset && transfers > RANDOM_TRANSFERS_MAX {
            return Err(BenchError::BadOption {
                option: "-z".into(),
                why: format!(
                    "{transfers} transfers in random order is more than {RANDOM_TRANSFERS_MAX}: \
                     each task keeps its shuffled offsets in memory; use a larger -t"
                ),
            });
        }
        Ok(())
    }

    /// The directory task `task`'s file is in with -u (`<dir of -o>/<task>`), if any.
    pub fn unique_dir_of(&self, task: u32) -> Option<String> {
        self.unique_dir.then(|| {
            let (parent, _) = self.test_file.rsplit_once('/').unwrap_or(("", ""));
            format!("{parent}/{task}")
        })
    }

    /// The file task `task` uses in repetition `iteration`: `-o`, in its own directory with
    /// -u, with `.NNNNNNNN` (the task) appended with -F and `.N` (the repetition) with -m.
    pub fn file_of(&self, task: u32, iteration: u32) -> String {
        let mut path = match self.unique_dir_of(task) {
            Some(dir) => {
                let (_, name) = self.test_file.rsplit_once('/').unwrap_or(("", ""));
                format!("{dir}/{name}")
            }
            None => self.test_file.clone(),
        };
        if self.file_per_proc {
            path.push_str(&format!(".{task:08}"));
        }
        if self.multi_file {
            path.push_str(&format!(".{iteration}"));
        }
        path
    }

    /// Where transfer `k` of segment `segment` of `task` goes in its file (IOR's segmented
    /// layout: in a shared file each segment holds every task's block in task order).
    pub fn offset_of(&self, tasks: u32, task: u32, segment: u64, k: u64) -> u64 {
        let b = self.block_size_bytes;
        let within = k * self.transfer_size_bytes;
        if self.file_per_proc {
            segment * b + within
        } else {
            (segment * u64::from(tasks) + u64::from(task)) * b + within
        }
    }

    /// Transfers per block.
    pub fn transfers_per_block(&self) -> u64 {
        self.block_size_bytes / self.transfer_size_bytes
    }

    /// Transfers one task makes in a phase.
    pub fn transfers_per_task(&self) -> u64 {
        self.transfers_per_block() * self.segments
    }

    /// The file offsets of `task`'s transfers, in IOR's order: segment by segment, each block
    /// front to back; with -z shuffled by `seed` (the same seed gives the same order).
    pub fn transfer_offsets(
        &self,
        tasks: u32,
        task: u32,
        seed: Option<u64>,
    ) -> Box<dyn Iterator<Item = u64> + Send + '_> {
        let per_block = self.transfers_per_block();
        let in_order = (0..self.segments).flat_map(move |segment| {
            (0..per_block).map(move |k| self.offset_of(tasks, task, segment, k))
        });
        match seed {
            None => Box::new(in_order),
            Some(seed) => {
                // Bounded by RANDOM_TRANSFERS_MAX (check_tasks).
                let mut offsets: Vec<u64> = in_order.collect();
                shuffle(&mut offsets, seed, task);
                Box::new(offsets.into_iter())
            }
        }
    }
}

/// A refusal of `option`, saying `why`.
fn bad(option: &str, why: String) -> BenchError {
    BenchError::BadOption {
        option: option.to_owned(),
        why,
    }
}

/// The transfer and block sizes (`-t`, `-b`), checked: whole words, within bounds, and the
/// block a multiple of the transfer.
fn check_sizes(args: &IorOptions) -> Result<(u64, u64), BenchError> {
    let t = args.transfer_size_bytes;
    if t == 0 || !t.is_multiple_of(WORD_BYTES) {
        return Err(bad(
            "-t",
            format!("transfer size {t} bytes must be a positive multiple of {WORD_BYTES} bytes"),
        ));
    }
    if t > TRANSFER_MAX_BYTES {
        return Err(bad(
            "-t",
            format!("transfer size {t} bytes exceeds {TRANSFER_MAX_BYTES} bytes"),
        ));
    }
    let b = args.block_size_bytes;
    if b < t || !b.is_multiple_of(t) {
        return Err(bad(
            "-b",
            format!(
                "block size {b} bytes must be a positive multiple of the transfer size ({t} bytes)"
            ),
        ));
    }
    Ok((t, b))
}

/// The counts and times, each within its bound (`-s`, `-i`, `-N`, `-D`, `-T`, `-v`, ...).
fn check_bounds(args: &IorOptions) -> Result<(), BenchError> {
    if !(1..=SEGMENTS_MAX).contains(&args.segments) {
        return Err(bad(
            "-s",
            format!("segment count must be 1 to {SEGMENTS_MAX}"),
        ));
    }
    if !(1..=REPETITIONS_MAX).contains(&args.repetitions) {
        return Err(bad(
            "-i",
            format!("repetitions must be 1 to {REPETITIONS_MAX}"),
        ));
    }
    if let Some(n) = args.tasks
        && !(1..=TASKS_MAX).contains(&n)
    {
        return Err(bad("-N", format!("tasks must be 1 to {TASKS_MAX}")));
    }
    if args.deadline_s > DEADLINE_MAX_S {
        return Err(bad(
            "-D",
            format!("the stonewalling deadline is at most {DEADLINE_MAX_S} seconds"),
        ));
    }
    if args.stonewall_wear_out && args.deadline_s == 0 {
        // IOR's own check, in its words.
        return Err(bad(
            "-O stoneWallingWearOut=1",
            "the stoneWallingWearOut is only sensible when setting a stonewall deadline with -D"
                .into(),
        ));
    }
    if args.max_minutes > MAX_TIME_MAX_MIN {
        return Err(bad(
            "-T",
            format!("the longest test is {MAX_TIME_MAX_MIN} minutes"),
        ));
    }
    if args.inter_test_delay_s > INTER_TEST_DELAY_MAX_S {
        return Err(bad(
            "interTestDelay",
            format!("the longest pause between tests is {INTER_TEST_DELAY_MAX_S} seconds"),
        ));
    }
    if args.verbose > VERBOSE_MAX {
        return Err(bad("-v", format!("at most {VERBOSE_MAX} times")));
    }
    Ok(())
}

/// What iopath does not do (`-c`), or does only with another flag (`-u` with `-F`).
fn check_modes(args: &IorOptions) -> Result<(), BenchError> {
    if args.collective {
        return Err(bad(
            "-c",
            "collective I/O is MPI-IO's two-phase buffering, in which a few ranks gather \
             the others' data before writing; iopath's tasks make independent calls \
             through the client library (as IOR's POSIX api does), so there is nothing \
             to make collective — run without -c"
                .into(),
        ));
    }
    if args.unique_dir && !args.file_per_proc {
        return Err(bad(
            "-u",
            "a directory per task holds each task's own file: use it with -F".into(),
        ));
    }
    Ok(())
}

/// The test file's path in the file system (`-o`), absolute.
fn test_file(args: &IorOptions) -> Result<String, BenchError> {
    let test_file = if args.test_file.starts_with('/') {
        args.test_file.clone()
    } else {
        format!("/{}", args.test_file)
    };
    if test_file.ends_with('/') || test_file.contains("//") {
        return Err(bad(
            "-o",
            format!("{:?} does not name a file", args.test_file),
        ));
    }
    Ok(test_file)
}

/// IOR's output format (`-O summaryFormat=`).
fn summary_format(args: &IorOptions) -> Result<SummaryFormat, BenchError> {
    let format = match args.summary_format.to_ascii_lowercase().as_str() {
        "default" => SummaryFormat::Text,
        "json" => SummaryFormat::Json,
        "csv" => SummaryFormat::Csv,
        _ => {
            return Err(bad(
                "-O",
                format!(
                    "summaryFormat={}: this IOR knows default, JSON and CSV",
                    args.summary_format
                ),
            ));
        }
    };
    Ok(format)
}

/// The calls the transfers make (`-a`).
fn api(args: &IorOptions) -> Result<Api, BenchError> {
    let api = match args.api.to_ascii_lowercase().as_str() {
        "sync" | "posix" => Api::Sync,
        "async" => Api::Async,
        other => {
            return Err(bad(
                "-a",
                format!(
                    "api {other:?}: this IOR knows sync (POSIX-style blocking calls) and async (iwrite/iowait)"
                ),
            ));
        }
    };
    Ok(api)
}

/// `task`'s random order with -z: its offsets shuffled by the test's `seed` and its number,
/// the one rule a writer and a later reader of its transfers both follow.
pub fn shuffle(offsets: &mut [u64], seed: u64, task: u32) {
    fastrand::Rng::with_seed(seed ^ u64::from(task)).shuffle(offsets);
}

/// IOR's task placement: tasks fill nodes in contiguous blocks, `tasks_per_node` (rounded
/// up) each. Returns the node of `task`.
pub fn node_of(task: u32, tasks: u32, nodes: u32) -> u32 {
    assert!(
        nodes > 0 && task < tasks,
        "task {task} of {tasks} on {nodes} nodes"
    );
    let per_node = tasks.div_ceil(nodes);
    task / per_node
}

/// Tasks per node, as IOR reports it (`tPN`).
pub fn tasks_per_node(tasks: u32, nodes: u32) -> u32 {
    tasks.div_ceil(nodes.max(1))
}

/// Whose data `task` reads back: its own, or with -C the task `tasks_per_node` further on
/// (one node over), as IOR's reorderTasks with its default offset of one node.
pub fn reader_source(task: u32, tasks: u32, nodes: u32, reorder: bool) -> u32 {
    if !reorder {
        return task;
    }
    (task + tasks_per_node(tasks, nodes)) % tasks
}

#[cfg(test)]
mod tests {
    use super::*;

    fn params(options: IorOptions) -> Result<IorParams, BenchError> {
        options.tests().map(|mut tests| tests.remove(0))
    }

    fn sizes(transfer_size_bytes: u64, block_size_bytes: u64) -> IorOptions {
        IorOptions {
            transfer_size_bytes,
            block_size_bytes,
            ..IorOptions::default()
        }
    }

    #[test]
    fn ior_defaults_and_flags() {
        let p = params(IorOptions::default()).unwrap();
        assert_eq!(p.block_size_bytes, 1 << 20);
        assert_eq!(p.transfer_size_bytes, 256 << 10);
        assert!(p.write && p.read, "neither -w nor -r means both");
        assert_eq!(p.api, Api::Async);
        assert_eq!(p.format, SummaryFormat::Text);
        let posix = IorOptions {
            api: "POSIX".into(),
            ..IorOptions::default()
        };
        assert_eq!(params(posix).unwrap().api, Api::Sync);
        let p = params(IorOptions {
            write: true,
            file_per_proc: true,
            segments: 2,
            ior_options: vec!["summaryFormat=JSON".into()],
            ..sizes(1 << 20, 64 << 20)
        })
        .unwrap();
        assert!(p.write && !p.read && p.file_per_proc);
        assert_eq!(p.format, SummaryFormat::Json);
        assert_eq!(p.aggregate_bytes(8), 8 * 2 * (64 << 20));
        assert_eq!(p.file_of(3, 0), "/ior/testFile.00000003");
        let p = params(IorOptions {
            test_file: "data/x".into(),
            ior_options: vec!["summaryFormat=csv,summaryFile=out.csv".into()],
            ..IorOptions::default()
        })
        .unwrap();
        assert_eq!(p.test_file, "/data/x");
        assert_eq!(p.file_of(3, 0), "/data/x");
        assert_eq!(p.format, SummaryFormat::Csv);
        assert_eq!(p.summary_file, Some(PathBuf::from("out.csv")));
    }

    #[test]
    fn file_names_follow_iors_rules() {
        let p = params(IorOptions {
            file_per_proc: true,
            unique_dir: true,
            multi_file: true,
            test_file: "/scratch/ior/testFile".into(),
            ..IorOptions::default()
        })
        .unwrap();
        assert_eq!(p.unique_dir_of(5).as_deref(), Some("/scratch/ior/5"));
        assert_eq!(p.file_of(5, 2), "/scratch/ior/5/testFile.00000005.2");
        let shared = params(IorOptions {
            multi_file: true,
            ..IorOptions::default()
        })
        .unwrap();
        assert_eq!(shared.file_of(5, 1), "/ior/testFile.1");
        assert_eq!(shared.unique_dir_of(5), None);
    }

    #[test]
    fn bad_values_name_their_flag() {
        let default = IorOptions::default;
        let option = |text: &str| IorOptions {
            ior_options: vec![text.into()],
            ..default()
        };
        for (options, flag) in [
            (sizes(12, 1 << 20), "-t"),
            (sizes(0, 1 << 20), "-t"),
            (sizes(64 << 10, 100 << 10), "-b"),
            (
                IorOptions {
                    segments: 0,
                    ..default()
                },
                "-s",
            ),
            (
                IorOptions {
                    repetitions: 0,
                    ..default()
                },
                "-i",
            ),
            (
                IorOptions {
                    tasks: Some(0),
                    ..default()
                },
                "-N",
            ),
            (
                IorOptions {
                    collective: true,
                    ..default()
                },
                "-c",
            ),
            (
                IorOptions {
                    unique_dir: true,
                    ..default()
                },
                "-u",
            ),
            (
                IorOptions {
                    deadline_s: DEADLINE_MAX_S + 1,
                    ..default()
                },
                "-D",
            ),
            (
                IorOptions {
                    verbose: VERBOSE_MAX + 1,
                    ..default()
                },
                "-v",
            ),
            (option("summaryFormat=XML"), "-O"),
            (option("verbose"), "-O"),
            (option("colour=red"), "-O"),
            (
                IorOptions {
                    api: "MPIIO".into(),
                    ..default()
                },
                "-a",
            ),
        ] {
            let error = params(options.clone()).unwrap_err().to_string();
            assert!(error.starts_with(flag), "{options:?}: {error}");
        }
        let collective = params(IorOptions {
            collective: true,
            ..default()
        })
        .unwrap_err()
        .to_string();
        assert!(collective.contains("independent"), "{collective}");
        let p = params(sizes(1 << 20, 1 << 30)).unwrap();
        assert!(p.check_tasks(2048).is_err(), "more than 1 TiB is refused");
        assert!(p.check_tasks(8).is_ok());
        let random = params(IorOptions {
            random_offset: true,
            ..sizes(8, 1 << 30)
        })
        .unwrap();
        let error = random.check_tasks(2).unwrap_err().to_string();
        assert!(error.starts_with("-z"), "{error}");
    }

    #[test]
    fn a_script_gives_one_test_per_run_from_the_flags() {
        let dir = tempfile::tempdir().unwrap();
        let script = dir.path().join("tests.ior");
        std::fs::write(
            &script,
            "IOR START\n  writeFile=1,keepFile=1\nRUN\n  writeFile=0,readFile=1,keepFile=0\nRUN\nIOR STOP\n",
        )
        .unwrap();
        let tests = IorOptions {
            script: Some(script.clone()),
            segments: 2,
            ..IorOptions::default()
        }
        .tests()
        .unwrap();
        assert_eq!(tests.len(), 2);
        assert_eq!((tests[0].test_id, tests[1].test_id), (0, 1));
        assert!(tests[0].write && !tests[0].read && tests[0].keep_file);
        assert!(!tests[1].write && tests[1].read && !tests[1].keep_file);
        assert!(tests.iter().all(|t| t.segments == 2));
        // The error of the script `text`, which must be refused.
        let refused = |text: &str| {
            std::fs::write(&script, text).unwrap();
            IorOptions {
                script: Some(script.clone()),
                ..IorOptions::default()
            }
            .tests()
            .unwrap_err()
            .to_string()
        };
        let error =
            refused("IOR START\n  summaryFormat=JSON\nRUN\n  summaryFormat=CSV\nRUN\nIOR STOP\n");
        assert!(error.contains("one format"), "{error}");
        let error = refused(&"#".repeat(SCRIPT_MAX_BYTES as usize + 1));
        assert!(error.contains("larger than"), "{error}");
        let error = refused("IOR START\n  blocksize=1x\nRUN\nIOR STOP\n");
        assert!(error.contains("line 2"), "{error}");
    }

    #[test]
    fn offsets_follow_iors_segmented_layout() {
        let segmented = IorOptions {
            segments: 2,
            ..sizes(1 << 20, 4 << 20)
        };
        let p = params(segmented.clone()).unwrap();
        // Shared file: segment 1 of task 2 of 4 starts after segment 0's four blocks.
        assert_eq!(p.offset_of(4, 2, 1, 0), (4 + 2) * (4 << 20));
        assert_eq!(p.offset_of(4, 2, 1, 3), (4 + 2) * (4 << 20) + 3 * (1 << 20));
        let p = params(IorOptions {
            file_per_proc: true,
            ..segmented
        })
        .unwrap();
        assert_eq!(p.offset_of(4, 2, 1, 3), (4 << 20) + 3 * (1 << 20));
    }

    #[test]
    fn random_order_visits_every_transfer_once() {
        let p = params(IorOptions {
            segments: 4,
            random_offset: true,
            ..sizes(64 << 10, 1 << 20)
        })
        .unwrap();
        let in_order: Vec<u64> = p.transfer_offsets(3, 1, None).collect();
        let shuffled: Vec<u64> = p.transfer_offsets(3, 1, Some(7)).collect();
        assert_ne!(in_order, shuffled, "a random order");
        let mut sorted = shuffled.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, in_order, "the same transfers");
        let again: Vec<u64> = p.transfer_offsets(3, 1, Some(7)).collect();
        assert_eq!(again, shuffled, "the same seed, the same order");
        let other: Vec<u64> = p.transfer_offsets(3, 2, Some(7)).collect();
        assert_ne!(
            other.iter().map(|o| o % (1 << 20)).collect::<Vec<_>>(),
            shuffled.iter().map(|o| o % (1 << 20)).collect::<Vec<_>>(),
            "each task its own order"
        );
    }

    #[test]
    fn placement_and_reordering() {
        // 8 tasks on 4 nodes: two per node, in blocks.
        let nodes: Vec<u32> = (0..8).map(|t| node_of(t, 8, 4)).collect();
        assert_eq!(nodes, vec![0, 0, 1, 1, 2, 2, 3, 3]);
        assert_eq!(reader_source(0, 8, 4, true), 2);
        assert_eq!(reader_source(7, 8, 4, true), 1);
        assert_eq!(reader_source(5, 8, 4, false), 5);
        // Fewer tasks than nodes: one each on the first nodes.
        assert_eq!(
            (0..3).map(|t| node_of(t, 3, 8)).collect::<Vec<_>>(),
            vec![0, 1, 2]
        );
    }
}
