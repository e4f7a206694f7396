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
//! | `-i` | repetitions | write and read this many times |
//! | `-o` | testFile | the file's path in the stack's namespace |
//! | `-k` | keepFile | keep the files at the end |
//! | `-O summaryFormat=JSON` | | JSON on standard output instead of text |

use std::path::PathBuf;

use iopath_stack::StackChoice;

use crate::error::BenchError;

/// Most tasks one run may start.
pub const TASKS_MAX: u32 = 4096;
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

/// `iopath bench ior`'s options, as given: IOR's flags (each field names its flag), and
/// where to run. [`IorParams::from_options`] checks them.
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
    /// IOR's `-O` options, `KEY=VALUE`; `summaryFormat=JSON` prints JSON instead of text.
    pub ior_options: Vec<String>,
    /// The stack to run on (default asci-red-mini).
    pub choice: StackChoice,
    /// A process per server node on loopback TCP (the tasks run in this process, on the
    /// stack's client nodes); default: every node in this process on in-memory networks.
    pub processes: bool,
    /// Directory for the stack's storage and the disk baseline; default: a temporary
    /// directory in the current directory (on its file system, not /tmp, which may be tmpfs).
    pub dir: Option<PathBuf>,
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
            store_file_offset: false,
            repetitions: 1,
            test_file: "/ior/testFile".to_owned(),
            keep_file: false,
            api: "async".to_owned(),
            ior_options: Vec::new(),
            choice: StackChoice::default(),
            processes: false,
            dir: None,
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
}

/// Checked IOR options (the number of tasks is fixed once the stack is known).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IorParams {
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
    /// The calls transfers make.
    pub api: Api,
}

impl IorParams {
    /// Checks `args`. IOR's rules: a transfer is whole 8-byte words, a block is whole
    /// transfers; neither -w nor -r means both.
    pub fn from_options(args: &IorOptions) -> Result<IorParams, BenchError> {
        let bad = |option: &str, why: String| BenchError::BadOption {
            option: option.to_owned(),
            why,
        };
        let t = args.transfer_size_bytes;
        if t == 0 || !t.is_multiple_of(WORD_BYTES) {
            return Err(bad(
                "-t",
                format!(
                    "transfer size {t} bytes must be a positive multiple of {WORD_BYTES} bytes"
                ),
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
        let mut format = SummaryFormat::Text;
        for option in &args.ior_options {
            let (key, value) = option.split_once('=').ok_or_else(|| {
                bad(
                    "-O",
                    format!("{option:?} is not KEY=VALUE (as in summaryFormat=JSON)"),
                )
            })?;
            match (key, value.to_ascii_lowercase().as_str()) {
                ("summaryFormat", "json") => format = SummaryFormat::Json,
                ("summaryFormat", "default") => format = SummaryFormat::Text,
                ("summaryFormat", _) => {
                    return Err(bad(
                        "-O",
                        format!("summaryFormat={value}: this IOR knows default and JSON"),
                    ));
                }
                _ => {
                    return Err(bad(
                        "-O",
                        format!("unknown option {key:?} (known: summaryFormat)"),
                    ));
                }
            }
        }
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
        let (write, read) = match (args.write, args.read) {
            (false, false) => (true, true),
            both => both,
        };
        Ok(IorParams {
            tasks: args.tasks,
            block_size_bytes: b,
            transfer_size_bytes: t,
            segments: args.segments,
            file_per_proc: args.file_per_proc,
            write,
            read,
            reorder_tasks: args.reorder_tasks,
            fsync: args.fsync,
            store_file_offset: args.store_file_offset,
            repetitions: args.repetitions,
            test_file,
            keep_file: args.keep_file,
            format,
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
        Ok(())
    }

    /// The file task `task` uses.
    pub fn file_of(&self, task: u32) -> String {
        if self.file_per_proc {
            format!("{}.{task:08}", self.test_file)
        } else {
            self.test_file.clone()
        }
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
        IorParams::from_options(&options)
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
        assert_eq!(p.file_of(3), "/ior/testFile.00000003");
        let p = params(IorOptions {
            test_file: "data/x".into(),
            ..IorOptions::default()
        })
        .unwrap();
        assert_eq!(p.test_file, "/data/x");
        assert_eq!(p.file_of(3), "/data/x");
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
        let p = params(sizes(1 << 20, 1 << 30)).unwrap();
        assert!(p.check_tasks(2048).is_err(), "more than 1 TiB is refused");
        assert!(p.check_tasks(8).is_ok());
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
