//! What the lattice-Boltzmann scenarios (`run cavity`, `run channel`, `run sphere`) share:
//! options for steps, precision, engine, outputs and checkpoints, and the loop that runs a
//! lattice with a progress bar, writes PNG slices and `.vti` files, saves checkpoints and
//! prints the summary line.

use std::path::{Path, PathBuf};
use std::time::Instant;

use clap::Args;
use stencil35d::lbm::{CheckpointTag, Lattice, LbmKernel, Storage, LATTICE_NODE_BYTES, MAX_SPEED};
use stencil35d::memory::Footprint;
use stencil35d::output::{
    check_writable_dir, check_writable_file, write_lattice_vti, write_png_slice, PictureAxis,
    PictureOptions, Slice,
};
use stencil35d::{DType, Engine, Error, PlanBuilder, Real, Solver};

use crate::args::{Overrides, StorageArg};
use crate::checks::{check_named_files, shown, OutputDir};
use crate::progress::progress_bar;

/// Options every flow scenario takes.
#[derive(Args, Debug, Clone)]
pub struct FlowOptions {
    /// Time steps to run (in addition to those of a --restart file). Default: the scenario's.
    #[arg(long)]
    pub steps: Option<usize>,
    /// Precision: f32 or f64.
    #[arg(long, default_value = "f32")]
    pub dtype: DType,
    /// Output directory (default: out/<scenario>; created if missing; checked to be writable
    /// before the first step).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Also write a picture and a .vti file every this many steps (0: only at the end).
    #[arg(long, default_value_t = 0)]
    pub every: usize,
    /// Do not write .vti files (pictures and the summary only).
    #[arg(long)]
    pub no_vti: bool,
    /// Save the whole state to this file at the end (and every --checkpoint-every steps), to
    /// continue later with --restart. Its directory must exist and be writable (checked before
    /// the first step). Under mpirun the path is a prefix: each rank writes
    /// PATH.<rank>-of-<ranks>.lbm.
    #[arg(long)]
    pub checkpoint: Option<PathBuf>,
    /// With --checkpoint: also save every this many steps (0: only at the end).
    #[arg(long, default_value_t = 0, requires = "checkpoint")]
    pub checkpoint_every: usize,
    /// Continue from a checkpoint of the same scenario: the lattice and its physics come from
    /// the file; its scenario, geometry and flow parameters (size, Re, the lid's or the
    /// flow's speed, the sphere's radius, the channel's --duct) must match this run's
    /// options, else the checkpoint is refused. --steps more steps are run. Under mpirun the
    /// path is the prefix --checkpoint was given, on as many ranks as wrote it.
    #[arg(long)]
    pub restart: Option<PathBuf>,
    /// Engine: reference, naive, blocked or gpu-naive (default: the planner's choice).
    #[arg(long)]
    pub engine: Option<Engine>,
    /// How the GPU engines store the populations: native (the --dtype), f16s or f16c (16-bit,
    /// arithmetic in f32, GPU engines only). Default: native, or the --restart file's.
    #[arg(long)]
    pub storage: Option<StorageArg>,
    #[command(flatten)]
    pub overrides: Overrides,
}

