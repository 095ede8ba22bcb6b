//! A [`DistributedGrid`], [`DistributedLattice`] or [`DistributedWavefield`] as a solver state:
//! halo exchanges between passes of the plan's engine over each rank's local state, and one
//! outcome agreed by all ranks.

use std::time::Instant;

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};

use super::grid::advance_grid;
use super::lattice::advance_lattice;
use super::wave::advance_wave;
use super::{check_shape, check_steps, stencil_of, Solver, State};
use crate::distributed::agree::agreed;
use crate::distributed::{DistributedGrid, DistributedLattice, DistributedWavefield};
use crate::lbm::LbmKernel;
use crate::{Error, Kernel, Real, Result, RunReport};

impl<T: Real + Equivalence> State for DistributedGrid<T> {
    /// Every rank calls it with the same plan and steps. Each pass exchanges the halos and
    /// advances the local array by up to [`DistributedGrid::steps_per_exchange`] steps; after
    /// each pass the ranks agree on success, so an error on one rank (a non-finite value, say)
    /// stops every rank: that rank returns its error, the others [`Error::RankFailed`] naming
    /// it. Each rank's block then holds the step its engine reached.
    fn advance(solver: &mut Solver, grid: &mut Self, steps: usize) -> Result<RunReport> {
        stencil_of(&solver.plan)?;
        check_shape(&solver.plan, T::DTYPE, grid.dims())?;
        check_steps(steps)?;
        check_ranks(&grid.comm, grid.decomposition.ranks())?;
        // Non-finite input on any rank stops every rank before any computes.
        let input = grid
            .local
            .find_non_finite()
            .map(|(c, value)| Error::NonFiniteInput {
                cell: [c[0], grid.block.global(0, c[1]), grid.block.global(1, c[2])],
                value,
            });
        agreed(&grid.comm, input.map_or(Ok(()), Err))?;
        let (kernel, dims) = (solver.plan.kernel().clone(), grid.local.dims());
        run_split(solver, grid, kernel, dims, steps)
    }
}

impl<T: Real + Equivalence> State for DistributedLattice<T> {
    /// As for a [`DistributedGrid`]: the populations are checked once before the first pass,
    /// then passes of a halo exchange and up to `dim_t` steps of the plan's engine on each
    /// rank's local lattice, the ranks agreeing on the outcome after each.
    fn advance(solver: &mut Solver, lat: &mut Self, steps: usize) -> Result<RunReport> {
        let global = LbmKernel {
            periodic: lat.periodic,
            ..LbmKernel::of(&lat.local)
        };
        if solver.plan.kernel().lbm() != Some(&global) {
            return Err(Error::PlanMismatch(format!(
                "the plan is for {}, the lattice is {global}",
                solver.plan.kernel()
            )));
        }
        check_shape(&solver.plan, T::DTYPE, lat.dims())?;
        check_steps(steps)?;
        check_ranks(&lat.comm, lat.decomposition.ranks())?;
        crate::distributed::two_copies(&solver.plan)?;
        // Non-finite input on any rank stops every rank before any computes; later passes
        // start from engine outputs, which the engines check.
        let input = lat
            .local
            .pop
            .find_non_finite()
            .map(|(c, _, value)| Error::NonFiniteInput {
                cell: [c[0], lat.block.global(0, c[1]), lat.block.global(1, c[2])],
                value,
            });
        agreed(&lat.comm, input.map_or(Ok(()), Err))?;
        let kernel = Kernel::Lbm(LbmKernel::of(&lat.local));
        let dims = lat.local.dims();
        run_split(solver, lat, kernel, dims, steps)
    }
}

impl<T: Real + Equivalence> State for DistributedWavefield<T> {
    /// As for a [`DistributedGrid`]: passes of a halo exchange (both pressure levels and the
    /// auxiliary field) and up to `dim_t` steps of the plan's engine on each rank's local
    /// wavefield, the ranks agreeing on the outcome after each.
    fn advance(solver: &mut Solver, field: &mut Self, steps: usize) -> Result<RunReport> {
        let whole = Kernel::Wave(field.shared.kernel.clone());
        if solver.plan.kernel() != &whole {
            return Err(Error::PlanMismatch(format!(
                "the plan is for {}, the wavefield is {whole}",
                solver.plan.kernel()
            )));
        }
        check_shape(&solver.plan, T::DTYPE, field.dims())?;
        check_steps(steps)?;
        check_ranks(&field.comm, field.decomposition.ranks())?;
        let input = field
            .local
            .find_non_finite()
            .map(|(c, value)| Error::NonFiniteInput {
                cell: [
                    c[0],
                    field.block.global(0, c[1]),
                    field.block.global(1, c[2]),
                ],
                value,
            });
        agreed(&field.comm, input.map_or(Ok(()), Err))?;
        let (kernel, dims) = (
            Kernel::Wave(field.local.kernel().clone()),
            field.local.dims(),
        );
        run_split(solver, field, kernel, dims, steps)
    }
}

