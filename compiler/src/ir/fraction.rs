//! `Fraction`: a decimal from 0 to 1 (`ContextWindow.ContextCapFraction`), kept as written
//! by the lowering's reader and printed in `.fir` as Rust prints an `f64`, so it parses
//! back equal.

use std::fmt;

/// A finite decimal in 0.0–1.0 (0 never stored: it means "off", which is `None`).
#[derive(Copy, Clone, Debug, PartialEq)]
pub struct Fraction(f64);

impl Fraction {
    /// `value` when it lies in (0, 1]; `None` for 0 (off) and anything else.
    pub fn new(value: f64) -> Option<Fraction> {
        (value.is_finite() && value > 0.0 && value <= 1.0).then_some(Fraction(value))
    }

    pub fn get(self) -> f64 {
        self.0
    }

    /// `total` scaled by this fraction, rounded down.
    pub fn of(self, total: u64) -> u64 {
        (total as f64 * self.0) as u64
    }
}

impl fmt::Display for Fraction {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_share_above_zero_and_up_to_one_is_a_fraction() {
        assert_eq!(Fraction::new(0.8).map(Fraction::get), Some(0.8));
        assert_eq!(Fraction::new(1.0).map(Fraction::get), Some(1.0));
        for refused in [0.0, -0.1, 1.5, f64::NAN, f64::INFINITY] {
            assert_eq!(Fraction::new(refused), None, "{refused}");
        }
        assert_eq!(Fraction::new(0.25).unwrap().of(1000), 250);
        assert_eq!(Fraction::new(0.1).unwrap().to_string(), "0.1");
    }
}
