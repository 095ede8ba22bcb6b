//! The stencil states: a [`Grid`] in host memory runs on every engine, a [`DeviceGrid`] on the
//! GPU engines only.

use std::time::Instant;

use cudarc::driver::CudaSlice;

use super::concrete::per_precision;
use super::dispatch::{rings_fit, Engines, Run, Timing};
use super::{check_shape, check_steps, stencil_of, Input, Solver, State};
use crate::cpu;
use crate::cpu::blocked::Beside;
use crate::engine::{Engine, EngineParams};
use crate::gpu::stencil::{self as gpu_stencil, gpu_err, Layout, PassHooks, Scratch as GpuScratch};
use crate::gpu::{self, stencil_run, DeviceGrid};
use crate::memory::Footprint;
use crate::runtime::Workers;
use crate::{Error, Grid, Real, Result, RunReport, Stencil};

per_precision!(
    Grid,
    advance_grid_f32,
    advance_grid_f64,
    advance_grid,
    Input::Unchecked
);

/// [`State::advance`] for a grid, given what `input` says of it.
pub(super) fn advance_grid<T: Real>(
    solver: &mut Solver,
    grid: &mut Grid<T>,
    steps: usize,
    input: Input,
) -> Result<RunReport> {
    advance_grid_beside(solver, grid, steps, input, None)
}

/// [`advance_grid`] with `beside`'s work (a split run's z halo exchange) beside the blocked
/// engine's first pass, or before the run on the other engines.
pub(super) fn advance_grid_beside<'a, T: Real>(
    solver: &mut Solver,
    grid: &'a mut Grid<T>,
    steps: usize,
    input: Input,
    mut beside: Option<Beside<'a, T>>,
) -> Result<RunReport> {
    let stencil = match check_run(solver, grid, steps, input) {
        Ok(stencil) => stencil,
        Err(e) => {
            // The neighbouring ranks wait for this rank's part of the exchange.
            if let Some(beside) = beside.as_mut() {
                beside.run_first(grid);
            }
            return Err(e);
        }
    };
    solver.dispatch(
        &mut HostGrid {
            stencil,
            grid,
            input,
            beside,
        },
        steps,
    )
}

/// The checks of a run of `steps` steps on `grid`, before anything is computed: the plan's
/// stencil.
fn check_run<T: Real>(
    solver: &mut Solver,
    grid: &Grid<T>,
    steps: usize,
    input: Input,
) -> Result<Stencil> {
    let stencil = stencil_of(&solver.plan)?;
    check_shape(&solver.plan, T::DTYPE, grid.dims())?;
    check_steps(steps)?;
    if input.scan() {
        // The scan runs on the plan's threads, not on every core of the machine.
        let pool = solver.workers.pool(solver.plan.threads())?;
        if let Some((cell, value)) = pool.install(|| grid.find_non_finite()) {
            return Err(Error::NonFiniteInput { cell, value });
        }
    }
    Ok(stencil)
}

/// A grid in host memory with its stencil, what the run may assume of it, and work to do
/// beside its first pass.
struct HostGrid<'a, T: Real> {
    stencil: Stencil,
    grid: &'a mut Grid<T>,
    input: Input,
    beside: Option<Beside<'a, T>>,
}

impl<T: Real> HostGrid<'_, T> {
    /// Runs the work meant for beside the first pass now, before the run: for the engines
    /// that cannot compute beside it.
    fn beside_first(&mut self) {
        if let Some(mut beside) = self.beside.take() {
            beside.run_first(self.grid);
        }
    }

    /// Runs a CPU engine `engine` with the solver's second grid (its boundary layer made equal
    /// to the state's), timing it from before the scratch is set up. A split run's later
    /// passes keep the second grid's boundary layer from the pass before: copying it touches
    /// two cache lines of every row of both grids, a few percent of a pass.
    fn on_cpu(
        &mut self,
        run: &mut Run<'_>,
        engine: impl FnOnce(&Stencil, &mut Workers, &mut Grid<T>, &mut Grid<T>) -> Result<()>,
    ) -> Result<Timing> {
        let start = Instant::now();
        self.beside_first();
        let dims = self.grid.dims();
        let need = Footprint::grids(T::DTYPE, 2)
            .plus(run.ring_bytes)
            .at_least(2 * self.stencil.radius() + 1)
            .with_label(run.scratch_label("scratch"));
        let held = Footprint::grids(T::DTYPE, 1).bytes(dims).unwrap_or(0);
        let (memory, rings, threads) = (run.memory, run.ring_bytes, run.params.threads);
        let (stencil, grid, workers) = (&self.stencil, &mut *self.grid, &mut *run.workers);
        let made = std::cell::Cell::new(false);
        run.scratch.with(
            |s: &Grid<T>| s.dims() == dims,
            || {
                need.check_beside(dims, held, memory)?;
                made.set(true);
                Grid::<T>::unchecked(dims)
            },
            |scratch| {
                rings_fit(&need, dims, rings, memory)?;
                let pool = workers.pool(threads)?;
                if made.get() || self.input != Input::Continued {
                    pool.install(|| scratch.copy_boundary_from(grid, stencil.radius()));
                }
                engine(stencil, workers, grid, scratch)
            },
        )?;
        Ok(Timing::since(start))
    }
}

