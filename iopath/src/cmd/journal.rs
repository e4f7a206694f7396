//! `iopath bench journal`: its flags, turned into `iopath_bench::journal::JournalOptions`;
//! the progress line on standard error, then the table (or `--json`) on standard output, and
//! with `--svg` the runs as a plot.

use std::io::{IsTerminal as _, Write as _};
use std::path::PathBuf;
use std::sync::{Mutex, PoisonError};

use anyhow::Context as _;
use iopath_bench::journal::{
    FioChoice, JournalDevice, JournalOptions, ProgressEvent, ProgressLine, Shown, measure, plot,
    render,
};
use iopath_fabric::units::parse_size;
use iopath_storage_server::engine::EngineKind;
use iopath_storage_server::engine::modeled::DiskModel;

/// Which real engine does the I/O.
#[derive(clap::ValueEnum, Debug, Clone, Copy, PartialEq, Eq)]
enum EngineArg {
    /// io_uring on dedicated threads (falls back to psync, with a warning, if refused).
    Uring,
    /// pread/pwrite on blocking threads.
    Psync,
}

/// Options of `iopath bench journal`.
#[derive(clap::Args, Debug, Clone)]
pub struct JournalArgs {
    /// Directory on the file system to measure; each phase writes into a fresh temporary
    /// directory inside it. Default: a temporary directory `iopath-bench-journal-*` in the
    /// current directory (so on its file system, not on /tmp, which may be tmpfs), removed
    /// afterwards; with --disk-model, in /dev/shm when it has room, so that the host's disk
    /// adds nothing to the model.
    #[arg(long)]
    dir: Option<PathBuf>,
    /// Also measure with the journal in a temporary directory here (the external journal, on
    /// another file system or device), with sync commits as in the paper.
    #[arg(long)]
    external_journal_dir: Option<PathBuf>,
    /// Concurrent writers, one request in flight each (obdfilter-survey's `thr`). Default 4;
    /// with --disk-model 1, the paper's setup (one client writing each target).
    #[arg(long)]
    threads: Option<usize>,
    /// Objects (files) written (obdfilter-survey's `nobj`). Default 4; with --disk-model 1.
    #[arg(long)]
    objects: Option<usize>,
    /// Bytes per write request, with k/m/g suffixes (obdfilter-survey's `rsz`).
    #[arg(long = "request-size", value_name = "SIZE", default_value = "1m", value_parser = parse_size)]
    request_size_bytes: u64,
    /// MiB written to each object in each phase.
    #[arg(long, default_value_t = 256, conflicts_with = "seconds")]
    mib_per_object: u64,
    /// Instead of --mib-per-object: size each phase so the raw baseline takes about this many
    /// seconds (the rate comes from fio, the disk model, or a one-second calibration write).
    #[arg(long)]
    seconds: Option<u32>,
    /// Repetitions; each figure is the best of them (the paper took the best of 5).
    #[arg(long, default_value_t = 1)]
    runs: u32,
    /// Async mode: commit the journal at least this often.
    #[arg(long, default_value_t = 1000)]
    commit_interval_ms: u64,
    /// Async mode: commit once this many records are waiting (the group size).
    #[arg(long, default_value_t = 64)]
    group_records_max: usize,
    /// The real engine under the OSTs and the raw writer.
    #[arg(long, value_enum, default_value = "uring")]
    engine: EngineArg,
    /// Model the data disk (one head, a seek between data and journal, no write-back cache)
    /// instead of measuring the real one; the I/O still happens for real.
    #[arg(long)]
    disk_model: bool,
    /// Modeled bandwidth, MiB/s (with --disk-model; default: one Spider SATA tier).
    #[arg(long, default_value_t = DiskModel::sata_tier().bandwidth_mib_s)]
    model_bandwidth_mib_s: f64,
    /// Modeled head move between data and journal, ms (with --disk-model).
    #[arg(long, default_value_t = DiskModel::sata_tier().seek_ms)]
    model_seek_ms: f64,
    /// With --disk-model: an external journal on a SAS tier costs this per commit, ms
    /// (default: a 15,000 rpm disk's seek, half a rotation for the log blocks and a whole one
    /// for the commit block).
    #[arg(long, default_value_t = DiskModel::sas_journal().commit_ms)]
    model_sas_commit_ms: f64,
    /// With --disk-model: an external journal on a network-attached solid-state device costs
    /// this per commit, ms (default: fitted to the paper's 58.7%, which it could not explain).
    #[arg(long, default_value_t = DiskModel::ssd().commit_ms)]
    model_ssd_commit_ms: f64,
    /// Require fio as a second raw baseline; fail if it is not installed
    /// (scripts/install-tools installs it). Without --fio or --no-fio, fio runs when installed.
    #[arg(long, overrides_with = "no_fio")]
    fio: bool,
    /// Do not run fio.
    #[arg(long, overrides_with = "fio")]
    no_fio: bool,
    /// fio's requests in flight per writer (1 matches the in-process writers).
    #[arg(long, default_value_t = 1)]
    fio_iodepth: u32,
    /// Print JSON instead of the table.
    #[arg(long)]
    json: bool,
    /// Also draw the runs as an SVG plot in FILE: each configuration's bandwidth in every run,
    /// the raw baseline among them (most telling with --runs 2 or more).
    #[arg(long, value_name = "FILE")]
    svg: Option<PathBuf>,
}

