//! A [`DistributedGrid`], [`DistributedLattice`] or [`DistributedWavefield`] as a solver state:
//! halo exchanges between passes of the plan's engine over each rank's local state, and one
//! outcome agreed by all ranks.

use std::time::Instant;

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};

use super::concrete::per_precision;
use super::grid::advance_on_device;
use super::split_passes::{local_solver, run_split};
use super::wave::advance_wave_on_device;
use super::{check_shape, check_steps, stencil_of, Solver, State};
use crate::distributed::agree::{agreed, common_step, fingerprint, same_everywhere};
use crate::distributed::on_device::{Cut, DeviceHalos, HaloElem, LatticeHalos, SplitHooks};
use crate::distributed::owned_local;
use crate::distributed::{DistributedGrid, DistributedLattice, DistributedWavefield};
use crate::gpu::lbm::LbmBuffers;
use crate::gpu::lbm_split::{codes, native, run_split as run_split_lattice, Stored};
use crate::gpu::regions::RowBox;
use crate::gpu::DeviceGrid;
use crate::lbm::LbmKernel;
use crate::{Error, Kernel, Real, Result, RunReport};

per_precision!(
    split;
    /// Every rank calls it with the same plan and steps. Each pass exchanges the halos and
    /// advances the local array by up to [`DistributedGrid::steps_per_exchange`] steps; after
    /// each pass the ranks agree on success, so an error on one rank (a non-finite value, say)
    /// stops every rank: that rank returns its error, the others [`Error::RankFailed`] naming
    /// it. Every block then holds the same step, after a non-finite value the last finite one
    /// (see [`DistributedGrid::steps`]).
    DistributedGrid,
    advance_split_grid_f32,
    advance_split_grid_f64,
    advance_split_grid
);

/// [`State::advance`] for a split grid.
fn advance_split_grid<T: Real + Equivalence>(
    solver: &mut Solver,
    grid: &mut DistributedGrid<T>,
    steps: usize,
) -> Result<RunReport> {
    same_run(&grid.comm, &solver.plan, steps)?;
    common_step(&grid.comm, grid.steps, "grid")?;
    let stencil = stencil_of(&solver.plan)?;
    check_shape(&solver.plan, T::DTYPE, grid.dims())?;
    check_steps(steps)?;
    check_ranks(&grid.comm, grid.decomposition.ranks())?;
    let needed = stencil.radius() * grid.steps_per_exchange;
    if needed > grid.decomposition.halo {
        return Err(Error::PlanMismatch(format!(
            "the grid was split with halos of {} cells, and this plan's radius {} needs {needed} \
             for its {} steps per exchange: split the grid with this plan",
            grid.decomposition.halo,
            stencil.radius(),
            grid.steps_per_exchange
        )));
    }
    // Non-finite input on any rank stops every rank before any computes. Only owned cells
    // count: the exchange refreshes what a pass reads of the halos.
    let owned = owned_local(&grid.block);
    let input = grid
        .local
        .find_non_finite_in(owned)
        .map(|(c, value)| Error::NonFiniteInput {
            cell: [c[0], grid.block.global(0, c[1]), grid.block.global(1, c[2])],
            value,
        });
    agreed(&grid.comm, input.map_or(Ok(()), Err))?;
    let (kernel, dims) = (solver.plan.kernel().clone(), grid.local.dims());
    if solver.plan.engine().is_gpu() {
        return run_on_device(solver, grid, kernel, dims, steps);
    }
    run_split(solver, grid, kernel, dims, steps)
}

