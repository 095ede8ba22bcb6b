//! The CPU stencil engines: [`reference`] (the oracle), [`naive`] (one parallel SIMD sweep per
//! step) and [`blocked`] (3.5D blocking on a pinned team), sharing the row kernels of [`rows`].
//! Each takes plain parameters ([`EngineParams`]) and runs on the thread runtime of
//! [`crate::runtime`] with the tiling of [`crate::blocking`].

pub(crate) mod blocked;
pub(crate) mod naive;
pub(crate) mod plane;
pub(crate) mod reference;
pub(crate) mod rows;
pub(crate) mod wave;

use crate::aligned::AlignedBuf;
use crate::engine::{EngineParams, Failure};
use crate::runtime::team::Team;
use crate::runtime::Rings;
use crate::{Grid, Level, Real, Stencil};

/// Advances `grid` by `steps` steps with the scalar reference engine, `scratch` (same shape,
/// boundary layer equal to `grid`'s) being the second buffer. On success and on failure
/// `grid` holds the newest finite state.
pub(crate) fn run_reference<T: Real>(
    stencil: &Stencil,
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
) -> Result<(), Failure> {
    let r = stencil.radius();
    for s in 1..=steps {
        reference::step(stencil, grid, scratch);
        if !reference::interior_is_finite(scratch, r) {
            return Err(Failure::locate(scratch, r, s));
        }
        grid.swap_storage(scratch);
    }
    Ok(())
}

/// Advances `grid` by `steps` steps with the naive engine on `pool` at instruction-set `level`,
/// as [`run_reference`].
pub(crate) fn run_naive<T: Real>(
    stencil: &Stencil,
    level: Level,
    pool: &rayon::ThreadPool,
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
) -> Result<(), Failure> {
    let run = naive::NaiveRun {
        grid,
        scratch,
        steps,
        pool,
    };
    rows::dispatch(stencil, level, run)
}

/// Advances `grid` by `steps` steps with the 3.5D blocked engine on `team`, as
/// [`run_reference`], its first pass beside `beside`'s work where given.
pub(crate) fn run_blocked<'a, 'b, T: Real>(
    stencil: &Stencil,
    params: &EngineParams,
    (team, rings): (&'a Team, &'a mut Rings),
    (grid, scratch): (&'a mut Grid<T>, &'a mut Grid<T>),
    steps: usize,
    beside: Option<blocked::Beside<'b, T>>,
) -> Result<(), Failure> {
    // Two copies of a grid larger than the last-level cache leave it between passes.
    let bytes = 2 * std::mem::size_of_val(grid.storage());
    let run = blocked::BlockedRun {
        stream: bytes > params.llc_bytes,
        grid,
        scratch,
        steps,
        dim_t: params.dim_t,
        tile: params.tile,
        tile_threads: params.tile_threads,
        z_chunks: params.z_chunks,
        team,
        ring: rings.get::<Option<AlignedBuf<T>>>(),
        beside,
        replay: params.replay,
    };
    rows::dispatch(stencil, params.isa, run)
}
