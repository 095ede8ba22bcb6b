//! The CPU side of a split run: each rank's own solver for its block ([`local_solver`]), and
//! [`run_split`]'s passes of halo exchange and local run, the ranks agreeing on each pass's
//! outcome. A pass that fails on any rank is taken back on every rank that finished it, and a
//! non-finite value is traced a step at a time from the pass's input, so every block ends at
//! one step, the last finite one, as a run in one process does.

use std::time::{Duration, Instant};

use mpi::datatype::Equivalence;
use mpi::topology::SimpleCommunicator;

use super::grid::{advance_grid, advance_grid_beside};
use super::lattice::{advance_lattice, advance_lattice_beside, exchange_first};
use super::scratch::Scratch;
use super::wave::{advance_wave, advance_wave_beside};
use super::{Input, Solver};
use crate::cpu::blocked::Beside;
use crate::cpu::wave::blocked::HaloCut;
use crate::cpu::wave::{WaveBeside, WaveScratch};
use crate::distributed::agree::{agreed, agreed_failure};
use crate::distributed::exchange::{exchange_axis, exchange_axis_waiting, Waiting};
use crate::distributed::{swap_z_planes, Block};
use crate::distributed::{DistributedGrid, DistributedLattice, DistributedWavefield};
use crate::lbm::blocked::LatticeBeside;
use crate::lbm::populations::{Populations, ZCut};
use crate::tuning::Tuning;
use crate::{Engine, Error, Grid, Kernel, Real, Result, RunReport};

/// A state split over ranks: its communicator, halo exchange and local state.
pub(super) trait Split {
    fn comm(&self) -> &SimpleCommunicator;
    /// The rank's block of the whole grid.
    fn block(&self) -> &Block;
    /// Steps between exchanges: the halo's depth over the radius.
    fn steps_per_exchange(&self) -> usize;
    /// Advances the local state by `n` steps with `solver`, given what `input` says of it, and
    /// counts the steps it holds. The input was scanned once before the first pass, and every
    /// later value is an engine's output, which the engines check: no pass scans its input
    /// again.
    fn advance_local(&mut self, solver: &mut Solver, n: usize, input: Input) -> Result<RunReport>;
    /// Refreshes the halos the next `span` steps read and advances the local state by the
    /// first `n` of them, one pass of the engine, as [`Split::advance_local`] does (the
    /// exchange's z half beside a blocked pass that covers the span); also the seconds spent
    /// exchanging or waiting for it.
    fn exchange_and_advance(
        &mut self,
        solver: &mut Solver,
        steps: (usize, usize),
        input: Input,
    ) -> (Result<RunReport>, f64);
    /// Takes back the last `steps` steps of the local state, which succeeded, from the input
    /// that `scratch` (the second buffer of the engine that ran them) holds: a blocked pass
    /// (`blocked`) or one step. The steps the state counts go back with them.
    fn take_back(&mut self, scratch: &mut Scratch, steps: usize, blocked: bool) -> Result<()>;
}

/// [`Split`] for a distributed state whose fields `comm`, `block`, `steps_per_exchange` and
/// `local` are its communicator, block, pass length and local state: `$advance` advances the
/// local state, `$pass` runs a pass and `$back` takes steps back.
macro_rules! split_state {
    ($state:ident, $advance:ident, $pass:ident, $back:ident) => {
        impl<T: Real + Equivalence> Split for $state<T> {
            fn comm(&self) -> &SimpleCommunicator {
                &self.comm
            }
            fn block(&self) -> &Block {
                &self.block
            }
            fn steps_per_exchange(&self) -> usize {
                self.steps_per_exchange
            }
            fn advance_local(
                &mut self,
                solver: &mut Solver,
                n: usize,
                input: Input,
            ) -> Result<RunReport> {
                $advance(self, solver, n, input)
            }
            fn exchange_and_advance(
                &mut self,
                solver: &mut Solver,
                steps: (usize, usize),
                input: Input,
            ) -> (Result<RunReport>, f64) {
                $pass(self, solver, steps, input)
            }
            fn take_back(
                &mut self,
                scratch: &mut Scratch,
                steps: usize,
                blocked: bool,
            ) -> Result<()> {
                $back(self, scratch, steps, blocked)
            }
        }
    };
}

