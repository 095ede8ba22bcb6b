//! The 2D GPU engines against the CPU reference engine, through the planner (engine and dim_t
//! fixed) and the solver: convolutions of sides 1 to 15 (even, odd, non-square, sparse,
//! off-centre anchors) with every border mode; stars of radius 1 to 4 and boxes of radius 1 to 3
//! with every dim_t from 1 to 8; both precisions; odd and tiny grids; step counts that dim_t does
//! not divide; blow-ups. Without a GPU every test prints why it skips and passes, or fails where
//! `STENCIL35D_REQUIRE_GPU=1` is set (see `gpu_common`). `plane_rates` (ignored by default) prints
//! the engines' rates on large grids as JSON lines.

mod gpu_common;

use gpu_common::gpu_available;
use stencil35d::plan::Kernel;
use stencil35d::{
    Border, DType, Engine, Error, Filter2, Grid2, PlanBuilder, Real, Result, RunReport, Solver,
    Stencil2,
};

/// Largest relative difference from the reference: f32 1e-5, f64 1e-12.
fn tolerance<T: Real>() -> f64 {
    match T::DTYPE {
        DType::F32 => 1e-5,
        DType::F64 => 1e-12,
    }
}

/// Runs `kernel` on a copy of `input` for `steps` steps with `engine` (and `dim_t` when given).
fn run<T: Real>(
    kernel: &Kernel,
    input: &Grid2<T>,
    engine: Engine,
    dim_t: Option<usize>,
    steps: usize,
) -> (Grid2<T>, Result<RunReport>) {
    let [nx, ny] = input.dims();
    let mut b = PlanBuilder::new(kernel.clone(), T::DTYPE, [nx, ny, 1]).engine(engine);
    if let Some(d) = dim_t {
        b = b.dim_t(d);
    }
    let mut grid = input.clone();
    let outcome = b
        .build()
        .and_then(|plan| Solver::new(plan).run(&mut grid, steps));
    (grid, outcome)
}

/// Asserts that the GPU `engine` (at `dim_t`) equals the reference on `input` after `steps`
/// steps of `kernel`.
fn check<T: Real>(
    kernel: &Kernel,
    input: &Grid2<T>,
    engine: Engine,
    dim_t: Option<usize>,
    steps: usize,
) {
    let label = format!(
        "{engine} {kernel} {} {:?} dim_t {dim_t:?}",
        T::DTYPE,
        input.dims()
    );
    let (want, outcome) = run(kernel, input, Engine::Reference, None, steps);
    outcome.unwrap_or_else(|e| panic!("{label}: reference: {e}"));
    let (got, outcome) = run(kernel, input, engine, dim_t, steps);
    let report = outcome.unwrap_or_else(|e| panic!("{label}: {e}"));
    assert!(report.engine.is_gpu(), "{label}: ran {}", report.engine);
    let err = got.max_rel_diff(&want).unwrap();
    println!("{label}: max rel err {err:.2e}");
    assert!(err <= tolerance::<T>(), "{label}: max rel err {err:e}");
}

/// `n` pseudo-random values in [-1, 1) from `seed`.
fn pseudo_random(n: usize, seed: u64) -> Vec<f64> {
    let mut state = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
    (0..n)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state >> 11) as f64 / (1u64 << 52) as f64 - 1.0
        })
        .collect()
}

/// A test filter: size, anchor (the centre when `None`), border, every third weight zero.
type FilterCase = ([usize; 2], Option<[usize; 2]>, Border, bool);

/// Filters of every side 1 to 15 across the list: even, odd, non-square, every third weight
/// zero in some, off-centre anchors in some, each border mode several times.
fn filters() -> Vec<Filter2> {
    use Border::*;
    let cases: [FilterCase; 15] = [
        ([1, 1], None, Reflect101, false),
        ([2, 3], Some([0, 2]), Constant(0.5), false),
        ([3, 3], None, Replicate, true),
        ([4, 4], None, Reflect, false),
        ([5, 5], None, Wrap, false),
        ([6, 2], Some([5, 0]), Reflect101, false),
        ([7, 7], None, Constant(-1.0), true),
        ([8, 5], None, Replicate, false),
        ([9, 9], Some([2, 6]), Reflect, false),
        ([10, 1], None, Wrap, false),
        ([11, 11], None, Reflect101, false),
        ([1, 12], None, Constant(0.0), false),
        ([13, 7], None, Replicate, true),
        ([14, 14], Some([13, 0]), Reflect, false),
        ([15, 15], None, Wrap, false),
    ];
    cases
        .iter()
        .enumerate()
        .map(|(i, &(size, anchor, border, sparse))| {
            let mut w = pseudo_random(size[0] * size[1], 100 + i as u64);
            if sparse {
                w.iter_mut().skip(1).step_by(3).for_each(|v| *v = 0.0);
            }
            let f = Filter2::new(size, &w).unwrap().with_border(border);
            anchor.map_or(f.clone(), |a| f.with_anchor(a).unwrap())
        })
        .collect()
}

