//! Running the 2D kernels on the GPU: `gpu-naive` (a launch per step) and `gpu-blocked` (the
//! systolic warp-shuffle kernel; iterated stencils advance `dim_t` steps per launch).

use crate::engine::EngineParams;
use crate::plane::{Filter2, Stencil2};
use crate::{Error, Grid, Real, Result};

/// Seconds of computation and of host-device transfers of a GPU run.
pub(crate) type Seconds = (f64, f64);

/// Uploads the one-plane `grid`, advances it by `steps` steps of `stencil` with the engine
/// `params.engine` names, and downloads the newest finite state.
pub(crate) fn run_stencil<T: Real>(
    stencil: &Stencil2,
    params: &EngineParams,
    grid: &mut Grid<T>,
    steps: usize,
) -> Result<Seconds> {
    let _ = (stencil, params, grid, steps);
    Err(Error::Gpu("the 2D GPU engines are not built yet".into()))
}

/// Uploads `grid`, applies `filter` `steps` times, and downloads the result.
pub(crate) fn run_filter<T: Real>(
    filter: &Filter2,
    params: &EngineParams,
    grid: &mut Grid<T>,
    steps: usize,
) -> Result<Seconds> {
    let _ = (filter, params, grid, steps);
    Err(Error::Gpu("the 2D GPU engines are not built yet".into()))
}
