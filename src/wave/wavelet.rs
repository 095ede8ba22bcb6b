//! [`Wavelet`]: the time function a source injects.

use serde::{Deserialize, Serialize};

use crate::{Error, Result};

/// A source's time function `s(t)`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub enum Wavelet {
    /// The Ricker wavelet (second derivative of a Gaussian) of peak frequency `freq` Hz,
    /// centred at `delay` seconds: `(1 − 2π²f²τ²)·exp(−π²f²τ²)`, `τ = t − delay`.
    Ricker {
        /// Peak frequency, Hz.
        freq: f64,
        /// Time of the peak, seconds (1/freq puts the wavelet's start near zero).
        delay: f64,
    },
    /// Samples `s(k·dt)` at the run's time step, zero after the last.
    Samples(Vec<f64>),
}

impl Wavelet {
    /// A Ricker wavelet of peak frequency `freq`, delayed by `1/freq` so it starts from
    /// (nearly) zero.
    pub fn ricker(freq: f64) -> Wavelet {
        Wavelet::Ricker {
            freq,
            delay: 1.0 / freq,
        }
    }

    /// Checks the definition: positive finite frequency, finite samples.
    pub fn validate(&self) -> Result<()> {
        match self {
            Wavelet::Ricker { freq, delay } if !(freq.is_finite() && *freq > 0.0 && delay.is_finite()) => {
                Err(Error::InvalidArgument(format!(
                    "a Ricker wavelet needs a positive finite frequency and a finite delay, got {freq} Hz and {delay} s"
                )))
            }
            Wavelet::Samples(s) if s.iter().any(|v| !v.is_finite()) => Err(Error::InvalidArgument(
                "a source wavelet holds a non-finite sample".into(),
            )),
            _ => Ok(()),
        }
    }

    /// The value at step `n` of a run with time step `dt` (time `n·dt`).
    pub fn at(&self, n: usize, dt: f64) -> f64 {
        match self {
            Wavelet::Ricker { freq, delay } => {
                let a = (std::f64::consts::PI * freq * (n as f64 * dt - delay)).powi(2);
                // Past a = 746, exp(−a) is zero and the value is (1 − 2a)·0 = −0: returned
                // as such, so that an `a` that overflows to infinity gives no NaN.
                if a > 746.0 {
                    return -0.0;
                }
                (1.0 - 2.0 * a) * (-a).exp()
            }
            Wavelet::Samples(s) => s.get(n).copied().unwrap_or(0.0),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ricker_peaks_at_its_delay_and_has_zero_mean() {
        let w = Wavelet::ricker(10.0);
        let dt = 1e-4;
        assert!((w.at(1000, dt) - 1.0).abs() < 1e-12);
        // The integral of a Ricker wavelet vanishes (∫(1 − 2s²)e^(−s²) ds = s·e^(−s²), with
        // s = πfτ); the part cut off before t = 0 holds about 5e-6.
        let mean: f64 = (0..4000).map(|n| w.at(n, dt)).sum::<f64>() * dt;
        assert!(mean.abs() < 1e-5, "{mean}");
        let lobe: f64 = (900..=1100).map(|n| w.at(n, dt)).sum::<f64>() * dt;
        let s = std::f64::consts::PI * 10.0 * 0.01;
        let exact = 2.0 * s * (-s * s).exp() / (std::f64::consts::PI * 10.0);
        assert!(
            (lobe - exact).abs() < 1e-4 * exact.max(1.0),
            "{lobe} vs {exact}"
        );
    }

    #[test]
    fn samples_end_in_zeros() {
        let w = Wavelet::Samples(vec![1.0, 2.0]);
        assert_eq!((w.at(1, 0.1), w.at(5, 0.1)), (2.0, 0.0));
        assert!(Wavelet::Samples(vec![f64::NAN]).validate().is_err());
        assert!(Wavelet::ricker(-1.0).validate().is_err());
    }
}
