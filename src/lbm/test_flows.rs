//! What the 16-bit storage tests share between the emulated kernel tests (`gpu::lbm_emulate`)
//! and the GPU integration tests: the largest deviation from rest (what the storage rounds), and
//! a plane Poiseuille channel: periodic x and z, resting walls on
//! the y faces half-way between nodes (a channel `H = ny − 2` cells wide), TRT with Λ = 3/16 and
//! a body force giving a centre speed of 0.05. Not part of the API.
//!
//! 16-bit storage resolves the converged flow only where the force a step adds to a population
//! spans several codes of its deviation, `R = 8ν(1 − 1/2τ)·2¹¹/H²`; the channel is 14 cells wide
//! at τ = 1.5 (R = 18.6), where the profile error is below 1% in both formats.

use super::{Axis, Cell, Face, Lattice, Physics, Storage, MAGIC_POISEUILLE, WEIGHTS};
use crate::Real;

/// Nodes across the channel, walls included.
pub const NY: usize = 16;
/// Relaxation time.
pub const TAU: f64 = 1.5;
/// Steps to convergence: the slowest mode decays like exp(−ν π² t / H²), e^−50 after 3000.
pub const STEPS: usize = 3000;

/// Kinematic viscosity and the body force of the channel.
fn viscosity_and_force() -> (f64, f64) {
    let h = (NY - 2) as f64;
    let nu = (TAU - 0.5) / 3.0;
    (nu, 8.0 * nu * 0.05 / (h * h))
}

/// The channel, `nx` × [`NY`] × `nz` nodes at rest, in `storage`.
pub fn channel(nx: usize, nz: usize, storage: Storage) -> Lattice<f32> {
    let (_, force) = viscosity_and_force();
    let physics = Physics::trt(TAU, MAGIC_POISEUILLE).with_force([force, 0.0, 0.0]);
    let mut lat = Lattice::<f32>::new([nx, NY, nz], physics).expect("a valid channel");
    lat.set_periodic(Axis::X, true);
    lat.set_periodic(Axis::Z, true);
    lat.set_face(Face::YMin, Cell::Wall).expect("walls");
    lat.set_face(Face::YMax, Cell::Wall).expect("walls");
    lat.set_storage(storage)
        .expect("an f32 lattice at rest fits every storage");
    lat
}

/// The relative L2 error of the velocity profile across the channel at (`x`, `z`) against the
/// parabola `u(y) = F/(2ν)·(y − ½)(ny − 3/2 − y)`.
pub fn profile_error(lat: &Lattice<f32>, x: usize, z: usize) -> f64 {
    let (nu, force) = viscosity_and_force();
    let [ux, _, _] = lat.velocity().unwrap();
    let (mut err2, mut ref2) = (0.0, 0.0);
    for y in 1..NY - 1 {
        let exact = force / (2.0 * nu) * (y as f64 - 0.5) * (NY as f64 - 1.5 - y as f64);
        err2 += (ux.get(x, y, z) as f64 - exact).powi(2);
        ref2 += exact * exact;
    }
    (err2 / ref2).sqrt()
}

/// The largest deviation `|f_i − w_i|` of a population of `lat` from its rest value.
pub fn max_deviation<T: Real>(lat: &Lattice<T>) -> f64 {
    let [nx, ny, nz] = lat.dims();
    let mut worst: f64 = 0.0;
    for z in 0..nz {
        for y in 0..ny {
            for x in 0..nx {
                for (f, w) in lat.populations(x, y, z).iter().zip(WEIGHTS) {
                    worst = worst.max((f.to_f64().unwrap_or(f64::NAN) - w).abs());
                }
            }
        }
    }
    worst
}
