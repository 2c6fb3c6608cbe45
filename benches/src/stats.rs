//! Percentiles of timings.

use serde::Serialize;

/// Summary of a sample of durations (in whatever unit they were recorded).
#[derive(Debug, Clone, Copy, Default, Serialize, PartialEq)]
pub struct Summary {
    /// Median.
    pub p50: f64,
    /// 90th percentile.
    pub p90: f64,
    /// 99th percentile.
    pub p99: f64,
    /// 99.9th percentile.
    pub p999: f64,
    /// Largest value.
    pub max: f64,
    /// Mean.
    pub mean: f64,
    /// Sample size.
    pub count: usize,
}

impl Summary {
    /// Summarizes `values` (sorted in place). Nearest-rank percentiles; all zero when empty.
    pub fn of(values: &mut [f64]) -> Summary {
        if values.is_empty() {
            return Summary::default();
        }
        values.sort_by(f64::total_cmp);
        let n = values.len();
        let q = |p: f64| {
            let rank = ((p * n as f64).ceil() as usize).clamp(1, n);
            values[rank - 1]
        };
        Summary {
            p50: q(0.50),
            p90: q(0.90),
            p99: q(0.99),
            p999: q(0.999),
            max: values[n - 1],
            mean: values.iter().sum::<f64>() / n as f64,
            count: n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::Summary;

    #[test]
    fn nearest_rank() {
        let mut v: Vec<f64> = (1..=1000).rev().map(f64::from).collect();
        let s = Summary::of(&mut v);
        assert_eq!(
            (s.p50, s.p90, s.p99, s.p999, s.max),
            (500.0, 900.0, 990.0, 999.0, 1000.0)
        );
        assert_eq!(s.mean, 500.5);
        assert_eq!(Summary::of(&mut []), Summary::default());
    }
}
