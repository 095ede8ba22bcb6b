//! # stencil35d
//!
//! Bandwidth-bound stencil solvers at compute speed, through **3.5D blocking** (2.5D spatial
//! blocking — tile X and Y, stream through Z — plus temporal blocking: `dim_t` time steps per
//! pass over memory), after Nguyen et al., *3.5-D Blocking Optimization for Stencil Computations
//! on Modern CPUs and GPUs* (SC 2010).
//!
//! ```
//! use stencil35d::{Grid, Plan, Solver, Stencil};
//!
//! // Heat diffusion: u ← (1 - 6ν)·u + ν·(sum of the six neighbours), ν = 0.1.
//! let stencil = Stencil::seven_point(0.4, 0.1);
//! let mut grid = Grid::<f32>::from_fn([64, 64, 64], |x, y, z| if x == 0 { 1.0 } else { 0.0 }).unwrap();
//! let plan = Plan::for_grid(&stencil, &grid).unwrap(); // engine, dim_t and tile for this machine
//! let report = Solver::new(plan).run(&mut grid, 100).unwrap();
//! println!("{report}");
//! ```
//!
//! The crate is organised as: [`Grid`] and [`Stencil`] (the data and the kernel), the planner
//! ([`Plan`], [`Machine`]) which chooses engine and parameters from the paper's model, and
//! [`Solver`] which runs a plan. Engines: `reference` (scalar oracle), `naive` (one parallel SIMD
//! sweep per step) and `blocked` (3.5D) on the CPU, `gpu-naive` and `gpu-blocked` on an NVIDIA
//! GPU ([`gpu`]). The same planner and solver run D3Q19 lattice-Boltzmann flows ([`lbm`]).
//! [`perf`] measures the engines against each other and against the machine's rooflines (what
//! `stencil35d compare` prints); [`output`] writes PNG slices and VTK files.

#![warn(missing_docs)]
#![deny(unsafe_op_in_unsafe_fn)]

mod aligned;
mod blocking;
mod cost;
mod cpu;
pub mod distributed;
mod engine;
mod error;
mod files;
mod finite;
pub mod gpu;
mod grid;
pub mod lbm;
pub mod memory;
pub mod output;
pub mod perf;
pub mod plan;
pub mod plane;
mod random;
mod real;
mod rel_diff;
mod runtime;
mod simd;
mod solver;
mod stencil;
pub mod tuning;
pub mod wave;

pub use error::{Error, Result};
pub use grid::Grid;
pub use plan::{Engine, Kernel, Machine, Plan, PlanBuilder};
pub use plane::{Border, Filter2, Grid2, Stencil2};
pub use real::Level;
pub use real::{DType, Real};
pub(crate) use real::{FlowLane, Lane, OneLane, SimdVec};
pub use solver::{RunReport, Solver, State};
pub use stencil::{Shape, Stencil, MAX_BOX_RADIUS, MAX_STAR_RADIUS};
pub use tuning::Tuning;

/// Measurements and helpers the planner is built on, for tools such as `stencil35d probe`.
///
/// **Stability:** unlike the rest of the public API, these follow the planner's internals and
/// may change in any release.
pub mod advanced {
    pub use crate::plan::bandwidth::measure as measure_bandwidth;
    pub use crate::plan::cache_probe::{
        measure_cache_curve, usable_bytes, CachePoint, CACHE_SPEEDUP,
    };
    pub use crate::plan::compute::measure_stencil_gops;
    pub use crate::plan::contention::{
        max_wait_share as probe_wait_share, MAX_WAIT_SHARE as PROBE_MAX_WAIT_SHARE,
    };
    pub use crate::plan::display::human_bytes;
    pub use crate::plan::flops::measure_fma_gops;
}

/// The README's examples, compiled and run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
pub struct ReadmeDoctests;
