//! The CPU engines of the acoustic wave equation: [`reference`] (the oracle), [`naive`] (one
//! parallel SIMD sweep per step) and [`blocked`] (3.5D: `dim_t` steps per pass with both time
//! levels and the layers' auxiliary field in per-level plane rings), sharing the row kernels
//! of [`rows`] and the step's bookkeeping of [`step`] (sources, receivers, the rotation of time
//! levels).

pub(crate) mod blocked;
pub(crate) mod naive;
pub(crate) mod reference;
pub(crate) mod rows;
pub(crate) mod step;

pub(crate) use blocked::WaveBeside;
pub(crate) use step::WaveScratch;

use crate::engine::{Engine, EngineParams, Failure};
use crate::wave::rigid::{mirror_rigid_faces, settle_rigid_faces};
use crate::wave::Wavefield;
use crate::Real;

/// Advances `field` by `steps` steps with the plan's CPU engine on `pool`. On success and on
/// failure the field holds its newest finite state. With rigid faces every step is a pass of
/// its own, after the mirror of `u` into their boundary layers.
///
/// `beside`: work (a split run's z halo exchange) to run beside the blocked engine's first
/// pass, or before the run on the other engines and with rigid faces (whose mirror reads the
/// halos).
pub(crate) fn run<T: Real>(
    field: &mut Wavefield<T>,
    scratch: &mut WaveScratch<T>,
    params: &EngineParams,
    pool: &rayon::ThreadPool,
    steps: usize,
    mut beside: Option<WaveBeside<'_, T>>,
) -> Result<(), Failure> {
    if params.engine != Engine::Blocked || field.kernel().has_rigid_faces() {
        if let Some(mut beside) = beside.take() {
            beside.run_first(field);
        }
    }
    if !field.kernel().has_rigid_faces() {
        return run_passes(field, scratch, params, pool, steps, beside);
    }
    // A run of one step is one pass, whatever the plan's dim_t.
    let kernel = field.kernel().clone();
    let ran = (0..steps).try_for_each(|done| {
        mirror_rigid_faces(&kernel, &mut field.u);
        run_passes(field, scratch, params, pool, 1, None).map_err(|f| Failure {
            step: f.step + done,
            ..f
        })
    });
    settle_rigid_faces(field);
    ran
}

/// [`run`] without rigid faces.
fn run_passes<T: Real>(
    field: &mut Wavefield<T>,
    scratch: &mut WaveScratch<T>,
    params: &EngineParams,
    pool: &rayon::ThreadPool,
    steps: usize,
    beside: Option<WaveBeside<'_, T>>,
) -> Result<(), Failure> {
    // The kernels point into the damping arrays: a copy outlives the run while the field
    // is borrowed mutably.
    let (kernel, damping) = (field.kernel().clone(), field.damping.clone());
    match params.engine {
        Engine::Reference => reference::run(field, scratch, steps),
        Engine::Blocked => {
            let updated = field.dims()[2] - 2 * kernel.radius();
            let job = blocked::BlockedRun {
                field,
                scratch,
                steps,
                dim_t: params.dim_t.max(1),
                tile: params.tile,
                depth: updated.div_ceil(params.z_chunks.max(1)),
                pool,
                beside,
                replay: params.replay,
            };
            rows::dispatch(&kernel, &damping, params.isa, job)
        }
        _ => {
            let job = naive::NaiveRun {
                field,
                scratch,
                steps,
                pool,
            };
            rows::dispatch(&kernel, &damping, params.isa, job)
        }
    }
}
