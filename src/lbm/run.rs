//! The CPU lattice-Boltzmann engines' entry points ([`run_reference`], [`run_naive`],
//! [`run_blocked`]): each advances a [`Lattice`] with a second population array as scratch and
//! keeps the lattice's step count true, also after a blow-up.

use std::any::Any;

use super::blocked::BlockedRun;
use super::lanes::FlowReal;
use super::lattice::Lattice;
use super::naive;
use super::populations::Populations;
use super::reference;
use super::rows::{FlowKernel, NodeBytes};
use crate::engine::{EngineParams, Failure};
use crate::runtime::team::Team;
use crate::{Real, Result};

/// One engine's steps on a lattice of a concrete precision.
trait Sweep {
    /// Advances `lat` by `steps` steps with `scratch` as the second array; on success and on
    /// failure `lat.pop` holds the newest finite state.
    fn sweep<F: FlowReal>(
        self,
        lat: &mut Lattice<F>,
        scratch: &mut Populations<F>,
        steps: usize,
    ) -> Result<(), Failure>;
}

/// The scalar reference engine.
struct Reference;

impl Sweep for Reference {
    fn sweep<F: FlowReal>(
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

impl Sweep for Naive<'_> {
    fn sweep<F: FlowReal>(
        self,
        lat: &mut Lattice<F>,
        scratch: &mut Populations<F>,
        steps: usize,
    ) -> Result<(), Failure> {
        let kernel = FlowKernel::streaming(lat);
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

/// The 3.5D blocked engine on a pinned team.
struct Blocked<'a> {
    params: &'a EngineParams,
    team: &'a Team,
}

impl Sweep for Blocked<'_> {
    fn sweep<F: FlowReal>(
        self,
        lat: &mut Lattice<F>,
        scratch: &mut Populations<F>,
        steps: usize,
    ) -> Result<(), Failure> {
        let kernel = FlowKernel::new(lat);
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
        };
        run.run(&mut lat.pop, scratch)
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
    run(lat, scratch, steps, Reference)
}

/// Advances `lat` with the naive engine on `pool`, as [`run_reference`].
pub(crate) fn run_naive<T: Real>(
    pool: &rayon::ThreadPool,
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
) -> Result<()> {
    run(lat, scratch, steps, Naive(pool))
}

/// Advances `lat` with the blocked engine on `team`, as [`run_reference`].
pub(crate) fn run_blocked<T: Real>(
    params: &EngineParams,
    team: &Team,
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
) -> Result<()> {
    run(lat, scratch, steps, Blocked { params, team })
}

/// Recovers the concrete precision (`Real` is sealed to f32 and f64, which are the
/// `FlowReal`s), runs `engine` and updates the lattice's step count.
fn run<T: Real>(
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
    engine: impl Sweep,
) -> Result<()> {
    let (l, s) = (lat as &mut dyn Any, scratch as &mut dyn Any);
    if let (Some(l), Some(s)) = (
        l.downcast_mut::<Lattice<f32>>(),
        s.downcast_mut::<Populations<f32>>(),
    ) {
        return typed(l, s, steps, engine);
    }
    let (l, s) = (lat as &mut dyn Any, scratch as &mut dyn Any);
    match (
        l.downcast_mut::<Lattice<f64>>(),
        s.downcast_mut::<Populations<f64>>(),
    ) {
        (Some(l), Some(s)) => typed(l, s, steps, engine),
        _ => unreachable!("Real is implemented for f32 and f64 only"),
    }
}

fn typed<F: FlowReal>(
    lat: &mut Lattice<F>,
    scratch: &mut Populations<F>,
    steps: usize,
    engine: impl Sweep,
) -> Result<()> {
    lat.prepare();
    let outcome = engine.sweep(lat, scratch, steps);
    lat.steps += match &outcome {
        Ok(()) => steps as u64,
        Err(f) => f.step as u64 - 1,
    };
    outcome.map_err(Into::into)
}