/// Runs a split grid on the ranks' GPUs: each rank uploads its local array once, its engine
/// queues a halo exchange between the devices before each pass without waiting for the host,
/// the ranks agree on the outcome once per batch of passes, and the array comes back at the
/// end (also after a non-finite value that the ranks traced back, holding the last finite
/// state; after any other failure the host array keeps the run's input). The two copies count
/// as transfers.
fn run_on_device<T: Real + Equivalence>(
    solver: &mut Solver,
    grid: &mut DistributedGrid<T>,
    kernel: Kernel,
    dims: [usize; 3],
    steps: usize,
) -> Result<RunReport> {
    let mut halos = DeviceHalos::kept_or_open(&mut grid.device, &grid.comm)?;
    let upload = Instant::now();
    let data = agreed(&grid.comm, DeviceGrid::upload_scanned(&grid.local));
    let mut transfer = upload.elapsed().as_secs_f64();
    let outcome = data.and_then(|mut data| {
        // The engine exchanges before each of its passes: they must be the halo's depth.
        let dim_t = Some(grid.steps_per_exchange);
        let mut local = local_solver(solver, &grid.comm, kernel, dims, dim_t)?;
        let l = data.layout;
        let layout = RowBox::layout(l.pitch, l.dims[1], l.plane, 0, 1);
        let (c, d, b) = (&grid.comm, &grid.decomposition, &grid.block);
        // The host array keeps the run's input until the download: a failure is traced from it.
        let mut hooks = SplitHooks::new(c, d, b, (layout, Cut::Whole), &mut halos)
            .with_input(grid.local.storage());
        let ran = advance_on_device(&mut local, &mut data, steps, Some(&mut hooks));
        let communication = hooks.communication_seconds();
        let traced = hooks.traced();
        drop(hooks);
        solver.scratch.keep(local);
        let download = Instant::now();
        // A block the run did not leave at a step (a failure no trace brought back to the
        // last finite step, a device error) keeps the run's input.
        let settled = ran.is_ok() || traced.is_some();
        let back = match settled {
            true => data.download_into(&mut grid.local),
            false => Ok(()),
        };
        transfer += download.elapsed().as_secs_f64();
        // A download that failed may have left the host array part written.
        grid.steps = match &back {
            Ok(()) => steps_after(grid.steps, steps, ran.is_ok(), traced),
            Err(_) => None,
        };
        let mut report = agreed(&grid.comm, back.and(ran))?;
        report.communication_seconds = communication;
        Ok(report)
    });
    grid.device = Some(halos);
    let local = outcome?;
    let mut report = RunReport::new(&solver.plan, steps, local.seconds, transfer);
    report.communication_seconds = local.communication_seconds;
    Ok(report)
}

/// The steps a split grid's block holds after a run of `steps` steps on its GPU from
/// `before`, given whether the run succeeded and, after a failure every rank traced back, the
/// steps of the run they hold: any other failure leaves the block as it was.
fn steps_after(before: Option<u64>, steps: usize, ran: bool, traced: Option<usize>) -> Option<u64> {
    match (ran, traced) {
        (true, _) => before.map(|b| b + steps as u64),
        (false, Some(held)) => before.map(|b| b + held as u64),
        (false, None) => before,
    }
}

per_precision!(
    split;
    /// As for a [`DistributedGrid`]: the populations are checked once before the first pass,
    /// then passes of a halo exchange and up to `dim_t` steps of the plan's engine on each
    /// rank's local lattice, the ranks agreeing on the outcome after each.
    DistributedLattice,
    advance_split_lattice_f32,
    advance_split_lattice_f64,
    advance_split_lattice
);

/// [`State::advance`] for a split lattice.
fn advance_split_lattice<T: Real + Equivalence>(
    solver: &mut Solver,
    lat: &mut DistributedLattice<T>,
    steps: usize,
) -> Result<RunReport> {
    same_run(&lat.comm, &solver.plan, steps)?;
    common_step(&lat.comm, Some(lat.local.steps()), "lattice")?;
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
    // start from engine outputs, which the engines check. Only owned nodes count: the
    // exchange refreshes what a pass reads of the halos.
    let owned = owned_local(&lat.block);
    let input = lat
        .local
        .pop
        .find_non_finite_in(owned)
        .map(|(c, _, value)| Error::NonFiniteInput {
            cell: [c[0], lat.block.global(0, c[1]), lat.block.global(1, c[2])],
            value,
        });
    agreed(&lat.comm, input.map_or(Ok(()), Err))?;
    if solver.plan.engine().is_gpu() {
        return run_lattice_on_device(solver, lat, steps);
    }
    let kernel = Kernel::Lbm(LbmKernel::of(&lat.local));
    let dims = lat.local.dims();
    run_split(solver, lat, kernel, dims, steps)
}

