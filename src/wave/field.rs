//! [`Wavefield`]: the state a wave plan advances — two time levels of the pressure, the
//! model's coefficient `(v·dt)²`, the absorbing layers' auxiliary field — with its sources,
//! receivers and recorded traces.

use super::points::{taps, Tap};
use super::profile::Damping;
use super::{Receiver, Source, WaveKernel};
use crate::memory::Footprint;
use crate::{DType, Error, Grid, Real, Result};

impl Footprint {
    /// A wavefield's own arrays, grids of `dtype`: `u`, `u⁻`, `(v·dt)²` and `φ`.
    pub fn wavefield(dtype: DType) -> Footprint {
        Footprint::grids(dtype, 4)
    }

    /// A run of a CPU wave engine: the wavefield, its engine's three scratch grids and
    /// `ring_bytes` of rings.
    pub fn wave_cpu_run(dtype: DType, ring_bytes: u64) -> Footprint {
        Footprint::grids(dtype, 7).plus(ring_bytes)
    }
}

/// The wavefield of one shot: `u^n` and `u^{n−1}` on a grid, the velocity model as
/// `(v·dt)²` per cell, the PML's auxiliary field, the sources injected and the receivers
/// recorded at every step.
///
/// ```
/// use stencil35d::wave::{Receiver, Source, WaveKernel, Wavefield, Wavelet};
/// use stencil35d::{Grid, Plan, Solver};
/// let velocity = Grid::<f32>::from_fn([48, 48, 48], |_, _, _| 2000.0).unwrap();
/// let kernel = WaveKernel::new(10.0, 1e-3, 2000.0).with_pml(10);
/// let mut field = Wavefield::new(kernel, &velocity).unwrap();
/// field.add_source(Source { position: [240.0; 3], wavelet: Wavelet::ricker(15.0) }).unwrap();
/// field.add_receivers(&[Receiver::at([300.0, 240.0, 240.0])]).unwrap();
/// let plan = Plan::for_wavefield(&field).unwrap();
/// Solver::new(plan).run(&mut field, 50).unwrap();
/// assert_eq!(field.traces()[0].len(), 51); // t = 0 and one sample per step
/// ```
#[derive(Clone, Debug)]
pub struct Wavefield<T: Real> {
    kernel: WaveKernel,
    pub(crate) u: Grid<T>,
    pub(crate) prev: Grid<T>,
    pub(crate) coef: Grid<T>,
    pub(crate) phi: Grid<T>,
    pub(crate) damping: Damping<T>,
    sources: Vec<Source>,
    pub(crate) injections: Vec<Tap>,
    receivers: Vec<Receiver>,
    pub(crate) probes: Vec<Tap>,
    pub(crate) traces: Vec<Vec<f64>>,
    pub(crate) step: usize,
}

impl<T: Real> Wavefield<T> {
    /// A wavefield at rest on the model `velocity` (m/s per cell). The kernel's `v_max` is
    /// set to the model's largest velocity; the kernel, the model and the grid are checked
    /// (stability, absorbing-layer width, positive finite velocities) before anything large
    /// is allocated.
    pub fn new(mut kernel: WaveKernel, velocity: &Grid<T>) -> Result<Wavefield<T>> {
        let dims = velocity.dims();
        let (v_min, v_max) = velocity_range(velocity)?;
        kernel.v_max = v_max;
        kernel.validate()?;
        kernel.check_step_scales(v_min)?;
        kernel.validate_dims(dims)?;
        Footprint::wavefield(T::DTYPE).check_allocation(dims)?;
        let dt2 = kernel.dt * kernel.dt;
        let coef = Grid::par_from_fn(dims, |x, y, z| {
            let v = velocity.get(x, y, z).to_f64().unwrap_or(0.0);
            T::of(v * v * dt2)
        })?;
        let speed = layer_velocities(&kernel, velocity);
        Ok(Wavefield {
            damping: Damping::for_velocities(&kernel, dims, speed),
            kernel,
            u: Grid::unchecked(dims)?,
            prev: Grid::unchecked(dims)?,
            phi: Grid::unchecked(dims)?,
            coef,
            sources: Vec::new(),
            injections: Vec::new(),
            receivers: Vec::new(),
            probes: Vec::new(),
            traces: Vec::new(),
            step: 0,
        })
    }

