//! Pass rates and their uncertainty: the Wilson score interval at 95%, which stays inside
//! 0–1 and means something for the few runs an eval can pay for (3 of 3 passing is
//! 44%–100%, not "100%").

/// The normal quantile of a two-sided 95% interval.
const Z: f64 = 1.959_963_984_540_054;

/// A pass rate: `passed` of `runs`, with its 95% interval.
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Rate {
    pub passed: u32,
    pub runs: u32,
    pub low: f64,
    pub high: f64,
}

impl Rate {
    pub fn of(passed: u32, runs: u32) -> Rate {
        let (low, high) = wilson(passed, runs);
        Rate {
            passed,
            runs,
            low,
            high,
        }
    }

    /// The share of runs that passed (0 when there were none).
    pub fn value(&self) -> f64 {
        if self.runs == 0 {
            0.0
        } else {
            f64::from(self.passed) / f64::from(self.runs)
        }
    }

    /// Whether the two intervals share no point: a difference this large is unlikely to be
    /// chance alone.
    pub fn clearly_below(&self, other: &Rate) -> bool {
        self.high < other.low
    }
}

/// The Wilson score interval of `passed` successes in `runs` trials; `(0, 1)` for no trial.
pub fn wilson(passed: u32, runs: u32) -> (f64, f64) {
    if runs == 0 {
        return (0.0, 1.0);
    }
    let n = f64::from(runs);
    let p = f64::from(passed.min(runs)) / n;
    let z2 = Z * Z;
    let centre = (p + z2 / (2.0 * n)) / (1.0 + z2 / n);
    let half = Z * (p * (1.0 - p) / n + z2 / (4.0 * n * n)).sqrt() / (1.0 + z2 / n);
    ((centre - half).max(0.0), (centre + half).min(1.0))
}

/// `67%`: a share as a whole percentage.
pub fn percent(share: f64) -> String {
    format!("{:.0}%", share * 100.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 5e-4
    }

    #[test]
    fn wilson_matches_published_values() {
        // 3 of 3: 0.4385–1; 0 of 3: 0–0.5615; 5 of 10: 0.2366–0.7634.
        let (low, high) = wilson(3, 3);
        assert!(close(low, 0.4385) && close(high, 1.0), "{low} {high}");
        let (low, high) = wilson(0, 3);
        assert!(close(low, 0.0) && close(high, 0.5615), "{low} {high}");
        let (low, high) = wilson(5, 10);
        assert!(close(low, 0.2366) && close(high, 0.7634), "{low} {high}");
        assert_eq!(wilson(0, 0), (0.0, 1.0));
        assert_eq!(percent(Rate::of(2, 3).value()), "67%");
        assert!(Rate::of(0, 20).clearly_below(&Rate::of(20, 20)));
        assert!(!Rate::of(2, 3).clearly_below(&Rate::of(3, 3)));
    }
}
