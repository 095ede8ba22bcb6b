//! The `stencil35d` command-line tool: plans, benchmarks and example simulations.

mod args;
mod bench;
#[cfg(feature = "mpi")]
mod bench_ranks;
mod cavity;
mod channel;
mod checks;
mod compare;
mod filter;
mod flow;
#[cfg(feature = "mpi")]
mod flow_ranks;
mod heat;
mod plan_cmd;
mod probe;
mod progress;
mod ranks;
mod sphere;
mod wave;
mod wave_checks;
mod wave_files;
#[cfg(feature = "mpi")]
mod wave_ranks;

use clap::{Parser, Subcommand};

/// 3.5D-blocked stencil solvers: plan, benchmark and run simulations.
#[derive(Parser, Debug)]
#[command(name = "stencil35d", version, about)]
struct Cli {
    /// Set a tuning knob, KEY=VALUE (repeatable; overrides its STENCIL35D_* environment
    /// variable). Keys: bandwidth_gbs, core_bandwidth_gbs, cache_bytes, compute_efficiency,
    /// lattice_efficiency, lattice_stream_share, cache_dir, no_gpu, gpu_device, gpu_halos,
    /// gpu_overlap, cpu_overlap, isa, memory_bytes, subnormals, gpu_l2_ahead, gpu_stages,
    /// gpu_skew, gpu_inner, gpu_min_blocks, lbm_early_loads, lbm_min_blocks, lbm_aa_min_blocks,
    /// gpu_wave_stages, gpu_wave_sync.
    #[arg(long = "tune", value_name = "KEY=VALUE", global = true)]
    tune: Vec<String>,
    #[command(subcommand)]
    command: Command,
}

/// Installs the environment's tuning knobs with the command line's `--tune` settings on top.
/// A variable that does not parse is an error unless `--tune` sets its knob.
fn install_tuning(settings: &[String]) -> stencil35d::Result<()> {
    let pairs = settings
        .iter()
        .map(|kv| {
            kv.split_once('=')
                .map(|(k, v)| (k.trim(), v))
                .ok_or_else(|| {
                    stencil35d::Error::InvalidArgument(format!("--tune {kv}: expected KEY=VALUE"))
                })
        })
        .collect::<stencil35d::Result<Vec<_>>>()?;
    let keys: Vec<&str> = pairs.iter().map(|(k, _)| *k).collect();
    let mut tuning = stencil35d::Tuning::from_env_beside(&keys)?;
    for (key, value) in pairs {
        tuning.set(key, value)?;
    }
    tuning.install();
    Ok(())
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Print the plan (engine, dim_t, tile, prediction and the reasoning) for a kernel and size.
    Plan(plan_cmd::PlanArgs),
    /// Time engines on one problem and report MUPS, GFLOP/s and effective GB/s.
    Bench(bench::BenchArgs),
    /// Run every kernel on every available CPU and GPU engine: one table with rooflines and
    /// speedups, plus CSV, JSON and PNG charts.
    Compare(compare::CompareArgs),
    /// Run an example simulation.
    #[command(subcommand)]
    Run(Scenario),
    /// Print what the planner knows about this machine.
    Probe(probe::ProbeArgs),
    /// Apply a 2D convolution to a PNG picture (each colour channel; alpha kept).
    Filter(filter::FilterArgs),
}

#[derive(Subcommand, Debug)]
enum Scenario {
    /// Heat diffusion from a hot wall and a hot ball; writes PNG slices.
    Heat(heat::HeatArgs),
    /// Lattice Boltzmann: lid-driven cavity; writes a PNG slice of the speed and a .vti file.
    Cavity(cavity::CavityArgs),
    /// Lattice Boltzmann: force-driven flow between plates (or in a duct) against the analytic
    /// Poiseuille profile.
    Channel(channel::ChannelArgs),
    /// Lattice Boltzmann: flow past a sphere from an inlet to an outlet, with its drag.
    Sphere(sphere::SphereArgs),
    /// Seismic: one shot through a velocity model (acoustic wave equation with absorbing
    /// layers); writes the shot gather (.npy, SEG-Y, PNG) and wavefield snapshots.
    Wave(wave::WaveArgs),
}