impl<T: Real> Engines for HostGrid<'_, T> {
    fn reference(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let steps = run.steps;
        self.on_cpu(run, |stencil, _, grid, scratch| {
            cpu::run_reference(stencil, grid, scratch, steps).map_err(Error::from)
        })
    }

    fn naive(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let (steps, threads, isa) = (run.steps, run.params.threads, run.params.isa);
        self.on_cpu(run, |stencil, workers, grid, scratch| {
            let pool = workers.pool(threads)?;
            cpu::run_naive(stencil, isa, pool, grid, scratch, steps).map_err(Error::from)
        })
    }

    fn blocked(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let (steps, params) = (run.steps, run.params);
        let mut beside = self.beside.take();
        let ran = self.on_cpu(run, |stencil, workers, grid, scratch| {
            let team = workers.team_and_rings(params.threads, params.pin)?;
            let beside = beside.take();
            cpu::run_blocked(stencil, params, team, (grid, scratch), steps, beside)
                .map_err(Error::from)
        });
        // A run that failed before its engine started still does its part of the exchange,
        // which the neighbouring ranks wait for.
        self.beside = beside;
        self.beside_first();
        ran
    }

    /// Uploads the grid, runs on the GPU and downloads the result (also the last finite state
    /// when a value blows up); transfers are timed apart from the computation, and so is the
    /// one-time kernel compilation (not counted at all).
    fn gpu(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        self.beside_first();
        let device = gpu::gpu()?;
        let layout = Layout {
            dims: self.grid.dims(),
            pitch: self.grid.pitch(),
            plane: self.grid.plane_stride(),
        };
        let (params, steps) = (run.params, run.steps);
        run.scratch.with(
            |b: &HostRunBuffers<T>| b.scratch.layout == layout,
            || {
                let scratch = GpuScratch::new(device, layout, false)?;
                let cur = device
                    .stream
                    .alloc_zeros::<T>(layout.len())
                    .map_err(gpu_err)?;
                Ok(HostRunBuffers { cur, scratch })
            },
            |buffers| self.gpu_round_trip(params, steps, layout, buffers),
        )
    }
}

/// Device buffers for GPU runs on host grids: the state uploaded for the run, and the scratch.
struct HostRunBuffers<T: Real> {
    cur: CudaSlice<T>,
    scratch: GpuScratch<T>,
}

impl<T: Real> HostGrid<'_, T> {
    fn gpu_round_trip(
        &mut self,
        params: &EngineParams,
        steps: usize,
        layout: Layout,
        buffers: &mut HostRunBuffers<T>,
    ) -> Result<Timing> {
        let device = gpu::gpu()?;
        // Kernels and launch limits first: a plan the device cannot launch is refused before
        // the upload.
        gpu_stencil::prepare::<T>(device, &self.stencil, params, layout, steps)?;
        let upload = Instant::now();
        device
            .stream
            .memcpy_htod(self.grid.storage(), &mut buffers.cur)
            .map_err(gpu_err)?;
        device.stream.synchronize().map_err(gpu_err)?;
        let mut transfer = upload.elapsed().as_secs_f64();
        let (outcome, compute) = timed_advance(
            &self.stencil,
            params,
            layout,
            &mut buffers.cur,
            &mut buffers.scratch,
            steps,
            &mut gpu_stencil::Alone,
        )?;
        let download = Instant::now();
        device
            .stream
            .memcpy_dtoh(&buffers.cur, self.grid.storage_mut())
            .map_err(gpu_err)?;
        device.stream.synchronize().map_err(gpu_err)?;
        transfer += download.elapsed().as_secs_f64();
        outcome.map(|()| Timing { compute, transfer })
    }
}

