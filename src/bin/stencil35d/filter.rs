//! `stencil35d filter IN.png OUT.png --filter gaussian:7`: applies a 2D convolution to a
//! picture, each colour channel on its own (alpha is kept), with the planner's engine.

use std::path::PathBuf;
use std::time::Instant;

use clap::Args;
use stencil35d::output::{check_writable_file, Picture};
use stencil35d::{Border, Error, Kernel, Plan, PlanBuilder, Solver};

use crate::args::{load_filter, parse_engines, parse_threads};

/// Options of `filter`.
#[derive(Args, Debug)]
pub struct FilterArgs {
    /// The picture to filter: a PNG, grey or colour, with or without alpha, 8 or 16 bits.
    input: PathBuf,
    /// Where to write the result: a PNG of the input's colour type and depth.
    output: PathBuf,
    /// The filter: a file of weights (one row per line, spaces or commas) or a name:
    /// gaussian:K, mean:K, mean:KxL, sobel, sobel-y, laplacian, sharpen, dense:KxL.
    #[arg(long)]
    filter: String,
    /// What the filter reads outside the picture: constant[:V], replicate, reflect,
    /// reflect101 (OpenCV's default) or wrap.
    #[arg(long, default_value = "reflect101")]
    border: String,
    /// Applications of the filter (a blur applied twice blurs more).
    #[arg(long, default_value_t = 1)]
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

pub fn run(args: &FilterArgs) -> Result<(), Error> {
    if args.times == 0 {
        return Err(Error::InvalidArgument("--times must be at least 1".into()));
    }
    let filter = load_filter(&args.filter)?.with_border(Border::from_name(&args.border)?);
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
            _ => return Err(Error::InvalidArgument("filter takes one --engine".into())),
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
        compute += solver.run(channel, args.times)?.seconds;
        if args.abs {
            for y in 0..h {
                for v in channel.row_mut(y) {
                    *v = v.abs();
                }
            }
        }
    }
    let wall = start.elapsed().as_secs_f64();
    picture.write_png(&args.output)?;
    let pixels = (w * h * picture.channels.len() * args.times) as f64;
    println!(
        "{filter} on {w}x{h} ({} channel{}), {} application{}: engine {}, {:.4} s computing \
         ({:.1} M pixels/s), {:.4} s in all; wrote {}",
        picture.channels.len(),
        if picture.channels.len() == 1 { "" } else { "s" },
        args.times,
        if args.times == 1 { "" } else { "s" },
        solver.plan().engine(),
        compute,
        pixels / compute.max(1e-12) / 1e6,
        wall,
        args.output.display()
    );
    Ok(())
}
