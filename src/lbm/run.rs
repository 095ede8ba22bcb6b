//! Runs a plan's lattice-Boltzmann engine on a lattice: the counterpart of
//! `crate::cpu::run_stencil` for [`Lattice`].

use std::any::Any;

use super::blocked::BlockedRun;
use super::lanes::FlowReal;
use super::lattice::Lattice;
use super::naive;
use super::populations::Populations;
use super::reference;
use super::rows::{FlowKernel, NodeBytes};
use crate::cpu::{CpuWorkers, Failure};
use crate::plan::Engine;
use crate::{Error, Plan, Real, Result};

/// Where the first non-finite population of `pop` (the output of step `step`) is.
pub(crate) fn locate<T: Real>(pop: &Populations<T>, step: usize) -> Failure {
    let (cell, _, value) = pop.find_non_finite().unwrap_or(([0; 3], 0, f64::NAN));
    Failure { step, cell, value }
}

/// Advances `lat` by `steps` steps with the plan's engine, using `scratch` (same dimensions)
/// as the second buffer. On success and on failure `lat` holds the newest finite state and
/// its step count says how many steps that is; a failure ([`crate::Error::NonFinite`]) gives
/// the 1-based step of this run that went bad.
pub(crate) fn run<T: Real>(
    plan: &Plan,
    workers: &mut CpuWorkers,
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
) -> Result<()> {
    // `Real` is sealed to f32 and f64, which are the `FlowReal`s: recover the concrete type.
    let (l, s) = (lat as &mut dyn Any, scratch as &mut dyn Any);
    if let (Some(l), Some(s)) = (
        l.downcast_mut::<Lattice<f32>>(),
        s.downcast_mut::<Populations<f32>>(),
    ) {
        return run_typed(plan, workers, l, s, steps);
    }
    let (l, s) = (lat as &mut dyn Any, scratch as &mut dyn Any);
    match (
        l.downcast_mut::<Lattice<f64>>(),
        s.downcast_mut::<Populations<f64>>(),
    ) {
        (Some(l), Some(s)) => run_typed(plan, workers, l, s, steps),
        _ => unreachable!("Real is implemented for f32 and f64 only"),
    }
}

fn run_typed<T: FlowReal>(
    plan: &Plan,
    workers: &mut CpuWorkers,
    lat: &mut Lattice<T>,
    scratch: &mut Populations<T>,
    steps: usize,
) -> Result<()> {
    if plan.engine().is_gpu() {
        // The solver sends GPU plans to `crate::gpu::lbm`; this runner is the CPU engines'.
        return Err(Error::PlanMismatch(format!(
            "the CPU lattice runner cannot run the GPU engine '{}'",
            plan.engine()
        )));
    }
    lat.prepare();
    let outcome = match plan.engine() {
        Engine::Reference => (1..=steps).try_for_each(|s| {
            reference::step(lat, scratch);
            if scratch.find_non_finite().is_some() {
                return Err(locate(scratch, s));
            }
            lat.pop.swap(scratch);
            Ok(())
        }),
        Engine::Naive => {
            let pool = workers.pool(plan.threads())?;
            let kernel = FlowKernel::streaming(lat);
            let bytes = NodeBytes::new(lat);
            let periodic = lat.periodic;
            (1..=steps).try_for_each(|s| {
                if !pool.install(|| naive::step(&kernel, &lat.pop, periodic, &bytes, scratch)) {
                    return Err(locate(scratch, s));
                }
                lat.pop.swap(scratch);
                Ok(())
            })
        }
        Engine::Blocked => {
            let team = workers.team(plan.threads(), plan.pin())?;
            let kernel = FlowKernel::new(lat);
            let run = BlockedRun {
                kernel: &kernel,
                bytes: NodeBytes::new(lat),
                periodic: lat.periodic,
                steps,
                dim_t: plan.dim_t(),
                tile: plan.tile(),
                tile_threads: plan.tile_threads(),
                z_chunks: plan.z_chunks(),
                team,
            };
            run.run(&mut lat.pop, scratch)
        }
        Engine::GpuNaive | Engine::GpuBlocked => unreachable!("rejected above"),
    };
    lat.steps += match &outcome {
        Ok(()) => steps as u64,
        Err(f) => f.step as u64 - 1,
    };
    outcome.map_err(Error::from)
}