/// A slice of a scenario's speed field and how to label its picture.
pub struct View {
    /// The slice.
    pub slice: Slice,
    /// The plane it lies in, e.g. "z = 32".
    pub plane: String,
    /// The names of the picture's horizontal and vertical axes, e.g. ["x", "y"].
    pub axes: [&'static str; 2],
    /// The speed at the top of the colour scale.
    pub top: f64,
}

/// A flow scenario: how to build its lattice and how to report on it.
pub trait Scenario {
    /// The scenario's name (files are named after it).
    const NAME: &'static str;
    /// What identifies the scenario's run besides its name: the size, the options that shape
    /// the geometry and the flow parameters, e.g. "128x48x48, sphere radius 6, Re 40, u_in
    /// 0.05". Checkpoints record it, and a restart refuses a checkpoint made with other values
    /// (a restart continues the run the checkpoint holds; it cannot change its physics).
    fn geometry(&self) -> String;
    /// The lattice's nodes along x, y and z.
    fn dims(&self) -> [usize; 3];
    /// Checks the scenario's options (size, flow parameters) and returns the relaxation time
    /// they give: before anything that depends on them, such as the default step count.
    fn check(&self) -> Result<f64, Error>;
    /// Steps run when --steps is not given (after [`Scenario::check`]).
    fn default_steps(&self) -> usize;
    /// The initial lattice.
    fn build<T: Real>(&self) -> Result<Lattice<T>, Error>;
    /// The slice of the speed field to draw, its plane and axes, and the speed that maps to the
    /// top of the colour scale.
    fn picture<T: Real>(&self, lat: &Lattice<T>, speed: &stencil35d::Grid<T>) -> View;
    /// The scenario-specific part of the summary line.
    fn summary<T: Real>(&self, lat: &Lattice<T>) -> String;
}

impl FlowOptions {
    /// The storage `--storage` asks for a lattice of `dtype`, refused when it names the other
    /// precision.
    pub fn storage_for(&self, dtype: DType) -> Result<Option<Storage>, Error> {
        self.storage.map(|s| s.for_dtype(dtype)).transpose()
    }
}

/// Runs `scenario` with `opts` in the requested precision.
pub fn run<S: Scenario>(scenario: &S, opts: &FlowOptions) -> Result<(), Error> {
    match opts.dtype {
        DType::F32 => simulate::<f32, S>(scenario, opts),
        DType::F64 => simulate::<f64, S>(scenario, opts),
    }
}

/// The output directory: --out, or out/<scenario>.
pub fn out_dir<S: Scenario>(opts: &FlowOptions) -> PathBuf {
    opts.out
        .clone()
        .unwrap_or_else(|| PathBuf::from("out").join(S::NAME))
}

/// Checks, before any work, that the output directory and the checkpoint can be written, so a
/// long run does not fail at its end.
fn check_outputs(out: &Path, opts: &FlowOptions) -> Result<(), Error> {
    check_writable_dir(out, "the output directory")?;
    if let Some(path) = &opts.checkpoint {
        check_writable_file(path, "the checkpoint")?;
    }
    Ok(())
}

/// The files a run of `steps` steps from step `start` writes in `out` besides the checkpoint:
/// the picture (and the `.vti` file unless disabled) of each of [`output_stems`].
fn output_files<'a, S: Scenario>(
    out: &'a Path,
    opts: &FlowOptions,
    start: u64,
    steps: usize,
) -> impl Iterator<Item = PathBuf> + 'a {
    let extensions: &[&str] = if opts.no_vti {
        &["png"]
    } else {
        &["png", "vti"]
    };
    output_stems::<S>(opts, start, steps)
        .into_iter()
        .flat_map(move |stem| {
            extensions
                .iter()
                .map(move |ext| out.join(format!("{stem}.{ext}")))
        })
}

/// The names, without extension, of the outputs a run of `steps` steps from step `start`
/// writes: one every `--every` steps before the last, named by the lattice's step, and those
/// of the end.
pub fn output_stems<S: Scenario>(opts: &FlowOptions, start: u64, steps: usize) -> Vec<String> {
    let every = opts.every;
    (1..)
        .map(move |k| k * every)
        .take_while(move |&done| every > 0 && done < steps)
        .map(move |done| Some(start.saturating_add(done as u64)))
        .chain([None])
        .map(stem::<S>)
        .collect()
}

/// Steps to run before the next output or checkpoint is due (or the end): the loop stops at
/// every multiple of `--every` and of `--checkpoint-every` (each of them, where the two
/// differ), and without either runs a hundredth of the run at a time for the progress bar.
pub fn next_chunk(done: usize, steps: usize, opts: &FlowOptions) -> usize {
    let to_next = |every: usize| (every > 0).then(|| every - done % every);
    [opts.every, opts.checkpoint_every]
        .into_iter()
        .filter_map(to_next)
        .min()
        .unwrap_or((steps / 100).max(1))
        .min(steps - done)
}

/// Whether the flow is checked for divergence ([`Lattice::check_flow`]) after `done` of the
/// run's `steps`, the last check having come after `checked` (updated when due): every
/// twentieth of the run and at least 50 steps apart, and after the last step, so that a run
/// whose densities turn negative while its values stay finite stops instead of writing them.
/// The runs also check before every picture or checkpoint. A check reads the lattice once.
pub fn flow_check_due(done: usize, steps: usize, checked: &mut usize) -> bool {
    let due = done == steps || done - *checked >= (steps / 20).max(50);
    if due {
        *checked = done;
    }
    due
}

