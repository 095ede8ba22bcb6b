//! The GPU engines against the CPU reference engine: every shape and radius, both precisions,
//! odd sizes, every dim_t from 1 to 8, step counts that are not multiples of dim_t, z-chunks that
//! do not divide the grid, data resident across runs, and blow-ups. Without a GPU every test
//! prints why it skips and passes, or fails where `STENCIL35D_REQUIRE_GPU=1` is set (see
//! `gpu_common`).

mod common;
mod gpu_common;

use common::{random_stencil, run, tolerance, Setup};
use gpu_common::gpu_available;
use stencil35d::gpu::{detect_gpu, DeviceGrid};
use stencil35d::plan::GpuShape;
use stencil35d::{Engine, Error, Grid, PlanBuilder, Real, Solver, Stencil};

const STENCILS: [(&str, usize); 6] = [
    ("star", 1),
    ("star", 2),
    ("star", 3),
    ("star", 4),
    ("box", 1),
    ("box", 2),
];
/// An odd size: not a multiple of any tile, warp or z-chunk.
const DIMS: [usize; 3] = [67, 45, 39];
const STEPS: usize = 21;

/// A launch shape for dim_t `dim_t` and radius `r` that leaves 8 valid columns and rows per tile,
/// with as few cells per thread as fit a block (the plan refuses it when registers would not
/// hold its values).
fn shape_for(r: usize, dim_t: usize) -> GpuShape {
    let need = 2 * r * dim_t + 8;
    let bx = need.div_ceil(32) * 32;
    let mut ry = 1;
    while bx * need.div_ceil(ry) > 1024 {
        ry += 1;
    }
    GpuShape {
        block: [bx, need.div_ceil(ry)],
        ry,
        rx: 0,
        skew: false,
        stream_block: 16,
    }
}

/// Shuffle-kernel shapes (stars) for dim_t `dim_t` and radius `r`, one warp wide, tiles at least 8
/// rows taller than the ghost zones: one cell per lane with R rows per thread, in step (the
/// smallest, which fits the register file where the others do not: star:4 `f64` at dim_t 2 on
/// an H100); one cell per lane for odd dim_t and two for even with R rows per thread, skewed;
/// and three cells per lane (rows exchanged value by value) with 2R+1 rows per thread (more
/// than the 2R a warp shares), in step. So both schedules run at every dim_t.
fn shuffle_shapes_for(r: usize, dim_t: usize) -> [GpuShape; 3] {
    let need = 2 * r * dim_t + 8;
    [
        GpuShape {
            block: [32, need.div_ceil(r)],
            ry: r,
            rx: 1,
            skew: false,
            stream_block: 16,
        },
        GpuShape {
            block: [32, need.div_ceil(r)],
            ry: r,
            rx: 2 - dim_t % 2,
            skew: true,
            stream_block: 16,
        },
        GpuShape {
            block: [32, need.div_ceil(2 * r + 1)],
            ry: 2 * r + 1,
            rx: 3,
            skew: false,
            stream_block: 16,
        },
    ]
}

fn check_against_reference<T: Real>(
    stencil: &Stencil,
    builder: impl Fn() -> PlanBuilder,
    label: &str,
) {
    let input = Grid::<T>::random(DIMS, 0.0, 1.0, 11).unwrap();
    let expected = run(stencil, &input, Setup::reference(), STEPS);
    let plan = builder().build().unwrap_or_else(|e| panic!("{label}: {e}"));
    let mut grid = input.clone();
    let report = Solver::new(plan.clone())
        .run(&mut grid, STEPS)
        .unwrap_or_else(|e| panic!("{label}: {e}\n{plan}"));
    assert!(report.engine.is_gpu());
    let err = grid.max_rel_diff(&expected).unwrap();
    println!("{label}: max rel err {err:.2e}");
    assert!(
        err <= tolerance::<T>(),
        "{label}: max rel err {err:e}\n{plan}"
    );
}

fn every_stencil<T: Real>(engine: Engine) {
    for (i, (kind, r)) in STENCILS.into_iter().enumerate() {
        let stencil = random_stencil(kind, r, 100 + i as u64);
        let label = format!("{engine} {kind}:{r} {}", T::DTYPE);
        check_against_reference::<T>(
            &stencil,
            || PlanBuilder::new(stencil.clone(), T::DTYPE, DIMS).engine(engine),
            &label,
        );
    }
}

#[test]
fn gpu_naive_matches_reference() {
    if gpu_available() {
        every_stencil::<f32>(Engine::GpuNaive);
        every_stencil::<f64>(Engine::GpuNaive);
    }
}

