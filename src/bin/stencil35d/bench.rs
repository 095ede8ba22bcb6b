//! `stencil35d bench`: times engines on one problem in one process and reports MUPS, GFLOP/s and
//! effective GB/s (medians of repeated runs), optionally verified against the reference engine.
//! Stencils run on random grids; `--kernel d3q19` runs a lid-driven cavity (walls on every
//! face, the y = max face moving) from a random near-equilibrium state, in MLUPS.

use clap::Args;
use serde_json::json;
use stencil35d::lbm::Lattice;
use stencil35d::memory::{self, Footprint};
use stencil35d::perf::time_runs;
use stencil35d::wave::Wavefield;
use stencil35d::{Engine, Error, Grid, Grid2, Kernel, PlanBuilder, Real, RunReport, Solver, State};

use crate::args::{parse_engines, Overrides, Problem};

/// Options of `bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    pub(crate) problem: Problem,
    /// Time steps per timed run.
    #[arg(long, default_value_t = 20)]
    pub(crate) steps: usize,
    /// Engines to time, comma-separated (auto, reference, naive, blocked, gpu-naive,
    /// gpu-blocked). `auto` runs the planner's choice as a program's `Solver` would, including
    /// the solver's check of the plan against the first passes.
    #[arg(long, default_value = "naive,blocked")]
    pub(crate) engine: String,
    #[command(flatten)]
    pub(crate) overrides: Overrides,
    /// Timed runs per engine, 1 to 1000; the median is reported (the median of a few runs is
    /// already stable: more only take longer).
    #[arg(long, default_value_t = 3, value_parser = crate::args::parse_repeat)]
    pub(crate) repeat: usize,
    /// Compare each engine's result with the reference engine (max relative error).
    #[arg(long)]
    pub(crate) verify: bool,
    /// Print one JSON object per engine per line instead of a table.
    #[arg(long)]
    pub(crate) json: bool,
    /// Seed of the random initial data.
    #[arg(long, default_value_t = 1)]
    pub(crate) seed: u64,
}

/// One engine's measurements.
pub(crate) struct Row {
    /// Whether the engine was the planner's choice (`auto`).
    pub(crate) auto: bool,
    /// What the solver's check of the plan did, in any of the runs.
    pub(crate) adapted: Option<String>,
    pub(crate) report: RunReport,
    pub(crate) seconds: Vec<f64>,
    pub(crate) max_rel_err: Option<f64>,
    pub(crate) resources: Option<stencil35d::gpu::KernelResources>,
}

/// What `bench` needs of the data it times: a [`State`] it can copy and compare.
pub(crate) trait Benched: State + Clone {
    /// Max-norm relative difference to `reference`.
    fn rel_diff(&self, reference: &Self) -> Result<f64, Error>;

    /// The input and kernel the reference engine verifies against: this state and `kernel`, or
    /// for a lattice in 16-bit storage (which only the GPU engines hold) the same populations
    /// in the lattice's own precision.
    fn for_reference(&self, kernel: &Kernel) -> Result<(Self, Kernel), Error> {
        Ok((self.clone(), kernel.clone()))
    }
}

impl<T: Real> Benched for Grid<T> {
    fn rel_diff(&self, reference: &Self) -> Result<f64, Error> {
        self.max_rel_diff(reference)
    }
}

impl<T: Real> Benched for Grid2<T> {
    fn rel_diff(&self, reference: &Self) -> Result<f64, Error> {
        self.max_rel_diff(reference)
    }
}

impl<T: Real> Benched for Wavefield<T> {
    fn rel_diff(&self, reference: &Self) -> Result<f64, Error> {
        let u = self.pressure().max_rel_diff(reference.pressure())?;
        Ok(u.max(self.previous().max_rel_diff(reference.previous())?))
    }
}

impl<T: Real> Benched for Lattice<T> {
    fn for_reference(&self, _: &Kernel) -> Result<(Self, Kernel), Error> {
        let mut native = self.clone();
        native.set_storage(stencil35d::lbm::Storage::Native)?;
        let kernel = Kernel::Lbm(stencil35d::lbm::LbmKernel::of(&native));
        Ok((native, kernel))
    }

    fn rel_diff(&self, reference: &Self) -> Result<f64, Error> {
        self.max_rel_diff(reference)
    }
}

pub fn run(args: &BenchArgs) -> Result<(), Error> {
    match args.problem.dtype {
        stencil35d::DType::F32 => bench::<f32>(args),
        stencil35d::DType::F64 => bench::<f64>(args),
    }
}

