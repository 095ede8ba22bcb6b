//! `stencil35d run heat`: heat diffusion in a box — a hot wall at x = 0 and a hot ball in a cold
//! box — with a progress bar, PNG pictures of the middle slice and a summary line.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use stencil35d::memory::Footprint;
use stencil35d::output::{check_png_slice, write_png_slice, PictureOptions, Slice};
use stencil35d::{DType, Engine, Error, Grid, Plan, PlanBuilder, Real, Solver, State, Stencil};

use crate::args::{Overrides, Size};
use crate::checks::{shown, OutputDir};
use crate::progress::progress_bar;
use crate::ranks::Whole;

/// Options of `run heat`.
#[derive(Args, Debug)]
// The lattice storage options are shared with the commands that take a lattice; here they
// would only be refused.
#[command(
    mut_arg("in_place", |a| a.hide(true)),
    mut_arg("two_copies", |a| a.hide(true))
)]
pub struct HeatArgs {
    /// Grid size: N for N³, or NXxNYxNZ.
    #[arg(long, default_value = "128")]
    size: Size,
    /// Time steps.
    #[arg(long, default_value_t = 600)]
    steps: usize,
    /// Diffusion number ν = κΔt/Δx² (stable for ν ≤ 1/6).
    #[arg(long, default_value_t = 0.15, allow_negative_numbers = true)]
    nu: f64,
    /// Precision.
    #[arg(long, default_value = "f32")]
    dtype: DType,
    /// Write a picture every this many steps (0: only at the end).
    #[arg(long, default_value_t = 0)]
    every: usize,
    /// Output directory (created if missing; checked to be writable before the first step).
    #[arg(long, default_value = "out/heat")]
    out: PathBuf,
    /// Engine: reference, naive, blocked, gpu-naive or gpu-blocked (default: the planner's
    /// choice).
    #[arg(long)]
    engine: Option<Engine>,
    #[command(flatten)]
    overrides: Overrides,
}

pub fn run(args: &HeatArgs) -> Result<(), Error> {
    match args.dtype {
        DType::F32 => simulate::<f32>(args),
        DType::F64 => simulate::<f64>(args),
    }
}

fn simulate<T: Real>(args: &HeatArgs) -> Result<(), Error> {
    let plan = plan_for::<T>(args)?;
    // Every picture's path is checked before the first step; the directory is removed again
    // if the run fails before writing into it.
    let guard = OutputDir::prepare(&args.out, picture_files(args))?;
    let [nx, ny, nz] = args.size.0;
    check_png_slice(nx, ny, &picture_options(nz / 2, args.steps))?;
    eprintln!("{plan}");
    // The grid, and on the CPU its scratch and any ring buffers, checked before the grid is
    // filled: the run's own check comes only after that.
    let grids = if plan.engine().is_gpu() { 1 } else { 2 };
    Footprint::grids(T::DTYPE, grids)
        .plus(plan.ring_bytes())
        .with_label("in run heat")
        .check(args.size.0, 0, stencil35d::memory::available())?;
    let mut grid = Grid::<T>::from_fn(args.size.0, initial::<T>(args.size.0))?;
    heat(args, &mut grid, plan, true)?;
    guard.keep();
    Ok(())
}

/// The pictures the run writes: one every `--every` steps before the last, and the last.
fn picture_files(args: &HeatArgs) -> impl Iterator<Item = PathBuf> + '_ {
    let (every, steps) = (args.every, args.steps);
    (1..)
        .map(move |k| k * every)
        .take_while(move |&step| every > 0 && step < steps)
        .map(|step| picture_path(&args.out, step, true))
        .chain([picture_path(&args.out, steps, false)])
}

/// `run heat` over the ranks of `world`: every rank builds its block from the initial
/// temperatures of its global coordinates; rank 0 shows the progress and writes the pictures
/// of the gathered grid.
#[cfg(feature = "mpi")]
pub fn run_ranks(args: &HeatArgs, world: &mpi::topology::SimpleCommunicator) -> Result<(), Error> {
    use mpi::topology::Communicator;
    use stencil35d::distributed::{common_plan, DistributedGrid};
    fn split<T: Real + mpi::datatype::Equivalence>(
        args: &HeatArgs,
        world: &mpi::topology::SimpleCommunicator,
    ) -> Result<(), Error> {
        let root = world.rank() == 0;
        // Rank 0 alone writes, so it alone checks the output directory and every picture's
        // path before the first step; the directory is removed again if the run fails
        // before writing into it.
        let mut guard = None;
        let checked = plan_for::<T>(args).and_then(|plan| {
            if root {
                guard = Some(OutputDir::prepare(&args.out, picture_files(args))?);
                let [nx, ny, nz] = args.size.0;
                check_png_slice(nx, ny, &picture_options(nz / 2, args.steps))?;
            }
            Ok(plan)
        });
        let plan = common_plan(world, stencil35d::distributed::agreed(world, checked)?)?;
        if root {
            eprintln!("{plan}");
        }
        let mut grid = DistributedGrid::from_fn(world, &plan, initial::<T>(args.size.0))?;
        heat(args, &mut grid, plan, root)?;
        if let Some(guard) = guard {
            guard.keep();
        }
        Ok(())
    }
    match args.dtype {
        DType::F32 => split::<f32>(args, world),
        DType::F64 => split::<f64>(args, world),
    }
}

