//! The problems the benchmarks time: random grids for stencils, a lid-driven cavity (or a
//! periodic box) started from a random near-equilibrium state for the lattice-Boltzmann
//! kernel, and a shot on a layered model for the wave equation.

use crate::lbm::{equilibrium, Axis, Cell, Face, Lattice, Physics, MAGIC_POISEUILLE, WEIGHTS};
use crate::wave::{Source, WaveKernel, Wavefield, Wavelet};
use crate::{Error, Grid, Real, Result};

/// The lattice `bench --kernel d3q19` and `compare` time: a lid-driven cavity (walls on every
/// face, the y = max face moving at 0.1 in x; TRT, τ = 0.6) whose fluid starts from a random
/// state near equilibrium, so every code path of the engines runs on non-trivial values.
///
/// ```
/// use stencil35d::perf::cavity_lattice;
/// use stencil35d::{Plan, Solver};
/// let mut lattice = cavity_lattice::<f32>([10, 9, 8], 1).unwrap();
/// let plan = Plan::for_lattice(&lattice).unwrap();
/// Solver::new(plan).run(&mut lattice, 2).unwrap();
/// ```
///
/// Errors: an axis of fewer than 3 nodes (walls on both faces and no fluid between them).
pub fn cavity_lattice<T: Real>(dims: [usize; 3], seed: u64) -> Result<Lattice<T>> {
    check_cavity_dims(dims)?;
    let mut lat = Lattice::<T>::new(dims, Physics::trt(0.6, MAGIC_POISEUILLE))?;
    for face in Face::ALL {
        lat.set_face(face, Cell::Wall)?;
    }
    lat.set_face(
        Face::YMax,
        Cell::MovingWall {
            velocity: [0.1, 0.0, 0.0],
        },
    )?;
    randomize(&mut lat, 1, seed);
    Ok(lat)
}

/// Checks that a [`cavity_lattice`] of `dims` holds fluid (`plan` checks it too, so that it
/// never plans a cavity `bench` refuses). Errors: an axis of fewer than 3 nodes.
pub fn check_cavity_dims(dims: [usize; 3]) -> Result<()> {
    if dims.iter().any(|&n| n < 3) {
        return Err(Error::InvalidArgument(format!(
            "a walled {}x{}x{} lattice holds no fluid: the cavity needs at least 3 nodes per axis",
            dims[0], dims[1], dims[2]
        )));
    }
    Ok(())
}

/// The lattice `bench --kernel d3q19:periodic` times: every axis periodic and no walls, the
/// box FluidX3D's benchmark times (every node takes the bulk path); TRT, τ = 0.6, from a
/// random state near equilibrium.
///
/// ```
/// use stencil35d::perf::periodic_lattice;
/// let lattice = periodic_lattice::<f32>([8, 6, 5], 1).unwrap();
/// assert!(lattice.periodic().iter().all(|&p| p));
/// ```
pub fn periodic_lattice<T: Real>(dims: [usize; 3], seed: u64) -> Result<Lattice<T>> {
    let mut lat = Lattice::<T>::new(dims, Physics::trt(0.6, MAGIC_POISEUILLE))?;
    for axis in Axis::ALL {
        lat.set_periodic(axis, true);
    }
    randomize(&mut lat, 0, seed);
    Ok(lat)
}

/// Sets every node at least `margin` nodes inside each face to a random state near
/// equilibrium (density 1 ± 0.01, velocity components within ±0.03, populations off it by
/// up to 1% of their weight). Each node's numbers come from its own index and `seed` alone
/// (a counter-based generator), so planes fill in parallel and the lattice is the same
/// whatever the thread count.
fn randomize<T: Real>(lat: &mut Lattice<T>, margin: usize, seed: u64) {
    let dims = lat.dims();
    let [nx, ny, nz] = dims;
    let inside = |i: usize, n: usize| i >= margin && i + margin < n;
    lat.set_populations_with(|x, y, z| {
        if !(inside(x, nx) && inside(y, ny) && inside(z, nz)) {
            return None;
        }
        let mut draw = 0;
        let mut uniform = |lo: f64, hi: f64| {
            draw += 1;
            lo + (hi - lo) * crate::random::unit_at(seed, dims, [x, y, z], draw)
        };
        let u = [0; 3].map(|_| uniform(-0.03, 0.03));
        let feq = equilibrium(1.0 + uniform(-0.01, 0.01), u);
        Some(std::array::from_fn(|i| {
            T::of(feq[i] + WEIGHTS[i] * uniform(-0.01, 0.01))
        }))
    });
}

