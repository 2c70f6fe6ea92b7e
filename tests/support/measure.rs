//! What the benchmarks measure of a process and report: sizes from the environment,
//! resident memory and CPU time from `/proc`, percentiles, verdicts against targets.

// Each benchmark uses a different part of this; the tests none.
#![allow(dead_code)]

use std::time::Duration;

/// The number in environment variable `name`, or `default`.
pub fn env_number(name: &str, default: usize) -> usize {
    std::env::var(name)
        .ok()
        .and_then(|value| value.parse().ok())
        .unwrap_or(default)
}

/// A line of `/proc/<pid>/status` in megabytes (`VmRSS`, `VmHWM`).
pub fn memory_mb(pid: u32, field: &str) -> f64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .unwrap_or_default()
        .lines()
        .find(|line| line.starts_with(field))
        .and_then(|line| line.split_whitespace().nth(1))
        .and_then(|kb| kb.parse::<f64>().ok())
        .map_or(f64::NAN, |kb| kb / 1024.0)
}

/// User plus system CPU time the process has used, in seconds.
pub fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name (which may contain spaces) start after ')'.
    let fields: Vec<&str> = stat
        .rsplit_once(')')
        .map(|(_, rest)| rest.split_whitespace().collect())
        .unwrap_or_default();
    [11, 12]
        .iter()
        .filter_map(|index| fields.get(*index).and_then(|v| v.parse::<f64>().ok()))
        .sum::<f64>()
        / 100.0
}

/// The `fraction` percentile of `sorted`, in milliseconds.
pub fn percentile(sorted: &[Duration], fraction: f64) -> f64 {
    let index = ((sorted.len() as f64 - 1.0) * fraction).round() as usize;
    sorted[index].as_secs_f64() * 1000.0
}

pub fn verdict(ok: bool) -> &'static str {
    if ok { "meets target" } else { "MISSES target" }
}
