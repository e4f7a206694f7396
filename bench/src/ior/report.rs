//! IOR's output, as pure functions of what was measured: the header, the per-iteration
//! `access bw(MiB/s) IOPS Latency(s) ...` lines, `Max Write`/`Max Read`, the "Summary of all
//! tests" table — in IOR 3.3's column layout — and the same as IOR's JSON
//! (`-O summaryFormat=JSON`), with iopath's baselines and ratios after them.

use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;

use super::params::IorParams;

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
    /// The checked options.
    pub params: IorParams,
    /// Tasks.
    pub tasks: u32,
    /// Client nodes the tasks run on.
    pub nodes: u32,
    /// Tasks per node.
    pub tasks_per_node: u32,
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

/// The run's own facts beside IOR's: what was modeled, what was verified, the journals.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct IopathFacts {
    /// The stack.
    pub stack: String,
    /// `embedded` or `processes`.
    pub mode: String,
    /// Which parts were modeled rather than real.
    pub modeled: String,
    /// Bytes read back and checked word by word.
    pub verified_bytes: u64,
    /// Journal commits on all targets during the run, as the storage servers count them.
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
    /// Aggregate MiB of one repetition.
    pub aggregate_mib: f64,
}

impl Summary {
    /// The statistics of `access` over `results`, or `None` when it did not run.
    pub fn of(
        results: &[PhaseResult],
        access: Access,
        transfer_size_bytes: u64,
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
            aggregate_mib: runs[0].bytes as f64 / MIB,
        })
    }
}

