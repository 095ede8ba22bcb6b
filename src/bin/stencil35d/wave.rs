//! `stencil35d run wave`: one seismic shot — a Ricker source near the surface of a
//! homogeneous, layered or salt-body velocity model (or a model read from `.npy`), receivers
//! along a line or on a grid — with a progress bar; writes the shot gather (`.npy`, SEG-Y
//! rev 1, PNG), wavefield snapshots (PNG sections and `.vti`), the model's section and a
//! summary.

use std::path::PathBuf;
use std::time::Instant;

use clap::{Args, ValueEnum};
use stencil35d::output::{check_segy_positions, read_npy_f64, read_npy_shape};
use stencil35d::wave::{models, Face, Receiver, Source, WaveKernel, Wavefield, Wavelet};
use stencil35d::{DType, Engine, Error, Grid, Plan, PlanBuilder, Real, Solver, State};

use crate::args::{Overrides, Size};
use crate::checks::{approx, at_most, check_files, shown, OutputDir};
use crate::progress::progress_bar;
use crate::ranks::Whole;
use crate::wave_checks::{check_frequency, check_memory, check_options, time_step, velocity_range};
use crate::wave_files::{finish, write_model, write_snapshot};

/// The built-in velocity models.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Model {
    /// 2,000 m/s everywhere.
    Homogeneous,
    /// Five horizontal layers from 1,500 to 3,500 m/s.
    Layered,
    /// Water over sediments with two dipping reflectors and a salt dome (4,500 m/s).
    Salt,
}

/// Receiver layouts.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub(crate) enum Layout {
    /// A line along x through the source, at the source's depth.
    Line,
    /// A grid over x and y (every --receiver-spacing cells between the layers) at the source's
    /// depth.
    Grid,
}

/// A face of the model that `--rigid` can make a rigid wall.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum RigidFace {
    /// The low z face (z is depth).
    Top,
    /// The high z face.
    Bottom,
    /// The low x face.
    XLow,
    /// The high x face.
    XHigh,
    /// The low y face.
    YLow,
    /// The high y face.
    YHigh,
}

impl RigidFace {
    /// Its axis and side.
    fn axis_side(self) -> (usize, usize) {
        match self {
            RigidFace::Top => (2, 0),
            RigidFace::Bottom => (2, 1),
            RigidFace::XLow => (0, 0),
            RigidFace::XHigh => (0, 1),
            RigidFace::YLow => (1, 0),
            RigidFace::YHigh => (1, 1),
        }
    }
}

/// Options of `run wave`.
#[derive(Args, Debug)]
// The lattice storage options are shared with the commands that take a lattice; here they
// would only be refused.
#[command(
    mut_arg("in_place", |a| a.hide(true)),
    mut_arg("two_copies", |a| a.hide(true))
)]
pub struct WaveArgs {
    /// Velocity model.
    #[arg(long, value_enum, default_value = "salt")]
    model: Model,
    /// A velocity model in m/s from a `.npy` file of shape (nz, ny, nx) (x fastest, as the
    /// grids are stored); replaces --model and --size, which cannot be given with it.
    #[arg(long, conflicts_with_all = ["model", "size"])]
    pub(crate) velocity: Option<PathBuf>,
    /// Grid size: N for N³, or NXxNYxNZ (z is depth).
    #[arg(long, default_value = "200x200x150")]
    size: Size,
    /// Cell size, metres.
    #[arg(long, default_value_t = 10.0, allow_negative_numbers = true)]
    pub(crate) spacing: f64,
    /// Space order: 2, 4, 6 or 8.
    #[arg(long, default_value_t = 8)]
    pub(crate) order: usize,
    /// Width of the absorbing layers, cells.
    #[arg(long, default_value_t = stencil35d::wave::DEFAULT_PML_WIDTH)]
    pml: usize,
    /// A free surface at the top instead of an absorbing layer (the pressure held at zero in
    /// the R cells above the updated ones).
    #[arg(long)]
    pub(crate) free_surface: bool,
    /// Faces that are rigid walls instead of absorbing layers (zero normal derivative of the
    /// pressure; waves reflect with their polarity kept), comma-separated: top, bottom,
    /// x-low, x-high, y-low, y-high. The engines then run one step per pass.
    #[arg(long, value_enum, value_delimiter = ',')]
    rigid: Vec<RigidFace>,
    /// Time step, seconds, a whole number of microseconds from 1 to 32767 (SEG-Y's sample
    /// interval) (default: 80% of the stability limit, rounded down to whole microseconds).
    #[arg(long, allow_negative_numbers = true)]
    pub(crate) dt: Option<f64>,
    /// Recording time, seconds.
    #[arg(long, default_value_t = 2.0, allow_negative_numbers = true)]
    pub(crate) time: f64,
    /// Peak frequency of the Ricker source, Hz (at most the grid's Nyquist frequency, the
    /// slowest velocity over twice the spacing).
    #[arg(long, default_value_t = 12.0, allow_negative_numbers = true)]
    pub(crate) freq: f64,
    /// Source depth in cells below the grid's top, also the receivers' (default: 2 cells below
    /// the top absorbing layer, or under a free surface or rigid top 5 cells below the first
    /// updated cell, R + 5). Near an absorbing top the direct wave weakens at far offsets
    /// (grazing incidence); for its true amplitude place the shot a wavelength or more below
    /// the layer.
    #[arg(long)]
    source_depth: Option<usize>,
    /// Receiver layout.
    #[arg(long, value_enum, default_value = "line")]
    pub(crate) receivers: Layout,
    /// Cells between receivers (at least 1).
    #[arg(long, default_value_t = 2)]
    pub(crate) receiver_spacing: usize,
    /// Wavefield snapshots written during the run (PNG section and `.vti`), evenly spread, the
    /// last at the end; at most one per step.
    #[arg(long, default_value_t = 4)]
    pub(crate) snapshots: usize,
    /// Precision.
    #[arg(long, default_value = "f32")]
    pub(crate) dtype: DType,
    /// Output directory (created if missing; checked to be writable before the first step).
    #[arg(long, default_value = "out/wave")]
    pub(crate) out: PathBuf,
    /// Engine: reference, naive, blocked, gpu-naive or gpu-blocked (default: the planner's
    /// choice).
    #[arg(long)]
    engine: Option<Engine>,
    #[command(flatten)]
    overrides: Overrides,
}

