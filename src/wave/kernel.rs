//! [`WaveKernel`]: the acoustic wave equation's discretisation — space order, spacing, time
//! step and what each face of the grid does — and the stability limit it implies.

use serde::{Deserialize, Serialize};

use crate::{DType, Error, Result};

/// Largest star radius of the wave kernel (space order 8).
pub const MAX_WAVE_RADIUS: usize = 4;

/// Default width of the absorbing layer, in cells.
pub const DEFAULT_PML_WIDTH: usize = 20;

/// Fewest damped cells an absorbing layer has beyond the boundary layer: narrower layers jump
/// from no damping to full damping within a few cells, and the layer update grows without
/// bound where such layers meet (order 2 with two damped cells grew tenfold in 600 steps).
pub const MIN_DAMPED_CELLS: usize = 4;

/// What one face of the grid does to waves reaching it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Face {
    /// A perfectly matched layer of the kernel's width absorbs outgoing waves.
    Absorbing,
    /// A free surface: the pressure is zero in the boundary layer outside the updated cells
    /// (the `R` cells next to the face), so the surface lies at the last of them, `(R − 1)·h`
    /// from the face, and waves reflect from it with inverted polarity, as at the sea surface.
    /// Exactly there for order 2; for orders 4, 6 and 8 the wider stencil reaching into the
    /// zeros acts as a surface about 0.07, 0.09 and 0.10 cells further out, and the
    /// reflection's amplitude is then within about 3% of the exact one at 10 cells per
    /// wavelength (see `docs/wave.md`). The engines keep their temporal blocking.
    Free,
    /// A rigid wall: the pressure's normal derivative is zero. Before every step the boundary
    /// layer takes the mirror image of the `R` cells inside it (`u[R − 1 − k] = u[R + k]`), so
    /// the wall lies half a cell beyond the last updated cell, `(R − ½)·h` from the face, and
    /// waves reflect from it with their polarity kept. The engines then run one step per pass.
    Rigid,
}

impl Face {
    /// Machine-readable name.
    pub fn name(self) -> &'static str {
        match self {
            Face::Absorbing => "pml",
            Face::Free => "free",
            Face::Rigid => "rigid",
        }
    }
}

/// The discretised acoustic wave equation with constant density:
/// `u^{n+1} = 2u^n − u^{n−1} + (v·dt)²·∇²u^n + dt²·s^n`, central differences of order
/// `order` in space, second order in time, and a PML (Komatitsch & Tromp's second-order form
/// as in Minimod: damping `η` along each absorbing axis and one auxiliary field `φ` updated
/// with a 7-point stencil of `u` inside the layer) on the absorbing faces.
///
/// The cells `0 .. R` and `n − R .. n` of each axis (`R = order / 2`) form a boundary layer
/// of zeros the engines never update (a rigid face's layer holds its mirror during a run and
/// is zero again after it); the absorbing layer's `pml` cells include it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct WaveKernel {
    /// Space order: 2, 4, 6 or 8 (star radius `order / 2`).
    pub order: usize,
    /// Cell sizes along x, y and z, metres.
    pub spacing: [f64; 3],
    /// Time step, seconds.
    pub dt: f64,
    /// Width of the absorbing layers in cells (boundary layer included).
    pub pml: usize,
    /// The faces, as `[[x low, x high], [y low, y high], [z low, z high]]`.
    pub faces: [[Face; 2]; 3],
    /// Largest velocity of the model, m/s: sets the layer's damping and the stability limit.
    pub v_max: f64,
}

impl WaveKernel {
    /// Order 8, equal spacing `h`, time step `dt`, absorbing faces of the default width, for
    /// a model whose largest velocity is `v_max`.
    pub fn new(h: f64, dt: f64, v_max: f64) -> WaveKernel {
        WaveKernel {
            order: 8,
            spacing: [h; 3],
            dt,
            pml: DEFAULT_PML_WIDTH,
            faces: [[Face::Absorbing; 2]; 3],
            v_max,
        }
    }