/// Refuses a lattice velocity `value` given as `option` (e.g. `--u-max`) unless it is positive
/// and at most [`MAX_SPEED`]: the lattice Boltzmann scheme's compressibility error grows with
/// the square of the Mach number `u / c_s` (`c_s = 1/√3`), and BGK and TRT lose stability well
/// before Mach 1. The library refuses faster walls and inlets; a force-driven flow's peak
/// velocity is checked here alike.
pub fn lattice_speed(option: &str, value: f64) -> Result<(), Error> {
    if value.is_finite() && value > 0.0 && value <= MAX_SPEED {
        return Ok(());
    }
    Err(Error::InvalidArgument(format!(
        "{option} {}: a lattice velocity must be positive and at most {MAX_SPEED} (Mach {:.2}; \
         the scheme's compressibility error grows with the Mach number squared and it turns \
         unstable well before Mach 1): for a higher Reynolds number use a larger lattice",
        shown(value),
        MAX_SPEED * 3f64.sqrt()
    )))
}

/// The lattice to start from: the --restart checkpoint (refused unless it holds the --dtype's
/// precision and carries `tag`, this run's scenario and geometry), or the scenario's initial
/// lattice.
fn initial<T: Real, S: Scenario>(
    scenario: &S,
    opts: &FlowOptions,
    tag: &CheckpointTag,
) -> Result<Lattice<T>, Error> {
    let Some(path) = &opts.restart else {
        return scenario.build::<T>();
    };
    // A prefix of a checkpoint split over ranks names no file of its own.
    if !path.exists() {
        let split = stencil35d::distributed::written_by_note(path, None);
        if !split.is_empty() {
            return Err(Error::InvalidArgument(format!(
                "--restart {}: no such file{split}; a checkpoint split over ranks restarts \
                 under mpirun on as many ranks as wrote it",
                path.display()
            )));
        }
    }
    // The precision is read from the header first, to name the option that loads the file.
    let dtype = Lattice::<T>::checkpoint_dtype(path)?;
    if dtype != T::DTYPE {
        return Err(Error::InvalidArgument(format!(
            "--restart {}: the checkpoint holds {dtype} populations: run with --dtype {dtype}",
            path.display()
        )));
    }
    // The tag is read from the header first: a file of another run is refused before its
    // lattice is allocated and read.
    Lattice::<T>::checkpoint_tag(path)?.expect(tag, path)?;
    let (lat, found) = Lattice::<T>::load_tagged(path)?;
    found.expect(tag, path)?;
    check_restarted(scenario, lat.dims(), lat.physics().tau(), path)?;
    eprintln!(
        "restarting from {} at step {} ({})",
        path.display(),
        lat.steps(),
        lat.physics()
    );
    Ok(lat)
}

/// Refuses a restarted lattice whose size (`dims`) or relaxation time (`found`) is not the
/// run's: the tag names them, but a file may carry a tag it was not made with.
pub fn check_restarted<S: Scenario>(
    scenario: &S,
    dims: [usize; 3],
    found: f64,
    path: &Path,
) -> Result<(), Error> {
    let tau = scenario.check()?;
    let ([x, y, z], [sx, sy, sz]) = (dims, scenario.dims());
    if dims != scenario.dims() || (found - tau).abs() > 1e-12 * tau {
        return Err(Error::InvalidArgument(format!(
            "--restart {}: the checkpoint's tag names this run, but its lattice ({x}x{y}x{z}, \
             τ = {}) is not this run's ({sx}x{sy}x{sz}, τ = {}): the file was not written by this \
             scenario",
            path.display(),
            shown(found),
            shown(tau)
        )));
    }
    Ok(())
}

/// On the CPU a run takes a second copy of the populations: the lattice and that copy are
/// checked before the lattice is built, so that a size refused there names the largest cube a
/// run fits (the run's own check, which also counts ring buffers, comes once the lattice is
/// filled). A run that may go to a GPU holds one copy on the host, which building checks.
fn check_cpu_memory<T: Real, S: Scenario>(scenario: &S, opts: &FlowOptions) -> Result<(), Error> {
    let on_cpu = match opts.engine {
        Some(e) => !e.is_gpu(),
        None => stencil35d::gpu::detect_gpu().is_err(),
    };
    if !on_cpu {
        return Ok(());
    }
    Footprint::lattice(T::DTYPE, 2, LATTICE_NODE_BYTES)
        .with_label(format!("with its second copy in run {}", S::NAME))
        .check(scenario.dims(), 0, stencil35d::memory::available())
}

