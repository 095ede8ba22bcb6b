//! The 2D engines (naive and blocked) against the scalar reference through the public API, on
//! random data: every 2D stencil (star radius 1-4, box radius 1-3) on odd sizes and tiny grids
//! (one interior cell), every dim_t 1..=8 with tiles that cut the grid into many x tiles and y
//! chunks and with whole rows, step counts that are not multiples of dim_t, 1 and 2 threads;
//! every filter size 1..=15 (square, non-square, even, sparse, any anchor) with every border
//! mode, on odd sizes and on images smaller than the filter (1×1 included), with column
//! tiles that cut the image and whole rows; separable filters against the product of two 1D
//! passes computed here; every SIMD level the CPU has; and a blow-up that must report its
//! step and keep the last finite state. f32 to 1e-5 and f64 to 1e-12 (relative, max norm).

mod common;

use common::{slow_memory_machine, tolerance};
use proptest::prelude::*;
use rand::{Rng, SeedableRng};
use stencil35d::plan::Kernel;
use stencil35d::{
    Border, Engine, Error, Filter2, Grid2, Level, PlanBuilder, Real, Solver, Stencil2,
};

/// Engine settings of one run.
#[derive(Clone, Copy, Debug)]
struct Setup {
    engine: Engine,
    dim_t: usize,
    tile: Option<[usize; 2]>,
    threads: usize,
    isa: Option<Level>,
    /// Plan for a described machine with a 2 MiB last-level cache (streamed output).
    small_cache: bool,
}

impl Setup {
    fn reference() -> Self {
        Setup {
            engine: Engine::Reference,
            dim_t: 1,
            tile: None,
            threads: 1,
            isa: None,
            small_cache: false,
        }
    }
    fn naive(threads: usize) -> Self {
        Setup {
            engine: Engine::Naive,
            ..Self::reference()
        }
        .threads(threads)
    }
    fn blocked(dim_t: usize, tile: Option<[usize; 2]>, threads: usize) -> Self {
        Setup {
            engine: Engine::Blocked,
            dim_t,
            tile,
            ..Self::reference()
        }
        .threads(threads)
    }
    fn threads(mut self, n: usize) -> Self {
        self.threads = n;
        self
    }
    fn isa(mut self, level: Level) -> Self {
        self.isa = Some(level);
        self
    }
    fn small_cache(mut self) -> Self {
        self.small_cache = true;
        self
    }
}

/// Runs `steps` steps of `kernel` on a copy of `input` with `setup`; the grid, or the error
/// with the grid it left.
fn try_run<T: Real>(
    kernel: &Kernel,
    input: &Grid2<T>,
    setup: Setup,
    steps: usize,
) -> (Grid2<T>, Result<(), Error>) {
    let [nx, ny] = input.dims();
    let mut b = PlanBuilder::new(kernel.clone(), T::DTYPE, [nx, ny, 1])
        .engine(setup.engine)
        .threads(setup.threads);
    // A convolution takes no dim_t (it is applied once per step).
    if setup.engine == Engine::Blocked && kernel.filter().is_none() {
        b = b.dim_t(setup.dim_t);
    }
    if let Some(t) = setup.tile {
        b = b.tile(t);
    }
    if let Some(level) = setup.isa {
        b = b.isa(level);
    }
    if setup.small_cache {
        b = b.machine(slow_memory_machine());
    }
    let plan = b
        .build()
        .unwrap_or_else(|e| panic!("{kernel} {setup:?} on {nx}x{ny}: {e}"));
    let mut grid = input.clone();
    let result = Solver::new(plan).run(&mut grid, steps).map(|_| ());
    (grid, result)
}

/// [`try_run`], which must succeed.
fn run<T: Real>(kernel: &Kernel, input: &Grid2<T>, setup: Setup, steps: usize) -> Grid2<T> {
    let (grid, result) = try_run(kernel, input, setup, steps);
    result.unwrap_or_else(|e| panic!("{kernel} {setup:?}: {e}"));
    grid
}

/// Every setup's result equals the reference's to the precision's tolerance.
fn check<T: Real>(kernel: &Kernel, input: &Grid2<T>, steps: usize, setups: &[Setup]) {
    let expected = run(kernel, input, Setup::reference(), steps);
    // A one-pixel image under a folding border is scaled by the weights' sum, which a
    // normalised filter leaves unchanged; every larger image must change.
    let [nx, ny] = input.dims();
    assert!(
        nx * ny == 1 || expected.max_rel_diff(input).unwrap() > tolerance::<T>(),
        "{kernel}: the reference left the input unchanged, so the check would prove nothing"
    );
    for &setup in setups {
        let got = run(kernel, input, setup, steps);
        let err = got.max_rel_diff(&expected).unwrap();
        assert!(
            err <= tolerance::<T>(),
            "{kernel} {} {:?} {setup:?} steps={steps}: max rel err {err:e}",
            T::DTYPE,
            input.dims()
        );
    }
}

