//! A [`DistributedGrid`] as a solver state: halo exchanges between passes of the plan's
//! engine over each rank's local array, and one outcome agreed by all ranks.

use std::time::Instant;

use mpi::collective::SystemOperation;
use mpi::datatype::Equivalence;
use mpi::topology::Communicator;
use mpi::traits::{CommunicatorCollectives, Root};

use super::{check_shape, check_steps, stencil_of, Solver, State};
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
        let input = grid.local.find_non_finite().map(|(c, value)| {
            let [y0, z0] = [grid.block.local[0].start, grid.block.local[1].start];
            Error::NonFiniteInput {
                cell: [c[0], c[1] + y0, c[2] + z0],
                value,
            }
        });
        match (agree_on(grid, input.as_ref()), input) {
            (_, Some(e)) => return Err(e),
            (Some((rank, message)), None) => return Err(Error::RankFailed { rank, message }),
            (None, None) => {}
        }
        // The rank's own solver for its local array, kept in this solver between runs.
        let local_dims = grid.local.dims();
        let plan = &solver.plan;
        let mut local = solver.scratch.take(
            |s: &Solver| s.plan.dims() == local_dims && s.plan.engine() == plan.engine(),
            || Ok(Solver::new(plan.rebuild_for(local_dims).build()?)),
        )?;
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
        let outcome = local.run(&mut grid.local, n);
        let t = Instant::now();
        let failed = agree_on(grid, outcome.as_ref().err());
        comm_seconds += t.elapsed().as_secs_f64();
        match (outcome, failed) {
            (Err(e), _) => return Err(e.after_steps(done)),
            (Ok(_), Some((rank, message))) => return Err(Error::RankFailed { rank, message }),
            (Ok(r), None) => transfer += r.transfer_seconds,
        }
        done += n;
    }
    Ok((start.elapsed().as_secs_f64(), transfer, comm_seconds))
}

/// The lowest rank whose pass failed and its error's message, the same on every rank (`None`
/// when every rank succeeded).
fn agree_on<T: Real>(grid: &DistributedGrid<T>, error: Option<&Error>) -> Option<(usize, String)> {
    let me = grid.comm.rank();
    let mine = if error.is_some() { me } else { i32::MAX };
    let mut first = i32::MAX;
    grid.comm
        .all_reduce_into(&mine, &mut first, SystemOperation::min());
    if first == i32::MAX {
        return None;
    }
    let root = grid.comm.process_at_rank(first);
    let mut text = error
        .map(|e| e.to_string().into_bytes())
        .unwrap_or_default();
    let mut len = text.len() as u64;
    root.broadcast_into(&mut len);
    text.resize(len as usize, 0);
    root.broadcast_into(&mut text[..]);
    Some((first as usize, String::from_utf8_lossy(&text).into_owned()))
}