    /// Sets the initial condition: `u^0 = u`, `u^{−1} = previous` (equal grids start at rest
    /// in time). Errors, leaving the field as it was: another size, non-finite values, or a
    /// non-zero value in the boundary layer (the cells within R of a face hold zeros), or a
    /// field that has already run.
    pub fn set_state(&mut self, u: &Grid<T>, previous: &Grid<T>) -> Result<()> {
        if self.step > 0 {
            return Err(Error::InvalidArgument(
                "the initial condition is set before the first step".into(),
            ));
        }
        let r = self.kernel.radius();
        let dims = self.dims();
        for (name, g) in [("u", u), ("previous", previous)] {
            if g.dims() != dims {
                return Err(Error::PlanMismatch(format!(
                    "the initial {name} is {:?}, the wavefield {dims:?}",
                    g.dims()
                )));
            }
            if let Some((cell, value)) = g.find_non_finite() {
                return Err(Error::NonFiniteInput { cell, value });
            }
            if let Some((c, v)) = first_nonzero_in_layer(g, r) {
                return Err(Error::InvalidArgument(format!(
                    "the initial {name} holds {} at cell {c:?}, in the {r}-cell boundary layer, \
                     which stays zero",
                    v.to_f64().unwrap_or(f64::NAN)
                )));
            }
        }
        // In place when the layouts agree (grids of one size share theirs): no third grid.
        for (mine, given) in [(&mut self.u, u), (&mut self.prev, previous)] {
            if mine.storage().len() == given.storage().len() && mine.pitch() == given.pitch() {
                mine.storage_mut().copy_from_slice(given.storage());
            } else {
                *mine = given.clone();
            }
        }
        let samples = self.samples();
        for (trace, s) in self.traces.iter_mut().zip(samples) {
            *trace = vec![s];
        }
        Ok(())
    }

    /// The receivers' current samples.
    fn samples(&self) -> Vec<f64> {
        let mut s = vec![0.0; self.receivers.len()];
        sample_into(&self.u, &self.probes, &mut s);
        s
    }

    /// Adds a point source. Errors: a source outside the updated cells, a bad wavelet.
    pub fn add_source(&mut self, source: Source) -> Result<()> {
        source.wavelet.validate()?;
        let k = &self.kernel;
        let [hx, hy, hz] = k.spacing;
        // A point source is a delta function: its cell value is the source over the cell's
        // volume, and the update adds dt² times it.
        let scale = k.dt * k.dt / (hx * hy * hz);
        let index = self.sources.len();
        let new = taps(
            index,
            "source",
            source.position,
            k.spacing,
            self.dims(),
            k.radius(),
            scale,
        )?;
        self.injections.extend(new);
        self.sources.push(source);
        Ok(())
    }

    /// Adds receivers; their traces start with the current field. Errors: a receiver outside
    /// the updated cells (none is added then), or receivers added after the first step.
    pub fn add_receivers(&mut self, receivers: &[Receiver]) -> Result<()> {
        if self.step > 0 {
            return Err(Error::InvalidArgument(
                "receivers must be added before the first step, so every trace has every sample"
                    .into(),
            ));
        }
        let k = &self.kernel;
        let mut new = Vec::new();
        for (i, rec) in receivers.iter().enumerate() {
            let index = self.receivers.len() + i;
            let dims = self.dims();
            new.extend(taps(
                index,
                "receiver",
                rec.position,
                k.spacing,
                dims,
                k.radius(),
                1.0,
            )?);
        }
        self.probes.extend(new);
        self.receivers.extend_from_slice(receivers);
        let samples = self.samples();
        for s in &samples[self.traces.len()..] {
            self.traces.push(vec![*s]);
        }
        Ok(())
    }

    /// The kernel (with `v_max` set from the model).
    pub fn kernel(&self) -> &WaveKernel {
        &self.kernel
    }

    /// Grid dimensions.
    pub fn dims(&self) -> [usize; 3] {
        self.u.dims()
    }

    /// The pressure `u^n` at the current step.
    pub fn pressure(&self) -> &Grid<T> {
        &self.u
    }

    /// The pressure one step earlier, `u^{n−1}`.
    pub fn previous(&self) -> &Grid<T> {
        &self.prev
    }

    /// The absorbing layers' auxiliary field (zero outside the layers).
    pub fn auxiliary(&self) -> &Grid<T> {
        &self.phi
    }

    /// Steps run so far.
    pub fn step(&self) -> usize {
        self.step
    }

    /// Simulated time, seconds.
    pub fn time(&self) -> f64 {
        self.step as f64 * self.kernel.dt
    }

    /// The sources.
    pub fn sources(&self) -> &[Source] {
        &self.sources
    }

    /// The receivers.
    pub fn receivers(&self) -> &[Receiver] {
        &self.receivers
    }

    /// One trace per receiver: the pressure at `t = 0, dt, 2·dt, …`, one sample per step.
    pub fn traces(&self) -> &[Vec<f64>] {
        &self.traces
    }

    /// The first cell whose `u^n`, `u^{n−1}` or auxiliary value is not finite.
    pub(crate) fn find_non_finite(&self) -> Option<([usize; 3], f64)> {
        let [_, ny, nz] = self.dims();
        self.find_non_finite_in([0..ny, 0..nz])
    }

