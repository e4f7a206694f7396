//! The journal benchmark's runs as a plot (`iopath bench journal --runs N --svg FILE`): each
//! configuration's bandwidth in every run, the raw baseline among them, so a reader sees both
//! the gap the journal costs and how much the runs varied — which the table's best-of-N hides.

use iopath_plot::{Axis, Figure, Rule, Series};

use super::report::JournalReport;
use crate::report::rate;

/// The figure: one series per configuration (the raw baseline first), a marker per run and
/// no line between runs — separate runs, not a trend; fio's best as a rule when it measured
/// the same (real) disk. Only figures the report measured.
pub fn figure(report: &JournalReport) -> Figure {
    let bench = &report.bench;
    let runs = bench.runs.max(1);
    let series = bench
        .rows
        .iter()
        .map(|row| {
            Series::points(
                row.configuration.clone(),
                row.runs_mib_s
                    .iter()
                    .enumerate()
                    .map(|(i, &mib_s)| ((i + 1) as f64, mib_s)),
            )
        })
        .collect();
    let rules = match report.fio_mib_s {
        Some(fio_mib_s) if bench.disk == "real" => vec![Rule::at_y(
            format!(
                "fio io_uring O_DIRECT, best of {runs} run(s) before the phases: {} MiB/s",
                rate(fio_mib_s)
            ),
            fio_mib_s,
        )],
        _ => Vec::new(),
    };
    Figure {
        title: format!(
            "Journal benchmark, run by run: {} threads x {} objects x {} KiB requests, disk {}",
            bench.threads,
            bench.objects,
            bench.request_size_bytes / 1024,
            bench.disk
        ),
        x: Axis::from_zero("run (each run measures every configuration once)")
            .fixed(0.5, f64::from(runs) + 0.5)
            .ticks_at((1..=runs).map(|r| (f64::from(r), r.to_string())).collect()),
        y: Axis::from_zero("bandwidth (MiB/s made durable)"),
        y2: None,
        series,
        rules,
        footnote: format!(
            "Each point is one run's bytes made durable per second, {} MiB per phase (the table \
             reports the best run). The baseline is iopath's raw {} writer, measured in every \
             run beside the OST phases. Async commits every {} ms or {} records. Modeled: {}.",
            bench.total_bytes >> 20,
            bench.engine,
            bench.commit_interval_ms,
            bench.group_records_max,
            report.modeled
        ),
    }
}

#[cfg(test)]
mod tests {
    use iopath_plot::check::Drawing;

    use super::*;
    use crate::journal::config::JournalBenchConfig;
    use crate::journal::result::{BenchRow, JournalBenchResult};

    fn row(configuration: &str, runs_mib_s: &[f64]) -> BenchRow {
        BenchRow {
            configuration: configuration.into(),
            mib_s: runs_mib_s.iter().copied().fold(0.0, f64::max),
            percent_of_baseline: 0.0,
            seconds: 1.0,
            commits: 0,
            data_syncs: 0,
            seeks: None,
            runs_mib_s: runs_mib_s.to_vec(),
            paper_percent: None,
            journal_device: None,
        }
    }

    /// A report as `measure` makes it, from made-up figures (no benchmark runs here).
    fn report(disk_model: bool, rows: Vec<BenchRow>, fio_mib_s: Option<f64>) -> JournalReport {
        let mut config = JournalBenchConfig::new("/bench");
        config.runs = rows.first().map_or(1, |r| r.runs_mib_s.len() as u32);
        if disk_model {
            config.disk_model =
                Some(iopath_storage_server::engine::modeled::DiskModel::sata_tier());
        }
        let bench = JournalBenchResult::new(&config, "io_uring".into(), rows);
        JournalReport {
            modeled: crate::journal::report::modeled_statement(&config, fio_mib_s.is_some()),
            sizing: String::new(),
            dir_is_default: false,
            fio_mib_s,
            fio_command: None,
            fio_version: None,
            fio_error: None,
            baseline_ratio_vs_fio: None,
            sync_ratio_vs_fio: None,
            async_ratio_vs_fio: None,
            bench,
        }
    }

    fn read_well(figure: &Figure) -> Drawing {
        Drawing::read_clean(&figure.svg()).unwrap_or_else(|e| panic!("{e}"))
    }

    #[test]
    fn every_configuration_is_a_series_with_an_unjoined_point_per_run() {
        let rows = vec![
            row(
                "block level (raw io_uring writer, O_DIRECT)",
                &[410.0, 455.5, 430.0],
            ),
            row(
                "OST, internal journal, sync commits",
                &[120.0, 118.0, 131.0],
            ),
            row(
                "OST, internal journal, async commits",
                &[400.0, 440.0, 425.0],
            ),
        ];
        let report = report(false, rows.clone(), Some(470.0));
        let drawing = read_well(&figure(&report));
        assert_eq!(drawing.series.len(), 3);
        for (shape, row) in drawing.series.iter().zip(&rows) {
            assert_eq!(shape.name, row.configuration);
            assert_eq!(shape.points.len(), 3, "{}", shape.name);
            assert!(
                !shape.joined,
                "separate runs are not joined: {}",
                shape.name
            );
        }
        // Higher rates are drawn higher: the sync line's second run lies below the async one's.
        let y = |i: usize| drawing.series[i].points[1].1;
        assert!(y(1) > y(2), "sync {} below async {}", y(1), y(2));
        let legend = drawing.texts_of("legend-label").join("\n");
        assert!(
            legend.contains("fio io_uring O_DIRECT, best of 3 run(s)"),
            "{legend}"
        );
        assert!(legend.contains("470"), "{legend}");
        let footnote = drawing.texts_of("footnote").join(" ");
        assert!(
            footnote.contains("Modeled: nothing: real files"),
            "{footnote}"
        );
        assert_eq!(
            drawing
                .texts_of("tick")
                .iter()
                .filter(|t| ["1", "2", "3"].contains(t))
                .count(),
            3
        );
    }

    #[test]
    fn a_modeled_disk_says_so_and_leaves_the_real_disk_s_fio_out() {
        let rows = vec![
            row("block level (raw io_uring writer, O_DIRECT)", &[64.0, 63.5]),
            row("OST, internal journal, sync commits", &[9.0, 9.1]),
            row("OST, internal journal, async commits", &[55.0, 56.0]),
            row("OST, external journal, sync commits", &[60.0, 61.0]),
        ];
        let drawing = read_well(&figure(&report(true, rows, Some(900.0))));
        assert_eq!(drawing.series.len(), 4);
        assert!(drawing.series.iter().all(|s| s.points.len() == 2));
        let legend = drawing.texts_of("legend-label").join("\n");
        assert!(!legend.contains("fio"), "{legend}");
        let footnote = drawing.texts_of("footnote").join(" ");
        assert!(footnote.contains("Modeled: the data disk"), "{footnote}");
    }

    #[test]
    fn a_single_run_is_a_point_per_configuration() {
        let rows = vec![
            row("block level (raw psync writer, O_DIRECT)", &[300.0]),
            row("OST, internal journal, sync commits", &[100.0]),
            row("OST, internal journal, async commits", &[290.0]),
        ];
        let drawing = read_well(&figure(&report(false, rows, None)));
        assert!(drawing.series.iter().all(|s| s.points.len() == 1));
    }
}
