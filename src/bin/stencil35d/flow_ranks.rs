//! `mpirun -n N stencil35d run cavity|channel|sphere`: the scenario's lattice split over the
//! ranks. Rank 0 builds it and scatters it (or every rank reads its part of a checkpoint),
//! every rank runs its block, rank 0 shows the progress, draws the pictures from the gathered
//! lattice and prints the summary; `.vti` output is one piece per rank joined by a `.pvti`
//! file, and checkpoints are one file per rank.

use std::path::{Path, PathBuf};
use std::time::Instant;

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use stencil35d::distributed::{
    agreed, broadcast_json, common_plan, piece_path, pvti_path, rank_path, DistributedLattice,
};
use stencil35d::lbm::{CheckpointTag, Lattice, LbmKernel, Storage};
use stencil35d::output::{check_writable_dir, check_writable_file};
use stencil35d::{DType, Error, Plan, PlanBuilder, Real, Solver};

use crate::checks::{check_files, OutputDir};
use crate::flow::{
    flow_check_due, next_chunk, out_dir, output_stems, stem, write_picture, Finished, FlowOptions,
    Scenario,
};
use crate::progress::progress_bar;

/// Runs `scenario` with `opts` over the ranks of `world`.
pub fn run<S: Scenario>(
    scenario: &S,
    opts: &FlowOptions,
    world: &SimpleCommunicator,
) -> Result<(), Error> {
    match opts.dtype {
        DType::F32 => simulate::<f32, S>(scenario, opts, world),
        DType::F64 => simulate::<f64, S>(scenario, opts, world),
    }
}

fn simulate<T: Real + Equivalence, S: Scenario>(
    scenario: &S,
    opts: &FlowOptions,
    world: &SimpleCommunicator,
) -> Result<(), Error> {
    scenario.check()?;
    let steps = opts.steps.unwrap_or_else(|| scenario.default_steps());
    if steps == 0 {
        return Err(Error::ZeroSteps);
    }
    crate::checks::check_cadence("--every", opts.every, steps)?;
    let root = world.rank() == 0;
    let out = out_dir::<S>(opts);
    // Rank 0 creates the output directory, removed again if the run fails before writing
    // into it.
    let guard = root.then(|| OutputDir::watch(&out));
    agreed(
        world,
        if root {
            check_writable_dir(&out, "the output directory")
        } else {
            Ok(())
        },
    )?;
    let tag = CheckpointTag::new(S::NAME, scenario.geometry());
    let (plan, mut lat) = start::<T, S>(scenario, opts, world, &tag)?;
    // The run goes in parts: its whole length is checked first, then every file each rank
    // will write, every rank failing together.
    agreed(world, plan.check_run_length(steps))?;
    let rank = world.rank() as usize;
    let checkpoint = opts
        .checkpoint
        .as_ref()
        .map(|prefix| rank_path(prefix, rank, world.size() as usize));
    let files = rank_files::<S>(&out, opts, lat.local().steps(), steps, (rank, rank == 0));
    agreed(
        world,
        checkpoint
            .map_or(Ok(()), |c| check_writable_file(c, "the checkpoint"))
            .and_then(|()| check_files(files)),
    )?;
    let mut solver = Solver::new(plan);
    let bar = progress_bar(root, steps);
    let start = Instant::now();
    let mass0 = gathered_mass(&lat)?;
    let (mut done, mut busy, mut checked) = (0, 0.0, 0);
    let mut written: Vec<PathBuf> = Vec::new();
    while done < steps {
        let n = next_chunk(done, steps, opts);
        // A blow-up's step counts from the start of this command's run, not of the chunk.
        let report = solver.run(&mut lat, n).map_err(|e| e.after_steps(done))?;
        done += n;
        let due = |every: usize| every > 0 && done % every == 0 && done < steps;
        let output = due(opts.every) || due(opts.checkpoint_every);
        if flow_check_due(done, steps, &mut checked) || output {
            agreed(world, check_block_flow(&lat))?;
        }
        busy += report.seconds;
        bar.set_position(done as u64);
        bar.set_message(format!("{:.0} MLUPS", report.mups));
        // The checkpoint first: outputs that fail (a full disk) must not lose the steps run.
        if let (Some(prefix), true) = (&opts.checkpoint, due(opts.checkpoint_every)) {
            lat.save_tagged(prefix, &tag)?;
        }
        if due(opts.every) {
            let step = Some(lat.local().steps());
            written.extend(outputs(world, scenario, &lat, &out, opts, step)?);
        }
    }
    bar.finish_and_clear();
    if let Some(prefix) = &opts.checkpoint {
        lat.save_tagged(prefix, &tag)?;
    }
    written.extend(outputs(world, scenario, &lat, &out, opts, None)?);
    if let Some(prefix) = &opts.checkpoint {
        let last = rank_path(prefix, world.size() as usize - 1, world.size() as usize);
        written.push(PathBuf::from(format!(
            "{} (and one file per rank before it)",
            last.display()
        )));
    }
    let Some(whole) = lat.gather()? else {
        return Ok(());
    };
    let run = Finished {
        split: crate::ranks::split_note(lat.decomposition()),
        engine: solver.plan().engine(),
        steps,
        seconds: start.elapsed().as_secs_f64(),
        busy,
        mass0,
    };
    println!("{}", run.summary(scenario, &whole, &written));
    if let Some(guard) = guard {
        guard.keep();
    }
    Ok(())
}

