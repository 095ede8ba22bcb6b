//! `mpirun -n N stencil35d bench`: a stencil grid, a lattice or a wave shot split over the
//! ranks (a [`DistributedGrid`], [`DistributedLattice`] or [`DistributedWavefield`] per engine,
//! scattered from rank 0), timed with the same repeats and medians as in one process, rank 0
//! printing. MUPS count the whole grid; the JSON adds the
//! rank count, the process grid, the share of the run spent exchanging halos or waiting
//! for other ranks, and each rank's seconds of computing (the run less its exchanges and
//! waits), whose spread says how far the slowest rank held the others back.

use mpi::datatype::Equivalence;
use mpi::topology::{Communicator, SimpleCommunicator};
use mpi::traits::Root;
use serde_json::json;
use stencil35d::distributed::{
    agreed, broadcast_json, common_plan, DistributedGrid, DistributedLattice, DistributedWavefield,
};
use stencil35d::lbm::Lattice;
use stencil35d::perf::time_runs;
use stencil35d::tuning::GpuHalos;
use stencil35d::wave::Wavefield;
use stencil35d::{Engine, Error, Grid, Kernel, Plan, PlanBuilder, Real, Solver, State};

use crate::bench::{
    bench_engines, json_line, print_table, reference_result, BenchArgs, Benched, Row,
};

/// Runs `bench` over the ranks of `world`.
pub fn run(args: &BenchArgs, world: &SimpleCommunicator) -> Result<(), Error> {
    match args.problem.dtype {
        stencil35d::DType::F32 => bench::<f32>(args, world),
        stencil35d::DType::F64 => bench::<f64>(args, world),
    }
}

fn bench<T: Real + Equivalence>(args: &BenchArgs, world: &SimpleCommunicator) -> Result<(), Error> {
    let kernel = args.problem.kernel(&args.overrides)?;
    if args.repeat == 0 {
        return Err(Error::InvalidArgument("--repeat must be at least 1".into()));
    }
    let dims = args.problem.dims(&kernel);
    let root = world.rank() == 0;
    // The checks of the arguments alone come before rank 0 builds the input, so that every
    // rank fails them at once.
    let engines = bench_engines(&args.engine)?;
    args.overrides.check_taken(&engines)?;
    if root {
        warn_about_binding(world.size() as usize);
    }
    // Rank 0 holds the whole input (that of a one-process bench) and scatters it; if it
    // cannot, the scatter fails on every rank and rank 0 reports why.
    match &kernel {
        Kernel::Stencil(_) => {
            let input = root.then(|| Grid::<T>::random(dims, 0.0, 1.0, args.seed));
            time_split::<DistributedGrid<T>>(args, world, (&kernel, &engines), input)
        }
        Kernel::Lbm(k) => {
            let input = root.then(|| {
                let mut lat = if k.periodic[0] {
                    stencil35d::perf::periodic_lattice::<T>(dims, args.seed)?
                } else {
                    stencil35d::perf::cavity_lattice::<T>(dims, args.seed)?
                };
                lat.set_storage(k.storage)?;
                Ok(lat)
            });
            time_split::<DistributedLattice<T>>(args, world, (&kernel, &engines), input)
        }
        Kernel::Wave(w) => {
            let input = root.then(|| stencil35d::perf::wave_shot::<T>(w.clone(), dims, args.seed));
            let kernel = match &input {
                Some(Ok(shot)) => Kernel::Wave(shot.kernel().clone()),
                _ => kernel.clone(),
            };
            // The shot's kernel carries the model's largest velocity, which only rank 0 knows.
            let kernel: Kernel = broadcast_json(world, 0, root.then_some(&kernel))?;
            time_split::<DistributedWavefield<T>>(args, world, (&kernel, &engines), input)
        }
        _ => Err(Error::InvalidArgument(format!(
            "under mpirun, bench splits 3D stencil grids, lattices and wavefields over the \
             ranks; {} runs in one process (start it without mpirun)",
            kernel.name()
        ))),
    }
}

/// A state `bench` splits over the ranks: scattered from and gathered to rank 0.
trait Split: State + Sized {
    /// The whole state.
    type Whole: Benched;
    fn scatter(
        world: &SimpleCommunicator,
        plan: &Plan,
        whole: Option<&Self::Whole>,
    ) -> Result<Self, Error>;
    fn gather(&self) -> Result<Option<Self::Whole>, Error>;
    fn procs(&self) -> [usize; 2];
    /// How the halos travel between GPUs, once a GPU run has chosen.
    fn gpu_halos(&self) -> Option<GpuHalos>;
}