/// Steps of the stencil sweeps: more than the deepest dim_t, a multiple of none but 1 and 3.
const STEPS: usize = 9;

/// Every 2D stencil, with random coefficients (asymmetric boxes), about one in four of the
/// neighbours' negative, whose magnitudes sum to one.
fn stencils(seed: u64) -> Vec<Stencil2> {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut signed = |i: usize| {
        let v = rng.random_range(0.5..1.5);
        if i > 0 && rng.random_range(0..4) == 0 {
            -v
        } else {
            v
        }
    };
    let mut raws = Vec::new();
    for r in 1..=4usize {
        raws.push((r, false, (0..=r).map(&mut signed).collect::<Vec<f64>>()));
    }
    for r in 1..=3usize {
        raws.push((r, true, (0..(2 * r + 1).pow(2)).map(&mut signed).collect()));
    }
    let mut out = Vec::new();
    for (r, boxed, raw) in raws {
        let total: f64 = if boxed {
            raw.iter().map(|v| v.abs()).sum()
        } else {
            raw[0].abs() + 4.0 * raw[1..].iter().map(|v| v.abs()).sum::<f64>()
        };
        let c: Vec<f64> = raw.iter().map(|v| v / total).collect();
        out.push(if boxed {
            Stencil2::boxed(r, &c).unwrap()
        } else {
            Stencil2::star(r, &c).unwrap()
        });
    }
    out
}

/// Blocked settings for radius `r`: every dim_t 1..=8 with narrow tiles (several x tiles and
/// y chunks, clipped at the edges) on 1 or 2 threads, and with whole rows.
fn blocked_sweep(r: usize) -> Vec<Setup> {
    (1..=8)
        .flat_map(|d| {
            [
                Setup::blocked(d, Some([2 * r * d + 7, 5]), 1 + d % 2),
                Setup::blocked(d, Some([10_000, 3 + d]), 2 - d % 2),
            ]
        })
        .collect()
}

fn stencils_on_odd_sizes<T: Real>() {
    for (i, stencil) in stencils(1).into_iter().enumerate() {
        let input = Grid2::<T>::random([37, 29], 0.0, 1.0, i as u64).unwrap();
        let mut setups = vec![Setup::naive(1), Setup::naive(2)];
        setups.extend(blocked_sweep(stencil.radius()));
        check(&stencil.clone().into(), &input, STEPS, &setups);
    }
}

#[test]
fn stencils_on_odd_sizes_f32() {
    stencils_on_odd_sizes::<f32>();
}

#[test]
fn stencils_on_odd_sizes_f64() {
    stencils_on_odd_sizes::<f64>();
}

fn stencils_on_tiny_grids<T: Real>() {
    for (i, stencil) in stencils(2).into_iter().enumerate() {
        let r = stencil.radius();
        let h = 2 * r + 1; // one interior cell along the axis
        for dims in [[h, h], [h + 1, h], [h, h + 3], [h + 17, h + 2]] {
            let input = Grid2::<T>::random(dims, 0.0, 1.0, 7 + i as u64).unwrap();
            let mut setups = vec![Setup::naive(2)];
            setups.extend((1..=8).map(|d| Setup::blocked(d, Some([2 * r * d + 1, 1 + d % 2]), 2)));
            check(&stencil.clone().into(), &input, STEPS, &setups);
        }
    }
}

#[test]
fn stencils_on_tiny_grids_f32() {
    stencils_on_tiny_grids::<f32>();
}

#[test]
fn stencils_on_tiny_grids_f64() {
    stencils_on_tiny_grids::<f64>();
}

/// Step counts below, at and around dim_t, and the planner's own blocked plan.
#[test]
fn stencil_step_counts_around_dim_t() {
    let stencil = Stencil2::from_name("star2d:2").unwrap();
    let input = Grid2::<f64>::random([53, 41], 0.0, 1.0, 5).unwrap();
    for steps in [1, 2, 4, 5, 7, 13] {
        check(
            &stencil.clone().into(),
            &input,
            steps,
            &[
                Setup::blocked(4, Some([30, 9]), 2),
                Setup::blocked(6, None, 2),
            ],
        );
    }
}