#[test]
fn gpu_blocked_with_the_models_choice_matches_reference() {
    if gpu_available() {
        every_stencil::<f32>(Engine::GpuBlocked);
        every_stencil::<f64>(Engine::GpuBlocked);
    }
}

/// Every dim_t from 1 to 8 for one stencil: the model's best configuration for that dim_t, and a
/// forced launch shape with 8 valid cells per tile side and 16-plane z-chunks. A dim_t whose
/// per-thread values cannot fit the register file has no configuration: the plan must say so
/// (never spill silently); that may only happen for deep or wide stencils.
fn every_bt<T: Real>(kind: &str, r: usize) {
    if !gpu_available() {
        return;
    }
    let stencil = random_stencil(kind, r, 200 + r as u64 + kind.len() as u64);
    let mut feasible = Vec::new();
    let mut shuffled = Vec::new();
    for dim_t in 1..=8 {
        let label = format!("gpu-blocked {kind}:{r} {} dim_t={dim_t}", T::DTYPE);
        let model = || {
            PlanBuilder::new(stencil.clone(), T::DTYPE, DIMS)
                .engine(Engine::GpuBlocked)
                .dim_t(dim_t)
        };
        match model().build() {
            Ok(_) => {
                check_against_reference::<T>(&stencil, model, &format!("{label} model"));
                feasible.push(dim_t);
            }
            Err(Error::InvalidPlan(msg)) => {
                println!("{label}: no configuration fits: {msg}");
                assert!(
                    dim_t > 2 && (r > 1 || kind == "box" || T::DTYPE == stencil35d::DType::F64),
                    "{label}: the 7-point stencil and every dim_t <= 2 must fit: {msg}"
                );
                continue;
            }
            Err(e) => panic!("{label}: {e}"),
        }
        let mut shapes = vec![shape_for(r, dim_t)];
        if kind == "star" {
            shapes.extend(shuffle_shapes_for(r, dim_t));
        }
        for shape in shapes {
            let forced = || model().gpu_shape(shape);
            match forced().build() {
                Ok(_) => {
                    check_against_reference::<T>(&stencil, forced, &format!("{label} {shape:?}"));
                    if shape.rx > 0 && !shuffled.contains(&dim_t) {
                        shuffled.push(dim_t);
                    }
                }
                Err(Error::InvalidPlan(msg)) => println!("{label} {shape:?}: refused: {msg}"),
                Err(e) => panic!("{label} {shape:?}: {e}"),
            }
        }
    }
    println!(
        "{kind}:{r} {}: dim_t with a configuration: {feasible:?}, with a forced shuffle shape: \
         {shuffled:?}",
        T::DTYPE
    );
    // The shuffle kernel must have run where every star fits, so that a refusal of all its
    // shapes cannot pass unseen: at dim_t 1 and 2, but for star:4 in f64, whose two-level
    // shapes of the first two kinds the register file refused on an H100.
    if kind == "star" {
        let deep_f64 = r == 4 && T::DTYPE == stencil35d::DType::F64;
        assert!(
            shuffled.first() == Some(&1) && (shuffled.contains(&2) || deep_f64),
            "{kind}:{r} {}: the shuffle kernel ran at dim_t {shuffled:?}, not at 1 and 2",
            T::DTYPE
        );
    }
}

macro_rules! every_bt_tests {
    ($($name:ident: $t:ty, $kind:literal, $r:literal;)*) => {
        $(
            #[test]
            fn $name() {
                every_bt::<$t>($kind, $r);
            }
        )*
    };
}

every_bt_tests! {
    gpu_blocked_every_bt_star1_f32: f32, "star", 1;
    gpu_blocked_every_bt_star2_f32: f32, "star", 2;
    gpu_blocked_every_bt_star3_f32: f32, "star", 3;
    gpu_blocked_every_bt_star4_f32: f32, "star", 4;
    gpu_blocked_every_bt_box1_f32: f32, "box", 1;
    gpu_blocked_every_bt_box2_f32: f32, "box", 2;
    gpu_blocked_every_bt_star1_f64: f64, "star", 1;
    gpu_blocked_every_bt_star2_f64: f64, "star", 2;
    gpu_blocked_every_bt_star3_f64: f64, "star", 3;
    gpu_blocked_every_bt_star4_f64: f64, "star", 4;
    gpu_blocked_every_bt_box1_f64: f64, "box", 1;
    gpu_blocked_every_bt_box2_f64: f64, "box", 2;
}

