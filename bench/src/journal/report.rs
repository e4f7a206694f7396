//! What one `iopath bench journal` run measured — the in-process phases and fio beside them
//! — as JSON for machines and as the paper-style table for people.

use crate::report::{Table, rate};

use super::config::JournalBenchConfig;
use super::result::JournalBenchResult;
use iopath_storage_server::engine::modeled::DiskModel;

/// Everything one run measured: the in-process benchmark's result (its fields at the top
/// level of the JSON) and the fio baseline beside it.
#[derive(Debug, Clone, serde::Serialize)]
pub struct JournalReport {
    /// The in-process phases: `baseline_mib_s` (iopath's raw writer), `sync_mib_s`,
    /// `async_mib_s`, `sync_ratio`, `async_ratio`, `disk`, the rows, ...
    #[serde(flatten)]
    pub bench: JournalBenchResult,
    /// Which parts of this run were modeled rather than real, in words.
    pub modeled: String,
    /// How the phases were sized.
    pub sizing: String,
    /// True when `dir` was a temporary directory made in the current directory.
    pub dir_is_default: bool,
    /// fio's best write rate over the runs, MiB/s (real disk, even with a disk model).
    pub fio_mib_s: Option<f64>,
    /// The fio command line that was run.
    pub fio_command: Option<String>,
    /// fio's version.
    pub fio_version: Option<String>,
    /// Why there is no fio figure, when fio was wanted but could not run.
    pub fio_error: Option<String>,
    /// `baseline_mib_s / fio_mib_s`: how iopath's raw writer compares with fio (real disk only).
    pub baseline_ratio_vs_fio: Option<f64>,
    /// `sync_mib_s / fio_mib_s` (real disk only).
    pub sync_ratio_vs_fio: Option<f64>,
    /// `async_mib_s / fio_mib_s` (real disk only).
    pub async_ratio_vs_fio: Option<f64>,
}

/// Which parts of a run were modeled, in words, for the table and the JSON.
pub(crate) fn modeled_statement(config: &JournalBenchConfig, fio_ran: bool) -> String {
    let Some(model) = config.disk_model else {
        return "nothing: real files, real writes (O_DIRECT where aligned; the baseline row says \
                which) and fsyncs on the file system under test"
            .to_owned();
    };
    // The head move is the one figure the sync row's share rests on: said where it is the
    // default, which nothing measured.
    let seek_note = if model == DiskModel::sata_tier() {
        " (a SATA seek and rotation, not measured: the sync row's share rests on it alone, so \
         that row is close to a fit, not a test)"
    } else {
        ""
    };
    let mut text = format!(
        "the data disk: {} MiB/s, {} ms per head move between data and journal{seek_note}, no \
         write-back cache (the I/O still happens for real; each completes no earlier than the \
         model says)",
        rate(model.bandwidth_mib_s),
        model.seek_ms
    );
    for device in &config.journal_devices {
        text.push_str(&format!(
            "; an external journal on a {}: {} MiB/s, {} ms per commit",
            device.name,
            rate(device.model.bandwidth_mib_s),
            device.model.commit_ms
        ));
        if device.model == DiskModel::sas_journal() {
            text.push_str(" (from a 15,000 rpm disk's figures, nothing fitted)");
        } else if device.model == DiskModel::ssd() {
            text.push_str(
                " (fitted: the time per commit the paper's 58.7% leaves, which the paper could \
                 not explain)",
            );
        }
    }
    if fio_ran {
        text.push_str("; fio measured the real disk underneath (no ratio is taken against it)");
    }
    text
}

/// The paper-style table: configuration, MiB/s, % of baseline, with the run's facts above it
/// and the ratios below.
pub fn render(report: &JournalReport) -> String {
    let bench = &report.bench;
    let mut out = format!(
        "journal benchmark on {} (disk {}, engine {}): {} threads x {} objects x {} KiB requests, {} MiB per phase, best of {}\n",
        bench.dir,
        bench.disk,
        bench.engine,
        bench.threads,
        bench.objects,
        bench.request_size_bytes / 1024,
        bench.total_bytes >> 20,
        bench.runs
    );
    out.push_str(&format!("modeled: {}\n", report.modeled));
    out.push_str(&format!(
        "async commits: every {} ms or {} records\n",
        bench.commit_interval_ms, bench.group_records_max
    ));
    match (&report.fio_command, &report.fio_version, &report.fio_error) {
        (Some(command), Some(version), _) => {
            out.push_str(&format!("fio ({version}): {command}\n"));
        }
        (_, _, Some(error)) => out.push_str(&format!("fio: not run: {error}\n")),
        _ => out.push_str("fio: not run (--no-fio)\n"),
    }
    out.push('\n');
    let mut table = Table::new(&[
        "configuration",
        "MiB/s",
        "% of baseline",
        "paper",
        "commits",
        "seeks",
    ]);
    let dash = || "-".to_owned();
    for (i, row) in bench.rows.iter().enumerate() {
        table.row(vec![
            row.configuration.clone(),
            rate(row.mib_s),
            format!("{:.1}%", row.percent_of_baseline),
            row.paper_percent.map_or_else(dash, |p| format!("{p:.1}%")),
            if row.commits == 0 {
                dash()
            } else {
                row.commits.to_string()
            },
            row.seeks.map_or_else(dash, |s| s.to_string()),
        ]);
        // fio's row sits beside the baseline it checks.
        if i == 0
            && let Some(fio_mib_s) = report.fio_mib_s
        {
            let real = bench.disk == "real";
            table.row(vec![
                if real {
                    "block level (fio io_uring, O_DIRECT)".to_owned()
                } else {
                    "block level (fio io_uring, O_DIRECT), real disk".to_owned()
                },
                rate(fio_mib_s),
                if real && bench.baseline_mib_s > 0.0 {
                    format!("{:.1}%", 100.0 * fio_mib_s / bench.baseline_mib_s)
                } else {
                    dash()
                },
                dash(),
                dash(),
                dash(),
            ]);
        }
    }
    out.push_str(&table.render());
    out.push_str(
        "paper: the Spider paper's table (003: one DDN couplet, 28 SATA tiers, 28 clients each \
         writing its own OST), as a share of its block-level baseline\n",
    );
    out.push('\n');
    out.push_str(&format!(
        "sync/baseline {:.3}, async/baseline {:.3}",
        bench.sync_ratio, bench.async_ratio
    ));
    for external in &bench.external {
        out.push_str(&format!(
            ", external journal ({})/baseline {:.3}",
            external.device, external.ratio
        ));
    }
    if let Some(vs_fio) = report.async_ratio_vs_fio {
        out.push_str(&format!(", async/fio {vs_fio:.3}"));
    }
    out.push_str(&format!(
        " (baseline: iopath's raw {} writer, measured in this run; disk {})\n",
        bench.engine, bench.disk
    ));
    out
}
