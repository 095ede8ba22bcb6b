//! A [`DistributedGrid`] as a solver state: halo exchanges between passes of the plan's
//! engine over each rank's local array, and one outcome agreed by all ranks.

use std::time::Instant;

use mpi::datatype::Equivalence;
use mpi::topology::Communicator;

use super::grid::advance_grid;
use super::{check_shape, check_steps, stencil_of, Solver, State};
use crate::distributed::agree::agreed;
use crate::distributed::DistributedGrid;
use crate::{Error, Real, Result, RunReport};

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
        let ranks = grid.decomposition.ranks();
        if grid.comm.size() as usize != ranks {
            return Err(Error::PlanMismatch(format!(
                "the grid was split over {ranks} ranks, the communicator has {}",
                grid.comm.size()
            )));
        }
        // Non-finite input on any rank stops every rank before any computes.
        let input = grid
            .local
            .find_non_finite()
            .map(|(c, value)| Error::NonFiniteInput {
                cell: [c[0], grid.block.global(0, c[1]), grid.block.global(1, c[2])],
                value,
            });
        agreed(&grid.comm, input.map_or(Ok(()), Err))?;
        // The rank's own solver for its local array, kept in this solver between runs. Blocks
        // differ in size, so planning one can fail on some ranks only.
        let local_dims = grid.local.dims();
        let plan = &solver.plan;
        let local = solver.scratch.take(
            |s: &Solver| s.plan.dims() == local_dims && s.plan.engine() == plan.engine(),
            || Ok(Solver::new(plan.rebuild_for(local_dims).build()?)),
        );
        let mut local = agreed(&grid.comm, local)?;
        let outcome = passes(grid, &mut local, steps);
        solver.scratch.keep(local);
        let (seconds, transfer, comm_seconds) = outcome?;
        let mut report = RunReport::new(&solver.plan, steps, seconds - transfer, transfer);
        report.communication_seconds = comm_seconds;
        Ok(report)
    }
}

/// Runs `steps` steps on `grid` in passes of exchange and local run; returns the seconds in
/// all, those spent moving data to and from a GPU and those spent communicating.
fn passes<T: Real + Equivalence>(
    grid: &mut DistributedGrid<T>,
    local: &mut Solver,
    steps: usize,
) -> Result<(f64, f64, f64)> {
    let start = Instant::now();
    let (mut done, mut comm_seconds, mut transfer) = (0, 0.0, 0.0);
    while done < steps {
        let n = grid.steps_per_exchange.min(steps - done);
        let t = Instant::now();
        grid.exchange();
        comm_seconds += t.elapsed().as_secs_f64();
        // The input was scanned once before the first pass, and every later value is an
        // engine's output, which the engines check: no pass scans its input again.
        let outcome =
            advance_grid(local, &mut grid.local, n, false).map_err(|e| e.after_steps(done));
        let t = Instant::now();
        let report = agreed(&grid.comm, outcome)?;
        comm_seconds += t.elapsed().as_secs_f64();
        transfer += report.transfer_seconds;
        done += n;
    }
    Ok((start.elapsed().as_secs_f64(), transfer, comm_seconds))
}
