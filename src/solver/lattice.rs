//! The lattice-Boltzmann state: a [`Lattice`] runs on every engine.

use std::time::Instant;

use super::concrete::per_precision;
use super::dispatch::{rings_fit, Engines, Run, Timing};
use super::{check_shape, check_steps, Input, Solver, State};
use crate::gpu::{self, lbm::LbmBuffers};
use crate::lbm::blocked::LatticeBeside;
use crate::lbm::{self, Lattice, LbmKernel, Populations};
use crate::lbm::{LATTICE_NODE_BYTES, NODE_WORD_BYTES};
use crate::memory::Footprint;
use crate::runtime::Workers;
use crate::{Error, Real, Result, RunReport};

per_precision!(
    /// Errors besides the stencil ones: a plan for another periodicity or forcing
    /// ([`Error::PlanMismatch`]), a lattice [`Lattice::validate`] rejects, non-finite
    /// populations (nothing is computed). After a blow-up the lattice holds the last finite
    /// state and its step count matches it.
    Lattice,
    advance_lattice_f32,
    advance_lattice_f64,
    advance_lattice,
    Input::Unchecked
);

/// [`State::advance`] for a lattice, given what `input` says of it.
pub(super) fn advance_lattice<T: Real>(
    solver: &mut Solver,
    lat: &mut Lattice<T>,
    steps: usize,
    input: Input,
) -> Result<RunReport> {
    advance_lattice_beside(solver, lat, steps, input, None)
}

/// [`advance_lattice`] with `beside`'s work (a split run's z halo exchange) beside the blocked
/// engine's first pass, or before the run on the other engines.
pub(super) fn advance_lattice_beside<'a, T: Real>(
    solver: &mut Solver,
    lat: &'a mut Lattice<T>,
    steps: usize,
    input: Input,
    beside: Option<LatticeBeside<'a, T>>,
) -> Result<RunReport> {
    let mut on = OnLattice(lat, beside);
    if let Err(e) = check_run(solver, on.0, steps, input) {
        // The neighbouring ranks wait for this rank's part of the exchange.
        on.beside_first();
        return Err(e);
    }
    solver.dispatch(&mut on, steps)
}

/// The checks of a run of `steps` steps on `lat`, before anything is computed.
fn check_run<T: Real>(
    solver: &mut Solver,
    lat: &Lattice<T>,
    steps: usize,
    input: Input,
) -> Result<()> {
    let plan = &solver.plan;
    let kernel = *plan.kernel().lbm().ok_or_else(|| {
        Error::PlanMismatch(format!(
            "the plan is for {}, not for a lattice-Boltzmann lattice",
            plan.kernel()
        ))
    })?;
    check_shape(plan, T::DTYPE, lat.dims())?;
    let wanted = LbmKernel::of(lat);
    if kernel != wanted {
        return Err(Error::PlanMismatch(format!(
            "the plan is for a {kernel} lattice, this one is {wanted}: make the plan with \
             Plan::for_lattice"
        )));
    }
    check_steps(steps)?;
    lat.validate()?;
    if input.scan() {
        let pool = solver.workers.pool(plan.threads())?;
        if let Some((cell, _, value)) = pool.install(|| lat.pop.find_non_finite()) {
            return Err(Error::NonFiniteInput { cell, value });
        }
    }
    Ok(())
}

/// Runs `beside`'s work (a split run's z halo exchange) on `lat` now, before any pass.
pub(super) fn exchange_first<T: Real>(lat: &mut Lattice<T>, beside: &mut LatticeBeside<'_, T>) {
    // The work writes populations: any 16-bit codes no longer describe them.
    lat.codes = None;
    beside.run_first(&mut lat.pop);
}

/// A lattice being advanced, and work to do beside its first pass.
struct OnLattice<'a, T: Real>(&'a mut Lattice<T>, Option<LatticeBeside<'a, T>>);