/// The paper's two external journal devices, with the per-commit costs given.
fn journal_devices(sas_commit_ms: f64, ssd_commit_ms: f64) -> Vec<JournalDevice> {
    let mut devices = JournalDevice::paper();
    for (device, commit_ms) in devices.iter_mut().zip([sas_commit_ms, ssd_commit_ms]) {
        device.model.commit_ms = commit_ms;
    }
    devices
}

/// Writers and objects on a real disk: enough to keep it busy.
const REAL_DISK_WRITERS: usize = 4;

impl From<&JournalArgs> for JournalOptions {
    fn from(args: &JournalArgs) -> JournalOptions {
        // The Spider paper measured one client per target, one request at a time: on the
        // modeled disk that is the setup (4 writers keep its head busier between commits and
        // read 39% instead of the paper's 24.9%).
        let writers_default = if args.disk_model {
            1
        } else {
            REAL_DISK_WRITERS
        };
        JournalOptions {
            dir: args.dir.clone(),
            external_journal_dir: args.external_journal_dir.clone(),
            threads: args.threads.unwrap_or(writers_default),
            objects: args.objects.unwrap_or(writers_default),
            request_size_bytes: args.request_size_bytes,
            mib_per_object: args.mib_per_object,
            seconds: args.seconds,
            runs: args.runs,
            commit_interval_ms: args.commit_interval_ms,
            group_records_max: args.group_records_max,
            engine: match args.engine {
                EngineArg::Uring => EngineKind::Uring,
                EngineArg::Psync => EngineKind::Psync,
            },
            disk_model: args.disk_model.then_some(DiskModel {
                bandwidth_mib_s: args.model_bandwidth_mib_s,
                seek_ms: args.model_seek_ms,
                commit_ms: 0.0,
            }),
            journal_devices: journal_devices(args.model_sas_commit_ms, args.model_ssd_commit_ms),
            // The last of --fio and --no-fio wins (clap's overrides_with).
            fio: match (args.fio, args.no_fio) {
                (_, true) => FioChoice::Off,
                (true, false) => FioChoice::Required,
                (false, false) => FioChoice::IfAvailable,
            },
            fio_iodepth: args.fio_iodepth,
        }
    }
}