split_state!(DistributedGrid, grid_local, grid_pass, grid_back);
split_state!(
    DistributedLattice,
    lattice_local,
    lattice_pass,
    lattice_back
);
split_state!(DistributedWavefield, wave_local, wave_pass, wave_back);

/// Whether the z half of an exchange for `span` steps runs beside a first pass of `n` steps:
/// unless the tuning says otherwise, where the pass covers the span (a pass beside the
/// exchange leaves out the halo planes' own outputs, which a later pass before the next
/// exchange would read).
fn overlaps(span: usize, n: usize) -> bool {
    Tuning::current().cpu_overlap != Some(false) && n == span
}

/// [`Split::advance_local`] for a grid, whose block's steps the distributed grid counts.
fn grid_local<T: Real + Equivalence>(
    grid: &mut DistributedGrid<T>,
    solver: &mut Solver,
    n: usize,
    input: Input,
) -> Result<RunReport> {
    let report = advance_grid(solver, &mut grid.local, n, input);
    count_steps(&mut grid.steps, &report, n);
    report
}

/// Counts in `steps` the steps a local run of `n` steps that returned `report` advanced the
/// block: the engines leave it at the last finite step when a value goes non-finite (the
/// input of a blocked pass that does not replay, whose error names the pass's first step)
/// and untouched on any other error (they fail before computing).
fn count_steps(steps: &mut Option<u64>, report: &Result<RunReport>, n: usize) {
    let advanced = match report {
        Ok(_) => n,
        Err(Error::NonFinite { step, .. }) => step - 1,
        Err(_) => 0,
    };
    *steps = steps.map(|s| s + advanced as u64);
}

/// [`Split::advance_local`] for a lattice, which counts its own steps.
fn lattice_local<T: Real + Equivalence>(
    lat: &mut DistributedLattice<T>,
    solver: &mut Solver,
    n: usize,
    input: Input,
) -> Result<RunReport> {
    advance_lattice(solver, &mut lat.local, n, input)
}

/// [`Split::advance_local`] for a wavefield, which counts its own steps.
fn wave_local<T: Real + Equivalence>(
    field: &mut DistributedWavefield<T>,
    solver: &mut Solver,
    n: usize,
    input: Input,
) -> Result<RunReport> {
    advance_wave(solver, &mut field.local, n, input)
}

/// The error of a take-back that finds no second buffer of the local state's size: the
/// engines keep theirs, so it means a bug, reported rather than panicking on every rank.
fn no_input() -> Error {
    Error::InvalidArgument("the pass's input is not in the solver's second buffer".into())
}

/// [`Split::take_back`] for a grid: its block and the second grid swap back.
fn grid_back<T: Real + Equivalence>(
    grid: &mut DistributedGrid<T>,
    scratch: &mut Scratch,
    steps: usize,
    _blocked: bool,
) -> Result<()> {
    let dims = grid.local.dims();
    let local = &mut grid.local;
    scratch.with(
        |s: &Grid<T>| s.dims() == dims,
        || Err(no_input()),
        |s| {
            local.swap_storage(s);
            Ok(())
        },
    )?;
    grid.steps = grid.steps.map(|s| s - steps as u64);
    Ok(())
}

/// [`Split::take_back`] for a lattice: its populations and the second copy swap back.
fn lattice_back<T: Real + Equivalence>(
    lat: &mut DistributedLattice<T>,
    scratch: &mut Scratch,
    steps: usize,
    _blocked: bool,
) -> Result<()> {
    let dims = lat.local.dims();
    let local = &mut lat.local;
    scratch.with(
        |s: &Populations<T>| s.layout().dims == dims,
        || Err(no_input()),
        |s| {
            local.pop.swap(s);
            local.steps -= steps as u64;
            Ok(())
        },
    )
}

