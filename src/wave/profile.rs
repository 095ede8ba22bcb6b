//! The absorbing layers' damping: `η = dt·d(x)` per axis, its centred difference for the
//! auxiliary field's update, and the zones of cells the layer kernel updates.

use super::WaveKernel;
use crate::Real;

/// Reflection coefficient the damping profile is designed for (Collino & Tsogka's
/// `d0 = 3v·ln(1/R)/(2L)` with a quadratic profile). Stronger damping reflects more from the
/// discrete layer itself: with 20-cell layers, order 8, a 15 Hz Ricker on 10 m cells at
/// 2,000 m/s (`tests/wave_physics.rs`, without [`PML_SHIFT`]), R = 1e-2, 3e-3, 1e-3, 1e-5
/// measured 0.55, 0.65, 0.75, 1.27% at normal incidence and 1.8, 2.2, 2.6, 4.0% at 45° (1e-3
/// with the shift: 0.72 and 2.59%); 1e-3, the usual design
/// value, keeps a margin for lower frequencies, which the weaker profiles absorb less.
const DESIGN_REFLECTION: f64 = 1e-3;

/// Largest `η = dt·d` of one axis's profile. The layer update is stable while the summed `η` of
/// a cell stays below about 4 (the damped leapfrog's roots leave the unit circle beyond
/// `η² = 4 + 4η − μ`, with `μ ≤ 4` the Laplacian's share at the stability limit): three axes
/// meeting in a corner stay below 1.5. Only layers a few cells wide reach the cap (20 cells at
/// 90% of the time-step limit give 0.26).
const ETA_MAX: f64 = 0.5;

/// The auxiliary field's decay beyond the damping: `φ` relaxes as `φ_t + (d + α)φ = −d'·u_x`
/// (a frequency shift, as in the complex-frequency-shifted PML), with
/// `α = PML_SHIFT·v_max / (h_min·w³)` for layers of `w` damped cells. Without it `φ` integrates
/// wherever `d` vanishes but its difference does not (the layers' inner edge), and two facing
/// layers hold a slowly growing, non-oscillating mode: order 8 with 8-cell layers grew tenfold in
/// 0.45 s on 10 m cells at 2,000 m/s, 20-cell layers about 20% per second. In a 1D model of the
/// update (orders 2 and 8, layers of `R + 4` to 30 cells, 30% to 99% of the time-step limit) the
/// mode's rate, and the least `α` that stops it, fall as `w⁻³`: `α ≥ 4.4·v/(h·w³)` for order 8
/// beyond 4 damped cells, less for order 2 and narrower layers. 6 keeps a margin. In that model
/// 20- and 12-cell layers of order 8 then reflect less than without it (0.49% against 0.66%,
/// 1.46% against 2.50% at normal incidence, a 15 Hz Ricker on 10 m cells at 2,000 m/s), and
/// 8-cell layers, which need the most, more (12% against 7%).
const PML_SHIFT: f64 = 6.0;

/// The damping of the absorbing layers, per axis, as the engines read it.
#[derive(Clone, Debug)]
pub(crate) struct Damping<T> {
    /// `η_a(i) = dt·d_a(i)` for every cell index `i` of axis `a` (zero outside the layers).
    pub(crate) eta: [Vec<T>; 3],
    /// `(η_a(i+1) − η_a(i−1)) / (4·h_a²)`: the auxiliary field's gradient weight.
    pub(crate) grad: [Vec<T>; 3],
    /// Per axis, the cells `lo .. hi` where neither `η` nor its difference is non-zero: a row
    /// of cells there needs only the plain kernel.
    pub(crate) inner: [[usize; 2]; 3],
    /// `α·dt`: `φ`'s update divides by `1 + α·dt + η` (see [`PML_SHIFT`]).
    pub(crate) leak: T,
}

impl<T: Real> Damping<T> {
    /// The damping for `kernel` on a grid of `dims`, each face's profile designed for the
    /// kernel's largest velocity.
    pub(crate) fn new(kernel: &WaveKernel, dims: [usize; 3]) -> Damping<T> {
        Damping::for_velocities(kernel, dims, [[kernel.v_max; 2]; 3])
    }

