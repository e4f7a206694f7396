//! What the whole machine's CPUs did during a measurement, from `/proc/stat`: how many cores
//! were busy on average, and so how many core-seconds each GiB moved cost. On a machine where
//! every node of a test shares the same few cores, that is what bounds the rates: a layout
//! that costs twice the core-seconds per GiB cannot run faster than half the other's rate once
//! the cores are all busy.
//!
//! [`process_cpu_s`] reads one process's own CPU time, so that a run of a process per node can
//! say which node spent it.

use std::time::Instant;

/// The machine's CPU counters at one moment.
#[derive(Debug, Clone, Copy)]
pub struct CpuSample {
    at: Instant,
    busy_ticks: u64,
    total_ticks: u64,
    cpus: u32,
}

/// The CPU use between two samples.
#[derive(Debug, Clone, Copy, PartialEq, serde::Serialize)]
pub struct CpuUse {
    /// Cores on the machine.
    pub cpus: u32,
    /// Cores busy on average (user, system, interrupts; not idle or waiting for I/O).
    pub busy_cores: f64,
    /// Seconds between the samples.
    pub seconds: f64,
}

impl CpuUse {
    /// Busy core-seconds per GiB of `bytes` moved in the interval.
    pub fn core_s_per_gib(&self, bytes: u64) -> Option<f64> {
        (bytes > 0).then(|| self.busy_cores * self.seconds / (bytes as f64 / (1u64 << 30) as f64))
    }
}

impl CpuSample {
    /// Reads `/proc/stat`; `None` where there is none (not Linux) or it does not parse.
    pub fn now() -> Option<CpuSample> {
        let stat = std::fs::read_to_string("/proc/stat").ok()?;
        parse(&stat, Instant::now())
    }

    /// The use from `self` to `later`.
    pub fn until(&self, later: &CpuSample) -> CpuUse {
        let total = later.total_ticks.saturating_sub(self.total_ticks).max(1);
        let busy = later.busy_ticks.saturating_sub(self.busy_ticks);
        CpuUse {
            cpus: later.cpus,
            busy_cores: busy as f64 / total as f64 * f64::from(later.cpus),
            seconds: later.at.saturating_duration_since(self.at).as_secs_f64(),
        }
    }
}

/// The aggregate `cpu` line: user nice system idle iowait irq softirq steal ...; idle and
/// iowait are not busy, steal (another guest had the core) is not ours either.
fn parse(stat: &str, at: Instant) -> Option<CpuSample> {
    let mut lines = stat.lines();
    let fields: Vec<u64> = lines
        .next()?
        .strip_prefix("cpu ")?
        .split_whitespace()
        .take(8)
        .map(|f| f.parse().ok())
        .collect::<Option<_>>()?;
    if fields.len() < 5 {
        return None;
    }
    let total: u64 = fields.iter().sum();
    let idle = fields[3] + fields[4] + fields.get(7).copied().unwrap_or(0);
    let cpus = lines
        .filter(|l| l.starts_with("cpu") && l.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
        .count() as u32;
    Some(CpuSample {
        at,
        busy_ticks: total - idle,
        total_ticks: total,
        cpus: cpus.max(1),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn busy_cores_come_from_the_aggregate_line() {
        let t0 = Instant::now();
        let before = parse(
            "cpu  100 0 100 800 0 0 0 0 0 0\ncpu0 1\ncpu1 1\nintr 5\n",
            t0,
        )
        .unwrap();
        let after = parse(
            "cpu  250 0 150 900 100 0 0 0 0 0\ncpu0 1\ncpu1 1\nintr 5\n",
            t0 + std::time::Duration::from_secs(2),
        )
        .unwrap();
        let used = before.until(&after);
        assert_eq!(used.cpus, 2);
        // 200 busy ticks of 400: half of two cores.
        assert!((used.busy_cores - 1.0).abs() < 1e-9, "{used:?}");
        assert!((used.core_s_per_gib(1 << 30).unwrap() - 2.0).abs() < 1e-6);
        assert_eq!(used.core_s_per_gib(0), None);
        assert!(parse("intr 5\n", t0).is_none());
    }
}

/// The CPU time process `pid` has used so far (user and system, its threads included), in
/// seconds, from `/proc/PID/stat`; `None` when it cannot be read (the process is gone, or not
/// Linux). Pass `"self"` for this process.
pub fn process_cpu_s(pid: &str) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_process_cpu(&stat, clock_ticks_per_second())
}

fn clock_ticks_per_second() -> f64 {
    // SAFETY: sysconf only reads a configuration value.
    let ticks = unsafe { libc::sysconf(libc::_SC_CLK_TCK) };
    if ticks > 0 { ticks as f64 } else { 100.0 }
}

/// utime and stime, the 14th and 15th fields; the command name (2nd) is in parentheses and
/// may hold spaces, so the fields are counted from its closing one.
fn parse_process_cpu(stat: &str, ticks_per_s: f64) -> Option<f64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_whitespace().skip(11);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some((utime + stime) as f64 / ticks_per_s)
}

#[cfg(test)]
mod process_tests {
    use super::*;

    #[test]
    fn a_process_stat_line_gives_user_plus_system_time() {
        // pid (comm with a space) state ppid ... utime=250 stime=150.
        let stat = "4242 (iopath node) S 1 4242 4242 0 -1 4194560 900 0 0 0 250 150 0 0 20 0 3 0";
        assert_eq!(parse_process_cpu(stat, 100.0), Some(4.0));
        assert_eq!(parse_process_cpu("garbage", 100.0), None);
    }

    #[test]
    fn this_process_has_used_some_cpu() {
        let spent = process_cpu_s("self").unwrap();
        let mut x = 0u64;
        for i in 0..20_000_000u64 {
            x = x.wrapping_mul(31).wrapping_add(i);
        }
        std::hint::black_box(x);
        assert!(process_cpu_s("self").unwrap() > spent);
    }
}