/// `dim_t` beyond the planner's range of 8, as a user may force it (up to 16), with narrow
/// tiles and whole rows, step counts below and above the pass depth.
#[test]
fn forced_deep_dim_t_matches_the_reference() {
    let stencil = Stencil2::from_name("star2d:1").unwrap();
    let input = Grid2::<f32>::random([61, 47], 0.0, 1.0, 9).unwrap();
    for steps in [7, 29] {
        check(
            &stencil.clone().into(),
            &input,
            steps,
            &[
                Setup::blocked(11, Some([29, 6]), 2),
                Setup::blocked(16, None, 1),
            ],
        );
    }
}

/// Every SIMD level this CPU has computes what the reference does (lane counts 2 to 16).
#[test]
fn every_simd_level() {
    let input32 = Grid2::<f32>::random([45, 23], 0.0, 1.0, 11).unwrap();
    let input64 = Grid2::<f64>::random([45, 23], 0.0, 1.0, 11).unwrap();
    let kernels: [Kernel; 4] = [
        Stencil2::from_name("star2d:3").unwrap().into(),
        Stencil2::from_name("box2d:2").unwrap().into(),
        Filter2::from_name("dense:5x4").unwrap().into(),
        Filter2::from_name("gaussian:7").unwrap().into(),
    ];
    for level in Level::ALL.into_iter().filter(|&l| l <= Level::detected()) {
        let setups = [
            Setup::naive(2).isa(level),
            Setup::blocked(3, Some([40, 6]), 2).isa(level),
        ];
        for kernel in &kernels {
            check(kernel, &input32, 5, &setups);
            check(kernel, &input64, 5, &setups);
        }
    }
}

/// A filter of `[kw, kh]` random weights in [-0.5, 1) (about a fifth of them zero), at a
/// random anchor, with `border`.
fn random_filter(size: [usize; 2], border: Border, seed: u64) -> Filter2 {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let mut w: Vec<f64> = (0..size[0] * size[1])
        .map(|_| {
            if rng.random_range(0..5) == 0 {
                0.0
            } else {
                rng.random_range(-0.5..1.0)
            }
        })
        .collect();
    // At least one weight far from zero, so that an engine writing zeros cannot pass.
    let k = rng.random_range(0..w.len());
    w[k] = 0.5 + rng.random_range(0.0..0.5);
    let anchor = [rng.random_range(0..size[0]), rng.random_range(0..size[1])];
    Filter2::new(size, &w)
        .unwrap()
        .with_anchor(anchor)
        .unwrap()
        .with_border(border)
}

const BORDERS: [Border; 5] = [
    Border::Constant(0.75),
    Border::Replicate,
    Border::Reflect,
    Border::Reflect101,
    Border::Wrap,
];

/// Convolution engines: naive on 1 and 2 threads, blocked with the planner's tile, with
/// column tiles of 16 (several tiles; the edge ones copy, the inner ones read the grid) and
/// bands of 5 rows (groups cut by the band end), and with one band of whole rows.
fn conv_setups() -> [Setup; 5] {
    [
        Setup::naive(1),
        Setup::naive(2),
        Setup::blocked(1, None, 2),
        Setup::blocked(1, Some([16, 5]), 2),
        Setup::blocked(1, Some([10_000, 10_000]), 1),
    ]
}

fn every_filter_size<T: Real>() {
    let input = Grid2::<T>::random([61, 29], 0.0, 1.0, 3).unwrap();
    for k in 1..=15 {
        for (n, size) in [[k, k], [k, 16 - k]].into_iter().enumerate() {
            for (b, border) in BORDERS.into_iter().enumerate() {
                let filter = random_filter(size, border, (31 * k + 7 * n + b) as u64);
                check(&filter.into(), &input, 2, &conv_setups());
            }
        }
    }
}

#[test]
fn every_filter_size_f32() {
    every_filter_size::<f32>();
}

#[test]
fn every_filter_size_f64() {
    every_filter_size::<f64>();
}

/// Every border mode on images smaller than the filter (1×1 included) and around it, with
/// dense, sparse and separable filters.
fn every_border_on_small_images<T: Real>() {
    let filters = [
        ([7, 5], false),
        ([4, 6], false),
        ([15, 15], false),
        ([3, 3], true),
        ([9, 9], true),
    ];
    for (b, border) in BORDERS.into_iter().enumerate() {
        for (f, &(size, separable)) in filters.iter().enumerate() {
            let filter = if separable {
                Filter2::gaussian(size[0], 1.3).unwrap().with_border(border)
            } else {
                random_filter(size, border, (10 * b + f) as u64)
            };
            for dims in [[1, 1], [2, 3], [5, 1], [1, 7], [9, 8], [17, 4]] {
                let input = Grid2::<T>::random(dims, 0.0, 1.0, (b + f) as u64).unwrap();
                check(&filter.clone().into(), &input, 1, &conv_setups());
            }
        }
    }
}