/// Runs a split lattice on the ranks' GPUs (gpu-naive, two copies): each rank uploads its
/// local lattice once, a halo exchange between the devices (of the populations, or of their
/// codes in 16-bit storage) precedes each pass, the ranks agree on each batch's outcome, and
/// the populations come back at the end (also after a failure, at the last finite state). The
/// copies count as transfers.
fn run_lattice_on_device<T: Real + Equivalence>(
    solver: &mut Solver,
    lat: &mut DistributedLattice<T>,
    steps: usize,
) -> Result<RunReport> {
    let gpu = agreed(&lat.comm, crate::gpu::gpu())?;
    let (dims, storage) = (lat.local.dims(), lat.local.storage());
    let bufs = match lat.device_lattice.take() {
        Some(b) if b.fits(dims, false, storage) => Ok(b),
        _ => LbmBuffers::new(gpu, &lat.local, false),
    };
    let mut bufs = agreed(&lat.comm, bufs)?;
    let ran = if storage.is_16_bit() {
        let halos: KeptHalos<T, u16> = (LatticeHalos::codes, LatticeHalos::Codes);
        split_lattice_run(lat, &mut bufs, steps, codes, halos)
    } else {
        let halos: KeptHalos<T, T> = (LatticeHalos::native, LatticeHalos::Native);
        split_lattice_run(lat, &mut bufs, steps, native, halos)
    };
    lat.device_lattice = Some(bufs);
    let (compute, transfer, communication) = ran?;
    let mut report = RunReport::new(&solver.plan, steps, compute, transfer);
    report.communication_seconds = communication;
    Ok(report)
}

/// The run of [`run_lattice_on_device`] with halos of elements `E` (reached through
/// `stored`), kept in the lattice between runs as `wrap` makes them and `unwrap` finds them:
/// seconds of computation, of transfers and of communication.
fn split_lattice_run<T: Real + Equivalence, E: HaloElem>(
    lat: &mut DistributedLattice<T>,
    bufs: &mut LbmBuffers<T>,
    steps: usize,
    stored: Stored<T, E>,
    (unwrap, wrap): KeptHalos<T, E>,
) -> Result<(f64, f64, f64)> {
    let mut kept = lat.device.take().and_then(unwrap);
    let mut halos = DeviceHalos::kept_or_open(&mut kept, &lat.comm)?;
    let ran = run_with_halos(lat, bufs, steps, stored, &mut halos);
    lat.device = Some(wrap(halos));
    ran
}

/// How a split lattice keeps its halos of elements `E`: taken out of, and put into, its
/// [`LatticeHalos`].
type KeptHalos<T, E> = (
    fn(LatticeHalos<T>) -> Option<DeviceHalos<E>>,
    fn(DeviceHalos<E>) -> LatticeHalos<T>,
);

/// [`split_lattice_run`] with the halos open.
fn run_with_halos<T: Real + Equivalence, E: HaloElem>(
    lat: &mut DistributedLattice<T>,
    bufs: &mut LbmBuffers<T>,
    steps: usize,
    stored: Stored<T, E>,
    halos: &mut DeviceHalos<E>,
) -> Result<(f64, f64, f64)> {
    let gpu = crate::gpu::gpu()?;
    let l = *lat.local.layout();
    let layout = RowBox::layout(l.pitch, l.dims[1], l.plane, l.array, crate::lbm::Q);
    let (c, d, b) = (&lat.comm, &lat.decomposition, &lat.block);
    let mut hooks = SplitHooks::new(c, d, b, (layout, Cut::Lattice), halos);
    let pass = (steps, lat.steps_per_exchange);
    let ran = run_split_lattice(gpu, &mut lat.local, bufs, pass, stored, &mut hooks);
    let communication = hooks.communication_seconds();
    ran.map(|(compute, transfer)| (compute, transfer, communication))
}

