//! IOR's output, as pure functions of what was measured: the header, the per-iteration
//! `access bw(MiB/s) IOPS Latency(s) ...` lines, `Max Write`/`Max Read`, the "Summary of all
//! tests" table — in IOR 3.3's column layout — and the same as IOR's JSON
//! (`-O summaryFormat=JSON`), with iopath's baselines and ratios after them.

use std::time::{Instant, SystemTime};

use serde::Serialize;

use super::params::{IorParams, SummaryFormat};

/// One MiB.
const MIB: f64 = (1u64 << 20) as f64;
/// One MB (IOR prints both).
const MB: f64 = 1_000_000.0;

/// A phase of one iteration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Access {
    /// The write phase.
    Write,
    /// The read phase.
    Read,
}

impl Access {
    /// IOR's word for it.
    pub fn name(self) -> &'static str {
        match self {
            Access::Write => "write",
            Access::Read => "read",
        }
    }
}

/// One task's clock readings and call times.
#[derive(Debug, Clone, Copy)]
pub struct TaskTimes {
    /// The task.
    pub task: u32,
    /// When it began opening its file.
    pub open_start: Instant,
    /// When its file was open.
    pub open_end: Instant,
    /// When its first transfer began.
    pub transfer_start: Instant,
    /// When its last transfer ended.
    pub transfer_end: Instant,
    /// When it began closing.
    pub close_start: Instant,
    /// When its file was closed.
    pub close_end: Instant,
    /// Seconds spent in read or write calls.
    pub call_seconds: f64,
    /// Read or write calls made.
    pub calls: u64,
    /// Whether the deadline stopped it before its last transfer.
    pub stonewalled: bool,
    /// Calls it had made when the deadline stopped it (all of them if none did), before any
    /// wear-out: IOR's `pairCnt` at the stonewall.
    pub stonewall_calls: u64,
    /// Seconds from its first transfer to the stonewall (with wear-out: to the moment every
    /// task knew the most any had made, as IOR's `stonewall_time` ends after its reduction).
    pub stonewall_s: f64,
    /// Bytes read back and checked against what was written.
    pub verified_bytes: u64,
}

/// What one phase of one iteration measured, timed as IOR times it: open from the first
/// task's start to the last task's file open, transfers from the first task's first transfer
/// to the last task's last, close likewise, total from the first start to the last close.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PhaseResult {
    /// Write or read.
    pub access: Access,
    /// The iteration (repetition), from 0.
    pub iteration: u32,
    /// Bytes moved by all tasks.
    pub bytes: u64,
    /// Read or write calls made by all tasks.
    pub transfers: u64,
    /// Open time, seconds.
    pub open_s: f64,
    /// Transfer time, seconds.
    pub transfer_s: f64,
    /// Close (with -e, fsync and close) time, seconds.
    pub close_s: f64,
    /// First start to last close, seconds.
    pub total_s: f64,
    /// Mean duration of one read or write call, seconds.
    pub latency_s: f64,
    /// Whether a deadline (`-D`) stopped a task before its last transfer.
    pub stonewalled: bool,
    /// IOR's stonewalling figures, which IOR reckons (and prints) only with
    /// stoneWallingWearOut.
    pub stonewall: Option<Stonewall>,
}

/// IOR's stonewalling figures for one phase (stoneWallingWearOut): how far the tasks had got
/// when the deadline stopped them, each reckoned as IOR's `WriteOrRead` does.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Stonewall {
    /// Fewest transfers a task had made (IOR: the `MPI_MIN` of `pairCnt`).
    pub pairs_min: u64,
    /// Most transfers a task had made (IOR: `pairs_accessed`, the `MPI_MAX`); with wear-out
    /// every task goes on to this many.
    pub pairs_max: u64,
    /// Fewest bytes one task had moved (IOR: `stonewall_min_data_accessed`).
    pub min_data_bytes: u64,
    /// Bytes all tasks had moved, divided by the tasks (IOR: `stonewall_avg_data_accessed`).
    pub mean_data_bytes: u64,
    /// Seconds from task 0's first transfer to the stonewall (IOR: rank 0's
    /// `stonewall_time`).
    pub seconds: f64,
}

impl Stonewall {
    /// IOR's line: `stonewalling pairs accessed min: 12 max: 15 -- min data: 0.1 GiB mean
    /// data: 0.1 GiB time: 1.0s`, the data per task.
    pub fn line(&self) -> String {
        const GIB: f64 = (1u64 << 30) as f64;
        format!(
            "stonewalling pairs accessed min: {} max: {} -- min data: {:.1} GiB mean data: {:.1} GiB time: {:.1}s\n",
            self.pairs_min,
            self.pairs_max,
            self.min_data_bytes as f64 / GIB,
            self.mean_data_bytes as f64 / GIB,
            self.seconds
        )
    }
}

/// IOR's line at a test's end with stoneWallingWearOut: the most transfers a task made by the
/// first repetition's write deadline. The words, run together, are IOR's own
/// (`ShowTestEnd` in `ior-output.c`), kept so that scripts reading IOR's output find them.
pub fn pairs_accessed_line(results: &[PhaseResult]) -> Option<String> {
    let first_write = results.iter().find(|r| r.access == Access::Write)?;
    let wall = first_write.stonewall?;
    Some(format!(
        "Pairs deadlineForStonewallingaccessed: {}\n",
        wall.pairs_max
    ))
}

impl PhaseResult {
    /// Bandwidth, MiB/s: bytes over the total time.
    pub fn bw_mib_s(&self) -> f64 {
        self.bytes as f64 / MIB / self.total_s.max(1e-9)
    }