/// Autotuning times the model's best shapes on the device: each timed shape carries a positive
/// rate, the plan runs the fastest of them, and its result equals the reference's.
fn autotuned<T: Real>() {
    let stencil = random_stencil("star", 1, 5);
    let build = || {
        PlanBuilder::new(stencil.clone(), T::DTYPE, DIMS)
            .engine(Engine::GpuBlocked)
            .autotune_top(3)
    };
    let plan = build().build().unwrap();
    let timed: Vec<f64> = plan
        .candidates()
        .iter()
        .filter_map(|c| c.measured_mups)
        .collect();
    println!("{}: timed {timed:?}", T::DTYPE);
    assert!(timed.len() >= 2, "{plan}");
    assert!(timed.iter().all(|&m| m > 0.0 && m.is_finite()), "{timed:?}");
    let chosen = plan.chosen().measured_mups.expect("the winner was timed");
    assert!(timed.iter().all(|&m| m <= chosen), "{chosen} of {timed:?}");
    check_against_reference::<T>(&stencil, build, &format!("autotuned {}", T::DTYPE));
}

#[test]
fn autotuning_runs_the_fastest_timed_shape() {
    if gpu_available() {
        autotuned::<f32>();
        autotuned::<f64>();
    }
}

#[test]
fn data_stays_on_the_gpu_across_runs() {
    if !gpu_available() {
        return;
    }
    let stencil = random_stencil("star", 2, 7);
    let input = Grid::<f32>::random(DIMS, 0.0, 1.0, 3).unwrap();
    let expected = run(&stencil, &input, Setup::reference(), STEPS);
    let plan = PlanBuilder::new(stencil, stencil35d::DType::F32, DIMS)
        .engine(Engine::GpuBlocked)
        .dim_t(3)
        .build()
        .unwrap();
    let mut solver = Solver::new(plan);
    let mut on_gpu = DeviceGrid::upload(&input).unwrap();
    for _ in 0..3 {
        let report = solver.run(&mut on_gpu, STEPS / 3).unwrap();
        assert_eq!(report.transfer_seconds, 0.0);
    }
    let err = on_gpu.download().unwrap().max_rel_diff(&expected).unwrap();
    assert!(err <= 1e-5, "{err:e}");
    // A CPU plan cannot run on device data.
    let cpu = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), stencil35d::DType::F32, DIMS)
        .engine(Engine::Naive)
        .build()
        .unwrap();
    assert!(matches!(
        Solver::new(cpu).run(&mut on_gpu, 1),
        Err(Error::PlanMismatch(_))
    ));
}

#[test]
fn gpu_blow_up_reports_the_step_and_keeps_the_last_finite_state() {
    if !gpu_available() {
        return;
    }
    let stencil = Stencil::seven_point(1.0, 1.0);
    let input = Grid::<f32>::random([40, 36, 30], 0.5, 1.0, 3).unwrap();
    let mut reference = input.clone();
    let ref_plan = PlanBuilder::new(stencil.clone(), stencil35d::DType::F32, input.dims())
        .engine(Engine::Reference)
        .build()
        .unwrap();
    let Err(Error::NonFinite { step, cell, .. }) = Solver::new(ref_plan).run(&mut reference, 200)
    else {
        panic!("the reference must blow up");
    };
    let last_good = run(&stencil, &input, Setup::reference(), step - 1);
    for engine in [Engine::GpuNaive, Engine::GpuBlocked] {
        let plan = PlanBuilder::new(stencil.clone(), stencil35d::DType::F32, input.dims())
            .engine(engine)
            .build()
            .unwrap();
        let mut grid = input.clone();
        match Solver::new(plan).run(&mut grid, 200) {
            // Both scan the interior plane by plane, row by row: the first bad cell is the same.
            Err(Error::NonFinite {
                step: s, cell: c, ..
            }) => assert_eq!((s, c), (step, cell), "{engine}"),
            other => panic!("{engine}: expected NonFinite, got {other:?}"),
        }
        let err = grid.max_rel_diff(&last_good).unwrap();
        assert!(
            err < 1e-5,
            "{engine}: not the state after step {}: {err:e}",
            step - 1
        );
    }
}