/// The plan for the diffusion stencil on the grid, with the command line's overrides. Errors:
/// an unstable diffusion number and no steps. (Pictures are written during and after the
/// run: the callers check the output directory before the first step.)
fn plan_for<T: Real>(args: &HeatArgs) -> Result<Plan, Error> {
    if !(args.nu > 0.0 && args.nu <= 1.0 / 6.0) {
        return Err(Error::Unstable(format!(
            "--nu {}: the diffusion number ν must be in (0, 1/6] for the explicit scheme to be \
             stable",
            shown(args.nu)
        )));
    }
    // A number the precision holds only as a subnormal (or zero) would diffuse nothing.
    if !T::of(args.nu).is_normal() {
        return Err(Error::InvalidArgument(format!(
            "--nu {}: the diffusion number is below the smallest normal {} number",
            shown(args.nu),
            T::DTYPE
        )));
    }
    if args.steps == 0 {
        return Err(Error::ZeroSteps);
    }
    crate::checks::check_cadence("--every", args.every, args.steps)?;
    let stencil = Stencil::seven_point(1.0 - 6.0 * args.nu, args.nu);
    let plan = args
        .overrides
        .apply_checked(
            PlanBuilder::new(stencil, T::DTYPE, args.size.0),
            args.engine,
        )?
        .build()?;
    // The run goes in parts (pictures, progress): its whole length is checked here.
    plan.check_run_length(args.steps)?;
    Ok(plan)
}

/// The initial temperatures: 1 on the wall x = 0 and in a ball at the centre, 0 elsewhere.
fn initial<T: Real>(dims: [usize; 3]) -> impl Fn(usize, usize, usize) -> T {
    let centre = dims.map(|n| n as f64 / 2.0);
    let radius = dims.iter().copied().min().unwrap_or(1) as f64 / 6.0;
    move |x, y, z| {
        let d2 = (x as f64 - centre[0]).powi(2)
            + (y as f64 - centre[1]).powi(2)
            + (z as f64 - centre[2]).powi(2);
        T::of(if x == 0 || d2 <= radius * radius {
            1.0
        } else {
            0.0
        })
    }
}

/// Runs `plan` on `grid` for the requested steps, with a progress bar where `shown`; the
/// process that holds the whole grid (the only one, or rank 0) writes the pictures and prints
/// the summary. Collective over the ranks of a split grid.
fn heat<T: Real, G: State + Whole<Grid<T>>>(
    args: &HeatArgs,
    grid: &mut G,
    plan: Plan,
    shown: bool,
) -> Result<(), Error> {
    let dims = args.size.0;
    let mut solver = Solver::new(plan);
    let chunk = if args.every > 0 {
        args.every
    } else {
        (args.steps / 100).max(1)
    };
    let bar = progress_bar(shown, args.steps);
    let start = Instant::now();
    let (mut done, mut busy) = (0, 0.0);
    let mut pictures = Vec::new();
    while done < args.steps {
        let n = chunk.min(args.steps - done);
        // A blow-up's step counts from the start of this command's run, not of the chunk.
        let report = solver.run(grid, n).map_err(|e| e.after_steps(done))?;
        done += n;
        busy += report.seconds;
        bar.set_position(done as u64);
        bar.set_message(format!("{:.0} MUPS", report.mups));
        if args.every > 0 && done % args.every == 0 && done < args.steps {
            pictures.extend(picture(grid, &args.out, done, true)?);
        }
    }
    bar.finish();
    // One gather for the last picture and the summary.
    let whole = grid.whole()?;
    let last = whole
        .as_deref()
        .map(|w| write_picture(w, &args.out, args.steps, false));
    pictures.extend(grid.agree(last.transpose())?);
    let Some(whole) = whole else {
        return Ok(());
    };
    let heat: f64 = whole.iter().map(|(_, v)| v.to_f64().unwrap_or(0.0)).sum();
    let updates = solver.plan().interior_cells() as f64 * args.steps as f64;
    println!(
        "heat: {} steps on {}x{}x{}{} in {:.2} s ({:.0} MUPS in the solver), total heat {:.1}; wrote {}",
        args.steps,
        dims[0],
        dims[1],
        dims[2],
        grid.split(),
        start.elapsed().as_secs_f64(),
        updates / busy / 1e6,
        heat,
        pictures.iter().map(|p| p.display().to_string()).collect::<Vec<_>>().join(", ")
    );
    Ok(())
}

/// Writes the middle z-slice after `step` steps as `heat.png` (or `heat_<step>.png` when
/// `numbered`): temperatures 0..1 with title, axes in cells and a colour bar.
fn picture<T: Real>(
    grid: &impl Whole<Grid<T>>,
    out: &std::path::Path,
    step: usize,
    numbered: bool,
) -> Result<Option<PathBuf>, Error> {
    let written = match grid.whole()? {
        Some(whole) => write_picture(&whole, out, step, numbered).map(Some),
        None => Ok(None),
    };
    grid.agree(written)
}

/// The path of the picture after `step` steps: `heat.png`, or `heat_<step>.png` when
/// `numbered`.
fn picture_path(out: &std::path::Path, step: usize, numbered: bool) -> PathBuf {
    if numbered {
        out.join(format!("heat_{step:06}.png"))
    } else {
        out.join("heat.png")
    }
}

/// [`picture`] of the whole grid.
fn write_picture<T: Real>(
    grid: &Grid<T>,
    out: &std::path::Path,
    step: usize,
    numbered: bool,
) -> Result<PathBuf, Error> {
    let path = picture_path(out, step, numbered);
    let z = grid.dims()[2] / 2;
    let slice = Slice::z_plane(grid, z);
    write_png_slice(&path, &slice, &picture_options(z, step))?;
    Ok(path)
}

/// How the picture of plane `z` after `step` steps is drawn.
fn picture_options(z: usize, step: usize) -> PictureOptions {
    PictureOptions::new(
        format!("temperature, z = {z}, step {step}"),
        "temperature (hot wall = 1)",
    )
    .with_range(0.0, 1.0)
}