fn bench<T: Real>(args: &BenchArgs) -> Result<(), Error> {
    let kernel = args.problem.kernel(&args.overrides)?;
    let dims = args.problem.dims(&kernel);
    bench_footprint(args, &kernel)?.check(dims, 0, memory::available())?;
    match kernel {
        Kernel::Wave(w) => {
            let shot = stencil35d::perf::wave_shot::<T>(w, dims, args.seed)?;
            time_engines(args, &Kernel::Wave(shot.kernel().clone()), shot)
        }
        Kernel::Lbm(k) => {
            let mut lat = if k.periodic[0] {
                stencil35d::perf::periodic_lattice::<T>(dims, args.seed)?
            } else {
                stencil35d::perf::cavity_lattice::<T>(dims, args.seed)?
            };
            lat.set_storage(k.storage)?;
            time_engines(args, &kernel, lat)
        }
        _ if kernel.is_2d() => time_engines(
            args,
            &kernel,
            Grid2::<T>::random([dims[0], dims[1]], 0.0, 1.0, args.seed)?,
        )
        .map_err(|e| for_filters(e, &kernel, args)),
        _ => time_engines(args, &kernel, Grid::<T>::random(dims, 0.0, 1.0, args.seed)?),
    }
}

/// A run's error worded for a convolution: a value that became infinite or NaN comes from the
/// filter's growth over the applications `bench` makes (the benchmark's values lie in [0, 1];
/// the timed runs continue from the state the warm-up and the runs before them left), not from
/// an unstable scheme.
fn for_filters(e: Error, kernel: &Kernel, args: &BenchArgs) -> Error {
    match (e, kernel) {
        (Error::NonFinite { value, .. }, Kernel::Filter(_)) => Error::InvalidArgument(format!(
            "{}: the values outgrew {} ({value}) within the {} applications bench makes (one to \
             warm up, then {} timed runs of {}, each continuing from the last; the benchmark's \
             values lie in [0, 1], and a filter whose weights' magnitudes sum above 1 grows them \
             at each application): time fewer --steps or --repeat",
            kernel.name(),
            args.problem.dtype,
            args.steps.saturating_mul(args.repeat).saturating_add(1),
            args.repeat,
            args.steps,
        )),
        (e, _) => e,
    }
}

/// What `bench` holds at its peak, checked before anything is allocated or planned: the
/// input and the copy an engine runs on (one engine without `--verify` runs a lattice on the
/// input itself; a grid keeps the copy's room for what a GPU engine allocates beside it); with
/// `--verify` the reference result and the copy checked against it; a second
/// grid (population copy) for CPU engines, the reference and GPU lattice runs that may update
/// in place (two copies download into the lattice itself); and per lattice its flags, node
/// classes and any 16-bit codes, and for a walled lattice on the GPU the node words it uploads.
fn bench_footprint(args: &BenchArgs, kernel: &Kernel) -> Result<Footprint, Error> {
    let engines = bench_engines(&args.engine)?;
    let lattice = kernel.lbm().is_some();
    // Grids keep the working copy's room: the GPU engines' search for a non-finite value (and
    // `--autotune`) take a grid of the size besides the state.
    let alone = lattice && engines.len() == 1 && !args.verify;
    let states: u64 = match (args.verify, alone) {
        (true, _) => 4,
        (false, true) => 1,
        (false, false) => 2,
    };
    // `auto` may run on the CPU, with its scratch.
    let scratch = args.verify
        || (lattice && !args.overrides.two_copies)
        || engines.iter().any(|e| e.is_none_or(|e| !e.is_gpu()));
    let mut held = if alone {
        vec!["input"]
    } else {
        vec!["input", "working copy"]
    };
    if args.verify {
        held.extend(["reference result", "verified copy"]);
    }
    if scratch {
        held.push("scratch");
    }
    let dtype = args.problem.dtype;
    let arrays = states + u64::from(scratch);
    let footprint = if kernel.wave().is_some() {
        // Four grids per wavefield (u, u⁻, (v·dt)², φ) and three of scratch.
        Footprint::grids(dtype, 4 * states + 3)
    } else if let Some(k) = kernel.lbm() {
        // In 16-bit storage each lattice also keeps its codes, 2 bytes a population.
        let codes = k.storage.code_bytes_per_node();
        let gpu = engines.iter().any(|e| e.is_none_or(|e| e.is_gpu()));
        let words = if gpu && !k.periodic.iter().all(|&p| p) {
            stencil35d::lbm::NODE_WORD_BYTES
        } else {
            0
        };
        Footprint::lattice(
            dtype,
            arrays,
            states * (stencil35d::lbm::LATTICE_NODE_BYTES + codes) + words,
        )
    } else {
        Footprint::grids(dtype, arrays)
    };
    Ok(footprint
        .at_least(kernel.smallest_side())
        .with_label(format!("in bench ({})", held.join(", "))))
}