/// The files besides the checkpoint a rank writes in a run of `steps` steps from step
/// `start`: every rank its `.vti` pieces (unless disabled), rank 0 (`root`) also the pictures
/// and the `.pvti` files that join the pieces.
fn rank_files<S: Scenario>(
    out: &Path,
    opts: &FlowOptions,
    start: u64,
    steps: usize,
    (rank, root): (usize, bool),
) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for stem in output_stems::<S>(opts, start, steps) {
        if root {
            files.push(out.join(format!("{stem}.png")));
        }
        if !opts.no_vti {
            files.push(piece_path(out, &stem, rank));
            if root {
                files.push(pvti_path(out, &stem));
            }
        }
    }
    files
}

/// Every rank's plan (rank 0's choices) and its part of the lattice: scattered from the
/// scenario's lattice, which rank 0 builds, or read from the --restart checkpoint. Collective.
fn start<T: Real + Equivalence, S: Scenario>(
    scenario: &S,
    opts: &FlowOptions,
    world: &SimpleCommunicator,
    tag: &CheckpointTag,
) -> Result<(Plan, DistributedLattice<T>), Error> {
    let root = world.rank() == 0;
    // An option the engine does not take is refused (on every rank alike) before the lattice
    // is built.
    opts.overrides.check_taken(&[opts.engine])?;
    // Rank 0 builds the scenario's lattice: its kernel and size make every rank's plan.
    let whole = agreed(
        world,
        if root {
            let saved = restart_storage::<T>(opts, world.size() as usize);
            restart_dtype::<T>(opts, world.size() as usize).and_then(|()| {
                let asked = opts.storage_for(T::DTYPE)?;
                same_storage(asked, saved)?;
                let mut lat = scenario.build::<T>()?;
                if let Some(storage) = asked.or(saved) {
                    lat.set_storage(storage)?;
                }
                Ok(Some(lat))
            })
        } else {
            Ok(None)
        },
    )?;
    let described = whole.as_ref().map(|l| (LbmKernel::of(l), l.dims()));
    let (kernel, dims): (LbmKernel, [usize; 3]) = broadcast_json(world, 0, described.as_ref())?;
    let plan = opts
        .overrides
        .apply_checked(PlanBuilder::new(kernel, T::DTYPE, dims), opts.engine)
        .and_then(PlanBuilder::build);
    // Every rank fails together if any cannot plan (a GPU engine on a host without one).
    let plan = common_plan(world, agreed(world, plan)?)?;
    if root {
        eprintln!("{plan}");
    }
    let lat = match &opts.restart {
        Some(prefix) => {
            let lat = DistributedLattice::<T>::load_tagged(world, &plan, prefix, tag)?;
            // Every rank holds the same physics (the load checks it), so all refuse alike.
            let tau = lat.local().physics().tau();
            crate::flow::check_restarted(scenario, plan.dims(), tau, prefix)?;
            if root {
                eprintln!(
                    "restarting from {}.* at step {}",
                    prefix.display(),
                    lat.local().steps()
                );
            }
            lat
        }
        None => DistributedLattice::scatter(world, &plan, 0, whole.as_ref())?,
    };
    Ok((plan, lat))
}

