//! Distributed stencil runs against the single-process run, bit for bit. Run under MPI:
//! `mpirun -n 2 target/release/deps/distributed-*` (and `-n 4`; `.ci/run` does both); alone it
//! runs as one rank. Every rank runs every case in the same order; rank 0 compares. A failed
//! case panics, which ends the process without finalising MPI, so mpirun fails the job.

use mpi::topology::Communicator;
use mpi::traits::{CommunicatorCollectives, Root};
use stencil35d::distributed::{common_plan, Decomposition, DistributedGrid, DistributedLattice};
use stencil35d::distributed::{rank_path, DistributedWavefield};
use stencil35d::lbm::{
    Axis, Cell, CheckpointTag, Face, Lattice, LbmKernel, Physics, Shape, Storage,
};
use stencil35d::perf::{bench_wave_kernel, cavity_lattice, periodic_lattice, wave_shot};
use stencil35d::wave::{Face as WaveFace, Receiver, Source, Wavefield, Wavelet};
use stencil35d::{Engine, Error, Grid, Kernel, Plan, PlanBuilder, Real, Solver, State, Stencil};

/// Odd sizes: not a multiple of a SIMD width, a tile or a rank count.
const DIMS: [usize; 3] = [21, 23, 19];
/// The same cells the other way round: two ranks split it across z (DIMS across y).
const DIMS_Z: [usize; 3] = [21, 19, 23];

/// The one-thread plan of `engine` for `kernel` on `dims`, with `dim_t` when blocked.
fn plan<T: Real>(
    kernel: impl Into<Kernel>,
    engine: Engine,
    dim_t: usize,
    dims: [usize; 3],
) -> Plan {
    let mut b = PlanBuilder::new(kernel, T::DTYPE, dims)
        .engine(engine)
        .threads(1);
    if engine.is_blocked() {
        b = b.dim_t(dim_t);
    }
    b.build()
        .unwrap_or_else(|e| panic!("{engine} dim_t {dim_t}: {e}"))
}

/// Runs `plan` on the split state and on the one-process state, 5 steps then 2 (the second
/// run starts inside a pass of `dim_t` 3).
fn run_both<D: State, A: State>(plan: &Plan, dist: &mut D, alone: &mut A) {
    let (mut solver, mut alone_solver) = (Solver::new(plan.clone()), Solver::new(plan.clone()));
    for n in [5, 2] {
        solver.run(dist, n).unwrap();
        alone_solver.run(alone, n).unwrap();
    }
}

/// `chunks` runs (steps each) of `plan` on one process and distributed; rank 0 checks that
/// the gathered grid equals the single-process one bit for bit. Returns whether it ran
/// (false when the ranks cannot split the grid for this halo).
fn case<T: Real + mpi::datatype::Equivalence>(
    world: &impl Communicator,
    (stencil, dims): (&Stencil, [usize; 3]),
    engine: Engine,
    dim_t: usize,
    chunks: &[usize],
    scatter: bool,
) -> bool {
    let p = plan::<T>(stencil.clone(), engine, dim_t, dims);
    let input = Grid::<T>::random(dims, -1.0, 1.0, 11).unwrap();
    let dist = if scatter {
        let whole = (world.rank() == 0).then_some(&input);
        DistributedGrid::scatter(world, &p, 0, whole)
    } else {
        DistributedGrid::from_fn(world, &p, |x, y, z| input.get(x, y, z))
    };
    let mut dist = match dist {
        Ok(d) => d,
        Err(Error::InvalidArgument(m)) if m.contains("cannot split") => return false,
        Err(e) => panic!("{e}"),
    };
    let mut solver = Solver::new(p.clone());
    let mut alone = input.clone();
    let mut alone_solver = Solver::new(p);
    let mut done = 0;
    for &n in chunks {
        let report = solver.run(&mut dist, n).unwrap();
        assert_eq!(report.steps, n);
        alone_solver.run(&mut alone, n).unwrap();
        done += n as u64;
        assert_eq!(dist.steps(), Some(done), "{engine} dim_t {dim_t}");
    }
    if let Some(whole) = dist.gather().unwrap() {
        let label = format!(
            "{} {engine} dim_t {dim_t} {chunks:?} over {:?}",
            T::DTYPE,
            dist.decomposition().procs
        );
        assert_eq!(whole.dims(), alone.dims());
        let diff = first_difference(&whole, &alone);
        assert!(diff.is_none(), "{label}: first difference at {diff:?}");
        println!("ok: {stencil} {label}");
    }
    true
}

/// The value's bits (an `f32` widened exactly).
fn bits<T: Real>(v: T) -> u64 {
    v.to_f64().expect("a float").to_bits()
}

/// The first cell, with both values, where `a` and `b` differ in their bits.
fn first_difference<T: Real>(a: &Grid<T>, b: &Grid<T>) -> Option<(([usize; 3], T), T)> {
    a.iter()
        .zip(b.iter())
        .find(|((_, x), (_, y))| bits(*x) != bits(*y))
        .map(|(x, (_, y))| (x, y))
}

fn stencils() -> Vec<Stencil> {
    vec![
        Stencil::seven_point(0.4, 0.1),
        Stencil::from_name("box27").unwrap(),
        Stencil::from_name("star:2").unwrap(),
        Stencil::from_name("star:4").unwrap(),
    ]
}

fn equal_to_one_process(world: &impl Communicator) {
    let mut skipped = Vec::new();
    for stencil in stencils() {
        for (engine, dim_t) in [
            (Engine::Reference, 1),
            (Engine::Naive, 1),
            (Engine::Blocked, 1),
            (Engine::Blocked, 2),
            (Engine::Blocked, 3),
        ] {
            // Steps not a multiple of dim_t, split over two runs.
            let on = (&stencil, DIMS);
            let ran_f32 = case::<f32>(world, on, engine, dim_t, &[5, 2], false);
            let ran_f64 = case::<f64>(world, on, engine, dim_t, &[7], true);
            // Whether a split can carry the halo depends on its depth, not on the type.
            assert_eq!(ran_f32, ran_f64, "{stencil} {engine} dim_t {dim_t}");
            if !ran_f32 {
                skipped.push((stencil.radius(), dim_t));
            }
        }
    }
    // A split needs every block thicker than the halo (radius × dim_t) along its split axes,
    // y (23 cells) and z (19). One rank never splits; two split y in two (11-12 cells) and
    // four split both (11-12 × 9-10), which carry halos up to 8 but not radius 4 at dim_t 3
    // (12); three split y in three (7-8 cells), which also refuses radius 4 at dim_t 2 (8).
    let expected: &[(usize, usize)] = match world.size() {
        1 => &[],
        2 | 4 => &[(4, 3)],
        3 => &[(4, 2), (4, 3)],
        n => panic!("the suite expects 1-4 ranks, not {n}"),
    };
    assert_eq!(
        skipped, expected,
        "(radius, dim_t) of the cases that could not split"
    );
    // A thin z that no rank splits may hold fewer planes than the halo: its z faces have no
    // neighbours, so nothing crosses them.
    let thin = (&Stencil::seven_point(0.4, 0.1), [13, 40, 3]);
    for scatter in [false, true] {
        assert!(case::<f64>(
            world,
            thin,
            Engine::Blocked,
            4,
            &[5, 3],
            scatter
        ));
    }
}