fn time_engines<S: Benched>(args: &BenchArgs, kernel: &Kernel, input: S) -> Result<(), Error> {
    let dims = args.problem.dims(kernel);
    let dtype = args.problem.dtype;
    let engines = bench_engines(&args.engine)?;
    args.overrides.check_taken(&engines)?;
    // Every engine's plan before any is timed, so that a flag no engine takes, or a missing
    // GPU, is reported before minutes of timing.
    let plans = engines
        .iter()
        .map(|&engine| {
            args.overrides
                .apply(PlanBuilder::new(kernel.clone(), dtype, dims), engine)
                .build()
        })
        .collect::<Result<Vec<_>, Error>>()?;
    let mut expected: Option<S> = None;
    let mut rows = Vec::new();
    let mut input = Some(input);
    let last = engines.len() - 1;
    for (i, (&engine, plan)) in engines.iter().zip(plans).enumerate() {
        for w in plan.warnings() {
            eprintln!("warning: {w}");
        }
        let mut solver = Solver::new(plan);
        let Some(mut state) = working_state(&mut input, i == last && !args.verify) else {
            break;
        };
        let timed = time_runs(&mut solver, &mut state, args.steps, args.repeat)?;
        let adapted = timed.adapted.clone();
        let max_rel_err = match (args.verify, input.as_ref()) {
            (true, Some(input)) => {
                let reference = match &expected {
                    Some(s) => s,
                    None => expected.insert(reference_result(kernel, input, args)?),
                };
                let mut fresh = input.clone();
                solver.run(&mut fresh, args.steps)?;
                Some(fresh.rel_diff(reference)?)
            }
            _ => None,
        };
        let resources = solver.plan().compiled_resources()?;
        let row = Row {
            auto: engine.is_none(),
            adapted,
            report: timed.median,
            seconds: timed.seconds,
            max_rel_err,
            resources,
        };
        if args.json {
            println!("{}", json_line(args, &row));
        }
        rows.push(row);
    }
    if !args.json {
        print_table(args, &rows);
        for note in rows.iter().filter_map(|r| r.adapted.as_ref()) {
            println!("auto: checked the plan: {note}");
        }
    }
    Ok(())
}

/// The state an engine is timed on: a copy of the input, or with `take` the input itself, for
/// the last engine when nothing reads the input afterwards (no `--verify`): a state of over a
/// third of the host's memory can then be timed, one engine at a time.
fn working_state<S: Clone>(input: &mut Option<S>, take: bool) -> Option<S> {
    if take {
        input.take()
    } else {
        input.clone()
    }
}

/// The engines `--engine` names; `None` is `auto` (the planner's choice).
pub(crate) fn bench_engines(list: &str) -> Result<Vec<Option<Engine>>, Error> {
    let engines = list
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| match s {
            "auto" => Ok(None),
            // bench also takes "auto", which the library's engine names leave out.
            _ => parse_engines(s)
                .map(|e| e.first().copied())
                .map_err(|e| match e {
                    Error::InvalidArgument(m) => Error::InvalidArgument(
                        m.replace("expected one of: ", "expected one of: auto, "),
                    ),
                    e => e,
                }),
        })
        .collect::<Result<Vec<_>, Error>>()?;
    if engines.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "--engine '{list}' names no engine (auto, reference, naive, blocked, gpu-naive, \
             gpu-blocked)"
        )));
    }
    if let Some(twice) = crate::args::first_repeated(&engines) {
        let name = twice.map_or("auto".to_string(), |e| e.to_string());
        return Err(Error::InvalidArgument(format!(
            "--engine '{list}' names {name} twice: each engine is timed once"
        )));
    }
    Ok(engines)
}

