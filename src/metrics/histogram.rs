//! A Prometheus histogram of seconds with fixed buckets, counted without a lock: what
//! `hearth_actor_thread_stall_seconds` is kept in.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// Upper bounds of the buckets, in seconds: from a timer a few milliseconds late to a
/// thread held for ten seconds.
pub const STALL_BUCKETS: &[f64] = &[
    0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];

pub struct Histogram {
    bounds: &'static [f64],
    /// Observations per bucket (not cumulative); the last one is past every bound.
    counts: Vec<AtomicU64>,
    sum_micros: AtomicU64,
}

/// A histogram as read at one moment.
#[derive(Debug, Clone, PartialEq)]
pub struct HistogramSnapshot {
    /// Each bucket's upper bound and how many observations were at most that.
    pub cumulative: Vec<(f64, u64)>,
    pub count: u64,
    pub sum_seconds: f64,
}

impl HistogramSnapshot {
    /// How many observations were above `bound`, which must be one of the buckets' bounds.
    pub fn count_above(&self, bound: f64) -> Option<u64> {
        self.cumulative
            .iter()
            .find(|(le, _)| *le == bound)
            .map(|(_, at_most)| self.count - at_most)
    }
}

impl Histogram {
    pub fn new(bounds: &'static [f64]) -> Self {
        Histogram {
            bounds,
            counts: (0..=bounds.len()).map(|_| AtomicU64::new(0)).collect(),
            sum_micros: AtomicU64::new(0),
        }
    }

    pub fn observe(&self, value: Duration) {
        let seconds = value.as_secs_f64();
        let bucket = self
            .bounds
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(self.bounds.len());
        self.counts[bucket].fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(value.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    pub fn snapshot(&self) -> HistogramSnapshot {
        let mut running = 0;
        let cumulative = self
            .bounds
            .iter()
            .zip(&self.counts)
            .map(|(bound, count)| {
                running += count.load(Ordering::Relaxed);
                (*bound, running)
            })
            .collect();
        let count = running + self.counts[self.bounds.len()].load(Ordering::Relaxed);
        HistogramSnapshot {
            cumulative,
            count,
            sum_seconds: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }

    /// The histogram in the text exposition format, its help and type lines first.
    pub fn render(&self, text: &mut String, name: &str, help: &str) {
        let snapshot = self.snapshot();
        let _ = writeln!(text, "# HELP {name} {help}\n# TYPE {name} histogram");
        for (bound, at_most) in &snapshot.cumulative {
            let _ = writeln!(text, "{name}_bucket{{le=\"{bound}\"}} {at_most}");
        }
        let _ = writeln!(text, "{name}_bucket{{le=\"+Inf\"}} {}", snapshot.count);
        let _ = writeln!(text, "{name}_sum {}", snapshot.sum_seconds);
        let _ = writeln!(text, "{name}_count {}", snapshot.count);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn observations_fall_in_cumulative_buckets() {
        let histogram = Histogram::new(STALL_BUCKETS);
        histogram.observe(Duration::from_millis(1));
        histogram.observe(Duration::from_millis(300));
        histogram.observe(Duration::from_millis(1_500));
        histogram.observe(Duration::from_secs(60));
        let snapshot = histogram.snapshot();
        assert_eq!(snapshot.count, 4);
        assert_eq!(snapshot.count_above(1.0), Some(2));
        assert_eq!(snapshot.count_above(0.005), Some(3));
        assert_eq!(snapshot.count_above(0.3), None);
        assert!((snapshot.sum_seconds - 61.801).abs() < 1e-9);
        let mut text = String::new();
        histogram.render(&mut text, "x_seconds", "X.");
        assert!(text.starts_with("# HELP x_seconds X.\n# TYPE x_seconds histogram\n"));
        assert!(text.contains("x_seconds_bucket{le=\"0.005\"} 1\n"));
        assert!(text.contains("x_seconds_bucket{le=\"1\"} 2\n"));
        assert!(text.contains("x_seconds_bucket{le=\"10\"} 3\n"));
        assert!(text.contains("x_seconds_bucket{le=\"+Inf\"} 4\n"));
        assert!(text.contains("x_seconds_count 4\n"));
    }
}
