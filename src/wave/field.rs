//! [`Wavefield`]: the state a wave plan advances — two time levels of the pressure, the
//! model's coefficient `(v·dt)²`, the absorbing layers' auxiliary field — with its sources,
//! receivers and recorded traces.

use super::points::{taps, Tap};
use super::profile::Damping;
use super::{Receiver, Source, WaveKernel};
use crate::{Error, Grid, Real, Result};

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
        let mut v_max = 0.0f64;
        for ([x, y, z], v) in velocity.iter() {
            let v = v.to_f64().unwrap_or(f64::NAN);
            if !(v.is_finite() && v > 0.0) {
                return Err(Error::InvalidArgument(format!(
                    "the velocity at cell ({x}, {y}, {z}) is {v}: velocities must be positive and \
                     finite"
                )));
            }
            v_max = v_max.max(v);
        }
        kernel.v_max = v_max;
        kernel.validate()?;
        kernel.validate_dims(dims)?;
        crate::memory::Footprint::grids(T::DTYPE, 4).check_allocation(dims)?;
        let dt2 = kernel.dt * kernel.dt;
        let mut coef = Grid::<T>::unchecked(dims)?;
        for z in 0..dims[2] {
            for y in 0..dims[1] {
                for (c, v) in coef.row_mut(y, z).iter_mut().zip(velocity.row(y, z)) {
                    let v = v.to_f64().unwrap_or(0.0);
                    *c = T::of(v * v * dt2);
                }
            }
        }
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
            let layer = |c: [usize; 3]| (0..3).any(|a| c[a] < r || c[a] >= dims[a] - r);
            if let Some((c, v)) = g.iter().find(|&(c, v)| layer(c) && v != T::zero()) {
                return Err(Error::InvalidArgument(format!(
                    "the initial {name} holds {} at cell {c:?}, in the {r}-cell boundary layer, \
                     which stays zero",
                    v.to_f64().unwrap_or(f64::NAN)
                )));
            }
        }
        self.u = u.clone();
        self.prev = previous.clone();
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
        [&self.u, &self.prev, &self.phi]
            .into_iter()
            .find_map(|g| g.find_non_finite())
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

/// The mean velocity in each face's absorbing layer (`[axis][low, high]`).
fn layer_velocities<T: Real>(kernel: &WaveKernel, velocity: &Grid<T>) -> [[f64; 2]; 3] {
    let dims = velocity.dims();
    let w = kernel.pml;
    let mut sum = [[0.0f64; 2]; 3];
    let mut count = [[0usize; 2]; 3];
    for (c, v) in velocity.iter() {
        let v = v.to_f64().unwrap_or(0.0);
        for a in 0..3 {
            let side = [c[a] < w, c[a] + w >= dims[a]];
            for s in 0..2 {
                if side[s] {
                    sum[a][s] += v;
                    count[a][s] += 1;
                }
            }
        }
    }
    std::array::from_fn(|a| {
        std::array::from_fn(|s| match count[a][s] {
            0 => kernel.v_max,
            n => sum[a][s] / n as f64,
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