/// The GPU engines through a split: each rank's block stays on its GPU for the run and only
/// the halo faces travel (through NCCL where every rank has a GPU of its own, else through
/// host memory; `STENCIL35D_GPU_HALOS` forces either). Bit for bit against one process on the
/// same engine. Skips, on every rank alike, where there is no GPU.
fn gpu_equal_to_one_process(world: &impl Communicator) {
    if stencil35d::gpu::test_gate::gpu_for_test().is_none() {
        return;
    }
    let mut ran = 0;
    for stencil in stencils() {
        for (engine, dim_t) in [
            (Engine::GpuNaive, 1),
            (Engine::GpuBlocked, 1),
            (Engine::GpuBlocked, 2),
            (Engine::GpuBlocked, 3),
        ] {
            // The planner has no gpu-blocked shape for some deep, wide cases (radius 4 f64
            // at dim_t 3): those are not GPU plans anyone can make.
            let fits = |dtype, dims| {
                PlanBuilder::new(stencil.clone(), dtype, dims)
                    .engine(engine)
                    .dim_t(dim_t)
                    .build()
                    .is_ok()
            };
            // f32 split across z on two ranks (its z faces travel beside the interior of
            // each pass through NCCL), f64 across y.
            if fits(f32::DTYPE, DIMS_Z) {
                let on = (&stencil, DIMS_Z);
                ran += usize::from(case::<f32>(world, on, engine, dim_t, &[5, 2], false));
            }
            if fits(f64::DTYPE, DIMS) {
                let on = (&stencil, DIMS);
                ran += usize::from(case::<f64>(world, on, engine, dim_t, &[7], true));
            }
        }
    }
    assert!(ran >= 8, "only {ran} GPU cases could be planned and split");
    let early = (Stencil::seven_point(4.0, 4.0), 50);
    let late = (Stencil::seven_point(1.05, 0.001), 600);
    for (engine, dim_t) in [
        (Engine::GpuNaive, 1),
        (Engine::GpuBlocked, 1),
        (Engine::GpuBlocked, 2),
        (Engine::GpuBlocked, 3),
    ] {
        let run = (engine, dim_t);
        a_blow_up_leaves_every_block_at_the_last_finite_step(world, early.clone(), run, dim_t);
    }
    for engine in [Engine::GpuNaive, Engine::GpuBlocked] {
        a_blow_up_leaves_every_block_at_the_last_finite_step(world, late.clone(), (engine, 1), 1);
    }
}

/// The CPU runs of the blow-up tests: (engine, `dim_t`, `dim_t` of the blocked plan the state
/// is split with), the last two with several passes between exchanges.
const CPU_BLOW_UP_RUNS: [(Engine, usize, usize); 6] = [
    (Engine::Naive, 1, 1),
    (Engine::Blocked, 1, 1),
    (Engine::Blocked, 2, 2),
    (Engine::Blocked, 3, 3),
    (Engine::Naive, 1, 3),
    (Engine::Blocked, 2, 3),
];

/// [`a_blow_up_leaves_every_block_at_the_last_finite_step`] on the CPU engines: the early
/// blow-up at every `dim_t` the tests split, and run by the naive engine and blocked at
/// `dim_t` 2 on a grid split for `dim_t` 3 (several passes between exchanges); the late one on
/// the naive and a blocked engine.
fn cpu_blow_ups_leave_every_block_at_the_last_finite_step(world: &impl Communicator) {
    let early = (Stencil::seven_point(4.0, 4.0), 50);
    let late = (Stencil::seven_point(1.05, 0.001), 600);
    for (engine, dim_t, split) in CPU_BLOW_UP_RUNS {
        let run = (engine, dim_t);
        a_blow_up_leaves_every_block_at_the_last_finite_step(world, early.clone(), run, split);
    }
    for run in [(Engine::Naive, 1), (Engine::Blocked, 2)] {
        a_blow_up_leaves_every_block_at_the_last_finite_step(world, late.clone(), run, run.1);
    }
}

/// More ranks than blocks thicker than the halo: every rank gets the error, none hangs. A
/// 9 × 9 cross-section split in two leaves blocks of 4, the halo of a radius-4 stencil.
fn too_many_ranks_is_an_error_everywhere(world: &impl Communicator) {
    let n = world.size() as usize;
    let stencil = Stencil::from_name("star:4").unwrap();
    let dims = [12, 9, 9];
    let p = plan::<f32>(stencil.clone(), Engine::Naive, 1, dims);
    let fits = Decomposition::new(dims, n, 4).is_ok();
    assert_eq!(fits, n == 1, "{n} ranks");
    match DistributedGrid::<f32>::from_fn(world, &p, |_, _, _| 0.0) {
        Err(e) => assert!(!fits && e.to_string().contains("cannot split"), "{e}"),
        Ok(_) => assert!(fits, "{n} ranks split 9 x 9 into blocks thicker than 4"),
    }
}

/// A value that overflows on one rank stops every rank, and the ranks trace the failure back
/// together: every block holds the last finite step, so the grid gathers into the state one
/// process keeps on the same engine, bit for bit, and a further run goes on from it and is
/// traced back the same way. On the CPU the ranks that finished the failed pass take it back
/// and every rank replays it a step at a time. `stencil` grows the value by its sum of weights a
/// step: 7-point weights of (4, 4) overflow within a few steps (the first batch of passes on
/// GPUs), of (1.05, 0.001) after some 380 to 390 steps, past the first batch of 256 one-step
/// passes. The grid is split with the plan it runs, or where `split_dim_t` differs from
/// `dim_t` with a blocked plan of that `dim_t`: halos of that depth, a pass or several between
/// exchanges.
fn a_blow_up_leaves_every_block_at_the_last_finite_step(
    world: &impl Communicator,
    (stencil, steps): (Stencil, usize),
    (engine, dim_t): (Engine, usize),
    split_dim_t: usize,
) {
    let p = plan::<f32>(stencil.clone(), engine, dim_t, DIMS);
    let split = match split_dim_t == dim_t {
        true => p.clone(),
        false => plan::<f32>(stencil, Engine::Blocked, split_dim_t, DIMS),
    };
    // Two seeds in blocks of different ranks (on 2-4 ranks), the second 28 times smaller: with
    // weights (4, 4) it overflows about a step after the first, within the same pass of three
    // steps, so a rank that fails later than another goes back to the pass's input too.
    let seed = |x, y, z| match (x, y, z) {
        (10, 20, 16) => 1e30,
        (10, 2, 3) => 1e30 / 28.0,
        _ => 0.0,
    };
    let mut alone = Grid::<f32>::from_fn(DIMS, seed).unwrap();
    let label = format!(
        "rank {}, {engine} dim_t {dim_t} split for {split_dim_t}",
        world.rank()
    );
    let step = match Solver::new(p.clone()).run(&mut alone, steps) {
        Err(Error::NonFinite { step, .. }) => step,
        other => panic!("{label}: the grid did not blow up alone: {other:?}"),
    };
    let mut grid = DistributedGrid::<f32>::from_fn(world, &split, seed).unwrap();
    let mut solver = Solver::new(p.clone());
    // The blocks make one state after the failure: a further run goes on from it, and fails
    // again in its first step.
    for (run, expected) in [(steps, step), (2, 1)] {
        match solver.run(&mut grid, run).unwrap_err() {
            Error::NonFinite { step: s, .. } => assert_eq!(s, expected, "{label}"),
            Error::RankFailed { rank, message } => {
                assert_ne!(rank, world.rank() as usize, "{label}");
                let named = format!("time step {expected} ");
                assert!(message.contains(&named), "{label}: {message}");
            }
            e => panic!("{label}: unexpected {e}"),
        }
        assert_eq!(grid.steps(), Some(step as u64 - 1), "{label}");
        if let Some(whole) = grid.gather().unwrap() {
            let diff = first_difference(&whole, &alone);
            assert!(diff.is_none(), "{label}: first difference at {diff:?}");
            println!("ok: blow-up at step {expected}, {label}, traced back");
        }
    }
}

