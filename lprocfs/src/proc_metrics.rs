//! The families every Prometheus client library exports about its own process (`process_*`,
//! read from `/proc/self` at each scrape) and `iopath_build_info{version}`, 1 — which build a
//! series came from. [`crate::scrape::render`] adds them to every node's scrape.

use prometheus_client::collector::Collector;
use prometheus_client::encoding::DescriptorEncoder;

use crate::families::{Labels, counters, gauges};

/// Clock ticks per second in `/proc`'s CPU times: the kernel's USER_HZ, 100 on Linux, as
/// Prometheus's own procfs reader takes it.
const USER_HZ: f64 = 100.0;

/// The process's own families, as a collector.
#[derive(Debug)]
pub struct Process;

/// What one reading of `/proc/self` says.
#[derive(Debug, Clone, Copy, PartialEq)]
struct ProcessSample {
    cpu_seconds: f64,
    resident_bytes: u64,
    virtual_bytes: u64,
    start_time_seconds: f64,
    open_fds: u64,
    max_fds: Option<u64>,
}

impl ProcessSample {
    /// From `/proc/self/stat`, `/proc/self/status`, `/proc/self/limits`, `/proc/stat` (the
    /// boot time) and the count of `/proc/self/fd`; `None` if a field is missing.
    fn parse(
        stat: &str,
        status: &str,
        limits: &str,
        boot_stat: &str,
        open_fds: u64,
    ) -> Option<Self> {
        // The command name (field 2) is in parentheses and may hold spaces: count after it.
        let after_name = stat.get(stat.rfind(')')? + 2..)?;
        let fields: Vec<&str> = after_name.split_whitespace().collect();
        // proc(5) numbers the fields from 1; field 3 (the state) is the first here.
        let field = |n: usize| fields.get(n - 3)?.parse::<u64>().ok();
        let bytes_of = |key: &str| {
            status
                .lines()
                .find_map(|l| l.strip_prefix(key))?
                .split_whitespace()
                .next()?
                .parse::<u64>()
                .ok()
                .map(|kib| kib * 1024)
        };
        let boot = boot_stat
            .lines()
            .find_map(|l| l.strip_prefix("btime "))?
            .trim()
            .parse::<u64>()
            .ok()?;
        let max_fds = limits
            .lines()
            .find(|l| l.starts_with("Max open files"))
            .and_then(|l| l.split_whitespace().nth(3))
            .and_then(|soft| soft.parse().ok());
        Some(ProcessSample {
            // utime (14) and stime (15), in ticks.
            cpu_seconds: (field(14)? + field(15)?) as f64 / USER_HZ,
            resident_bytes: bytes_of("VmRSS:")?,
            virtual_bytes: bytes_of("VmSize:")?,
            // starttime (22): ticks after boot.
            start_time_seconds: boot as f64 + field(22)? as f64 / USER_HZ,
            open_fds,
            max_fds,
        })
    }

    fn read() -> Option<Self> {
        let read = |path: &str| std::fs::read_to_string(path).ok();
        let open_fds = std::fs::read_dir("/proc/self/fd").ok()?.count() as u64;
        Self::parse(
            &read("/proc/self/stat")?,
            &read("/proc/self/status")?,
            &read("/proc/self/limits").unwrap_or_default(),
            &read("/proc/stat")?,
            open_fds,
        )
    }
}

impl Collector for Process {
    fn encode(&self, mut encoder: DescriptorEncoder) -> Result<(), std::fmt::Error> {
        gauges(
            &mut encoder,
            "iopath_build_info",
            "The build that serves these series: its version, always 1.",
            [(vec![("version", env!("CARGO_PKG_VERSION").to_owned())], 1.0)],
        )?;
        // Where /proc cannot be read, the process families are left out rather than made up.
        let Some(p) = ProcessSample::read() else {
            return Ok(());
        };
        let one = |value: f64| [(Labels::new(), value)];
        counters(
            &mut encoder,
            "process_cpu_seconds",
            "Total user and system CPU time spent in seconds.",
            one(p.cpu_seconds),
        )?;
        gauges(
            &mut encoder,
            "process_resident_memory_bytes",
            "Resident memory size in bytes.",
            one(p.resident_bytes as f64),
        )?;
        gauges(
            &mut encoder,
            "process_virtual_memory_bytes",
            "Virtual memory size in bytes.",
            one(p.virtual_bytes as f64),
        )?;
        gauges(
            &mut encoder,
            "process_start_time_seconds",
            "Start time of the process since unix epoch in seconds.",
            one(p.start_time_seconds),
        )?;
        gauges(
            &mut encoder,
            "process_open_fds",
            "Number of open file descriptors.",
            one(p.open_fds as f64),
        )?;
        if let Some(max) = p.max_fds {
            gauges(
                &mut encoder,
                "process_max_fds",
                "Maximum number of open file descriptors.",
                one(max as f64),
            )?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_reading_of_proc_gives_cpu_memory_start_and_descriptors() {
        // A command name with a space and a parenthesis, as proc(5) allows.
        let stat = "4242 (iopath (x) y) S 1 4242 4242 0 -1 4194560 1200 0 0 0 \
                    250 50 0 0 20 0 9 0 12345 987654321 2048 18446744073709551615";
        let status = "Name:\tiopath\nVmSize:\t  964512 kB\nVmRSS:\t   21504 kB\n";
        let limits = "Limit                     Soft Limit           Hard Limit           Units\n\
                      Max open files            65536                524288               files\n";
        let boot = "cpu  1 2 3\nbtime 1700000000\n";
        let p = ProcessSample::parse(stat, status, limits, boot, 17).unwrap();
        assert_eq!(p.cpu_seconds, 3.0, "(250 + 50) ticks at 100 a second");
        assert_eq!(p.resident_bytes, 21504 * 1024);
        assert_eq!(p.virtual_bytes, 964512 * 1024);
        assert_eq!(p.start_time_seconds, 1_700_000_000.0 + 123.45);
        assert_eq!(p.open_fds, 17);
        assert_eq!(p.max_fds, Some(65536));
        assert_eq!(
            ProcessSample::parse("4242 (x", status, limits, boot, 1),
            None
        );
        // This process's own, read for real.
        assert!(ProcessSample::read().is_some_and(|p| p.resident_bytes > 0));
    }
}
