//! The 2D state: a [`Grid2`] runs a plan for a 2D stencil (iterated, fixed boundary layer)
//! or a convolution (every pixel, once per step) on every engine.

use std::time::Instant;

use super::concrete::per_precision;
use super::dispatch::{rings_fit, OneCpuEntry, Run, Timing};
use super::{check_shape, check_steps, Solver, State};
use crate::memory::Footprint;
use crate::plan::Kernel;
use crate::plane::{Filter2, Stencil2};
use crate::{cpu, gpu, Error, Grid, Grid2, Real, Result, RunReport};

per_precision!(Grid2, advance_plane_f32, advance_plane_f64, advance_plane);

/// [`State::advance`] for a 2D grid.
fn advance_plane<T: Real>(
    solver: &mut Solver,
    grid: &mut Grid2<T>,
    steps: usize,
) -> Result<RunReport> {
    let kernel = match solver.plan.kernel() {
        Kernel::Stencil2(s) => PlaneKernel::Stencil(s.clone()),
        Kernel::Filter(f) => PlaneKernel::Filter(f.clone()),
        other => {
            return Err(Error::PlanMismatch(format!(
                "the plan is for {other}, not for a 2D grid"
            )))
        }
    };
    let [nx, ny] = grid.dims();
    check_shape(&solver.plan, T::DTYPE, [nx, ny, 1])?;
    check_steps(steps)?;
    let pool = solver.workers.pool(solver.plan.threads())?;
    if let Some(([x, y], value)) = pool.install(|| grid.find_non_finite()) {
        return Err(Error::NonFiniteInput {
            cell: [x, y, 0],
            value,
        });
    }
    solver.dispatch(
        &mut HostPlane {
            kernel,
            grid: grid.as_grid_mut(),
        },
        steps,
    )
}

/// The 2D kernel a plan runs.
enum PlaneKernel {
    Stencil(Stencil2),
    Filter(Filter2),
}

/// A one-plane grid in host memory with its 2D kernel.
struct HostPlane<'a, T: Real> {
    kernel: PlaneKernel,
    grid: &'a mut Grid<T>,
}

impl<T: Real> OneCpuEntry for HostPlane<'_, T> {
    /// Runs the plan's CPU engine with the solver's second grid (its boundary layer made
    /// equal to the state's for stencils), timed from before the scratch is set up.
    fn on_cpu(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let start = Instant::now();
        let dims = self.grid.dims();
        let rings = cpu::plane::scratch_bytes::<T>(
            match &self.kernel {
                PlaneKernel::Stencil(s) => Ok(s),
                PlaneKernel::Filter(f) => Err(f),
            },
            run.params,
            dims[0],
        );
        let label = if rings > 0 {
            "with its scratch and its threads' rows"
        } else {
            "with its scratch"
        };
        let need = Footprint::grids(T::DTYPE, 2).plus(rings).with_label(label);
        let held = Footprint::grids(T::DTYPE, 1).bytes(dims).unwrap_or(0);
        let (memory, steps, params) = (run.memory, run.steps, run.params);
        let (kernel, grid, workers) = (&self.kernel, &mut *self.grid, &mut *run.workers);
        run.scratch.with(
            |s: &Grid<T>| s.dims() == dims,
            || {
                need.check_beside(dims, held, memory)?;
                Grid::<T>::unchecked(dims)
            },
            |scratch| {
                // A kept scratch skipped the check above: the rows are checked alone.
                rings_fit(&need, dims, rings, memory)?;
                let pool = workers.pool(params.threads)?;
                match kernel {
                    PlaneKernel::Stencil(s) => {
                        pool.install(|| scratch.copy_boundary_from(grid, s.radius()));
                        cpu::plane::run_stencil(s, params, pool, grid, scratch, steps)
                    }
                    PlaneKernel::Filter(f) => {
                        cpu::plane::run_filter(f, params, pool, grid, scratch, steps)
                    }
                }
                .map_err(Error::from)
            },
        )?;
        Ok(Timing::since(start))
    }

    fn on_gpu(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let (params, steps) = (run.params, run.steps);
        let (compute, transfer) = match &self.kernel {
            PlaneKernel::Stencil(s) => gpu::plane::run_stencil(s, params, self.grid, steps)?,
            PlaneKernel::Filter(f) => gpu::plane::run_filter(f, params, self.grid, steps)?,
        };
        Ok(Timing { compute, transfer })
    }
}
