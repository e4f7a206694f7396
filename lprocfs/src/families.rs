//! Metric families written from a component's own counters when a scrape comes: [`counters`],
//! [`gauges`] and [`histograms`] write one family each, with Prometheus's names (`iopath_`
//! prefix, base units, `_total` added to counters by the encoder). Each component's
//! `prometheus_client` collector calls them; [`crate::scrape::render`] writes a registry's text
//! (`iopath_admin::metrics` serves it over HTTP).

use prometheus_client::encoding::{
    DescriptorEncoder, EncodeCounterValue, EncodeLabelSet, EncodeMetric,
};
use prometheus_client::metrics::MetricType;
use prometheus_client::metrics::counter::ConstCounter;
use prometheus_client::metrics::gauge::ConstGauge;

/// Labels of one sample: `(name, value)` pairs.
pub type Labels = Vec<(&'static str, String)>;

/// Writes counter family `name` (without `_total`: the encoder adds it) with one sample per
/// label set.
pub fn counters<L: EncodeLabelSet, V: EncodeCounterValue + std::fmt::Debug + Send + Sync>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, V)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Counter)?;
    for (labels, value) in samples {
        ConstCounter::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// Writes gauge family `name` with one sample per label set.
pub fn gauges<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, f64)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Gauge)?;
    for (labels, value) in samples {
        ConstGauge::new(value).encode(family.encode_family(&labels)?)?;
    }
    Ok(())
}

/// One histogram sample: its sum, its count, and its cumulative buckets `(upper bound,
/// count at or below it)` without `+Inf`.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSample {
    /// The sum of the values.
    pub sum: f64,
    /// How many values.
    pub count: u64,
    /// Cumulative buckets, by upper bound.
    pub buckets: Vec<(f64, u64)>,
}

/// Writes histogram family `name` with one sample per label set.
pub fn histograms<L: EncodeLabelSet>(
    encoder: &mut DescriptorEncoder,
    name: &str,
    help: &str,
    samples: impl IntoIterator<Item = (L, HistogramSample)>,
) -> Result<(), std::fmt::Error> {
    let mut family = encoder.encode_descriptor(name, help, None, MetricType::Histogram)?;
    for (labels, sample) in samples {
        // The encoder takes each bucket's own count and accumulates them itself; the last
        // bucket it writes must be +Inf.
        let mut buckets = Vec::with_capacity(sample.buckets.len() + 1);
        let mut below = 0;
        for (bound, cumulative) in sample.buckets {
            buckets.push((bound, cumulative.saturating_sub(below)));
            below = below.max(cumulative);
        }
        buckets.push((f64::INFINITY, sample.count.saturating_sub(below)));
        family.encode_family(&labels)?.encode_histogram::<Labels>(
            sample.sum,
            sample.count,
            &buckets,
            None,
        )?;
    }
    Ok(())
}