/// The reference engine's result for `input` after the bench's steps (for a 16-bit lattice,
/// on its populations in its own precision).
pub(crate) fn reference_result<S: Benched>(
    kernel: &Kernel,
    input: &S,
    args: &BenchArgs,
) -> Result<S, Error> {
    let (mut state, kernel) = input.for_reference(kernel)?;
    let plan = PlanBuilder::new(
        kernel.clone(),
        args.problem.dtype,
        args.problem.dims(&kernel),
    )
    .engine(Engine::Reference)
    .build()?;
    Solver::new(plan).run(&mut state, args.steps)?;
    Ok(state)
}
pub(crate) fn json_line(args: &BenchArgs, row: &Row) -> serde_json::Value {
    let r = &row.report;
    let [nx, ny, nz] = r.plan.dims();
    let mut v = json!({
        "kernel": r.plan.kernel().name(),
        "dtype": r.plan.dtype().name(),
        "nx": nx, "ny": ny, "nz": nz,
        "steps": r.steps,
        "engine": if row.auto { "auto" } else { r.engine.name() },
        "threads": r.plan.threads_computing(),
        "tile_threads": r.plan.tile_threads(),
        "z_chunks": r.plan.z_chunks(),
        "dim_t": r.plan.dim_t(),
        "tile": format!("{}x{}", r.plan.tile()[0], r.plan.tile()[1]),
        "seconds": r.seconds,
        "mups": r.mups,
        "gflops": r.gflops,
        "gbs": r.effective_gbs,
        "predicted_mups": r.predicted_mups,
        "repeat": args.repeat,
        "seconds_all": row.seconds,
        "memory_gbs": r.plan.machine().bandwidth_gbs,
        "transfer_seconds": r.transfer_seconds,
    });
    // A convolution's name gives its size only: the filter and the border tell runs apart.
    if let Some(f) = r.plan.kernel().filter() {
        let [kw, kh] = f.size();
        let named = args.problem.filter.clone();
        v["filter"] = json!(named.unwrap_or_else(|| format!("dense:{kw}x{kh}")));
        v["border"] = json!(f.border().to_string());
    }
    if let (Some(k), true) = (r.plan.kernel().lbm(), r.engine.is_gpu()) {
        v["in_place"] = json!(r.plan.in_place());
        v["storage"] = json!(k.storage.to_string());
    }
    if let Some(g) = r.plan.chosen().gpu.as_ref() {
        v["gpu_block"] = json!(format!("{}x{}", g.block[0], g.block[1]));
        v["gpu_ry"] = json!(g.ry);
        v["gpu_rx"] = json!(g.rx);
        v["gpu_skew"] = json!(g.skew);
        v["gpu_stream_block"] = json!(g.stream_block);
    }
    if let Some(k) = row.resources {
        v["registers"] = json!(k.registers);
        v["spill_bytes"] = json!(k.spill_bytes);
    }
    if let Some(m) = r.plan.chosen().measured_mups {
        v["autotuned_mups"] = json!(m);
    }
    if let Some(g) = r.plan.gpu().filter(|_| r.engine.is_gpu()) {
        v["device"] = json!(g.name);
        v["device_gbs"] = json!(g.bandwidth_gbs);
    }
    if let Some(e) = row.max_rel_err {
        v["max_rel_err"] = json!(e);
    }
    if row.auto {
        v["chosen_engine"] = json!(r.engine.name());
        v["chosen_dim_t"] = json!(r.plan.dim_t());
        v["adapted"] = json!(row.adapted);
    }
    v
}

pub(crate) fn print_table(args: &BenchArgs, rows: &[Row]) {
    let Some(first) = rows.first() else { return };
    let plan = &first.report.plan;
    let [nx, ny, nz] = plan.dims();
    println!(
        "{} {} {nx}x{ny}x{nz}, {} steps, median of {} runs; memory bandwidth {:.1} GB/s ({})",
        plan.kernel(),
        plan.dtype(),
        args.steps,
        args.repeat,
        plan.machine().bandwidth_gbs,
        plan.machine().bandwidth_source
    );
    println!(
        "{:<12} {:>7} {:>8} {:>5} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>8} {:>10}",
        "engine",
        "threads",
        "thr/tile",
        "dim_t",
        "tile",
        "seconds",
        "MUPS",
        "GFLOP/s",
        "eff GB/s",
        "model",
        "speedup",
        "max rel err"
    );
    let base = first.report.mups;
    for row in rows {
        let r = &row.report;
        println!(
            "{:<12} {:>7} {:>8} {:>5} {:>9} {:>9.4} {:>9.0} {:>9.1} {:>8.1} {:>9.0} {:>7.2}x {:>10}",
            match (row.auto, r.plan.in_place()) {
                (true, _) => format!("auto:{}", r.engine.name()),
                (false, true) => format!("{}/aa", r.engine.name()),
                (false, false) => r.engine.name().to_string(),
            },
            r.plan.threads_computing(),
            if r.engine == Engine::Blocked {
                r.plan.tile_threads().to_string()
            } else {
                "-".into()
            },
            r.plan.dim_t(),
            format!("{}x{}", r.plan.tile()[0], r.plan.tile()[1]),
            r.seconds,
            r.mups,
            r.gflops,
            r.effective_gbs,
            r.predicted_mups,
            r.mups / base,
            row.max_rel_err
                .map_or("-".to_string(), |e| format!("{e:.1e}"))
        );
    }
}
