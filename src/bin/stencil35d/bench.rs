//! `stencil35d bench`: times engines on one problem in one process and reports MUPS, GFLOP/s and
//! effective GB/s (medians of repeated runs), optionally verified against the reference engine.

use clap::Args;
use serde_json::json;
use stencil35d::{Engine, Error, Grid, PlanBuilder, Real, RunReport, Solver, Stencil};

use crate::args::{parse_engines, Overrides, Problem};

/// Options of `bench`.
#[derive(Args, Debug)]
pub struct BenchArgs {
    #[command(flatten)]
    problem: Problem,
    /// Time steps per timed run.
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// Engines to time, comma-separated (reference, naive, blocked).
    #[arg(long, default_value = "naive,blocked")]
    engine: String,
    #[command(flatten)]
    overrides: Overrides,
    /// Timed runs per engine; the median is reported.
    #[arg(long, default_value_t = 3)]
    repeat: usize,
    /// Compare each engine's result with the reference engine (max relative error).
    #[arg(long)]
    verify: bool,
    /// Print one JSON object per engine per line instead of a table.
    #[arg(long)]
    json: bool,
    /// Seed of the random initial data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
}

/// One engine's measurements.
struct Row {
    report: RunReport,
    seconds: Vec<f64>,
    max_rel_err: Option<f64>,
    resources: Option<stencil35d::gpu::KernelResources>,
}

pub fn run(args: &BenchArgs) -> Result<(), Error> {
    match args.problem.dtype {
        stencil35d::DType::F32 => bench::<f32>(args),
        stencil35d::DType::F64 => bench::<f64>(args),
    }
}

fn bench<T: Real>(args: &BenchArgs) -> Result<(), Error> {
    if args.repeat == 0 {
        return Err(Error::InvalidArgument("--repeat must be at least 1".into()));
    }
    let stencil = args.problem.stencil()?;
    let dims = args.problem.size.0;
    let engines = parse_engines(&args.engine)?;
    let input = Grid::<T>::random(dims, 0.0, 1.0, args.seed)?;
    let mut expected: Option<Grid<T>> = None;
    let mut rows = Vec::new();
    for &engine in &engines {
        let plan = args
            .overrides
            .apply(
                PlanBuilder::new(stencil.clone(), T::DTYPE, dims),
                Some(engine),
            )
            .build()?;
        let mut solver = Solver::new(plan);
        let mut grid = input.clone();
        // Warm-up: threads, scratch buffers and page faults stay out of the timings.
        solver.run(&mut grid, args.steps.min(solver.plan().dim_t()).max(1))?;
        let mut reports = Vec::new();
        for _ in 0..args.repeat {
            reports.push(solver.run(&mut grid, args.steps)?);
        }
        let mut seconds: Vec<f64> = reports.iter().map(|r| r.seconds).collect();
        seconds.sort_by(f64::total_cmp);
        let median = reports
            .iter()
            .find(|r| r.seconds == seconds[seconds.len() / 2])
            .cloned()
            .expect("the median is one of the runs");
        let max_rel_err = if args.verify {
            let reference = match &expected {
                Some(g) => g,
                None => expected.insert(reference_result(&stencil, &input, args.steps)?),
            };
            let mut fresh = input.clone();
            solver.run(&mut fresh, args.steps)?;
            Some(fresh.max_rel_diff(reference)?)
        } else {
            None
        };
        let resources = stencil35d::gpu::compiled_resources(solver.plan())?;
        let row = Row {
            report: median,
            seconds,
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
    }
    Ok(())
}

fn reference_result<T: Real>(
    stencil: &Stencil,
    input: &Grid<T>,
    steps: usize,
) -> Result<Grid<T>, Error> {
    let plan = PlanBuilder::new(stencil.clone(), T::DTYPE, input.dims())
        .engine(Engine::Reference)
        .build()?;
    let mut grid = input.clone();
    Solver::new(plan).run(&mut grid, steps)?;
    Ok(grid)
}

fn json_line(args: &BenchArgs, row: &Row) -> serde_json::Value {
    let r = &row.report;
    let [nx, ny, nz] = r.plan.dims();
    let mut v = json!({
        "kernel": r.plan.kernel().name(),
        "dtype": r.plan.dtype().name(),
        "nx": nx, "ny": ny, "nz": nz,
        "steps": r.steps,
        "engine": r.engine.name(),
        "threads": r.plan.threads(),
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
    if let Some(g) = r.plan.chosen().gpu.as_ref() {
        v["gpu_block"] = json!(format!("{}x{}", g.block[0], g.block[1]));
        v["gpu_ry"] = json!(g.ry);
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
    v
}

fn print_table(args: &BenchArgs, rows: &[Row]) {
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
        "{:<10} {:>7} {:>5} {:>9} {:>9} {:>9} {:>9} {:>8} {:>9} {:>8} {:>10}",
        "engine",
        "threads",
        "dim_T",
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
            "{:<10} {:>7} {:>5} {:>9} {:>9.4} {:>9.0} {:>9.1} {:>8.1} {:>9.0} {:>7.2}x {:>10}",
            r.engine.name(),
            r.plan.threads(),
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
