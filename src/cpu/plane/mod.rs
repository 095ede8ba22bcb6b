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
mod taps;

use crate::engine::{Engine, EngineParams, Failure};
use crate::plane::{Filter2, Stencil2};
use crate::{Grid, Real};

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

/// Runs `steps` steps of `step` (from its first grid into its second; false when an output
/// is infinite or NaN), swapping `grid` and `scratch` after each, so `grid` always holds the
/// newest finite state; on failure, where it happened (cells more than `r` from the edges).
fn run_steps<T: Real>(
    grid: &mut Grid<T>,
    scratch: &mut Grid<T>,
    steps: usize,
    r: usize,
    mut step: impl FnMut(&Grid<T>, &mut Grid<T>) -> bool,
) -> Result<(), Failure> {
    for s in 1..=steps {
        if !step(grid, scratch) {
            return Err(failure(scratch, r, s));
        }
        grid.swap_storage(scratch);
    }
    Ok(())
}

/// The first non-finite cell of `grid` more than `r` from the edges, the output of step
/// `step` (a cell a finiteness tracker flagged; the first interior cell if none is found).
fn failure<T: Real>(grid: &Grid<T>, r: usize, step: usize) -> Failure {
    Failure::locate_plane(grid, r, step).unwrap_or(Failure {
        step,
        cell: [r, r, 0],
        value: f64::NAN,
    })
}
