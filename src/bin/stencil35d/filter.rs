//! `stencil35d filter IN.png OUT.png --filter gaussian:7`: applies a 2D convolution to a
//! picture, each colour channel on its own (alpha is kept), with the planner's engine.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use stencil35d::output::{check_writable_file, Picture};
use stencil35d::{Error, Kernel, Plan, PlanBuilder, Solver};

use crate::args::{check_in_f32, load_border, load_filter, parse_engines, parse_threads};

/// Options of `filter`.
#[derive(Args, Debug)]
pub struct FilterArgs {
    /// The picture to filter: a PNG, grey or colour, with or without alpha, 8 or 16 bits.
    input: PathBuf,
    /// Where to write the result: a PNG of the input's channels (grey or RGB, with alpha when
    /// the input has it, a transparency chunk included) in 8 or 16 bits as the input; palette
    /// and 1-, 2- and 4-bit inputs are written expanded to 8 bits. The input's other chunks
    /// (gamma, colour profile, physical size, text) are not copied: the output holds the
    /// filtered values with no colour space attached.
    output: PathBuf,
    /// The filter: a file of weights (one row per line, spaces or commas) or a name:
    /// gaussian:K, mean:K, mean:KxL, sobel, sobel-y, laplacian, sharpen, dense:KxL.
    #[arg(long)]
    filter: String,
    /// What the filter reads outside the picture: constant[:V], replicate, reflect,
    /// reflect101 (OpenCV's default) or wrap. V is on the picture's scale of 0 to 1 (0 black,
    /// 1 white, whatever the bit depth; 0 when left out).
    #[arg(long, default_value = "reflect101")]
    border: String,
    /// Applications of the filter, 1 to 1000 (a blur applied twice blurs more; a Gaussian
    /// applied n times is one √n times as wide, so a thousand already blurs far beyond any
    /// filter size). The values are clamped to the picture's range only when it is written,
    /// not between applications, so an edge filter applied twice differs from two runs.
    #[arg(long, default_value_t = 1, value_parser = parse_times)]
    times: usize,
    /// Write the absolute value of the response (edge filters such as sobel and laplacian
    /// respond with both signs).
    #[arg(long)]
    abs: bool,
    /// Engine (default: the planner's choice): reference, naive, blocked, gpu-naive,
    /// gpu-blocked.
    #[arg(long)]
    engine: Option<String>,
    /// Worker threads (default: all cores).
    #[arg(long, value_parser = parse_threads)]
    threads: Option<usize>,
}

/// Most applications `--times` takes: a Gaussian applied n times is one √n times as wide, so
/// a thousand applications of the largest (15×15) blur as much as a filter over 400 pixels
/// across; more are a typo, and would run for hours on a large picture.
const MAX_TIMES: usize = 1000;

/// Parses `--times`: 1 to [`MAX_TIMES`] applications.
fn parse_times(s: &str) -> Result<usize, String> {
    crate::args::bounded_count(
        s,
        "number of applications",
        [1, MAX_TIMES],
        "a thousand applications already blur far beyond any filter size",
    )
}

/// A run's error worded for a picture: a value that became infinite or NaN is the filter's
/// doing (the picture's values lie in [0, 1]: its weights, a border constant, or growth over
/// repeated applications), not an unstable scheme's.
fn for_pictures(e: Error, args: &FilterArgs) -> Error {
    match e {
        Error::NonFinite {
            step, cell, value, ..
        } => Error::InvalidArgument(format!(
            "--filter {}: the filtered picture holds a non-finite value ({value}) at pixel \
             ({}, {}) after application {step} of {}: the values outgrew f32 (the picture's \
             lie in [0, 1]; {})",
            args.filter,
            cell[0],
            cell[1],
            args.times,
            if step > 1 {
                "a filter whose weights' magnitudes sum above 1 can grow them at each \
                 application: use fewer --times"
            } else {
                "the filter's weights or the border constant are too large"
            }
        )),
        other => other,
    }
}

pub fn run(args: &FilterArgs) -> Result<(), Error> {
    let filter = load_filter(&args.filter)?;
    let border = load_border(&args.border)?;
    let remedy = "pictures are filtered in f32";
    check_in_f32(&filter, &args.filter, border, &args.border, remedy)?;
    let filter = filter.with_border(border);
    check_writable_file(&args.output, "the output picture")?;
    let mut picture = Picture::read_png(&args.input)?;
    let [w, h] = picture.dims();
    let mut builder = PlanBuilder::new(
        Kernel::Filter(filter.clone()),
        stencil35d::DType::F32,
        [w, h, 1],
    );
    if let Some(list) = &args.engine {
        match parse_engines(list)?[..] {
            [e] => builder = builder.engine(e),
            ref engines => {
                return Err(Error::InvalidArgument(format!(
                    "filter takes one --engine, got {} ('{list}')",
                    engines.len()
                )))
            }
        }
    }
    if let Some(t) = args.threads {
        builder = builder.threads(t);
    }
    let plan: Plan = builder.build()?;
    let mut solver = Solver::new(plan);
    let start = Instant::now();
    let mut compute = 0.0;
    for channel in &mut picture.channels {
        compute += solver
            .run(channel, args.times)
            .map_err(|e| for_pictures(e, args))?
            .seconds;
        if args.abs {
            for y in 0..h {
                for v in channel.row_mut(y) {
                    *v = v.abs();
                }
            }
        }
    }
    let wall = start.elapsed().as_secs_f64();
    // The solver's scratch plane goes before the picture's bytes are laid out for writing.
    let engine = solver.plan().engine();
    drop(solver);
    picture.write_png(&args.output)?;
    let pixels = (w * h * picture.channels.len() * args.times) as f64;
    println!(
        "{filter} on {w}x{h} ({} channel{}), {} application{}: engine {}, {:.4} s computing \
         ({:.1} M pixels/s), {:.4} s in all; wrote {}",
        picture.channels.len(),
        if picture.channels.len() == 1 { "" } else { "s" },
        args.times,
        if args.times == 1 { "" } else { "s" },
        engine,
        compute,
        pixels / compute.max(1e-12) / 1e6,
        wall,
        args.output.display()
    );
    Ok(())
}