/// Restores the default action of SIGPIPE (terminate quietly), which the Rust runtime sets to
/// "ignore": a closed stdout (`stencil35d plan | head`) then ends the process like any Unix tool
/// instead of making `println!` panic on the broken pipe.
fn quiet_on_closed_pipe() {
    #[cfg(unix)]
    // SAFETY: called first thing in main, before any thread exists; SIG_DFL is a valid handler
    // for SIGPIPE.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}

/// On SIGINT, SIGTERM and SIGHUP, removes the temporary files of the writes in progress
/// (`output::remove_unfinished`), then ends the process as the signal would have: a run stopped
/// while it writes a checkpoint or a volume leaves no hidden `.<name>.stencil35d-<pid>.tmp`
/// file, which for a large lattice holds gigabytes (one that SIGKILL leaves, no handler
/// seeing it, the library removes at a later write into the directory). The handler only writes the signal's number to a pipe
/// (async-signal-safe); a thread waiting on the pipe does the rest.
fn remove_unfinished_files_on_signals() {
    #[cfg(unix)]
    {
        use std::sync::atomic::{AtomicI32, Ordering};
        static PIPE: AtomicI32 = AtomicI32::new(-1);
        extern "C" fn on_signal(signal: libc::c_int) {
            let byte = signal as u8;
            // SAFETY: write(2) is async-signal-safe; PIPE is the write end of a pipe open for
            // the life of the process, and one byte is read from `byte`.
            unsafe { libc::write(PIPE.load(Ordering::Relaxed), (&raw const byte).cast(), 1) };
        }
        let mut fds = [0 as libc::c_int; 2];
        // SAFETY: `fds` has room for the two descriptors pipe(2) returns.
        if unsafe { libc::pipe(fds.as_mut_ptr()) } != 0 {
            return;
        }
        PIPE.store(fds[1], Ordering::Relaxed);
        std::thread::spawn(move || {
            let mut byte = 0u8;
            // SAFETY: reads at most one byte into `byte` from the pipe's read end.
            if unsafe { libc::read(fds[0], (&raw mut byte).cast(), 1) } == 1 {
                stencil35d::output::remove_unfinished();
                let signal = libc::c_int::from(byte);
                // SAFETY: the default action of a signal this handler took; raising it again
                // ends the process with the signal's status.
                unsafe {
                    libc::signal(signal, libc::SIG_DFL);
                    libc::raise(signal);
                }
            }
        });
        for signal in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
            // SAFETY: `on_signal` calls write(2) only, which a signal handler may call.
            unsafe { libc::signal(signal, on_signal as *const () as libc::sighandler_t) };
        }
    }
}

/// Ends the process with an error, not a panic's backtrace, when a write to standard output
/// fails (a full disk under `> results.json`): `println!` panics with "failed printing to
/// stdout: ..." on such an error.
fn stdout_errors_end_with_a_message() {
    let default = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        let payload = info.payload();
        let text = payload
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| payload.downcast_ref::<&str>().copied())
            .unwrap_or("");
        if let Some(why) = text.strip_prefix("failed printing to stdout: ") {
            eprintln!("error: cannot write to standard output: {why}");
            std::process::exit(1);
        }
        default(info);
    }));
}

fn main() {
    quiet_on_closed_pipe();
    remove_unfinished_files_on_signals();
    stdout_errors_end_with_a_message();
    let cli = Cli::parse();
    if let Err(e) = install_tuning(&cli.tune) {
        eprintln!("error: {e}");
        std::process::exit(2);
    }
    let mpi = match ranks::start() {
        Ok(mpi) => mpi,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::exit(2);
        }
    };
    let exit = ranks::exit_communicator(mpi.as_ref());
    let result = run(&cli.command, mpi.as_ref());
    if let Err(e) = result {
        // Over ranks every rank fails together, rank 0 naming the rank that failed first.
        if ranks::is_first(mpi.as_ref()) {
            eprintln!("error: {e}");
        }
        ranks::wait_for_the_others(exit.as_ref(), &e);
        std::process::exit(1);
    }
}

/// Runs `bench` or a `run` scenario over the ranks when started by an MPI launcher on more than
/// one rank; refuses the other subcommands there.
#[cfg(feature = "mpi")]
fn run(command: &Command, mpi: Option<&mpi::environment::Universe>) -> stencil35d::Result<()> {
    use mpi::topology::Communicator;
    let Some(world) = mpi.map(|u| u.world()).filter(|w| w.size() > 1) else {
        return run_here(command);
    };
    match command {
        Command::Bench(a) => bench_ranks::run(a, &world),
        Command::Run(Scenario::Cavity(a)) => cavity::run_ranks(a, &world),
        Command::Run(Scenario::Channel(a)) => channel::run_ranks(a, &world),
        Command::Run(Scenario::Sphere(a)) => sphere::run_ranks(a, &world),
        Command::Run(Scenario::Wave(a)) => wave_ranks::run(a, &world),
        Command::Run(Scenario::Heat(a)) => heat::run_ranks(a, &world),
        _ => Err(ranks::single_process_only(
            command.name(),
            world.size() as usize,
        )),
    }
}

/// Without the `mpi` feature every subcommand runs in this one process.
#[cfg(not(feature = "mpi"))]
fn run(command: &Command, _: Option<&()>) -> stencil35d::Result<()> {
    run_here(command)
}

impl Command {
    /// The subcommand as typed.
    #[cfg_attr(not(feature = "mpi"), allow(dead_code))]
    fn name(&self) -> &'static str {
        match self {
            Command::Plan(_) => "plan",
            Command::Bench(_) => "bench",
            Command::Compare(_) => "compare",
            Command::Run(_) => "run",
            Command::Probe(_) => "probe",
            Command::Filter(_) => "filter",
        }
    }
}

/// Runs `command` in this process.
fn run_here(command: &Command) -> stencil35d::Result<()> {
    match command {
        Command::Plan(a) => plan_cmd::run(a),
        Command::Bench(a) => bench::run(a),
        Command::Compare(a) => compare::run(a),
        Command::Run(Scenario::Heat(a)) => heat::run(a),
        Command::Run(Scenario::Cavity(a)) => cavity::run(a),
        Command::Run(Scenario::Channel(a)) => channel::run(a),
        Command::Run(Scenario::Sphere(a)) => sphere::run(a),
        Command::Run(Scenario::Wave(a)) => wave::run(a),
        Command::Probe(a) => probe::run(a),
        Command::Filter(a) => filter::run(a),
    }
}