    /// Calls per second over the transfer time.
    pub fn iops(&self) -> f64 {
        self.transfers as f64 / self.transfer_s.max(1e-9)
    }
}

/// What the run was, for the header and the JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct RunInfo {
    /// When it began.
    pub began: SystemTime,
    /// The command line, as typed.
    pub command_line: String,
    /// `Linux hostname`.
    pub machine: String,
    /// The stack and how it runs, in words.
    pub stack: String,
    /// What the client library talks to (direct, through fyods, routed), in words.
    pub api_version: String,
}

/// One test of the run.
#[derive(Debug, Clone, PartialEq)]
pub struct TestInfo {
    /// When it began.
    pub began: SystemTime,
    /// The checked options.
    pub params: IorParams,
    /// Tasks.
    pub tasks: u32,
    /// Client nodes the tasks run on.
    pub nodes: u32,
    /// Tasks per node.
    pub tasks_per_node: u32,
    /// The seed of the random order (used with -z).
    pub seed: u64,
    /// The file system's size as its clients see it (the targets' statfs summed, as Lustre's
    /// client sums its OSTs), for IOR's `FS` line; `None` if it could not be asked.
    pub fs: Option<FsSize>,
}

/// A file system's size, as statfs says it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct FsSize {
    /// Bytes in all.
    pub total_bytes: u64,
    /// Bytes free.
    pub free_bytes: u64,
    /// Inodes in all.
    pub files: u64,
    /// Inodes free.
    pub files_free: u64,
}

impl FsSize {
    /// IOR's `FS` line's value (`ShowFileSystemSize` in IOR's `utilities.c`): `1.8 TiB   Used
    /// FS: 35.0%   Inodes: 116.4 Mi   Used Inodes: 4.0%`.
    pub fn text(&self) -> String {
        let total = self.total_bytes as f64;
        let used = |free: u64, all: u64| (1.0 - free as f64 / all.max(1) as f64) * 100.0;
        let (size, unit) = if total / f64::from(1u32 << 30) > 1024.0 {
            (total / (1u64 << 40) as f64, "TiB")
        } else {
            (total / f64::from(1u32 << 30), "GiB")
        };
        format!(
            "{size:.1} {unit}   Used FS: {:2.1}%   Inodes: {:.1} Mi   Used Inodes: {:2.1}%",
            used(self.free_bytes, self.total_bytes),
            self.files as f64 / f64::from(1u32 << 20),
            used(self.files_free, self.files)
        )
    }
}

/// The baselines measured in the same run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Baselines {
    /// iopath's raw disk writer: same tasks, same transfers, same bytes, O_DIRECT, fdatasync
    /// at the end, in the directory the stack's storage is in. MiB/s.
    pub disk_write_mib_s: f64,
    /// The same files read back with O_DIRECT. MiB/s.
    pub disk_read_mib_s: f64,
    /// Each disk write measurement (before the run, after it), MiB/s; the best is
    /// `disk_write_mib_s`.
    pub disk_write_each_mib_s: Vec<f64>,
    /// Each disk read measurement, MiB/s; the best is `disk_read_mib_s`.
    pub disk_read_each_mib_s: Vec<f64>,
    /// How the disk baseline was measured, in words.
    pub disk_how: String,
    /// fio's write rate with the same jobs and sizes, when fio is installed. MiB/s.
    pub fio_write_mib_s: Option<f64>,
    /// The fio command, or why fio did not run.
    pub fio_note: String,
    /// One loopback TCP stream moving the same bytes in transfer-size writes (processes
    /// mode only). MiB/s.
    pub tcp_mib_s: Option<f64>,
}

/// The ratios the benchmark exists for.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct Ratios {
    /// Max write over the disk write baseline.
    pub write_vs_disk: Option<f64>,
    /// Max read over the disk read baseline.
    pub read_vs_disk: Option<f64>,
    /// Max write over fio's write rate.
    pub write_vs_fio: Option<f64>,
    /// Max write over min(disk write, loopback TCP) (processes mode).
    pub write_vs_min_disk_tcp: Option<f64>,
    /// Max read over min(disk read, loopback TCP) (processes mode).
    pub read_vs_min_disk_tcp: Option<f64>,
}

impl Ratios {
    /// The ratios of `results` to `baselines`, taken on IOR's "Max Write" / "Max Read".
    pub fn of(results: &[PhaseResult], baselines: &Baselines) -> Ratios {
        let best = |access| {
            results
                .iter()
                .filter(|r| r.access == access)
                .map(PhaseResult::bw_mib_s)
                .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))))
        };
        let ratio = |value: Option<f64>, base: Option<f64>| match (value, base) {
            (Some(v), Some(b)) if b > 0.0 => Some(v / b),
            _ => None,
        };
        let (write, read) = (best(Access::Write), best(Access::Read));
        let disk_w = Some(baselines.disk_write_mib_s);
        let disk_r = Some(baselines.disk_read_mib_s);
        let min_tcp = |disk: f64| baselines.tcp_mib_s.map(|t| t.min(disk));
        Ratios {
            write_vs_disk: ratio(write, disk_w),
            read_vs_disk: ratio(read, disk_r),
            write_vs_fio: ratio(write, baselines.fio_write_mib_s),
            write_vs_min_disk_tcp: ratio(write, min_tcp(baselines.disk_write_mib_s)),
            read_vs_min_disk_tcp: ratio(read, min_tcp(baselines.disk_read_mib_s)),
        }
    }
}

/// What the whole run was, beside IOR's facts: the stack and what of it was modeled.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunFacts {
    /// The stack.
    pub stack: String,
    /// `embedded` or `processes`.
    pub mode: String,
    /// Which parts were modeled rather than real.
    pub modeled: String,
}