    /// The same kernel with space order `order`.
    pub fn with_order(mut self, order: usize) -> WaveKernel {
        self.order = order;
        self
    }

    /// The same kernel with absorbing layers `cells` wide.
    pub fn with_pml(mut self, cells: usize) -> WaveKernel {
        self.pml = cells;
        self
    }

    /// The same kernel with a free surface at the top (the low z face), as in marine and land
    /// seismic surveys where z is depth.
    pub fn with_free_surface(mut self) -> WaveKernel {
        self.faces[2][0] = Face::Free;
        self
    }

    /// The same kernel with face `side` (0 low, 1 high) of `axis` (0 x, 1 y, 2 z) set to
    /// `face`.
    ///
    /// # Panics
    /// If `axis` is not 0, 1 or 2 or `side` not 0 or 1, like indexing the faces.
    pub fn with_face(mut self, axis: usize, side: usize, face: Face) -> WaveKernel {
        assert!(
            axis < 3 && side < 2,
            "face {side} of axis {axis}: axes are 0 to 2, sides 0 (low) and 1 (high)"
        );
        self.faces[axis][side] = face;
        self
    }

    /// Whether any face is rigid (its boundary layer mirrored before every step, so the
    /// engines run one step per pass).
    pub fn has_rigid_faces(&self) -> bool {
        self.faces.iter().flatten().any(|f| *f == Face::Rigid)
    }

    /// The star radius, `order / 2`.
    pub fn radius(&self) -> usize {
        self.order / 2
    }