    /// [`Wavefield::find_non_finite`] among the rows `ys` of the planes `zs` (a split run's
    /// owned cells, whose halos the exchange refreshes).
    pub(crate) fn find_non_finite_in(
        &self,
        region: [std::ops::Range<usize>; 2],
    ) -> Option<([usize; 3], f64)> {
        [&self.u, &self.prev, &self.phi]
            .into_iter()
            .find_map(|g| g.find_non_finite_in(region.clone()))
    }

    /// A wavefield from its parts: `grids` are `[u, previous, coefficient, auxiliary]`.
    #[cfg(feature = "mpi")]
    pub(crate) fn from_parts(
        shared: &super::parts::Shared,
        grids: Vec<Grid<T>>,
        damping: Damping<T>,
        injections: Vec<Tap>,
        probes: Vec<Tap>,
        traces: Vec<Vec<f64>>,
    ) -> Wavefield<T> {
        let [u, prev, coef, phi]: [Grid<T>; 4] = grids.try_into().expect("four grids");
        Wavefield {
            kernel: shared.kernel.clone(),
            u,
            prev,
            coef,
            phi,
            damping,
            sources: shared.sources.clone(),
            injections,
            receivers: shared.receivers.clone(),
            probes,
            traces,
            step: shared.step,
        }
    }

    /// The value added to the cell of `tap` in the update from step `n`.
    pub(crate) fn injected(&self, tap: &Tap, n: usize) -> T {
        T::of(tap.weight * self.sources[tap.point].wavelet.at(n, self.kernel.dt))
    }
}

/// The mean velocity in each face's absorbing layer (`[axis][low, high]`). Planes are summed
/// in parallel and their sums added in plane order, so the means do not depend on the
/// thread count.
fn layer_velocities<T: Real>(kernel: &WaveKernel, velocity: &Grid<T>) -> [[f64; 2]; 3] {
    use rayon::prelude::*;
    let [nx, ny, nz] = velocity.dims();
    let w = kernel.pml;
    let wx = w.min(nx);
    let sum = |cells: &[T]| cells.iter().map(|v| v.to_f64().unwrap_or(0.0)).sum::<f64>();
    let planes: Vec<[[f64; 2]; 3]> = (0..nz)
        .into_par_iter()
        .map(|z| {
            let mut s = [[0.0f64; 2]; 3];
            for y in 0..ny {
                let row = velocity.row(y, z);
                let whole = sum(row);
                s[0][0] += sum(&row[..wx]);
                s[0][1] += sum(&row[nx - wx..]);
                s[1][0] += if y < w { whole } else { 0.0 };
                s[1][1] += if w >= ny - y { whole } else { 0.0 };
                s[2][0] += if z < w { whole } else { 0.0 };
                s[2][1] += if w >= nz - z { whole } else { 0.0 };
            }
            s
        })
        .collect();
    let mut total = [[0.0f64; 2]; 3];
    for p in &planes {
        for (t, s) in total.iter_mut().flatten().zip(p.iter().flatten()) {
            *t += s;
        }
    }
    let cells_per = [nx, ny, nz].map(|n| w.min(n));
    let count = |a: usize| cells_per[a] * [nx, ny, nz].iter().product::<usize>() / [nx, ny, nz][a];
    std::array::from_fn(|a| {
        std::array::from_fn(|s| match count(a) {
            0 => kernel.v_max,
            n => total[a][s] / n as f64,
        })
    })
}

/// Adds each probe's weighted value of `u` to its receiver's sample (probes in order).
pub(crate) fn sample_into<T: Real>(u: &Grid<T>, probes: &[Tap], samples: &mut [f64]) {
    for p in probes {
        let [x, y, z] = p.cell;
        samples[p.point] += p.weight * u.get(x, y, z).to_f64().unwrap_or(f64::NAN);
    }
}

/// The smallest and largest velocities of `velocity`, or an error naming the first cell
/// (x-fastest order) whose velocity is not positive and finite. Planes are read in parallel.
fn velocity_range<T: Real>(velocity: &Grid<T>) -> Result<(f64, f64)> {
    use rayon::prelude::*;
    let [_, ny, nz] = velocity.dims();
    type Plane = std::result::Result<(f64, f64), ([usize; 3], f64)>;
    let planes: Vec<Plane> = (0..nz)
        .into_par_iter()
        .map(|z| {
            let (mut v_min, mut v_max) = (f64::INFINITY, 0.0f64);
            for y in 0..ny {
                for (x, v) in velocity.row(y, z).iter().enumerate() {
                    let v = v.to_f64().unwrap_or(f64::NAN);
                    if !(v.is_finite() && v > 0.0) {
                        return Err(([x, y, z], v));
                    }
                    (v_min, v_max) = (v_min.min(v), v_max.max(v));
                }
            }
            Ok((v_min, v_max))
        })
        .collect();
    planes
        .into_iter()
        .try_fold((f64::INFINITY, 0.0f64), |(lo, hi), plane| match plane {
            Ok((v_min, v_max)) => Ok((lo.min(v_min), hi.max(v_max))),
            Err(([x, y, z], v)) => Err(Error::InvalidArgument(format!(
            "the velocity at cell ({x}, {y}, {z}) is {v}: velocities must be positive and finite"
        ))),
        })
}