/// One test's own facts beside IOR's: what was verified, the journals, the baselines and
/// ratios.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IopathFacts {
    /// Bytes read back and checked word by word.
    pub verified_bytes: u64,
    /// Bytes read but not checked: files an earlier test wrote with another layout.
    pub unchecked_bytes: u64,
    /// Journal commits on all targets during the test, as the storage servers count them.
    pub journal_commits: Option<u64>,
    /// The baselines.
    pub baselines: Baselines,
    /// The ratios.
    pub ratios: Ratios,
}

/// IOR's statistics of one operation over the repetitions.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Summary {
    /// Write or read.
    pub access: Access,
    /// MiB/s: max, min, mean, population standard deviation.
    pub bw_mib_s: [f64; 4],
    /// Operations per second, likewise.
    pub ops: [f64; 4],
    /// Mean total time, seconds.
    pub mean_time_s: f64,
    /// Aggregate MiB of one repetition, as the options ask (a deadline may move less).
    pub aggregate_mib: f64,
}

impl Summary {
    /// The statistics of `access` over `results`, or `None` when it did not run.
    pub fn of(
        results: &[PhaseResult],
        access: Access,
        transfer_size_bytes: u64,
        aggregate_bytes: u64,
    ) -> Option<Summary> {
        let runs: Vec<&PhaseResult> = results.iter().filter(|r| r.access == access).collect();
        if runs.is_empty() {
            return None;
        }
        let bw: Vec<f64> = runs.iter().map(|r| r.bw_mib_s()).collect();
        let ops: Vec<f64> = bw
            .iter()
            .map(|b| b * MIB / transfer_size_bytes as f64)
            .collect();
        let times: Vec<f64> = runs.iter().map(|r| r.total_s).collect();
        Some(Summary {
            access,
            bw_mib_s: stats(&bw),
            ops: stats(&ops),
            mean_time_s: times.iter().sum::<f64>() / times.len() as f64,
            aggregate_mib: aggregate_bytes as f64 / MIB,
        })
    }
}

/// Max, min, mean and population standard deviation, as IOR computes them (all zero for no
/// values).
fn stats(values: &[f64]) -> [f64; 4] {
    use statrs::statistics::Statistics as _;
    if values.is_empty() {
        return [0.0; 4];
    }
    [
        values.max(),
        values.min(),
        values.mean(),
        values.population_std_dev(),
    ]
}

/// IOR's `PPDouble`: ten wide, left-justified, six decimals below 1, two below 3600, none
/// above.
pub fn pp_double(value: f64) -> String {
    if value < 0.0 {
        return format!("{:<10}", "   -");
    }
    let precision = if value < 1.0 {
        6
    } else if value < 3600.0 {
        2
    } else {
        0
    };
    format!("{value:<10.precision$}")
}

/// IOR's `HumanReadable` in base two: `1 MiB`, `2.50 GiB`, `4096 bytes`.
pub fn human_base_two(bytes: u64) -> String {
    const GIB: u64 = 1 << 30;
    const MIB_U: u64 = 1 << 20;
    if bytes >= GIB {
        if bytes.is_multiple_of(GIB) {
            format!("{} GiB", bytes / GIB)
        } else {
            format!("{:.2} GiB", bytes as f64 / GIB as f64)
        }
    } else if bytes >= MIB_U {
        if bytes.is_multiple_of(MIB_U) {
            format!("{} MiB", bytes / MIB_U)
        } else {
            format!("{:.2} MiB", bytes as f64 / MIB_U as f64)
        }
    } else {
        format!("{bytes} bytes")
    }
}

/// A time as C's `ctime` writes it (`Mon Mar  8 23:08:17 2021`), in the local time zone
/// (`TZ`, else the system's), as IOR prints its times.
pub fn ctime(time: SystemTime) -> String {
    ctime_in(time, &jiff::tz::TimeZone::system())
}

/// A time as C's `ctime` writes it, in time zone `zone`.
pub fn ctime_in(time: SystemTime, zone: &jiff::tz::TimeZone) -> String {
    let stamp = jiff::Timestamp::try_from(time).unwrap_or(jiff::Timestamp::UNIX_EPOCH);
    stamp
        .to_zoned(zone.clone())
        .strftime("%a %b %e %H:%M:%S %Y")
        .to_string()
}

/// `Linux hostname`, as IOR's `Machine` line.
pub fn machine() -> String {
    let read = |path: &str| {
        std::fs::read_to_string(path)
            .map(|s| s.trim().to_owned())
            .ok()
            .filter(|s| !s.is_empty())
    };
    format!(
        "{} {}",
        read("/proc/sys/kernel/ostype").unwrap_or_else(|| std::env::consts::OS.to_owned()),
        read("/proc/sys/kernel/hostname").unwrap_or_else(|| "unknown".to_owned())
    )
}

fn key_value(out: &mut String, key: &str, value: impl std::fmt::Display) {
    out.push_str(&format!("{key:<20}: {value}\n"));
}

/// The run's header, printed once before its tests (text only).
pub fn header_text(run: &RunInfo) -> String {
    // IOR's banner word for word, which scripts that read IOR's output look for; what ran
    // it is said on the `Stack` line.
    let mut out = String::from("IOR-3.3.0: MPI Coordinated Test of Parallel I/O\n");
    key_value(&mut out, "Began", ctime(run.began));
    key_value(&mut out, "Command line", &run.command_line);
    key_value(&mut out, "Machine", &run.machine);
    key_value(&mut out, "Stack", &run.stack);
    out
}