fn convolutions<T: Real>() {
    let images = [[203, 77], [1, 1], [3, 2], [37, 1], [2, 40], [300, 9]];
    for (i, f) in filters().into_iter().enumerate() {
        let kernel = Kernel::from(f);
        for (j, dims) in images.into_iter().enumerate() {
            let input = Grid2::<T>::random(dims, -1.0, 1.0, (10 * i + j) as u64).unwrap();
            for engine in [Engine::GpuNaive, Engine::GpuBlocked] {
                check(&kernel, &input, engine, None, 2);
            }
        }
    }
}

#[test]
fn gpu_convolutions_match_the_reference_f32() {
    if gpu_available() {
        convolutions::<f32>();
    }
}

#[test]
fn gpu_convolutions_match_the_reference_f64() {
    if gpu_available() {
        convolutions::<f64>();
    }
}

/// A stencil of `kind` and radius `r` with pseudo-random coefficients from `seed` whose
/// magnitudes sum to one (values stay bounded).
fn stencil(kind: &str, r: usize, seed: u64) -> Stencil2 {
    let n = if kind == "star" {
        r + 1
    } else {
        (2 * r + 1).pow(2)
    };
    let c = pseudo_random(n, seed);
    let total: f64 = if kind == "star" {
        c[0].abs() + 4.0 * c[1..].iter().map(|v| v.abs()).sum::<f64>()
    } else {
        c.iter().map(|v| v.abs()).sum()
    };
    let c: Vec<f64> = c.iter().map(|v| v / total).collect();
    if kind == "star" {
        Stencil2::star(r, &c).unwrap()
    } else {
        Stencil2::boxed(r, &c).unwrap()
    }
}

const STENCILS: [(&str, usize); 7] = [
    ("star", 1),
    ("star", 2),
    ("star", 3),
    ("star", 4),
    ("box", 1),
    ("box", 2),
    ("box", 3),
];

/// Every stencil with both engines (gpu-blocked at the model's dim_t) on an odd grid wider
/// than a strip, on the smallest grid with an interior, and on one a strip covers, for 13
/// steps.
fn stencils<T: Real>() {
    for (i, (kind, r)) in STENCILS.into_iter().enumerate() {
        let kernel = Kernel::from(stencil(kind, r, 200 + i as u64));
        for (j, dims) in [[301, 97], [2 * r + 1, 2 * r + 1], [40, 23]]
            .into_iter()
            .enumerate()
        {
            let input = Grid2::<T>::random(dims, -1.0, 1.0, (10 * i + j) as u64).unwrap();
            for engine in [Engine::GpuNaive, Engine::GpuBlocked] {
                check(&kernel, &input, engine, None, 13);
            }
        }
    }
}

#[test]
fn gpu_stencils_match_the_reference_f32() {
    if gpu_available() {
        stencils::<f32>();
    }
}

#[test]
fn gpu_stencils_match_the_reference_f64() {
    if gpu_available() {
        stencils::<f64>();
    }
}

/// gpu-blocked at every dim_t from 1 to 8 for `kind:r`, 13 steps (a shorter last pass for
/// most): a dim_t whose registers would not fit has no configuration, which the plan must say;
/// that may only happen beyond star2d:1 in f32.
fn every_dim_t<T: Real>(kind: &str, r: usize) {
    let kernel = Kernel::from(stencil(kind, r, 300 + r as u64));
    let input = Grid2::<T>::random([291, 133], -1.0, 1.0, 5).unwrap();
    for dim_t in 1..=8 {
        let [nx, ny] = input.dims();
        let plan = PlanBuilder::new(kernel.clone(), T::DTYPE, [nx, ny, 1])
            .engine(Engine::GpuBlocked)
            .dim_t(dim_t)
            .build();
        match plan {
            Ok(_) => check(&kernel, &input, Engine::GpuBlocked, Some(dim_t), 13),
            Err(Error::InvalidPlan(msg)) => {
                println!(
                    "{kind}:{r} {} dim_t {dim_t}: no configuration: {msg}",
                    T::DTYPE
                );
                assert!(
                    !(kind == "star" && r == 1 && T::DTYPE == DType::F32),
                    "star2d:1 f32 must run at every dim_t: {msg}"
                );
            }
            Err(e) => panic!("{kind}:{r} dim_t {dim_t}: {e}"),
        }
    }
}