pub fn run(args: &WaveArgs) -> Result<(), Error> {
    match args.dtype {
        DType::F32 => simulate::<f32>(args),
        DType::F64 => simulate::<f64>(args),
    }
}

/// The velocity model the options name. A `.npy` model's shape is read and checked against
/// the memory before its values, and its values are checked (see [`velocity_range`]) before
/// they are converted to the run's precision. Returns the model with its slowest and fastest
/// velocity, found by that one check.
fn velocity<T: Real>(args: &WaveArgs) -> Result<(Grid<T>, (f64, f64)), Error> {
    if let Some(path) = &args.velocity {
        let shape = read_npy_shape(path)?;
        let [nz, ny, nx] = shape[..] else {
            let dims: Vec<String> = shape.iter().map(usize::to_string).collect();
            return Err(Error::InvalidArgument(format!(
                "--velocity {}: a velocity model is a 3D array of shape (nz, ny, nx), not ({})",
                path.display(),
                dims.join(", ")
            )));
        };
        check_memory::<T>(
            [nx, ny, nz],
            smallest_side(args),
            stencil35d::memory::available(),
        )?;
        check_dims(args, [nx, ny, nz])?;
        let (_, values) = read_npy_f64(path)?;
        let cell = |i: usize| [i % nx, i / nx % ny, i / (nx * ny)];
        let cells = values.iter().enumerate().map(|(i, &v)| (cell(i), v));
        let range = velocity_range(cells, &model_label(args))?;
        let data: Vec<T> = values.iter().map(|&v| T::of(v)).collect();
        return Ok((Grid::from_slice([nx, ny, nz], &data)?, range));
    }
    let dims = args.size.0;
    check_memory::<T>(dims, smallest_side(args), stencil35d::memory::available())?;
    check_dims(args, dims)?;
    let model: Grid<T> = match args.model {
        Model::Homogeneous => models::homogeneous(dims, 2000.0),
        Model::Layered => {
            // Five layers, fewer on grids under 5 cells deep (a deeper layer that starts at
            // the same depth as the one above replaces it).
            let mut layers: Vec<(usize, f64)> = Vec::new();
            for i in 0..5 {
                let layer = (i * dims[2] / 5, 1500.0 + 500.0 * i as f64);
                if layers.last().is_some_and(|l| l.0 == layer.0) {
                    layers.pop();
                }
                layers.push(layer);
            }
            models::layered(dims, &layers)
        }
        Model::Salt => models::salt(dims),
    }?;
    let cells = model
        .iter()
        .map(|(c, v)| (c, v.to_f64().unwrap_or(f64::NAN)));
    let range = velocity_range(cells, &model_label(args))?;
    Ok((model, range))
}

