//! [`Solver`]: runs a [`Plan`] on the user's data — `Solver::new(plan).run(&mut grid, steps)` —
//! and reports how fast it went.

use std::any::Any;
use std::time::Instant;

use serde::Serialize;

use cudarc::driver::CudaSlice;

use crate::cpu::{self, CpuWorkers};
use crate::gpu::{self, stencil::Layout, DeviceGrid};
use crate::lbm::{self, Lattice, LbmKernel, Populations};
use crate::plan::Engine;
use crate::{Error, Grid, Plan, Real, Result, Stencil};

/// What a run did and how fast.
#[derive(Clone, Debug, Serialize)]
pub struct RunReport {
    /// Engine that ran.
    pub engine: Engine,
    /// Time steps advanced.
    pub steps: usize,
    /// Seconds of computation (the rates below are per this time); GPU runs on a host grid
    /// spend `transfer_seconds` more copying the grid to the device and back, and a GPU
    /// kernel's one-time compilation (on its first use in the process) is not counted.
    pub seconds: f64,
    /// Seconds spent copying data between host and device (0 for CPU engines and for grids
    /// resident on the GPU).
    pub transfer_seconds: f64,
    /// Cell updates performed (interior cells × steps).
    pub updates: u64,
    /// Million cell updates per second.
    pub mups: f64,
    /// Floating-point throughput, 10⁹ flop/s.
    pub gflops: f64,
    /// Effective bandwidth: the traffic an unblocked sweep would need for the same updates (one
    /// read and one write of each value per step), 10⁹ bytes/s. Blocked engines exceed the
    /// memory bandwidth here by design.
    pub effective_gbs: f64,
    /// The model's prediction for this plan, MUPS.
    pub predicted_mups: f64,
    /// The plan that ran.
    pub plan: Plan,
}

impl RunReport {
    fn new(plan: &Plan, steps: usize, seconds: f64, transfer_seconds: f64) -> Self {
        let cost = plan.kernel().cost(plan.dtype());
        let updates = plan.interior_cells() * steps as u64;
        let per_sec = updates as f64 / seconds.max(1e-12);
        RunReport {
            engine: plan.engine(),
            steps,
            seconds,
            transfer_seconds,
            updates,
            mups: per_sec / 1e6,
            gflops: per_sec * cost.flops_per_update as f64 / 1e9,
            effective_gbs: per_sec * cost.bytes_per_update as f64 / 1e9,
            predicted_mups: plan.predicted_mups(),
            plan: plan.clone(),
        }
    }
}

impl std::fmt::Display for RunReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {} steps in {:.3} s: {:.0} MUPS, {:.1} GFLOP/s, {:.1} GB/s effective (model: {:.0} MUPS)",
            self.engine, self.steps, self.seconds, self.mups, self.gflops, self.effective_gbs, self.predicted_mups
        )
    }
}

/// Runs a plan. Threads and buffers are made on the first `run` and kept for later runs of the
/// same solver, so calling `run` repeatedly (e.g. between outputs) costs nothing extra.
///
/// ```
/// use stencil35d::{Grid, Plan, Solver, Stencil};
/// let stencil = Stencil::seven_point(0.4, 0.1);
/// let mut grid = Grid::<f32>::random([40, 30, 20], 0.0, 1.0, 7).unwrap();
/// let plan = Plan::for_grid(&stencil, &grid).unwrap();
/// let report = Solver::new(plan).run(&mut grid, 10).unwrap();
/// assert_eq!(report.steps, 10);
/// ```
pub struct Solver {
    plan: Plan,
    workers: CpuWorkers,
    scratch: Option<Box<dyn Any + Send>>,
}

impl Solver {
    /// A solver for `plan`; nothing is started until the first `run`.
    pub fn new(plan: Plan) -> Solver {
        Solver {
            plan,
            workers: CpuWorkers::default(),
            scratch: None,
        }
    }

    /// The plan this solver runs.
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Advances `state` by `steps` time steps.
    ///
    /// Errors: a plan for another kernel, precision or size ([`Error::PlanMismatch`]), zero
    /// steps, non-finite input (nothing is computed and the data is untouched), or a value that
    /// becomes non-finite during the run ([`Error::NonFinite`]: the data then holds the last
    /// finite state and the error says which step failed).
    pub fn run<S: State>(&mut self, state: &mut S, steps: usize) -> Result<RunReport> {
        S::advance(self, state, steps)
    }

    /// The scratch buffer of type `B` kept between runs, made by `make` when missing or when
    /// `fits` rejects the kept one.
    fn scratch<B: Any + Send>(
        &mut self,
        fits: impl Fn(&B) -> bool,
        make: impl FnOnce() -> Result<B>,
    ) -> Result<&mut B> {
        let keep = self
            .scratch
            .as_ref()
            .and_then(|s| s.downcast_ref::<B>())
            .is_some_and(&fits);
        if !keep {
            self.scratch = None; // free the old buffer before allocating the new one
            self.scratch = Some(Box::new(make()?));
        }
        Ok(self
            .scratch
            .as_mut()
            .and_then(|s| s.downcast_mut::<B>())
            .expect("stored above"))
    }
}

