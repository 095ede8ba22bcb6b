//! The `stencil35d` command-line tool: plans, benchmarks and example simulations.

mod args;
mod bench;
mod heat;
mod plan_cmd;
mod probe;

use clap::{Parser, Subcommand};

/// 3.5D-blocked stencil solvers: plan, benchmark and run simulations.
#[derive(Parser, Debug)]
#[command(name = "stencil35d", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the plan (engine, dim_T, tile, prediction and the reasoning) for a kernel and size.
    Plan(plan_cmd::PlanArgs),
    /// Time engines on one problem and report MUPS, GFLOP/s and effective GB/s.
    Bench(bench::BenchArgs),
    /// Run an example simulation.
    #[command(subcommand)]
    Run(Scenario),
    /// Print what the planner knows about this machine.
    Probe(probe::ProbeArgs),
}

#[derive(Subcommand, Debug)]
enum Scenario {
    /// Heat diffusion from a hot wall and a hot ball; writes PNG slices.
    Heat(heat::HeatArgs),
}

fn main() {
    let cli = Cli::parse();
    let result = match &cli.command {
        Command::Plan(a) => plan_cmd::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Run(Scenario::Heat(a)) => heat::run(a),
        Command::Probe(a) => probe::run(a),
    };
    if let Err(e) = result {
        eprintln!("error: {e}");
        std::process::exit(1);
    }
}
