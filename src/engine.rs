//! [`Engine`]: the implementations a plan can choose between, and the plain values an engine
//! takes from a plan ([`EngineParams`]). This module sits below both the planner and the
//! engines: the planner fills the parameters, the engines read them, and neither imports the
//! other's side.

use std::fmt::{self, Display};
use std::str::FromStr;

use serde::{Deserialize, Serialize};

use crate::{Error, Grid, Real};

/// Which implementation runs the time steps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
#[non_exhaustive]
pub enum Engine {
    /// The plain scalar loop the tests trust (one thread, one step at a time).
    Reference,
    /// One parallel SIMD sweep per time step: bandwidth-bound, no temporal blocking.
    Naive,
    /// 3.5D blocking: 2.5D tiles streamed through z, `dim_t` steps per pass, pinned team.
    Blocked,
    /// CUDA: one thread per (x, y) column streaming along z, one launch per time step.
    GpuNaive,
    /// CUDA: N.5D blocking (AN5D): 2.5D tiles streamed along z, `dim_t` steps per launch,
    /// register and shared-memory buffering.
    GpuBlocked,
}

impl Engine {
    /// All engines, in the order reports list them.
    pub const ALL: [Engine; 5] = [
        Engine::Reference,
        Engine::Naive,
        Engine::Blocked,
        Engine::GpuNaive,
        Engine::GpuBlocked,
    ];

    /// The name used on the command line and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Engine::Reference => "reference",
            Engine::Naive => "naive",
            Engine::Blocked => "blocked",
            Engine::GpuNaive => "gpu-naive",
            Engine::GpuBlocked => "gpu-blocked",
        }
    }

    /// Whether the engine runs on the GPU.
    pub fn is_gpu(self) -> bool {
        matches!(self, Engine::GpuNaive | Engine::GpuBlocked)
    }

    /// Whether the engine advances several time steps per pass (uses `dim_t` and tiles).
    pub fn is_blocked(self) -> bool {
        matches!(self, Engine::Blocked | Engine::GpuBlocked)
    }
}

impl Display for Engine {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Engine {
    type Err = Error;
    fn from_str(s: &str) -> Result<Self, Error> {
        Engine::ALL
            .into_iter()
            .find(|e| e.name() == s)
            .ok_or_else(|| {
                let names: Vec<_> = Engine::ALL.iter().map(|e| e.name()).collect();
                Error::InvalidArgument(format!(
                    "unknown engine '{s}' (expected one of: {})",
                    names.join(", ")
                ))
            })
    }
}

/// What an engine needs from a plan, as plain values: the planner fills it
/// (`Plan::engine_params`), the engines read it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct EngineParams {
    /// The engine to run.
    pub(crate) engine: Engine,
    /// The SIMD instruction-set level of the CPU engines.
    pub(crate) isa: crate::Level,
    /// CPU threads (the naive engine's pool, the blocked engine's team).
    pub(crate) threads: usize,
    /// Whether the blocked engine's team is pinned to cores.
    pub(crate) pin: bool,
    /// Time steps per pass (1 for unblocked engines).
    pub(crate) dim_t: usize,
    /// Loaded tile `[x, y]` of the blocked CPU engine.
    pub(crate) tile: [usize; 2],
    /// Threads per tile group of the blocked CPU engine.
    pub(crate) tile_threads: usize,
    /// Chunks the blocked CPU engine cuts z into.
    pub(crate) z_chunks: usize,
    /// Bytes of the last-level cache: data larger than this leaves it between passes, so the
    /// blocked stencil engine writes its output with streaming stores.
    pub(crate) llc_bytes: usize,
    /// GPU lattice engines: one population array updated in place instead of two.
    pub(crate) in_place: bool,
    /// Whether the user fixed `in_place`: the planner's in-place choice yields to two copies
    /// for a lattice the AA kernels cannot run (an inlet or outlet on a closed face).
    pub(crate) in_place_fixed: bool,
    /// The gpu-blocked stencil engine's launch shape.
    pub(crate) launch: Option<LaunchShape>,
    /// Whether a blocked CPU pass whose output holds a non-finite value is replayed a step at
    /// a time with the naive sweep, to leave the state at the last finite step (a run in one
    /// process). Without it the pass leaves the state at its input and names its first step:
    /// the ranks of a split run trace the failure together (see `solver::split_passes`).
    pub(crate) replay: bool,
}

/// The launch shape of the gpu-blocked stencil kernels.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct LaunchShape {
    /// Threads per block `[x, y]`.
    pub(crate) block: [usize; 2],
    /// Cells per thread along y (register tiling).
    pub(crate) ry: usize,
    /// Cells per thread along x of the shuffle kernel; 0 for the shared-memory kernel.
    pub(crate) rx: usize,
    /// The shuffle kernel's skewed level schedule.
    pub(crate) skew: bool,
    /// Output planes per block along z (0: the whole axis).
    pub(crate) stream_block: usize,
}

/// Where a run stopped because a value became infinite or NaN.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Failure {
    /// 1-based step of the run that produced the value.
    pub(crate) step: usize,
    /// A cell holding it.
    pub(crate) cell: [usize; 3],
    /// The value.
    pub(crate) value: f64,
}

impl Failure {
    /// Finds the first non-finite interior cell of `grid` (the output of step `step`).
    pub(crate) fn locate<T: Real>(grid: &Grid<T>, r: usize, step: usize) -> Failure {
        let [nx, ny, nz] = grid.dims();
        let interior = |[x, y, z]: [usize; 3]| {
            (r..nx - r).contains(&x) && (r..ny - r).contains(&y) && (r..nz - r).contains(&z)
        };
        let (cell, value) = grid
            .iter()
            .find(|&(c, v)| interior(c) && !v.is_finite())
            .map_or(([r, r, r], f64::NAN), |(c, v)| {
                (c, v.to_f64().unwrap_or(f64::NAN))
            });
        Failure { step, cell, value }
    }
}

impl Failure {
    /// The first non-finite cell of the one-plane grid `grid` more than `r` cells from the
    /// x and y edges (the output of step `step` of a 2D kernel), if there is one.
    pub(crate) fn locate_plane<T: Real>(grid: &Grid<T>, r: usize, step: usize) -> Option<Failure> {
        let [nx, ny, _] = grid.dims();
        (r..ny - r).find_map(|y| {
            let row = &grid.row(y, 0)[r..nx - r];
            row.iter().position(|v| !v.is_finite()).map(|i| Failure {
                step,
                cell: [r + i, y, 0],
                value: row[i].to_f64().unwrap_or(f64::NAN),
            })
        })
    }
}

impl From<Failure> for Error {
    fn from(f: Failure) -> Self {
        Error::NonFinite {
            step: f.step,
            cell: f.cell,
            value: f.value,
        }
    }
}