/// Where the tests write files: cargo's directory for them, or the system's temporary
/// directory where the binary runs on a machine without that build tree (a GPU machine).
fn scratch_dir() -> String {
    let built = env!("CARGO_TARGET_TMPDIR");
    if std::path::Path::new(built).is_dir() {
        built.to_string()
    } else {
        std::env::temp_dir().display().to_string()
    }
}

/// Ends every rank of the job (`MPI_Abort` on the world communicator).
fn universe_abort() -> ! {
    mpi::topology::SimpleCommunicator::world().abort(1)
}

/// A NaN in one rank's input stops every rank before any computes.
fn non_finite_input_leaves_every_block_untouched(world: &impl Communicator) {
    let stencil = Stencil::seven_point(0.4, 0.1);
    let p = plan::<f64>(stencil.clone(), Engine::Naive, 1, DIMS);
    let init = |x: usize, y: usize, z: usize| {
        if (x, y, z) == (3, 2, 17) {
            f64::NAN
        } else {
            (x + y + z) as f64
        }
    };
    let mut grid = DistributedGrid::<f64>::from_fn(world, &p, init).unwrap();
    let before = grid.local().clone();
    match Solver::new(p).run(&mut grid, 3).unwrap_err() {
        Error::NonFiniteInput { cell, .. } => assert_eq!(cell, [3, 2, 17]),
        Error::RankFailed { message, .. } => assert!(message.contains("non-finite"), "{message}"),
        e => panic!("unexpected {e}"),
    }
    let same = grid
        .local()
        .iter()
        .zip(before.iter())
        .all(|((_, a), (_, b))| bits(a) == bits(b));
    assert!(same, "a block changed");
}

/// A root that passes no grid gets an error, and so does every other rank.
fn a_scatter_without_the_grid_is_an_error_everywhere(world: &impl Communicator) {
    let p = plan::<f32>(Stencil::seven_point(0.4, 0.1), Engine::Naive, 1, DIMS);
    match DistributedGrid::<f32>::scatter(world, &p, 0, None).err() {
        Some(Error::InvalidArgument(m)) => assert!(world.rank() == 0 && m.contains("root"), "{m}"),
        Some(Error::RankFailed { rank, .. }) => assert!(world.rank() != 0 && rank == 0),
        other => panic!("rank {}: {other:?}", world.rank()),
    }
}

/// Ranks whose plans differ (here rank 0 chose `dim_t` 2, the others 3) get an error at the
/// start on every rank; passed through `common_plan` first, they all run rank 0's choice and
/// the result equals one process's.
fn differing_plans_fail_at_start_unless_made_common(world: &impl Communicator) {
    let stencil = Stencil::seven_point(0.4, 0.1);
    let mine = plan::<f32>(
        stencil.clone(),
        Engine::Blocked,
        2 + usize::from(world.rank() > 0),
        DIMS,
    );
    let split = DistributedGrid::<f32>::from_fn(world, &mine, |_, _, _| 0.0);
    match split {
        Err(Error::PlanMismatch(m)) => assert!(world.size() > 1 && m.contains("disagree"), "{m}"),
        Ok(_) => assert_eq!(world.size(), 1, "ranks with different plans split a grid"),
        Err(e) => panic!("unexpected {e}"),
    }
    let common = common_plan(world, mine).unwrap();
    assert_eq!(common.dim_t(), 2);
    let input = Grid::<f32>::random(DIMS, -1.0, 1.0, 5).unwrap();
    let mut dist = DistributedGrid::from_fn(world, &common, |x, y, z| input.get(x, y, z)).unwrap();
    Solver::new(common.clone()).run(&mut dist, 5).unwrap();
    let mut alone = input.clone();
    Solver::new(common).run(&mut alone, 5).unwrap();
    if let Some(whole) = dist.gather().unwrap() {
        let same = whole
            .iter()
            .zip(alone.iter())
            .all(|((_, a), (_, b))| bits(a) == bits(b));
        assert!(same, "the common plan's result differs from one process's");
    }
    // A plan of a wider stencil than the grid was split for, or steps that differ between
    // ranks, are refused on every rank before any exchange.
    let wider = plan::<f32>(
        Stencil::from_name("star:2").unwrap(),
        Engine::Blocked,
        2,
        DIMS,
    );
    match Solver::new(wider).run(&mut dist, 2) {
        Err(Error::PlanMismatch(m)) => assert!(m.contains("split with halos of 2 cells"), "{m}"),
        other => panic!("a radius-2 plan ran on a grid split for radius 1: {other:?}"),
    }
    let steps = 3 + usize::from(world.rank() > 0);
    match Solver::new(common_plan(world, plan::<f32>(stencil, Engine::Blocked, 2, DIMS)).unwrap())
        .run(&mut dist, steps)
    {
        Err(Error::PlanMismatch(m)) => assert!(world.size() > 1 && m.contains("disagree"), "{m}"),
        Ok(_) => assert_eq!(world.size(), 1, "ranks ran different step counts"),
        Err(e) => panic!("unexpected {e}"),
    }
}