/// A test's start: its TestID, its "Options" block and the results table's header (text);
/// the header line alone (CSV); nothing (JSON).
pub fn test_header(run: &RunInfo, test: &TestInfo) -> String {
    let p = &test.params;
    match p.format {
        SummaryFormat::Json => return String::new(),
        SummaryFormat::Csv => {
            return "access,bw(MiB/s),IOPS,Latency,block(KiB),xfer(KiB),open(s),wr/rd(s),close(s),total(s),numTasks,iter\n".to_owned();
        }
        SummaryFormat::Text => {}
    }
    // A blank line between one test's lines and the next's.
    let mut out = String::from(if p.test_id > 0 { "\n" } else { "" });
    key_value(&mut out, "TestID", p.test_id);
    key_value(&mut out, "StartTime", ctime(test.began));
    key_value(&mut out, "Path", p.file_of(0, 0));
    if let Some(fs) = test.fs {
        key_value(&mut out, "FS", fs.text());
    }
    out.push_str("\nOptions: \n");
    key_value(&mut out, "api", p.api.ior_name());
    key_value(&mut out, "apiVersion", api_version(run, p));
    key_value(&mut out, "test filename", &p.test_file);
    key_value(
        &mut out,
        "access",
        if p.file_per_proc {
            "file-per-process"
        } else {
            "single-shared-file"
        },
    );
    key_value(&mut out, "type", "independent");
    key_value(&mut out, "segments", p.segments);
    key_value(
        &mut out,
        "ordering in a file",
        if p.random_offset {
            "random"
        } else {
            "sequential"
        },
    );
    if p.reorder_tasks {
        key_value(&mut out, "ordering inter file", "constant task offset");
        key_value(&mut out, "task offset", 1);
    } else {
        key_value(&mut out, "ordering inter file", "no tasks offsets");
    }
    key_value(&mut out, "nodes", test.nodes);
    key_value(&mut out, "tasks", test.tasks);
    key_value(&mut out, "clients per node", test.tasks_per_node);
    key_value(&mut out, "repetitions", p.repetitions);
    key_value(&mut out, "xfersize", human_base_two(p.transfer_size_bytes));
    key_value(&mut out, "blocksize", human_base_two(p.block_size_bytes));
    key_value(
        &mut out,
        "aggregate filesize",
        human_base_two(p.aggregate_bytes(test.tasks)),
    );
    if let Some(deadline) = p.deadline {
        key_value(&mut out, "stonewallingTime", deadline.as_secs());
        key_value(&mut out, "stoneWallingWearOut", u8::from(p.wear_out));
    }
    if let Some(max) = p.max_duration {
        key_value(
            &mut out,
            "max time duration",
            format!("{} min", max.as_secs() / 60),
        );
    }
    out.push_str("\nResults: \n\n");
    out.push_str("access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n");
    out.push_str("------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n");
    out
}

/// What the client library talks to, and what -B and -x mean here.
fn api_version(run: &RunInfo, p: &IorParams) -> String {
    let mut notes = Vec::new();
    if p.direct_io {
        notes.push(
            "O_DIRECT: the client library keeps no cache, every transfer reaches the servers",
        );
    }
    if p.single_xfer_attempt {
        notes.push("single transfer attempt: every transfer is whole or fails");
    }
    if notes.is_empty() {
        run.api_version.clone()
    } else {
        format!("{} ({})", run.api_version, notes.join("; "))
    }
}

/// One per-iteration line, in the test's format (nothing for JSON, which has them at the
/// end).
pub fn result_row(result: &PhaseResult, test: &TestInfo) -> String {
    let p = &test.params;
    let block_kib = p.block_size_bytes as f64 / 1024.0;
    let xfer_kib = p.transfer_size_bytes as f64 / 1024.0;
    match p.format {
        SummaryFormat::Json => String::new(),
        SummaryFormat::Csv => format!(
            "{},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{:.4},{},{}\n",
            result.access.name(),
            result.bw_mib_s(),
            result.iops(),
            result.latency_s,
            block_kib,
            xfer_kib,
            result.open_s,
            result.transfer_s,
            result.close_s,
            result.total_s,
            test.tasks,
            result.iteration
        ),
        SummaryFormat::Text => format!(
            "{:<10}{} {} {}  {} {} {} {} {} {} {:<4}\n",
            result.access.name(),
            pp_double(result.bw_mib_s()),
            pp_double(result.iops()),
            pp_double(result.latency_s),
            pp_double(block_kib),
            pp_double(xfer_kib),
            pp_double(result.open_s),
            pp_double(result.transfer_s),
            pp_double(result.close_s),
            pp_double(result.total_s),
            result.iteration
        ),
    }
}

/// The `remove` line of an iteration that removed its files.
pub fn remove_row(seconds: f64, iteration: u32) -> String {
    format!(
        "remove    -          -          -           -          -          -          -          -          {} {:<4}\n",
        pp_double(seconds),
        iteration
    )
}

/// `Max Write:` and `Max Read:` after a test's iterations.
pub fn max_lines(results: &[PhaseResult]) -> String {
    let mut out = String::new();
    for (access, label) in [
        (Access::Write, "Max Write: "),
        (Access::Read, "Max Read:  "),
    ] {
        let best = results
            .iter()
            .filter(|r| r.access == access)
            .map(PhaseResult::bw_mib_s)
            .fold(None, |m: Option<f64>, x| Some(m.map_or(x, |m| m.max(x))));
        if let Some(mib_s) = best {
            out.push_str(&format!(
                "{label}{:.2} MiB/sec ({:.2} MB/sec)\n",
                mib_s,
                mib_s * MIB / MB
            ));
        }
    }
    out
}

