//! What the CPU engines do with subnormal numbers on x86-64: by default their threads flush
//! them to zero, and with the `subnormals=keep` knob they keep IEEE gradual underflow. The
//! engines run on different threads, and each is checked: the reference on the calling thread,
//! the naive engines on the solver's rayon pool, the blocked stencil engines on its pinned
//! team, the blocked wave engine on the pool; the 3D 7-point stencil, the 2D 5-point stencil
//! and the wave equation, `f32` and `f64`. (The lattice's populations stay near their weights,
//! far from subnormal values.)
//!
//! Every inner cell of the input holds one subnormal value `s`. Two steps of the stencils,
//! whose weights sum to one, or of the wave equation from `u = u⁻ = s`, leave subnormal values
//! in the inner cells when subnormals are kept, and zeros when they count as zero. Each case
//! keeps one solver through the three phases (flush, keep, flush again), so its threads are
//! remade when the setting changes. The tuning is process-wide, so the phases run in one test.

use stencil35d::tuning::{Subnormals, Tuning};
use stencil35d::wave::{WaveKernel, Wavefield};
use stencil35d::{Engine, Grid, Grid2, PlanBuilder, Real, Solver, Stencil, Stencil2};

/// A subnormal value of `T`: the smallest normal one over 2¹⁰.
fn tiny<T: Real>() -> T {
    T::min_positive_value() / T::of(1024.0)
}

/// Whether cell `c` of a grid of `dims` lies at least `r` cells from every face (a one-plane
/// grid's only plane counts as inner).
fn inner(dims: [usize; 3], r: usize, c: [usize; 3]) -> bool {
    (0..3).all(|a| dims[a] == 1 || (r..dims[a] - r).contains(&c[a]))
}

/// The inner cells of `g` (see [`inner`]) that are not zero.
fn nonzero_inner<T: Real>(g: &Grid<T>, r: usize) -> usize {
    let dims = g.dims();
    g.iter()
        .filter(|&(c, v)| inner(dims, r, c) && v != T::zero())
        .count()
}

/// A grid of `dims` holding `s` in its inner cells (see [`inner`]) and zero outside.
fn tiny_inside<T: Real>(dims: [usize; 3], r: usize) -> Grid<T> {
    Grid::from_fn(dims, |x, y, z| {
        if inner(dims, r, [x, y, z]) {
            tiny::<T>()
        } else {
            T::zero()
        }
    })
    .expect("a small grid")
}

/// One kernel on one engine: its name and a run of two steps from a fresh subnormal input on
/// the solver it keeps, returning the inner cells left non-zero.
struct Case {
    what: String,
    run: Box<dyn FnMut() -> usize>,
}

/// A plan for `kernel` on `engine`, two threads; blocked engines take two steps per pass.
fn plan(
    kernel: impl Into<stencil35d::Kernel>,
    dtype: stencil35d::DType,
    dims: [usize; 3],
    engine: Engine,
) -> stencil35d::Plan {
    let mut b = PlanBuilder::new(kernel, dtype, dims)
        .engine(engine)
        .threads(2);
    if engine == Engine::Blocked {
        b = b.dim_t(2).tile([16, 12]);
    }
    b.build().expect("a plan")
}

fn stencil_case<T: Real>(engine: Engine) -> Case {
    let dims = [37, 29, 23];
    let mut solver = Solver::new(plan(Stencil::seven_point(0.4, 0.1), T::DTYPE, dims, engine));
    Case {
        what: format!("{} star7 {engine}", T::DTYPE),
        run: Box::new(move || {
            let mut grid = tiny_inside::<T>(dims, 0);
            solver.run(&mut grid, 2).expect("a run");
            nonzero_inner(&grid, 1)
        }),
    }
}

fn plane_case<T: Real>(engine: Engine) -> Case {
    let dims = [53, 41];
    let kernel = Stencil2::five_point(0.6, 0.1);
    let mut solver = Solver::new(plan(kernel, T::DTYPE, [dims[0], dims[1], 1], engine));
    Case {
        what: format!("{} star2d {engine}", T::DTYPE),
        run: Box::new(move || {
            let mut grid = Grid2::<T>::from_fn(dims, |_, _| tiny::<T>()).expect("a plane");
            solver.run(&mut grid, 2).expect("a run");
            nonzero_inner(grid.as_grid(), 1)
        }),
    }
}

fn wave_case<T: Real>(engine: Engine) -> Case {
    let dims = [41, 33, 31];
    let kernel = WaveKernel::new(10.0, 1e-3, 2000.0)
        .with_order(8)
        .with_pml(8);
    let velocity = Grid::<T>::from_fn(dims, |_, _, _| T::of(2000.0)).expect("a model");
    let input = Wavefield::new(kernel.clone(), &velocity).expect("a wavefield");
    let mut solver = Solver::new(plan(kernel, T::DTYPE, dims, engine));
    Case {
        what: format!("{} wave {engine}", T::DTYPE),
        run: Box::new(move || {
            let mut field = input.clone();
            // The 4-cell boundary layer holds zeros.
            let s = tiny_inside::<T>(dims, 4);
            field.set_state(&s, &s).expect("a state");
            solver.run(&mut field, 2).expect("a run");
            nonzero_inner(field.pressure(), 4)
        }),
    }
}

fn cases<T: Real>() -> Vec<Case> {
    [Engine::Reference, Engine::Naive, Engine::Blocked]
        .into_iter()
        .flat_map(|e| [stencil_case::<T>(e), plane_case::<T>(e), wave_case::<T>(e)])
        .collect()
}

#[test]
fn subnormals_are_flushed_by_default_and_kept_on_request() {
    if !cfg!(target_arch = "x86_64") {
        println!("skipped: the engines set the floating-point mode on x86-64 only");
        return;
    }
    let mut cases: Vec<Case> = cases::<f32>().into_iter().chain(cases::<f64>()).collect();
    // The environment's other knobs (the CI's cache directory, an ISA cap) stay as they are.
    let mut tuning = Tuning::current().as_ref().clone();
    let mut phase = |mode: Option<Subnormals>, expect_zero: bool| {
        tuning.subnormals = mode;
        tuning.clone().install();
        for case in &mut cases {
            let n = (case.run)();
            if expect_zero {
                assert_eq!(n, 0, "{} {mode:?}: {n} subnormal cells survived", case.what);
            } else {
                assert!(
                    n > 0,
                    "{} {mode:?}: every subnormal cell was flushed",
                    case.what
                );
            }
        }
    };
    phase(None, true);
    phase(Some(Subnormals::Keep), false);
    phase(Some(Subnormals::Flush), true);
}