/// The model as the options name it, for messages: `--velocity FILE` or `--model NAME`.
fn model_label(args: &WaveArgs) -> String {
    match &args.velocity {
        Some(path) => format!("--velocity {}", path.display()),
        None => format!("--model {}", model_name(args)),
    }
}

/// What the options ask of a grid of `dims` cells, checked before its model is read or
/// built: room for the order's boundary layer and the absorbing layers, and a source depth
/// and receiver layout within it.
fn check_dims(args: &WaveArgs, dims: [usize; 3]) -> Result<(), Error> {
    let k = faces(args)?;
    k.validate_dims(dims)?;
    geometry(args, dims, k.radius()).map(drop)
}

/// The side of the smallest cube the options take (its layers, faces, source and receivers
/// fit), for the advice of an out-of-memory error; where the search finds none, the smallest
/// the kernel alone takes (the options' own checks then name what is wrong).
fn smallest_side(args: &WaveArgs) -> usize {
    let Ok(k) = faces(args) else {
        return 1;
    };
    let lo = k.smallest_side();
    // A few hundred sizes at most: where none of them takes the options (a --pml or
    // --spacing too large for SEG-Y's coordinates, say), no larger one will.
    (lo..=lo.saturating_mul(2).saturating_add(64))
        .take(256)
        .find(|&n| check_dims(args, [n; 3]).is_ok())
        .unwrap_or(lo)
}

/// The kernel: order, spacing, layers and the time step (whole microseconds, for SEG-Y).
fn kernel(args: &WaveArgs, v_max: f64) -> Result<WaveKernel, Error> {
    let mut k = faces(args)?;
    k.v_max = v_max;
    k.dt = time_step(args, k.max_stable_dt(v_max), v_max)?;
    Ok(k)
}

/// The kernel's order, spacing and faces, with a placeholder velocity and time step.
fn faces(args: &WaveArgs) -> Result<WaveKernel, Error> {
    let mut k = WaveKernel::new(args.spacing, 1e-3, 1.0)
        .with_order(args.order)
        .with_pml(args.pml);
    if args.free_surface {
        if args.rigid.contains(&RigidFace::Top) {
            return Err(Error::InvalidArgument(
                "--free-surface and --rigid top name the same face: pick one".into(),
            ));
        }
        k = k.with_free_surface();
    }
    for (i, face) in args.rigid.iter().enumerate() {
        if args.rigid[..i].contains(face) {
            let name = face.to_possible_value().map(|v| v.get_name().to_string());
            return Err(Error::InvalidArgument(format!(
                "--rigid names {} twice: name each face once",
                name.unwrap_or_default()
            )));
        }
        let (axis, side) = face.axis_side();
        k = k.with_face(axis, side, Face::Rigid);
    }
    Ok(k)
}

/// Most traces a SEG-Y file holds per shot, and most samples per trace (signed 16-bit fields).
const SEGY_MAX: usize = stencil35d::output::SEGY_MAX_16;

/// The source's depth in cells: --source-depth, or 2 cells below the top absorbing layer (5
/// below the first updated cell under a free surface or rigid top). Errors: a depth outside
/// the updated cells, or a default one in the bottom absorbing layer.
fn source_depth(args: &WaveArgs, dims: [usize; 3], r: usize) -> Result<usize, Error> {
    let top = if args.free_surface || args.rigid.contains(&RigidFace::Top) {
        r + 5
    } else {
        args.pml.saturating_add(2)
    };
    let depth = args.source_depth.unwrap_or(top);
    // The option as given, or what the default is, for the messages.
    let named = match args.source_depth {
        Some(_) => format!("--source-depth {depth}"),
        None => format!("the default source depth, {depth} cells,"),
    };
    if !(r..dims[2] - r).contains(&depth) {
        return Err(Error::InvalidArgument(format!(
            "{named} lies outside the updated cells {r} to {} of the {} depth cells",
            dims[2] - r - 1,
            dims[2]
        )));
    }
    let bottom = dims[2].saturating_sub(args.pml);
    let absorbing_bottom = !args.rigid.contains(&RigidFace::Bottom);
    if args.source_depth.is_none() && absorbing_bottom && depth >= bottom {
        return Err(Error::InvalidArgument(format!(
            "{named} lies in the bottom absorbing layer (cells {bottom} to {}), where the source \
             and the receivers beside it would be damped: use more than {} depth cells, a \
             narrower --pml, or --source-depth",
            dims[2] - 1,
            depth.saturating_add(args.pml)
        )));
    }
    Ok(depth)
}