/// The first cell (x-fastest order) within `r` cells of a face whose value is not zero, with
/// its value. Reads the boundary layer's cells only; `g` is at least `2r + 1` cells on each
/// axis.
fn first_nonzero_in_layer<T: Real>(g: &Grid<T>, r: usize) -> Option<([usize; 3], T)> {
    let [nx, ny, nz] = g.dims();
    for z in 0..nz {
        let whole_plane = z < r || z >= nz - r;
        for y in 0..ny {
            let row = g.row(y, z);
            let nonzero = |x: &usize| row[*x] != T::zero();
            let x = if whole_plane || y < r || y >= ny - r {
                (0..nx).find(nonzero)
            } else {
                (0..r).chain(nx - r..nx).find(nonzero)
            };
            if let Some(x) = x {
                return Some(([x, y, z], row[x]));
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The scan of the boundary layer finds what a scan of every cell finds: the first
    /// non-zero cell within `r` of a face, in x-fastest order, whatever lies inside.
    #[test]
    fn the_boundary_layer_scan_finds_the_first_nonzero_layer_cell() {
        let (dims, r) = ([12, 11, 10], 3);
        let layer = |c: [usize; 3]| (0..3).any(|a| c[a] < r || c[a] >= dims[a] - r);
        let every_cell = |g: &Grid<f64>| g.iter().find(|&(c, v)| layer(c) && v != 0.0);
        for seed in 0..40u64 {
            let mut g = Grid::<f64>::new(dims).unwrap();
            g.set(6, 5, 5, 9.0); // inside: never reported
            for k in 0..3 {
                let c = [0, 1, 2]
                    .map(|a| { crate::random::unit(seed, a as u64, k) * dims[a] as f64 } as usize);
                g.set(c[0], c[1], c[2], 1.0 + k as f64);
            }
            assert_eq!(first_nonzero_in_layer(&g, r), every_cell(&g), "seed {seed}");
        }
        let mut g = Grid::<f64>::new(dims).unwrap();
        g.set(6, 5, 5, 9.0);
        assert_eq!(first_nonzero_in_layer(&g, r), None);
        g.set(11, 5, 5, 2.0);
        g.set(0, 6, 5, 3.0);
        assert_eq!(first_nonzero_in_layer(&g, r), Some(([11, 5, 5], 2.0)));
    }

    /// The layers' mean velocities equal the means over their cells taken one by one, and
    /// the first bad velocity in x-fastest order is the one named.
    #[test]
    fn layer_means_and_the_velocity_check_read_every_cell() {
        let dims = [23, 19, 17];
        let v = Grid::<f64>::random(dims, 1500.0, 4500.0, 3).unwrap();
        let kernel = WaveKernel::new(10.0, 1e-3, 4500.0).with_pml(8);
        let means = layer_velocities(&kernel, &v);
        for (a, axis) in means.iter().enumerate() {
            for (side, &got) in axis.iter().enumerate() {
                let in_layer = |c: [usize; 3]| {
                    if side == 0 {
                        c[a] < 8
                    } else {
                        c[a] + 8 >= dims[a]
                    }
                };
                let cells: Vec<f64> = v
                    .iter()
                    .filter(|(c, _)| in_layer(*c))
                    .map(|(_, v)| v)
                    .collect();
                let mean = cells.iter().sum::<f64>() / cells.len() as f64;
                assert!((got - mean).abs() < 1e-9 * mean, "axis {a} side {side}");
            }
        }
        assert_eq!(
            velocity_range(&v).unwrap(),
            (
                v.iter().map(|c| c.1).fold(f64::INFINITY, f64::min),
                v.iter().map(|c| c.1).fold(0.0, f64::max)
            )
        );
        let mut bad = v.clone();
        bad.set(4, 2, 9, -1.0);
        bad.set(2, 7, 9, f64::NAN);
        bad.set(1, 1, 12, 0.0);
        let e = velocity_range(&bad).unwrap_err().to_string();
        assert!(e.contains("(4, 2, 9)"), "{e}");
    }
}