/// [`Split::take_back`] for a wavefield: its levels, step count and traces go back (see
/// [`crate::cpu::wave::step::take_back`]).
fn wave_back<T: Real + Equivalence>(
    field: &mut DistributedWavefield<T>,
    scratch: &mut Scratch,
    steps: usize,
    blocked: bool,
) -> Result<()> {
    if !blocked && steps != 1 {
        // The naive and reference engines rotate the levels a step at a time.
        return Err(no_input());
    }
    let dims = field.local.dims();
    let local = &mut field.local;
    scratch.with(
        |s: &WaveScratch<T>| s.dims() == dims,
        || Err(no_input()),
        |s| {
            crate::cpu::wave::step::take_back(local, s, steps, blocked);
            Ok(())
        },
    )
}

/// The exchange of a split grid's halos for `span` steps and the first pass of its engine,
/// `n` steps: the y faces exchanged first (the z faces carry the edges and corners of the y
/// halos), then the z faces beside the pass where it is the blocked engine's and the span's
/// only one (the output planes that need no halo are computed meanwhile; see [`Beside`]),
/// else before it. Returns the pass's outcome and the seconds spent exchanging or waiting for
/// the exchange.
fn grid_pass<T: Real + Equivalence>(
    grid: &mut DistributedGrid<T>,
    solver: &mut Solver,
    (span, n): (usize, usize),
    input: Input,
) -> (Result<RunReport>, f64) {
    let start = Instant::now();
    let (c, d, b) = (&grid.comm, &grid.decomposition, &grid.block);
    exchange_axis(c, d, b, 0, &mut grid.local, &mut grid.buffers);
    let first = start.elapsed();
    let plane = grid.local.plane_stride();
    let overlap = overlaps(span, n);
    // Beside a pass the exchange polls, leaving the cores to the team; before one it waits in
    // MPI, which answers sooner (polling cost one-step naive passes on the 16-core host 8-11%).
    let mut work = |low: &mut [T], owned: &[T], high: &mut [T], beside: bool| {
        let waiting = if beside { Waiting::Poll } else { Waiting::Spin };
        swap_z_planes(c, d, plane, (low, owned, high), waiting);
    };
    let mut waited = Duration::ZERO;
    let mut beside = Beside {
        halo: b.halos[1],
        work: &mut work,
        waited: &mut waited,
    };
    if !overlap {
        beside.run_first(&mut grid.local);
    }
    let report = advance_grid_beside(solver, &mut grid.local, n, input, overlap.then_some(beside));
    count_steps(&mut grid.steps, &report, n);
    (report, (first + waited).as_secs_f64())
}

/// The exchange and first pass of a split lattice, as [`grid_pass`]: the y faces exchanged
/// first, then the z faces beside a blocked pass that covers the span (see
/// [`LatticeBeside`]), else before it. Returns the pass's outcome and the seconds spent
/// exchanging or waiting for the exchange.
fn lattice_pass<T: Real + Equivalence>(
    lat: &mut DistributedLattice<T>,
    solver: &mut Solver,
    (span, n): (usize, usize),
    input: Input,
) -> (Result<RunReport>, f64) {
    let start = Instant::now();
    let (c, d, b) = (&lat.comm, &lat.decomposition, &lat.block);
    exchange_axis(c, d, b, 0, &mut lat.local, &mut lat.buffers);
    let first = start.elapsed();
    let overlap = overlaps(span, n);
    let buffers = &mut lat.buffers;
    // Polling beside a pass, waiting in MPI before one, as for grids.
    let mut work = |mut cut: ZCut<'_, T>, beside: bool| {
        let waiting = if beside { Waiting::Poll } else { Waiting::Spin };
        exchange_axis_waiting(c, d, b, 1, &mut cut, buffers, waiting);
    };
    let mut waited = Duration::ZERO;
    let mut beside = LatticeBeside {
        halo: b.halos[1],
        work: &mut work,
        waited: &mut waited,
    };
    let local = &mut lat.local;
    if !overlap {
        exchange_first(local, &mut beside);
    }
    let report = advance_lattice_beside(solver, local, n, input, overlap.then_some(beside));
    (report, (first + waited).as_secs_f64())
}