/// The source and the receivers at the source's depth. Errors: a source depth outside the
/// updated cells, no receiver between the absorbing layers, or more than SEG-Y holds.
fn geometry(args: &WaveArgs, dims: [usize; 3], r: usize) -> Result<(Source, Vec<Receiver>), Error> {
    let h = args.spacing;
    let depth = source_depth(args, dims, r)?;
    let (cx, cy) = (dims[0] / 2, dims[1] / 2);
    let source = Source {
        position: [cx as f64 * h, cy as f64 * h, depth as f64 * h],
        wavelet: Wavelet::ricker(args.freq),
    };
    // At least 1 (check_options).
    let step = args.receiver_spacing.max(1);
    // Between the absorbing layers, or from the first updated cell at a rigid face (which
    // needs no layer, so --pml may exceed half an axis that has two).
    let edge = |axis: usize, side: usize| {
        let rigid = args.rigid.iter().any(|f| f.axis_side() == (axis, side));
        if rigid {
            r
        } else {
            args.pml
        }
    };
    let span =
        |axis: usize| (edge(axis, 0)..dims[axis].saturating_sub(edge(axis, 1))).step_by(step);
    let at = |x: usize, y: usize| Receiver::at([x as f64 * h, y as f64 * h, depth as f64 * h]);
    // Counted before they are listed: a huge grid must not list a huge layout to refuse it.
    let count = match args.receivers {
        Layout::Line => span(0).len(),
        Layout::Grid => span(0).len().saturating_mul(span(1).len()),
    };
    if count == 0 || count > SEGY_MAX {
        return Err(Error::InvalidArgument(format!(
            "{count} receivers: the layout needs between 1 and {SEGY_MAX} (one SEG-Y shot \
             record) between the absorbing layers; change --receiver-spacing, --pml or --size"
        )));
    }
    let receivers: Vec<Receiver> = match args.receivers {
        Layout::Line => span(0).map(|x| at(x, cy)).collect(),
        Layout::Grid => span(1)
            .flat_map(|y| span(0).map(move |x| (x, y)))
            .map(|(x, y)| at(x, y))
            .collect::<Vec<_>>(),
    };
    let positions: Vec<[f64; 3]> = receivers.iter().map(|r| r.position).collect();
    check_segy_positions(source.position, &positions).map_err(|e| match e {
        Error::InvalidArgument(m) => Error::InvalidArgument(format!(
            "{m}: with --spacing {h} m the grid spans {:.3e} m; lower --spacing or --size",
            h * dims.iter().copied().max().unwrap_or(0) as f64
        )),
        other => other,
    })?;
    Ok((source, receivers))
}

fn simulate<T: Real>(args: &WaveArgs) -> Result<(), Error> {
    let (guard, mut shot, model) = prepare::<T>(args)?;
    let plan = plan_for::<T>(args, shot.field.kernel(), shot.field.dims())?;
    write_model(args, &model, &mut shot.outputs)?;
    drop(model);
    eprintln!("{plan}");
    let (mut field, steps, outputs) = (shot.field, shot.steps, shot.outputs);
    shoot(args, &mut field, plan, steps, Some(outputs))?;
    guard.keep();
    Ok(())
}

/// Checks --out, builds the shot and its model and checks every file the shot will write:
/// the output directory before the model is read and the shot built, each output file (their
/// number follows from the shot's steps) before the first step. The returned guard removes
/// the directory again if the run fails before writing into it. Errors: an output that
/// cannot be written, a bad model, frequency, time step, recording time or geometry.
pub(crate) fn prepare<T: Real>(args: &WaveArgs) -> Result<(OutputDir, Shot<T>, Grid<T>), Error> {
    // An option the engine does not take is refused before the model is built.
    args.overrides.check_taken(&[args.engine])?;
    let guard = OutputDir::prepare(&args.out, [])?;
    let (shot, model) = build::<T>(args)?;
    check_files(output_files(args, shot.steps))?;
    Ok((guard, shot, model))
}