#[test]
fn gpu_blocked_runs_every_dim_t() {
    if gpu_available() {
        every_dim_t::<f32>("star", 1);
        every_dim_t::<f64>("star", 1);
        every_dim_t::<f32>("box", 2);
        every_dim_t::<f64>("star", 3);
    }
}

/// A kernel that grows without bound stops with `NonFinite` at the reference's step, and the
/// grid holds the state after the step before, on both engines: a star (gpu-blocked replays its
/// failing pass step by step) and a filter.
#[test]
fn gpu_blow_up_reports_the_step_and_keeps_the_last_finite_state() {
    if !gpu_available() {
        return;
    }
    let kernels = [
        Kernel::from(Stencil2::five_point(1.0, 1.0)),
        Kernel::from(Filter2::new([3, 3], &[2.0; 9]).unwrap()),
    ];
    for kernel in kernels {
        let input = Grid2::<f32>::random([150, 70], 0.5, 1.0, 3).unwrap();
        let (_, outcome) = run(&kernel, &input, Engine::Reference, None, 200);
        let Err(Error::NonFinite { step, .. }) = outcome else {
            panic!("{kernel}: the reference must blow up");
        };
        let (last_good, outcome) = run(&kernel, &input, Engine::Reference, None, step - 1);
        outcome.unwrap();
        for (engine, dim_t) in [(Engine::GpuNaive, None), (Engine::GpuBlocked, None)] {
            let (grid, outcome) = run(&kernel, &input, engine, dim_t, 200);
            match outcome {
                Err(Error::NonFinite { step: s, .. }) => assert_eq!(s, step, "{engine} {kernel}"),
                other => panic!("{engine} {kernel}: expected NonFinite, got {other:?}"),
            }
            let err = grid.max_rel_diff(&last_good).unwrap();
            assert!(
                err < 1e-5,
                "{engine} {kernel}: not the state after step {}: {err:e}",
                step - 1
            );
        }
    }
}

/// The engines' rates on large f32 grids as JSON lines (G pixels or G updates per second of
/// computation, transfers and compilation excluded): convolutions 3x3 to 11x11 (dense filters)
/// on 8192², star2d:1 on 16384². Not run by default: `--ignored plane_rates`.
#[test]
#[ignore]
fn plane_rates() {
    if !gpu_available() {
        return;
    }
    let image = Grid2::<f32>::random([8192, 8192], 0.0, 1.0, 1).unwrap();
    for k in [3, 5, 7, 11] {
        let kernel = Kernel::from(Filter2::from_name(&format!("dense:{k}")).unwrap());
        for engine in [Engine::GpuNaive, Engine::GpuBlocked] {
            rate(&kernel, &image, engine, None, 100);
        }
    }
    drop(image);
    let field = Grid2::<f32>::random([16384, 16384], 0.0, 1.0, 2).unwrap();
    let star = Kernel::from(Stencil2::from_name("star2d:1").unwrap());
    rate(&star, &field, Engine::GpuNaive, None, 240);
    rate(&star, &field, Engine::GpuBlocked, None, 240);
}

/// Prints one JSON line of `kernel`'s rate with `engine` on `grid` (the best of three runs of
/// `steps` steps after a warm-up run).
fn rate(kernel: &Kernel, grid: &Grid2<f32>, engine: Engine, dim_t: Option<usize>, steps: usize) {
    let [nx, ny] = grid.dims();
    let mut b = PlanBuilder::new(kernel.clone(), DType::F32, [nx, ny, 1]).engine(engine);
    if let Some(d) = dim_t {
        b = b.dim_t(d);
    }
    let plan = b.build().unwrap();
    let mut solver = Solver::new(plan.clone());
    let mut g = grid.clone();
    solver.run(&mut g, 1).unwrap();
    let best = (0..3)
        .map(|_| solver.run(&mut g, steps).unwrap().seconds)
        .fold(f64::INFINITY, f64::min);
    let gps = (nx * ny * steps) as f64 / best / 1e9;
    let launch = plan
        .chosen()
        .gpu
        .as_ref()
        .map(|l| (l.rx, l.ry, l.block, l.stream_block));
    println!(
        "{{\"kernel\":\"{}\",\"engine\":\"{engine}\",\"dim_t\":{},\"size\":\"{nx}x{ny}\",\"steps\":{steps},\"seconds\":{best:.6},\"g_per_s\":{gps:.2},\"gb_per_s\":{:.1},\"predicted_g_per_s\":{:.2},\"launch\":\"{launch:?}\"}}",
        kernel.name(),
        plan.dim_t(),
        gps * 8.0,
        plan.chosen().predicted_mups / 1e3
    );
}