/// The summary's `Stonewall(s)` and `Stonewall(MiB)` for `access`, as IOR's
/// `PrintLongSummaryOneOperation` reckons them (with stoneWallingWearOut only): the stonewall
/// time summed over the repetitions and divided by their count, and the per-task mean data
/// summed over the repetitions and divided by the summed time — a rate, MiB/s, of the mean
/// task.
pub fn stonewall_summary(
    results: &[PhaseResult],
    access: Access,
    repetitions: u32,
) -> Option<(f64, f64)> {
    let walls: Vec<Stonewall> = results
        .iter()
        .filter(|r| r.access == access)
        .filter_map(|r| r.stonewall)
        .collect();
    if walls.is_empty() {
        return None;
    }
    let seconds: f64 = walls.iter().map(|w| w.seconds).sum();
    let mean_data: u64 = walls.iter().map(|w| w.mean_data_bytes).sum();
    Some((
        seconds / f64::from(repetitions.max(1)),
        mean_data as f64 / seconds.max(1e-9) / MIB,
    ))
}

/// The "Summary of all tests" table (a row per operation of each test) and the `Finished`
/// line.
pub fn summary_text(tests: &[(&TestInfo, &[PhaseResult])], finished: SystemTime) -> String {
    let mut out = String::from("\nSummary of all tests:\n");
    out.push_str(&format!(
        "{:<9} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10} {:>10}",
        "Operation",
        "Max(MiB)",
        "Min(MiB)",
        "Mean(MiB)",
        "StdDev",
        "Max(OPs)",
        "Min(OPs)",
        "Mean(OPs)",
        "StdDev",
        "Mean(s)"
    ));
    out.push_str(" Stonewall(s) Stonewall(MiB)");
    out.push_str(" Test# #Tasks tPN reps fPP reord reordoff reordrand seed segcnt ");
    out.push_str(&format!(
        "{:>8} {:>8} {:>9} {:>5}",
        " blksiz", "xsize", "aggs(MiB)", "API"
    ));
    out.push_str(" RefNum\n");
    for (test, results) in tests {
        let p = &test.params;
        for access in [Access::Write, Access::Read] {
            let Some(s) = Summary::of(
                results,
                access,
                p.transfer_size_bytes,
                p.aggregate_bytes(test.tasks),
            ) else {
                continue;
            };
            out.push_str(&format!("{:<9} ", access.name()));
            for v in s.bw_mib_s.iter().chain(&s.ops) {
                out.push_str(&format!("{v:>10.2} "));
            }
            out.push_str(&format!("{:>10.5} ", s.mean_time_s));
            match stonewall_summary(results, access, p.repetitions) {
                Some((seconds, mib)) => {
                    out.push_str(&format!("{seconds:>10.2} {mib:>13.2} "));
                }
                None => out.push_str(&format!("{:>10} {:>13} ", "NA", "NA")),
            }
            out.push_str(&format!(
                "{:>5} {:>6} {:>3} {:>4} {:>3} {:>5} {:>8} {:>9} {:>4} {:>6} {:>8} {:>8} {:>9.1} {:>3} {:>6}\n",
                p.test_id,
                test.tasks,
                test.tasks_per_node,
                p.repetitions,
                u8::from(p.file_per_proc),
                u8::from(p.reorder_tasks),
                1,
                0,
                0,
                p.segments,
                p.block_size_bytes,
                p.transfer_size_bytes,
                s.aggregate_mib,
                p.api.ior_name(),
                0
            ));
        }
    }
    key_value(&mut out, "Finished", ctime(finished));
    out
}

/// iopath's line about the run: the stack and what was modeled.
pub fn run_facts_text(facts: &RunFacts) -> String {
    format!(
        "\niopath: stack {} ({}); modeled: {}\n",
        facts.stack, facts.mode, facts.modeled
    )
}

/// iopath's lines after a test: what was checked, the baselines and the ratios.
pub fn facts_text(test_id: u32, facts: &IopathFacts) -> String {
    let b = &facts.baselines;
    let r = &facts.ratios;
    let mut out = format!("\niopath, test {test_id}:\n");
    out.push_str(&format!(
        "verified: {} read back and checked word by word\n",
        human_base_two(facts.verified_bytes)
    ));
    if facts.unchecked_bytes > 0 {
        out.push_str(&format!(
            "not checked: {} read from files an earlier test wrote with another layout\n",
            human_base_two(facts.unchecked_bytes)
        ));
    }
    if let Some(commits) = facts.journal_commits {
        out.push_str(&format!("journal commits during the test: {commits}\n"));
    }
    out.push_str("baselines measured in this run:\n");
    let each = |values: &[f64]| {
        values
            .iter()
            .map(|v| format!("{v:.0}"))
            .collect::<Vec<_>>()
            .join(" and ")
    };
    out.push_str(&format!(
        "  disk write  {:>10.2} MiB/s  ({}; measured {} MiB/s)\n",
        b.disk_write_mib_s,
        b.disk_how,
        each(&b.disk_write_each_mib_s)
    ));
    out.push_str(&format!(
        "  disk read   {:>10.2} MiB/s  (the same files read back, O_DIRECT; measured {} MiB/s)\n",
        b.disk_read_mib_s,
        each(&b.disk_read_each_mib_s)
    ));
    match b.fio_write_mib_s {
        Some(f) => out.push_str(&format!(
            "  fio write   {f:>10.2} MiB/s  ({})\n",
            b.fio_note
        )),
        None => out.push_str(&format!(
            "  fio write            -        ({})\n",
            b.fio_note
        )),
    }
    if let Some(t) = b.tcp_mib_s {
        out.push_str(&format!(
            "  loopback TCP {t:>9.2} MiB/s  (one stream, transfer-size writes, the same bytes)\n"
        ));
    }
    let ratio = |label: &str, v: Option<f64>| {
        v.map(|v| format!("  {label:<36} {v:.3}\n"))
            .unwrap_or_default()
    };
    out.push_str("ratios (IOR's Max Write / Max Read over the baseline):\n");
    out.push_str(&ratio("write / disk write", r.write_vs_disk));
    out.push_str(&ratio("read / disk read", r.read_vs_disk));
    out.push_str(&ratio("write / fio write", r.write_vs_fio));
    out.push_str(&ratio(
        "write / min(disk write, loopback TCP)",
        r.write_vs_min_disk_tcp,
    ));
    out.push_str(&ratio(
        "read / min(disk read, loopback TCP)",
        r.read_vs_min_disk_tcp,
    ));
    out
}