impl<T: Real + Equivalence> Split for DistributedGrid<T> {
    type Whole = Grid<T>;
    fn scatter(
        world: &SimpleCommunicator,
        plan: &Plan,
        whole: Option<&Grid<T>>,
    ) -> Result<Self, Error> {
        DistributedGrid::scatter(world, plan, 0, whole)
    }
    fn gather(&self) -> Result<Option<Grid<T>>, Error> {
        DistributedGrid::gather(self)
    }
    fn procs(&self) -> [usize; 2] {
        self.decomposition().procs
    }
    fn gpu_halos(&self) -> Option<GpuHalos> {
        self.gpu_halos()
    }
}

impl<T: Real + Equivalence> Split for DistributedLattice<T> {
    type Whole = Lattice<T>;
    fn scatter(
        world: &SimpleCommunicator,
        plan: &Plan,
        whole: Option<&Lattice<T>>,
    ) -> Result<Self, Error> {
        DistributedLattice::scatter(world, plan, 0, whole)
    }
    fn gather(&self) -> Result<Option<Lattice<T>>, Error> {
        DistributedLattice::gather(self)
    }
    fn procs(&self) -> [usize; 2] {
        self.decomposition().procs
    }
    fn gpu_halos(&self) -> Option<GpuHalos> {
        self.gpu_halos()
    }
}

impl<T: Real + Equivalence> Split for DistributedWavefield<T> {
    type Whole = Wavefield<T>;
    fn scatter(
        world: &SimpleCommunicator,
        plan: &Plan,
        whole: Option<&Wavefield<T>>,
    ) -> Result<Self, Error> {
        DistributedWavefield::scatter(world, plan, 0, whole)
    }
    fn gather(&self) -> Result<Option<Wavefield<T>>, Error> {
        DistributedWavefield::gather(self)
    }
    fn procs(&self) -> [usize; 2] {
        self.decomposition().procs
    }
    fn gpu_halos(&self) -> Option<GpuHalos> {
        self.gpu_halos()
    }
}

/// Times `engines` (those of `--engine`) for `kernel` on `input` (rank 0's; `None` elsewhere)
/// split over the ranks, and prints on rank 0.
fn time_split<S: Split>(
    args: &BenchArgs,
    world: &SimpleCommunicator,
    (kernel, engines): (&Kernel, &[Option<Engine>]),
    input: Option<Result<S::Whole, Error>>,
) -> Result<(), Error> {
    let root = world.rank() == 0;
    let (input, mut input_error) = match input {
        Some(Err(e)) => (None, Some(e)),
        other => (other.and_then(Result::ok), None),
    };
    let dims = args.problem.dims(kernel);
    let mut reference: Option<S::Whole> = None;
    let (mut rows, mut splits) = (Vec::new(), Vec::new());
    for &engine in engines {
        let plan = args
            .overrides
            .apply(
                PlanBuilder::new(kernel.clone(), args.problem.dtype, dims),
                engine,
            )
            .build();
        // Planning can fail on some ranks only (a GPU engine where a rank has none).
        let plan = common_plan(world, agreed(world, plan)?)?;
        for w in plan.warnings().iter().filter(|_| root) {
            eprintln!("warning: {w}");
        }
        let scatter = || S::scatter(world, &plan, input.as_ref());
        let mut state = scatter().map_err(|e| input_error.take().unwrap_or(e))?;
        let procs = state.procs();
        let mut solver = Solver::new(plan.clone());
        let timed = time_runs(&mut solver, &mut state, args.steps, args.repeat)?;
        let halos = state.gpu_halos();
        let computing = computing_seconds(world, &timed.median);
        let max_rel_err = if args.verify {
            let mut fresh = scatter()?;
            solver.run(&mut fresh, args.steps)?;
            // Rank 0 alone compares, and every rank learns whether it could.
            let compared = match (fresh.gather()?, input.as_ref()) {
                (Some(result), Some(input)) => {
                    let expected = match &reference {
                        Some(r) => Ok(r),
                        None => reference_result(plan.kernel(), input, args)
                            .map(|r| &*reference.insert(r)),
                    };
                    expected.and_then(|e| result.rel_diff(e)).map(Some)
                }
                _ => Ok(None),
            };
            agreed(world, compared)?
        } else {
            None
        };
        let row = Row {
            auto: engine.is_none(),
            adapted: timed.adapted,
            report: timed.median,
            seconds: timed.seconds,
            max_rel_err,
            resources: None,
        };
        if root && args.json {
            let mut line = json_line(args, &row);
            line["ranks"] = json!(world.size());
            line["procs"] = json!(format!("1x{}x{}", procs[0], procs[1]));
            line["communication_seconds"] = json!(row.report.communication_seconds);
            line["computing_seconds_by_rank"] = json!(computing);
            line["gpu_halos"] = json!(halos.map(halo_path));
            println!("{line}");
        }
        rows.push(row);
        splits.push((procs, halos, computing));
    }
    if root && !args.json {
        print_rows(args, world.size(), &rows, &splits);
    }
    Ok(())
}

