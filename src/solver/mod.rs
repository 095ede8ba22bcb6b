//! [`Solver`]: runs a [`Plan`] on the user's data — `Solver::new(plan).run(&mut grid, steps)` —
//! and reports how fast it went ([`RunReport`]). The solver checks the data against the plan,
//! then hands it to the one dispatch ([`dispatch`]) from the plan's engine to the engine code.

mod check;
mod concrete;
mod dispatch;
#[cfg(feature = "mpi")]
mod distributed;
mod grid;
mod lattice;
mod plane;
mod report;
mod scratch;
#[cfg(feature = "mpi")]
mod split_passes;
mod wave;

pub use report::RunReport;

use crate::runtime::float_mode::ThreadMode;
use crate::runtime::Workers;
use crate::tuning::Tuning;
use crate::{Error, Plan, Result, Stencil};
use check::Check;
use dispatch::{Engines, Run, Timing};
use scratch::Scratch;

/// Runs a plan. Threads and buffers are made on the first `run` and kept for later runs of the
/// same solver, so calling `run` repeatedly (e.g. between outputs) costs nothing extra.
///
/// A solver checks the planner's choice of CPU engine against the run: it measures the first
/// passes, and where the rate is far from the prediction, or another configuration is
/// predicted close, it runs a segment with the alternative and keeps the faster (see
/// [`RunReport::adapted`]). Results do not depend on this: the CPU engines compute the same
/// values. Plans whose engine or shape the user fixed run as given.
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
    workers: Workers,
    scratch: Scratch,
    check: Check,
    memory: Option<u64>,
    /// Whether the blocked CPU engines leave a failed pass at its input instead of replaying it
    /// (see `EngineParams::replay`): set on a rank's own solver in a split run.
    traced_by_ranks: bool,
}

impl Solver {
    /// A solver for `plan`; nothing is started until the first `run`.
    pub fn new(plan: Plan) -> Solver {
        Solver {
            check: Check::for_plan(&plan),
            plan,
            workers: Workers::default(),
            scratch: Scratch::default(),
            memory: None,
            traced_by_ranks: false,
        }
    }

    /// Checks runs against `bytes` of available host memory instead of the system's figure
    /// ([`crate::memory::available`]): a pretend machine for tests, or a share of this one
    /// left to other work. Runs may take [`crate::memory::USABLE_SHARE`] of it.
    pub fn available_memory(mut self, bytes: u64) -> Solver {
        self.memory = Some(bytes);
        self
    }

    /// The plan this solver runs (after a switch, the configuration it switched to).
    pub fn plan(&self) -> &Plan {
        &self.plan
    }

    /// Whether the solver is still checking its plan against the run (its next run may time
    /// an alternative for a segment, or switch to it).
    pub(crate) fn checking(&self) -> bool {
        self.check.active()
    }

    /// Advances `state` by `steps` time steps.
    ///
    /// Errors: a plan for another kernel, precision or size ([`Error::PlanMismatch`]), zero
    /// steps, non-finite input (nothing is computed and the data is untouched), or a value that
    /// becomes non-finite during the run ([`Error::NonFinite`]: the data then holds the last
    /// finite state and the error says which step failed). Before a run allocates its scratch
    /// (a second grid or population copy, ring buffers, device buffers) the whole footprint is
    /// checked against the memory available: [`Error::OutOfMemory`] or
    /// [`Error::GpuOutOfMemory`] names the largest cube that fits, and nothing is allocated.
    /// A run the plan predicts to last more than a year (or to count more cell updates than
    /// 64 bits hold) is refused with [`Error::InvalidArgument`] before it starts: run it in
    /// parts, with checkpoints in between.
    ///
    /// On x86-64 the CPU engines flush subnormal numbers to zero unless the tuning says
    /// otherwise ([`crate::tuning::Subnormals`]), and for the length of the run so does the
    /// calling thread; its own mode is restored when the run returns. A caller that is a
    /// worker of another rayon pool may take up that pool's jobs while it waits for the run,
    /// and those jobs then run in the same mode.
    pub fn run<S: State>(&mut self, state: &mut S, steps: usize) -> Result<RunReport> {
        if !S::SPLIT {
            self.plan.check_run_length(steps)?;
        }
        S::advance(self, state, steps)
    }

    /// Runs the plan's engine on `target` (already checked against the plan) and reports; while
    /// the plan is being checked, in segments (see [`Check`]).
    fn dispatch(&mut self, target: &mut impl Engines, steps: usize) -> Result<RunReport> {
        let (mut done, mut total) = (0, Timing::default());
        let mut adapted = None;
        while done < steps {
            let left = steps - done;
            let n = if self.check.active() {
                check::segment_steps(self.segment_plan()).min(left)
            } else {
                left
            };
            let timing = match self.run_segment(target, n) {
                // An alternative that does not fit is not tried; the plan runs on.
                Err(Error::OutOfMemory { .. }) if matches!(self.check, Check::Trial { .. }) => {
                    self.check = Check::Done;
                    continue;
                }
                other => other.map_err(|e| e.after_steps(done))?,
            };
            total.compute += timing.compute;
            total.transfer += timing.transfer;
            done += n;
            // Only segments of at least two passes are judged: a shorter run (a step at a time
            // between outputs) leaves the check where it stands; a cold one still warms up.
            let judged = n >= 2 * self.segment_plan().dim_t().max(1);
            if judged || matches!(self.check, Check::Cold) {
                if let Some(note) = self.advance_check(n, timing.compute) {
                    adapted = Some(note);
                }
            }
        }
        let mut report = RunReport::new(&self.plan, steps, total.compute, total.transfer);
        report.adapted = adapted;
        Ok(report)
    }