/// Max, min, mean and population standard deviation, as IOR computes them.
fn stats(values: &[f64]) -> [f64; 4] {
    let n = values.len().max(1) as f64;
    let max = values.iter().copied().fold(f64::MIN, f64::max);
    let min = values.iter().copied().fold(f64::MAX, f64::min);
    let mean = values.iter().sum::<f64>() / n;
    let var = values.iter().map(|v| (v - mean).powi(2)).sum::<f64>() / n;
    [max, min, mean, var.sqrt()]
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

/// A time as C's `ctime` writes it (`Mon Mar  8 23:08:17 2021`), in UTC.
pub fn ctime(time: SystemTime) -> String {
    let secs = time
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let days = (secs / 86_400) as i64;
    let rem = secs % 86_400;
    let (year, month, day) = civil_from_days(days);
    const WEEKDAYS: [&str; 7] = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"];
    const MONTHS: [&str; 12] = [
        "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
    ];
    format!(
        "{} {} {:>2} {:02}:{:02}:{:02} {}",
        WEEKDAYS[days.rem_euclid(7) as usize],
        MONTHS[(month - 1) as usize],
        day,
        rem / 3600,
        rem % 3600 / 60,
        rem % 60,
        year
    )
}

/// Howard Hinnant's days-to-civil: the proleptic Gregorian date of a day number (0 is
/// 1970-01-01).
fn civil_from_days(days: i64) -> (i64, u32, u32) {
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z.rem_euclid(146_097);
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let day = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let month = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    let year = yoe + era * 400 + i64::from(month <= 2);
    (year, month, day)
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

/// The header and the "Options" block, printed before the run.
pub fn header_text(info: &RunInfo) -> String {
    let p = &info.params;
    let mut out =
        String::from("IOR-3.3.0 output format, from iopath bench ior: the emulated HPC I/O path\n");
    key_value(&mut out, "Began", ctime(info.began));
    key_value(&mut out, "Command line", &info.command_line);
    key_value(&mut out, "Machine", &info.machine);
    key_value(&mut out, "Stack", &info.stack);
    key_value(&mut out, "TestID", 0);
    key_value(&mut out, "StartTime", ctime(info.began));
    key_value(&mut out, "Path", p.file_of(0));
    out.push_str("\nOptions: \n");
    key_value(&mut out, "api", format!("iopath-{}", p.api.name()));
    key_value(&mut out, "apiVersion", &info.api_version);
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
    key_value(&mut out, "ordering in a file", "sequential");
    if p.reorder_tasks {
        key_value(&mut out, "ordering inter file", "constant task offset");
        key_value(&mut out, "task offset", 1);
    } else {
        key_value(&mut out, "ordering inter file", "no tasks offsets");
    }
    key_value(&mut out, "nodes", info.nodes);
    key_value(&mut out, "tasks", info.tasks);
    key_value(&mut out, "clients per node", info.tasks_per_node);
    key_value(&mut out, "repetitions", p.repetitions);
    key_value(&mut out, "xfersize", human_base_two(p.transfer_size_bytes));
    key_value(&mut out, "blocksize", human_base_two(p.block_size_bytes));
    key_value(
        &mut out,
        "aggregate filesize",
        human_base_two(p.aggregate_bytes(info.tasks)),
    );
    out.push_str("\nResults: \n\n");
    out.push_str("access    bw(MiB/s)  IOPS       Latency(s)  block(KiB) xfer(KiB)  open(s)    wr/rd(s)   close(s)   total(s)   iter\n");
    out.push_str("------    ---------  ----       ----------  ---------- ---------  --------   --------   --------   --------   ----\n");
    out
}

/// One per-iteration line.
pub fn result_row(result: &PhaseResult, params: &IorParams) -> String {
    format!(
        "{:<10}{} {} {}  {} {} {} {} {} {} {:<4}\n",
        result.access.name(),
        pp_double(result.bw_mib_s()),
        pp_double(result.iops()),
        pp_double(result.latency_s),
        pp_double(params.block_size_bytes as f64 / 1024.0),
        pp_double(params.transfer_size_bytes as f64 / 1024.0),
        pp_double(result.open_s),
        pp_double(result.transfer_s),
        pp_double(result.close_s),
        pp_double(result.total_s),
        result.iteration
    )
}

/// The `remove` line of an iteration that removed its files.
pub fn remove_row(seconds: f64, iteration: u32) -> String {
    format!(
        "remove    -          -          -           -          -          -          -          -          {} {:<4}\n",
        pp_double(seconds),
        iteration
    )
}

/// `Max Write:` and `Max Read:` after the iterations.
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

/// The "Summary of all tests" table and the `Finished` line.
pub fn summary_text(info: &RunInfo, results: &[PhaseResult], finished: SystemTime) -> String {
    let p = &info.params;
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
    for access in [Access::Write, Access::Read] {
        let Some(s) = Summary::of(results, access, p.transfer_size_bytes) else {
            continue;
        };
        out.push_str(&format!("{:<9} ", access.name()));
        for v in s.bw_mib_s.iter().chain(&s.ops) {
            out.push_str(&format!("{v:>10.2} "));
        }
        out.push_str(&format!("{:>10.5} ", s.mean_time_s));
        out.push_str(&format!("{:>10} {:>13} ", "NA", "NA"));
        out.push_str(&format!(
            "{:>5} {:>6} {:>3} {:>4} {:>3} {:>5} {:>8} {:>9} {:>4} {:>6} {:>8} {:>8} {:>9.1} {:>3} {:>6}\n",
            0,
            info.tasks,
            info.tasks_per_node,
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
            "iopath",
            0
        ));
    }
    key_value(&mut out, "Finished", ctime(finished));
    out
}

/// iopath's lines after IOR's: the baselines and the ratios.
pub fn facts_text(facts: &IopathFacts) -> String {
    let b = &facts.baselines;
    let r = &facts.ratios;
    let mut out = format!(
        "\niopath: stack {} ({}); modeled: {}\n",
        facts.stack, facts.mode, facts.modeled
    );
    out.push_str(&format!(
        "verified: {} read back and checked word by word\n",
        human_base_two(facts.verified_bytes)
    ));
    if let Some(commits) = facts.journal_commits {
        out.push_str(&format!("journal commits during the run: {commits}\n"));
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
    /// iopath's own facts: baselines and ratios.
    pub iopath: IopathFacts,
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
    /// Aggregate size of one repetition, MiB.
    #[serde(rename = "xsizeMiB")]
    pub xsize_mib: f64,
}

/// The whole JSON document.
pub fn json_report(
    info: &RunInfo,
    results: &[PhaseResult],
    finished: SystemTime,
    facts: IopathFacts,
) -> JsonReport {
    let p = &info.params;
    let mut by_iteration: Vec<Vec<JsonResult>> = Vec::new();
    for r in results {
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
    let summaries: Vec<Summary> = [Access::Write, Access::Read]
        .into_iter()
        .filter_map(|a| Summary::of(results, a, p.transfer_size_bytes))
        .collect();
    let mut max = serde_json::Map::new();
    for s in &summaries {
        max.insert(format!("{}MiB", s.access.name()), s.bw_mib_s[0].into());
        max.insert(
            format!("{}MB", s.access.name()),
            (s.bw_mib_s[0] * MIB / MB).into(),
        );
    }
    let parameters = serde_json::json!({
        "testID": 0,
        "refnum": 0,
        "api": "iopath",
        "platform": info.machine,
        "testFileName": p.test_file,
        "repetitions": p.repetitions,
        "fsync": u8::from(p.fsync),
        "storeFileOffset": u8::from(p.store_file_offset),
        "readFile": u8::from(p.read),
        "writeFile": u8::from(p.write),
        "filePerProc": u8::from(p.file_per_proc),
        "reorderTasks": u8::from(p.reorder_tasks),
        "checkWrite": u8::from(p.write && !p.read),
        "checkRead": u8::from(p.read),
        "keepFile": u8::from(p.keep_file),
        "segmentCount": p.segments,
        "transferSize": p.transfer_size_bytes,
        "blockSize": p.block_size_bytes,
        "numTasks": info.tasks,
        "tasksPerNode": info.tasks_per_node,
    });
    let options = serde_json::json!({
        "api": "iopath",
        "apiVersion": info.api_version,
        "test filename": p.test_file,
        "access": if p.file_per_proc { "file-per-process" } else { "single-shared-file" },
        "type": "independent",
        "segments": p.segments,
        "ordering in a file": "sequential",
        "ordering inter file": if p.reorder_tasks { "constant task offset" } else { "no tasks offsets" },
        "nodes": info.nodes,
        "tasks": info.tasks,
        "clients per node": info.tasks_per_node,
        "repetitions": p.repetitions,
        "xfersize": human_base_two(p.transfer_size_bytes),
        "blocksize": human_base_two(p.block_size_bytes),
        "aggregate filesize": human_base_two(p.aggregate_bytes(info.tasks)),
        "stack": info.stack,
    });
    JsonReport {
        version: format!("3.3.0 format, iopath {}", env!("CARGO_PKG_VERSION")),
        began: ctime(info.began),
        command_line: info.command_line.clone(),
        machine: info.machine.clone(),
        tests: vec![JsonTest {
            test_id: 0,
            start_time: ctime(info.began),
            path: p.file_of(0),
            parameters,
            options,
            results: by_iteration,
            max: serde_json::Value::Object(max),
        }],
        summary: summaries
            .iter()
            .map(|s| JsonSummary {
                operation: s.access,
                api: "iopath",
                test_id: 0,
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
                xsize_mib: s.aggregate_mib,
            })
            .collect(),
        finished: ctime(finished),
        iopath: facts,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

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
    fn ctime_matches_c() {
        // IOR's example: Mon Mar  8 23:08:17 2021 (UTC here).
        let t = UNIX_EPOCH + Duration::from_secs(1_615_244_897);
        assert_eq!(ctime(t), "Mon Mar  8 23:08:17 2021");
        assert_eq!(ctime(UNIX_EPOCH), "Thu Jan  1 00:00:00 1970");
        let leap = UNIX_EPOCH + Duration::from_secs(951_782_400); // 2000-02-29
        assert_eq!(ctime(leap), "Tue Feb 29 00:00:00 2000");
    }

    #[test]
    fn stats_are_populations() {
        let s = stats(&[1.0, 3.0]);
        assert_eq!(s, [3.0, 1.0, 2.0, 1.0]);
    }
}