/// Refuses a --storage (`asked`) other than the checkpoint's (`saved`): the ranks read their
/// files in the storage they were written in.
fn same_storage(asked: Option<Storage>, saved: Option<Storage>) -> Result<(), Error> {
    match (asked, saved) {
        (Some(asked), Some(saved)) if asked != saved => Err(Error::InvalidArgument(format!(
            "--storage {asked}: a run split over ranks restarts in its checkpoint's storage, \
             {saved} (one process converts: restart it there, or leave --storage out)"
        ))),
        _ => Ok(()),
    }
}

/// Refuses a --restart checkpoint whose first rank file holds another precision than
/// `--dtype`, naming the option to run with (as in one process); a file that cannot be read
/// is left to the load, which says why on every rank.
fn restart_dtype<T: Real>(opts: &FlowOptions, ranks: usize) -> Result<(), Error> {
    let Some(prefix) = &opts.restart else {
        return Ok(());
    };
    match Lattice::<T>::checkpoint_dtype(rank_path(prefix, 0, ranks)) {
        Ok(dtype) if dtype != T::DTYPE => Err(Error::InvalidArgument(format!(
            "--restart {}: the checkpoint holds {dtype} populations: run with --dtype {dtype}",
            prefix.display()
        ))),
        _ => Ok(()),
    }
}

/// The storage of the --restart checkpoint's first rank file (its header), which a restart
/// without --storage keeps (as in one process); `None` when there is no restart or the file
/// cannot be read (the load then says why, on every rank).
fn restart_storage<T: Real>(opts: &FlowOptions, ranks: usize) -> Option<Storage> {
    let prefix = opts.restart.as_ref()?;
    Lattice::<T>::checkpoint_storage(rank_path(prefix, 0, ranks)).ok()
}

/// The whole lattice's mass (rank 0; 0 elsewhere). Collective.
fn gathered_mass<T: Real + Equivalence>(lat: &DistributedLattice<T>) -> Result<f64, Error> {
    Ok(lat.gather()?.map_or(0.0, |w| w.mass()))
}

/// This rank's block checked for a diverged flow ([`Lattice::check_flow`]): its own nodes only
/// (its halos hold what the last exchange brought, or nothing where a blocked pass's exchange
/// went beside it), named in the whole lattice's coordinates. Where several ranks find one,
/// the lowest-numbered of them names its node.
fn check_block_flow<T: Real + Equivalence>(lat: &DistributedLattice<T>) -> Result<(), Error> {
    let (local, block) = (lat.local(), lat.block());
    let whole = |[x, y, z]: [usize; 3]| [x, block.global(0, y), block.global(1, z)];
    let mut range = local.flow_range_in(block.owned_local(0), block.owned_local(1));
    range.min_density_at = whole(range.min_density_at);
    range.max_speed_at = whole(range.max_speed_at);
    range.check(local.steps())
}

/// Rank 0 writes the picture of the gathered lattice; unless disabled every rank writes its
/// `.vti` piece and rank 0 the `.pvti` that joins them. Collective.
fn outputs<T: Real + Equivalence, S: Scenario>(
    world: &SimpleCommunicator,
    scenario: &S,
    lat: &DistributedLattice<T>,
    out: &std::path::Path,
    opts: &FlowOptions,
    step: Option<u64>,
) -> Result<Vec<PathBuf>, Error> {
    let stem = stem::<S>(step);
    let picture = match lat.gather()? {
        Some(whole) => write_picture(scenario, &whole, out, &stem).map(Some),
        None => Ok(None),
    };
    let mut files: Vec<PathBuf> = agreed(world, picture)?.into_iter().collect();
    if !opts.no_vti {
        files.push(lat.write_pvti(out, &stem)?);
    }
    Ok(files)
}