#[test]
fn every_border_on_small_images_f32() {
    every_border_on_small_images::<f32>();
}

#[test]
fn every_border_on_small_images_f64() {
    every_border_on_small_images::<f64>();
}

/// The separable filter `col ⊗ row` applied as two 1D passes in f64: each row of the padded
/// image filtered by `row`, then each column of that by `col`.
fn two_passes(row: &[f64], col: &[f64], filter: &Filter2, input: &Grid2<f64>) -> Grid2<f64> {
    let [nx, ny] = input.dims();
    let [ax, ay] = filter.anchor();
    let border = filter.border();
    let value = |x: isize, y: isize| match (border.source(x, nx), border.source(y, ny)) {
        (Some(sx), Some(sy)) => input.get(sx, sy),
        _ => border.constant(),
    };
    let rows = |x: usize, y: isize| -> f64 {
        row.iter()
            .enumerate()
            .map(|(i, w)| w * value((x + i) as isize - ax as isize, y))
            .sum()
    };
    Grid2::from_fn([nx, ny], |x, y| {
        col.iter()
            .enumerate()
            .map(|(j, w)| w * rows(x, (y + j) as isize - ay as isize))
            .sum()
    })
    .unwrap()
}

/// Separable filters (Gaussians, means, Sobel, a signed outer product at an off-centre
/// anchor) through the blocked engine's separable path equal the two 1D passes.
#[test]
fn separable_filters_equal_two_one_dimensional_passes() {
    let outer = {
        let (row, col) = ([0.5, -1.0, 2.0, 0.25, 1.5], [1.0, 0.0, -0.5, 3.0]);
        let w: Vec<f64> = col
            .iter()
            .flat_map(|c| row.iter().map(move |r| c * r))
            .collect();
        Filter2::new([5, 4], &w)
            .unwrap()
            .with_anchor([4, 1])
            .unwrap()
    };
    let filters = [
        Filter2::from_name("gaussian:5").unwrap(),
        Filter2::from_name("gaussian:15").unwrap(),
        Filter2::from_name("mean:3x7").unwrap(),
        Filter2::from_name("sobel").unwrap(),
        outer,
    ];
    let input = Grid2::<f64>::random([67, 31], 0.0, 1.0, 9).unwrap();
    let input32 = Grid2::<f32>::from_fn([67, 31], |x, y| input.get(x, y) as f32).unwrap();
    for (f, filter) in filters.into_iter().enumerate() {
        let filter = filter.with_border(BORDERS[f % BORDERS.len()]);
        let (row, col) = filter.separable().expect("a rank-one filter");
        let expected = two_passes(&row, &col, &filter, &input);
        let expected32 = Grid2::<f32>::from_fn([67, 31], |x, y| expected.get(x, y) as f32).unwrap();
        for setup in [
            Setup::blocked(1, None, 2),
            Setup::blocked(1, Some([32, 6]), 2),
        ] {
            let kernel: Kernel = filter.clone().into();
            let got = run(&kernel, &input, setup, 1);
            let err = got.max_rel_diff(&expected).unwrap();
            assert!(err <= 1e-12, "{filter} {setup:?}: f64 err {err:e}");
            let got = run(&kernel, &input32, setup, 1);
            let err = got.max_rel_diff(&expected32).unwrap();
            assert!(err <= 1e-5, "{filter} {setup:?}: f32 err {err:e}");
        }
    }
}

