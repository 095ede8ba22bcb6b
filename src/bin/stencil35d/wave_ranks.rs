//! `mpirun -n N stencil35d run wave`: the shot split over the ranks. Rank 0 builds the model
//! and the wavefield and scatters it, every rank runs its block, and rank 0 shows the progress
//! and writes the snapshots, the gather and the summary from what it gathers.

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use stencil35d::distributed::{agreed, broadcast_json, common_plan, DistributedWavefield};
use stencil35d::wave::WaveKernel;
use stencil35d::{DType, Error, Real};

use crate::wave::{plan_for, prepare, shoot, write_model, WaveArgs};

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
        Some((guard, mut shot, model)) => {
            eprintln!("{plan}");
            let section = write_model(args, &model, &mut shot.outputs);
            (Some(guard), agreed(world, section.map(|()| Some(shot)))?)
        }
        None => (None, agreed(world, Ok(None))?),
    };
    let mut field =
        DistributedWavefield::scatter(world, &plan, 0, shot.as_ref().map(|s| &s.field))?;
    shoot(args, &mut field, plan, steps, shot.map(|s| s.outputs))?;
    if let Some(guard) = guard {
        guard.keep();
    }
    Ok(())
}