/// IOR's per-rank lines at the stonewall with wear-out and `-v`: `0: stonewalling pairs
/// accessed: 12`.
pub fn task_pairs_lines(tasks: &[TaskTimes]) -> String {
    tasks
        .iter()
        .map(|t| {
            format!(
                "{}: stonewalling pairs accessed: {}\n",
                t.task, t.stonewall_calls
            )
        })
        .collect()
}

/// The verbose lines (`-v -v`) of a phase: each task's times.
pub fn task_lines(access: Access, iteration: u32, tasks: &[TaskTimes]) -> String {
    let mut out = String::new();
    for t in tasks {
        let span = |a: std::time::Instant, b: std::time::Instant| {
            b.saturating_duration_since(a).as_secs_f64()
        };
        out.push_str(&format!(
            "task {}: {} iteration {iteration}: open {:.6} s, {} transfers in {:.6} s{}, close {:.6} s\n",
            t.task,
            access.name(),
            span(t.open_start, t.open_end),
            t.calls,
            span(t.transfer_start, t.transfer_end),
            if t.stonewalled { " (stopped at the deadline)" } else { "" },
            span(t.close_start, t.close_end),
        ));
    }
    out
}

/// IOR's JSON document.
#[derive(Debug, Serialize)]
pub struct JsonReport {
    /// IOR: `Version`.
    #[serde(rename = "Version")]
    pub version: String,
    /// IOR: `Began`.
    #[serde(rename = "Began")]
    pub began: String,
    /// IOR: `Command line`.
    #[serde(rename = "Command line")]
    pub command_line: String,
    /// IOR: `Machine`.
    #[serde(rename = "Machine")]
    pub machine: String,
    /// IOR: `tests`.
    pub tests: Vec<JsonTest>,
    /// IOR: `summary`.
    pub summary: Vec<JsonSummary>,
    /// IOR: `Finished`.
    #[serde(rename = "Finished")]
    pub finished: String,
    /// iopath's own facts about the run: the stack, what was modeled.
    pub iopath: RunFacts,
}

/// One test of IOR's JSON.
#[derive(Debug, Serialize)]
pub struct JsonTest {
    /// IOR: `TestID`.
    #[serde(rename = "TestID")]
    pub test_id: u32,
    /// IOR: `StartTime`.
    #[serde(rename = "StartTime")]
    pub start_time: String,
    /// IOR: `Path`.
    #[serde(rename = "Path")]
    pub path: String,
    /// IOR: `Parameters`.
    #[serde(rename = "Parameters")]
    pub parameters: serde_json::Value,
    /// IOR: `Options`.
    #[serde(rename = "Options")]
    pub options: serde_json::Value,
    /// IOR: `Results`, one array per iteration.
    #[serde(rename = "Results")]
    pub results: Vec<Vec<JsonResult>>,
    /// IOR: `max`.
    pub max: serde_json::Value,
    /// iopath's own facts about the test: verification, baselines and ratios.
    pub iopath: IopathFacts,
}

/// One per-iteration result of IOR's JSON.
#[derive(Debug, Serialize)]
pub struct JsonResult {
    /// `write` or `read`.
    pub access: Access,
    /// MiB/s.
    #[serde(rename = "bwMiB")]
    pub bw_mib: f64,
    /// Block size, KiB.
    #[serde(rename = "blockKiB")]
    pub block_kib: f64,
    /// Transfer size, KiB.
    #[serde(rename = "xferKiB")]
    pub xfer_kib: f64,
    /// Calls per second.
    pub iops: f64,
    /// Mean call latency, seconds.
    pub latency: f64,
    /// Open time, seconds.
    #[serde(rename = "openTime")]
    pub open_time: f64,
    /// Transfer time, seconds.
    #[serde(rename = "wrRdTime")]
    pub wr_rd_time: f64,
    /// Close time, seconds.
    #[serde(rename = "closeTime")]
    pub close_time: f64,
    /// Total time, seconds.
    #[serde(rename = "totalTime")]
    pub total_time: f64,
}