/// The files a shot of `steps` steps writes in --out: the model's section, the snapshots,
/// the gather and the summary.
fn output_files(args: &WaveArgs, steps: usize) -> Vec<PathBuf> {
    let snapshots = snapshot_steps(steps, args.snapshots)
        .into_iter()
        .flat_map(|step| ["png", "vti"].map(|ext| snapshot_name(step, ext)));
    ["velocity.png".to_string()]
        .into_iter()
        .chain(snapshots)
        .chain(["gather.npy", "gather.segy", "gather.png", "summary.json"].map(String::from))
        .map(|name| args.out.join(name))
        .collect()
}

/// The name of the snapshot after `step` steps, with extension `ext`.
pub(crate) fn snapshot_name(step: usize, ext: &str) -> String {
    format!("snapshot_{step:06}.{ext}")
}

/// The steps after which [`shoot`] writes a snapshot: `snapshots` of them evenly spread over
/// the shot's `steps` steps, the last at its end (at most one per step; none for 0).
fn snapshot_steps(steps: usize, snapshots: usize) -> Vec<usize> {
    let n = snapshots.min(steps);
    (1..=n).map(|k| (k * steps).div_ceil(n)).collect()
}

/// A shot ready to run: its wavefield with the source and receivers, its length in steps, and
/// what the outputs need.
pub(crate) struct Shot<T: Real> {
    pub(crate) field: Wavefield<T>,
    pub(crate) steps: usize,
    pub(crate) outputs: Outputs,
}

/// What the process that writes the outputs keeps of the shot: the model's values (for the
/// snapshots' volumes), the source, the receiver count, the section's y and the files
/// written so far.
pub(crate) struct Outputs {
    pub(crate) model: Vec<f32>,
    pub(crate) source: Source,
    pub(crate) receivers: usize,
    pub(crate) y: usize,
    pub(crate) written: Vec<PathBuf>,
}

/// The shot's length in steps of `dt`: --time (positive: [`check_options`]) must make 1 to
/// `SEGY_MAX − 1` steps (a trace holds the samples at t = 0 and after every step).
fn shot_steps(time: f64, dt: f64) -> Result<usize, Error> {
    let steps = (time / dt).round();
    // The step is whole microseconds: shown as such, not as the product's rounding.
    let whole_us = (dt * 1e6).round() / 1e6;
    if !(1.0..SEGY_MAX as f64).contains(&steps) {
        return Err(Error::InvalidArgument(format!(
            "--time {} s is {} steps of {} s: a shot record holds 1 to {} steps (a sample more); use --time \
             from {} to {} s",
            shown(time),
            approx(steps),
            shown(whole_us),
            SEGY_MAX - 1,
            shown(whole_us),
            at_most(dt * (SEGY_MAX - 1) as f64)
        )));
    }
    Ok(steps as usize)
}

/// Builds the model and the wavefield with its source and receivers, checking every option
/// first; writes nothing. Returns the shot and the model. Errors: a bad model, frequency, time
/// step, recording time or geometry.
fn build<T: Real>(args: &WaveArgs) -> Result<(Shot<T>, Grid<T>), Error> {
    check_options(args)?;
    // The model is checked first: its velocities set the time step and the frequencies the
    // grid carries.
    let (model, (v_min, v_max)) = velocity::<T>(args)?;
    let dims = model.dims();
    check_frequency(args, v_min)?;
    let kernel = kernel(args, v_max)?;
    let steps = shot_steps(args.time, kernel.dt)?;
    let mut field = Wavefield::new(kernel, &model)?;
    let (source, receivers) = geometry(args, dims, field.kernel().radius())?;
    field.add_source(source.clone())?;
    field.add_receivers(&receivers)?;
    let y = (source.position[1] / args.spacing).round() as usize;
    // The model's values for the snapshots' volumes, converted once.
    let values = model
        .iter()
        .map(|(_, v)| v.to_f64().unwrap_or(f64::NAN) as f32)
        .collect();
    let outputs = Outputs {
        model: values,
        source,
        receivers: receivers.len(),
        y,
        written: Vec::new(),
    };
    let shot = Shot {
        field,
        steps,
        outputs,
    };
    Ok((shot, model))
}

/// The plan for the shot's kernel on `dims`, with the command line's overrides.
pub(crate) fn plan_for<T: Real>(
    args: &WaveArgs,
    kernel: &WaveKernel,
    dims: [usize; 3],
) -> Result<Plan, Error> {
    args.overrides
        .apply_checked(
            PlanBuilder::new(kernel.clone(), T::DTYPE, dims),
            args.engine,
        )?
        .build()
}