fn simulate<T: Real, S: Scenario>(scenario: &S, opts: &FlowOptions) -> Result<(), Error> {
    scenario.check()?;
    let steps = opts.steps.unwrap_or_else(|| scenario.default_steps());
    if steps == 0 {
        return Err(Error::ZeroSteps);
    }
    crate::checks::check_cadence("--every", opts.every, steps)?;
    // An option the engine does not take is refused before the lattice is built.
    opts.overrides.check_taken(&[opts.engine])?;
    let storage = opts.storage_for(T::DTYPE)?;
    let out = out_dir::<S>(opts);
    // The output directory is removed again if the run fails before writing into it.
    let guard = OutputDir::watch(&out);
    check_outputs(&out, opts)?;
    check_cpu_memory::<T, S>(scenario, opts)?;
    let tag = CheckpointTag::new(S::NAME, scenario.geometry());
    let mut lat = initial::<T, S>(scenario, opts, &tag)?;
    lat.validate()?;
    if let Some(storage) = storage {
        lat.set_storage(storage)?;
    }
    // The mass the drift is measured from, after any 16-bit storage has rounded the
    // populations. A checkpoint may hold a lattice without fluid (every node a wall): its
    // diagnostics would all be NaN (the drift divides by the mass).
    let mass0 = lat.mass();
    if mass0.is_nan() || mass0 <= 0.0 {
        return Err(Error::InvalidArgument(format!(
            "the {} lattice holds no fluid (its mass is {mass0}): nothing to simulate",
            S::NAME
        )));
    }
    let plan = opts
        .overrides
        .apply_checked(
            PlanBuilder::new(LbmKernel::of(&lat), T::DTYPE, lat.dims()),
            opts.engine,
        )?
        .build()?;
    // The run goes in parts (pictures, checkpoints): its whole length is checked here, and
    // before the files it would write are listed.
    plan.check_run_length(steps)?;
    // The checkpoint last: one that names an output is refused as the checkpoint.
    let checkpoint = opts.checkpoint.clone();
    let files = output_files::<S>(&out, opts, lat.steps(), steps).map(|f| (f, None));
    check_named_files(
        files.chain(checkpoint.map(|c| (c, Some(("the checkpoint", "--checkpoint"))))),
    )?;
    eprintln!("{plan}");
    let mut solver = Solver::new(plan);
    let bar = progress_bar(true, steps);
    let start = Instant::now();
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
            lat.check_flow()?;
        }
        busy += report.seconds;
        bar.set_position(done as u64);
        bar.set_message(format!("{:.0} MLUPS", report.mups));
        // The checkpoint first: outputs that fail (a full disk) must not lose the steps run.
        if let (Some(path), true) = (&opts.checkpoint, due(opts.checkpoint_every)) {
            lat.save_tagged(path, &tag)?;
        }
        if due(opts.every) {
            written.extend(outputs(scenario, &lat, &out, opts, Some(lat.steps()))?);
        }
    }
    bar.finish_and_clear();
    let saved = opts.checkpoint.clone();
    if let Some(path) = &saved {
        lat.save_tagged(path, &tag)?;
    }
    written.extend(outputs(scenario, &lat, &out, opts, None)?);
    written.extend(saved);
    let run = Finished {
        split: String::new(),
        engine: solver.plan().engine(),
        steps,
        seconds: start.elapsed().as_secs_f64(),
        busy,
        mass0,
    };
    guard.keep();
    println!("{}", run.summary(scenario, &lat, &written));
    Ok(())
}

/// What a finished run reports beside its lattice.
pub struct Finished {
    /// How the lattice was split (" over N ranks (split 1xPxQ)"), or empty.
    pub split: String,
    /// The engine that ran it.
    pub engine: Engine,
    /// Steps run.
    pub steps: usize,
    /// Wall-clock seconds of the run, outputs included.
    pub seconds: f64,
    /// Seconds in the solver.
    pub busy: f64,
    /// The mass before the first step of this command's run (after a restart, the
    /// checkpoint's): the summary's drift is over the steps this command ran.
    pub mass0: f64,
}

impl Finished {
    /// The summary line of the run that left the (whole) lattice `lat` and wrote `written`.
    pub fn summary<T: Real, S: Scenario>(
        &self,
        scenario: &S,
        lat: &Lattice<T>,
        written: &[PathBuf],
    ) -> String {
        let updates = lat.cells() as f64 * self.steps as f64;
        let [nx, ny, nz] = lat.dims();
        format!(
            "{}: {nx}x{ny}x{nz} {}{}, {} ({}), {} steps (now at step {}) in {:.1} s, {:.0} \
             MLUPS in the solver; {}; mass drift over these steps {:.1e}; wrote {}",
            S::NAME,
            T::DTYPE,
            self.split,
            lat.physics(),
            self.engine,
            self.steps,
            lat.steps(),
            self.seconds,
            updates / self.busy / 1e6,
            scenario.summary(lat),
            (lat.mass() - self.mass0) / self.mass0,
            written
                .iter()
                .map(|p| p.display().to_string())
                .collect::<Vec<_>>()
                .join(", ")
        )
    }
}