    /// The plan the next segment runs: the trial's alternative during a trial.
    fn segment_plan(&self) -> &Plan {
        match &self.check {
            Check::Trial { alt, .. } => alt,
            _ => &self.plan,
        }
    }

    /// Runs `steps` steps of the segment's plan on `target`. A CPU engine runs with the calling
    /// thread and the engines' threads in the floating-point mode the tuning asks for
    /// ([`crate::tuning::Subnormals`]); the calling thread's own mode is restored after.
    fn run_segment(&mut self, target: &mut impl Engines, steps: usize) -> Result<Timing> {
        let mut params = self.segment_plan().engine_params();
        params.replay = !self.traced_by_ranks;
        let ring_bytes = self.segment_plan().ring_bytes();
        let _mode = (!params.engine.is_gpu())
            .then(|| ThreadMode::set(Tuning::current().flushes_subnormals()));
        let mut run = Run {
            params: &params,
            workers: &mut self.workers,
            scratch: &mut self.scratch,
            steps,
            memory: self.memory,
            ring_bytes,
        };
        dispatch::dispatch(target, &mut run)
    }

    /// Moves the check on after a segment of `steps` steps that computed for `seconds`; returns
    /// the report's sentence when the check concluded.
    fn advance_check(&mut self, steps: usize, seconds: f64) -> Option<String> {
        let mups = self.plan.interior_cells() as f64 * steps as f64 / seconds.max(1e-12) / 1e6;
        match std::mem::take(&mut self.check) {
            Check::Cold => self.check = Check::Warm,
            Check::Warm => match check::decide(&self.plan, mups) {
                (Some(alt), why) => {
                    self.check = Check::Trial {
                        alt: Box::new(alt),
                        base_mups: mups,
                        why,
                    }
                }
                (None, why) => {
                    self.check = Check::Done;
                    let deviation = (mups / self.plan.predicted_mups() - 1.0).abs();
                    return (deviation > check::REPLAN_DEVIATION).then_some(why);
                }
            },
            Check::Trial {
                alt,
                base_mups,
                why,
            } => {
                let (switch, note) = check::conclude(&alt, mups, base_mups, &why);
                if switch {
                    self.plan = *alt;
                }
                self.check = Check::Done;
                return Some(note);
            }
            other => self.check = other,
        }
        None
    }
}

/// What a run may assume of the state it is given.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
// Only a split run (feature `mpi`) makes the variants past the first.
#[cfg_attr(not(feature = "mpi"), allow(dead_code))]
pub(crate) enum Input {
    /// A caller's state: scanned for non-finite values before anything is computed.
    Unchecked,
    /// The first pass of a split run, whose input the run scanned once for all passes.
    Scanned,
    /// A later pass of a split run: scanned, and its fixed boundary layer unchanged since the
    /// pass before (the cells that differ are halo cells, which the next exchange overwrites),
    /// so a second buffer kept from that pass still holds the boundary.
    Continued,
}

impl Input {
    /// Whether the run first scans its input for non-finite values.
    fn scan(self) -> bool {
        self == Input::Unchecked
    }
}

mod sealed {
    pub trait Sealed {}
    impl<T: crate::Real> Sealed for crate::Grid<T> {}
    impl<T: crate::Real> Sealed for crate::gpu::DeviceGrid<T> {}
    impl<T: crate::Real> Sealed for crate::lbm::Lattice<T> {}
    impl<T: crate::Real> Sealed for crate::Grid2<T> {}
    impl<T: crate::Real> Sealed for crate::wave::Wavefield<T> {}
    #[cfg(feature = "mpi")]
    impl<T: crate::Real> Sealed for crate::distributed::DistributedGrid<T> {}
    #[cfg(feature = "mpi")]
    impl<T: crate::Real> Sealed for crate::distributed::DistributedLattice<T> {}
    #[cfg(feature = "mpi")]
    impl<T: crate::Real> Sealed for crate::distributed::DistributedWavefield<T> {}
}

/// Data a [`Solver`] can advance in time: [`crate::Grid`] for stencils on any engine,
/// [`crate::gpu::DeviceGrid`] (a grid kept in GPU memory) for GPU engines,
/// [`crate::lbm::Lattice`] for lattice-Boltzmann flows, [`crate::Grid2`] for 2D kernels and
/// [`crate::wave::Wavefield`] for the wave equation; with the `mpi` feature,
/// `distributed::DistributedGrid`, `DistributedLattice` and `DistributedWavefield` for a
/// stencil grid, a lattice or a wavefield split over MPI ranks.
pub trait State: sealed::Sealed {
    /// Whether the state is split over MPI ranks: its run first checks that every rank passes
    /// the same plan and steps, then, with every rank agreeing on the outcome, the checks
    /// [`Solver::run`] makes before any run, which one rank could fail alone.
    const SPLIT: bool;
    /// Runs `steps` steps of the solver's plan on `state`.
    fn advance(solver: &mut Solver, state: &mut Self, steps: usize) -> Result<RunReport>;
}

/// The stencil a plan for a grid must carry.
fn stencil_of(plan: &Plan) -> Result<Stencil> {
    plan.kernel().stencil().cloned().ok_or_else(|| {
        Error::PlanMismatch(format!(
            "the plan is for {}, not for a stencil grid",
            plan.kernel()
        ))
    })
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

/// Checks that there are steps to run.
pub(crate) fn check_steps(steps: usize) -> Result<()> {
    if steps == 0 {
        return Err(Error::ZeroSteps);
    }
    Ok(())
}