mod sealed {
    pub trait Sealed {}
    impl<T: crate::Real> Sealed for crate::Grid<T> {}
    impl<T: crate::Real> Sealed for crate::gpu::DeviceGrid<T> {}
    impl<T: crate::Real> Sealed for crate::lbm::Lattice<T> {}
}

/// Data a [`Solver`] can advance in time: [`Grid`] for stencils on any engine,
/// [`DeviceGrid`] (a grid kept in GPU memory) for GPU engines, and [`Lattice`] for
/// lattice-Boltzmann flows.
pub trait State: sealed::Sealed {
    /// Runs `steps` steps of the solver's plan on `state`.
    fn advance(solver: &mut Solver, state: &mut Self, steps: usize) -> Result<RunReport>;
}

/// The stencil a plan for a grid must carry.
fn stencil_of(plan: &Plan) -> Result<&Stencil> {
    plan.kernel().stencil().ok_or_else(|| {
        Error::PlanMismatch(format!(
            "the plan is for {}, not for a stencil grid",
            plan.kernel()
        ))
    })
}

impl<T: Real> State for Grid<T> {
    fn advance(solver: &mut Solver, grid: &mut Self, steps: usize) -> Result<RunReport> {
        let plan = solver.plan.clone();
        let stencil = stencil_of(&plan)?;
        check_shape(&plan, T::DTYPE, grid.dims())?;
        if steps == 0 {
            return Err(Error::ZeroSteps);
        }
        // The scan runs on the plan's threads, not on every core of the machine.
        let pool = solver.workers.pool(plan.threads())?;
        if let Some((cell, value)) = pool.install(|| grid.find_non_finite()) {
            return Err(Error::NonFiniteInput { cell, value });
        }
        if plan.engine().is_gpu() {
            return run_gpu_host(solver, &plan, stencil, grid, steps);
        }
        let start = Instant::now();
        let r = stencil.radius();
        let scratch = solver.scratch(
            |s: &Grid<T>| s.dims() == grid.dims(),
            || Grid::<T>::new(grid.dims()),
        )?;
        scratch.copy_boundary_from(grid, r);
        let mut scratch_grid = std::mem::replace(scratch, Grid::new([1, 1, 1])?);
        let outcome = cpu::run_stencil(&plan, &mut solver.workers, grid, &mut scratch_grid, steps);
        *solver.scratch(|_: &Grid<T>| true, || unreachable!("kept above"))? = scratch_grid;
        outcome?;
        Ok(RunReport::new(
            &plan,
            steps,
            start.elapsed().as_secs_f64(),
            0.0,
        ))
    }
}

/// Device buffers for GPU runs on host grids: the state uploaded for the run, and the scratch.
struct HostRunBuffers<T: Real> {
    cur: CudaSlice<T>,
    scratch: gpu::stencil::Scratch<T>,
}

/// Uploads `grid`, runs the plan on the GPU and downloads the result (also the last finite
/// state when a value blows up); transfers are timed apart from the computation.
fn run_gpu_host<T: Real>(
    solver: &mut Solver,
    plan: &Plan,
    stencil: &Stencil,
    grid: &mut Grid<T>,
    steps: usize,
) -> Result<RunReport> {
    let device = gpu::gpu()?;
    let layout = Layout {
        dims: grid.dims(),
        pitch: grid.pitch(),
        plane: grid.plane_stride(),
    };
    let bytes = layout.len() * std::mem::size_of::<T>();
    let buffers = solver.scratch(
        |b: &HostRunBuffers<T>| b.scratch.layout == layout,
        || {
            let scratch = gpu::stencil::Scratch::new(device, layout, bytes)?;
            let cur = device
                .stream
                .alloc_zeros::<T>(layout.len())
                .map_err(gpu::stencil::gpu_err)?;
            Ok(HostRunBuffers { cur, scratch })
        },
    )?;
    let upload = Instant::now();
    device
        .stream
        .memcpy_htod(grid.storage(), &mut buffers.cur)
        .map_err(gpu::stencil::gpu_err)?;
    device.stream.synchronize().map_err(gpu::stencil::gpu_err)?;
    let mut transfer = upload.elapsed().as_secs_f64();
    // The one-time kernel compilation is not computation.
    gpu::stencil::prepare::<T>(device, stencil, plan.chosen(), steps)?;
    let start = Instant::now();
    let outcome = gpu::stencil::advance(
        device,
        stencil,
        plan.chosen(),
        layout,
        &mut buffers.cur,
        &mut buffers.scratch,
        steps,
    );
    device.stream.synchronize().map_err(gpu::stencil::gpu_err)?;
    let compute = start.elapsed().as_secs_f64();
    let download = Instant::now();
    device
        .stream
        .memcpy_dtoh(&buffers.cur, grid.storage_mut())
        .map_err(gpu::stencil::gpu_err)?;
    device.stream.synchronize().map_err(gpu::stencil::gpu_err)?;
    transfer += download.elapsed().as_secs_f64();
    outcome?;
    Ok(RunReport::new(plan, steps, compute, transfer))
}