    /// The central second-derivative weights `w_0 ..= w_R` of the kernel's order (unit
    /// spacing): `f'' ≈ w_0·f_0 + Σ w_k·(f_k + f_−k)`.
    pub fn weights(&self) -> &'static [f64] {
        match self.order {
            2 => &[-2.0, 1.0],
            4 => &[-5.0 / 2.0, 4.0 / 3.0, -1.0 / 12.0],
            6 => &[-49.0 / 18.0, 3.0 / 2.0, -3.0 / 20.0, 1.0 / 90.0],
            _ => &[
                -205.0 / 72.0,
                8.0 / 5.0,
                -1.0 / 5.0,
                8.0 / 315.0,
                -1.0 / 560.0,
            ],
        }
    }

    /// Largest stable time step for velocities up to `v_max`: leapfrog is stable while
    /// `(v·dt)² · Σ_axes S / h_a² ≤ 4`, where `S = |w_0 + 2·Σ (−1)^k w_k|` is the largest
    /// magnitude of the second-difference operator's symbol (at the Nyquist wavenumber).
    pub fn max_stable_dt(&self, v_max: f64) -> f64 {
        let w = self.weights();
        let nyquist: f64 = w[0]
            + w[1..]
                .iter()
                .enumerate()
                .map(|(i, &c)| if i % 2 == 0 { -2.0 * c } else { 2.0 * c })
                .sum::<f64>();
        let s: f64 = self.spacing.iter().map(|h| nyquist.abs() / (h * h)).sum();
        2.0 / (v_max * s.sqrt())
    }

    /// Whether the face `side` (0 low, 1 high) of `axis` absorbs.
    pub fn absorbs(&self, axis: usize, side: usize) -> bool {
        self.faces[axis][side] == Face::Absorbing
    }

    /// Checks the definition: order, spacing, time step against the stability limit.
    pub fn validate(&self) -> Result<()> {
        if ![2, 4, 6, 8].contains(&self.order) {
            return Err(Error::UnsupportedStencil(format!(
                "wave equation space order {} is not supported: use 2, 4, 6 or 8",
                self.order
            )));
        }
        if self.spacing.iter().any(|h| !(h.is_finite() && *h > 0.0)) {
            return Err(Error::InvalidArgument(format!(
                "grid spacing must be positive and finite, got {:?}",
                self.spacing
            )));
        }
        // The update's weights `w/h²` are formed in the field's precision, `f32` at least:
        // beyond its normal range they would round to zero or overflow, and a run would
        // compute silent zeros or infinities.
        if let Some(h) = self
            .spacing
            .iter()
            .find(|&&h| !(single(h * h) && single(1.0 / (h * h))))
        {
            return Err(Error::InvalidArgument(format!(
                "grid spacing {h} m is outside the range whose 1/h² single precision holds \
                 (about 1.1e-19 to 1.8e19 m): give the spacing in other units"
            )));
        }
        let inverse: f64 = self.spacing.iter().map(|h| 1.0 / (h * h)).sum();
        let centre = self.weights()[0].abs() * inverse;
        if !single(centre) {
            return Err(Error::InvalidArgument(format!(
                "the update's centre weight on spacing {:?} m is {centre:e} /m², which single \
                 precision cannot hold: give the spacing in other units",
                self.spacing
            )));
        }
        if !(self.v_max.is_finite() && self.v_max > 0.0) {
            return Err(Error::InvalidArgument(format!(
                "the largest velocity must be positive and finite, got {}",
                self.v_max
            )));
        }
        if !(self.dt.is_finite() && self.dt > 0.0) {
            return Err(Error::InvalidArgument(format!(
                "the time step must be positive and finite, got {}",
                self.dt
            )));
        }
        self.check_step_scales(self.v_max)?;
        let limit = self.max_stable_dt(self.v_max);
        if !(limit > 0.0 && single(limit)) {
            return Err(Error::InvalidArgument(format!(
                "the stability limit at {} m/s on spacing {:?} m is {limit:e} s, which single \
                 precision cannot hold: give the velocity and spacing in other units",
                self.v_max, self.spacing
            )));
        }
        if self.dt > limit {
            return Err(Error::Unstable(format!(
                "time step {:.4e} s exceeds the stability limit of order {} at {} m/s on spacing \
                 {:?} m: use dt <= {limit:.4e} s",
                self.dt, self.order, self.v_max, self.spacing
            )));
        }
        Ok(())
    }

    /// Checks that the factors a step forms from the time step, `(v·dt)²` at velocity `v` and a
    /// source's `dt²/(hx·hy·hz)`, lie in single precision's normal range: below it they
    /// would round to zero, and a run would compute a silent zero field.
    pub(crate) fn check_step_scales(&self, v: f64) -> Result<()> {
        let [hx, hy, hz] = self.spacing;
        let dt2 = self.dt * self.dt;
        for (what, value) in [
            (format!("(v·dt)² at {v} m/s"), (v * self.dt).powi(2)),
            (
                "a source's dt²/(hx·hy·hz)".to_string(),
                dt2 / (hx * hy * hz),
            ),
        ] {
            if !single(value) {
                return Err(Error::InvalidArgument(format!(
                    "time step {:e} s: {what} is {value:e}, which single precision cannot \
                     hold: give the time, velocity and spacing in other units",
                    self.dt
                )));
            }
        }
        Ok(())
    }

    /// The side of the smallest cube this kernel runs on: its boundary layers, absorbing
    /// layers and rigid faces all fit ([`WaveKernel::validate_dims`]). Where no size fits (an
    /// absorbing layer narrower than its damped cells), the smallest the boundary layers allow.
    pub fn smallest_side(&self) -> usize {
        let r = self.radius();
        let has = |face: Face| self.faces.iter().flatten().any(|&f| f == face);
        let mut side = 2 * r + 1;
        if has(Face::Absorbing) && self.pml < r + MIN_DAMPED_CELLS {
            return side;
        }
        if has(Face::Rigid) {
            side = side.max(3 * r);
        }
        // Each layer at most half its axis, and at least its damped cells wide; in closed form
        // rather than by trying sizes, so that a huge width is answered at once.
        if has(Face::Absorbing) {
            side = side.max(self.pml.saturating_mul(2));
        }
        side
    }

    /// Checks the kernel against grid dimensions: room for the boundary layer, absorbing
    /// layers at most half of each axis, and `R` updated cells to mirror at a rigid face.
    pub fn validate_dims(&self, dims: [usize; 3]) -> Result<()> {
        let r = self.radius();
        if dims.iter().any(|&n| n < 2 * r + 1) {
            return Err(Error::GridTooSmall { dims, radius: r });
        }
        // An axis too short for the narrowest layer is named first, whatever width was asked.
        let narrowest = r + MIN_DAMPED_CELLS;
        for (axis, &n) in dims.iter().enumerate() {
            let layers = self.faces[axis].contains(&Face::Absorbing);
            if layers && narrowest > n / 2 {
                return Err(Error::InvalidArgument(format!(
                    "axis {} of {n} cells is too short for absorbing layers at order {}: a layer \
                     takes at least {narrowest} cells ({MIN_DAMPED_CELLS} damped beyond the \
                     {r}-cell boundary layer), and at most half the axis; use at least {} cells, \
                     or free or rigid faces on that axis",
                    ["x", "y", "z"][axis],
                    self.order,
                    2 * narrowest
                )));
            }
        }
        for (axis, &n) in dims.iter().enumerate() {
            if self.faces[axis].contains(&Face::Rigid) && n < 3 * r {
                return Err(Error::InvalidArgument(format!(
                    "a rigid face mirrors the {r} cells inside its boundary layer: axis {} of {n} \
                     cells has {} updated cells, use at least {}",
                    ["x", "y", "z"][axis],
                    n - 2 * r,
                    3 * r
                )));
            }
            let layers = self.faces[axis]
                .iter()
                .filter(|f| **f == Face::Absorbing)
                .count();
            if layers > 0 && self.pml < narrowest {
                return Err(Error::InvalidArgument(format!(
                    "an absorbing layer of {} cells leaves fewer than {MIN_DAMPED_CELLS} damped \
                     cells beyond the {r}-cell boundary layer of order {}: use a width of at \
                     least {}",
                    self.pml, self.order, narrowest
                )));
            }
            if layers > 0 && self.pml > n / 2 {
                return Err(Error::InvalidArgument(format!(
                    "absorbing layers of {} cells are wider than half the {} cells of axis {}: \
                     use at most {} or a larger grid",
                    self.pml,
                    n,
                    ["x", "y", "z"][axis],
                    n / 2
                )));
            }
        }
        Ok(())
    }

    /// Machine-readable name, `wave:8`.
    pub fn kind_name(&self) -> String {
        format!("wave:{}", self.order)
    }

    /// Floating-point operations per update of an inner cell: per axis and distance one add
    /// of the pair and one multiply-add (3 flops), the centre's multiply, the two adds of the
    /// per-axis sums, and `2u − u⁻ + c·lap` (an add, a subtract and a multiply-add).
    pub fn flops_per_update(&self) -> usize {
        9 * self.radius() + 7
    }

    /// Bytes a one-step sweep moves per inner cell when the planes of `u` stay in cache: `u`,
    /// `u⁻` and `c = (v·dt)²` read, the new `u` written (with its write-allocate read).
    pub fn min_bytes_per_update(&self, dtype: DType) -> usize {
        5 * dtype.size()
    }
}

