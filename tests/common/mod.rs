//! Helpers shared by the integration tests.
#![allow(dead_code)]

use rand::{Rng, SeedableRng};
use stencil35d::{Engine, Grid, PlanBuilder, Real, Solver, Stencil};

/// Relative tolerance (max-norm) for comparing an engine with the reference: a few ulps per
/// step of rounding from a different summation order and FMA use, times the step count (the
/// test stencils' weights sum to at most one in magnitude, so an earlier difference is
/// carried, not amplified). f32: ulp ≈ 6e-8, so 1e-5 (167 ulps) leaves room for the suites'
/// longest runs, 21 steps of up to 8 ulps; f64: ulp ≈ 1.1e-16, 1e-12 is ~9,000 ulps.
pub fn tolerance<T: Real>() -> f64 {
    match T::DTYPE {
        stencil35d::DType::F32 => 1e-5,
        stencil35d::DType::F64 => 1e-12,
    }
}

/// A stencil of `kind` ("star" or "box") and radius `r` with random, asymmetric (for boxes)
/// coefficients, about one in four of them negative (so a kernel that loses a sign fails),
/// whose magnitudes sum to one, so no value outgrows the input's largest.
pub fn random_stencil(kind: &str, r: usize, seed: u64) -> Stencil {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let n = if kind == "box" {
        (2 * r + 1).pow(3)
    } else {
        r + 1
    };
    let raw: Vec<f64> = (0..n)
        .map(|i| {
            let v = rng.random_range(0.5..1.5);
            if i > 0 && rng.random_range(0..4) == 0 {
                -v
            } else {
                v
            }
        })
        .collect();
    let weight_sum: f64 = if kind == "box" {
        raw.iter().map(|v| v.abs()).sum()
    } else {
        raw[0].abs() + 6.0 * raw[1..].iter().map(|v| v.abs()).sum::<f64>()
    };
    let c: Vec<f64> = raw.iter().map(|v| v / weight_sum).collect();
    if kind == "box" {
        Stencil::boxed(r, &c).unwrap()
    } else {
        Stencil::star(r, &c).unwrap()
    }
}

#[path = "../setup/mod.rs"]
mod setup;
// Not every suite that shares these helpers uses the described machine.
#[allow(unused_imports)]
pub use setup::{cli_within, slow_memory_machine, Setup};

/// Runs `steps` steps of `stencil` on a copy of `input` with `setup`.
pub fn run<T: Real>(stencil: &Stencil, input: &Grid<T>, setup: Setup, steps: usize) -> Grid<T> {
    let mut b = PlanBuilder::new(stencil.clone(), T::DTYPE, input.dims())
        .engine(setup.engine)
        .threads(setup.threads);
    if setup.engine == Engine::Blocked {
        b = b.dim_t(setup.dim_t);
        if let Some(t) = setup.tile {
            b = b.tile(t);
        }
        if let Some(n) = setup.tile_threads {
            b = b.tile_threads(n);
        }
        if let Some(n) = setup.z_chunks {
            b = b.z_chunks(n);
        }
    }
    let plan = b
        .build()
        .unwrap_or_else(|e| panic!("{setup:?} on {:?}: {e}", input.dims()));
    let mut grid = input.clone();
    Solver::new(plan)
        .run(&mut grid, steps)
        .unwrap_or_else(|e| panic!("{setup:?}: {e}"));
    grid
}