impl<T: Real> OnLattice<'_, T> {
    /// Runs the work meant for beside the first pass now, before the run: for the engines
    /// that cannot compute beside it.
    fn beside_first(&mut self) {
        if let Some(mut beside) = self.1.take() {
            exchange_first(self.0, &mut beside);
        }
    }

    /// Host bytes the lattice holds already: its populations, flags, any node classes and any
    /// 16-bit codes.
    fn held(&self, dims: [usize; 3]) -> u64 {
        Footprint::lattice(T::DTYPE, 1, self.0.node_bytes())
            .bytes(dims)
            .unwrap_or(0)
            + self.0.codes_bytes()
    }

    /// Runs a CPU engine with the solver's second population array, timed from before it is
    /// set up.
    fn on_cpu(
        &mut self,
        run: &mut Run<'_>,
        engine: impl FnOnce(&mut Workers, &mut Lattice<T>, &mut Populations<T>) -> Result<()>,
    ) -> Result<Timing> {
        let start = Instant::now();
        self.beside_first();
        let dims = self.0.dims();
        let need = Footprint::lattice(T::DTYPE, 2, LATTICE_NODE_BYTES)
            .plus(run.ring_bytes)
            .with_label(run.scratch_label("second copy"));
        let held = self.held(dims);
        let (memory, rings) = (run.memory, run.ring_bytes);
        let (lat, workers) = (&mut *self.0, &mut *run.workers);
        // The CPU engines write the populations only (16-bit codes are the GPU engines').
        lat.codes = None;
        run.scratch.with(
            |s: &Populations<T>| s.layout().dims == dims,
            || {
                need.check_beside(dims, held, memory)?;
                Populations::<T>::new(dims)
            },
            |second| {
                rings_fit(&need, dims, rings, memory)?;
                engine(workers, lat, second)
            },
        )?;
        Ok(Timing::since(start))
    }
}

impl<T: Real> Engines for OnLattice<'_, T> {
    fn reference(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let steps = run.steps;
        self.on_cpu(run, |_, lat, second| {
            lbm::run::run_reference(lat, second, steps)
        })
    }

    fn naive(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let (steps, threads, isa) = (run.steps, run.params.threads, run.params.isa);
        self.on_cpu(run, |workers, lat, second| {
            lbm::run::run_naive(isa, workers.pool(threads)?, lat, second, steps)
        })
    }

    fn blocked(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        let (steps, params) = (run.steps, run.params);
        let mut beside = self.1.take();
        let ran = self.on_cpu(run, |workers, lat, second| {
            let team = workers.team_and_rings(params.threads, params.pin)?;
            lbm::run::run_blocked(params, team, lat, second, steps, beside.take())
        });
        // A run that failed before its engine started still does its part of the exchange,
        // which the neighbouring ranks wait for.
        self.1 = beside;
        self.beside_first();
        ran
    }

    fn gpu(&mut self, run: &mut Run<'_>) -> Result<Timing> {
        self.beside_first();
        let device = gpu::gpu()?;
        // Classified first, so that the device buffers know whether the lattice has walls.
        self.0.prepare();
        let dims = self.0.dims();
        // The planner's in-place choice yields to two copies where the AA kernels cannot run;
        // a user's choice stands (and the engine reports why it cannot).
        let in_place = run.params.in_place
            && (run.params.in_place_fixed || gpu::lbm::check_in_place(self.0).is_ok());
        let storage = self.0.storage();
        // On the host: the node classes, for the in-place scheme a copy to download into, in
        // 16-bit storage the codes the download returns (2 bytes a population), and for a
        // lattice with walls the node words built for the upload.
        let codes = storage.code_bytes_per_node();
        let words = if self.0.classes().all_bulk {
            0
        } else {
            NODE_WORD_BYTES
        };
        let need = Footprint::lattice(
            T::DTYPE,
            1 + u64::from(in_place),
            LATTICE_NODE_BYTES + codes + words,
        )
        .with_label("for a GPU run");
        let (held, memory) = (self.held(dims), run.memory);
        // Made from the lattice, so taken and kept by hand rather than through `with`.
        let mut buffers = run.scratch.take(
            |b: &LbmBuffers<T>| b.fits(dims, in_place, storage),
            || {
                need.check_beside(dims, held, memory)?;
                LbmBuffers::new(device, self.0, in_place)
            },
        )?;
        let outcome = gpu::lbm::run(device, run.params.engine, self.0, &mut buffers, run.steps);
        run.scratch.keep(buffers);
        let (compute, transfer) = outcome?;
        Ok(Timing { compute, transfer })
    }
}