/// One row of IOR's JSON summary.
#[derive(Debug, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct JsonSummary {
    /// `write` or `read`.
    pub operation: Access,
    /// IOR: `API`.
    #[serde(rename = "API")]
    pub api: &'static str,
    /// IOR: `TestID`.
    #[serde(rename = "TestID")]
    pub test_id: u32,
    /// IOR: `ReferenceNumber`.
    #[serde(rename = "ReferenceNumber")]
    pub reference_number: u32,
    /// Segments.
    pub segment_count: u64,
    /// Block size, bytes.
    pub block_size: u64,
    /// Transfer size, bytes.
    pub transfer_size: u64,
    /// Tasks.
    pub num_tasks: u32,
    /// Tasks per node.
    pub tasks_per_node: u32,
    /// Repetitions.
    pub repetitions: u32,
    /// 1 for file per process.
    pub file_per_proc: u8,
    /// 1 with -C.
    pub reorder_tasks: u8,
    /// The -C offset in nodes.
    pub task_per_node_offset: u32,
    /// Random reordering (never).
    pub reorder_tasks_random: u8,
    /// Its seed.
    pub reorder_tasks_random_seed: u32,
    /// MiB/s, max.
    #[serde(rename = "bwMaxMIB")]
    pub bw_max_mib: f64,
    /// MiB/s, min.
    #[serde(rename = "bwMinMIB")]
    pub bw_min_mib: f64,
    /// MiB/s, mean.
    #[serde(rename = "bwMeanMIB")]
    pub bw_mean_mib: f64,
    /// MiB/s, standard deviation.
    #[serde(rename = "bwStdMIB")]
    pub bw_std_mib: f64,
    /// Operations per second, max.
    #[serde(rename = "OPsMax")]
    pub ops_max: f64,
    /// Operations per second, min.
    #[serde(rename = "OPsMin")]
    pub ops_min: f64,
    /// Operations per second, mean.
    #[serde(rename = "OPsMean")]
    pub ops_mean: f64,
    /// Operations per second, standard deviation.
    #[serde(rename = "OPsSD")]
    pub ops_sd: f64,
    /// Mean total time, seconds.
    #[serde(rename = "MeanTime")]
    pub mean_time: f64,
    /// With stoneWallingWearOut: the mean stonewall time, seconds.
    #[serde(rename = "StoneWallTime", skip_serializing_if = "Option::is_none")]
    pub stone_wall_time: Option<f64>,
    /// With stoneWallingWearOut: the mean task's rate up to the stonewall, MiB/s.
    #[serde(rename = "StoneWallbwMeanMIB", skip_serializing_if = "Option::is_none")]
    pub stone_wall_bw_mean_mib: Option<f64>,
    /// Aggregate size of one repetition, MiB.
    #[serde(rename = "xsizeMiB")]
    pub xsize_mib: f64,
}

/// One test, as the reports take it.
#[derive(Debug, Clone)]
pub struct TestReport {
    /// What the test was.
    pub info: TestInfo,
    /// Every phase of every repetition.
    pub results: Vec<PhaseResult>,
    /// Verification, baselines, ratios.
    pub facts: IopathFacts,
}

/// The whole JSON document.
pub fn json_report(
    run: &RunInfo,
    tests: &[TestReport],
    finished: SystemTime,
    facts: RunFacts,
) -> JsonReport {
    JsonReport {
        version: format!("3.3.0 format, iopath {}", env!("CARGO_PKG_VERSION")),
        began: ctime(run.began),
        command_line: run.command_line.clone(),
        machine: run.machine.clone(),
        tests: tests.iter().map(|t| json_test(run, t)).collect(),
        summary: tests.iter().flat_map(json_summaries).collect(),
        finished: ctime(finished),
        iopath: facts,
    }
}

fn json_test(run: &RunInfo, test: &TestReport) -> JsonTest {
    let info = &test.info;
    let p = &info.params;
    let mut by_iteration: Vec<Vec<JsonResult>> = Vec::new();
    for r in &test.results {
        let slot = r.iteration as usize;
        if by_iteration.len() <= slot {
            by_iteration.resize_with(slot + 1, Vec::new);
        }
        by_iteration[slot].push(JsonResult {
            access: r.access,
            bw_mib: r.bw_mib_s(),
            block_kib: p.block_size_bytes as f64 / 1024.0,
            xfer_kib: p.transfer_size_bytes as f64 / 1024.0,
            iops: r.iops(),
            latency: r.latency_s,
            open_time: r.open_s,
            wr_rd_time: r.transfer_s,
            close_time: r.close_s,
            total_time: r.total_s,
        });
    }
    let mut max = serde_json::Map::new();
    for access in [Access::Write, Access::Read] {
        if let Some(s) = Summary::of(
            &test.results,
            access,
            p.transfer_size_bytes,
            p.aggregate_bytes(info.tasks),
        ) {
            max.insert(format!("{}MiB", access.name()), s.bw_mib_s[0].into());
            max.insert(
                format!("{}MB", access.name()),
                (s.bw_mib_s[0] * MIB / MB).into(),
            );
        }
    }
    let flag = u8::from;
    let parameters = serde_json::json!({
        "testID": p.test_id,
        "refnum": 0,
        "api": p.api.ior_name(),
        "platform": run.machine,
        "testFileName": p.test_file,
        "deadlineForStonewall": p.deadline.map_or(0, |d| d.as_secs()),
        "maxTimeDuration": p.max_duration.map_or(0, |d| d.as_secs() / 60),
        "repetitions": p.repetitions,
        "multiFile": flag(p.multi_file),
        "interTestDelay": p.inter_test_delay.as_secs(),
        "fsync": flag(p.fsync),
        "fsyncperwrite": flag(p.fsync_per_write),
        "useExistingTestFile": flag(p.use_existing_file),
        "uniqueDir": flag(p.unique_dir),
        "singleXferAttempt": flag(p.single_xfer_attempt),
        "readFile": flag(p.read),
        "writeFile": flag(p.write),
        "filePerProc": flag(p.file_per_proc),
        "reorderTasks": flag(p.reorder_tasks),
        "randomOffset": flag(p.random_offset),
        "randomSeed": info.seed,
        "checkWrite": flag(p.write && !p.read),
        "checkRead": flag(p.read),
        "storeFileOffset": flag(p.store_file_offset),
        "useO_DIRECT": flag(p.direct_io),
        "intraTestBarriers": flag(p.intra_test_barriers),
        "keepFile": flag(p.keep_file),
        "verbose": p.verbose,
        "collective": 0,
        "segmentCount": p.segments,
        "transferSize": p.transfer_size_bytes,
        "blockSize": p.block_size_bytes,
        "numTasks": info.tasks,
        "tasksPerNode": info.tasks_per_node,
    });
    let options = serde_json::json!({
        "api": p.api.ior_name(),
        "apiVersion": api_version(run, p),
        "test filename": p.test_file,
        "access": if p.file_per_proc { "file-per-process" } else { "single-shared-file" },
        "type": "independent",
        "segments": p.segments,
        "ordering in a file": if p.random_offset { "random" } else { "sequential" },
        "ordering inter file": if p.reorder_tasks { "constant task offset" } else { "no tasks offsets" },
        "nodes": info.nodes,
        "tasks": info.tasks,
        "clients per node": info.tasks_per_node,
        "repetitions": p.repetitions,
        "xfersize": human_base_two(p.transfer_size_bytes),
        "blocksize": human_base_two(p.block_size_bytes),
        "aggregate filesize": human_base_two(p.aggregate_bytes(info.tasks)),
        "stack": run.stack,
    });
    JsonTest {
        test_id: p.test_id,
        start_time: ctime(info.began),
        path: p.file_of(0, 0),
        parameters,
        options,
        results: by_iteration,
        max: serde_json::Value::Object(max),
        iopath: test.facts.clone(),
    }
}