/// Runs the shot's `steps` steps on `field` with `plan`, with a progress bar; the process
/// that holds `outputs` (the only one, or rank 0) writes the snapshots, the gather and the
/// summary. Collective over the ranks of a split field.
pub(crate) fn shoot<T: Real, F: State + Whole<Wavefield<T>>>(
    args: &WaveArgs,
    field: &mut F,
    plan: Plan,
    steps: usize,
    mut outputs: Option<Outputs>,
) -> Result<(), Error> {
    let mut solver = Solver::new(plan);
    let writes = outputs.is_some();
    let bar = progress_bar(writes, steps);
    // A hundredth of the shot per run, for the progress bar, cut at the snapshots.
    let chunk = (steps / 100).max(1);
    let due = snapshot_steps(steps, args.snapshots);
    let (start, mut busy, mut done) = (Instant::now(), 0.0, 0);
    let stopped = |done: usize| {
        if writes {
            eprintln!(
                "wave: the shot stopped after step {done}; no gather or summary was written \
                 (the snapshots written before stay)"
            );
        }
    };
    while done < steps {
        let stop = due.iter().copied().find(|&d| d > done).unwrap_or(steps);
        let n = chunk.min(stop - done);
        let report = solver.run(field, n).map_err(|e| {
            if matches!(e, Error::NonFinite { .. } | Error::RankFailed { .. }) {
                stopped(done);
            }
            // Steps counted from the shot's start, not from this part's.
            e.after_steps(done)
        })?;
        done += n;
        busy += report.seconds;
        bar.set_position(done as u64);
        bar.set_message(format!("{:.0} MUPS", report.mups));
        // The last snapshot is written with the gather and the summary.
        if done < steps && due.binary_search(&done).is_ok() {
            snapshot_along(args, field, outputs.as_mut()).inspect_err(|_| stopped(done))?;
        }
    }
    bar.finish();
    let last = match (field.whole()?, outputs) {
        (Some(whole), Some(o)) => finish(args, &whole, o, &solver, busy).map(|n| Some((whole, n))),
        _ => Ok(None),
    };
    // On failure the writer has said what became of its files (wave_files::finish).
    let last = field.agree(last)?;
    let Some((whole, written)) = last else {
        return Ok(());
    };
    println!(
        "wave: {steps} steps of {:.2e} s on {}x{}x{}{} ({} engine) in {:.1} s, {:.0} MUPS; {} \
         receivers; wrote {written} files to {}",
        whole.kernel().dt,
        whole.dims()[0],
        whole.dims()[1],
        whole.dims()[2],
        field.split(),
        solver.plan().engine(),
        start.elapsed().as_secs_f64(),
        mups(&solver, steps, busy),
        whole.receivers().len(),
        args.out.display()
    );
    Ok(())
}

/// The model's name: the `.npy` file, or the built-in model's.
pub(crate) fn model_name(args: &WaveArgs) -> String {
    args.velocity.as_ref().map_or_else(
        || format!("{:?}", args.model).to_lowercase(),
        |p| p.display().to_string(),
    )
}

/// Writes a snapshot of the shot along its way (by the process that holds `outputs`) and
/// records it. Collective over the ranks of a split field.
fn snapshot_along<T: Real, F: State + Whole<Wavefield<T>>>(
    args: &WaveArgs,
    field: &F,
    outputs: Option<&mut Outputs>,
) -> Result<(), Error> {
    let files = match (field.whole()?, &outputs) {
        (Some(whole), Some(o)) => write_snapshot(&whole, o, args),
        _ => Ok(Vec::new()),
    };
    let files = field.agree(files)?;
    if let Some(o) = outputs {
        o.written.extend(files);
    }
    Ok(())
}

/// Grid points updated per second in the solver, in millions.
pub(crate) fn mups(solver: &Solver, steps: usize, busy: f64) -> f64 {
    solver.plan().interior_cells() as f64 * steps as f64 / busy / 1e6
}

#[cfg(test)]
mod tests {
    use super::snapshot_steps;

    /// As many snapshots as asked, evenly spread, the last at the end; at most one per step.
    #[test]
    fn snapshots_are_as_many_as_asked_and_evenly_spread() {
        assert_eq!(snapshot_steps(150, 100).len(), 100);
        assert_eq!(snapshot_steps(150, 4), vec![38, 75, 113, 150]);
        assert_eq!(snapshot_steps(10, 1000), (1..=10).collect::<Vec<_>>());
        assert_eq!(snapshot_steps(7, 1), vec![7]);
        assert!(snapshot_steps(10, 0).is_empty());
    }
}