per_precision!(
    split;
    /// As for a [`DistributedGrid`]: passes of a halo exchange (both pressure levels and the
    /// auxiliary field, `u` alone before a one-step pass) and up to `dim_t` steps of the
    /// plan's engine on each rank's local wavefield, the ranks agreeing on the outcome after
    /// each.
    DistributedWavefield,
    advance_split_wave_f32,
    advance_split_wave_f64,
    advance_split_wave
);

/// [`State::advance`] for a split wavefield.
fn advance_split_wave<T: Real + Equivalence>(
    solver: &mut Solver,
    field: &mut DistributedWavefield<T>,
    steps: usize,
) -> Result<RunReport> {
    same_run(&field.comm, &solver.plan, steps)?;
    common_step(&field.comm, Some(field.local.step() as u64), "wavefield")?;
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
    // Only owned cells count: the exchange refreshes what a pass reads of the halos.
    let owned = owned_local(&field.block);
    let input = field
        .local
        .find_non_finite_in(owned)
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
    if solver.plan.engine().is_gpu() {
        return run_wave_on_device(solver, field, kernel, dims, steps);
    }
    run_split(solver, field, kernel, dims, steps)
}

/// Runs a split wavefield on the ranks' GPUs: each rank's engine uploads its local field once
/// for the run, queues a halo exchange between the devices before each pass (beside its
/// interior for gpu-blocked; of `u` alone before a one-step pass), the ranks agree on each
/// batch's outcome, and the field comes back at the end.
fn run_wave_on_device<T: Real + Equivalence>(
    solver: &mut Solver,
    field: &mut DistributedWavefield<T>,
    kernel: Kernel,
    dims: [usize; 3],
    steps: usize,
) -> Result<RunReport> {
    let mut halos = DeviceHalos::kept_or_open(&mut field.device, &field.comm)?;
    let dim_t = Some(field.steps_per_exchange);
    let local = local_solver(solver, &field.comm, kernel, dims, dim_t);
    let outcome = local.and_then(|mut local| {
        let u = &field.local.u;
        let layout = RowBox::layout(u.pitch(), u.dims()[1], u.plane_stride(), 0, 1);
        let (c, d, b) = (&field.comm, &field.decomposition, &field.block);
        let mut hooks = SplitHooks::new(c, d, b, (layout, Cut::Whole), &mut halos);
        let ran = advance_wave_on_device(&mut local, &mut field.local, steps, &mut hooks);
        let communication = hooks.communication_seconds();
        solver.scratch.keep(local);
        let mut report = agreed(&field.comm, ran)?;
        report.communication_seconds = communication;
        Ok(report)
    });
    field.device = Some(halos);
    let local = outcome?;
    let mut report = RunReport::new(&solver.plan, steps, local.seconds, local.transfer_seconds);
    report.communication_seconds = local.communication_seconds;
    Ok(report)
}

/// `Ok` when every rank passes the same plan and steps, else [`Error::PlanMismatch`] on every
/// rank: their exchanges would not pair up. Then the checks [`Solver::run`] makes for a state
/// in one process, their outcome agreed by the ranks. Collective, so it comes before any check
/// that one rank could fail alone (with one plan and one state everywhere, the later checks
/// fail on every rank or none).
fn same_run(comm: &SimpleCommunicator, plan: &crate::Plan, steps: usize) -> Result<()> {
    let run = fingerprint(plan) ^ (steps as u64).rotate_left(32);
    same_everywhere(comm, "the plan and the steps of this run", run)?;
    // The run's length and the plan's threads for this host, which ranks on other hosts
    // may see differently.
    agreed(comm, plan.check_run_length(steps))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_split_grid_on_gpus_counts_the_steps_its_block_holds() {
        // A run of 10 steps from step 4.
        assert_eq!(steps_after(Some(4), 10, true, None), Some(14));
        // Non-finite in step 3 of the run, traced back by every rank: the block holds step 2.
        assert_eq!(steps_after(Some(4), 10, false, Some(2)), Some(6));
        // A failure not traced back: the block keeps the run's input.
        assert_eq!(steps_after(Some(4), 10, false, None), Some(4));
        assert_eq!(steps_after(None, 10, true, None), None);
    }
}