/// A `dim_t` the planner chose whose halo is too deep for the ranks' blocks is lowered to the
/// deepest that splits, and the plan tells it as the ranks' change of the planner's choice,
/// not as the user's.
fn a_deep_planned_dim_t_is_lowered_for_the_ranks(world: &impl Communicator) {
    // A machine with little memory bandwidth: star:2 is memory-bound and the planner goes deep.
    let mut machine = stencil35d::Machine::paper_core_i7();
    machine.bandwidth_gbs = 1.0;
    // Too large for the cache; y (23 cells) and z (19) split into blocks of 9-12.
    let dims = [4000, 23, 19];
    let plan = PlanBuilder::new(Stencil::from_name("star:2").unwrap(), f32::DTYPE, dims)
        .machine(machine)
        .engine(Engine::Blocked)
        .threads(1)
        .build()
        .unwrap();
    assert!(
        plan.dim_t() >= 6,
        "the planner chose dim_t {}",
        plan.dim_t()
    );
    let ranks = world.size() as usize;
    let deepest = (1..=plan.dim_t())
        .rev()
        .find(|&t| Decomposition::new(dims, ranks, 2 * t).is_ok())
        .unwrap();
    let common = common_plan(world, plan.clone()).unwrap();
    assert_eq!(common.dim_t(), deepest);
    let report = common.to_string();
    let lowered = common
        .warnings()
        .iter()
        .any(|w| w.contains("dim_t lowered"));
    assert_eq!(lowered, deepest < plan.dim_t(), "{report}");
    assert!(!common.overrides().dim_t, "{report}");
    assert!(
        !report.contains(&format!("dim_t {deepest} (set by user)")),
        "{report}"
    );
    if ranks > 1 {
        assert!(lowered, "{ranks} ranks split dim_t {} halos", plan.dim_t());
    }
}

/// The lattices split over ranks: a walled cavity with a moving lid, a periodic box, and a
/// channel periodic in y with an inlet and an outlet across z, a body force and a sphere
/// that crosses rank borders.
fn lattices<T: Real>() -> Vec<(&'static str, Lattice<T>)> {
    let dims = [9, 14, 17];
    let mut channel = periodic_lattice::<T>(dims, 3).unwrap();
    channel.set_periodic(Axis::Z, false);
    channel.set_periodic(Axis::X, false);
    for face in [Face::XMin, Face::XMax] {
        channel.set_face(face, Cell::Wall).unwrap();
    }
    let inlet = Cell::Inlet {
        velocity: [0.0, 0.0, 0.04],
    };
    channel.set_face(Face::ZMin, inlet).unwrap();
    channel
        .set_face(Face::ZMax, Cell::Outlet { density: 1.0 })
        .unwrap();
    let sphere = Shape::Sphere {
        centre: [4.0, 7.0, 8.0],
        radius: 3.5,
    };
    channel.fill_shape(&sphere, Cell::Wall).unwrap();
    let physics = Physics::bgk(0.7).with_force([0.0, 1e-5, 0.0]);
    channel.set_physics(physics).unwrap();
    vec![
        ("cavity", cavity_lattice::<T>(dims, 2).unwrap()),
        ("periodic box", periodic_lattice::<T>(dims, 4).unwrap()),
        ("channel", channel),
    ]
}

/// Panics, naming `label` and the node, unless `a` and `b` hold the same populations bit for
/// bit.
fn assert_same_populations<T: Real>(a: &Lattice<T>, b: &Lattice<T>, label: &str) {
    let [nx, ny, nz] = b.dims();
    for (x, y, z) in
        (0..nz).flat_map(|z| (0..ny).flat_map(move |y| (0..nx).map(move |x| (x, y, z))))
    {
        let (p, q) = (a.populations(x, y, z), b.populations(x, y, z));
        let same = p.iter().zip(&q).all(|(p, q)| bits(*p) == bits(*q));
        assert!(
            same,
            "{label}: node ({x}, {y}, {z}) differs: {p:?} against {q:?}"
        );
    }
}

/// Every lattice, engine and `dim_t`: the gathered lattice equals the single-process run bit
/// for bit (populations, flags and step count), over runs of 5 and 2 steps.
fn lattices_equal_one_process<T: Real + mpi::datatype::Equivalence>(world: &impl Communicator) {
    let mut engines = vec![
        (Engine::Reference, 1),
        (Engine::Naive, 1),
        (Engine::Blocked, 1),
        (Engine::Blocked, 2),
        (Engine::Blocked, 3),
    ];
    // On a GPU each rank's block stays on the device for the run (where there is none, every
    // rank skips alike).
    if stencil35d::gpu::test_gate::gpu_for_test().is_some() {
        engines.push((Engine::GpuNaive, 1));
    }
    for (name, input) in lattices::<T>() {
        for &(engine, dim_t) in &engines {
            let p = plan::<T>(LbmKernel::of(&input), engine, dim_t, input.dims());
            let whole = (world.rank() == 0).then_some(&input);
            let mut dist = DistributedLattice::scatter(world, &p, 0, whole).unwrap();
            let mut alone = input.clone();
            run_both(&p, &mut dist, &mut alone);
            let Some(result) = dist.gather().unwrap() else {
                continue;
            };
            let label = format!(
                "{name} {} {engine} dim_t {dim_t} over {:?}",
                T::DTYPE,
                dist.decomposition().procs
            );
            assert_eq!(result.steps(), alone.steps(), "{label}");
            assert_eq!(result.kind_codes(), alone.kind_codes(), "{label}: flags");
            assert_same_populations(&result, &alone, &label);
            println!("ok: {label}");
        }
    }
    let (_, input) = &lattices::<T>()[0];
    let p = plan::<T>(LbmKernel::of(input), Engine::Blocked, 2, input.dims());
    let whole = (world.rank() == 0).then_some(input);
    let mut dist = DistributedLattice::scatter(world, &p, 0, whole).unwrap();
    refuses_differing_steps(world, &p, &mut dist, |d| d.local().steps());
}

/// Every lattice in both 16-bit storages on gpu-naive: the gathered lattice equals the
/// single-process run bit for bit over runs of 5 and 2 steps, and goes on as that run does
/// (its 16-bit codes came back with it: re-encoding the decoded populations would round some
/// differently).
fn lattices_16_bit_equal_one_process(world: &impl Communicator) {
    if stencil35d::gpu::test_gate::gpu_for_test().is_none() {
        return;
    }
    for (name, mut input) in lattices::<f32>() {
        for storage in [Storage::F16s, Storage::F16c] {
            input.set_storage(storage).unwrap();
            let p = plan::<f32>(LbmKernel::of(&input), Engine::GpuNaive, 1, input.dims());
            let whole = (world.rank() == 0).then_some(&input);
            let mut dist = DistributedLattice::scatter(world, &p, 0, whole).unwrap();
            let mut alone = input.clone();
            run_both(&p, &mut dist, &mut alone);
            let gathered = dist.gather().unwrap();
            let label = format!("{name} {storage} over {:?}", dist.decomposition().procs);
            restarts_exactly(world, &p, &mut dist, &label);
            let Some(mut result) = gathered else {
                continue;
            };
            let mut solver = Solver::new(p.clone());
            for round in ["split", "continued"] {
                assert_eq!(result.steps(), alone.steps(), "{label} {round}");
                assert_same_populations(&result, &alone, &format!("{label} {round}"));
                solver.run(&mut result, 3).unwrap();
                solver.run(&mut alone, 3).unwrap();
            }
            println!("ok: {label} gpu-naive");
        }
    }
}