/// The exchange and first pass of a split wavefield, as [`grid_pass`]: the y faces of the
/// levels the span's steps read in the halo exchanged first (`u` alone for one step, which
/// reads the older level and the auxiliary field at its own cells only; `u`, `u⁻` and `φ` for
/// more, whose steps after the first compute in the halo), then their z faces beside a
/// blocked pass that covers the span (see [`WaveBeside`]), else before it. Returns the
/// pass's outcome and the seconds spent exchanging or waiting for the exchange.
fn wave_pass<T: Real + Equivalence>(
    field: &mut DistributedWavefield<T>,
    solver: &mut Solver,
    (span, n): (usize, usize),
    input: Input,
) -> (Result<RunReport>, f64) {
    let start = Instant::now();
    let levels = if span == 1 { 1 } else { 3 };
    let (c, d, b) = (&field.comm, &field.decomposition, &field.block);
    let local = &mut field.local;
    for grid in [&mut local.u, &mut local.prev, &mut local.phi]
        .into_iter()
        .take(levels)
    {
        exchange_axis(c, d, b, 0, grid, &mut field.buffers);
    }
    let first = start.elapsed();
    let overlap = overlaps(span, n);
    let plane = local.u.plane_stride();
    // Polling beside a pass, waiting in MPI before one, as for grids.
    let mut work = |cuts: [HaloCut<'_, T>; 3], beside: bool| {
        let waiting = if beside { Waiting::Poll } else { Waiting::Spin };
        for cut in cuts.into_iter().take(levels) {
            swap_z_planes(c, d, plane, cut, waiting);
        }
    };
    let mut waited = Duration::ZERO;
    let mut beside = WaveBeside {
        halo: b.halos[1],
        work: &mut work,
        waited: &mut waited,
    };
    if !overlap {
        beside.run_first(local);
    }
    let report = advance_wave_beside(solver, local, n, input, overlap.then_some(beside));
    (report, (first + waited).as_secs_f64())
}

/// Runs `steps` steps of a split state with the rank's own solver for its local state: the
/// plan's choices for `kernel` on `dims` (kept in `solver` between runs). Blocks differ in
/// size, so planning one can fail on some ranks only.
pub(super) fn run_split<S: Split>(
    solver: &mut Solver,
    state: &mut S,
    kernel: Kernel,
    dims: [usize; 3],
    steps: usize,
) -> Result<RunReport> {
    let mut local = local_solver(solver, state.comm(), kernel, dims, None)?;
    // The ranks trace a failed pass together (see `settle_pass`).
    local.traced_by_ranks = true;
    let outcome = passes(state, &mut local, steps);
    solver.scratch.keep(local);
    let (seconds, comm_seconds) = outcome?;
    let mut report = RunReport::new(&solver.plan, steps, seconds, 0.0);
    report.communication_seconds = comm_seconds;
    Ok(report)
}

/// The rank's own solver for its local state: the plan's choices for `kernel` on `dims`
/// (with `dim_t` steps per pass of a blocked engine where given), kept in `solver` between
/// runs. Blocks differ in size, so planning one can fail on some ranks only. Collective.
pub(super) fn local_solver(
    solver: &mut Solver,
    comm: &SimpleCommunicator,
    kernel: Kernel,
    dims: [usize; 3],
    dim_t: Option<usize>,
) -> Result<Box<Solver>> {
    let engine = solver.plan.engine();
    let dim_t = dim_t.filter(|_| engine.is_blocked());
    let plan = &solver.plan;
    let built = solver.scratch.take(
        |s: &Solver| {
            s.plan.dims() == dims
                && s.plan.kernel() == &kernel
                && s.plan.engine() == engine
                && dim_t.is_none_or(|t| s.plan.dim_t() == t)
        },
        || {
            let mut local = plan.rebuild_for_kernel(kernel.clone(), dims);
            if let Some(t) = dim_t {
                local = local.dim_t(t);
            }
            Ok(Solver::new(local.build()?))
        },
    );
    agreed(comm, built)
}

