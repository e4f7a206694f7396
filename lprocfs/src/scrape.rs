//! A scrape's text: a registry's families in the Prometheus text format, followed by the
//! process's own ([`crate::proc_metrics`]) and the build's.

use prometheus_client::registry::Registry;

/// The registry's text, as a scrape gets it, followed by the process's own families and the
/// build ([`crate::proc_metrics`]).
pub fn render(registry: &Registry) -> Result<String, std::fmt::Error> {
    static PROCESS: std::sync::OnceLock<Registry> = std::sync::OnceLock::new();
    let process = PROCESS.get_or_init(|| {
        let mut registry = Registry::default();
        registry.register_collector(Box::new(crate::proc_metrics::Process));
        registry
    });
    let mut text = String::new();
    prometheus_client::encoding::prometheus_text::encode(&mut text, registry)?;
    prometheus_client::encoding::prometheus_text::encode(&mut text, process)?;
    Ok(text)
}