/// `dist` saved, run 3 steps and gathered equals the checkpoint loaded on as many ranks, run
/// 3 steps and gathered, bit for bit (a 16-bit lattice's codes included). Collective.
fn restarts_exactly(
    world: &impl Communicator,
    p: &Plan,
    dist: &mut DistributedLattice<f32>,
    label: &str,
) {
    let prefix = format!(
        "{}/lattice-{}-ranks-{}",
        scratch_dir(),
        world.size(),
        label.replace([' ', ',', '[', ']'], "-")
    );
    dist.save(&prefix).unwrap();
    let mut solver = Solver::new(p.clone());
    solver.run(dist, 3).unwrap();
    let expected = dist.gather().unwrap();
    let mut restarted = DistributedLattice::<f32>::load(world, p, &prefix).unwrap();
    solver.run(&mut restarted, 3).unwrap();
    if let (Some(a), Some(b)) = (expected, restarted.gather().unwrap()) {
        assert_eq!(a.steps(), b.steps(), "{label} restarted");
        assert_same_populations(&a, &b, &format!("{label} restarted"));
    }
}

/// A lid-driven cavity that goes unstable (BGK τ = 0.52 under a lid at 0.2; f32 overflows
/// after some 150 steps, past the GPU engine's first checks) stops every rank at the step the
/// single-process run of the same engine stops at; the failing rank names it, the others name
/// that rank. Every rank traces the failure back from the failed pass's input (on the GPU the
/// failed batch's), so the gathered lattice is that run's last finite state, bit for bit.
fn a_lattice_blow_up_stops_all_at_the_last_finite_state(world: &impl Communicator) {
    let mut input = Lattice::<f32>::new([14, 12, 11], Physics::bgk(0.52)).unwrap();
    for face in Face::ALL {
        input.set_face(face, Cell::Wall).unwrap();
    }
    let lid = Cell::MovingWall {
        velocity: [0.2, 0.0, 0.0],
    };
    input.set_face(Face::YMax, lid).unwrap();
    let mut engines = vec![
        (Engine::Naive, 1),
        (Engine::Blocked, 1),
        (Engine::Blocked, 2),
    ];
    if stencil35d::gpu::test_gate::gpu_for_test().is_some() {
        engines.push((Engine::GpuNaive, 1));
    }
    for (engine, dim_t) in engines {
        let p = plan::<f32>(LbmKernel::of(&input), engine, dim_t, input.dims());
        let mut alone = input.clone();
        let (step, cell) = match Solver::new(p.clone()).run(&mut alone, 1000) {
            Err(Error::NonFinite { step, cell, .. }) => (step, cell),
            other => panic!("{engine}: the cavity did not blow up alone: {other:?}"),
        };
        assert!(step > 64, "{engine}: step {step}, within the first check");
        let whole = (world.rank() == 0).then_some(&input);
        let mut dist = DistributedLattice::scatter(world, &p, 0, whole).unwrap();
        // Every rank names the step and the cell one process names.
        match Solver::new(p.clone()).run(&mut dist, 1000).unwrap_err() {
            Error::NonFinite {
                step: s, cell: c, ..
            } => assert_eq!((s, c), (step, cell), "{engine}"),
            Error::RankFailed { rank, message } => {
                assert_ne!(rank, world.rank() as usize);
                let [x, y, z] = cell;
                let named = format!("at cell ({x}, {y}, {z}) in time step {step}");
                assert!(message.contains(&named), "{engine}: {message}");
            }
            e => panic!("{engine}: unexpected {e}"),
        }
        assert_eq!(
            dist.local().steps(),
            step as u64 - 1,
            "{engine} dim_t {dim_t}"
        );
        let Some(result) = dist.gather().unwrap() else {
            continue;
        };
        let label = format!("{engine} dim_t {dim_t} after the blow-up");
        assert_same_populations(&result, &alone, &label);
        println!("ok: lattice blow-up at step {step} on {engine} dim_t {dim_t}");
    }
}

/// The point extent (first and last point along x, y and z) and the density values (`f32`,
/// x fastest) of the `.vti` piece at `path`, as `write_pvti` writes it.
fn read_piece_density(path: &std::path::Path) -> ([[usize; 2]; 3], Vec<f32>) {
    let bytes = std::fs::read(path).unwrap();
    let text = String::from_utf8_lossy(&bytes);
    let at = text.find("<Piece Extent=\"").unwrap() + "<Piece Extent=\"".len();
    let e: Vec<usize> = text[at..]
        .split('"')
        .next()
        .unwrap()
        .split(' ')
        .map(|v| v.parse().unwrap())
        .collect();
    let marker = b"<AppendedData encoding=\"raw\">\n   _";
    let start = bytes
        .windows(marker.len())
        .position(|w| w == marker)
        .unwrap()
        + marker.len();
    let len = u64::from_le_bytes(bytes[start..start + 8].try_into().unwrap()) as usize;
    let values = bytes[start + 8..start + 8 + len]
        .chunks(4)
        .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
        .collect();
    ([[e[0], e[1]], [e[2], e[3]], [e[4], e[5]]], values)
}