/// Runs `steps` steps on `state`: an exchange before every [`Split::steps_per_exchange`]
/// steps (the span), and the span's steps in passes of the local engine (a blocked pass of its
/// plan's `dim_t` or less, else one step), the ranks agreeing on each pass. Each pass writes
/// its output apart from its input, so after it the engine's second buffer holds the input,
/// and a pass that failed on any rank is settled from there ([`settle_pass`]). Returns the
/// seconds in all and those spent communicating.
fn passes<S: Split>(state: &mut S, local: &mut Solver, steps: usize) -> Result<(f64, f64)> {
    let start = Instant::now();
    let per_pass = match local.plan.engine() {
        Engine::Blocked => local.plan.dim_t().max(1),
        _ => 1,
    };
    let (mut done, mut comm_seconds) = (0, 0.0);
    while done < steps {
        let span = state.steps_per_exchange().min(steps - done);
        let n = per_pass.min(span);
        let input = if done == 0 {
            Input::Scanned
        } else {
            Input::Continued
        };
        let (outcome, exchanging) = state.exchange_and_advance(local, (span, n), input);
        comm_seconds += exchanging + settle_pass(state, local, outcome, (done, n))?;
        let mut ran = n;
        while ran < span {
            let m = per_pass.min(span - ran);
            let outcome = state.advance_local(local, m, Input::Continued);
            comm_seconds += settle_pass(state, local, outcome, (done + ran, m))?;
            ran += m;
        }
        done += span;
    }
    Ok((start.elapsed().as_secs_f64(), comm_seconds))
}

/// Agrees on the `outcome` of a pass of `n` steps from step `done` (one pass of the local
/// engine); returns the seconds spent agreeing. Where it failed on any rank, the ranks that
/// finished it take it back, so every block holds the pass's input again, and a failure other
/// than a non-finite value is returned. A non-finite value a one-step pass found is exact, and
/// every block now holds the step before it; one a blocked pass found (which leaves its input
/// in place, see `EngineParams::replay`) is traced from the input a step at a time with the
/// naive sweep, as one process replays it. Where the trace finds no step that fails (a pass's
/// rounding can differ from its steps'), the blocks hold the pass's end and the run goes on.
fn settle_pass<S: Split>(
    state: &mut S,
    local: &mut Solver,
    outcome: Result<RunReport>,
    (done, n): (usize, usize),
) -> Result<f64> {
    let outcome = outcome.map_err(|e| state.block().in_whole_grid(e.after_steps(done)));
    let finished = outcome.is_ok();
    let start = Instant::now();
    let (agreed_outcome, non_finite) = agreed_failure(state.comm(), outcome);
    let Err(error) = agreed_outcome else {
        return Ok(start.elapsed().as_secs_f64());
    };
    let blocked = local.plan.engine() == Engine::Blocked;
    let taken = match finished {
        true => state.take_back(&mut local.scratch, n, blocked),
        false => Ok(()),
    };
    agreed(state.comm(), taken)?;
    if !(non_finite && blocked) {
        return Err(error);
    }
    let agreeing = start.elapsed().as_secs_f64();
    let plan = local.plan.naive_twin();
    let mut naive = agreed(state.comm(), plan.map(Solver::new))?;
    // The naive sweep's second buffer is the blocked engine's, which holds no state now.
    std::mem::swap(&mut naive.scratch, &mut local.scratch);
    let traced = steps_agreed(state, &mut naive, (done, n));
    std::mem::swap(&mut naive.scratch, &mut local.scratch);
    traced.map(|()| agreeing)
}

/// Replays `n` steps from step `done` on `state` one at a time with the `naive` sweep, from
/// the halos already exchanged for them; the ranks agree after each step. At the first step
/// that fails on any rank, the ranks that finished it take it back, so every block holds the
/// step before it, and the agreed error is returned.
fn steps_agreed<S: Split>(
    state: &mut S,
    naive: &mut Solver,
    (done, n): (usize, usize),
) -> Result<()> {
    for i in 0..n {
        let stepped = state.advance_local(naive, 1, Input::Continued);
        let stepped = stepped.map_err(|e| state.block().in_whole_grid(e.after_steps(done + i)));
        let finished = stepped.is_ok();
        if let Err(error) = agreed(state.comm(), stepped) {
            let taken = match finished {
                true => state.take_back(&mut naive.scratch, 1, false),
                false => Ok(()),
            };
            agreed(state.comm(), taken)?;
            return Err(error);
        }
    }
    Ok(())
}