/// Each rank's seconds of computing in `report` (its run less its exchanges and waits),
/// gathered on rank 0 (empty elsewhere). Collective.
fn computing_seconds(world: &SimpleCommunicator, report: &stencil35d::RunReport) -> Vec<f64> {
    let mine = (report.seconds - report.communication_seconds).max(0.0);
    let root = world.process_at_rank(0);
    if world.rank() == 0 {
        let mut all = vec![0.0; world.size() as usize];
        root.gather_into_root(&mine, &mut all[..]);
        all
    } else {
        root.gather_into(&mine);
        Vec::new()
    }
}

/// How a split run's halos travelled between GPUs, as the JSON and the table name it.
fn halo_path(h: GpuHalos) -> &'static str {
    match h {
        GpuHalos::Nccl => "nccl",
        _ => "host",
    }
}

/// The table of a one-process bench and a line per engine on the split and its exchanges.
fn print_rows(
    args: &BenchArgs,
    ranks: i32,
    rows: &[Row],
    splits: &[([usize; 2], Option<GpuHalos>, Vec<f64>)],
) {
    print_table(args, rows);
    for (row, (p, halos, computing)) in rows.iter().zip(splits) {
        let r = &row.report;
        let path = match halos {
            Some(GpuHalos::Nccl) => " (GPU to GPU through NCCL)",
            Some(_) => " (GPU to GPU through host memory)",
            None => "",
        };
        println!(
            "{}: {ranks} ranks ({} x {} in y and z), {:.1}% of the run exchanging halos{path} \
             or waiting for other ranks",
            r.engine.name(),
            p[0],
            p[1],
            100.0 * r.communication_seconds / r.seconds.max(f64::MIN_POSITIVE)
        );
        let (least, most) = computing
            .iter()
            .fold((f64::INFINITY, 0.0_f64), |(a, b), &c| (a.min(c), b.max(c)));
        if least.is_finite() && least > 0.0 {
            println!(
                "{}: ranks computed for {least:.4}-{most:.4} s, the slowest {:.1}% longer than \
                 the fastest",
                r.engine.name(),
                100.0 * (most / least - 1.0)
            );
        }
    }
}

/// Warns when the ranks on this host cannot use its cores or would share them: mpirun binds
/// each of two or fewer ranks to one core unless told otherwise, and the planner gives each
/// rank the cores it may run on. Unbound ranks plan for an equal share of the cores each and
/// pin their blocked engines' workers to it, but leave their other threads to the system.
fn warn_about_binding(ranks: usize) {
    let mine = std::thread::available_parallelism().map_or(1, |n| n.get());
    let local = stencil35d::distributed::host_ranks().map_or(ranks, |(_, n)| n);
    // SAFETY: sysconf only reads a system setting.
    let online = unsafe { libc::sysconf(libc::_SC_NPROCESSORS_ONLN) }.max(1) as usize;
    if mine * local > online {
        eprintln!(
            "warning: the {local} ranks on this host may each run on {mine} of its {online} \
             cores, so their threads may share cores; bind each rank to its own: \
             mpirun --map-by slot:PE={} --bind-to core",
            (online / local).max(1)
        );
    } else if mine * local < online {
        eprintln!(
            "warning: rank 0 may run on {mine} of this host's {online} cores ({local} ranks \
             here); to give each rank {} cores: mpirun --map-by slot:PE={} --bind-to core",
            online / local,
            online / local
        );
    }
}
