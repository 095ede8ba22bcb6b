//! The problems the benchmarks time: random grids for stencils, and a lid-driven cavity
//! started from a random near-equilibrium state for the lattice-Boltzmann kernel.

use rand::{Rng, SeedableRng};

use crate::lbm::{equilibrium, Cell, Face, Lattice, Physics, MAGIC_POISEUILLE, Q, WEIGHTS};
use crate::{Real, Result};

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
pub fn cavity_lattice<T: Real>(dims: [usize; 3], seed: u64) -> Result<Lattice<T>> {
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
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let [nx, ny, nz] = dims;
    for z in 1..nz.saturating_sub(1) {
        for y in 1..ny.saturating_sub(1) {
            for x in 1..nx.saturating_sub(1) {
                let u = [0; 3].map(|_| rng.random_range(-0.03..0.03));
                let feq = equilibrium(1.0 + rng.random_range(-0.01..0.01), u);
                let f: [T; Q] = std::array::from_fn(|i| {
                    T::of(feq[i] + WEIGHTS[i] * rng.random_range(-0.01..0.01))
                });
                lat.set_populations(x, y, z, f);
            }
        }
    }
    Ok(lat)
}
