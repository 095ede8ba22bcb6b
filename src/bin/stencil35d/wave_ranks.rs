//! `mpirun -n N stencil35d run wave`: the shot split over the ranks. Rank 0 builds the model
//! and the wavefield and scatters it, every rank runs its block, and rank 0 shows the progress
//! and writes the snapshots, the gather and the summary from what it gathers.

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use stencil35d::distributed::{agreed, broadcast_json, common_plan, DistributedWavefield};
use stencil35d::memory::Footprint;
use stencil35d::wave::WaveKernel;
use stencil35d::{DType, Error, Plan, Real};

use crate::wave::{plan_for, prepare, shoot, Shot, WaveArgs};
use crate::wave_files::write_model;

/// Runs the shot `args` describe over the ranks of `world`.
pub fn run(args: &WaveArgs, world: &SimpleCommunicator) -> Result<(), Error> {
    match args.dtype {
        DType::F32 => simulate::<f32>(args, world),
        DType::F64 => simulate::<f64>(args, world),
    }
}

fn simulate<T: Real + Equivalence>(
    args: &WaveArgs,
    world: &SimpleCommunicator,
) -> Result<(), Error> {
    let root = world.rank() == 0;
    // Rank 0 checks the output directory and files and builds the shot; its kernel, size and
    // length make every rank's plan.
    let prepared = agreed(
        world,
        if root {
            prepare::<T>(args).map(Some)
        } else {
            Ok(None)
        },
    )?;
    let described = prepared
        .as_ref()
        .map(|(_, s, _)| (s.field.kernel().clone(), s.field.dims(), s.steps));
    let (kernel, dims, steps): (WaveKernel, [usize; 3], usize) =
        broadcast_json(world, 0, described.as_ref())?;
    // Every rank fails together if any cannot plan (a GPU engine on a host without one).
    let plan = common_plan(world, agreed(world, plan_for::<T>(args, &kernel, dims))?)?;
    let (guard, shot) = match prepared {
        Some((guard, shot, model)) => {
            eprintln!("{plan}");
            (Some(guard), Some((shot, model)))
        }
        None => (None, None),
    };
    // Every rank takes its block first (a rank short of memory fails here, on every rank),
    // then rank 0 writes the model's section: a failed split leaves no file behind.
    let whole = shot.as_ref().map(|(s, _)| &s.field);
    let mut field = DistributedWavefield::scatter(world, &plan, 0, whole)?;
    // Rank 0 lets go of the whole wavefield before the check, as the run would.
    let kept = shot.map(|(Shot { outputs, .. }, model)| (outputs, model));
    agreed(world, scratch_fits::<T>(&plan, field.local().dims()))?;
    let outputs = match kept {
        Some((mut outputs, model)) => {
            let section = write_model(args, &model, &mut outputs);
            agreed(world, section.map(|()| Some(outputs)))?
        }
        None => agreed(world, Ok(None))?,
    };
    shoot(args, &mut field, plan, steps, outputs)?;
    if let Some(guard) = guard {
        guard.keep();
    }
    Ok(())
}

/// Whether a rank's CPU engine finds memory for its scratch beside its block of `dims` cells
/// (the solver's own check, made before rank 0 writes anything: the run makes it again). The
/// GPU engines check their device memory when they upload.
fn scratch_fits<T: Real>(plan: &Plan, dims: [usize; 3]) -> Result<(), Error> {
    if plan.engine().is_gpu() {
        return Ok(());
    }
    let held = Footprint::wavefield(T::DTYPE).bytes(dims).unwrap_or(0);
    Footprint::wave_cpu_run(T::DTYPE, plan.ring_bytes())
        .with_label("in run wave (a rank's block and its engine's scratch)")
        .check_beside(dims, held, None)
}