per_precision!(
    DeviceGrid,
    advance_device_f32,
    advance_device_f64,
    advance_on_device,
    None
);

/// Advances `grid` on the device by `steps` steps of the solver's GPU engine, with `hooks`
/// between passes and batches where given (a split grid's halo exchanges and the ranks'
/// agreement on the outcome).
pub(super) fn advance_on_device<'a, T: Real>(
    solver: &mut Solver,
    grid: &'a mut DeviceGrid<T>,
    steps: usize,
    hooks: Option<&'a mut dyn PassHooks<T>>,
) -> Result<RunReport> {
    let stencil = stencil_of(&solver.plan)?;
    needs_gpu_engine(solver.plan.engine())?;
    check_shape(&solver.plan, T::DTYPE, grid.dims())?;
    check_steps(steps)?;
    solver.dispatch(
        &mut OnDevice {
            stencil,
            grid,
            hooks,
        },
        steps,
    )
}

/// Checks that a grid in GPU memory gets a GPU engine.
fn needs_gpu_engine(engine: Engine) -> Result<()> {
    if engine.is_gpu() {
        Ok(())
    } else {
        Err(cpu_engine_on_device(engine))
    }
}

/// The error for a CPU engine asked to run a grid in GPU memory.
fn cpu_engine_on_device(engine: Engine) -> Error {
    Error::PlanMismatch(format!(
        "a grid in GPU memory needs a GPU engine, the plan uses '{engine}': download it first"
    ))
}

/// A grid in GPU memory with its stencil, and what runs between passes (nothing in one
/// process).
struct OnDevice<'a, T: Real> {
    stencil: Stencil,
    grid: &'a mut DeviceGrid<T>,
    hooks: Option<&'a mut dyn PassHooks<T>>,
}

impl<T: Real> Engines for OnDevice<'_, T> {
    fn reference(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        Err(cpu_engine_on_device(run.params.engine))
    }

    fn naive(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        Err(cpu_engine_on_device(run.params.engine))
    }

    fn blocked(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        Err(cpu_engine_on_device(run.params.engine))
    }

    fn gpu(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let layout = self.grid.layout;
        let (params, steps) = (run.params, run.steps);
        let mut alone = gpu_stencil::Alone;
        let hooks: &mut dyn PassHooks<T> = match self.hooks.as_deref_mut() {
            Some(h) => h,
            None => &mut alone,
        };
        // The ranks of a split run agree that each has its scratch and kernels before any
        // exchanges a halo.
        let stencil = &self.stencil;
        let ready = gpu::gpu().and_then(|device| {
            let scratch = run.scratch.take(
                |s: &GpuScratch<T>| s.layout == layout,
                || GpuScratch::new(device, layout, true),
            )?;
            gpu_stencil::prepare::<T>(device, stencil, params, layout, steps)?;
            Ok(scratch)
        });
        let mut scratch = gpu_stencil::agree_on(hooks, ready)?;
        let data = &mut self.grid.data;
        let ran = timed_advance(stencil, params, layout, data, &mut scratch, steps, hooks);
        run.scratch.keep(scratch);
        let (outcome, compute) = ran?;
        outcome.map(|()| Timing {
            compute,
            transfer: 0.0,
        })
    }
}

/// Compiles (or fetches) the kernels a GPU run needs, then advances `cur` by `steps` steps and
/// waits for the device: the run's own outcome and its seconds of computation, the one-time
/// compilation left out. The outer error is the device's (compilation, synchronisation).
fn timed_advance<T: Real>(
    stencil: &Stencil,
    params: &EngineParams,
    layout: Layout,
    cur: &mut CudaSlice<T>,
    scratch: &mut GpuScratch<T>,
    steps: usize,
    hooks: &mut dyn PassHooks<T>,
) -> Result<(Result<()>, f64)> {
    let device = gpu::gpu()?;
    gpu_stencil::prepare::<T>(device, stencil, params, layout, steps)?;
    let start = Instant::now();
    let outcome = stencil_run::advance(device, stencil, params, layout, cur, scratch, steps, hooks);
    device.stream.synchronize().map_err(gpu_err)?;
    Ok((outcome, start.elapsed().as_secs_f64()))
}