/// A state split over ranks: its communicator, halo exchange and local state.
trait Split {
    fn comm(&self) -> &SimpleCommunicator;
    fn steps_per_exchange(&self) -> usize;
    fn exchange(&mut self);
    /// Advances the local state by `n` steps with the rank's solver.
    fn advance_local(&mut self, solver: &mut Solver, n: usize) -> Result<RunReport>;
}

/// [`Split`] for a distributed state whose fields `comm`, `steps_per_exchange` and `local` are
/// its communicator, pass length and local state, and whose local state `$advance` runs.
macro_rules! split_state {
    ($state:ident, $advance:ident) => {
        impl<T: Real + Equivalence> Split for $state<T> {
            fn comm(&self) -> &SimpleCommunicator {
                &self.comm
            }
            fn steps_per_exchange(&self) -> usize {
                self.steps_per_exchange
            }
            fn exchange(&mut self) {
                $state::exchange(self);
            }
            /// The input was scanned once before the first pass, and every later value is an
            /// engine's output, which the engines check: no pass scans its input again.
            fn advance_local(&mut self, solver: &mut Solver, n: usize) -> Result<RunReport> {
                $advance(solver, &mut self.local, n, false)
            }
        }
    };
}

split_state!(DistributedGrid, advance_grid);
split_state!(DistributedLattice, advance_lattice);
split_state!(DistributedWavefield, advance_wave);

/// Errors unless the communicator has the ranks the state was split over.
fn check_ranks(comm: &SimpleCommunicator, ranks: usize) -> Result<()> {
    if comm.size() as usize == ranks {
        Ok(())
    } else {
        Err(Error::PlanMismatch(format!(
            "the state was split over {ranks} ranks, the communicator has {}",
            comm.size()
        )))
    }
}

/// Runs `steps` steps of a split state with the rank's own solver for its local state: the
/// plan's choices for `kernel` on `dims` (kept in `solver` between runs). Blocks differ in
/// size, so planning one can fail on some ranks only.
fn run_split<S: Split>(
    solver: &mut Solver,
    state: &mut S,
    kernel: Kernel,
    dims: [usize; 3],
    steps: usize,
) -> Result<RunReport> {
    let engine = solver.plan.engine();
    let plan = &solver.plan;
    let built = solver.scratch.take(
        |s: &Solver| {
            s.plan.dims() == dims && s.plan.kernel() == &kernel && s.plan.engine() == engine
        },
        || {
            Ok(Solver::new(
                plan.rebuild_for_kernel(kernel.clone(), dims).build()?,
            ))
        },
    );
    let mut local = agreed(state.comm(), built)?;
    let outcome = passes(state, &mut local, steps);
    solver.scratch.keep(local);
    let (seconds, transfer, comm_seconds) = outcome?;
    let mut report = RunReport::new(&solver.plan, steps, seconds - transfer, transfer);
    report.communication_seconds = comm_seconds;
    Ok(report)
}

/// Runs `steps` steps on `state` in passes of exchange and local run; returns the seconds in
/// all, those spent moving data to and from a GPU and those spent communicating.
fn passes<S: Split>(state: &mut S, local: &mut Solver, steps: usize) -> Result<(f64, f64, f64)> {
    let start = Instant::now();
    let (mut done, mut comm_seconds, mut transfer) = (0, 0.0, 0.0);
    while done < steps {
        let n = state.steps_per_exchange().min(steps - done);
        let t = Instant::now();
        state.exchange();
        comm_seconds += t.elapsed().as_secs_f64();
        let outcome = state
            .advance_local(local, n)
            .map_err(|e| e.after_steps(done));
        let t = Instant::now();
        let report = agreed(state.comm(), outcome)?;
        comm_seconds += t.elapsed().as_secs_f64();
        transfer += report.transfer_seconds;
        done += n;
    }
    Ok((start.elapsed().as_secs_f64(), transfer, comm_seconds))
}