/// Writes the picture (and the .vti file unless disabled) of the current state; `step` names
/// intermediate files.
fn outputs<T: Real, S: Scenario>(
    scenario: &S,
    lat: &Lattice<T>,
    out: &Path,
    opts: &FlowOptions,
    step: Option<u64>,
) -> Result<Vec<PathBuf>, Error> {
    let stem = stem::<S>(step);
    let mut files = vec![write_picture(scenario, lat, out, &stem)?];
    if !opts.no_vti {
        let vti = out.join(format!("{stem}.vti"));
        write_lattice_vti(&vti, lat)?;
        files.push(vti);
    }
    Ok(files)
}

/// The name of a scenario's output files: the scenario's, with the step for intermediate ones.
pub fn stem<S: Scenario>(step: Option<u64>) -> String {
    match step {
        Some(s) => format!("{}_{s:07}", S::NAME),
        None => S::NAME.to_string(),
    }
}

/// Writes `<out>/<stem>.png`, the scenario's slice of the speed field, and returns its path.
pub fn write_picture<T: Real, S: Scenario>(
    scenario: &S,
    lat: &Lattice<T>,
    out: &Path,
    stem: &str,
) -> Result<PathBuf, Error> {
    let speed = lat.speed()?;
    let view = scenario.picture(lat, &speed);
    let png = out.join(format!("{stem}.png"));
    let quantity = "speed |u| (lattice units)";
    let [h, v] = view.axes;
    let options = PictureOptions::new(
        format!(
            "{}: {quantity}, {}, step {}",
            S::NAME,
            view.plane,
            lat.steps()
        ),
        quantity,
    )
    .with_axes(PictureAxis::cells(h), PictureAxis::cells(v))
    .with_range(0.0, view.top);
    write_png_slice(&png, &view.slice, &options)?;
    Ok(png)
}

/// Largest relaxation time a scenario takes. Beyond it the TRT scheme (fixed Λ = 3/16, so its
/// odd rate nears 2) may blow up next to the cavity's moving lid (a 32³ cavity did at τ = 4.6,
/// 4.8, 5.0, 8.0 and 9.5, not at 5.5 or 6.5, on the 2-core AMD EPYC Zen 4), and a very viscous
/// flow's start is no longer paced by its viscous time, which sets the default run length.
const TAU_MAX: f64 = 4.0;

/// The relaxation time for viscosity `nu`, refused when so close to 1/2 that the scheme would
/// be unstable (the Reynolds number is too high for the resolution), or above [`TAU_MAX`]
/// (too low). `length` names what sets the flow's length in nodes, which the advice asks to
/// change: "lattice", or "--radius" where that is given.
pub fn tau_for(nu: f64, what: &str, length: &str) -> Result<f64, Error> {
    let tau = 3.0 * nu + 0.5;
    if !(tau.is_finite() && tau >= 0.505) {
        return Err(Error::Unstable(format!(
            "{what} needs viscosity ν = {}, i.e. relaxation time τ = {}; below τ = 0.505 the \
             scheme is unstable: use a larger {length}, a lower Reynolds number or a higher \
             lattice velocity",
            shown(nu),
            shown(tau)
        )));
    }
    if tau > TAU_MAX {
        return Err(Error::Unstable(format!(
            "{what} needs viscosity ν = {}, i.e. relaxation time τ = {}; above τ = {TAU_MAX} \
             the scheme is unstable and slow to settle: use a lower lattice \
             velocity, a smaller {length} or a higher Reynolds number",
            shown(nu),
            shown(tau)
        )));
    }
    Ok(tau)
}

#[cfg(test)]
mod tests {
    use super::flow_check_due;

    /// The steps after which a run of `steps` steps in parts of `part` checks its flow.
    fn checks(steps: usize, part: usize) -> Vec<usize> {
        let mut checked = 0;
        (1..=steps.div_ceil(part))
            .map(|i| (i * part).min(steps))
            .filter(|&done| flow_check_due(done, steps, &mut checked))
            .collect()
    }

    /// Every twentieth of a long run, at least 50 steps apart, and always after the last step.
    #[test]
    fn the_flow_is_checked_every_twentieth_and_at_the_end() {
        assert_eq!(
            checks(2000, 20),
            (1..=20).map(|i| i * 100).collect::<Vec<_>>()
        );
        assert_eq!(checks(300, 3), [51, 102, 153, 204, 255, 300]);
        assert_eq!(checks(80, 1), [50, 80]);
        assert_eq!(checks(7, 7), [7]);
    }
}
