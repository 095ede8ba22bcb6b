//! `stencil35d compare`: every kernel on every available engine of both backends at one size,
//! in one process: one table, plus compare.csv, compare.json, roofline.png and speedup.png.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use stencil35d::perf::{self, CompareConfig};
use stencil35d::{DType, Error};

use crate::args::{parse_engines, Size, Size2};

/// Options of `compare`.
#[derive(Args, Debug)]
pub struct CompareArgs {
    /// Grid size: N for N³, or NXxNYxNZ.
    #[arg(long, default_value = "256")]
    size: Size,
    /// Size of the 2D kernels' grids, N or NXxNY (default: a square with as many cells as
    /// --size).
    #[arg(long = "size2d")]
    size2d: Option<Size2>,
    /// Time steps per timed run.
    #[arg(long, default_value_t = 20)]
    steps: usize,
    /// Precision: f32 or f64.
    #[arg(long, default_value = "f32")]
    dtype: DType,
    /// Kernels, comma-separated: star7, box27, star:R, box:R, d3q19 (a lid-driven cavity),
    /// wave:O (the wave equation of space order O with absorbing layers); 2D (on --size2d):
    /// star2d:R, box2d:R, conv2d:KxL.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "star7,box27,star:4,d3q19,wave:8"
    )]
    kernels: Vec<String>,
    /// Engines, comma-separated; GPU engines without a GPU (or without support for a kernel)
    /// are listed as not available.
    #[arg(long, default_value = "naive,blocked,gpu-naive,gpu-blocked")]
    engines: String,
    /// Most timed runs per engine after a warm-up, 1 to 1000; the median is reported (the
    /// median of a few runs is already stable: more only take longer).
    #[arg(long, default_value_t = perf::DEFAULT_REPEAT, value_parser = crate::args::parse_repeat)]
    repeat: usize,
    /// Stop repeating an engine once its timed runs took this many seconds: above 0 and at
    /// most 3600 (one run is always timed).
    #[arg(long, default_value_t = perf::DEFAULT_BUDGET_SECONDS, value_parser = crate::args::parse_budget)]
    budget: f64,
    /// CPU worker threads (default: all cores; more than the machine's cores is warned about).
    #[arg(long, value_parser = crate::args::parse_threads)]
    threads: Option<usize>,
    /// Directory for compare.csv, compare.json, roofline.png and speedup.png.
    #[arg(long, default_value = "out/compare")]
    out: PathBuf,
    /// Seed of the random initial data.
    #[arg(long, default_value_t = 1)]
    seed: u64,
    /// Measure nothing: read a compare.json written earlier (say, on another machine) and
    /// print its table and write its files into --out again.
    #[arg(
        long,
        value_name = "FILE",
        conflicts_with_all = [
            "size", "size2d", "steps", "dtype", "kernels", "engines", "repeat", "budget",
            "threads", "seed"
        ]
    )]
    from_json: Option<PathBuf>,
}

/// Largest compare.json `--from-json` reads: a comparison of every kernel on every engine is a
/// few tens of kilobytes, so 64 MiB is far past any real one and keeps a wrong file (a device,
/// a huge log) from filling the memory.
const MAX_JSON_BYTES: u64 = 64 << 20;

/// `stencil35d compare`: every kernel on every engine, one table, and its CSV, JSON and
/// charts in `--out`.
pub fn run(args: &CompareArgs) -> Result<(), Error> {
    let start = Instant::now();
    // The tables and charts are written after all runs: refuse an unwritable place first. A
    // directory this creates is removed again if the comparison fails before writing into it.
    let guard = crate::checks::OutputDir::prepare(&args.out, [])?;
    compare(args, start)?;
    guard.keep();
    Ok(())
}

/// Runs the comparison (or reads it from `--from-json`) and writes its outputs.
fn compare(args: &CompareArgs, start: Instant) -> Result<(), Error> {
    if let Some(path) = &args.from_json {
        let text = stencil35d::output::read_text_file(path, MAX_JSON_BYTES, "--from-json")?;
        let comparison = perf::from_json(&text)
            .map_err(|e| crate::args::in_option("--from-json", &path.display().to_string(), e))?;
        return write(&comparison, args, start);
    }
    let mut config = CompareConfig::new(args.size.0, args.steps);
    if let Some(Size2(dims)) = args.size2d {
        config.plane_dims = dims;
    }
    config.dtype = args.dtype;
    config.kernels = args
        .kernels
        .iter()
        .filter(|k| !k.trim().is_empty())
        .map(|k| perf::kernel_by_name(k).map_err(|e| crate::args::in_option("--kernels", k, e)))
        .collect::<Result<_, _>>()?;
    let names: Vec<String> = config.kernels.iter().map(|k| k.to_string()).collect();
    if let Some(twice) = crate::args::first_repeated(&names) {
        return Err(Error::InvalidArgument(format!(
            "--kernels names {twice} twice: each kernel is compared once"
        )));
    }
    config.engines = parse_engines(&args.engines)?;
    // The speedup chart and the table's ratios are against the naive CPU engine: without it
    // the comparison could be measured but not written.
    if !config.engines.contains(&stencil35d::Engine::Naive) {
        return Err(Error::InvalidArgument(format!(
            "--engines '{}' leaves out naive, the engine every ratio and the speedup chart are \
             measured against: add naive",
            args.engines
        )));
    }
    config.repeat = args.repeat;
    config.budget_seconds = args.budget;
    config.threads = args.threads;
    config.seed = args.seed;
    let comparison = perf::compare(&config, |row| match &row.measured {
        Some(m) => eprintln!(
            "  {} {}: {:.1} MUPS ({:.3} s)",
            row.kernel, row.engine, m.mups, m.seconds
        ),
        None => eprintln!("  {} {}: {}", row.kernel, row.engine, row.note),
    })?;
    write(&comparison, args, start)
}

/// Prints the table, then writes the CSV, JSON and charts, all or none
/// ([`perf::write_all`]), and only when no run failed: a failed comparison leaves the output
/// directory as it was (its table is printed all the same).
fn write(comparison: &perf::Comparison, args: &CompareArgs, start: Instant) -> Result<(), Error> {
    print!("{}", perf::table(comparison));
    let failed: Vec<String> = comparison
        .failures()
        .map(|r| format!("{} {}: {}", r.kernel, r.engine, r.note))
        .collect();
    if !failed.is_empty() {
        return Err(Error::InvalidArgument(format!(
            "{} run(s) failed, so nothing was written to {}: {}",
            failed.len(),
            args.out.display(),
            failed.join("; ")
        )));
    }
    perf::write_all(comparison, &args.out)?;
    println!(
        "wrote {0}/compare.csv, {0}/compare.json, {0}/roofline.png, {0}/speedup.png in {1:.1} s",
        args.out.display(),
        start.elapsed().as_secs_f64()
    );
    Ok(())
}