impl<T: Real> State for DeviceGrid<T> {
    fn advance(solver: &mut Solver, grid: &mut Self, steps: usize) -> Result<RunReport> {
        let plan = solver.plan.clone();
        let stencil = stencil_of(&plan)?;
        if !plan.engine().is_gpu() {
            return Err(Error::PlanMismatch(format!(
                "a grid in GPU memory needs a GPU engine, the plan uses '{}': download it first",
                plan.engine()
            )));
        }
        check_shape(&plan, T::DTYPE, grid.dims())?;
        if steps == 0 {
            return Err(Error::ZeroSteps);
        }
        let device = gpu::gpu()?;
        let layout = grid.layout;
        let scratch = solver.scratch(
            |s: &gpu::stencil::Scratch<T>| s.layout == layout,
            || gpu::stencil::Scratch::new(device, layout, 0),
        )?;
        // The one-time kernel compilation is not computation.
        gpu::stencil::prepare::<T>(device, stencil, plan.chosen(), steps)?;
        let start = Instant::now();
        let outcome = gpu::stencil::advance(
            device,
            stencil,
            plan.chosen(),
            layout,
            &mut grid.data,
            scratch,
            steps,
        );
        device.stream.synchronize().map_err(gpu::stencil::gpu_err)?;
        outcome?;
        Ok(RunReport::new(
            &plan,
            steps,
            start.elapsed().as_secs_f64(),
            0.0,
        ))
    }
}

impl<T: Real> State for Lattice<T> {
    /// Errors besides the stencil ones: a plan for another periodicity or forcing
    /// ([`Error::PlanMismatch`]), a lattice [`Lattice::validate`] rejects, non-finite populations
    /// (nothing is computed). After a blow-up the lattice holds the last finite state and its
    /// step count matches it.
    fn advance(solver: &mut Solver, lat: &mut Self, steps: usize) -> Result<RunReport> {
        let plan = solver.plan.clone();
        let kernel = *plan.kernel().lbm().ok_or_else(|| {
            Error::PlanMismatch(format!(
                "the plan is for {}, not for a lattice-Boltzmann lattice",
                plan.kernel()
            ))
        })?;
        check_shape(&plan, T::DTYPE, lat.dims())?;
        let wanted = LbmKernel::of(lat);
        if kernel != wanted {
            return Err(Error::PlanMismatch(format!(
                "the plan is for a {kernel} lattice, this one is {wanted}: make the plan with \
                 Plan::for_lattice"
            )));
        }
        if steps == 0 {
            return Err(Error::ZeroSteps);
        }
        lat.validate()?;
        let pool = solver.workers.pool(plan.threads())?;
        if let Some((cell, _, value)) = pool.install(|| lat.pop.find_non_finite()) {
            return Err(Error::NonFiniteInput { cell, value });
        }
        let dims = lat.dims();
        if plan.engine().is_gpu() {
            let device = gpu::gpu()?;
            let in_place = plan.in_place();
            let buffers = solver.scratch(
                |b: &gpu::lbm::LbmBuffers<T>| b.fits(dims, in_place),
                || gpu::lbm::LbmBuffers::new(device, lat, in_place),
            )?;
            let (compute, transfer) = gpu::lbm::run(device, plan.engine(), lat, buffers, steps)?;
            return Ok(RunReport::new(&plan, steps, compute, transfer));
        }
        let start = Instant::now();
        let scratch = solver.scratch(
            |s: &Populations<T>| s.layout().dims == dims,
            || Populations::<T>::new(dims),
        )?;
        let mut second = std::mem::replace(scratch, Populations::new([1, 1, 1])?);
        let outcome = lbm::run::run(&plan, &mut solver.workers, lat, &mut second, steps);
        *solver.scratch(|_: &Populations<T>| true, || unreachable!("kept above"))? = second;
        outcome?;
        Ok(RunReport::new(
            &plan,
            steps,
            start.elapsed().as_secs_f64(),
            0.0,
        ))
    }
}

/// Checks that a plan was made for this precision and size.
pub(crate) fn check_shape(plan: &Plan, dtype: crate::DType, dims: [usize; 3]) -> Result<()> {
    if plan.dtype() != dtype {
        return Err(Error::PlanMismatch(format!(
            "the plan is for {} data, the grid holds {dtype}",
            plan.dtype()
        )));
    }
    if plan.dims() != dims {
        let [a, b, c] = plan.dims();
        return Err(Error::PlanMismatch(format!(
            "the plan is for a {a}x{b}x{c} grid, the data is {}x{}x{}",
            dims[0], dims[1], dims[2]
        )));
    }
    Ok(())
}
