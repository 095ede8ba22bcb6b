//! The CPU engines for the 2D kernels on one-plane grids: the scalar [`reference`], the naive
//! engines (one parallel SIMD sweep per step: [`stencil_naive`], [`conv_naive`]) and the
//! blocked ones (iterated stencils: tiles of rows streamed through `dim_t` levels,
//! [`stencil_blocked`]; convolutions: register blocking over output rows in cache-sized
//! column tiles, with a separable path for rank-one filters, [`conv_blocked`]). Each advances
//! `grid` by `steps` steps with `scratch` (same shape) as the second buffer and leaves the
//! newest finite state in `grid`, also on failure.

mod conv_blocked;
mod conv_naive;
mod conv_rows;
mod items;
mod padded;
pub(crate) mod reference;
mod stencil_blocked;
mod stencil_naive;
mod stencil_rows;
mod steps;
mod taps;

use crate::engine::{Engine, EngineParams, Failure};
use crate::plane::{Filter2, Stencil2};
use crate::{Grid, Real};
use steps::run_steps;

/// The bytes the 2D engines' threads allocate besides the two grids, for the solver's
/// memory check: each of `params.threads` threads keeps, in the blocked engine, a stencil's
/// ring of rows ([`stencil_blocked::ring_elems`]) or a filter's input windows and
/// intermediate rows ([`conv_blocked::scratch_elems`]) on rows of `nx`, and in the naive
/// engine a filter's padded input rows ([`conv_naive::scratch_elems`]). 0 otherwise.
pub(crate) fn scratch_bytes<T: Real>(
    kernel: Result<&Stencil2, &Filter2>,
    params: &EngineParams,
    nx: usize,
) -> u64 {
    let per_thread = match (params.engine, kernel) {
        (Engine::Blocked, Ok(s)) => {
            stencil_blocked::ring_elems::<T>(s.radius(), nx, params.tile[0], params.dim_t)
        }
        (Engine::Blocked, Err(f)) => conv_blocked::scratch_elems::<T>(f, nx, params.tile),
        (Engine::Naive, Err(f)) => conv_naive::scratch_elems::<T>(f, nx),
        _ => 0,
    };
    (per_thread as u64)
        .saturating_mul(params.threads as u64)
        .saturating_mul(std::mem::size_of::<T>() as u64)
}

/// Advances `grid` by `steps` steps of `stencil` with the engine `params.engine` names
/// (reference, naive or blocked) on `pool`. `scratch`'s boundary layer equals `grid`'s.
pub(crate) fn run_stencil<T: Real>(
    stencil: &Stencil2,
    params: &EngineParams,
    pool: &rayon::ThreadPool,
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
) -> Result<(), Failure> {
    let r = stencil.radius();
    // Two copies of a grid larger than the last-level cache leave it between passes.
    let stream = 2 * std::mem::size_of_val(grid.storage()) > params.llc_bytes;
    match params.engine {
        Engine::Naive => stencil_rows::dispatch(
            stencil,
            params.isa,
            stencil_naive::NaiveRun {
                grid,
                scratch,
                steps,
                pool,
            },
        ),
        Engine::Blocked => stencil_rows::dispatch(
            stencil,
            params.isa,
            stencil_blocked::BlockedRun {
                grid,
                scratch,
                steps,
                dim_t: params.dim_t,
                tile: params.tile,
                stream,
                pool,
            },
        ),
        _ => run_steps(grid, scratch, steps, r, |src, dst| {
            reference::stencil_step(stencil, src, dst);
            Failure::locate_plane(dst, r, 0).is_none()
        }),
    }
}

/// Applies `filter` `steps` times to `grid` with the engine `params.engine` names on `pool`.
pub(crate) fn run_filter<T: Real>(
    filter: &Filter2,
    params: &EngineParams,
    pool: &rayon::ThreadPool,
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
) -> Result<(), Failure> {
    match params.engine {
        Engine::Naive => conv_naive::run(filter, params.isa, pool, grid, scratch, steps),
        Engine::Blocked => {
            conv_blocked::run(filter, params.isa, params.tile, pool, grid, scratch, steps)
        }
        _ => run_steps(grid, scratch, steps, 0, |src, dst| {
            reference::filter_step(filter, src, dst);
            Failure::locate_plane(dst, 0, 0).is_none()
        }),
    }
}