    /// The damping for `kernel` on a grid of `dims`, the profile of face `side` of axis `a`
    /// designed for `speed[a][side]` (the mean velocity in its layer: a profile designed for
    /// a faster medium than the waves cross is steeper than they need, and reflects more).
    pub(crate) fn for_velocities(
        kernel: &WaveKernel,
        dims: [usize; 3],
        speed: [[f64; 2]; 3],
    ) -> Damping<T> {
        let r = kernel.radius();
        let mut eta: [Vec<f64>; 3] = Default::default();
        let mut grad: [Vec<f64>; 3] = Default::default();
        let mut inner = [[0; 2]; 3];
        for a in 0..3 {
            let n = dims[a];
            let h = kernel.spacing[a];
            let width = kernel.pml.saturating_sub(r).max(1) as f64;
            let profile = |depth: f64, v: f64| {
                let d0 = 3.0 * v * (1.0 / DESIGN_REFLECTION).ln() / (2.0 * width * h);
                (kernel.dt * d0).min(ETA_MAX) * (depth / width).clamp(0.0, 1.0).powi(2)
            };
            eta[a] = (0..n)
                .map(|i| {
                    let low = if kernel.absorbs(a, 0) {
                        profile(kernel.pml as f64 - i as f64, speed[a][0])
                    } else {
                        0.0
                    };
                    let high = if kernel.absorbs(a, 1) {
                        profile(i as f64 + 1.0 + kernel.pml as f64 - n as f64, speed[a][1])
                    } else {
                        0.0
                    };
                    low + high
                })
                .collect();
            grad[a] = (0..n)
                .map(|i| {
                    if i == 0 || i + 1 == n {
                        0.0
                    } else {
                        (eta[a][i + 1] - eta[a][i - 1]) / (4.0 * h * h)
                    }
                })
                .collect();
            inner[a] = quiet_range(&eta[a], &grad[a], r);
        }
        let cast = |v: &Vec<f64>| v.iter().map(|&x| T::of(x)).collect::<Vec<T>>();
        let h_min = kernel.spacing.iter().copied().fold(f64::INFINITY, f64::min);
        let width = kernel.pml.saturating_sub(r).max(1) as f64;
        let alpha = PML_SHIFT * kernel.v_max / (h_min * width.powi(3));
        Damping {
            eta: [cast(&eta[0]), cast(&eta[1]), cast(&eta[2])],
            grad: [cast(&grad[0]), cast(&grad[1]), cast(&grad[2])],
            inner,
            leak: T::of(alpha * kernel.dt),
        }
    }

    /// The damping of the cells `cells[a]` (indices into this damping's axes) of each axis,
    /// for a stencil of radius `r`: a part of the grid, as a rank of a distributed run holds.
    #[cfg(feature = "mpi")]
    pub(crate) fn part(&self, cells: [&[usize]; 3], r: usize) -> Damping<T> {
        let pick = |v: &[T], a: usize| cells[a].iter().map(|&i| v[i]).collect::<Vec<T>>();
        let eta: [Vec<T>; 3] = std::array::from_fn(|a| pick(&self.eta[a], a));
        let grad: [Vec<T>; 3] = std::array::from_fn(|a| pick(&self.grad[a], a));
        let inner = std::array::from_fn(|a| quiet_range(&eta[a], &grad[a], r));
        let leak = self.leak;
        Damping {
            eta,
            grad,
            inner,
            leak,
        }
    }

    /// Whether the row of cells at `(y, z)` lies in a layer of the y or z axis (every cell
    /// of it then takes the layer kernel).
    pub(crate) fn layer_row(&self, y: usize, z: usize) -> bool {
        !(self.inner[1][0]..self.inner[1][1]).contains(&y)
            || !(self.inner[2][0]..self.inner[2][1]).contains(&z)
    }
}

/// The cells `lo .. hi` of an axis of `eta.len()` cells, inside its boundary layer of `r`,
/// where neither `η` nor its difference is non-zero.
fn quiet_range<V: PartialEq + num_traits::Zero>(eta: &[V], grad: &[V], r: usize) -> [usize; 2] {
    let n = eta.len();
    let quiet = |i: usize| eta[i].is_zero() && grad[i].is_zero();
    let lo = (r..n - r).find(|&i| quiet(i)).unwrap_or(n - r);
    let hi = (lo..n - r).rev().find(|&i| quiet(i)).map_or(lo, |i| i + 1);
    [lo, hi.max(lo)]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::wave::Face;

    #[test]
    fn the_layers_damp_only_near_absorbing_faces() {
        let k = WaveKernel::new(10.0, 1e-3, 2000.0)
            .with_pml(8)
            .with_free_surface();
        let d = Damping::<f64>::new(&k, [40, 30, 30]);
        // x: both faces absorb; the inner zone starts one cell past the damped cells, where
        // the difference of η still reaches.
        assert!(d.eta[0][4] > d.eta[0][7] && d.eta[0][7] > 0.0);
        assert_eq!(d.eta[0][8], 0.0);
        assert_eq!(d.inner[0], [9, 31]);
        // z: free at the top, absorbing at the bottom.
        assert_eq!(d.inner[2][0], 4);
        assert!(d.eta[2][..8].iter().all(|v| *v == 0.0));
        assert!(d.layer_row(15, 25) && !d.layer_row(15, 15));
        assert_eq!(k.faces[2], [Face::Free, Face::Absorbing]);
    }
}