#[test]
fn impossible_gpu_configurations_are_errors() {
    if !gpu_available() {
        return;
    }
    let b = || {
        PlanBuilder::new(Stencil::seven_point(0.4, 0.1), stencil35d::DType::F32, DIMS)
            .engine(Engine::GpuBlocked)
    };
    for (why, dim_t, block, ry, rx) in [
        ("block width not a multiple of the warp", 2, [48, 8], 2, 0),
        ("tile too small for dim_t", 8, [32, 4], 2, 0),
        (
            "values that would not fit the register file (it would spill)",
            8,
            [64, 16],
            8,
            0,
        ),
        ("more than 1024 threads", 1, [128, 16], 1, 0),
        ("shuffle kernel wider than one warp", 2, [64, 8], 2, 2),
        (
            "shuffle kernel whose values would not fit the register file",
            8,
            [32, 24],
            4,
            2,
        ),
    ] {
        let plan = b()
            .dim_t(dim_t)
            .gpu_shape(GpuShape {
                block,
                ry,
                rx,
                skew: false,
                stream_block: 16,
            })
            .build();
        assert!(matches!(plan, Err(Error::InvalidPlan(_))), "{why}");
    }
    // The shuffle kernel takes star stencils only, with at least R rows per thread.
    let shuffle = GpuShape {
        block: [32, 16],
        ry: 1,
        rx: 2,
        skew: false,
        stream_block: 16,
    };
    for (name, why) in [
        ("box27", "a box stencil"),
        ("star:2", "fewer rows per thread than the radius"),
    ] {
        let plan = PlanBuilder::new(
            Stencil::from_name(name).unwrap(),
            stencil35d::DType::F32,
            DIMS,
        )
        .engine(Engine::GpuBlocked)
        .dim_t(1)
        .gpu_shape(shuffle)
        .build();
        assert!(matches!(plan, Err(Error::InvalidPlan(_))), "{why}");
    }
}

/// A grid the GPU engines cannot launch (more than 524,280 cells along y: gpu-naive's 65,536
/// blocks of 8 rows) is planned on the CPU with the reason as a warning, and the CPU plan runs;
/// a plan naming a GPU engine keeps it (split over MPI ranks each block would fit), and its run
/// in one process is refused before the upload, the grid left as it was.
#[test]
fn grids_past_the_launch_limits_are_planned_on_the_cpu() {
    if !gpu_available() {
        return;
    }
    let star = Stencil::seven_point(0.4, 0.1);
    let dims = [3, 524_281, 3];
    let plan = stencil35d::Plan::new(star.clone(), stencil35d::DType::F32, dims).unwrap();
    assert!(!plan.engine().is_gpu(), "{plan}");
    assert!(
        plan.warnings().iter().any(|w| w
            == "planned on the CPU: a 3 x 524281 x 3 grid needs 65536 blocks along y of one \
                GPU launch, more than CUDA's 65535"),
        "{:?}",
        plan.warnings()
    );
    let input = Grid::<f32>::random(dims, -1.0, 1.0, 5).unwrap();
    let mut grid = input.clone();
    Solver::new(plan).run(&mut grid, 2).unwrap();
    assert!(grid.max_rel_diff(&input).unwrap() > 0.0);
    // gpu-blocked may find no tile for a grid 3 cells wide; either way nothing runs.
    for engine in [Engine::GpuNaive, Engine::GpuBlocked] {
        let mut grid = input.clone();
        let ran = PlanBuilder::new(star.clone(), stencil35d::DType::F32, dims)
            .engine(engine)
            .build()
            .and_then(|plan| Solver::new(plan).run(&mut grid, 2));
        let Err(Error::InvalidPlan(m)) = &ran else {
            panic!("{engine}: {ran:?}");
        };
        assert!(
            engine == Engine::GpuBlocked || m.contains("65536 blocks along y"),
            "{m}"
        );
        assert_eq!(grid.max_rel_diff(&input).unwrap(), 0.0, "{engine}");
    }
    let fits = stencil35d::Plan::new(star, stencil35d::DType::F32, [3, 524_280, 3]).unwrap();
    assert!(fits
        .warnings()
        .iter()
        .all(|w| !w.starts_with("planned on the CPU")));
}

#[test]
fn without_a_gpu_gpu_plans_say_so() {
    if detect_gpu().is_ok() {
        eprintln!(
            "skipping without_a_gpu_gpu_plans_say_so: a GPU is present; the no-GPU path is \
             exercised on machines without one"
        );
        return;
    }
    let err = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), stencil35d::DType::F32, DIMS)
        .engine(Engine::GpuBlocked)
        .build()
        .unwrap_err();
    assert!(matches!(err, Error::NoGpu(_)), "{err}");
    // Automatic plans fall back to the CPU.
    let plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), stencil35d::DType::F32, DIMS)
        .build()
        .unwrap();
    assert!(!plan.engine().is_gpu());
}
