//! The CPU lattice-Boltzmann engines' entry points ([`run_reference`], [`run_naive`],
//! [`run_blocked`]): each advances a [`Lattice`] with a second population array as scratch and
//! keeps the lattice's step count true, also after a blow-up.

use super::blocked::{BlockedRun, LatticeBeside};
use super::lattice::Lattice;
use super::naive;
use super::populations::Populations;
use super::reference;
use super::rows::{FlowKernel, NodeBytes};
use crate::engine::{EngineParams, Failure};
use crate::runtime::team::Team;
use crate::runtime::Rings;
use crate::simd::{with_isa, Isa, WithIsa};
use crate::{Level, Real, Result};

/// One engine's steps on a lattice of a concrete precision.
trait Sweep<F: Real> {
    /// Advances `lat` by `steps` steps with `scratch` as the second array; on success and on
    /// failure `lat.pop` holds the newest finite state.
    fn sweep<S: Isa>(
        self,
        lat: &mut Lattice<F>,
        scratch: &mut Populations<F>,
        steps: usize,
    ) -> Result<(), Failure>;
}

/// The scalar reference engine.
struct Reference;

impl<F: Real> Sweep<F> for Reference {
    fn sweep<S: Isa>(
        self,
        lat: &mut Lattice<F>,
        scratch: &mut Populations<F>,
        steps: usize,
    ) -> Result<(), Failure> {
        (1..=steps).try_for_each(|s| {
            reference::step(lat, scratch);
            if scratch.find_non_finite().is_some() {
                return Err(scratch.failure(s));
            }
            lat.pop.swap(scratch);
            Ok(())
        })
    }
}

/// The naive engine: one parallel sweep per step on a rayon pool.
struct Naive<'a>(&'a rayon::ThreadPool);

impl<F: Real> Sweep<F> for Naive<'_> {
    fn sweep<S: Isa>(
        self,
        lat: &mut Lattice<F>,
        scratch: &mut Populations<F>,
        steps: usize,
    ) -> Result<(), Failure> {
        let kernel = FlowKernel::<F, S>::streaming(lat);
        let bytes = NodeBytes::new(lat);
        let periodic = lat.periodic;
        (1..=steps).try_for_each(|s| {
            if !self
                .0
                .install(|| naive::step(&kernel, &lat.pop, periodic, &bytes, scratch))
            {
                return Err(scratch.failure(s));
            }
            lat.pop.swap(scratch);
            Ok(())
        })
    }
}

/// The 3.5D blocked engine on a pinned team, with work to run beside its first pass.
struct Blocked<'a, 'b, F> {
    params: &'a EngineParams,
    team: &'a Team,
    rings: &'a mut Rings,
    beside: Option<LatticeBeside<'b, F>>,
}

impl<F: Real> Sweep<F> for Blocked<'_, '_, F> {
    fn sweep<S: Isa>(
        self,
        lat: &mut Lattice<F>,
        scratch: &mut Populations<F>,
        steps: usize,
    ) -> Result<(), Failure> {
        let kernel = FlowKernel::<F, S>::new(lat);
        let run = BlockedRun {
            kernel: &kernel,
            bytes: NodeBytes::new(lat),
            periodic: lat.periodic,
            steps,
            dim_t: self.params.dim_t,
            tile: self.params.tile,
            tile_threads: self.params.tile_threads,
            z_chunks: self.params.z_chunks,
            team: self.team,
            replay: self.params.replay,
        };
        run.run(&mut lat.pop, scratch, self.rings.get(), self.beside)
    }
}

/// Advances `lat` by `steps` steps with the reference engine, `scratch` (same dimensions) being
/// the second array. On success and on failure `lat` holds the newest finite state and its step
/// count says how many steps that is; a failure ([`crate::Error::NonFinite`]) gives the 1-based
/// step of this run that went bad.
pub(crate) fn run_reference<T: Real>(
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
) -> Result<()> {
    run(lat, scratch, steps, Level::Base, Reference)
}

/// Advances `lat` with the naive engine on `pool` at instruction-set `level`, as
/// [`run_reference`].
pub(crate) fn run_naive<T: Real>(
    level: Level,
    pool: &rayon::ThreadPool,
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
) -> Result<()> {
    run(lat, scratch, steps, level, Naive(pool))
}

/// Advances `lat` with the blocked engine on `team`, as [`run_reference`], with `beside`'s
/// work (a split run's z halo exchange) beside its first pass.
pub(crate) fn run_blocked<T: Real>(
    params: &EngineParams,
    (team, rings): (&Team, &mut Rings),
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
    beside: Option<LatticeBeside<'_, T>>,
) -> Result<()> {
    let engine = Blocked {
        params,
        team,
        rings,
        beside,
    };
    run(lat, scratch, steps, params.isa, engine)
}

/// Runs `engine` at instruction-set `level` and updates the lattice's step count.
fn run<T: Real>(
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
    level: Level,
    engine: impl Sweep<T>,
) -> Result<()> {
    lat.prepare();
    let outcome = with_isa(
        level,
        AtLevel {
            lat: &mut *lat,
            scratch,
            steps,
            engine,
        },
    );
    lat.count_steps(match &outcome {
        Ok(()) => steps as u64,
        Err(f) => f.step as u64 - 1,
    });
    outcome.map_err(Into::into)
}

/// [`run`]'s sweep once the level is known.
struct AtLevel<'a, T: Real, E> {
    lat: &'a mut Lattice<T>,
    scratch: &'a mut Populations<T>,
    steps: usize,
    engine: E,
}

impl<T: Real, E: Sweep<T>> WithIsa for AtLevel<'_, T, E> {
    type Output = Result<(), Failure>;

    fn call<S: Isa>(self) -> Result<(), Failure> {
        self.engine.sweep::<S>(self.lat, self.scratch, self.steps)
    }
}