/// `input` split over the ranks and run `2·dim_t + 1` steps at `dim_t`, then written with
/// `write_pvti`: every rank's piece, the layer it shares with its upper neighbours included,
/// holds the densities of the gathered lattice (rank 0's, broadcast), not those the run's
/// last exchange left in its halos (a pass old, and one layer deep only the populations
/// streaming inward).
fn pieces_hold_the_current_state(world: &impl Communicator, input: &Lattice<f32>, dim_t: usize) {
    let p = plan::<f32>(LbmKernel::of(input), Engine::Blocked, dim_t, input.dims());
    let whole = (world.rank() == 0).then_some(input);
    let mut run = DistributedLattice::scatter(world, &p, 0, whole).unwrap();
    Solver::new(p).run(&mut run, 2 * dim_t + 1).unwrap();
    let [nx, ny, nz] = run.dims();
    let mut rho = vec![0f32; nx * ny * nz];
    if let Some(w) = run.gather().unwrap() {
        let density = w.density().unwrap();
        for (r, (_, v)) in rho.iter_mut().zip(density.iter()) {
            *r = v;
        }
    }
    world.process_at_rank(0).broadcast_into(&mut rho[..]);
    let dir = std::path::PathBuf::from(format!(
        "{}/pvti-{}-ranks-dim-t-{dim_t}",
        scratch_dir(),
        world.size()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    run.write_pvti(&dir, "flow").unwrap();
    let piece = stencil35d::distributed::piece_path(&dir, "flow", world.rank() as usize);
    let ([xs, ys, zs], values) = read_piece_density(&piece);
    let b = run.block();
    let shares = (0..2).any(|a| b.halos[a][1] > 0 && b.owned[a].end < b.extent[a]);
    assert_eq!(
        ys[1] + 1 > b.owned[0].end || zs[1] + 1 > b.owned[1].end,
        shares
    );
    let mut got = values.into_iter();
    for z in zs[0]..=zs[1] {
        for y in ys[0]..=ys[1] {
            for x in xs[0]..=xs[1] {
                let (g, w) = (got.next().unwrap(), rho[(z * ny + y) * nx + x]);
                assert_eq!(
                    g.to_bits(),
                    w.to_bits(),
                    "dim_t {dim_t} ({x}, {y}, {z}): {g} {w}"
                );
            }
        }
    }
    println!(
        "ok: .vti pieces over {} ranks at dim_t {dim_t}",
        world.size()
    );
}

/// A lattice checkpointed mid-run restarts bit for bit on the same decomposition, with the
/// plan that wrote it and with one exchanging every 3 steps instead of 2 (a deeper halo,
/// rebuilt from the neighbours), and files tagged for another run are refused on every rank.
fn lattice_checkpoints_restart_exactly(world: &impl Communicator) {
    let input = lattices::<f32>().pop().expect("the channel").1;
    let plan = |dim_t| {
        PlanBuilder::new(LbmKernel::of(&input), f32::DTYPE, input.dims())
            .engine(Engine::Blocked)
            .dim_t(dim_t)
            .threads(1)
            .build()
            .unwrap()
    };
    let p = plan(2);
    let prefix = format!("{}/lattice-{}-ranks", scratch_dir(), world.size());
    let whole = (world.rank() == 0).then_some(&input);
    let mut run = DistributedLattice::scatter(world, &p, 0, whole).unwrap();
    let mut solver = Solver::new(p.clone());
    solver.run(&mut run, 5).unwrap();
    run.save(&prefix).unwrap();
    solver.run(&mut run, 4).unwrap();
    let expected = run.gather().unwrap();
    for dim_t in [1, 2] {
        pieces_hold_the_current_state(world, &input, dim_t);
    }
    for dim_t in [2, 3] {
        let p = plan(dim_t);
        let mut restarted = DistributedLattice::<f32>::load(world, &p, &prefix).unwrap();
        Solver::new(p).run(&mut restarted, 4).unwrap();
        if let (Some(a), Some(b)) = (&expected, restarted.gather().unwrap()) {
            assert_eq!(a.steps(), 9);
            assert_eq!(b.steps(), 9);
            assert_eq!(a.kind_codes(), b.kind_codes(), "dim_t {dim_t}: flags");
            let diff = a.max_rel_diff(&b).unwrap();
            assert_eq!(diff, 0.0, "the run restarted with dim_t {dim_t} differs");
            println!(
                "ok: lattice checkpoint restarts exactly on {} ranks with dim_t {dim_t}",
                world.size()
            );
        }
    }
    let other = CheckpointTag::new("another run", "");
    match DistributedLattice::<f32>::load_tagged(world, &plan(2), &prefix, &other).err() {
        Some(Error::InvalidArgument(m)) => assert!(m.contains("same decomposition"), "{m}"),
        Some(Error::RankFailed { .. }) => {}
        other => panic!("a checkpoint of another run loaded: {other:?}"),
    }
    // A set whose last rank's file a later save replaced (a save stopped while the ranks
    // renamed their files) is refused on every rank.
    if world.size() > 1 {
        let later = format!("{prefix}-later");
        run.save(&later).unwrap();
        let ranks = world.size() as usize;
        if world.rank() as usize == ranks - 1 {
            let (from, to) = (
                rank_path(&later, ranks - 1, ranks),
                rank_path(&prefix, ranks - 1, ranks),
            );
            std::fs::copy(from, to).unwrap();
        }
        world.barrier();
        match DistributedLattice::<f32>::load(world, &plan(2), &prefix).err() {
            Some(Error::InvalidArgument(m)) => assert!(m.contains("steps 5 to 9"), "{m}"),
            other => panic!("a mixed checkpoint loaded: {other:?}"),
        }
        println!("ok: a checkpoint of mixed rank files is refused on {ranks} ranks");
    }
}

/// A shot split over ranks, orders 2 and 8 with absorbing layers, receivers on and between
/// rank borders: the gathered fields (both pressure levels and the auxiliary field) equal the
/// single-process run bit for bit, and the traces agree to within the rounding of adding the
/// ranks' partial sums (1e-12 of the largest sample).
fn wavefields_equal_one_process<T: Real + mpi::datatype::Equivalence>(world: &impl Communicator) {
    // The second grid, long in z, is split in z with rank borders inside the absorbing layers
    // (3 and 4 ranks), where the auxiliary field's halo matters.
    let mut engines = vec![
        (Engine::Reference, 1),
        (Engine::Naive, 1),
        (Engine::Blocked, 1),
        (Engine::Blocked, 2),
        (Engine::Blocked, 3),
    ];
    // On a GPU each rank's field stays on the device for the run (where there is none, every
    // rank skips alike).
    if stencil35d::gpu::test_gate::gpu_for_test().is_some() {
        engines.extend([
            (Engine::GpuNaive, 1),
            (Engine::GpuBlocked, 1),
            (Engine::GpuBlocked, 2),
        ]);
    }
    // Rigid faces (one step per pass) on x high, y low and z high: the ranks at those ends of
    // the split axes mirror them, the others not.
    let cases = [
        ([17, 26, 31], 2, false),
        ([17, 26, 31], 8, false),
        ([17, 17, 27], 8, false),
        ([17, 26, 31], 2, true),
        ([17, 17, 27], 8, true),
    ];
    let mut skipped = Vec::new();
    for (dims, order, rigid) in cases {
        let mut runs = engines.clone();
        if rigid {
            runs.iter_mut().for_each(|run| run.1 = 1);
            runs.dedup();
        }
        for &(engine, dim_t) in &runs {
            let pml = order / 2 + stencil35d::wave::MIN_DAMPED_CELLS;
            let mut kernel = bench_wave_kernel(order, pml);
            if rigid {
                kernel = kernel
                    .with_face(0, 1, WaveFace::Rigid)
                    .with_face(1, 0, WaveFace::Rigid)
                    .with_face(2, 1, WaveFace::Rigid);
            }
            let mut input = wave_shot::<T>(kernel, dims, 7).unwrap();
            let h = input.kernel().spacing;
            // Receivers at cell centres and between cells, near the middle of y and z (where
            // ranks split the grid).
            let receivers: Vec<Receiver> = [(8.0, 8.5, 13.5), (8.3, 8.0, 12.7), (9.0, 9.2, 17.0)]
                .iter()
                .map(|&(x, y, z)| Receiver::at([x * h[0], y * h[1], z * h[2]]))
                .collect();
            input.add_receivers(&receivers).unwrap();
            let planned = PlanBuilder::new(input.kernel().clone(), T::DTYPE, dims)
                .engine(engine)
                .dim_t(dim_t)
                .build();
            if engine.is_gpu() && planned.is_err() {
                // No GPU shape for this small, deep case: not a plan anyone can make.
                continue;
            }
            let p = plan::<T>(input.kernel().clone(), engine, dim_t, dims);
            let whole = (world.rank() == 0).then_some(&input);
            let mut dist = match DistributedWavefield::scatter(world, &p, 0, whole) {
                Ok(d) => d,
                Err(Error::InvalidArgument(m)) if m.contains("cannot split") => {
                    // The CPU engines' cases are listed below; a GPU's deeper halos differ.
                    if !engine.is_gpu() {
                        skipped.push((dims, order, rigid, engine, dim_t));
                    }
                    continue;
                }
                Err(e) => panic!("{e}"),
            };
            let mut alone = input.clone();
            run_both(&p, &mut dist, &mut alone);
            let Some(result) = dist.gather().unwrap() else {
                continue;
            };
            let label = format!(
                "wave:{order}{} {dims:?} {} {engine} dim_t {dim_t} over {:?}",
                if rigid { " rigid" } else { "" },
                T::DTYPE,
                dist.decomposition().procs
            );
            assert_same_wavefields(&result, &alone, &label);
            println!("ok: {label}");
        }
    }
    assert_eq!(
        skipped,
        expected_wave_skips(world.size()),
        "wave cases that could not split"
    );
}

/// A wavefield that recorded traces before it was split, scattered from the last rank, gathers
/// with those traces at the start of its own, as one process has them.
fn a_wavefield_from_another_root_keeps_its_earlier_traces(world: &impl Communicator) {
    let dims = [17, 26, 31];
    let mut input = wave_shot::<f64>(bench_wave_kernel(2, 5), dims, 7).unwrap();
    let h = input.kernel().spacing;
    input
        .add_receivers(&[Receiver::at([8.0 * h[0], 8.5 * h[1], 13.5 * h[2]])])
        .unwrap();
    let p = plan::<f64>(input.kernel().clone(), Engine::Naive, 1, dims);
    Solver::new(p.clone()).run(&mut input, 3).unwrap();
    let root = world.size() as usize - 1;
    let whole = (world.rank() as usize == root).then_some(&input);
    let mut dist = DistributedWavefield::scatter(world, &p, root, whole).unwrap();
    let mut alone = input.clone();
    run_both(&p, &mut dist, &mut alone);
    if let Some(result) = dist.gather().unwrap() {
        // The lengths and samples are compared with the single process's below; the split
        // came after three recorded steps.
        assert!(alone.traces()[0].len() > 7, "{:?}", alone.traces()[0].len());
        let label = format!("wave:2 scattered from rank {root}");
        assert_same_wavefields(&result, &alone, &label);
        println!("ok: {label}");
    }
    refuses_differing_steps(world, &p, &mut dist, |d| d.local().step() as u64);
}

/// A source that blows up in rank 0's block stops every rank at step 4, and the ranks trace it
/// back together: every block, the step count and the traces stop at step 3, as one process
/// on the same engine keeps them. On the CPU the other ranks take the failed pass back (a
/// blocked pass whole, a naive step by rotating the levels back), also where the field was
/// split for three steps between exchanges; with rigid faces, whose boundary layers the mirror
/// fills before each step, they are zero again after it.
fn a_split_wave_blow_up_stops_at_the_last_finite_step(world: &impl Communicator) {
    let dims = [17, 26, 31];
    let mut engines = CPU_BLOW_UP_RUNS.to_vec();
    // Where there is no GPU, every rank skips alike.
    if stencil35d::gpu::test_gate::gpu_for_test().is_some() {
        engines.extend([
            (Engine::GpuNaive, 1, 1),
            (Engine::GpuBlocked, 1, 1),
            (Engine::GpuBlocked, 2, 2),
        ]);
    }
    for rigid in [false, true] {
        let mut kernel = bench_wave_kernel(2, 5);
        if rigid {
            kernel = kernel
                .with_face(0, 1, WaveFace::Rigid)
                .with_face(1, 0, WaveFace::Rigid);
        }
        let mut input = wave_shot::<f32>(kernel, dims, 7).unwrap();
        let mut samples = vec![1e3; 3];
        samples.push(1e300);
        let at = [60.0, 60.0, 60.0];
        input
            .add_source(Source {
                position: at,
                wavelet: Wavelet::Samples(samples),
            })
            .unwrap();
        input.add_receivers(&[Receiver::at(at)]).unwrap();
        for &(engine, dim_t, split_dim_t) in &engines {
            if rigid && (split_dim_t > 1 || engine.is_gpu()) {
                continue;
            }
            let rigid_label = if rigid { " rigid" } else { "" };
            let label = format!(
                "rank {}, {engine} dim_t {dim_t} split for {split_dim_t}{rigid_label}",
                world.rank()
            );
            let p = plan::<f32>(input.kernel().clone(), engine, dim_t, dims);
            let split = plan::<f32>(input.kernel().clone(), Engine::Blocked, split_dim_t, dims);
            let mut alone = input.clone();
            match Solver::new(p.clone()).run(&mut alone, 8) {
                Err(Error::NonFinite { step: 4, .. }) => assert_eq!(alone.step(), 3, "{label}"),
                other => panic!("{label}: alone {other:?}"),
            }
            let whole = (world.rank() == 0).then_some(&input);
            let mut dist = DistributedWavefield::scatter(world, &split, 0, whole).unwrap();
            match Solver::new(p).run(&mut dist, 8) {
                Err(Error::NonFinite { step: 4, .. }) => assert_eq!(world.rank(), 0, "{label}"),
                Err(Error::RankFailed { rank: 0, .. }) => assert_ne!(world.rank(), 0, "{label}"),
                other => panic!("{label}: {other:?}"),
            }
            assert_eq!(dist.local().step(), 3, "{label}");
            if let Some(result) = dist.gather().unwrap() {
                assert_same_wavefields(&result, &alone, &label);
                println!("ok: wave blow-up at step 4, {label}, traced back");
            }
        }
    }
}

/// Steps that differ between ranks (here 2 on rank 0, 3 on the others) are refused on every
/// rank before any exchange, and the state keeps the step it reached (`step` reads it).
fn refuses_differing_steps<S: State>(
    world: &impl Communicator,
    p: &Plan,
    dist: &mut S,
    step: impl Fn(&S) -> u64,
) {
    let before = step(dist);
    let steps = 2 + usize::from(world.rank() > 0);
    match Solver::new(p.clone()).run(dist, steps) {
        Err(Error::PlanMismatch(m)) => {
            assert!(world.size() > 1 && m.contains("disagree"), "{m}");
            assert_eq!(step(dist), before);
        }
        Ok(_) => assert_eq!(world.size(), 1, "ranks ran different step counts"),
        Err(e) => panic!("unexpected {e}"),
    }
}

/// The CPU wave cases `ranks` ranks cannot split: (dims, order, rigid, engine, dim_t). A
/// split needs every block thicker than the halo, R·dim_t cells (order 8: 8 at dim_t 2, 12 at
/// dim_t 3). Three ranks leave blocks too thin for dim_t 3 on both grids of order 8 without
/// rigid faces (those run one step per pass); four also for dim_t 2 on the 17x17x27 grid.
fn expected_wave_skips(ranks: i32) -> Vec<([usize; 3], usize, bool, Engine, usize)> {
    let thin: &[([usize; 3], usize)] = match ranks {
        1 | 2 => &[],
        3 => &[([17, 26, 31], 3), ([17, 17, 27], 3)],
        4 => &[([17, 17, 27], 2), ([17, 17, 27], 3)],
        n => panic!("the suite expects 1-4 ranks, not {n}"),
    };
    thin.iter()
        .map(|&(dims, dim_t)| (dims, 8, false, Engine::Blocked, dim_t))
        .collect()
}

/// Panics, naming `label`, unless the gathered wavefield `result` holds the one-process
/// field `alone`'s step and fields bit for bit, and its traces within rounding.
fn assert_same_wavefields<T: Real>(result: &Wavefield<T>, alone: &Wavefield<T>, label: &str) {
    assert_eq!(result.step(), alone.step(), "{label}");
    let fields = [
        (result.pressure(), alone.pressure()),
        (result.previous(), alone.previous()),
        (result.auxiliary(), alone.auxiliary()),
    ];
    for (i, (a, b)) in fields.into_iter().enumerate() {
        let diff = first_difference(a, b);
        assert!(
            diff.is_none(),
            "{label}: field {i} first differs at {diff:?}"
        );
    }
    let top = alone
        .traces()
        .iter()
        .flatten()
        .fold(0.0f64, |m, v| m.max(v.abs()));
    assert!(top > 0.0, "{label}: silent traces");
    // A receiver whose interpolation weights reach cells of several ranks is the sum
    // of the ranks' partial traces (in f64, whatever the field's precision), added in
    // another order than one process adds its eight weighted cells: a few f64
    // roundings of the trace's magnitude, so 1e-12 of the largest sample.
    for (a, b) in result.traces().iter().zip(alone.traces()) {
        assert_eq!(a.len(), b.len(), "{label}: trace lengths");
        // NaN-keeping: a NaN sample fails the bound below.
        let worst = a.iter().zip(b).fold(0.0f64, |m, (x, y)| {
            let d = (x - y).abs();
            if d.is_nan() || m.is_nan() {
                f64::NAN
            } else {
                m.max(d)
            }
        });
        assert!(
            worst <= 1e-12 * top,
            "{label}: traces differ by {worst:e} of {top:e}"
        );
    }
}

/// The plan of `engine` for `kernel` on `dims` with a team of `threads` per rank, `tile`
/// of them on each tile when blocked (`dim_t` 2).
fn team_plan<T: Real>(
    kernel: impl Into<Kernel>,
    engine: Engine,
    dims: [usize; 3],
    (threads, tile): (usize, usize),
) -> Plan {
    let mut b = PlanBuilder::new(kernel, T::DTYPE, dims)
        .engine(engine)
        .threads(threads);
    if engine.is_blocked() {
        b = b.dim_t(2).tile_threads(tile);
    }
    b.build()
        .unwrap_or_else(|e| panic!("{engine} {threads} threads: {e}"))
}

/// Each rank running a team of two threads (the default on a machine of several cores), on
/// one tile each or both on every tile: the gathered grid, lattice and wavefield equal one
/// process running the same plan, bit for bit.
fn teams_of_threads_equal_one_process(world: &impl Communicator) {
    let teams = [
        (Engine::Naive, (2, 1)),
        (Engine::Blocked, (2, 1)),
        (Engine::Blocked, (2, 2)),
    ];
    let stencil = Stencil::from_name("star:2").unwrap();
    let input = Grid::<f32>::random(DIMS, -1.0, 1.0, 5).unwrap();
    let lattice = cavity_lattice::<f64>([9, 14, 17], 3).unwrap();
    let pml = 1 + stencil35d::wave::MIN_DAMPED_CELLS;
    let wave = wave_shot::<f32>(bench_wave_kernel(2, pml), [17, 26, 31], 9).unwrap();
    let root = world.rank() == 0;
    for (engine, team) in teams {
        let label = format!("{engine} team {team:?} over {} ranks", world.size());
        let p = team_plan::<f32>(stencil.clone(), engine, DIMS, team);
        let mut dist = DistributedGrid::scatter(world, &p, 0, root.then_some(&input)).unwrap();
        let mut alone = input.clone();
        run_both(&p, &mut dist, &mut alone);
        if let Some(whole) = dist.gather().unwrap() {
            let diff = first_difference(&whole, &alone);
            assert!(diff.is_none(), "grid {label}: first difference at {diff:?}");
        }
        let p = team_plan::<f64>(LbmKernel::of(&lattice), engine, lattice.dims(), team);
        let mut dist = DistributedLattice::scatter(world, &p, 0, root.then_some(&lattice)).unwrap();
        let mut alone = lattice.clone();
        run_both(&p, &mut dist, &mut alone);
        if let Some(result) = dist.gather().unwrap() {
            assert_same_populations(&result, &alone, &format!("lattice {label}"));
        }
        // The wave engines give each unit of a pass to one thread.
        let p = team_plan::<f32>(wave.kernel().clone(), engine, wave.dims(), (team.0, 1));
        let mut dist = DistributedWavefield::scatter(world, &p, 0, root.then_some(&wave)).unwrap();
        let mut alone = wave.clone();
        run_both(&p, &mut dist, &mut alone);
        if let Some(result) = dist.gather().unwrap() {
            let diff = first_difference(result.pressure(), alone.pressure());
            assert!(
                diff.is_none(),
                "wavefield {label}: first difference at {diff:?}"
            );
        }
        if root {
            println!("ok: teams {label}");
        }
    }
}

fn main() {
    let universe = mpi::initialize().expect("MPI initialises once");
    // A failed case aborts every rank: unwinding would finalise MPI and wait for the others.
    let report = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        report(info);
        universe_abort();
    }));
    let world = universe.world();
    if world.rank() == 0 {
        println!("distributed tests on {} ranks", world.size());
    }
    equal_to_one_process(&world);
    gpu_equal_to_one_process(&world);
    too_many_ranks_is_an_error_everywhere(&world);
    cpu_blow_ups_leave_every_block_at_the_last_finite_step(&world);
    non_finite_input_leaves_every_block_untouched(&world);
    a_scatter_without_the_grid_is_an_error_everywhere(&world);
    differing_plans_fail_at_start_unless_made_common(&world);
    a_deep_planned_dim_t_is_lowered_for_the_ranks(&world);
    lattices_equal_one_process::<f32>(&world);
    lattices_equal_one_process::<f64>(&world);
    lattices_16_bit_equal_one_process(&world);
    lattice_checkpoints_restart_exactly(&world);
    a_lattice_blow_up_stops_all_at_the_last_finite_state(&world);
    wavefields_equal_one_process::<f32>(&world);
    wavefields_equal_one_process::<f64>(&world);
    a_wavefield_from_another_root_keeps_its_earlier_traces(&world);
    a_split_wave_blow_up_stops_at_the_last_finite_step(&world);
    teams_of_threads_equal_one_process(&world);
    if world.rank() == 0 {
        println!("distributed tests passed on {} ranks", world.size());
    }
}
