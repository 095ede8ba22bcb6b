//! The relative difference the tests and `bench --verify` compare results by:
//! `max |a − b| / max |b|` over every value (`b` the reference), NaN as soon as any value is
//! NaN, so that a NaN anywhere fails a comparison instead of vanishing in `f64::max`.

use crate::Real;

/// The larger of two differences, NaN when either is (`f64::max` would drop the NaN).
pub(crate) fn nan_max(a: f64, b: f64) -> f64 {
    if a.is_nan() || b.is_nan() {
        f64::NAN
    } else {
        a.max(b)
    }
}

/// Running `max |a − b|` and `max |b|` over the value pairs added so far.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RelDiff {
    diff: f64,
    scale: f64,
}

impl RelDiff {
    /// Adds the pairs of two rows of equal length (`b` the reference).
    pub(crate) fn add<T: Real>(&mut self, a: &[T], b: &[T]) {
        debug_assert_eq!(a.len(), b.len());
        for (a, b) in a.iter().zip(b) {
            let (a, b) = (
                a.to_f64().unwrap_or(f64::NAN),
                b.to_f64().unwrap_or(f64::NAN),
            );
            self.diff = nan_max(self.diff, (a - b).abs());
            self.scale = self.scale.max(b.abs());
        }
    }

    /// `max |a − b| / max |b|`, or `max |a − b|` when every reference value is zero.
    pub(crate) fn value(&self) -> f64 {
        if self.scale > 0.0 {
            self.diff / self.scale
        } else {
            self.diff
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn relative_to_the_largest_reference_value() {
        let mut d = RelDiff::default();
        d.add(&[1.0f64, 2.5, -4.0], &[1.0, 2.0, -4.0]);
        assert_eq!(d.value(), 0.5 / 4.0);
    }

    #[test]
    fn a_nan_on_either_side_stays() {
        for (a, b) in [(f64::NAN, 1.0), (1.0, f64::NAN)] {
            let mut d = RelDiff::default();
            d.add(&[a, 1.0], &[b, 0.5]);
            d.add(&[3.0], &[1.0]);
            assert!(d.value().is_nan(), "{a} against {b}");
        }
        assert!(nan_max(f64::NAN, 1.0).is_nan() && nan_max(1.0, f64::NAN).is_nan());
        assert_eq!(nan_max(1.0, 2.0), 2.0);
    }

    #[test]
    fn zero_reference_gives_the_absolute_difference() {
        let mut d = RelDiff::default();
        d.add(&[0.25f32, 0.0], &[0.0, 0.0]);
        assert_eq!(d.value(), 0.25);
    }
}
