//! `stencil35d plan`: prints the plan the planner makes for a kernel and size on this machine.

use clap::Args;
use stencil35d::{Error, PlanBuilder};

use crate::args::{parse_engines, Overrides, Problem};

/// Options of `plan`.
#[derive(Args, Debug)]
pub struct PlanArgs {
    #[command(flatten)]
    problem: Problem,
    /// Fix the engine instead of letting the planner choose.
    #[arg(long)]
    engine: Option<String>,
    #[command(flatten)]
    overrides: Overrides,
    /// Print the plan as JSON.
    #[arg(long)]
    json: bool,
}

pub fn run(args: &PlanArgs) -> Result<(), Error> {
    let engine = match &args.engine {
        Some(list) => match parse_engines(list)?[..] {
            [e] => Some(e),
            _ => return Err(Error::InvalidArgument("plan takes one --engine".into())),
        },
        None => None,
    };
    let kernel = args.problem.kernel(&args.overrides)?;
    let dims = args.problem.dims(&kernel);
    // A walled lattice is the cavity `bench` times: one without fluid is refused alike.
    if kernel.lbm().is_some_and(|k| !k.periodic.iter().all(|&p| p)) {
        stencil35d::perf::check_cavity_dims(dims)?;
    }
    let builder = PlanBuilder::new(kernel, args.problem.dtype, dims);
    let plan = args.overrides.apply_checked(builder, engine)?.build()?;
    if args.json {
        println!(
            "{}",
            serde_json::to_string_pretty(&plan)
                .map_err(|e| Error::InvalidArgument(e.to_string()))?
        );
    } else {
        print!("{plan}");
    }
    Ok(())
}