/// A kernel whose values grow each step overflows f32; every engine reports the step the
/// reference reports, at a cell of the updated region, and keeps the state before it.
#[test]
fn blow_up_reports_the_step_and_keeps_the_last_finite_state() {
    let kernels: [(Kernel, usize); 3] = [
        // Weights summing to 5: values grow ~5x per step, f32 overflows after ~55 steps.
        (Stencil2::five_point(1.0, 1.0).into(), 1),
        // Weights summing to 10.
        (Stencil2::boxed(2, &[0.4; 25]).unwrap().into(), 2),
        (Filter2::new([3, 3], &[1.2; 9]).unwrap().into(), 0),
    ];
    let input = Grid2::<f32>::random([33, 27], 0.5, 1.0, 3).unwrap();
    for (kernel, r) in kernels {
        let failing = |setup: Setup| match try_run(&kernel, &input, setup, 300) {
            (grid, Err(Error::NonFinite { step, cell, value })) => {
                assert!(!value.is_finite(), "{kernel} {setup:?}");
                assert!(
                    (r..33 - r).contains(&cell[0]) && (r..27 - r).contains(&cell[1]),
                    "{kernel} {setup:?}: {cell:?}"
                );
                (step, grid)
            }
            (_, other) => panic!("{kernel} {setup:?}: expected NonFinite, got {other:?}"),
        };
        let (step, _) = failing(Setup::reference());
        assert!((5..300).contains(&step), "{kernel}: {step}");
        let last_good = run(&kernel, &input, Setup::reference(), step - 1);
        let mut setups = vec![Setup::naive(2), Setup::blocked(1, Some([16, 5]), 2)];
        if r > 0 {
            setups.extend([
                Setup::blocked(4, Some([20, 7]), 2),
                Setup::blocked(7, Some([10_000, 9]), 1),
            ]);
        }
        for setup in setups {
            let (s, grid) = failing(setup);
            assert_eq!(s, step, "{kernel} {setup:?}");
            assert!(grid.find_non_finite().is_none(), "{kernel} {setup:?}");
            let err = grid.max_rel_diff(&last_good).unwrap();
            assert!(err <= 1e-5, "{kernel} {setup:?}: {err:e}");
        }
    }
}

/// Grids larger than the last-level cache: the blocked stencil engine streams its last
/// level's rows (with their boundary columns) to the grid, in whole-row tiles and in narrow
/// tiles (with software prefetch of the next source row).
#[test]
fn streamed_stencil_output() {
    let input = Grid2::<f32>::random([701, 420], 0.0, 1.0, 8).unwrap();
    for name in ["star2d:2", "box2d:1"] {
        let stencil = Stencil2::from_name(name).unwrap();
        check(
            &stencil.into(),
            &input,
            7,
            &[
                Setup::blocked(3, None, 2).small_cache(),
                Setup::blocked(4, Some([90, 50]), 2).small_cache(),
            ],
        );
    }
}

/// A larger image at an odd width, whole rows and many spans, direct and separable.
#[test]
fn convolution_on_a_larger_image() {
    let input = Grid2::<f32>::random([723, 419], 0.0, 1.0, 4).unwrap();
    for filter in ["dense:5x5", "dense:4x7", "gaussian:9"] {
        let filter = Filter2::from_name(filter)
            .unwrap()
            .with_border(Border::Reflect);
        check(
            &filter.into(),
            &input,
            2,
            &[
                Setup::blocked(1, None, 2),
                Setup::blocked(1, Some([100, 37]), 2),
            ],
        );
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Random filters (size, anchor, border, weights) on random image sizes: both engines at
    /// random tiles equal the reference.
    #[test]
    fn random_filters_match_the_reference(
        kw in 1usize..=15, kh in 1usize..=15, nx in 1usize..48, ny in 1usize..20,
        border in 0usize..5, cols in 1usize..40, rows in 1usize..12, seed in 0u64..1000,
    ) {
        let filter = random_filter([kw, kh], BORDERS[border], seed);
        let input = Grid2::<f32>::random([nx, ny], 0.0, 1.0, seed).unwrap();
        check(
            &filter.into(),
            &input,
            1,
            &[Setup::naive(2), Setup::blocked(1, Some([cols, rows]), 2)],
        );
    }

    /// Random 2D stencils (each star and box radius), sizes from one interior cell up, dim_t,
    /// tiles, thread counts, step counts and precisions: both engines equal the reference.
    #[test]
    fn random_stencils_match_the_reference(
        which in 0usize..7, extra in (0usize..30, 0usize..30), dim_t in 1usize..=8,
        tile in (1usize..30, 1usize..12), threads in 1usize..=3, steps in 1usize..=12,
        double in any::<bool>(), seed in 0u64..1000,
    ) {
        let stencil = stencils(seed).swap_remove(which);
        let r = stencil.radius();
        let dims = [2 * r + 1 + extra.0, 2 * r + 1 + extra.1];
        let tile = [2 * r * dim_t + tile.0, tile.1];
        let setups = [Setup::naive(threads), Setup::blocked(dim_t, Some(tile), threads)];
        let kernel = stencil.into();
        if double {
            check(&kernel, &Grid2::<f64>::random(dims, 0.0, 1.0, seed).unwrap(), steps, &setups);
        } else {
            check(&kernel, &Grid2::<f32>::random(dims, 0.0, 1.0, seed).unwrap(), steps, &setups);
        }
    }
}