/// Largest velocity of the benchmark's layered model, m/s.
pub const BENCH_WAVE_V_MAX: f64 = 3500.0;

/// The wave kernel `bench --kernel wave:O` times: space order `order`, 10 m cells, absorbing
/// layers of `pml` cells on every face, and the time step at 90% of the stability limit for
/// the benchmark model's [`BENCH_WAVE_V_MAX`].
pub fn bench_wave_kernel(order: usize, pml: usize) -> WaveKernel {
    let mut k = WaveKernel::new(10.0, 1e-3, BENCH_WAVE_V_MAX)
        .with_order(order)
        .with_pml(pml);
    k.dt = 0.9 * k.max_stable_dt(BENCH_WAVE_V_MAX);
    k
}

/// The shot `bench --kernel wave:O` and `compare` time: [`bench_wave_kernel`] on a layered
/// model (1,500 to 3,500 m/s in five layers down z), a Ricker source of 15 Hz at the centre
/// and a random initial field, so inner and layer cells all carry non-trivial values.
///
/// ```
/// use stencil35d::perf::{bench_wave_kernel, wave_shot};
/// use stencil35d::{Plan, Solver};
/// let mut shot = wave_shot::<f32>(bench_wave_kernel(8, 8), [24, 22, 20], 1).unwrap();
/// let plan = Plan::for_wavefield(&shot).unwrap();
/// Solver::new(plan).run(&mut shot, 2).unwrap();
/// ```
pub fn wave_shot<T: Real>(kernel: WaveKernel, dims: [usize; 3], seed: u64) -> Result<Wavefield<T>> {
    kernel.validate_dims(dims)?;
    let mut layers: Vec<(usize, f64)> = (0..5)
        .map(|i| (i * dims[2] / 5, 1500.0 + 500.0 * i as f64))
        .collect();
    // A grid of fewer than five planes has fewer layers: one per top.
    layers.dedup_by_key(|l| l.0);
    let velocity = crate::wave::models::layered::<T>(dims, &layers)?;
    let mut field = Wavefield::new(kernel, &velocity)?;
    let r = field.kernel().radius();
    let inside = |c: [usize; 3]| (0..3).all(|a| c[a] >= r && c[a] < dims[a] - r);
    let u = Grid::par_from_fn(dims, |x, y, z| {
        T::of(if inside([x, y, z]) {
            2.0 * crate::random::unit_at(seed, dims, [x, y, z], 0) - 1.0
        } else {
            0.0
        })
    })?;
    field.set_state(&u, &u)?;
    let h = field.kernel().spacing;
    field.add_source(Source {
        position: std::array::from_fn(|a| (dims[a] / 2) as f64 * h[a]),
        wavelet: Wavelet::ricker(15.0),
    })?;
    Ok(field)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_random_lattice_is_near_equilibrium_inside_its_margin() {
        let lat = cavity_lattice::<f64>([9, 7, 6], 3).unwrap();
        let rest = equilibrium(1.0, [0.0; 3]);
        assert_eq!(lat.populations(0, 3, 3), rest);
        let (rho, u) = lat.moments(4, 3, 2);
        assert!((rho - 1.0).abs() <= 0.011 && u.iter().all(|c| c.abs() <= 0.031));
        assert_ne!(lat.populations(4, 3, 2), lat.populations(5, 3, 2));
    }

    /// A shot on a grid of fewer planes than the model's five layers takes one layer per
    /// plane, fastest at the bottom.
    #[test]
    fn a_thin_shot_has_fewer_layers() {
        let mut kernel = bench_wave_kernel(2, 5);
        kernel.faces = [[crate::wave::Face::Free; 2]; 3];
        let shot = wave_shot::<f32>(kernel, [9, 8, 4], 1).unwrap();
        let dt = shot.kernel().dt;
        let v = |z| (f64::from(shot.coef.get(4, 4, z)).sqrt() / dt).round();
        assert_eq!([v(0), v(1), v(2), v(3)], [1500.0, 2500.0, 3000.0, 3500.0]);
    }
}