/// Runs `iopath bench journal`: the progress line on stderr, then the table (or `--json`) on
/// stdout.
pub async fn run(args: JournalArgs) -> anyhow::Result<()> {
    let line = Mutex::new(ProgressLine::new(std::io::stderr().is_terminal()));
    let status = iopath_bench::status_line::StatusLine::new();
    let progress = |event: ProgressEvent<'_>| {
        let shown = line
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .render(event);
        match shown {
            Some(Shown::InPlace(text)) => status.set(&text),
            Some(Shown::Kept(text)) => status.keep(&text),
            None => {}
        }
    };
    let measured = measure(&JournalOptions::from(&args), &progress).await;
    status.clear();
    let report = measured?;
    if let Some(path) = &args.svg {
        std::fs::write(path, plot::figure(&report).svg())
            .with_context(|| format!("write the plot {}", path.display()))?;
    }
    if args.json {
        let json = serde_json::to_string_pretty(&report).context("encode the report as JSON")?;
        writeln!(std::io::stdout(), "{json}").context("write the report")?;
    } else {
        write!(std::io::stdout(), "{}", render(&report)).context("write the report")?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use clap::Parser;

    use super::*;

    #[derive(Debug, Parser)]
    struct Cli {
        #[command(flatten)]
        args: JournalArgs,
    }

    fn parse(args: &[&str]) -> Result<JournalArgs, clap::Error> {
        Cli::try_parse_from(std::iter::once("bench-journal").chain(args.iter().copied()))
            .map(|cli| cli.args)
    }

    fn options(args: &[&str]) -> JournalOptions {
        let args = parse(args).unwrap_or_else(|e| panic!("{args:?}: {e}"));
        JournalOptions::from(&args)
    }

    #[test]
    fn bad_flags_are_clear_errors() {
        for (args, expected) in [
            (
                &["--seconds", "1", "--mib-per-object", "2"][..],
                "cannot be used with",
            ),
            (&["--request-size", "1x"][..], "unknown unit"),
            (&["--engine", "spdk"][..], "invalid value"),
        ] {
            let error = parse(args).map(drop).unwrap_err().to_string();
            assert!(error.contains(expected), "{args:?}: {error}");
        }
    }

    #[test]
    fn fio_and_no_fio_override_each_other() {
        let args = parse(&["--fio", "--no-fio"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!args.fio && args.no_fio);
        assert_eq!(JournalOptions::from(&args).fio, FioChoice::Off);
        let args = parse(&["--no-fio", "--fio"]).unwrap_or_else(|e| panic!("{e}"));
        assert!(args.fio && !args.no_fio);
        assert_eq!(JournalOptions::from(&args).fio, FioChoice::Required);
        let args = parse(&[]).unwrap_or_else(|e| panic!("{e}"));
        assert!(!args.fio && !args.no_fio, "default: fio when it can be had");
        assert_eq!(JournalOptions::from(&args).fio, FioChoice::IfAvailable);
        assert_eq!(args.request_size_bytes, 1 << 20);
    }

    /// An argument's help text, as `--help` prints it.
    fn help_of(id: &str) -> String {
        let command = <Cli as clap::CommandFactory>::command();
        let arg = command
            .get_arguments()
            .find(|a| a.get_id() == id)
            .unwrap_or_else(|| panic!("no argument {id}"));
        arg.get_long_help()
            .or(arg.get_help())
            .map(ToString::to_string)
            .unwrap_or_default()
    }

    /// The writers and objects the help texts name as defaults are the ones taken.
    #[test]
    fn the_defaults_the_help_names_are_the_ones_taken() {
        let (real, modeled) = (options(&[]), options(&["--disk-model"]));
        for (id, real, modeled) in [
            ("threads", real.threads, modeled.threads),
            ("objects", real.objects, modeled.objects),
        ] {
            let help = help_of(id).replace('\n', " ");
            assert!(
                help.contains(&format!("Default {real}; with --disk-model {modeled}")),
                "--{id}: {help:?} against {real} and {modeled}"
            );
        }
    }

    #[test]
    fn no_flags_are_the_benchmarks_defaults() {
        assert_eq!(options(&[]), JournalOptions::default());
    }

    #[test]
    fn every_flag_reaches_its_option() {
        let given = options(&[
            "--dir",
            "/d",
            "--external-journal-dir",
            "/j",
            "--threads",
            "3",
            "--objects",
            "5",
            "--request-size",
            "64k",
            "--seconds",
            "7",
            "--runs",
            "2",
            "--commit-interval-ms",
            "10",
            "--group-records-max",
            "9",
            "--engine",
            "psync",
            "--disk-model",
            "--model-bandwidth-mib-s",
            "50",
            "--model-seek-ms",
            "3",
            "--model-sas-commit-ms",
            "6",
            "--model-ssd-commit-ms",
            "2",
            "--no-fio",
            "--fio-iodepth",
            "4",
        ]);
        let expected = JournalOptions {
            dir: Some(PathBuf::from("/d")),
            external_journal_dir: Some(PathBuf::from("/j")),
            threads: 3,
            objects: 5,
            request_size_bytes: 64 << 10,
            mib_per_object: 256,
            seconds: Some(7),
            runs: 2,
            commit_interval_ms: 10,
            group_records_max: 9,
            engine: EngineKind::Psync,
            disk_model: Some(DiskModel {
                bandwidth_mib_s: 50.0,
                seek_ms: 3.0,
                commit_ms: 0.0,
            }),
            journal_devices: journal_devices(6.0, 2.0),
            fio: FioChoice::Off,
            fio_iodepth: 4,
        };
        assert_eq!(given, expected);
        assert_eq!(options(&["--mib-per-object", "3"]).mib_per_object, 3);
    }
}
