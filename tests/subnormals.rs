//! What the CPU engines do with subnormal numbers: by default their threads flush them to zero,
//! and with the `subnormals=keep` knob they keep IEEE gradual underflow. Every CPU engine is
//! checked, since they run on different threads: the reference on the calling thread, the naive
//! engines on the solver's rayon pool, the blocked stencil engine on its pinned team, the
//! blocked wave engine on the pool; `f32` and `f64`.
//!
//! The input holds one subnormal value `s` (the wave's outside its zero boundary layer). Steps
//! of the 7-point stencil whose weights sum to one, or of the wave equation from `u = u⁻ = s`,
//! leave subnormal values in the inner cells when subnormals are kept, and zeros when they
//! count as zero. The tuning is
//! process-wide, so both modes run in one test.

use stencil35d::tuning::{Subnormals, Tuning};
use stencil35d::wave::{WaveKernel, Wavefield};
use stencil35d::{Engine, Grid, PlanBuilder, Real, Solver, Stencil};

/// A subnormal value of `T`: the smallest normal one over 2¹⁰.
fn tiny<T: Real>() -> T {
    T::min_positive_value() / T::of(1024.0)
}

/// The inner cells of `g` (`r` cells from every face) that are not zero.
fn nonzero_inner<T: Real>(g: &Grid<T>, r: usize) -> usize {
    let [nx, ny, nz] = g.dims();
    g.iter()
        .filter(|&([x, y, z], v)| {
            let inner = (r..nx - r).contains(&x) && (r..ny - r).contains(&y);
            inner && (r..nz - r).contains(&z) && v != T::zero()
        })
        .count()
}

/// Inner cells of the 7-point stencil's result that are not zero, two steps from `s`
/// everywhere, on `engine`.
fn stencil_nonzero<T: Real>(engine: Engine) -> usize {
    let dims = [37, 29, 23];
    let mut plan = PlanBuilder::new(Stencil::seven_point(0.4, 0.1), T::DTYPE, dims)
        .engine(engine)
        .threads(2);
    if engine == Engine::Blocked {
        plan = plan.dim_t(2).tile([16, 12]);
    }
    let mut grid = Grid::<T>::from_fn(dims, |_, _, _| tiny::<T>()).expect("a small grid");
    Solver::new(plan.build().expect("a plan"))
        .run(&mut grid, 2)
        .expect("a run");
    nonzero_inner(&grid, 1)
}

/// Inner cells of the wave's pressure that are not zero, two steps from `u = u⁻ = s`
/// everywhere, on `engine`.
fn wave_nonzero<T: Real>(engine: Engine) -> usize {
    let dims = [41, 33, 31];
    let kernel = WaveKernel::new(10.0, 1e-3, 2000.0)
        .with_order(8)
        .with_pml(8);
    let velocity = Grid::<T>::from_fn(dims, |_, _, _| T::of(2000.0)).expect("a model");
    let mut field = Wavefield::new(kernel.clone(), &velocity).expect("a wavefield");
    // The 4-cell boundary layer holds zeros.
    let inner = |i: usize, a: usize| (4..dims[a] - 4).contains(&i);
    let s = Grid::<T>::from_fn(dims, |x, y, z| {
        if inner(x, 0) && inner(y, 1) && inner(z, 2) {
            tiny::<T>()
        } else {
            T::zero()
        }
    })
    .expect("a state");
    field.set_state(&s, &s).expect("a state");
    let mut plan = PlanBuilder::new(kernel, T::DTYPE, dims)
        .engine(engine)
        .threads(2);
    if engine == Engine::Blocked {
        plan = plan.dim_t(2).tile([16, 12]);
    }
    Solver::new(plan.build().expect("a plan"))
        .run(&mut field, 2)
        .expect("a run");
    nonzero_inner(field.pressure(), 4)
}

/// Every engine's count of non-zero inner cells, stencil and wave, in `T`.
fn counts<T: Real>() -> Vec<(String, usize)> {
    let mut out = Vec::new();
    for engine in [Engine::Reference, Engine::Naive, Engine::Blocked] {
        out.push((
            format!("{} star7 {engine}", T::DTYPE),
            stencil_nonzero::<T>(engine),
        ));
        out.push((
            format!("{} wave {engine}", T::DTYPE),
            wave_nonzero::<T>(engine),
        ));
    }
    out
}

#[test]
fn subnormals_are_flushed_by_default_and_kept_on_request() {
    let all = || [counts::<f32>(), counts::<f64>()].concat();
    // The environment's other knobs (the CI's cache directory, an ISA cap) stay as they are.
    let mut tuning = Tuning::from_env().expect("the environment's knobs parse");
    tuning.subnormals = None;
    tuning.clone().install();
    for (what, n) in all() {
        assert_eq!(
            n, 0,
            "{what}: {n} subnormal cells survived the default flush"
        );
    }
    let mut keep = tuning.clone();
    keep.subnormals = Some(Subnormals::Keep);
    keep.install();
    for (what, n) in all() {
        assert!(n > 0, "{what}: subnormals=keep flushed every cell");
    }
    tuning.subnormals = Some(Subnormals::Flush);
    tuning.install();
    for (what, n) in all() {
        assert_eq!(n, 0, "{what}: the flush did not come back after keep");
    }
}