fn json_summaries(test: &TestReport) -> Vec<JsonSummary> {
    let info = &test.info;
    let p = &info.params;
    [Access::Write, Access::Read]
        .into_iter()
        .filter_map(|a| {
            Summary::of(
                &test.results,
                a,
                p.transfer_size_bytes,
                p.aggregate_bytes(info.tasks),
            )
        })
        .map(|s| {
            let wall = stonewall_summary(&test.results, s.access, p.repetitions);
            JsonSummary {
                operation: s.access,
                api: p.api.ior_name(),
                test_id: p.test_id,
                reference_number: 0,
                segment_count: p.segments,
                block_size: p.block_size_bytes,
                transfer_size: p.transfer_size_bytes,
                num_tasks: info.tasks,
                tasks_per_node: info.tasks_per_node,
                repetitions: p.repetitions,
                file_per_proc: u8::from(p.file_per_proc),
                reorder_tasks: u8::from(p.reorder_tasks),
                task_per_node_offset: 1,
                reorder_tasks_random: 0,
                reorder_tasks_random_seed: 0,
                bw_max_mib: s.bw_mib_s[0],
                bw_min_mib: s.bw_mib_s[1],
                bw_mean_mib: s.bw_mib_s[2],
                bw_std_mib: s.bw_mib_s[3],
                ops_max: s.ops[0],
                ops_min: s.ops[1],
                ops_mean: s.ops[2],
                ops_sd: s.ops[3],
                mean_time: s.mean_time_s,
                stone_wall_time: wall.map(|(seconds, _)| seconds),
                stone_wall_bw_mean_mib: wall.map(|(_, mib_s)| mib_s),
                xsize_mib: s.aggregate_mib,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::{Duration, UNIX_EPOCH};

    #[test]
    fn pp_double_follows_ior() {
        assert_eq!(pp_double(678.06), "678.06    ");
        assert_eq!(pp_double(0.118931), "0.118931  ");
        assert_eq!(pp_double(16384.0), "16384     ");
        assert_eq!(pp_double(1024.0), "1024.00   ");
        assert_eq!(pp_double(-1.0).trim(), "-");
    }

    #[test]
    fn human_sizes_follow_ior() {
        assert_eq!(human_base_two(1 << 20), "1 MiB");
        assert_eq!(human_base_two(16 << 20), "16 MiB");
        assert_eq!(human_base_two(5 << 29), "2.50 GiB");
        assert_eq!(human_base_two(16 << 30), "16 GiB");
        assert_eq!(human_base_two(4096), "4096 bytes");
    }

    #[test]
    fn ctime_matches_c_in_the_local_zone() {
        use jiff::tz::TimeZone;
        // IOR's example: Mon Mar  8 23:08:17 2021 in UTC.
        let t = UNIX_EPOCH + Duration::from_secs(1_615_244_897);
        assert_eq!(ctime_in(t, &TimeZone::UTC), "Mon Mar  8 23:08:17 2021");
        assert_eq!(
            ctime_in(UNIX_EPOCH, &TimeZone::UTC),
            "Thu Jan  1 00:00:00 1970"
        );
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(ctime_in(leap, &TimeZone::UTC), "Tue Feb 29 00:00:00 2000");
        // Local time, as ctime(3) prints it: five and a half hours ahead crosses the day.
        let india = TimeZone::posix("IST-5:30").unwrap();
        assert_eq!(ctime_in(t, &india), "Tue Mar  9 04:38:17 2021");
        // Standard time and summer time, by the zone's rules.
        let new_york = TimeZone::posix("EST5EDT,M3.2.0,M11.1.0").unwrap();
        assert_eq!(ctime_in(t, &new_york), "Mon Mar  8 18:08:17 2021");
        let july = UNIX_EPOCH + Duration::from_secs(1_625_140_800); // 2021-07-01 12:00 UTC
        assert_eq!(ctime_in(july, &new_york), "Thu Jul  1 08:00:00 2021");
    }

    #[test]
    fn stats_are_populations() {
        let s = stats(&[1.0, 3.0]);
        assert_eq!(s, [3.0, 1.0, 2.0, 1.0]);
    }
}
