//! A selftest over RPC sizes (`iopath selftest --sizes 4k,64k,1m`): the same tests at each
//! size, one after another, beside one baseline measured before the first — what
//! lnet_selftest users script as a loop over `brw ... size=`.

use crate::error::BenchError;
use crate::report::{Table, rate, size_text};

use super::config::SelftestConfig;
use super::report::SelftestReport;
use super::{check, measure, measure_baseline};

/// Most sizes one sweep measures.
pub const SIZES_MAX: usize = 16;

/// What a sweep measured.
#[derive(Debug, Clone, serde::Serialize)]
pub struct SweepReport {
    /// The sizes, in the order given.
    pub sizes_bytes: Vec<u64>,
    /// One selftest per size, in the same order; each carries the one baseline measured
    /// before the sweep, and its ratio to it.
    pub runs: Vec<SelftestReport>,
    /// What in this sweep was modeled rather than real.
    pub modeled: String,
}

/// Runs `config`'s tests at each of `sizes_bytes` (its own `size_bytes` is not used),
/// measuring the baseline once, first.
pub async fn sweep(
    config: &SelftestConfig,
    sizes_bytes: &[u64],
    progress: &mut (dyn FnMut(&str) + Send),
) -> Result<SweepReport, BenchError> {
    if sizes_bytes.is_empty() || sizes_bytes.len() > SIZES_MAX {
        return Err(BenchError::refused(format!(
            "--sizes takes 1 to {SIZES_MAX} sizes"
        )));
    }
    let configs: Vec<SelftestConfig> = sizes_bytes
        .iter()
        .map(|&size_bytes| SelftestConfig {
            size_bytes,
            ..config.clone()
        })
        .collect();
    for (i, c) in configs.iter().enumerate() {
        check(c)?;
        if sizes_bytes[..i].contains(&c.size_bytes) {
            return Err(BenchError::refused(format!(
                "--sizes lists {} twice",
                size_text(c.size_bytes)
            )));
        }
    }
    let baseline = measure_baseline(config, progress);
    let mut runs = Vec::with_capacity(configs.len());
    for (i, c) in configs.iter().enumerate() {
        progress(&format!(
            "size {} of {}: {}",
            i + 1,
            configs.len(),
            size_text(c.size_bytes)
        ));
        runs.push(measure(c, baseline.clone(), progress).await?);
    }
    Ok(SweepReport {
        sizes_bytes: sizes_bytes.to_vec(),
        modeled: runs.first().map(|r| r.modeled.clone()).unwrap_or_default(),
        runs,
    })
}

/// The table a person reads: a row per size and test.
pub fn render_sweep(report: &SweepReport) -> String {
    let Some(first) = report.runs.first() else {
        return String::new();
    };
    let mut out = format!(
        "iopath selftest over {} sizes: {} client(s) → {} server(s) over {}, concurrency {}, checksum {}\n",
        report.runs.len(),
        first.clients,
        first.servers,
        super::report::transport_text(first),
        first.concurrency,
        first.checksum,
    );
    let mut table = Table::new(&[
        "size",
        "test",
        "layout",
        "RPCs",
        "MiB/s",
        "RPC/s",
        "errors",
        "of baseline",
    ]);
    for run in &report.runs {
        for test in &run.tests {
            let of_baseline = run
                .baseline_mib_s
                .filter(|&b| b > 0.0 && test.bytes > 0)
                .map_or("-".into(), |b| format!("{:.3}", test.mib_s / b));
            table.row(vec![
                size_text(run.size_bytes),
                test.test.clone(),
                test.layout.clone(),
                test.rpcs.to_string(),
                rate(test.mib_s),
                rate(test.rpc_s),
                test.errors.to_string(),
                of_baseline,
            ]);
        }
    }
    out.push_str(&table.render());
    match (&first.baseline, &first.baseline_error) {
        (Some(baseline), _) => out.push_str(&format!(
            "baseline: {} MiB/s, measured once before the sweep (`{}`, {})\n",
            rate(baseline.mib_s),
            baseline.command,
            baseline.version
        )),
        (None, Some(why)) => out.push_str(&format!("no baseline: {why}\n")),
        (None, None) => {}
    }
    out.push_str(&format!("modeled: {}\n", report.modeled));
    out
}