impl std::fmt::Display for WaveKernel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let faces: Vec<&str> = self.faces.iter().flatten().map(|f| f.name()).collect();
        write!(
            f,
            "acoustic wave equation, space order {}, h = {:?} m, dt = {:.3e} s, v_max = {} m/s, \
             PML {} cells, faces {}",
            self.order,
            self.spacing,
            self.dt,
            self.v_max,
            self.pml,
            faces.join("/")
        )
    }
}

/// Whether `v` lies in single precision's normal range, as the factors the engines form in the
/// field's precision (`f32` at least) must: beyond it they round to zero or overflow.
fn single(v: f64) -> bool {
    (f64::from(f32::MIN_POSITIVE)..=f64::from(f32::MAX)).contains(&v)
}
#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_smallest_side_is_the_first_cube_the_kernel_takes() {
        let k = WaveKernel::new(10.0, 1e-3, 2000.0);
        let mut rigid = k.clone().with_order(4).with_pml(0);
        for axis in 0..3 {
            for side in 0..2 {
                rigid = rigid.with_face(axis, side, Face::Rigid);
            }
        }
        let kernels = [
            (k.clone(), 40),
            (k.clone().with_pml(31), 62),
            (k.clone().with_order(2).with_pml(5), 10),
            (k.clone().with_free_surface(), 40),
            (rigid, 6),
        ];
        for (k, side) in kernels {
            assert_eq!(k.smallest_side(), side, "{k:?}");
            assert!(k.validate_dims([side; 3]).is_ok());
            assert!(k.validate_dims([side - 1; 3]).is_err());
        }
        // A layer narrower than its damped cells fits no grid: the boundary layers' minimum.
        assert_eq!(k.clone().with_pml(3).smallest_side(), 9);
        // The closed form is the first cube validate_dims takes, for every order, width and
        // mix of faces; a width past any grid is answered at once.
        for order in [2, 4, 6, 8] {
            for pml in [0, 3, 5, 8, 9, 13, 20] {
                for faces in 0..27usize {
                    let mut k = k.clone().with_order(order).with_pml(pml);
                    for axis in 0..3 {
                        let digit = faces / 3usize.pow(axis as u32) % 3;
                        let face = [Face::Absorbing, Face::Free, Face::Rigid][digit];
                        k = k.with_face(axis, 0, face).with_face(axis, 1, face);
                    }
                    let first =
                        (2 * k.radius() + 1..200).find(|&n| k.validate_dims([n; 3]).is_ok());
                    let side = k.smallest_side();
                    assert_eq!(first.unwrap_or(2 * k.radius() + 1), side, "{k:?}");
                }
            }
        }
        assert_eq!(k.with_pml(usize::MAX / 2 + 7).smallest_side(), usize::MAX);
    }

    #[test]
    fn the_stability_limit_is_the_classic_one_for_order_two() {
        let k = WaveKernel::new(10.0, 1e-3, 2000.0).with_order(2);
        let expect = 10.0 / (2000.0 * 3f64.sqrt());
        assert!((k.max_stable_dt(2000.0) - expect).abs() < 1e-12 * expect);
        // Higher orders are stricter: the symbol's Nyquist magnitude grows with the order.
        let k8 = WaveKernel::new(10.0, 1e-3, 2000.0);
        assert!(k8.max_stable_dt(2000.0) < k.max_stable_dt(2000.0));
    }

    #[test]
    fn weights_sum_to_zero_and_match_a_parabola() {
        for order in [2, 4, 6, 8] {
            let k = WaveKernel::new(1.0, 1e-4, 1.0).with_order(order);
            let w = k.weights();
            let sum: f64 = w[0] + 2.0 * w[1..].iter().sum::<f64>();
            assert!(sum.abs() < 1e-12, "order {order}");
            // f = x² has f'' = 2 exactly for every order.
            let second: f64 = w[1..]
                .iter()
                .enumerate()
                .map(|(i, c)| c * 2.0 * ((i + 1) as f64).powi(2))
                .sum();
            assert!((second - 2.0).abs() < 1e-12, "order {order}: {second}");
        }
    }

    #[test]
    fn unstable_steps_name_the_limit() {
        let k = WaveKernel::new(10.0, 1e-2, 3000.0);
        let e = k.validate().unwrap_err().to_string();
        assert!(e.contains("dt <="), "{e}");
        assert!(WaveKernel::new(10.0, 1e-3, 3000.0).validate().is_ok());
    }

    #[test]
    fn layers_wider_than_half_the_grid_are_refused() {
        let k = WaveKernel::new(10.0, 1e-3, 3000.0).with_pml(20);
        assert!(k.validate_dims([40, 40, 40]).is_ok());
        assert!(k.validate_dims([39, 40, 40]).is_err());
        assert!(k.clone().with_pml(7).validate_dims([40, 40, 40]).is_err());
        assert!(k.clone().with_pml(8).validate_dims([40, 40, 40]).is_ok());
    }
}
